"""Segmented (planned) g-BSCR tensors equal their dense form under every operation with a fast path,
and every operation without one still gives the dense result (through the general g-BSCR tensor)."""

import pytest
import torch

from cfruntime import tensor as gb
from cfruntime.flow import ops as rt
from cfruntime.op_count import OpCounter
from cfruntime.tensor import DiagonalBlock, Segmented
from cfruntime.tensor import segmented_ops as so

SEGMENTS = [(0, 3), (3, 4), (7, 4), (11, 2)]  # a network of layers of sizes 3, 4, 4, 2
WIDTH = 13
ROWS = 4  # rows of the coefficient tensors: a layer of 4 neurons (diagonal parts need rows == size)


def random_seg(g, batch=2, rows=ROWS, allow_diag=True, kinds=None) -> Segmented:
    parts = {}
    for i, (start, size) in enumerate(SEGMENTS):
        kind = kinds[i] if kinds else ["absent", "dense", "bcast", "diag"][int(torch.randint(0, 4, (), generator=g))]
        if kind == "diag" and (not allow_diag or size != rows):
            kind = "dense"
        if kind == "dense":
            parts[start] = torch.randn(batch, rows, size, generator=g, dtype=torch.float64)
        elif kind == "bcast":
            parts[start] = torch.randn(1, rows, size, generator=g, dtype=torch.float64)
        elif kind == "diag":
            parts[start] = DiagonalBlock(torch.randn(batch, rows, generator=g, dtype=torch.float64), 1)
    return Segmented((batch, rows, WIDTH), 2, parts, torch.float64, "cpu")


def close(a, b):
    torch.testing.assert_close(gb.to_dense(a), gb.to_dense(b), rtol=1e-12, atol=1e-12)


def test_to_dense_places_every_kind():
    core = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    dense = torch.ones(1, 4, 2, dtype=torch.float64)
    s = Segmented((1, 4, WIDTH), 2, {3: DiagonalBlock(core, 1), 11: dense}, torch.float64, "cpu")
    d = s.to_dense()
    assert torch.equal(d[0, :, 3:7], torch.diag(core[0]))
    assert torch.equal(d[0, :, 11:13], torch.ones(4, 2, dtype=torch.float64))
    assert d[..., :3].abs().sum() == 0 and d[..., 7:11].abs().sum() == 0
    assert torch.equal(s.to_sparse().to_dense(), d)


@pytest.mark.parametrize("seed", range(12))
def test_elementwise_fast_paths_equal_dense(seed):
    g = torch.Generator().manual_seed(seed)
    a, b = random_seg(g), random_seg(g)
    da, db = a.to_dense(), b.to_dense()
    close(gb.binary(a, b, "add"), da + db)
    close(gb.binary(a, b, "sub"), da - db)
    x = torch.randn(2, ROWS, 1, generator=g, dtype=torch.float64)  # constant along the segmented dim
    close(gb.binary(a, x, "mul"), da * x)
    close(gb.binary(x, a, "mul"), x * da)
    close(gb.binary(a, x.abs() + 1, "div"), da / (x.abs() + 1))
    close(gb.binary(a, 2.5, "mul"), da * 2.5)
    close(gb.unary(a, "neg"), -da)
    close(gb.unary(a, "abs"), da.abs())
    close(gb.clamp(a, 0.0, None), da.clamp(min=0))
    close(gb.clamp(a, None, 0.0), da.clamp(max=0))
    c = torch.rand(2, ROWS, 1, generator=g) > 0.5
    close(gb.where(c, a, b), torch.where(c, da, db))
    close(gb.where(c, a, 0.0), torch.where(c, da, torch.zeros(())))
    close(gb.where(c.expand(2, ROWS, WIDTH), 0.0, b), torch.where(c, torch.zeros(()), db))  # an expanded mask
    for op in (so.binary(a, x, "mul"), so.binary(a, b, "add"), so.where(c, a, b)):
        assert isinstance(op, Segmented)  # a fast path, not the general fallback


