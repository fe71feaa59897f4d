"""Selection ops on perturbed values: every output element is one input element (or a constant).

``Gather``, ``GatherElements``, ``GatherND``, ``ScatterND``, ``ScatterElements``, ``Where`` (with
a constant condition), ``Expand``, ``Tile``, ``Resize``/``Upsample`` in ``nearest`` mode,
``DepthToSpace``, ``SpaceToDepth``, ``ReverseSequence`` and ``Compress`` (with constant
parameters: indices, condition, shapes, scales) select elements: the result is a gather stage over
the operands' layer (an ``'affine'`` layer with one entry per row), or, over several layers, the
join that ``Concat`` uses (:meth:`cfruntime.network.onnx_loader._Loader.join`).

Algorithm: *token evaluation*.  Each data operand is replaced by an array of its own shape holding
distinct numbers -- operand ``k``'s element ``j`` is ``offset_k + j`` -- and the op is evaluated on
these arrays with ONNX's reference implementation (:func:`cfruntime.network.onnx_folding.fold_node`),
the constant parameters as they are.  The result says, for every output element, which operand's
element it is: exactly the op's semantics for every attribute and opset (negative indices,
``nearest_mode``, ``coordinate_transformation_mode``, ``reduction``-less scatters...), with no
re-implementation.  Tokens are float64 (``Resize`` needs a float tensor), exact below 2**53.

Example: ``Gather(x, [2, 0], axis=1)`` on ``x`` of shape ``[1, 3]``: the tokens ``[[0, 1, 2]]``
become ``[[2, 0]]``: the layer ``y = (x_2, x_0)``.
"""

from __future__ import annotations

import numpy as np

from cfruntime.network import onnx_folding
from cfruntime.network.onnx_stages import _Lin

#: Selection op -> the positions of its data operands (the others are parameters, which must be constants).
DATA_OPERANDS = {
    "Gather": (0,), "GatherElements": (0,), "GatherND": (0,), "Expand": (0,), "Tile": (0,), "DepthToSpace": (0,),
    "SpaceToDepth": (0,), "ReverseSequence": (0,), "Compress": (0,), "Resize": (0,), "Upsample": (0,),
    "ScatterND": (0, 2), "ScatterElements": (0, 2), "Where": (1, 2),
}
#: Ops whose attribute makes them a selection only in some configurations: attribute -> allowed values.
_SELECTING_ATTRIBUTES = {"Resize": ("mode", (b"nearest", "nearest")), "Upsample": ("mode", (b"nearest", "nearest"))}


def not_a_selection(op: str, a: dict) -> str | None:
    """Why a node of ``op`` with attributes ``a`` does not select elements (interpolating ``Resize``, a
    reducing scatter), else None."""
    if op in _SELECTING_ATTRIBUTES:
        attr, allowed = _SELECTING_ATTRIBUTES[op]
        if a.get(attr, b"nearest") not in allowed:
            return f"{attr} '{_text(a.get(attr))}' (only 'nearest' selects elements)"
    if op in ("ScatterND", "ScatterElements") and _text(a.get("reduction", b"none")) != "none":
        return f"reduction '{_text(a.get('reduction'))}' (only a plain scatter selects)"
    return None


def op_selection(ld, node, ins, a):
    """One selection node (see the module docstring); ``ld`` is the loader."""
    op = node.op_type
    why = not_a_selection(op, a)
    if why is not None:
        raise ld.unsupported(node, why)
    data = DATA_OPERANDS[op]
    values, operands, offset = [], [], 0
    for i, v in enumerate(ins):
        if i in data and v is not None:
            shape = tuple(v.shape) if isinstance(v, _Lin) else np.shape(v.value)
            n = int(np.prod(shape, dtype=np.int64))
            values.append((offset + np.arange(n, dtype=np.float64)).reshape(shape))
            operands.append(v)
            offset += n
        elif isinstance(v, _Lin):
            raise ld.unsupported(node, f"input {i} ('{node.input[i]}') must be a constant")
        else:
            values.append(None if v is None else v.value)
    try:
        out = onnx_folding.fold_node(node, values, ld.opset)[0]
    except onnx_folding.FoldingError as e:
        raise ld.err(f"cannot evaluate '{ld.node_name(node)}' ({op}: {e})") from None
    lins = [v for v in operands if isinstance(v, _Lin)]
    lead = lins[0].lead if lins else 0
    if lead == 1:
        ld.check_batch_kept(node, lins[0], out.shape, op)
    if any(v.lead != lead for v in lins):
        raise ld.unsupported(node, f"{op} of operands with and without a batch dimension")
    return ld.join(node, operands, np.rint(out).astype(np.int64), lead)


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


#: op -> handler, read by the loader's dispatch.
HANDLERS = {op: op_selection for op in DATA_OPERANDS}
