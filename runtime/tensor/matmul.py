"""Inner product (batched matrix product) of g-BSCR tensors.

``matmul_sparse(a, b)``: ``a [*La, m, k] @ b [*Lb, k, n]`` with torch.matmul
broadcasting of the leading dims (size-1 leading dims become repeat blocks, no
copy).  With zero backgrounds (the DeepPoly case) the product is computed
block pair by block pair, touching only the overlapping ranges:

1. a block of ``a`` and a block of ``b`` *interact* if their leading ranges
   intersect and ``a``'s column range meets ``b``'s row range; the pair is
   restricted to the common leading / ``k`` range (a diagonal block is also
   restricted to the matching rows / columns, so it stays diagonal);
2. each pair is multiplied by a block-pair kernel (:func:`block_matmul`);
3. product blocks that overlap are grouped (transitive closure, see
   :mod:`overlap`) and summed: equal regions are added kind-aware (e.g. dense +
   dense core add, patches + patches), otherwise densely on the group's region.

Block-pair kernels (``X`` = dense / repeat / constant, i.e. a broadcast core):

=====================  ==============================================  ========
pair                   kernel                                          result
=====================  ==============================================  ========
X @ X                  ``torch.matmul`` of the cores (size-1 dims kept;  X
                       a constant side becomes a sum)
diag @ Y               row scaling ``c[..., :, None] * Y`` (O(n k))      kind of Y
Y @ diag               column scaling (O(n k))                           kind of Y
X @ conv               ``conv_transpose2d`` of X's rows                  dense
conv @ X               ``conv2d`` of X's columns                         dense
diag @ conv, conv@diag per-position scaled kernels                       patches
X @ patches            einsum + ``fold`` (col2im)                        dense
patches @ X            ``unfold`` (im2col) + einsum                      dense
patches/conv @ conv    kernel composition: a small transpose-conv        patches
                       matrix, or ``conv_transpose2d`` for big kernels
conv @ patches/conv    kernel composition: per tap, the patches'         patches
                       kernels it reads times its weights, added in
patches @ patches      unfold of the densified right operand             dense
X @ select             columns added into the selected ones (index_add)  X
select @ X             the selected rows of X, scaled (index_select)     X
select @ select        composed selections                              select
other                  dense matmul of the two (small) blocks           dense
=====================  ==============================================  ========

A conv block is never unrolled into its matrix here.  Non-zero backgrounds, and
blocks holding inf/NaN (whose products with implicit zeros are NaN in dense
torch), fall back to a dense matmul (correct, not fast).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .block_base import Block, same_value
from .block_conv import ConvBlock
from .block_diagonal import DiagonalBlock
from .block_patches import PatchesBlock
from .block_repeat import DenseBlock, RepeatBlock, make_bcast_block
from .block_select import SelectBlock
from .conv_utils import canvas_image, fold_canvas, fold_onto, fold_patches, unfold_image
from .elementwise import generic_region
from .masked_grad import records
from .overlap import intersect, plan_regions, region_of, relative, shape_of, start_of
from .shape_ops import broadcast_shape, broadcast_to
from .sparse_tensor import SparseTensor


# ----------------------------------------------------------------- kernels
def _full_k(core: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    if core.shape[dim] == size:
        return core
    shape = list(core.shape)
    shape[dim] = size
    return core.expand(shape)


def _bcast_mm(A: RepeatBlock, B: RepeatBlock, out_shape) -> Block:
    ca, cb = A.core, B.core
    k = A.shape[-1]
    if k != 1 and ca.shape[-1] == 1 and cb.shape[-2] == 1:
        core = torch.matmul(ca, cb) * k
    elif k != 1 and ca.shape[-1] == 1:
        core = ca * cb.sum(-2, keepdim=True)
    elif k != 1 and cb.shape[-2] == 1:
        core = ca.sum(-1, keepdim=True) * cb
    elif all(x == 1 for x in cb.shape[:-2]):
        core = torch.matmul(ca, cb.reshape(cb.shape[-2:]))
    else:
        core = torch.matmul(ca, cb)
    return make_bcast_block(core, out_shape)


def _scale(Y: Block, c: torch.Tensor, out_shape, rows: bool):
    """``diag(c) @ Y`` (``rows``) or ``Y @ diag(c)``, keeping Y's block kind; None if unsupported."""
    if isinstance(Y, RepeatBlock):
        return make_bcast_block(Y.core * (c.unsqueeze(-1) if rows else c.unsqueeze(-2)), out_shape)
    if isinstance(Y, DiagonalBlock) and Y.delta == Y.ndim - 2:
        return DiagonalBlock(Y.core * c, Y.delta)
    if isinstance(Y, (ConvBlock, PatchesBlock, SelectBlock)):
        return Y.scale_rows(c) if rows else Y.scale_cols(c)
    return None