@pytest.mark.parametrize("seed", range(6))
def test_operations_without_a_fast_path_fall_back_correctly(seed):
    g = torch.Generator().manual_seed(seed)
    a = random_seg(g)
    da = a.to_dense()
    full = torch.randn(2, ROWS, WIDTH, generator=g, dtype=torch.float64)  # varies along the segmented dim
    close(gb.binary(a, full, "mul"), da * full)
    close(gb.binary(a, full, "max"), torch.maximum(da, full))
    close(gb.unary(a, "sigmoid"), torch.sigmoid(da))
    close(gb.reduce_sum(a, 1), da.sum(1))
    assert gb.any(a) == bool(da.any())


@pytest.mark.parametrize("seed", range(8))
def test_structural_ops_equal_dense(seed):
    g = torch.Generator().manual_seed(seed)
    a = random_seg(g)
    da = a.to_dense()
    close(gb.add_dim(a, 1), da.unsqueeze(1))
    close(gb.add_dim(a, 3), da.unsqueeze(3))
    close(gb.remove_dim(gb.add_dim(a, 0), 0), da)
    one = random_seg(g, batch=1)
    close(gb.expand_dim(one, 0, 5), one.to_dense().expand(5, ROWS, WIDTH))
    close(gb.permute(a, [1, 0, 2]), da.permute(1, 0, 2))
    close(gb.slice_range(a, 1, 1, 3), da[:, 1:3])
    close(gb.slice_range(a, 2, 3, 11), da[..., 3:11])  # whole segments
    close(gb.slice_range(a, 2, 5, 12), da[..., 5:12])  # cutting segments
    close(gb.embed_range(gb.slice_range(a, 2, 3, 11), 2, 3, WIDTH), torch.cat([0 * da[..., :3], da[..., 3:11], 0 * da[..., 11:]], -1))


def _split_dense(x, p, n, dim):
    return (x.clamp(min=0) * p + x.clamp(max=0) * n).sum(dim)


@pytest.mark.parametrize("seed", range(10))
def test_concretisation_over_segments_equals_dense(seed):
    """``split_inner`` over the segmented dimension against per-neuron bounds ``[B, 1, N]``."""
    g = torch.Generator().manual_seed(seed)
    x = random_seg(g)
    lo = torch.randn(2, 1, WIDTH, generator=g, dtype=torch.float64)
    hi = lo + torch.rand(2, 1, WIDTH, generator=g, dtype=torch.float64)
    lo_seg = Segmented((2, 1, WIDTH), 2, {s: lo[..., s:s + n] for s, n in SEGMENTS[:3]}, torch.float64, "cpu")
    hi_seg = Segmented((2, 1, WIDTH), 2, {s: hi[..., s:s + n] for s, n in SEGMENTS[:3]}, torch.float64, "cpu")
    lo_d, hi_d = lo_seg.to_dense(), hi_seg.to_dense()
    dx = x.to_dense()
    close(rt.split_inner(x, lo_seg, hi_seg, 2), _split_dense(dx, lo_d, hi_d, 2))
    close(rt.split_inner(x, lo, hi, 2), _split_dense(dx, lo, hi, 2))
    close(rt.inner(x, lo_seg, 2), (dx * lo_d).sum(2))
    got_lo, got_hi = rt.interval_inner(x, lo_seg, hi_seg, 2)
    close(got_lo, _split_dense(dx, lo_d, hi_d, 2))
    close(got_hi, _split_dense(dx, hi_d, lo_d, 2))
    big = torch.randn(3, 64, 6000, generator=g, dtype=torch.float64)  # the centre/radius form (big x)
    blo = torch.randn(3, 1, 6000, generator=g, dtype=torch.float64)
    bhi = blo + 1
    close(rt.split_inner(big, blo, bhi, 2), _split_dense(big, blo, bhi, 2))


