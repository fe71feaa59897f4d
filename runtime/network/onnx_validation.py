"""Is an ONNX model one the loader may read?  Checks that run before any conversion.

Every check ends in one :class:`~cfruntime.errors.NetworkError` line naming the file and, where
there is one, the node:

* **opsets** (:func:`check_opsets`): the default domain's opset must lie between
  :data:`MIN_OPSET` (the oldest ONNX Runtime implements: ``Gemm`` at opset 1 has no kernel there)
  and the newest the installed ``onnx`` knows (``onnx.defs.onnx_opset_version()``); ``onnx``'s
  checker accepts both opset 1 and opset 99, ONNX Runtime neither.
* **the data input** (:func:`data_input`): exactly one graph input that is not an initializer, of
  a floating-point element type (an ``INT64`` input cannot be perturbed; ONNX Runtime refuses the
  model when an operator mixes it with float weights).
* **unsupported operators** (:func:`refused_nodes`): which nodes the loader would refuse, all at
  once, without converting anything -- a node acting on the perturbed input needs a loader
  handler, a node acting on constants only (shape computations, folded by
  :mod:`cfruntime.network.onnx_folding`) needs an implementation in ``onnx.reference``.
* **the full checker** (:func:`check_full`): ``onnx.checker.check_model(full_check=True)``, which
  includes strict shape and type inference (float16 ``Gemm`` weights on a float input: ``B has
  inconsistent type tensor(float16)``).  It runs on the serialised bytes, in C++ (passing a
  ``ModelProto`` serialises it twice and runs the inference in Python: 5x slower on 270 MB).

Algorithm of :func:`refused_nodes`: the nodes the graph output depends on are found backwards from
the output; then, in node order, a value is *perturbed* when the data input reaches it through a
node other than ``Shape``/``Size`` (which read only the static shape).  A needed node with a
perturbed input is refused when its op is not in the loader's set; one with constant inputs only is
refused when ``onnx.reference`` has no implementation of it; a node of another domain is refused.
This module imports ``onnx`` only (no torch): ``cf-run`` calls it before compiling anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import onnx

from cfruntime.errors import NetworkError, UnsupportedOpsError

#: The oldest default-domain opset accepted (ONNX Runtime supports 7 and newer).
MIN_OPSET = 7
#: Element types a data input may have.
FLOAT_INPUT_TYPES = {onnx.TensorProto.FLOAT: "FLOAT", onnx.TensorProto.DOUBLE: "DOUBLE", onnx.TensorProto.FLOAT16: "FLOAT16",
                     onnx.TensorProto.BFLOAT16: "BFLOAT16"}
#: Ops whose output depends only on their input's static shape, never on its values.
SHAPE_ONLY_OPS = frozenset({"Shape", "Size"})
#: The default ONNX domain's spellings.
DEFAULT_DOMAINS = ("", "ai.onnx")


def node_name(node) -> str:
    """A node's name, or its first output's when it has none."""
    return node.name or (node.output[0] if node.output else "?")


def default_opset(model) -> int | None:
    """The model's opset of the default domain (None when it imports none)."""
    for o in model.opset_import:
        if o.domain in DEFAULT_DOMAINS:
            return int(o.version)
    return None


def check_opsets(model, source: str) -> None:
    """The default domain's opset lies in ``[MIN_OPSET, onnx.defs.onnx_opset_version()]``."""
    version = default_opset(model)
    newest = onnx.defs.onnx_opset_version()
    first = next((n for n in model.graph.node if n.domain in DEFAULT_DOMAINS), None)
    at = f"node '{node_name(first)}' ({first.op_type}): " if first is not None else ""
    if version is None:
        if first is not None:
            raise NetworkError(f"invalid ONNX model: {at}the model imports no opset of the default domain 'ai.onnx'",
                               file=source)
        return
    if version > newest:
        raise NetworkError(f"invalid ONNX model: {at}opset {version} of domain 'ai.onnx' is newer than any this onnx "
                           f"{onnx.__version__} knows ({MIN_OPSET}..{newest})", file=source)
    if version < MIN_OPSET:
        raise NetworkError(f"invalid ONNX model: {at}opset {version} of domain 'ai.onnx' is older than {MIN_OPSET}, the "
                           f"oldest ONNX Runtime implements ({MIN_OPSET}..{newest} are accepted)", file=source)


