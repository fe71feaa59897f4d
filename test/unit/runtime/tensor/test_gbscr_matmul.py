"""inner / matmul on every pair of block kinds against torch.matmul on to_dense()."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cfruntime.tensor as T
from cftest.gbscr_strategies import KINDS, assert_matches, make_tensor


@st.composite
def matmul_pair(draw, kind_a, kind_b, zero_bg=True):
    lead = draw(st.sampled_from([(), (1,), (2,), (3,)]))
    lead_b = draw(st.sampled_from([lead, (1,) * len(lead), ()]))
    m, k, n = (draw(st.integers(1, 10)) for _ in range(3))
    seed = draw(st.integers(0, 2**31 - 1))
    special = draw(st.booleans()) and draw(st.booleans())
    g = torch.Generator().manual_seed(seed)
    bga = 0.0 if zero_bg else draw(st.sampled_from([0.0, 1.0, -0.5]))
    bgb = 0.0 if zero_bg else draw(st.sampled_from([0.0, 2.0]))
    a = make_tensor(g, lead + (m, k), torch.float32, bga, [kind_a], draw(st.integers(0, 3)), special)
    b = make_tensor(g, lead_b + (k, n), torch.float32, bgb, [kind_b], draw(st.integers(0, 3)), special)
    return a, b


@pytest.mark.parametrize("kind_b", KINDS)
@pytest.mark.parametrize("kind_a", KINDS)
@settings(max_examples=20, deadline=None, derandomize=True)
@given(data=st.data())
def test_inner_every_kind_pair(kind_a, kind_b, data):
    a, b = data.draw(matmul_pair(kind_a, kind_b))
    assert_matches(T.inner(a, b), torch.matmul(a.to_dense(), b.to_dense()))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_inner_nonzero_backgrounds(data):
    ka, kb = data.draw(st.sampled_from(KINDS)), data.draw(st.sampled_from(KINDS))
    a, b = data.draw(matmul_pair(ka, kb, zero_bg=False))
    assert_matches(T.inner(a, b), torch.matmul(a.to_dense(), b.to_dense()))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_inner_dim_b_and_vectors(data):
    ka, kb = data.draw(st.sampled_from(KINDS)), data.draw(st.sampled_from(KINDS))
    a, b = data.draw(matmul_pair(ka, kb))
    bt = T.transpose(b, -1, -2)
    assert_matches(T.inner(a, bt, dim_b=-1), torch.matmul(a.to_dense(), b.to_dense()))
    v = T.slice_range(b, -1, 0, 1)
    v = T.remove_dim(v, -1)
    if v.ndim == 1:
        assert_matches(T.inner(a, v), torch.matmul(a.to_dense(), v.to_dense()))


def test_deeppoly_pattern_touches_only_overlap():
    batch, curr, prev, N = 4, 5, 6, 20
    coef = T.embed_range(T.from_dense(torch.randn(batch, curr, prev)), 2, 8, N)
    w = torch.randn(prev, 3)
    bound = T.SparseTensor((N, N), 0.0, [((8, 2), T.DenseBlock(w)),
                                          ((2, 2), T.DiagonalBlock(torch.randn(6), 0))])
    r = T.inner(coef, bound)
    assert [(s, b.shape, b.kind) for s, b in r.blocks] == [((0, 0, 2), (batch, curr, 3), "dense")]
    assert_matches(r, coef.to_dense() @ bound.to_dense())
    # diag bound: row scaling, result keeps the dense block
    lam = torch.rand(batch, prev)
    relu = T.SparseTensor((batch, N, N), 0.0, [((0, 8, 8), T.DiagonalBlock(lam, 1))])
    r = T.inner(coef, relu)
    assert [(s, b.kind) for s, b in r.blocks] == [((0, 0, 8), "dense")]
    assert_matches(r, coef.to_dense() @ relu.to_dense())


def test_products_summed_in_groups():
    a = T.SparseTensor((4, 6), 0.0, [((0, 0), T.DenseBlock(torch.ones(4, 3))),
                                     ((0, 3), T.DenseBlock(torch.full((4, 3), 2.0)))])
    b = T.SparseTensor((6, 5), 0.0, [((0, 0), T.DenseBlock(torch.ones(3, 5))),
                                     ((3, 1), T.DenseBlock(torch.ones(3, 3)))])
    r = T.inner(a, b)
    # the two products differ only along the columns: split into 3 pieces
    assert sorted(s for s, _ in r.blocks) == [(0, 0), (0, 1), (0, 4)]
    assert_matches(r, a.to_dense() @ b.to_dense())