@pytest.mark.parametrize("seed", range(10))
def test_substitution_through_a_layer_equals_dense(seed):
    """``split_inner(x [B, m, k, 1], L [B, 1, k, N], U, 2)``: back-substitution through one layer,
    segment by segment of the layer's polyhedra (dense, diagonal, shared by L and U)."""
    g = torch.Generator().manual_seed(seed)
    kinds_l = [["dense", "diag", "absent", "bcast"][int(torch.randint(0, 4, (), generator=g))] for _ in SEGMENTS]
    L = random_seg(g, kinds=kinds_l)
    U = random_seg(g, kinds=kinds_l)
    shared = Segmented(U.shape, 2, {s: (L.parts[s] if i % 2 == 0 and s in L.parts else p) for i, (s, p) in enumerate(U.parts.items())}, torch.float64, "cpu")
    x = torch.randn(2, 3, ROWS, 1, generator=g, dtype=torch.float64)
    for pos, neg in ((L, U), (L, shared), (L, L)):
        got = rt.split_inner(x, gb.add_dim(pos, 1), gb.add_dim(neg, 1), 2)
        assert isinstance(got, Segmented)
        want = _split_dense(x, pos.to_dense().unsqueeze(1), neg.to_dense().unsqueeze(1), 2)
        close(got, want)
    seg_x = Segmented((2, 3, ROWS), 2, {0: x.squeeze(-1)}, torch.float64, "cpu")  # a one-segment coefficient
    close(rt.split_inner(gb.add_dim(seg_x, 3), gb.add_dim(L, 1), gb.add_dim(U, 1), 2),
          _split_dense(x, L.to_dense().unsqueeze(1), U.to_dense().unsqueeze(1), 2))


@pytest.mark.parametrize("stride, padding, lead", [(1, 1, 3), (2, 0, 3), (2, 1, 1)])
def test_interval_of_a_convolution_equals_dense(stride, padding, lead):
    """IBP through a convolution part (one box per sample: conv2d on the box's centre and radius
    images) equals the dense product's interval, for strides, paddings and a batch-shared box."""
    from cfruntime.tensor.block_conv import ConvBlock

    g = torch.Generator().manual_seed(stride * 10 + padding)
    conv = ConvBlock(torch.randn(4, 2, 3, 3, generator=g, dtype=torch.float64), (6, 6), stride, padding, lead=(3,))
    n_out, n_in = conv.shape[-2:]
    x = Segmented((3, n_out, n_in), 2, {0: conv}, torch.float64, "cpu")
    lo = torch.randn(lead, 1, n_in, generator=g, dtype=torch.float64)
    hi = lo + torch.rand(lead, 1, n_in, generator=g, dtype=torch.float64)
    dense = conv.to_dense(0)
    got_lo, got_hi = rt.interval_inner(x, lo, hi, 2)
    close(got_lo, _split_dense(dense, lo, hi, 2))
    close(got_hi, _split_dense(dense, hi, lo, 2))


def test_planned_operations_never_read_values():
    """No fast path synchronises with the device: zero host syncs for a whole substitution step."""
    g = torch.Generator().manual_seed(0)
    L, U = random_seg(g, kinds=["dense", "diag", "dense", "absent"]), random_seg(g, kinds=["dense", "diag", "dense", "absent"])
    x = torch.randn(2, 3, ROWS, 1, generator=g, dtype=torch.float64)
    lo = torch.randn(2, 1, WIDTH, dtype=torch.float64)
    with OpCounter() as c:
        r = rt.split_inner(x, gb.add_dim(L, 1), gb.add_dim(U, 1), 2)
        r = gb.binary(r, r, "add")
        rt.interval_inner(r, lo, lo + 1, 2)
    assert c.syncs == 0


