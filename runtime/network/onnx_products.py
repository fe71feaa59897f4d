"""Products of perturbed values, and what is built from them and from ReLU.

* ``Mul`` of two perturbed values (:func:`product`): both broadcast to the result's shape, each
  materialised, one ``'mul'`` layer (rule ``Neuron_mult``: ``prev_0 * prev_1``, McCormick's planes
  in the shipped certifiers).  ``x * x`` is a ``'mul'`` layer whose two predecessors are one layer.
* ``MatMul`` of two perturbed values (:func:`op_MatMul_variables`, attention's ``Q K^T`` and
  ``A V``): ``(A @ B)[.., i, j] = sum_k A[.., i, k] B[.., k, j]``: ``A`` and ``B`` gathered to
  ``[.., i, j, k]`` (a selection each), one ``'mul'`` layer, and a dense stage summing over ``k``.
* ``Pow`` with a constant positive integer exponent: binary powering by ``'mul'`` layers
  (``x^5 = (x^2)^2 x``); exponent 1 is ``x``.
* ``Div`` by a perturbed value: ``x / y = x * (1/y)``, a ``'reciprocal'`` layer (its bounds are
  infinite where ``y``'s interval contains 0: the network divides by zero there) and a product
  (``c / y``: the reciprocal scaled).
* ``Softmax`` not at the output (:func:`op_Softmax`): ``softmax(x)_i = 1 / sum_j exp(x_j - x_i)``,
  so the differences are one affine map of ``x``, then an ``'exp'`` layer, a sum (affine) and a
  ``'reciprocal'`` layer.  The term ``j = i`` is ``exp(0) = 1`` exactly (a zero row), so the
  denominator is at least 1 in every certifier whose Exp lower line stays non-negative.  ONNX's
  groups: from opset 13 the one axis, before it every axis from ``axis`` on.
* ``Max``/``Min`` of values (variadic, constants allowed): pairwise, ``max(x, y) = y + relu(x - y)``
  and ``min(x, y) = x - relu(x - y)`` (exact; the difference and the sum are
  :func:`cfruntime.network.onnx_linear_ops.combine`), ``max(x, c) = c + relu(x - c)``.

Every function takes the loader ``ld`` first (:mod:`cfruntime.network.onnx_loader`).
"""

from __future__ import annotations

import numpy as np

from cfruntime.network import onnx_linear_ops
from cfruntime.network.onnx_stages import _Const, _DStage, _Lin, _prod