def data_input(model, source: str):
    """The one graph input that is not an initializer, of a floating-point element type."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name not in inits]
    if len(inputs) != 1:
        raise NetworkError(f"expected exactly one data input, found {len(inputs)}", file=source)
    inp = inputs[0]
    if not inp.type.HasField("tensor_type"):
        raise NetworkError(f"input '{inp.name}' is not a tensor", file=source)
    elem = inp.type.tensor_type.elem_type
    if elem not in FLOAT_INPUT_TYPES:
        name = onnx.TensorProto.DataType.Name(elem) if elem in onnx.TensorProto.DataType.values() else str(elem)
        users = [n for n in g.node if inp.name in n.input]
        at = f" (read by node '{node_name(users[0])}' ({users[0].op_type}))" if users else ""
        raise NetworkError(f"input '{inp.name}' has element type {name}{at}: only a floating-point input "
                           f"({', '.join(FLOAT_INPUT_TYPES.values())}) can be perturbed", file=source)
    return inp


_NODE_IN_MESSAGE = re.compile(r"\(op_type:\s*([\w.]+),\s*node name:\s*([^)]*)\)\s*:?\s*")


def check_full(model_bytes: bytes, source: str) -> None:
    """``onnx.checker.check_model(full_check=True)`` on the serialised model: one line naming the node
    when the checker names one."""
    try:
        onnx.checker.check_model(model_bytes, full_check=True)
    except Exception as e:  # noqa: BLE001 - onnx raises ValidationError, InferenceError, ...
        msg = " ".join(str(e).split())
        msg = re.sub(r"\[[A-Za-z]+\]\s*|Inference error\(s\):\s*", "", msg).strip()
        m = _NODE_IN_MESSAGE.search(msg)
        if m is not None:
            msg = f"node '{m.group(2).strip()}' ({m.group(1)}): " + (msg[:m.start()] + msg[m.end():]).strip()
        raise NetworkError(f"invalid ONNX model: {msg[:300]}", file=source) from None


def needed_nodes(graph) -> list:
    """The nodes (in graph order) that the first graph output depends on."""
    producers = {o: n for n in graph.node for o in n.output}
    needed, stack = set(), [graph.output[0].name] if graph.output else []
    while stack:
        n = producers.get(stack.pop())
        if n is not None and id(n) not in needed:
            needed.add(id(n))
            stack.extend(i for i in n.input if i)
    return [n for n in graph.node if id(n) in needed]


@dataclass(frozen=True)
class Refused:
    """An op type the loader refuses: the first node of it, how many nodes, and why."""

    op: str
    node: str
    count: int
    why: str


def refused_nodes(model, data_ops: frozenset, foldable) -> list[Refused]:
    """The op types of the needed nodes that the loader would refuse (see the module docstring), one
    entry per op type in the order first met.  ``data_ops``: the ops the loader converts on perturbed
    values; ``foldable(op_type) -> bool``: whether a node on constants only can be evaluated."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    perturbed = {i.name for i in g.input if i.name not in inits}
    found: dict[str, list] = {}
    for node in needed_nodes(g):
        on_data = any(i in perturbed for i in node.input if i)
        if node.domain not in DEFAULT_DOMAINS:
            why = f"domain '{node.domain}'"
        elif on_data and node.op_type not in data_ops:
            why = "on the perturbed input"
        elif not on_data and node.op_type not in data_ops and not foldable(node.op_type):
            why = "on constants"
        else:
            why = None
        if on_data and node.op_type not in SHAPE_ONLY_OPS:
            perturbed.update(o for o in node.output if o)
        if why is not None:
            entry = found.setdefault(node.op_type, [node_name(node), 0, why])
            entry[1] += 1
    return [Refused(op, name, count, why) for op, (name, count, why) in found.items()]


def check_supported(model, source: str, data_ops: frozenset, foldable) -> None:
    """One :class:`UnsupportedOpsError` listing every refused op type (:func:`refused_nodes`)."""
    refused = refused_nodes(model, data_ops, foldable)
    if refused:
        raise UnsupportedOpsError([(r.op, r.node, r.count, r.why) for r in refused], file=source)