def _scale_rows(Y: Block, c: torch.Tensor, out_shape):
    """diag(c) @ Y"""
    return _scale(Y, c, out_shape, rows=True)


def _scale_cols(Y: Block, c: torch.Tensor, out_shape):
    """Y @ diag(c)"""
    return _scale(Y, c, out_shape, rows=False)


def _dense_conv(A: RepeatBlock, C: ConvBlock, out_shape) -> Block:
    """X @ M_conv: every row of X is an output-map gradient -> conv_transpose2d (on the CPU, onto an
    image of at most 3 channels (a network's input), as its col2im form ``fold(W^T x)``: 2.4x (RGB) to
    4x (grey) faster there; with more channels conv_transpose2d is faster in float32 (mkldnn), but in
    float64 torch's own kernel unfolds every row at once into a zero-filled buffer nine times the rows'
    size for a 3x3 kernel (8.4 GB for 2,704 rows of VNN-COMP's TinyYOLO 16x52x52 maps) and is 2.5-5x
    slower than the folded form in pieces of a few megabytes)."""
    ca = _full_k(A.core, -1, A.shape[-1])
    co, ho, wo = C.out_chw
    (hi, wi), (sh, sw), (ph, pw), (kh, kw) = C.in_hw, C.stride, C.padding, C.k_hw
    x = ca.reshape(-1, co, ho, wo)
    ci = C.weight.shape[1]
    if x.device.type == "cpu" and (ci <= 3 or x.dtype == torch.float64):
        wt = C.weight.reshape(co, ci * kh * kw).t()
        cols = ci * kh * kw * ho * wo
        if ci <= 3:  # rows whose columns stay small, in at most _COLS_CHUNKS_MAX pieces (each a few operations)
            step = max(1, _COLS_CHUNK // cols, -(-x.shape[0] // _COLS_CHUNKS_MAX))
        else:  # pieces that stay in cache however many: the time is the memory traffic
            step = max(1, _COLS_CHUNK_F64 // cols)
        y = _fold_transposed_rows(x, wt, (ci, kh, kw), C.in_hw, C.stride, C.padding, step)
    else:
        oph = hi - ((ho - 1) * sh - 2 * ph + kh)
        opw = wi - ((wo - 1) * sw - 2 * pw + kw)
        if x.device.type == "cpu":  # mkldnn's transposed convolution is about 1.5x faster channels-last
            x = x.contiguous(memory_format=torch.channels_last)
        y = F.conv_transpose2d(x, C.weight, stride=C.stride, padding=C.padding, output_padding=(oph, opw))
    return make_bcast_block(y.reshape(tuple(ca.shape[:-1]) + (out_shape[-1],)), out_shape)


def _fold_transposed_rows(x: torch.Tensor, wt: torch.Tensor, cik, in_hw, stride, padding, step: int) -> torch.Tensor:
    """``fold(W^T x)`` of every row ``x [N, co, ho, wo]`` (``wt = W^T [ci*kh*kw, co]``): the images
    ``[N, ci, H, W]`` (a view of a canvas), ``step`` rows at a time.  W^T x is one bmm over the rows
    (``wt`` broadcast: torch.matmul of the transposed 2-D wt by a 3-D x copies x twice, 11x slower at
    [288, 8, 196] float32).  The pieces share one columns buffer and fold onto one canvas: a piece's
    own temporaries (tens of megabytes on the conv nets' back-substitutions) would be mapped afresh
    each time, and their new pages cost more than the products (autograd records the products
    out of place instead)."""
    n, co, ho, wo = x.shape
    ci, kh, kw = cik
    khwo = (kh, kw, ho, wo)
    if step >= n or records(x, wt):
        def rows(xc):
            xc = xc.reshape(-1, co, ho * wo)
            cols = torch.bmm(wt.expand(xc.shape[0], -1, -1), xc).reshape(-1, ci, kh, kw, ho, wo)
            return fold_patches(cols, in_hw, stride, padding)
        return _in_chunks(rows, x, step, 0, 0)
    canvas = fold_canvas(n, ci, khwo, in_hw, stride, padding, x)
    buf = x.new_empty(step, ci * kh * kw, ho * wo)
    for start in range(0, n, step):
        m = min(step, n - start)
        cols = buf[:m] if m < step else buf
        torch.bmm(wt.expand(m, -1, -1), x[start: start + m].reshape(m, co, ho * wo), out=cols)
        fold_onto(canvas[start * ci: (start + m) * ci], cols.view(m, ci, kh, kw, ho, wo), stride, padding, in_hw)
    return canvas_image(canvas, n, ci, khwo, in_hw, stride, padding)


def _in_chunks(fn, x: torch.Tensor, step: int, dim: int, out_dim: int) -> torch.Tensor:
    """``fn(x)``, or ``fn`` on pieces of ``step`` entries of ``x`` along ``dim`` concatenated along
    ``out_dim`` (bounded working memory for products that unfold their operand)."""
    if step >= x.shape[dim]:
        return fn(x)
    return torch.cat([fn(xc) for xc in x.split(step, dim=dim)], dim=out_dim)


_COLS_CHUNK = 1 << 20  # entries of the unfolded columns that a CPU X @ conv makes at once
_COLS_CHUNKS_MAX = 8
_COLS_CHUNK_F64 = 3 << 20  # entries of a float64 piece with more than 3 channels (24 MiB: 0.9 s against 1.6-1.8 s
# for 4-32x bigger pieces on 2,704 rows of 16x52x52 maps, 2 CPU threads)


def _conv_dense(C: ConvBlock, B: RepeatBlock, out_shape) -> Block:
    """M_conv @ X: every column of X is an input map -> conv2d."""
    cb = _full_k(B.core, -2, B.shape[-2])
    x = cb.transpose(-1, -2)
    lead = tuple(x.shape[:-1])
    y = F.conv2d(x.reshape((-1,) + C.in_chw), C.weight, stride=C.stride, padding=C.padding)
    y = y.reshape(lead + (out_shape[-2],)).transpose(-1, -2)
    return make_bcast_block(y, out_shape)


def _dense_patches(A: RepeatBlock, P: PatchesBlock, out_shape) -> Block:
    """X @ M_patches: einsum with the per-position kernels, then fold (col2im)."""
    ca = _full_k(A.core, -1, A.shape[-1])
    co, ho, wo = P.out_chw
    ci, kh, kw = P.in_chw[0], *P.k_hw
    lead_a, m = tuple(ca.shape[:-2]), ca.shape[-2]
    x = ca.reshape(lead_a + (m, co, ho * wo))
    pr = P.core.reshape(P.lead + (co, ho * wo, ci * kh * kw))
    lead_r = tuple(torch.broadcast_shapes(lead_a, P.lead))
    per_row = ci * kh * kw * ho * wo  # the unfolded columns of one row of X, before the fold
    for d in lead_r:
        per_row *= d
    step = max(1, _UNFOLDED_MAX // per_row)  # rows of X at a time: bounded working memory

    def rows(xc):
        t = torch.einsum("...mcp,...cpq->...mqp", xc, pr)
        img = fold_patches(t.reshape(-1, ci, kh, kw, ho, wo), P.in_hw, P.stride, P.padding)
        return img.reshape(lead_r + (xc.shape[-3], out_shape[-1]))

    img = _in_chunks(rows, x, step, -3, -2)
    return make_bcast_block(img, out_shape)


_UNFOLDED_MAX = 1 << 26  # entries of the unfolded columns that X @ patches makes at once


def _patches_dense(P: PatchesBlock, B: RepeatBlock, out_shape) -> Block:
    """M_patches @ X: unfold (im2col) the columns of X, einsum with the kernels."""
    cb = _full_k(B.core, -2, B.shape[-2])
    co, ho, wo = P.out_chw
    ci, kh, kw = P.in_chw[0], *P.k_hw
    x = cb.transpose(-1, -2)
    lead_b, n = tuple(x.shape[:-2]), x.shape[-2]
    u = unfold_image(x.reshape((-1,) + P.in_chw), P.k_hw, P.stride, P.padding, (ho, wo))
    pr = P.core.reshape(P.lead + (co, ho * wo, ci * kh * kw))
    if n == 1:  # one column (a box's bound): multiply and sum in the core's layout, 4x faster than the
        # einsum's permuted copy of the core on the conv nets' concretisations
        u = u.permute(0, 4, 5, 1, 2, 3).reshape(lead_b + (1, ho * wo, ci * kh * kw))
        out = (pr * u).sum(-1, keepdim=True)
    else:
        u = u.reshape(lead_b + (n, ci * kh * kw, ho * wo))
        out = torch.einsum("...cpq,...nqp->...cpn", pr, u)
    lead_r = tuple(out.shape[:-3])
    return make_bcast_block(out.reshape(lead_r + (co * ho * wo, n)), out_shape)


_KERNEL_MATRIX_MAX = 1 << 22  # entries of the conv_transpose2d matrix used for kernel composition


def _conv_transpose_matrix(weight: torch.Tensor, stride, out_hw) -> torch.Tensor:
    """The matrix ``M`` with ``conv_transpose2d(x, weight, stride).flatten(1) == x.flatten(1) @ M`` for
    inputs whose transpose-convolution output is ``out_hw``: the transpose of ``conv2d`` over the unit
    images of that size."""
    ci = weight.shape[1]
    n = ci * out_hw[0] * out_hw[1]
    eye = torch.eye(n, dtype=weight.dtype, device=weight.device).reshape(n, ci, *out_hw)
    return F.conv2d(eye, weight, stride=stride).reshape(n, -1).T


def _patches_conv(P: PatchesBlock, C: ConvBlock, out_shape) -> Block:
    """M_patches @ M_conv = patches with composed kernels (stride s1*s2,
    padding p1*s2 + p2): the transpose convolution of each kernel with the conv weight."""
    if P.in_chw != C.out_chw or not P.core.is_floating_point():
        return _patches_dense(P, DenseBlock(C.to_dense(0)), out_shape)
    cm = P.in_chw[0]
    kh, kw = P.k_hw
    (s1h, s1w), (p1h, p1w) = P.stride, P.padding
    core = P.core_where_valid(0.0)  # kernel entries over the padding are not part of the matrix
    x = core.reshape(-1, cm, kh, kw)
    ci = C.weight.shape[1]
    kh2, kw2 = (kh - 1) * C.stride[0] + C.weight.shape[2], (kw - 1) * C.stride[1] + C.weight.shape[3]
    if cm * kh * kw * ci * kh2 * kw2 <= _KERNEL_MATRIX_MAX:
        # many small kernels: one matmul with the [cm*kh*kw, ci*kh2*kw2] matrix of conv_transpose2d
        # (CPU conv_transpose2d over thousands of 4x4 images is several times slower)
        y = x.reshape(x.shape[0], -1) @ _conv_transpose_matrix(C.weight, C.stride, (kh2, kw2))
    else:
        y = F.conv_transpose2d(x, C.weight, stride=C.stride)
    core2 = y.reshape(tuple(core.shape[:-3]) + (ci, kh2, kw2))
    (s2h, s2w), (p2h, p2w) = C.stride, C.padding
    out = PatchesBlock(core2, C.in_hw, (s1h * s2h, s1w * s2w), (p1h * s2h + p2h, p1w * s2w + p2w))
    # a kernel wider than the image: the matrix is smaller (and the kernels only grow from here)
    return DenseBlock(out.to_dense(0)) if kh2 * kw2 > C.in_hw[0] * C.in_hw[1] else out


def _conv_patches(C: ConvBlock, P: PatchesBlock) -> PatchesBlock:
    """M_conv @ M_patches = patches with composed kernels: output position ``o`` of the convolution
    sums, over its taps ``(c, i, j)``, the weight times the kernel of ``P``'s row ``(c, y + i, x + j)``,
    which sits ``(i, j) * s_P`` further in ``P``'s input.  So the new kernel is ``(k_C - 1) s_P + k_P``
    wide, the stride ``s_C s_P`` and the padding ``p_C s_P + p_P``.  Computed tap by tap: ``P``'s
    kernels (zero over its padding) at the positions the tap reads, contracted with the tap's weights
    over the channels, added into the bigger kernel at offset ``(i, j) * s_P``.  (One tap at a time
    keeps the working memory at one output's size, where unfolding every tap at once would need
    ``k_C^2`` times more: the noise-symbol parts of DeepZ on a CIFAR ConvBig are gigabytes.)"""
    co_p, ho_p, wo_p = P.out_chw
    ci, kh, kw = P.in_chw[0], *P.k_hw
    co_c, ka_h, ka_w = C.weight.shape[0], C.weight.shape[2], C.weight.shape[3]
    ho_c, wo_c = C.out_hw
    (s_ph, s_pw), (p_ph, p_pw) = P.stride, P.padding
    (s_ch, s_cw), (p_ch, p_cw) = C.stride, C.padding
    core = P.core_where_valid(0.0)  # [*lead, co_p, ho_p, wo_p, ci, kh, kw]
    lead = tuple(core.shape[:-6])
    f = ci * kh * kw
    img = core.reshape((-1, co_p, ho_p, wo_p, f))
    rh = max(0, (ho_c - 1) * s_ch + ka_h - ho_p - p_ch)
    rw = max(0, (wo_c - 1) * s_cw + ka_w - wo_p - p_cw)
    img = F.pad(img, (0, 0, p_cw, rw, p_ch, rh))  # zero rows of P outside its output grid
    weight = C.weight.to(core.dtype)
    kh2, kw2 = (ka_h - 1) * s_ph + kh, (ka_w - 1) * s_pw + kw
    out = core.new_zeros((img.shape[0], co_c, ho_c, wo_c, ci, kh2, kw2))
    for i in range(ka_h):
        for j in range(ka_w):
            tap = img[:, :, i:i + (ho_c - 1) * s_ch + 1:s_ch, j:j + (wo_c - 1) * s_cw + 1:s_cw]
            term = torch.einsum("nchwf,dc->ndhwf", tap, weight[:, :, i, j])
            out[..., i * s_ph:i * s_ph + kh, j * s_pw:j * s_pw + kw] += term.reshape(term.shape[:4] + (ci, kh, kw))
    out = out.reshape(lead + tuple(out.shape[1:]))
    full = tuple(torch.broadcast_shapes(tuple(C.lead), lead))  # C's lead dims repeat one matrix
    if full != lead:
        out = out.reshape((1,) * (len(full) - len(lead)) + tuple(out.shape)).expand(full + tuple(out.shape[len(lead):]))
    return PatchesBlock(out, P.in_hw, (s_ch * s_ph, s_cw * s_pw), (p_ch * s_ph + p_ph, p_cw * s_pw + p_pw))


def _repeat_of(X: Block) -> RepeatBlock:
    return X if isinstance(X, RepeatBlock) else DenseBlock(X.to_dense(0))


def _x_select(X: RepeatBlock, S: SelectBlock, out_shape) -> Block:
    """X @ S: column ``r`` of X, times ``S``'s entry, added into column ``index[r]`` (O(p m))."""
    y = X.core * S.core.unsqueeze(-2)
    if y.shape[-1] != S.shape[-2]:  # X's columns broadcast
        y = y.expand(*y.shape[:-1], S.shape[-2])
    out = torch.zeros(y.shape[:-1] + (S.n_cols,), dtype=y.dtype, device=y.device)
    return make_bcast_block(out.index_add_(y.dim() - 1, S.index.to(y.device), y), out_shape)


def _select_x(S: SelectBlock, X: RepeatBlock, out_shape) -> Block:
    """S @ X: row ``index[r]`` of X times ``S``'s entry of row ``r`` (O(m q))."""
    rows = X.core if X.core.shape[-2] == 1 else X.core.index_select(X.core.dim() - 2, S.index.to(X.core.device))
    return make_bcast_block(S.core.unsqueeze(-1) * rows, out_shape)


def _select_select(S: SelectBlock, T: SelectBlock) -> Block:
    """S @ T: row ``r`` selects T's row ``index_S[r]``, so its column ``index_T[index_S[r]]``."""
    idx = S.index.to(T.core.device)
    return SelectBlock(S.core * T.core[..., idx], T.index[idx], T.n_cols)


def block_matmul(A: Block, B: Block) -> Block:
    """Product of two blocks whose holes are 0: ``A [*L, m, k] @ B [*L, k, n]``."""
    out_shape = tuple(A.shape[:-1]) + (B.shape[-1],)
    r = A.ndim
    res = None
    if isinstance(A, RepeatBlock) and isinstance(B, RepeatBlock):
        res = _bcast_mm(A, B, out_shape)
    elif isinstance(A, DiagonalBlock) and A.delta == r - 2:
        res = _scale_rows(B, A.core, out_shape)
    elif isinstance(B, DiagonalBlock) and B.delta == r - 2:
        res = _scale_cols(A, B.core, out_shape)
    elif isinstance(A, SelectBlock) and isinstance(B, SelectBlock):
        res = _select_select(A, B)
    elif isinstance(B, SelectBlock):
        res = _x_select(_repeat_of(A), B, out_shape)
    elif isinstance(A, SelectBlock):
        res = _select_x(A, _repeat_of(B), out_shape)
    elif isinstance(B, ConvBlock):
        if isinstance(A, RepeatBlock):
            res = _dense_conv(A, B, out_shape)
        elif isinstance(A, PatchesBlock):
            res = _patches_conv(A, B, out_shape)
        elif isinstance(A, ConvBlock):
            res = _patches_conv(A.as_patches(), B, out_shape)
        else:
            res = _dense_conv(DenseBlock(A.to_dense(0)), B, out_shape)
    elif isinstance(A, ConvBlock):
        if isinstance(B, (PatchesBlock, ConvBlock)):
            P = B.as_patches() if isinstance(B, ConvBlock) else B
            res = _conv_patches(A, P) if P.out_chw == A.in_chw and P.core.is_floating_point() else None
        if res is None:
            Bd = B if isinstance(B, RepeatBlock) else DenseBlock(B.to_dense(0))
            res = _conv_dense(A, Bd, out_shape)
    elif isinstance(B, PatchesBlock) and isinstance(A, RepeatBlock):
        res = _dense_patches(A, B, out_shape)
    elif isinstance(A, PatchesBlock):
        Bd = B if isinstance(B, RepeatBlock) else DenseBlock(B.to_dense(0))
        res = _patches_dense(A, Bd, out_shape)
    if res is None:
        res = DenseBlock(torch.matmul(A.to_dense(0), B.to_dense(0)))
    return res


# ------------------------------------------------------------------ driver
def _is_zero(v) -> bool:
    return v is False or (not isinstance(v, bool) and same_value(v, 0))


def matmul_sparse(a: SparseTensor, b: SparseTensor) -> SparseTensor:
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError("matmul_sparse needs rank >= 2 operands")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"inner: shapes {a.shape} and {b.shape} do not contract")
    # finiteness is checked before broadcasting (broadcast blocks can be far larger than their cores)
    finite = all(blk.all_finite() for _, blk in a.blocks) and all(blk.all_finite() for _, blk in b.blocks)
    lead = broadcast_shape(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, lead + a.shape[-2:])
    b = broadcast_to(b, lead + b.shape[-2:])
    m, k = a.shape[-2:]
    n = b.shape[-1]
    out_shape = lead + (m, n)
    cdt = torch.promote_types(a.dtype, b.dtype)
    if not (_is_zero(a.background) and _is_zero(b.background)) or not finite:
        # non-zero background, or inf/NaN whose products with implicit zeros
        # must yield NaN as in dense torch: evaluate densely (exact semantics)
        dense = torch.matmul(a.to_dense().to(cdt), b.to_dense().to(cdt))
        return SparseTensor.from_dense(dense)
    L = len(lead)
    products: list[tuple] = []
    for sa, A in a.blocks:
        ra = region_of(sa, A.shape)
        for sb, B in b.blocks:
            rb = region_of(sb, B.shape)
            lead_i = intersect(ra[:L], rb[:L]) if L else ()
            if lead_i is None:
                continue
            k0, k1 = max(ra[L + 1][0], rb[L][0]), min(ra[L + 1][1], rb[L][1])
            if k0 >= k1:
                continue
            rows, cols = ra[L], rb[L + 1]
            if isinstance(A, DiagonalBlock) and A.delta == L:
                rows = (ra[L][0] + k0 - ra[L + 1][0], ra[L][0] + k1 - ra[L + 1][0])
            if isinstance(B, DiagonalBlock) and B.delta == L:
                cols = (rb[L + 1][0] + k0 - rb[L][0], rb[L + 1][0] + k1 - rb[L][0])
            A_sub = A.restrict(relative(lead_i + (rows, (k0, k1)), ra), 0).to(cdt)
            B_sub = B.restrict(relative(lead_i + ((k0, k1), cols), rb), 0).to(cdt)
            products.append((lead_i + (rows, cols), block_matmul(A_sub, B_sub)))
    blocks = []
    regions = [r for r, _ in products]
    for reg, members in plan_regions(regions):
        subs = []  # (intersection, product restricted to it)
        for i in members:
            inter = intersect(regions[i], reg)
            subs.append((inter, products[i][1].restrict(relative(inter, regions[i]), 0)))
        if all(inter == reg for inter, _ in subs):
            zero = torch.zeros((), dtype=cdt, device=a.device)
            acc = subs[0][1]
            for _, p in subs[1:]:
                acc = generic_region(torch.add, [acc, p], [zero, zero], 0, shape_of(reg))
            blocks.append((start_of(reg), acc))
            continue
        out = torch.zeros(shape_of(reg), dtype=cdt, device=a.device)
        for inter, p in subs:
            view = out[tuple(slice(lo, hi) for lo, hi in relative(inter, reg))]
            view += p.to_dense(0)
        blocks.append((start_of(reg), DenseBlock(out)))
    return SparseTensor(out_shape, 0, blocks, dtype=cdt, device=a.device)
