"""Shape operations against torch on to_dense()."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cfruntime.tensor as T
from cfruntime.tensor import DenseBlock, SparseTensor
from cftest.gbscr_strategies import assert_matches, tensors

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


@SETTINGS
@given(data=st.data())
def test_add_remove_dim(data):
    a = data.draw(tensors())
    d = a.to_dense()
    dim = data.draw(st.integers(0, a.ndim))
    r = T.add_dim(a, dim)
    assert_matches(r, d.unsqueeze(dim))
    assert_matches(T.remove_dim(r, dim), d)
    assert_matches(T.add_dim(a, -1), d.unsqueeze(-1))


@SETTINGS
@given(data=st.data())
def test_expand_and_repeat(data):
    a = data.draw(tensors(max_rank=2))
    d = a.to_dense()
    dim = data.draw(st.integers(0, a.ndim))
    times = data.draw(st.integers(1, 3))
    u = T.add_dim(a, dim)
    assert_matches(T.expand_dim(u, dim, times), d.unsqueeze(dim).expand(*[times if i == dim else -1 for i in range(a.ndim + 1)]))
    target = [3] + list(d.shape)
    assert_matches(T.expand(a, target), d.expand(*target))
    rd = data.draw(st.integers(0, a.ndim - 1))
    assert_matches(T.repeat(a, rd, times), torch.cat([d] * times, dim=rd))


@SETTINGS
@given(data=st.data())
def test_reduce_sum(data):
    a = data.draw(tensors())
    d = a.to_dense()
    dim = data.draw(st.integers(0, a.ndim - 1))
    keep = data.draw(st.booleans())
    assert_matches(T.reduce_sum(a, dim, keep), d.sum(dim, keepdim=keep))


@SETTINGS
@given(data=st.data())
def test_reduce_sum_bool(data):
    a = data.draw(tensors(dtype=torch.bool))
    dim = data.draw(st.integers(0, a.ndim - 1))
    assert_matches(T.reduce_sum(a, dim), a.to_dense().sum(dim))


@SETTINGS
@given(data=st.data())
def test_slice_and_embed(data):
    a = data.draw(tensors())
    d = a.to_dense()
    dim = data.draw(st.integers(0, a.ndim - 1))
    n = a.shape[dim]
    lo = data.draw(st.integers(0, n))
    hi = data.draw(st.integers(lo, n))
    assert_matches(T.slice_range(a, dim, lo, hi), d.narrow(dim, lo, hi - lo))
    off = data.draw(st.integers(0, 4))
    total = n + off + data.draw(st.integers(0, 3))
    fill = data.draw(st.sampled_from([None, 0.0, 1.0]))
    shape = list(d.shape)
    shape[dim] = total
    exp = torch.full(shape, a.background if fill is None else fill)
    exp.narrow(dim, off, n).copy_(d)
    assert_matches(T.embed_range(a, dim, off, total, fill), exp)


@SETTINGS
@given(data=st.data())
def test_permute_transpose_cat(data):
    a = data.draw(tensors(min_rank=2))
    d = a.to_dense()
    perm = data.draw(st.permutations(list(range(a.ndim))))
    assert_matches(T.permute(a, perm), d.permute(*perm))
    assert_matches(T.transpose(a, -1, -2), d.transpose(-1, -2))
    b = data.draw(tensors(min_rank=a.ndim, max_rank=a.ndim))
    dim = data.draw(st.integers(0, a.ndim - 1))
    bshape = list(a.shape)
    bshape[dim] = b.shape[dim]
    b = T.slice_range(b, 0, 0, b.shape[0]) if list(b.shape) == bshape else SparseTensor(bshape, b.background, [])
    assert_matches(T.cat([a, b], dim), torch.cat([d, b.to_dense()], dim))


def test_layer_ranges_of_global_index():
    """Per-layer coefficients live inside [batch, curr, N_total]."""
    layer = torch.randn(2, 3, 4)
    g = T.embed_range(T.from_dense(layer), 2, 5, 12)
    assert g.shape == (2, 3, 12) and len(g.blocks) == 1 and g.blocks[0][0] == (0, 0, 5)
    assert torch.equal(T.to_dense(T.slice_range(g, 2, 5, 9)), layer)
    assert T.slice_range(g, 2, 0, 5).blocks == []
    assert g.nbytes() == layer.numel() * 4


def test_dense_block_shapes_preserved_by_expand():
    a = SparseTensor((1, 4), 0.0, [((0, 1), DenseBlock(torch.ones(1, 2)))])
    e = T.expand(a, (100, 4))
    assert e.blocks[0][1].kind == "repeat" and e.nbytes() == 8
