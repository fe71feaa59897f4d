"""Block kinds: dense forms against independent oracles; container invariants."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cfruntime.tensor import (ConstantBlock, ConvBlock, DenseBlock, DiagonalBlock, PatchesBlock,
                              RepeatBlock, SparseTensor, from_dense, to_dense)
from cftest.gbscr_strategies import KINDS, assert_matches, naive_patches, tensors, unrolled_conv

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


def test_dense_block_docstring_example():
    t = SparseTensor((3, 3), 0.0, [((1, 0), DenseBlock(torch.tensor([[1.0, 2], [3, 4]])))])
    assert torch.equal(t.to_dense(), torch.tensor([[0.0, 0, 0], [1, 2, 0], [3, 4, 0]]))


def test_diagonal_block_docstring_example():
    b = DiagonalBlock(torch.tensor([[1.0, 2, 3]]), 1)
    assert b.shape == (1, 3, 3)
    assert torch.equal(b.to_dense(0.0), torch.diag(torch.tensor([1.0, 2, 3]))[None])
    # holes follow the background
    d = b.to_dense(math.inf)
    assert d[0, 0, 1] == math.inf and d[0, 1, 1] == 2


def test_repeat_and_constant_examples():
    r = RepeatBlock(torch.tensor([[1.0], [2.0]]), (2, 3))
    assert torch.equal(r.to_dense(0), torch.tensor([[1.0, 1, 1], [2, 2, 2]]))
    c = ConstantBlock.of(7.0, (2, 3))
    assert torch.equal(c.to_dense(0), torch.full((2, 3), 7.0))


def test_conv_block_docstring_example():
    a, b = 2.0, 5.0
    blk = ConvBlock(torch.tensor([[[[a, b]]]]), (1, 3), 1, 0)
    assert torch.equal(blk.to_dense(0.0), torch.tensor([[a, b, 0], [0, a, b]]))


def test_patches_block_docstring_example():
    core = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).reshape(1, 1, 2, 1, 1, 2)
    blk = PatchesBlock(core, (1, 3), 1, 0)
    assert torch.equal(blk.to_dense(0.0), torch.tensor([[1.0, 2, 0], [0, 3, 4]]))


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("padding", [0, 1])
@pytest.mark.parametrize("ci,co", [(1, 1), (2, 3), (3, 2)])
def test_conv_to_dense_matches_unrolled_conv2d(stride, padding, ci, co):
    g = torch.Generator().manual_seed(stride * 10 + padding * 3 + ci)
    w = torch.randn(co, ci, 3, 3, generator=g, dtype=torch.float64)
    blk = ConvBlock(w, (5, 4), stride, padding)
    m = unrolled_conv(w, (5, 4), stride, padding)
    assert blk.shape == tuple(m.shape)
    assert torch.equal(blk.to_dense(0.0), m)
    x = torch.randn(ci, 5, 4, generator=g, dtype=torch.float64)
    ref = torch.nn.functional.conv2d(x[None], w, stride=stride, padding=padding).flatten()
    torch.testing.assert_close(blk.to_dense(0.0) @ x.flatten(), ref)


@pytest.mark.parametrize("stride,padding", [(1, 0), (1, 1), (2, 0), (2, 1)])
def test_patches_to_dense_matches_loops(stride, padding):
    g = torch.Generator().manual_seed(stride + 7 * padding)
    ho = (4 + 2 * padding - 2) // stride + 1
    wo = (3 + 2 * padding - 2) // stride + 1
    core = torch.randn(2, ho, wo, 2, 2, 2, generator=g, dtype=torch.float64)
    blk = PatchesBlock(core, (4, 3), stride, padding)
    assert torch.equal(blk.to_dense(0.0), naive_patches(core, (4, 3), stride, padding))
    # leading dims are independent matrices
    core2 = torch.randn(3, 2, ho, wo, 2, 2, 2, generator=g, dtype=torch.float64)
    lead = PatchesBlock(core2, (4, 3), stride, padding).to_dense(0.0)
    for i in range(3):
        assert torch.equal(lead[i], naive_patches(core2[i], (4, 3), stride, padding))


def test_conv_lead_dims_repeat():
    w = torch.randn(2, 1, 2, 2)
    blk = ConvBlock(w, (3, 3), 1, 0, lead=(4,))
    d = blk.to_dense(0.0)
    assert d.shape == (4, 8, 9)
    for i in range(4):
        assert torch.equal(d[i], unrolled_conv(w, (3, 3), 1, 0))


@SETTINGS
@given(tensors(dtype=torch.float32))
def test_generated_tensors_are_valid_and_roundtrip(t):
    t.validate()
    d = t.to_dense()
    assert d.shape == t.shape and d.dtype == t.dtype
    back = from_dense(d, t.background)
    back.validate()
    assert_matches(back, d)
    assert_matches(to_dense(back), d)


@SETTINGS
@given(tensors(dtype=torch.bool))
def test_bool_tensors_roundtrip(t):
    t.validate()
    d = t.to_dense()
    assert d.dtype == torch.bool
    assert_matches(from_dense(d, t.background), d)


def test_overlapping_blocks_rejected_by_validate():
    t = SparseTensor((4, 4), 0.0, [((0, 0), DenseBlock(torch.ones(2, 2))), ((1, 1), DenseBlock(torch.ones(2, 2)))])
    with pytest.raises(AssertionError):
        t.validate()


@pytest.mark.parametrize("kind", KINDS)
def test_nbytes_counts_cores_only(kind):
    if kind == "conv":
        blk = ConvBlock(torch.randn(4, 3, 3, 3), (8, 8), 1, 1)
        assert blk.nbytes() == 4 * 3 * 9 * 4
    elif kind == "diagonal":
        blk = DiagonalBlock(torch.randn(5, 100), 1)
        assert blk.nbytes() == 500 * 4
    elif kind == "constant":
        assert ConstantBlock.of(1.0, (100, 100)).nbytes() == 4
    elif kind == "repeat":
        assert RepeatBlock(torch.randn(1, 100), (50, 100)).nbytes() == 400
    elif kind == "dense":
        assert DenseBlock(torch.randn(3, 4)).nbytes() == 48
    else:
        blk = PatchesBlock(torch.randn(2, 3, 3, 1, 2, 2), (4, 4), 1, 0)
        assert blk.nbytes() == 2 * 9 * 4 * 4


@given(st.sampled_from([torch.float32, torch.float64]))
@settings(max_examples=4, deadline=None, derandomize=True)
def test_dtype_is_preserved(dtype):
    t = SparseTensor((3, 3), 0.0, [((0, 0), DiagonalBlock(torch.ones(3, dtype=dtype), 0))])
    assert t.dtype == dtype and t.to_dense().dtype == dtype
