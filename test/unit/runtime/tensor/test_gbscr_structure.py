"""Block-structure guarantees the compiled certifiers' speed depends on (values are checked against
dense torch too): broadcast views are not copied, ``where`` keeps diagonals and skips regions its
condition cannot change, and masks multiply without densifying."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cfruntime.tensor as T
from cfruntime.flow import ops as rt
from cfruntime.tensor import DiagonalBlock, RepeatBlock, SparseTensor

from cftest.gbscr_strategies import conv_and_patches


def diag_tensor(core: torch.Tensor, col: int, width: int, bg: float = 0.0) -> SparseTensor:
    """``[B, n, width]`` with ``core [B, n]`` on the diagonal of columns ``col..col+n``."""
    b, n = core.shape
    return SparseTensor((b, n, width), bg, [((0, 0, col), DiagonalBlock(core, 1))], dtype=core.dtype)


def test_broadcast_view_becomes_a_repeat_block():
    base = torch.arange(6.0).reshape(2, 3, 1)
    view = base.expand(2, 3, 50)
    wrapped = T.binary(view, T.from_dense(torch.zeros(2, 3, 50)), "add")
    assert torch.equal(wrapped.to_dense(), view)
    plus = T.binary(view, SparseTensor((2, 3, 50), 0.0, [], dtype=torch.float32), "add")
    assert all(isinstance(b, RepeatBlock) and b.core.numel() == 6 for _, b in plus.blocks)
    assert torch.equal(plus.to_dense(), view)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), both=st.booleans(), bg=st.sampled_from([0.0, 1.0, float("inf")]))
def test_where_with_a_broadcast_condition_keeps_diagonals(seed, both, bg):
    g = torch.Generator().manual_seed(seed)
    cond = (torch.rand(3, 4, 1, generator=g) > 0.5).expand(3, 4, 20)
    a = diag_tensor(torch.randn(3, 4, generator=g), 5, 20, bg)
    b = diag_tensor(torch.randn(3, 4, generator=g), 5, 20, bg) if both else bg
    out = T.where(cond, a, b)
    dense_b = b.to_dense() if both else torch.full((3, 4, 20), bg)
    assert torch.equal(out.to_dense(), torch.where(cond, a.to_dense(), dense_b))
    assert len(out.blocks) == 1 and isinstance(out.blocks[0][1], DiagonalBlock)


def test_where_with_a_uniform_condition_block_takes_one_branch():
    a = diag_tensor(torch.randn(2, 3), 0, 6, bg=5.0)
    ones = torch.ones(2, 3, 6, dtype=torch.bool)
    for cond, bg_c in ((ones, False), (~ones, True)):
        c = SparseTensor((2, 3, 6), bg_c, [((0, 0, 0), T.DenseBlock(cond))], dtype=torch.bool)
        out = T.where(c, a, -1.0)
        assert torch.equal(out.to_dense(), torch.where(cond, a.to_dense(), torch.tensor(-1.0)))


def test_mask_times_values_is_a_where_and_empty_results_are_pruned():
    x = T.from_dense(torch.tensor([[[0.0, 2.0, float("inf")]]]))
    mask = T.from_dense(torch.tensor([[[True, True, False]]]))
    assert torch.equal(rt.mult(mask, x).to_dense(), torch.tensor([[[0.0, 2.0, 0.0]]]))  # no 0 * inf = NaN
    none = T.from_dense(torch.zeros(1, 1, 3, dtype=torch.bool))
    assert rt.mult(none, x).blocks == []


# ---------------------------------------------------------------- convolution and patches blocks
CONV_GEOMETRIES = [  # (Ci, Co, H, k, stride, padding): padding 1 leaves unmapped core positions
    (1, 2, 5, 3, 1, 0), (2, 3, 5, 3, 1, 1), (2, 2, 6, 2, 2, 0), (1, 2, 7, 3, 2, 1),
]


@settings(max_examples=24, deadline=None, derandomize=True)
@given(geom=st.sampled_from(CONV_GEOMETRIES), seed=st.integers(0, 1000), fill=st.sampled_from([0.0, 1.0, float("inf")]))
def test_conv_and_patches_reductions_read_mapped_entries_only(geom, seed, fill):
    for block in conv_and_patches(*geom, seed):
        dense = block.to_dense(fill)
        for kind, ident in (("min", float("inf")), ("max", float("-inf"))):
            want = block.to_dense(ident).amin(-1) if kind == "min" else block.to_dense(ident).amax(-1)
            assert torch.equal(block.row_extremum(kind), want)
        mask = block.map_values(lambda c: c > 0.5)
        for bool_fill in (False, True):
            dense_mask = mask.to_dense(bool_fill)
            assert mask.any_value(bool_fill) == bool(dense_mask.any())
            assert mask.all_value(bool_fill) == bool(dense_mask.all())
        assert block.any_value(fill) == bool(dense.any())


@settings(max_examples=12, deadline=None, derandomize=True)
@given(geom=st.sampled_from(CONV_GEOMETRIES), seed=st.integers(0, 1000))
def test_a_trailing_unit_dim_keeps_conv_and_patches_blocks(geom, seed):
    from cfruntime.tensor.block_unit_dims import UnitDimBlock

    for block in conv_and_patches(*geom, seed):
        t = SparseTensor((2,) + block.shape[1:], 0.0, [((0, 0, 0), block)], dtype=torch.float64)
        up = T.add_dim(t, 3)
        assert isinstance(up.blocks[0][1], UnitDimBlock)
        assert torch.equal(up.to_dense(), t.to_dense().unsqueeze(3))
        down = T.remove_dim(up, 3)
        assert down.blocks[0][1] is block  # the same block object: nothing was unrolled


@pytest.mark.parametrize("representation", ["gbscr", "planned"])
def test_deeppoly_keeps_conv_coefficients_as_conv_or_patches_blocks(representation):
    """The traverse's masks, clamps and products on a conv net never unroll a convolution: the
    coefficients of a conv layer's neurons over the input stay conv, patches (or unit-dim view)
    blocks, in general and in planned g-BSCR.  (Rows of the fully-connected layer after the flatten
    are dense by nature.)"""
    from cftest.nets import boxes, small_conv

    from cfmlir.certifiers import certifier_source
    from cfmlir.compiler import compile_certifier, pipeline_for
    from cfruntime.flow import engine

    net = small_conv(seed=4)
    lb, ub = boxes(net.layers[0].size, batch=2, seed=5, radius=0.1)
    cert = compile_certifier(*certifier_source("deeppoly"), pipeline_for(True))
    conv_rows = {layer.size for layer in net.layers if layer.linear_kind == "conv"}
    seen = []
    original = rt.substitute

    def spy(c, lower, upper, dim):  # each traverse step substitutes one layer's coefficients
        if c.shape[1] in conv_rows:
            if T.is_sparse(c):
                seen.extend(blk.kind for _, blk in c.blocks)
            elif T.is_segmented(c):
                seen.extend(getattr(p, "kind", "dense") for p in c.parts.values())
            else:
                seen.append("dense")
        return original(c, lower, upper, dim)

    rt.substitute = spy
    try:
        sparse = engine.run_certifier(cert, net, lb, ub, representation=representation)
    finally:
        rt.substitute = original
    dense = engine.run_certifier(cert, net, lb, ub, sparse=False)
    torch.testing.assert_close(sparse.lower, dense.lower, rtol=1e-9, atol=1e-9)
    assert seen and set(seen) <= {"conv", "patches", "unit_dims"}, seen
