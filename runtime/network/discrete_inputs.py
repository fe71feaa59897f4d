"""Inputs a network reads only through integer roundings: where a property leaves such inputs free, the
network's output takes finitely many values over the input box, one per combination of the rounded values.

cctsdb_yolo_2023 (VNN-COMP 2023/2024) places an image patch at a position ``(X_12288, X_12289)`` in
``[0, 62]^2``: the network casts both to ``int64`` at once (``Gather -> Cast``) and uses the integers as
indices (``Range``, ``ScatterND``) and the class of an ``ArgMax`` as a selector, ops no certifier rule can
bound on perturbed values.  Every other input is fixed by the property (``lo == hi``).  So the output is
a function of the two integers, 63 x 63 values: :mod:`cfruntime.discrete_enumeration` evaluates them all.

Algorithm: *token propagation* over the graph in node order (as :mod:`cfruntime.network.onnx_selection`
finds what a selection selects).  The data input becomes an array of its own shape holding each
element's flat index (its ``X_i``); every tensor is then one of

* a constant (initializers, ``Constant`` nodes, nodes on constants: evaluated by
  :func:`cfruntime.network.onnx_folding.fold_node`; ``Shape``/``Size`` of a tokenised tensor too),
* tokenised: each element is one input element ``X_i`` (its token ``i``) or a constant (token -1), and
  some token is a free input: what ``Cast`` to a floating type, ``Identity``, ``Dropout`` and the
  selections (``Gather``, ``Slice``, ``Reshape``, ``Concat``, ``Transpose``, ``Where`` with a constant
  condition, ...) with constant parameters make of tokenised and constant operands (the op evaluated on
  the tokens),
* anything else: a function of the fixed inputs and of rounded values only.

A tokenised tensor may only flow into such a selection, into ``Shape``/``Size``, or into a rounding:
``Cast`` to a signed integer type (``trunc``), ``Floor``, ``Ceil``, ``Round``; the free inputs among its
tokens are then read through that rounding.  Any other use (an arithmetic op, a graph output, a
selection whose indices are not constants) means the network reads a free input as a real number: not
discrete, and the reason names the input, the node and its op.

Each rounding is monotone and integer-valued, so over ``[lo, hi]`` it takes exactly the integers from
``round(lo)`` to ``round(hi)``.  A free input rounded two different ways is refused (one rounding's
integers would not say which values of the other occur together with them), and so is a model with a
subgraph (``If``, ``Loop``, ``Scan``: their branches read tensors their inputs do not list) or random numbers.

Example: ``x [12296] -> Gather(12288) -> Cast(int64) -> Range ...`` with ``X_12288`` free: ``{12288:
('trunc', -2**63, 2**63 - 1)}``; ``x -> Mul(2) -> Cast`` is refused (``X_0 reaches node 'mul' (Mul)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from cfruntime.network import onnx_folding
from cfruntime.network.onnx_selection import DATA_OPERANDS, not_a_selection

#: selection op -> positions of its data operands (the others are parameters, which must be constants)
SELECTIONS = {**DATA_OPERANDS, **{op: (0,) for op in ("Slice", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                                      "Transpose", "Split")}, "Concat": None}  # None: every operand
#: ops that pass their first operand through unchanged (``Cast`` to a floating type is one: the analysis is real)
PASS_THROUGH = frozenset({"Identity", "Dropout"})
#: rounding ops on real values -> the rounding's name (``Cast`` to an integer type is ``trunc``)
ROUNDINGS = {"Floor": "floor", "Ceil": "ceil", "Round": "round"}
#: ``Cast`` targets that keep a real value (float32 <-> float64: exact for values of the float32 input)
FLOAT_TYPES = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE})
#: ``Cast`` targets that truncate: signed integer types -> the range of the type
SIGNED_INTEGERS = {onnx.TensorProto.INT8: 8, onnx.TensorProto.INT16: 16, onnx.TensorProto.INT32: 32,
                   onnx.TensorProto.INT64: 64}


class NotDiscrete(Exception):
    """The network reads a free input as a real number (the message names the input, the node and its op)."""


@dataclass(frozen=True)
class Rounding:
    """How a free input is read: ``kind`` (``trunc``, ``floor``, ``ceil``, ``round``) and the values the
    result may take without overflow (``[low, high]``; unbounded for ``Floor``/``Ceil``/``Round``)."""

    kind: str
    low: float = -np.inf
    high: float = np.inf


def discrete_reads(model: onnx.ModelProto, free: np.ndarray) -> dict[int, Rounding]:
    """How ``model`` reads the free inputs (``free``: a bool per flat input element, ``X_i``): ``{i: Rounding}``
    for every free input some rounding reads (a free input nothing reads does not change the output); raises
    :class:`NotDiscrete` where one is read as a real number (see the module docstring)."""
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    inits = {t.name for t in graph.initializer}
    data = [i for i in graph.input if i.name not in inits]
    if len(data) != 1:
        raise NotDiscrete(f"the model has {len(data)} data inputs (one is read)")
    shape = tuple(d.dim_value if d.dim_value > 0 else 1 for d in data[0].type.tensor_type.shape.dim)
    free = np.asarray(free, dtype=bool).reshape(-1)
    if int(np.prod(shape, dtype=np.int64)) != free.size:
        raise NotDiscrete(f"the model's input has {int(np.prod(shape))} elements, the property {free.size}")
    for node in graph.node:
        why = _not_a_function(node)
        if why is not None:
            raise NotDiscrete(f"node '{node.name or node.output[0]}' ({node.op_type}) {why}")
    state = _State(free, {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer})
    state.tokens[data[0].name] = np.arange(free.size, dtype=np.float64).reshape(shape)
    for node in graph.node:
        state.visit(node, opset)
    for out in graph.output:
        if out.name in state.tokens and state.reads_free(out.name):
            raise NotDiscrete(f"{state.first_free(out.name)} reaches the output '{out.name}' without a rounding")
    return state.reads


def _not_a_function(node) -> str | None:
    """Why ``node`` could make the output more than a function of the inputs this analysis follows: a
    subgraph (``If``/``Loop``/``Scan`` read outer tensors the node's inputs do not list), random numbers (a
    ``Dropout`` given a training mode among them); else None."""
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return "has a subgraph"
    if node.op_type in onnx_folding.RANDOM_OPS or (node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]):
        return "draws random numbers"
    return None


class _State:
    """The constants, the tokenised tensors and the roundings found so far (:func:`discrete_reads`)."""

    def __init__(self, free: np.ndarray, consts: dict):
        self.free = free
        self.consts = consts
        self.tokens: dict[str, np.ndarray] = {}
        self.reads: dict[int, Rounding] = {}

    def first_free(self, name: str) -> str:
        toks = self.tokens[name].reshape(-1)
        return f"X_{int(toks[self._free_mask(toks)][0])}"

    def reads_free(self, name: str) -> bool:
        """Whether the tokenised tensor ``name`` holds a free input."""
        return bool(self._free_mask(self.tokens[name]).any())

    def _free_mask(self, toks: np.ndarray) -> np.ndarray:
        ok = toks >= 0
        mask = np.zeros(toks.shape, dtype=bool)
        mask[ok] = self.free[toks[ok].astype(np.int64)]
        return mask

    def visit(self, node, opset: int) -> None:
        """One node: its outputs constant, tokenised, or neither; a free input read as a real raises."""
        tokenised = [n for n in node.input if n in self.tokens]
        if not tokenised:
            if all(not n or n in self.consts for n in node.input) and onnx_folding.foldable(node.op_type):
                self._fold(node, opset)
            return
        where = f"node '{node.name or node.output[0]}' ({node.op_type})"
        op = node.op_type
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if op in ("Shape", "Size"):
            self.consts[node.output[0]] = onnx_folding.fold_shape(node, self.tokens[node.input[0]].shape, opset)
            return
        if op in ROUNDINGS or (op == "Cast" and attrs.get("to") in SIGNED_INTEGERS):
            self._rounded(self.tokens[node.input[0]], where, op, attrs)
            return
        if op in PASS_THROUGH or (op == "Cast" and attrs.get("to") in FLOAT_TYPES):
            self.tokens[node.output[0]] = self.tokens[node.input[0]]
            return
        why = self._select(node, opset) if op in SELECTIONS else "an op that does not select"
        free = [n for n in tokenised if self.reads_free(n)]
        if why is not None and free:  # (without a free input among its tokens: a function of fixed inputs)
            raise NotDiscrete(f"{self.first_free(free[0])} reaches {where}" + ("" if why.startswith("an op") else f": {why}"))

    def _fold(self, node, opset: int) -> None:
        try:
            outs = onnx_folding.fold_node(node, [self.consts[n] if n else None for n in node.input], opset)
        except onnx_folding.FoldingError:
            return  # left neither constant nor tokenised: a value the free inputs do not reach
        for name, value in zip(node.output, outs):
            if name:
                self.consts[name] = value

    def _rounded(self, toks: np.ndarray, where: str, op: str, attrs: dict) -> None:
        if op == "Cast":
            bits = SIGNED_INTEGERS[attrs["to"]]
            rounding = Rounding("trunc", -float(2 ** (bits - 1)), float(2 ** (bits - 1) - 1))
        else:
            rounding = Rounding(ROUNDINGS[op])
        flat = toks.reshape(-1)
        for i in np.unique(flat[self._free_mask(flat)]).astype(np.int64).tolist():
            seen = self.reads.setdefault(i, rounding)
            if seen.kind != rounding.kind:
                raise NotDiscrete(f"X_{i} is rounded two ways ({seen.kind} and {rounding.kind}, at {where})")
            self.reads[i] = Rounding(rounding.kind, max(seen.low, rounding.low), min(seen.high, rounding.high))

    def _select(self, node, opset: int) -> str | None:
        """The selection ``node`` evaluated on its operands' tokens (constant data operands: -1); why it
        cannot be, else None."""
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        why = not_a_selection(node.op_type, attrs)
        if why is not None:
            return why
        data = SELECTIONS[node.op_type] or range(len(node.input))
        values = []
        for k, name in enumerate(node.input):
            if not name:
                values.append(None)
            elif k in data and name in self.tokens:
                values.append(self.tokens[name])
            elif name in self.consts:
                value = np.asarray(self.consts[name])
                values.append(np.full(value.shape, -1.0) if k in data else value)
            else:
                return f"its input {k} ({'a data operand' if k in data else 'a parameter'}) is not a constant"
        try:
            outs = onnx_folding.fold_node(node, values, opset)
        except onnx_folding.FoldingError as e:
            return f"it could not be evaluated on the inputs' indices ({e})"
        for name, out in zip(node.output, outs):
            if name:
                self.tokens[name] = np.rint(np.asarray(out, dtype=np.float64))
        return None