@pytest.mark.parametrize("seed", range(10))
def test_masks_products_and_sums_equal_dense(seed):
    """DeepZ's concretisation on segmented SymExp coefficients: a comparison with 0 is a mask (absent
    stays false), its complement is true outside its parts, masks select, products of two
    coefficient tensors and sums over either dimension keep the layout."""
    g = torch.Generator().manual_seed(seed)
    a, b = random_seg(g), random_seg(g)
    da, db = a.to_dense(), b.to_dense()
    pos = gb.binary(a, 0.0, "gt")
    assert isinstance(pos, Segmented) and pos.dtype == torch.bool
    close(pos, da > 0)
    notpos = gb.unary(pos, "not")
    close(notpos, ~(da > 0))
    neg_a = gb.binary(a, -1.0, "mul")
    for mask, dmask in ((pos, da > 0), (notpos, ~(da > 0))):
        close(rt.mult(mask, neg_a), torch.where(dmask, -da, torch.zeros(())))
        close(gb.where(mask, b, 0.0), torch.where(dmask, db, torch.zeros(())))
    close(gb.binary(a, b, "mul"), da * db)
    close(gb.reduce_sum(a, 2), da.sum(2))
    close(gb.reduce_sum(a, 1), da.sum(1))
    close(rt.reduce(a, 2, "sum", WIDTH), da.sum(2))
    assert isinstance(rt.mult(notpos, neg_a), Segmented)


@pytest.mark.parametrize("seed", range(10))
def test_substitution_step_equals_its_definition(seed):
    """``rt.substitute(c, L, U)`` (one op, splitting c once) equals ``c+ L + c- U`` part by part:
    dense and diagonal parts, shared ones (an affine layer's L is U), constants that are tensors or
    one number (ReLU's lower constant 0)."""
    from cfruntime.flow.values import Affine

    g = torch.Generator().manual_seed(seed)
    kinds = [["dense", "diag", "absent", "bcast"][int(torch.randint(0, 4, (), generator=g))] for _ in SEGMENTS]
    L, U = random_seg(g, kinds=kinds), random_seg(g, kinds=kinds)
    c = torch.randn(2, 3, ROWS, generator=g, dtype=torch.float64)
    lk = torch.randn(2, 1, ROWS, generator=g, dtype=torch.float64)
    uk = torch.randn(2, 1, ROWS, generator=g, dtype=torch.float64)
    cases = [(Affine(gb.add_dim(L, 1), lk), Affine(gb.add_dim(U, 1), uk)),
             (Affine(gb.add_dim(L, 1), 0.0), Affine(gb.add_dim(U, 1), uk))]
    shared = Affine(gb.add_dim(L, 1), lk)
    cases.append((shared, shared))
    for lower, upper in cases:
        got = rt.substitute(c, lower, upper, 2)
        assert isinstance(got.coeff, Segmented)
        dl, du = lower.coeff.to_dense(), upper.coeff.to_dense()
        want_coeff = _split_dense(c.unsqueeze(-1), dl, du, 2)
        kl = lower.const if isinstance(lower.const, torch.Tensor) else torch.full_like(lk, lower.const)
        want_const = _split_dense(c, kl, upper.const, 2)
        close(got.coeff, want_coeff)
        close(got.const, want_const)


@pytest.mark.parametrize("seed", range(6))
def test_scaled_substitution_step_equals_its_definition(seed):
    """``rt.substitute_scaled(c, a, b, L, U)`` equals ``(c+ a) L + (c- b) U`` part by part, scales
    tensors or numbers -- also where ``L`` is ``U`` (one polyhedron: scaled sides still differ, no
    ``c . L`` shortcut)."""
    from cfruntime.flow.values import Affine

    g = torch.Generator().manual_seed(100 + seed)
    kinds = [["dense", "diag", "absent", "bcast"][int(torch.randint(0, 4, (), generator=g))] for _ in SEGMENTS]
    L, U = random_seg(g, kinds=kinds), random_seg(g, kinds=kinds)
    c = torch.randn(2, 3, ROWS, generator=g, dtype=torch.float64)
    a = torch.rand(2, 3, ROWS, generator=g, dtype=torch.float64)
    lk = torch.randn(2, 1, ROWS, generator=g, dtype=torch.float64)
    uk = torch.randn(2, 1, ROWS, generator=g, dtype=torch.float64)
    shared = Affine(gb.add_dim(L, 1), lk)
    cases = [(Affine(gb.add_dim(L, 1), lk), Affine(gb.add_dim(U, 1), uk), a, 1.0),
             (Affine(gb.add_dim(L, 1), 0.0), Affine(gb.add_dim(U, 1), uk), 1.0, a),
             (shared, shared, a, 1.0), (shared, shared, 0.5, a)]
    for lower, upper, sa, sb in cases:
        got = rt.substitute_scaled(c, sa, sb, lower, upper, 2)
        cp, cn = c.clamp(min=0) * sa, c.clamp(max=0) * sb
        dl, du = lower.coeff.to_dense(), upper.coeff.to_dense()
        want_coeff = (cp.unsqueeze(-1) * dl).sum(2) + (cn.unsqueeze(-1) * du).sum(2)
        kl = lower.const if isinstance(lower.const, torch.Tensor) else torch.full_like(lk, lower.const)
        want_const = (cp * kl).sum(2) + (cn * upper.const).sum(2)
        close(got.coeff, want_coeff)
        close(got.const, want_const)


