"""Conv / patches blocks: matmul equals the product of the unrolled convolution."""

import pytest
import torch

import cfruntime.tensor as T
from cfruntime.tensor import ConvBlock, DenseBlock, DiagonalBlock, PatchesBlock, SparseTensor
from cfruntime.tensor import matmul as matmul_module
from cfruntime.tensor.conv_utils import conv_out_hw
from cftest.gbscr_strategies import assert_matches, naive_patches, unrolled_conv

GEOMS = [(s, p, ci, co, k) for s in (1, 2) for p in (0, 1) for (ci, co) in ((1, 1), (2, 3), (3, 2)) for k in (2, 3)]


def _rand(g, *shape, dtype):
    if dtype == torch.float32:  # small integers: float32 products/sums are exact
        return torch.randint(-3, 4, shape, generator=g).to(dtype)
    return torch.randn(*shape, generator=g, dtype=dtype)


@pytest.fixture
def no_conv_unroll(monkeypatch):
    """Fail if a conv block is unrolled into its dense matrix."""
    def boom(self, *a, **k):
        raise AssertionError("conv block densified on the hot path")
    monkeypatch.setattr(ConvBlock, "to_dense", boom)
    monkeypatch.setattr(ConvBlock, "write_into", boom)


def _setup(s, p, ci, co, k, dtype, hw=(5, 4), seed=0):
    g = torch.Generator().manual_seed(seed + 100 * s + 10 * p + ci * 3 + co + k)
    w = _rand(g, co, ci, k, k, dtype=dtype)
    blk = ConvBlock(w, hw, s, p)
    return g, w, blk, unrolled_conv(w, hw, s, p)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("s,p,ci,co,k", GEOMS)
def test_dense_at_conv_and_conv_at_dense(s, p, ci, co, k, dtype, no_conv_unroll):
    g, w, blk, M = _setup(s, p, ci, co, k, dtype)
    rows, cols = M.shape
    batch, curr = 3, 4
    # coefficient [batch, curr, N] with the layer block at an offset; bound with conv block
    N = rows + cols + 3
    A = _rand(g, batch, curr, rows, dtype=dtype)
    coef = SparseTensor((batch, curr, N), 0.0, [((0, 0, 2), DenseBlock(A))])
    bound = SparseTensor((N, N), 0.0, [((2, 2 + rows), blk)])
    r = T.inner(coef, bound)
    assert all(b.kind == "dense" for _, b in r.blocks)
    assert_matches(r, _embed_cols(A @ M, N, 2 + rows, batch, curr))
    # conv @ dense: columns of X are input maps
    X = _rand(g, cols, 5, dtype=dtype)
    xs = SparseTensor((cols, 5), 0.0, [((0, 0), DenseBlock(X))])
    cs = SparseTensor((rows, cols), 0.0, [((0, 0), blk)])
    assert_matches(T.inner(cs, xs), M @ X)
    # batched dense operand on the right
    Xb = _rand(g, 2, cols, 3, dtype=dtype)
    xb = SparseTensor((2, cols, 3), 0.0, [((0, 0, 0), DenseBlock(Xb))])
    assert_matches(T.inner(cs, xb), M @ Xb)


def _embed_cols(t, N, off, batch, curr):
    out = torch.zeros(batch, curr, N, dtype=t.dtype)
    out[..., off:off + t.shape[-1]] = t
    return out


@pytest.mark.parametrize("s,p,ci,co,k", GEOMS)
def test_diag_and_conv_give_patches(s, p, ci, co, k, no_conv_unroll):
    dtype = torch.float64
    g, w, blk, M = _setup(s, p, ci, co, k, dtype)
    rows, cols = M.shape
    cs = SparseTensor((2, rows, cols), 0.0, [((0, 0, 0), ConvBlock(w, (5, 4), s, p, lead=(2,)))])
    lam_out = torch.rand(2, rows, generator=g, dtype=dtype)
    lam_in = torch.rand(2, cols, generator=g, dtype=dtype)
    dout = SparseTensor((2, rows, rows), 0.0, [((0, 0, 0), DiagonalBlock(lam_out, 1))])
    din = SparseTensor((2, cols, cols), 0.0, [((0, 0, 0), DiagonalBlock(lam_in, 1))])
    left = T.inner(dout, cs)
    right = T.inner(cs, din)
    assert left.blocks[0][1].kind == "patches" and right.blocks[0][1].kind == "patches"
    assert_matches(left, torch.diag_embed(lam_out) @ M)
    assert_matches(right, M @ torch.diag_embed(lam_in))


