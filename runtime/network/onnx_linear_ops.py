"""Linear ops on perturbed values that are not selections: sums, negations, transposed convolutions.

* ``Neg``: ``-x``, a gather stage of scale -1.
* ``ReduceSum``/``ReduceMean`` (axes an attribute or, from opset 13/18, an input; ``keepdims``;
  ``noop_with_empty_axes``): a dense stage with one 1 (``1/count`` for the mean) per input element
  in the row of the output element it is summed into.
* ``Add``/``Sub`` of two perturbed values (:func:`combine`), after broadcasting both to the
  result's shape (a gather of repeated elements): over one layer with at most one pending gather or
  dense stage each, one dense stage ``W = W_x +- W_y`` (e.g. the ``x_j - x_i`` of a Softmax); else
  each is materialised and an ``'add'`` layer sums them (the ``Sub`` after a negating stage).
* ``ConvTranspose`` (:func:`op_ConvTranspose`), group 1, explicit ``pads``: the *polyphase* form.
  Output row ``Y = q s + r`` (stride ``s``, phase ``r``) receives input row ``i`` through kernel row
  ``a`` exactly when ``i s + a d - p = Y``, i.e. ``a = (t s + r + p) / d`` for the offset
  ``t = q - i``: for each phase, a stride-1 correlation of the input with the kernel rows that
  exist.  All ``s_y s_x`` phases are the output channels of **one** convolution (stride 1, zero
  padding, kernel ``K[(r_y, r_x, o), c, u, v] = W[c, o, a_y, a_x]`` with ``t = t_max - u``) and a
  gather interleaves the phases (and crops to ``output_padding``'s size): a conv stage and a gather
  stage, each the size of the output -- where zero-insertion (upsample by ``s``, then convolve)
  would make a layer ``s^2`` times larger, mostly zeros.  A stride of 1 is a plain convolution
  (the gather is the identity and merges into it).

Every function takes the loader ``ld`` first (:mod:`cfruntime.network.onnx_loader`).
"""

from __future__ import annotations

import numpy as np

from cfruntime.network.onnx_stages import _CStage, _dense_rows, _DStage, _GStage, _Lin, _prod

#: A dense stage larger than this (rows x columns) is refused rather than built.
DENSE_LIMIT = 1 << 26


def op_Neg(ld, node, ins, a):
    """``-x``: a gather stage of scale -1 (# ``y = -x``)."""
    return ld.elementwise(ins[0], node, scale=-1.0)


def reduce_axes(ld, node, a, rank: int) -> list[int] | None:
    """The reduced axes (non-negative, sorted), None for 'all'; an empty ``axes`` with
    ``noop_with_empty_axes`` is ``[]`` (the identity)."""
    if len(node.input) > 1 and node.input[1]:
        axes = np.asarray(ld.const(node, node.input[1], "axes")).astype(np.int64).reshape(-1).tolist()
    else:
        axes = a.get("axes")
    if not axes:
        return [] if a.get("noop_with_empty_axes", 0) else None
    out = sorted({int(x) + rank if int(x) < 0 else int(x) for x in axes})
    if any(not 0 <= x < rank for x in out):
        raise ld.err(f"{node.op_type} '{ld.node_name(node)}': axes {axes} of a rank-{rank} tensor")
    return out