def test_removing_an_added_unit_dimension_gives_the_parts_back_without_operations():
    """``add_dim`` then ``without_unit_dim`` of the same dimension (a traverse reads a stored polyhedron
    laid out with a unit dimension, the substitution removes it): the original parts, no squeeze."""
    x = random_seg(torch.Generator().manual_seed(3), kinds=["dense", "bcast", "diag", "absent"])
    y = x.add_dim(1)
    with OpCounter() as c:
        parts = y.without_unit_dim(1)
    assert c.ops == 0
    assert all(parts[s] is p for s, p in x.parts.items()) and set(parts) == set(x.parts)
    assert torch.equal(gb.to_dense(y), gb.to_dense(x).unsqueeze(1))


def test_weight_views_are_made_once_and_never_kept_for_gradients():
    """A shared weight against a batch (``_dot_last``) makes its transposed view once; a weight that
    requires gradients gets a fresh view every time, so a run under ``no_grad`` cannot leave a view
    without gradients behind."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(1, 100, 120, generator=g, dtype=torch.float64)  # big enough for the matrix product path
    v = torch.randn(3, 1, 120, generator=g, dtype=torch.float64)
    assert so._product_numel(w, v) > so.SMALL_PRODUCT
    ref = (w * v).sum(-1)
    first = so._dot_last(w, v)
    with OpCounter() as c:
        again = so._dot_last(w, v)
    assert torch.allclose(first, ref) and torch.equal(first, again)
    assert c.by_name["t"] == 0 and c.by_name["select"] == 0  # the view was kept
    wg = w.clone().requires_grad_(True)
    with torch.no_grad():
        so._dot_last(wg, v)
    out = so._dot_last(wg, v)
    out.sum().backward()
    assert torch.allclose(wg.grad, v.sum(0, keepdim=True).expand_as(w))


def test_one_vector_against_a_batch_is_one_product_per_call():
    """``sum_k x[b, m, k] v[0, 0, k]`` (a layer's bias constant against a batch's coefficients): the
    vector's batch-wide column is kept, each later call is a ``bmm`` and its squeeze (the stacked-rows
    product took four operations per call); a vector that requires gradients gets them."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 30, 200, generator=g, dtype=torch.float64)
    v = torch.randn(1, 1, 200, generator=g, dtype=torch.float64)
    assert so._product_numel(x, v) > so.SMALL_PRODUCT
    first = so._dot_last(x, v)
    with OpCounter() as c:
        again = so._dot_last(x, v)
    assert torch.allclose(first, (x * v).sum(-1)) and torch.equal(first, again)
    assert c.ops == 2 and c.by_name["bmm"] == 1, c.by_name
    vg = v.clone().requires_grad_(True)
    with torch.no_grad():  # a run without gradients first must not leave a view without them behind
        so._dot_last(x, vg)
    so._dot_last(x, vg).sum().backward()
    assert torch.allclose(vg.grad, x.sum((0, 1)).reshape(1, 1, -1))
    vr = torch.randn(4, 1, 200, generator=g, dtype=torch.float64, requires_grad=True)  # a sample's own vector
    with torch.no_grad():
        so._dot_last(x, vr)
    so._dot_last(x, vr).sum().backward()
    assert torch.allclose(vr.grad, x.sum(1, keepdim=True))