@pytest.mark.parametrize("composition", ["matrix", "conv_transpose2d"])
@pytest.mark.parametrize("s2,p2", [(1, 0), (1, 1), (2, 0), (2, 1)])
@pytest.mark.parametrize("s,p,ci,co,k", GEOMS[::3])
def test_patches_and_conv_products(s, p, ci, co, k, s2, p2, composition, monkeypatch):
    """conv1: [ci, 5, 4] -> mid; conv2 / patches: mid -> out.  Kernel composition (patches @ conv)
    either through the small transpose-convolution matrix or through conv_transpose2d."""
    if composition == "conv_transpose2d":
        monkeypatch.setattr(matmul_module, "_KERNEL_MATRIX_MAX", 0)
    dtype = torch.float64
    g, w1, conv1, M1 = _setup(s, p, ci, co, k, dtype)
    mid_hw = conv1.out_hw
    k2 = 2
    ho, wo = conv_out_hw(mid_hw, (k2, k2), (s2, s2), (p2, p2))
    if ho < 1 or wo < 1:
        pytest.skip("empty output")
    c2 = 2
    core = torch.randn(c2, ho, wo, co, k2, k2, generator=g, dtype=dtype)
    P = PatchesBlock(core, mid_hw, s2, p2)
    MP = naive_patches(core, mid_hw, s2, p2)
    w2 = torch.randn(c2, co, k2, k2, generator=g, dtype=dtype)
    conv2 = ConvBlock(w2, mid_hw, s2, p2)
    M2 = unrolled_conv(w2, mid_hw, s2, p2)

    def st(b):
        return SparseTensor(b.shape, 0.0, [((0,) * len(b.shape), b)])

    # patches @ conv -> patches (kernel composition), conv @ conv -> patches; dense where the composed
    # kernel is wider than conv1's input map (the matrix is smaller then)
    composed = ((k2 - 1) * s + k) ** 2
    kind = "dense" if composed > 5 * 4 else "patches"
    r = T.inner(st(P), st(conv1))
    assert r.blocks[0][1].kind == kind
    assert_matches(r, MP @ M1)
    r = T.inner(st(conv2), st(conv1))
    assert r.blocks[0][1].kind == kind
    assert_matches(r, M2 @ M1)
    # conv @ patches: conv2 applied to the columns of a patches block
    Pin = PatchesBlock(torch.randn(co, *mid_hw, ci, k, k, generator=g, dtype=dtype), (5, 4), s, p)
    assert Pin.shape == M1.shape
    MPin = naive_patches(Pin.core, (5, 4), s, p)
    r = T.inner(st(conv2), st(Pin))
    assert r.blocks[0][1].kind == "patches"  # kernel composition, not the densified columns
    assert_matches(r, M2 @ MPin)
    assert_matches(T.inner(st(P), st(Pin)), MP @ MPin)
    # dense @ patches and patches @ dense
    X = torch.randn(3, MP.shape[0], generator=g, dtype=dtype)
    assert_matches(T.inner(st(DenseBlock(X)), st(P)), X @ MP)
    Y = torch.randn(MP.shape[1], 4, generator=g, dtype=dtype)
    assert_matches(T.inner(st(P), st(DenseBlock(Y))), MP @ Y)
    y = Y[:, :1]  # one column (a box's bound): multiplied and summed in the core's layout
    assert_matches(T.inner(st(P), st(DenseBlock(y))), MP @ y)


@pytest.mark.parametrize("lead_y,lead_p", [((), (2,)), ((2,), ()), ((2,), (2,)), ((2,), (1,))])
def test_patches_at_one_column_with_lead_dims(lead_y, lead_p):
    """patches @ y for one column y, every broadcast of the lead dims (the concretisation against a
    box of a batch of per-sample coefficients, or of shared weights against a batch of boxes)."""
    g = torch.Generator().manual_seed(5)
    core = torch.randn(*lead_p, 3, 4, 4, 2, 3, 3, generator=g, dtype=torch.float64)
    P = PatchesBlock(core, (8, 7), 2, 1)
    y = torch.randn(*lead_y, 112, 1, generator=g, dtype=torch.float64)
    st = lambda b: SparseTensor(b.shape, 0.0, [((0,) * len(b.shape), b)])  # noqa: E731
    flat = core.reshape((-1,) + tuple(core.shape[-6:]))
    MP = torch.stack([naive_patches(c, (8, 7), 2, 1) for c in flat]).reshape(tuple(lead_p) + (48, 112))
    assert_matches(T.inner(st(P), st(DenseBlock(y))), MP @ y)