def op_Reduce(ld, node, ins, a):
    """``ReduceSum``/``ReduceMean`` over constant axes: a dense stage (# ``y_o = sum_{j -> o} c x_j``,
    ``c = 1`` or ``1/count``)."""
    lin = ins[0]
    shape, rank = tuple(lin.shape), len(lin.shape)
    axes = reduce_axes(ld, node, a, rank)
    if axes is None:
        axes = [i for i in range(rank) if not (lin.lead == 1 and i == 0)]
    if not axes:
        return lin
    if lin.lead == 1 and 0 in axes:
        raise ld.unsupported(node, f"{node.op_type} over the batch dimension")
    keep = bool(a.get("keepdims", 1))
    coords = np.indices(shape).reshape(rank, -1)
    kept_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    coords[axes] = 0
    rows = np.ravel_multi_index(coords, kept_shape)
    out_shape = kept_shape if keep else tuple(d for i, d in enumerate(shape) if i not in axes)
    n_out, n_in = _prod(kept_shape), _prod(shape)
    if n_out * n_in > DENSE_LIMIT:
        raise ld.unsupported(node, f"a reduction of {n_in} elements to {n_out} (too large to unroll)")
    W = np.zeros((n_out, n_in))
    W[rows, np.arange(n_in)] = 1.0 / (n_in // n_out) if node.op_type == "ReduceMean" else 1.0
    lead = lin.lead if len(out_shape) == rank or lin.lead == 0 else ld.lead_of(out_shape)
    return ld.push(lin, _DStage(W, np.zeros(n_out), tuple(out_shape[lead:])), node, out_shape, lead)


def broadcast(ld, node, lin: _Lin, shape: tuple) -> _Lin:
    """``lin`` broadcast to the full shape ``shape`` (a gather repeating elements); the batch
    dimension of a batched value must stay first and of size 1."""
    shape = tuple(int(d) for d in shape)
    if shape == tuple(lin.shape):
        return lin
    if lin.lead == 1 and (len(shape) != len(lin.shape) or shape[0] != 1):
        raise ld.unsupported(node, f"broadcasting {list(lin.shape)} to {list(shape)} moves the batch dimension")
    index = np.broadcast_to(np.arange(lin.size).reshape(lin.shape), shape)
    return ld.reindex(lin, node, index, shape, lin.lead)


def _single_dense(ld, lin: _Lin):
    """``(W, b)`` of ``lin`` over its source layer when its pending stages compose into one gather or
    dense stage of reasonable size, else None."""
    n = ld.layers[lin.src].size
    if not lin.stages:
        return np.eye(n), np.zeros(n)
    st = lin.stages[0]
    for nxt in lin.stages[1:]:
        from cfruntime.network.onnx_stages import _compose

        st = _compose(st, nxt)
        if st is None:
            return None
    if isinstance(st, _CStage) or _prod(st.out_shape) * n > DENSE_LIMIT:
        return None
    return _dense_rows(st, np.arange(_prod(st.out_shape)))


def combine(ld, node, terms: list[tuple[_Lin, float]]) -> _Lin:
    """``sum_k c_k x_k`` of perturbed values (``terms``: ``(value, c_k)``), broadcast to a common
    shape: one dense stage when every value is one gather/dense stage over the same layer (# ``W =
    sum c_k W_k``, ``b = sum c_k b_k``), else an ``'add'`` layer per further term over the
    materialised (scaled) values."""
    shape = tuple(np.broadcast_shapes(*[tuple(v.shape) for v, _ in terms]))
    terms = [(broadcast(ld, node, v, shape), c) for v, c in terms]
    lead = terms[0][0].lead
    if any(v.lead != lead for v, _ in terms):
        raise ld.unsupported(node, "operands with and without a batch dimension")
    if len({v.src for v, _ in terms}) == 1:
        dense = [_single_dense(ld, v) for v, _ in terms]
        if all(d is not None for d in dense):
            W = sum(c * d[0] for (_, c), d in zip(terms, dense))
            b = sum(c * d[1] for (_, c), d in zip(terms, dense))
            return ld.push(_Lin(terms[0][0].src, shape, [], lead), _DStage(W, b, shape[lead:]), node, shape, lead)
    scaled = [v if c == 1.0 else ld.elementwise(v, node, scale=c) for v, c in terms]
    acc = ld.materialize(scaled[0])
    for v in scaled[1:]:
        acc = ld.add_layer("add", shape[lead:], [acc, ld.materialize(v)], ld.node_name(node))
    return _Lin(acc, shape, [], lead)


def matmul_constant(ld, node, x, w):
    """``x @ w`` with one constant operand, any ranks (a vector, batched matrices, ``constant @ x``):
    the dense map read off the product of the basis (# ``W[:, j] = e_j @ w`` or ``w @ e_j``), one
    stage.  A rank-1 perturbed operand is a vector, as ``numpy.matmul`` reads it."""
    lin, c = (x, np.asarray(w.value, np.float64)) if isinstance(x, _Lin) else (w, np.asarray(x.value, np.float64))
    left = lin is x
    vec = len(lin.shape) == 1

    def product(X):  # X: [n, *lin.shape] -> [n, *out]
        if vec:
            return np.matmul(X[:, None, :], c)[:, 0] if left else np.matmul(c, X[:, :, None])[..., 0]
        return np.matmul(X, c) if left else np.matmul(c, X)

    try:
        out_shape = tuple(product(np.zeros((1, *lin.shape))).shape[1:])
    except ValueError:
        shapes = (tuple(x.shape), np.shape(w.value)) if left else (np.shape(x.value), tuple(w.shape))
        raise ld.unsupported(node, f"MatMul of shapes {shapes[0]} and {shapes[1]}") from None
    n_in, n_out = lin.size, _prod(out_shape)
    if n_in * n_out > DENSE_LIMIT:
        raise ld.unsupported(node, f"a product of {n_in} by {n_out} elements (too large to unroll)")
    W = product(np.eye(n_in).reshape(n_in, *lin.shape)).reshape(n_in, n_out).T.copy()
    if lin.lead == 1 and (len(out_shape) < 1 or out_shape[0] != 1):
        raise ld.unsupported(node, "MatMul over the batch dimension")
    lead = lin.lead if lin.lead == 1 else ld.lead_of(out_shape)
    return ld.push(lin, _DStage(W, np.zeros(n_out), out_shape[lead:]), node, out_shape, lead)


def op_ConvTranspose(ld, node, ins, a):
    """ConvTranspose as one convolution of its phases and an interleaving gather (module docstring)."""
    x = ins[0]
    if any(isinstance(v, _Lin) for v in ins[1:]):
        raise ld.unsupported(node, "data-dependent weights")
    if len(x.shape) != 4 or x.shape[0] != 1:
        raise ld.unsupported(node, f"ConvTranspose on a tensor of shape {list(x.shape)} (only 2-D, one sample)")
    if a.get("group", 1) != 1:
        raise ld.unsupported(node, f"group={a.get('group')}")
    auto_pad = a.get("auto_pad", b"NOTSET")
    if (auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad) != "NOTSET" or "output_shape" in a:
        raise ld.unsupported(node, "auto_pad / output_shape (give explicit pads)")
    Wt = np.asarray(ld.const(node, node.input[1], "weight"), dtype=np.float64)  # [C, O, kh, kw]
    C, H, Win = x.shape[1:]
    if Wt.ndim != 4 or Wt.shape[0] != C:
        raise ld.err(f"ConvTranspose '{ld.node_name(node)}': kernel of shape {Wt.shape} does not fit input {x.shape}")
    O, kh, kw = Wt.shape[1], Wt.shape[2], Wt.shape[3]
    s = tuple(a.get("strides", [1, 1]))
    d = tuple(a.get("dilations", [1, 1]))
    p = tuple(a.get("pads", [0, 0, 0, 0]))
    op = tuple(a.get("output_padding", [0, 0]))
    if len(s) != 2 or len(d) != 2 or len(p) != 4 or len(op) != 2:
        raise ld.unsupported(node, "only 2-D transposed convolutions")
    bias = np.zeros(O)
    if len(ins) > 2 and ins[2] is not None:
        bias = np.asarray(ld.const(node, node.input[2], "bias"), dtype=np.float64).reshape(-1)
    out_hw = [s[k] * ((H, Win)[k] - 1) + op[k] + (( (kh, kw)[k] - 1) * d[k] + 1) - p[k] - p[k + 2] for k in range(2)]
    if min(out_hw) <= 0:
        raise ld.err(f"ConvTranspose '{ld.node_name(node)}': empty output {out_hw}")
    # per spatial axis: the offsets t of each phase's kernel rows, and the conv geometry
    geo = [_phase_geometry(s[k], d[k], p[k], (kh, kw)[k], (H, Win)[k], out_hw[k]) for k in range(2)]
    (ty, Uy, pty, pby, offy, Qy, Hc), (tx, Ux, ptx, pbx, offx, Qx, Wc) = geo
    K = np.zeros((s[0] * s[1] * O, C, Uy, Ux))
    for ry in range(s[0]):
        for rx in range(s[1]):
            ch = (ry * s[1] + rx) * O
            for uy in range(Uy):
                ay = _kernel_row(ty - uy, s[0], ry, p[0], d[0], kh)
                if ay is None:
                    continue
                for ux in range(Ux):
                    ax = _kernel_row(tx - ux, s[1], rx, p[1], d[1], kw)
                    if ax is not None:
                        K[ch:ch + O, :, uy, ux] = Wt[:, :, ay, ax].T
    conv_shape = (s[0] * s[1] * O, Hc, Wc)
    conv = _CStage(K, np.zeros(_prod(conv_shape)), (1, 1), (pty, ptx, pby, pbx), (1, 1), (C, H, Win), conv_shape)
    # output (o, Y, X) = conv channel (phase(Y, X), o) at (Y // s + off)
    oo, yy, xx = np.indices((O, out_hw[0], out_hw[1]))
    chan = ((yy % s[0]) * s[1] + xx % s[1]) * O + oo
    index = (chan * Hc + yy // s[0] + offy) * Wc + xx // s[1] + offx
    n = index.size
    gather = _GStage(index.reshape(-1), np.ones(n), np.repeat(bias, out_hw[0] * out_hw[1]), _prod(conv_shape),
                     (O, out_hw[0], out_hw[1]))
    mid = ld.push(x, conv, node, (1, *conv_shape), 1)
    return ld.push(mid, gather, node, (1, O, *out_hw), 1)


def _kernel_row(t: int, s: int, r: int, p: int, d: int, k: int) -> int | None:
    """The kernel row ``a`` with ``a d = t s + r + p``, if it exists."""
    num = t * s + r + p
    if num % d:
        return None
    a = num // d
    return a if 0 <= a < k else None


def _phase_geometry(s: int, d: int, p: int, k: int, n_in: int, n_out: int):
    """Along one axis: ``(t_max, U, pad_top, pad_bottom, offset, Q, conv_out)``: phase row ``q``
    reads input ``q - t`` for ``t`` in ``[t_max - U + 1, t_max]`` (conv kernel index ``u = t_max -
    t``), the stride-1 conv with padding ``(pad_top, pad_bottom)`` has ``conv_out`` rows and phase
    row ``q`` is its row ``q + offset``; ``Q`` phase rows are needed."""
    ts = [t for r in range(s) for t in range(-(p + r) // s - 1, ((k - 1) * d - r - p) // s + 2)
          if _kernel_row(t, s, r, p, d, k) is not None]
    t_min, t_max = min(ts), max(ts)
    U = t_max - t_min + 1
    Q = -(-n_out // s)
    pad_top = max(t_max, 0)
    offset = pad_top - t_max
    pad_bottom = max(0, Q + offset - (n_in + pad_top - U + 1))
    conv_out = n_in + pad_top + pad_bottom - U + 1
    return t_max, U, pad_top, pad_bottom, offset, Q, conv_out


#: op -> handler, read by the loader's dispatch.
HANDLERS = {"Neg": op_Neg, "ReduceSum": op_Reduce, "ReduceMean": op_Reduce, "ConvTranspose": op_ConvTranspose}