def test_a_mask_given_a_unit_dimension_reaches_a_diagonal_without_a_squeeze():
    """A rule's mask ``m [B, n]`` with an added poly dimension selects between diagonal blocks (a ReLU's
    relaxation): the kernel takes the dimension away again by handing back ``m`` itself, no ``squeeze``
    (:mod:`cfruntime.tensor.unit_views`)."""
    from cfruntime.tensor.unit_views import squeezed, unsqueezed

    g = torch.Generator().manual_seed(2)
    m = torch.rand(3, 5, generator=g) > 0.5
    u = unsqueezed(m, 2)
    assert squeezed(u, 2) is m and squeezed(u, -1) is m
    assert torch.equal(squeezed(torch.zeros(3, 1, 5), 1), torch.zeros(3, 5))
    core_a = torch.randn(3, 5, generator=g, dtype=torch.float64)
    core_b = torch.randn(3, 5, generator=g, dtype=torch.float64)
    a = Segmented((3, 5, 5), 2, {0: DiagonalBlock(core_a, 1)}, torch.float64, "cpu")
    b = Segmented((3, 5, 5), 2, {0: DiagonalBlock(core_b, 1)}, torch.float64, "cpu")
    mask = gb.add_dim(m, 2)
    with OpCounter() as c:
        out = gb.where(mask, a, b)
    assert c.by_name["squeeze"] == 0 and c.ops == 1, c.by_name
    assert torch.equal(gb.to_dense(out), torch.where(mask, gb.to_dense(a), gb.to_dense(b)))
    assert gb.remove_dim(mask, 2) is m


@pytest.mark.parametrize("consts", ["both", "lower zero", "upper zero", "one batch", "other dtype"])
def test_big_step_through_a_diagonal_layer_equals_its_definition(consts):
    """A big ``c`` through a ReLU-like layer (one diagonal part per polyhedron): the constant
    ``sum c+ lk + c- uk`` as matrix-vector products (``c . uk + c+ . (lk - uk)``, a zero constant's
    product left out) and the coefficients ``c+ p + c- n`` in place equal the definition; constants
    that are not column operands of ``c`` (one batch row, another dtype) take the general form."""
    from cfruntime.flow.values import Affine

    g = torch.Generator().manual_seed(3)
    b, m, k = 3, 40, 300  # c has more than SMALL_PRODUCT entries
    assert b * m * k > so.SMALL_PRODUCT
    c = torch.randn(b, m, k, generator=g, dtype=torch.float64)
    p, n = (DiagonalBlock(torch.rand(b, k, generator=g, dtype=torch.float64), 1) for _ in range(2))
    lk = torch.randn(b, 1, k, generator=g, dtype=torch.float64)
    uk = torch.randn(b, 1, k, generator=g, dtype=torch.float64)
    lk, uk = {"both": (lk, uk), "lower zero": (0.0, uk), "upper zero": (lk, 0.0), "one batch": (lk[:1], uk),
              "other dtype": (lk.float(), uk)}[consts]

    def seg(block):  # the layer's polyhedra: one diagonal part, with the traverse's unit dimension
        return gb.add_dim(Segmented((b, k, k), 2, {0: block}, torch.float64, "cpu"), 1)

    lower, upper = Affine(seg(p), lk), Affine(seg(n), uk)
    with OpCounter() as ops:
        got = rt.substitute(c, lower, upper, 2)
    if consts in ("both", "lower zero", "upper zero"):  # no element-wise product of c's size for the constant
        assert ops.by_name["mul"] + ops.by_name["addcmul"] + ops.by_name["sum"] == 0, ops.by_name
    cp, cn = c.clamp(min=0), c.clamp(max=0)
    want_coeff = cp * p.core.unsqueeze(1) + cn * n.core.unsqueeze(1)
    want_const = sum((t * (v.double() if isinstance(v, torch.Tensor) else v)).sum(2) for t, v in ((cp, lk), (cn, uk)))
    torch.testing.assert_close(gb.to_dense(got.coeff), want_coeff, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got.const, want_const, rtol=1e-12, atol=1e-12)