@pytest.mark.parametrize("s,p,ci,co,k", GEOMS)
def test_fold_by_index_equals_col2im(s, p, ci, co, k):
    """The CPU's fold (one index_add_) and ``F.fold`` (CUDA's) scatter-add the same columns, and
    both are the adjoint of unfold."""
    from cfruntime.tensor import conv_utils

    g = torch.Generator().manual_seed(11 + s + p + k)
    ho, wo = conv_out_hw((7, 6), (k, k), (s, s), (p, p))
    cols = torch.randn(3, ci, k, k, ho, wo, generator=g, dtype=torch.float64)
    by_index = conv_utils.fold_patches(cols, (7, 6), (s, s), (p, p))
    by_col2im = conv_utils._fold_by_col2im(cols, (7, 6), (s, s), (p, p))
    torch.testing.assert_close(by_index, by_col2im, rtol=1e-12, atol=1e-12)
    img = torch.randn(3, ci, 7, 6, generator=g, dtype=torch.float64)  # <unfold(img), cols> == <img, fold(cols)>
    u = conv_utils.unfold_image(img, (k, k), (s, s), (p, p), (ho, wo))
    torch.testing.assert_close((u * cols).sum(), (img * by_index).sum(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("chunk", [None, 1])
@pytest.mark.parametrize("s,p,ci,co,k", [g for g in GEOMS if g[2] <= 3][::2])
def test_dense_at_conv_onto_few_channels_in_row_chunks(s, p, ci, co, k, chunk, monkeypatch):
    """X @ conv onto an image of at most 3 channels (the CPU's W^T x then fold), whole or a few rows
    at a time, equals the unrolled product."""
    if chunk is not None:
        monkeypatch.setattr(matmul_module, "_COLS_CHUNK", chunk)
        monkeypatch.setattr(matmul_module, "_COLS_CHUNKS_MAX", 1 << 30)
    g, w, blk, M = _setup(s, p, ci, co, k, torch.float64)
    X = torch.randn(2, 7, M.shape[0], generator=g, dtype=torch.float64)
    r = T.inner(SparseTensor(X.shape, 0.0, [((0, 0, 0), DenseBlock(X))]),
                SparseTensor((2,) + tuple(M.shape), 0.0, [((0, 0, 0), ConvBlock(w, (5, 4), s, p, lead=(2,)))]))
    assert_matches(r, X @ M)


@pytest.mark.parametrize("chunk", [None, 1])
@pytest.mark.parametrize("s,p,ci,co,k", [(1, 1, 4, 5, 3), (2, 0, 5, 4, 2), (2, 1, 4, 3, 3)])
def test_dense_at_conv_onto_many_channels_in_float64_is_folded_in_pieces(s, p, ci, co, k, chunk, monkeypatch):
    """X @ conv onto more than 3 channels in float64 on the CPU: W^T x then fold in pieces of rows (torch's
    float64 transposed convolution unfolds every row at once into a zero-filled buffer), whole or a row at a
    time, equals the unrolled product; in float32 it stays one transposed convolution (mkldnn)."""
    from cfruntime.op_count import OpCounter

    if chunk is not None:
        monkeypatch.setattr(matmul_module, "_COLS_CHUNK_F64", chunk)
    for dtype in (torch.float64, torch.float32):
        g, w, blk, M = _setup(s, p, ci, co, k, dtype)
        X = _rand(g, 2, 7, M.shape[0], dtype=dtype)  # small integers in float32: exact
        conv = SparseTensor((2,) + tuple(M.shape), 0.0, [((0, 0, 0), ConvBlock(w, (5, 4), s, p, lead=(2,)))])
        with OpCounter() as ops:
            r = T.inner(SparseTensor(X.shape, 0.0, [((0, 0, 0), DenseBlock(X))]), conv)
        assert_matches(r, X @ M)
        folded = ops.by_name.get("bmm", 0)
        assert (folded == (1 if chunk is None else 14)) if dtype == torch.float64 else folded == 0, ops.by_name


@pytest.mark.parametrize("grad", [False, True])
def test_dense_at_conv_in_pieces_shares_one_buffer_and_one_canvas(grad, monkeypatch):
    """X @ conv onto an RGB image in pieces of rows: the pieces' W^T x go through one columns buffer
    and fold onto one canvas (no per-piece temporaries, no concatenation: their fresh pages cost more
    than the products on the CPU); with gradients recorded the pieces are made out of place and the
    gradient is the unrolled product's."""
    from cfruntime.op_count import OpCounter

    monkeypatch.setattr(matmul_module, "_COLS_CHUNK", 1)
    monkeypatch.setattr(matmul_module, "_COLS_CHUNKS_MAX", 4)  # 14 rows: 4 pieces
    g, w, blk, M = _setup(2, 1, 3, 2, 3, torch.float64)
    X = torch.randn(2, 7, M.shape[0], generator=g, dtype=torch.float64, requires_grad=grad)
    conv = SparseTensor((2,) + tuple(M.shape), 0.0, [((0, 0, 0), ConvBlock(w, (5, 4), 2, 1, lead=(2,)))])
    with OpCounter() as ops:
        r = T.inner(SparseTensor(X.shape, 0.0, [((0, 0, 0), DenseBlock(X))]), conv)
    assert_matches(r, (X @ M).detach())
    if grad:
        (T.to_dense(r) * M.sum(0)).sum().backward()
        torch.testing.assert_close(X.grad, (M.sum(0) @ M.t()).expand(2, 7, -1), rtol=1e-12, atol=1e-12)
    else:
        assert ops.by_name["new_zeros"] == 1 and ops.by_name["new_empty"] == 1 and ops.by_name["cat"] == 0, ops.by_name
        assert ops.by_name["bmm"] == ops.by_name["index_add_"] == 4, ops.by_name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("lead_c,lead_p", [((), (3,)), ((2,), ()), ((2,), (1,)), ((2,), (2,))])
def test_conv_at_patches_with_lead_dims(lead_c, lead_p, dtype, no_conv_unroll):
    """conv @ patches keeps patches (composed kernels) for every broadcast of the lead dims; a
    strided, padded convolution over a strided, padded patches block."""
    g = torch.Generator().manual_seed(7)
    core = _rand(g, *lead_p, 3, 4, 4, 2, 3, 3, dtype=dtype)  # patches: [2, 8, 7] -> [3, 4, 4]
    P = PatchesBlock(core, (8, 7), 2, 1)
    w = _rand(g, 2, 3, 3, 3, dtype=dtype)
    C = ConvBlock(w, (4, 4), 2, 1, lead=lead_c)
    st = lambda b: SparseTensor(b.shape, 0.0, [((0,) * len(b.shape), b)])  # noqa: E731
    r = T.inner(st(C), st(P))
    assert r.blocks[0][1].kind == "patches"
    flat = core.to(torch.float64).reshape((-1,) + tuple(core.shape[-6:]))
    MP = torch.stack([naive_patches(c, (8, 7), 2, 1) for c in flat]).reshape(tuple(lead_p) + (48, 112))
    expect = unrolled_conv(w.to(torch.float64), (4, 4), 2, 1) @ MP
    full = tuple(torch.broadcast_shapes(lead_c, lead_p))
    assert tuple(r.shape) == full + (8, 112)
    assert_matches(r, expect.expand(full + (8, 112)).to(dtype))


@pytest.mark.parametrize("lead_x,lead_p", [((), ()), ((2,), ()), ((), (2,)), ((2,), (2,))])
def test_dense_at_patches_in_row_chunks(lead_x, lead_p, monkeypatch):
    """X @ patches unfolds a bounded number of X's rows at a time; the chunks give the same product."""
    g = torch.Generator().manual_seed(3)
    core = torch.randn(*lead_p, 3, 4, 4, 2, 3, 3, generator=g, dtype=torch.float64)
    P = PatchesBlock(core, (8, 7), 2, 1)
    X = torch.randn(*lead_x, 5, 48, generator=g, dtype=torch.float64)
    st = lambda b: SparseTensor(b.shape, 0.0, [((0,) * len(b.shape), b)])  # noqa: E731
    whole = T.to_dense(T.inner(st(DenseBlock(X)), st(P)))
    monkeypatch.setattr(matmul_module, "_UNFOLDED_MAX", 1)  # one row at a time
    chunked = T.inner(st(DenseBlock(X)), st(P))
    flat = core.reshape((-1,) + tuple(core.shape[-6:]))
    MP = torch.stack([naive_patches(c, (8, 7), 2, 1) for c in flat]).reshape(tuple(lead_p) + (48, 112))
    assert_matches(chunked, X @ MP)
    torch.testing.assert_close(T.to_dense(chunked), whole, rtol=1e-12, atol=1e-12)


def _conv_chain(seed: int):
    """``(coef, bound, n0)``: deeppoly's bound matrix ``[2, N, N]`` of a conv [1,8,8] -> [4,4,4], a ReLU
    diagonal and a conv [4,4,4] -> [6,4,4] (random weights from ``seed``), the coefficients ``coef``
    ``[2, 5, N]`` of 5 rows on the last layer, and the input layer's size ``n0``."""
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(4, 1, 3, 3, generator=g, dtype=torch.float64)
    w2 = torch.randn(6, 4, 3, 3, generator=g, dtype=torch.float64)
    c1 = ConvBlock(w1, (8, 8), 2, 1)          # [1,8,8] -> [4,4,4]
    n0, n1, n2 = 64, 64, 96
    N = n0 + 2 * n1 + n2
    o1, o2, o3 = n0, n0 + n1, n0 + 2 * n1
    bound = SparseTensor((2, N, N), 0.0, [
        ((0, o1, 0), ConvBlock(w1, (8, 8), 2, 1, lead=(2,))),
        ((0, o2, o1), DiagonalBlock(torch.rand(2, n1, generator=g, dtype=torch.float64), 1)),
        ((0, o3, o2), ConvBlock(w2, c1.out_hw, 1, 1, lead=(2,))),  # [4,4,4] -> [6,4,4]
    ])
    coef = T.embed_range(T.from_dense(torch.randn(2, 5, n2, generator=g, dtype=torch.float64)), 2, o3, N)
    return coef, bound, n0


def test_deeppoly_conv_chain_never_unrolls(no_conv_unroll):
    """coef @ conv2 -> @ relu diag -> @ conv1, all without unrolling a conv."""
    coef, bound, n0 = _conv_chain(5)
    x = coef
    for _ in range(3):
        x = T.inner(x, bound)
    # after three steps only the input-layer columns are non-zero
    assert [(s[-1], b.shape[-1]) for s, b in x.blocks] == [(0, n0)]


def test_deeppoly_conv_chain_matches_dense():
    coef, bound, _ = _conv_chain(6)
    x, xd, bd = coef, coef.to_dense(), bound.to_dense()
    for _ in range(3):
        x, xd = T.inner(x, bound), xd @ bd
        assert_matches(x, xd)
    # also bound @ bound (composition: conv @ diag -> patches, patches @ conv)
    assert_matches(T.inner(bound, bound), bd @ bd)
    assert_matches(T.inner(T.inner(bound, bound), bound), bd @ bd @ bd)


@pytest.mark.parametrize("s,p,ci,co,k", GEOMS)
@pytest.mark.parametrize("lead", [(), (2,)])
def test_conv_times_dense_stays_patches(s, p, ci, co, k, lead, no_conv_unroll):
    """``conv * t`` entry by entry (alpha-CROWN's slopes scaling a convolution's coefficients): a
    patches block equal to the unrolled matrix times ``t``, holes (and the padding) still 0, with a
    ``t`` of leading dims the block broadcasts over."""
    g, w, blk, M = _setup(s, p, ci, co, k, torch.float64)
    t = torch.randn(*lead, *M.shape, generator=g, dtype=torch.float64)
    out = blk.times_dense(t)
    assert isinstance(out, PatchesBlock)
    torch.testing.assert_close(out.to_dense(0), M * t, rtol=0, atol=0)
    column = torch.randn(M.shape[0], 1, generator=g, dtype=torch.float64)  # broadcast along the columns
    dense = blk.as_patches().times_dense(column)  # the general (dense) product
    torch.testing.assert_close(dense, M * column, rtol=0, atol=0)
