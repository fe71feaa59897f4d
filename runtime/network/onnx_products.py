"""Products of perturbed values, and what is built from them and from ReLU.

* ``Mul`` of two perturbed values (:func:`product`): both broadcast to the result's shape, each
  materialised, one ``'mul'`` layer (rule ``Neuron_mult``: ``prev_0 * prev_1``, McCormick's planes
  in the shipped certifiers).  ``x * x`` is a ``'mul'`` layer whose two predecessors are one layer.
* ``MatMul`` of two perturbed values (:func:`op_MatMul_variables`, attention's ``Q K^T`` and
  ``A V``): ``(A @ B)[.., i, j] = sum_k A[.., i, k] B[.., k, j]``: ``A`` and ``B`` gathered to
  ``[.., i, j, k]`` (a selection each), one ``'mul'`` layer, and a dense stage summing over ``k``.
* ``Pow`` with a constant positive integer exponent: binary powering by ``'mul'`` layers
  (``x^5 = (x^2)^2 x``); exponent 1 is ``x``.
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


#: op -> handler, read by the loader's dispatch.
HANDLERS = {"Pow": op_Pow, "Max": op_MaxMin, "Min": op_MaxMin}
