"""Elementwise binary / unary / where / clamp against dense torch on to_dense()."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cfruntime.tensor as T
from cfruntime.tensor import (ConstantBlock, ConvBlock, DenseBlock, DiagonalBlock, PatchesBlock,
                              RepeatBlock, SparseTensor)
from cfruntime.tensor.ops_table import BINARY, UNARY
from cftest.gbscr_strategies import KINDS, assert_matches, make_tensor, tensor_pair, tensors

FLOAT_OPS = ["add", "sub", "mul", "div", "min", "max", "lt", "le", "gt", "ge", "eq", "ne", "and", "or"]
BOOL_OPS = ["and", "or", "eq", "ne", "xor"]
PAIR_SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
SETTINGS = settings(max_examples=80, deadline=None, derandomize=True)


def dense_binary(a, b, op):
    return BINARY[op](a.to_dense(), b.to_dense())


@pytest.mark.parametrize("kind_b", KINDS)
@pytest.mark.parametrize("kind_a", KINDS)
@PAIR_SETTINGS
@given(data=st.data())
def test_binary_every_kind_pair(kind_a, kind_b, data):
    a, b = data.draw(tensor_pair(kinds_a=[kind_a], kinds_b=[kind_b]))
    op = data.draw(st.sampled_from(FLOAT_OPS))
    assert_matches(T.binary(a, b, op), dense_binary(a, b, op))


@pytest.mark.parametrize("kind_b", KINDS)
@pytest.mark.parametrize("kind_a", KINDS)
@settings(max_examples=8, deadline=None, derandomize=True)
@given(data=st.data())
def test_binary_every_kind_pair_bool(kind_a, kind_b, data):
    a, b = data.draw(tensor_pair(kinds_a=[kind_a], kinds_b=[kind_b], dtype=torch.bool))
    op = data.draw(st.sampled_from(BOOL_OPS))
    assert_matches(T.binary(a, b, op), dense_binary(a, b, op))


@SETTINGS
@given(data=st.data())
def test_binary_mixed_kinds_all_ops(data):
    a, b = data.draw(tensor_pair())
    for op in FLOAT_OPS:
        assert_matches(T.binary(a, b, op), dense_binary(a, b, op))


@SETTINGS
@given(data=st.data())
def test_binary_broadcasting_and_scalars(data):
    a = data.draw(tensors(min_rank=2))
    # b: same rank, random dims collapsed to 1, maybe fewer leading dims
    shape = [1 if data.draw(st.booleans()) else n for n in a.shape]
    shape = shape[data.draw(st.integers(0, len(shape) - 1)):]
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 999)))
    b = make_tensor(g, tuple(shape), torch.float32, data.draw(st.sampled_from([0.0, 1.0, math.inf])),
                    KINDS, 3, data.draw(st.booleans()))
    op = data.draw(st.sampled_from(FLOAT_OPS))
    assert_matches(T.binary(a, b, op), dense_binary(a, b, op))
    assert_matches(T.binary(b, a, op), BINARY[op](b.to_dense(), a.to_dense()))
    s = data.draw(st.sampled_from([0.0, 1.0, -2.5, math.inf, -math.inf]))
    st_ = torch.tensor(s, dtype=torch.float32)
    assert_matches(T.binary(a, s, op), BINARY[op](a.to_dense(), st_))
    assert_matches(T.binary(s, a, op), BINARY[op](st_, a.to_dense()))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_unary_all_ops(dtype, data):
    a = data.draw(tensors(dtype=dtype))
    for op in UNARY:
        if op == "not":
            continue
        r = T.unary(a, op)
        assert r.dtype == UNARY[op](a.to_dense()).dtype
        assert_matches(r, UNARY[op](a.to_dense()))
    assert_matches(T.unary(T.binary(a, 0.0, "gt"), "not"), ~(a.to_dense() > 0))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(data=st.data())
def test_unary_bool(data):
    a = data.draw(tensors(dtype=torch.bool))
    assert_matches(T.unary(a, "not"), ~a.to_dense())


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_where(data):
    a, b = data.draw(tensor_pair())
    c, _ = data.draw(tensor_pair(dtype=torch.bool))
    shape = a.shape
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 999)))
    c = make_tensor(g, shape, torch.bool, data.draw(st.booleans()), KINDS, 3, False)
    assert_matches(T.where(c, a, b), torch.where(c.to_dense(), a.to_dense(), b.to_dense()))
    assert_matches(T.where(c, a, 0.0), torch.where(c.to_dense(), a.to_dense(), torch.tensor(0.0)))
    # condition computed from a comparison (boolean blocks from float blocks)
    cmp = T.binary(a, b, "ge")
    assert_matches(T.where(cmp, a, b), torch.where(a.to_dense() >= b.to_dense(), a.to_dense(), b.to_dense()))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_clamp(data):
    a, lo = data.draw(tensor_pair())
    d = a.to_dense()
    assert_matches(T.clamp(a, min=0.0), torch.clamp(d, min=0.0))
    assert_matches(T.clamp(a, max=1.0), torch.clamp(d, max=1.0))
    assert_matches(T.clamp(a, min=-1.0, max=1.0), torch.clamp(d, min=-1.0, max=1.0))
    assert_matches(T.clamp(a, min=lo), torch.maximum(d, lo.to_dense()))


# ----------------------------------------------------------- overlap patterns
def _dense(shape, val):
    return DenseBlock(torch.full(shape, val))


PATTERNS = {
    # name: (blocks of a, blocks of b) as (start, shape)
    "disjoint": ([((0, 0), (2, 3))], [((3, 4), (2, 2))]),
    "identical": ([((1, 1), (3, 3))], [((1, 1), (3, 3))]),
    "nested": ([((0, 0), (6, 6))], [((2, 1), (2, 3))]),
    "partial": ([((0, 0), (4, 4))], [((2, 2), (4, 4))]),
    "chained": ([((0, 0), (2, 3)), ((3, 2), (2, 4))], [((1, 2), (3, 2)), ((4, 5), (2, 1))]),
    "split_one_dim": ([((0, 0), (6, 2)), ((0, 4), (6, 2))], [((0, 1), (6, 4))]),
    "whole": ([((0, 0), (6, 7))], [((0, 0), (6, 7))]),
    "bbox_conflict": ([((0, 0), (2, 2)), ((3, 3), (2, 2))], [((1, 1), (3, 3)), ((0, 5), (1, 1))]),
    "empty": ([], []),
}


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
@pytest.mark.parametrize("bgs", [(0.0, 0.0), (0.0, 1.0), (math.inf, 0.0), (-math.inf, math.inf), (1.0, 2.0)])
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_overlap_patterns(pattern, bgs, op):
    pa, pb = PATTERNS[pattern]
    g = torch.Generator().manual_seed(len(pattern))
    a = SparseTensor((6, 7), bgs[0], [(s, DenseBlock(torch.randn(sh, generator=g).round())) for s, sh in pa])
    b = SparseTensor((6, 7), bgs[1], [(s, DenseBlock(torch.randn(sh, generator=g).round())) for s, sh in pb])
    assert_matches(T.binary(a, b, op), dense_binary(a, b, op))


def test_split_keeps_pieces_and_skips_annihilated():
    a = SparseTensor((4, 10), 0.0, [((0, 3), DenseBlock(torch.ones(4, 3)))])
    b = SparseTensor((4, 10), 0.0, [((0, 0), DenseBlock(torch.full((4, 10), 2.0)))])
    r = T.binary(a, b, "mul")
    assert [(s, blk.shape) for s, blk in r.blocks] == [((0, 3), (4, 3))]
    assert_matches(r, a.to_dense() * b.to_dense())
    r = T.binary(a, b, "add")
    assert sorted(s for s, _ in r.blocks) == [(0, 0), (0, 3), (0, 6)]
    assert_matches(r, a.to_dense() + b.to_dense())


def test_identity_reuses_block_and_annihilator_skips():
    core = torch.randn(3, 3)
    a = SparseTensor((5, 5), 0.0, [((1, 1), DenseBlock(core))])
    ones = SparseTensor((5, 5), 1.0, [])
    r = T.binary(a, ones, "mul")  # background 0 * 1: block kept as is
    assert r.blocks[0][1].core is core
    zeros = SparseTensor((5, 5), 0.0, [])
    assert T.binary(a, zeros, "mul").blocks == []
    assert T.binary(a, zeros, "add").blocks[0][1].core is core


def test_zero_times_inf_keeps_nan_like_dense():
    a = SparseTensor((3, 3), 0.0, [((0, 0), DenseBlock(torch.tensor([[math.inf, 1.0], [2.0, -math.inf]])))])
    z = SparseTensor((3, 3), 0.0, [])
    assert_matches(T.binary(a, z, "mul"), a.to_dense() * 0.0)  # NaN where inf
    inf_bg = SparseTensor((3, 3), math.inf, [((1, 1), DenseBlock(torch.tensor([[0.0, 1.0], [2.0, 3.0]])))])
    for op in ["mul", "sub", "add", "div"]:
        assert_matches(T.binary(inf_bg, a, op), dense_binary(inf_bg, a, op))
        assert_matches(T.binary(a, inf_bg, op), dense_binary(a, inf_bg, op))
    # no NaN invented: inf background times a finite block
    r = T.binary(inf_bg, SparseTensor((3, 3), 2.0, []), "mul")
    assert not torch.isnan(r.to_dense()).any()


def test_diag_times_dense_stays_diagonal():
    d = DiagonalBlock(torch.randn(2, 5), 1)
    x = DenseBlock(torch.randn(2, 5, 5))
    a = SparseTensor((2, 5, 5), 0.0, [((0, 0, 0), d)])
    b = SparseTensor((2, 5, 5), 0.0, [((0, 0, 0), x)])
    r = T.binary(a, b, "mul")
    assert r.blocks[0][1].kind == "diagonal"
    assert_matches(r, a.to_dense() * b.to_dense())
    r = T.binary(a, a, "add")
    assert r.blocks[0][1].kind == "diagonal"
    assert_matches(r, a.to_dense() * 2)


def test_const_times_dense_and_repeat_kinds():
    c = SparseTensor((4, 4), 0.0, [((0, 0), ConstantBlock.of(3.0, (4, 4)))])
    r = SparseTensor((4, 4), 0.0, [((0, 0), RepeatBlock(torch.randn(1, 4), (4, 4)))])
    out = T.binary(c, r, "mul")
    assert out.blocks[0][1].kind == "repeat"
    assert_matches(out, c.to_dense() * r.to_dense())


def test_same_geometry_conv_and_patches_stay_structured():
    w1, w2 = torch.randn(2, 1, 2, 2), torch.randn(2, 1, 2, 2)
    a = SparseTensor((8, 9), 0.0, [((0, 0), ConvBlock(w1, (3, 3)))])
    b = SparseTensor((8, 9), 0.0, [((0, 0), ConvBlock(w2, (3, 3)))])
    r = T.binary(a, b, "add")
    assert r.blocks[0][1].kind == "conv"
    assert_matches(r, a.to_dense() + b.to_dense())
    p = PatchesBlock(torch.randn(2, 2, 2, 1, 2, 2), (3, 3))
    pa = SparseTensor((8, 9), 0.0, [((0, 0), p)])
    r = T.binary(pa, pa, "mul")
    assert r.blocks[0][1].kind == "patches"
    assert_matches(r, pa.to_dense() * pa.to_dense())


def test_any_all():
    t = SparseTensor((3, 3), False, [((0, 0), DenseBlock(torch.tensor([[False, True]])))])
    assert T.any(t) and not T.all(t)
    t = SparseTensor((3, 3), True, [((0, 0), DenseBlock(torch.tensor([[True, True]])))])
    assert T.all(t) and T.any(t)
    t = SparseTensor((2, 2), True, [((0, 0), DiagonalBlock(torch.tensor([True, True]), 0))])
    assert T.all(t)
    t = SparseTensor((2, 2), False, [((0, 0), DiagonalBlock(torch.tensor([True, True]), 0))])
    assert T.any(t) and not T.all(t)
    assert not T.any(SparseTensor((2, 2), False, []))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(tensors(dtype=torch.bool))
def test_any_all_random(t):
    d = t.to_dense()
    assert T.any(t) == bool(d.any())
    assert T.all(t) == bool(d.all())
