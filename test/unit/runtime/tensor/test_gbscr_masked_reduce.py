"""``masked_extremum(c, p, dim, kind)`` equals ``where(c != 0, p, +-inf).amin/amax(dim)`` on the dense
tensors, for every block kind of ``c`` and ``p``, backgrounds, overlaps and the traverse's shape
(per-layer constant priorities tiling the neuron dimension)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cfruntime.tensor as T
from cfruntime.flow import ops as rt
from cfruntime.tensor import ConstantBlock, DenseBlock, SparseTensor

from cftest.gbscr_strategies import KINDS, assert_matches, conv_and_patches, make_tensor

IDENTITY = {"min": math.inf, "max": -math.inf}


def oracle(c, p, dim, kind):
    dense_c = c.to_dense() if isinstance(c, SparseTensor) else c
    dense_p = p.to_dense() if isinstance(p, SparseTensor) else p
    masked = torch.where(dense_c != 0, dense_p, IDENTITY[kind])
    return masked.amin(dim) if kind == "min" else masked.amax(dim)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 7), min_size=1, max_size=3).map(tuple), seed=st.integers(0, 2**31 - 1),
       c_bg=st.sampled_from([0.0, 0.0, 1.0]), p_bg=st.sampled_from([0.0, 2.0, math.inf, -1.0]),
       n_c=st.integers(0, 4), n_p=st.integers(0, 4), special=st.booleans(),
       kind=st.sampled_from(["min", "max"]), dim_pick=st.integers(0, 2), p_dense=st.booleans())
def test_masked_extremum_matches_dense(shape, seed, c_bg, p_bg, n_c, n_p, special, kind, dim_pick, p_dense):
    gen = torch.Generator().manual_seed(seed)
    c = make_tensor(gen, shape, torch.float32, c_bg, KINDS, n_c, special)
    p = make_tensor(gen, shape, torch.float32, p_bg, KINDS, n_p, special)
    p = p.to_dense() if p_dense else p
    dim = dim_pick % len(shape)
    assert_matches(T.masked_extremum(c, p, dim, kind), oracle(c, p, dim, kind))


def layer_priorities(batch, rows, widths, dtype=torch.float64) -> SparseTensor:
    """The traverse's priorities: ``-layer`` as one constant block per layer along the last dim."""
    blocks, col = [], 0
    for layer, w in enumerate(widths):
        blocks.append(((0, 0, col), ConstantBlock(torch.full((1, 1, 1), -float(layer), dtype=dtype), (batch, rows, w))))
        col += w
    return SparseTensor((batch, rows, col), 0.0, blocks, dtype=dtype)


@pytest.mark.parametrize("kind", ["min", "max"])
def test_per_layer_priorities_take_the_fast_path(kind, monkeypatch):
    g = torch.Generator().manual_seed(0)
    widths = [6, 4, 4, 3]
    p = layer_priorities(3, 5, widths)
    # coefficients over layers 0 and 2, with some rows all zero in each
    c0 = torch.randn(3, 5, 6, generator=g, dtype=torch.float64)
    c0[:, 1] = 0.0
    c2 = torch.randn(3, 5, 4, generator=g, dtype=torch.float64)
    c2[0, 3] = 0.0
    c2[2, 1, 2] = float("nan")  # NaN counts as non-zero, as in ne(c, 0)
    c = SparseTensor((3, 5, 17), 0.0, [((0, 0, 0), DenseBlock(c0)), ((0, 0, 10), DenseBlock(c2))], dtype=torch.float64)
    # the fast path never combines c's values with p entry by entry
    real_where = torch.where
    monkeypatch.setattr(torch, "where", lambda cond, *a: (_ for _ in ()).throw(AssertionError("entry-wise where"))
                        if cond.dim() == 3 else real_where(cond, *a))
    got = T.masked_extremum(c, p, 2, kind)
    monkeypatch.undo()
    assert torch.equal(got, oracle(c, p, 2, kind))


def test_conv_and_patches_blocks_read_mapped_entries_only():
    for block in conv_and_patches(2, 3, 5, 3, 1, 1, seed=4, lead=(2,)):
        rows, cols = block.shape[-2:]
        c = SparseTensor((2, rows, cols + 3), 0.0, [((0, 0, 0), block)], dtype=torch.float64)
        p = layer_priorities(2, rows, [cols, 3])
        for kind in ("min", "max"):
            assert torch.equal(T.masked_extremum(c, p, 2, kind), oracle(c, p, 2, kind))


def test_bool_mask_and_dense_operands():
    g = torch.Generator().manual_seed(1)
    c = torch.rand(4, 6, generator=g) > 0.6
    p = torch.randn(4, 6, generator=g)
    assert torch.equal(T.masked_extremum(c, p, 1, "min"), oracle(c, p, 1, "min"))
    sparse_c = SparseTensor((4, 6), False, [((1, 2), DenseBlock(c[1:3, 2:5]))])
    assert torch.equal(T.masked_extremum(sparse_c, p, 0, "max"), oracle(sparse_c, p, 0, "max"))


def test_rt_masked_reduce_broadcasts_and_matches_the_composition():
    g = torch.Generator().manual_seed(2)
    c = SparseTensor((2, 3, 8), 0.0, [((0, 0, 2), DenseBlock(torch.randn(2, 3, 4, generator=g)))])
    p = torch.randn(1, 1, 8, generator=g)  # a broadcast dimension realised with size 1
    composed = rt.reduce(rt.where(rt.binary("ne", c, 0.0), p, math.inf), 2, "min")
    assert torch.equal(rt.masked_reduce(c, p, 2, "min"), T.to_dense(composed) if T.is_sparse(composed) else composed)


def test_long_rows_probed_on_their_leading_entries_still_read_in_full():
    """Rows longer than the probe: non-zero only past the probe, all zero, NaN past the probe."""
    g = torch.Generator().manual_seed(3)
    core = torch.randn(3, 4, 200, generator=g, dtype=torch.float64)
    core[0, 1, :150] = 0.0
    core[1, 2] = 0.0
    core[2, 0, :] = 0.0
    core[2, 0, 190] = float("nan")
    c = SparseTensor((3, 4, 230), 0.0, [((0, 0, 30), DenseBlock(core))], dtype=torch.float64)
    p = layer_priorities(3, 4, [30, 200])
    for kind in ("min", "max"):
        got = T.masked_extremum(c, p, 2, kind)
        assert torch.equal(got, oracle(c, p, 2, kind))
        assert got[1, 2] == IDENTITY[kind] and got[0, 1] == got[2, 0] == -1.0
