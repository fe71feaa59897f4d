"""Constant folding of ONNX nodes at load time: shape computations are evaluated once.

Exporters write shape arithmetic into the graph (``Shape -> Gather -> Unsqueeze -> Concat ->
Reshape``, ``ConstantOfShape -> Equal -> Where -> Expand``, ``Range``, ``Cast``...).  The loader
(:mod:`cfruntime.network.onnx_loader`) calls :func:`fold_node` for every node whose inputs are all
constants, and for ``Shape``/``Size`` of a perturbed value (whose shape is static: the loader knows
it), so only operators acting on the perturbed values make layers.

Algorithm: one node at a time, in graph order, with ONNX's own reference implementation
(``onnx.reference.ReferenceEvaluator`` on a one-node model at the network's opset: a bare
``NodeProto`` would be read at the newest opset, where e.g. ``Unsqueeze``'s ``axes`` is an input), so every
operator of the default domain folds with the specification's semantics (broadcasting, ``Slice``
clamping, ``Gather``'s negative indices...).  One exception: ``Div`` of integers truncates towards
zero, as ONNX Runtime computes it (``onnx.reference`` floors: ``-7 / 2`` is ``-4`` there, ``-3`` in
ONNX Runtime, which the networks were exported and tested with).  Floating-point results are kept in float64, as the loader
keeps every weight.  ``Shape``/``Size`` of a perturbed value are evaluated on a placeholder array of
its shape (``start``/``end`` of opset 15 honoured).  Random generators are never folded (a value
fixed at load time would be one sample, not the operator).

Example: ``Shape(x) -> Gather(0) -> Unsqueeze -> Concat([., -1]) -> Reshape(x, .)`` on ``x`` of shape
``[1, 3, 4]`` folds to the constant ``[1, -1]``, and the Reshape is a plain flattening of ``x``.
"""

from __future__ import annotations

import numpy as np
import onnx

#: Ops that draw random numbers: never evaluated at load time.
RANDOM_OPS = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial"})


class FoldingError(Exception):
    """A node that could not be evaluated (the message is one line)."""


def foldable(op_type: str) -> bool:
    """Whether a node of ``op_type`` (default domain) on constant inputs can be evaluated."""
    return op_type not in RANDOM_OPS and onnx.defs.has(op_type)


def fold_node(node, inputs: list, opset: int) -> list[np.ndarray]:
    """The outputs of ``node`` on the constant ``inputs`` (numpy arrays, None for an absent optional
    input), evaluated by ``onnx.reference`` at ``opset``; float outputs as float64."""
    if not foldable(node.op_type):
        raise FoldingError(f"no reference implementation of '{node.op_type}'")
    from onnx.reference import ReferenceEvaluator

    feeds = {name: np.asarray(v) for name, v in zip(node.input, inputs) if name and v is not None}
    if node.op_type == "Div" and all(np.asarray(v).dtype.kind in "iu" for v in inputs[:2]):
        a, b = (np.asarray(v) for v in inputs[:2])
        if np.any(b == 0):
            raise FoldingError("integer division by zero")
        return [(np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)).astype(np.result_type(a, b))]
    inputs_info = [onnx.helper.make_tensor_value_info(k, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                   for k, v in feeds.items()]
    outputs_info = [onnx.helper.make_empty_tensor_value_info(o) for o in node.output if o]
    graph = onnx.helper.make_graph([node], "fold", inputs_info, outputs_info)
    # a model, not the bare node: the evaluator reads the opset from it (a NodeProto gets the newest)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    try:
        outs = ReferenceEvaluator(model).run(None, feeds)
    except Exception as e:  # noqa: BLE001 - onnx.reference raises anything numpy raises
        raise FoldingError(" ".join(f"{type(e).__name__}: {e}".split())[:200]) from None
    return [_as_constant(o) for o in outs]


def fold_shape(node, shape: tuple, opset: int) -> np.ndarray:
    """``Shape``/``Size`` of a perturbed value of static ``shape``."""
    return fold_node(node, [np.zeros(shape, dtype=np.int8)], opset)[0]


def _as_constant(x) -> np.ndarray:
    arr = np.asarray(x)
    return arr.astype(np.float64) if arr.dtype.kind == "f" else arr