def product(ld, node, x: _Lin, y: _Lin) -> _Lin:
    """``x * y`` elementwise (broadcasting): one ``'mul'`` layer (# ``z_i = x_i y_i``)."""
    shape = tuple(np.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
    same = x is y
    x = onnx_linear_ops.broadcast(ld, node, x, shape)
    y = x if same else onnx_linear_ops.broadcast(ld, node, y, shape)
    if x.lead != y.lead:
        raise ld.unsupported(node, "a product of values with and without a batch dimension")
    px = ld.materialize(x)
    py = px if same else ld.materialize(y)
    idx = ld.add_layer("mul", shape[x.lead:], [px, py], ld.node_name(node))
    return _Lin(idx, shape, [], x.lead)


def op_Mul_variables(ld, node, ins, a):
    return product(ld, node, ins[0], ins[1])


def op_MatMul_variables(ld, node, ins, a):
    """``A @ B`` of two perturbed values (rank >= 2 each; leading dimensions broadcast)."""
    A, B = ins
    if len(A.shape) < 2 or len(B.shape) < 2 or A.shape[-1] != B.shape[-2]:
        raise ld.unsupported(node, f"MatMul of two values of shapes {list(A.shape)} and {list(B.shape)}")
    ia = np.arange(A.size).reshape(A.shape)[..., :, None, :]  # [.., i, 1, k]
    ib = np.swapaxes(np.arange(B.size).reshape(B.shape), -1, -2)[..., None, :, :]  # [.., 1, j, k]
    ia, ib = np.broadcast_arrays(ia, ib)
    shape = tuple(ia.shape)
    if A.lead != B.lead or (A.lead == 1 and shape[0] != 1):
        raise ld.unsupported(node, "MatMul over the batch dimension")
    lead = A.lead
    terms = product(ld, node, ld.reindex(A, node, ia, shape, lead), ld.reindex(B, node, ib, shape, lead))
    k = shape[-1]
    out_shape = shape[:-1]
    n_out = _prod(out_shape[lead:])
    if n_out * n_out * k > onnx_linear_ops.DENSE_LIMIT:
        raise ld.unsupported(node, f"a MatMul of {n_out} sums of {k} products (too large to unroll)")
    W = np.kron(np.eye(n_out), np.ones((1, k)))  # (# y_o = sum_k p_{o, k})
    return ld.push(terms, _DStage(W, np.zeros(n_out), out_shape[lead:]), node, out_shape, lead)


def op_Pow(ld, node, ins, a):
    """``x ** n`` for a constant positive integer ``n``: binary powering by products."""
    x, e = ins
    if not isinstance(x, _Lin) or isinstance(e, _Lin):
        raise ld.unsupported(node, "only a perturbed base with a constant exponent")
    ev = np.unique(np.asarray(e.value, dtype=np.float64))
    if ev.size != 1 or ev[0] != np.round(ev[0]) or ev[0] < 1 or ev[0] > 64:
        raise ld.unsupported(node, f"exponent {np.asarray(e.value).tolist()} (one integer 1..64)")
    n = int(ev[0])
    if np.shape(e.value) and tuple(np.broadcast_shapes(tuple(x.shape), np.shape(e.value))) != tuple(x.shape):
        x = onnx_linear_ops.broadcast(ld, node, x, tuple(np.broadcast_shapes(tuple(x.shape), np.shape(e.value))))
    result, square = None, x
    while n:
        if n & 1:
            result = square if result is None else product(ld, node, result, square)
        n >>= 1
        if n:
            square = product(ld, node, square, square)
    return result


def op_MaxMin(ld, node, ins, a):
    """Variadic ``Max``/``Min`` (constants allowed), pairwise by ReLU (module docstring)."""
    values = [v for v in ins if v is not None]
    consts = [v for v in values if isinstance(v, _Const)]
    lins = [v for v in values if isinstance(v, _Lin)]
    pick = np.maximum if node.op_type == "Max" else np.minimum
    acc = lins[0]
    for other in lins[1:]:
        acc = _max_min(ld, node, acc, other)
    if consts:
        c = consts[0].value
        for more in consts[1:]:
            c = pick(c, more.value)
        acc = _max_min_const(ld, node, acc, np.asarray(c, dtype=np.float64))
    return acc


def _max_min(ld, node, x: _Lin, y: _Lin) -> _Lin:
    """# ``max(x, y) = y + relu(x - y)``, ``min(x, y) = x - relu(x - y)``"""
    diff = onnx_linear_ops.combine(ld, node, [(x, 1.0), (y, -1.0)])
    r = ld.nonlinear("relu", node, diff)
    if node.op_type == "Max":
        return onnx_linear_ops.combine(ld, node, [(y, 1.0), (r, 1.0)])
    return onnx_linear_ops.combine(ld, node, [(x, 1.0), (r, -1.0)])


def _max_min_const(ld, node, x: _Lin, c: np.ndarray) -> _Lin:
    """# ``max(x, c) = c + relu(x - c)``, ``min(x, c) = c - relu(c - x)``"""
    if node.op_type == "Max":
        return ld.elementwise(ld.nonlinear("relu", node, ld.elementwise(x, node, shift=-c)), node, shift=c)
    return ld.elementwise(ld.nonlinear("relu", node, ld.elementwise(x, node, scale=-1.0, shift=c)), node, scale=-1.0,
                          shift=c)


def op_Div_variables(ld, node, ins, a):
    """``x / y`` with ``y`` perturbed: # ``x / y = x * (1/y)``."""
    x, y = ins
    r = ld.nonlinear("reciprocal", node, y)
    if isinstance(x, _Lin):
        return product(ld, node, x, r)
    return ld.elementwise(r, node, scale=np.asarray(x.value, dtype=np.float64))


def op_Softmax(ld, node, ins, a):
    """Softmax of a perturbed value anywhere but at the output (module docstring):
    # ``softmax(x)_i = 1 / sum_j exp(x_j - x_i)``."""
    x = ins[0]
    rank, shape = len(x.shape), tuple(x.shape)
    axis = int(a.get("axis", -1 if ld.opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank or (x.lead == 1 and axis == 0):
        raise ld.unsupported(node, f"Softmax over axis {a.get('axis')} of a value of shape {list(shape)}")
    idx = np.arange(x.size).reshape(shape)
    groups = np.moveaxis(idx, axis, -1).reshape(-1, shape[axis]) if ld.opset >= 13 else \
        idx.reshape(_prod(shape[:axis]), _prod(shape[axis:]))
    R, n = groups.shape
    lead = x.lead
    full = (1,) * lead + (R, n, n)
    if R * n * n > onnx_linear_ops.DENSE_LIMIT // max(1, x.size):
        raise ld.unsupported(node, f"a Softmax of {R} groups of {n} (too large to unroll)")
    xj = ld.reindex(x, node, groups[:, None, :].repeat(n, axis=1).reshape(full), full, lead)  # x_j at (r, i, j)
    xi = ld.reindex(x, node, groups[:, :, None].repeat(n, axis=2).reshape(full), full, lead)  # x_i at (r, i, j)
    e = ld.nonlinear("exp", node, onnx_linear_ops.combine(ld, node, [(xj, 1.0), (xi, -1.0)]))
    sums = (1,) * lead + (R, n)
    W = np.kron(np.eye(R * n), np.ones((1, n)))  # (# s_{r, i} = sum_j e_{r, i, j})
    s = ld.push(e, _DStage(W, np.zeros(R * n), sums[lead:]), node, sums, lead)
    p = ld.nonlinear("reciprocal", node, s)
    order = np.empty(x.size, dtype=np.int64)
    order[groups.reshape(-1)] = np.arange(x.size)  # where each element of x went
    return ld.reindex(p, node, order.reshape(shape), shape, lead)


#: op -> handler, read by the loader's dispatch.
HANDLERS = {"Pow": op_Pow, "Max": op_MaxMin, "Min": op_MaxMin}
