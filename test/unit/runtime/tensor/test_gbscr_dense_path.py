"""No-sparsity ablation: one program of API calls, run on g-BSCR and on torch tensors."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cfruntime.tensor as T
from cfruntime.tensor import ConvBlock, DenseBlock, DiagonalBlock, SparseTensor
from cftest.gbscr_strategies import KINDS, assert_matches, tensor_pair


def deeppoly_step(coef, bound_lower, bound_upper, lb, ub, N):
    """A DeepPoly-style back-substitution step written against the API only."""
    pos = T.binary(coef, 0.0, "ge")
    c_pos = T.where(pos, coef, 0.0)
    c_neg = T.where(pos, 0.0, coef)
    new = T.binary(T.inner(c_pos, bound_lower), T.inner(c_neg, bound_upper), "add")
    # concretise against the box [lb, ub] of all neurons
    lbe = T.expand(T.add_dim(lb, 1), T.shape(new))
    ube = T.expand(T.add_dim(ub, 1), T.shape(new))
    conc = T.binary(T.binary(T.clamp(new, min=0.0), lbe, "mul"), T.binary(T.clamp(new, max=0.0), ube, "mul"), "add")
    val = T.reduce_sum(conc, 2)
    layer = T.slice_range(new, 2, 0, 8)
    again = T.embed_range(layer, 2, 0, N)
    act = T.unary(T.binary(val, 1.0, "sub"), "relu")
    flag = T.any(T.binary(act, 100.0, "gt"))
    return new, val, again, act, flag


def _inputs(as_dense: bool):
    g = torch.Generator().manual_seed(0)
    b, curr, N = 3, 5, 40
    coef = T.embed_range(T.from_dense(torch.randn(b, curr, 10, generator=g)), 2, 20, N)
    bl = SparseTensor((b, N, N), 0.0, [
        ((0, 20, 8), DiagonalBlock(torch.rand(b, 10, generator=g), 1)),
        ((0, 8, 0), ConvBlock(torch.randn(2, 1, 2, 2, generator=g), (2, 4), 1, 0, lead=(b,))),
        ((0, 30, 20), DenseBlock(torch.randn(b, 10, 10, generator=g))),
    ])
    bu = T.binary(bl, 2.0, "mul")
    lb = SparseTensor((b, N), -1.0, [((0, 0), DenseBlock(-torch.rand(b, 8, generator=g)))])
    ub = SparseTensor((b, N), 1.0, [((0, 0), DenseBlock(torch.rand(b, 8, generator=g)))])
    args = (coef, bl, bu, lb, ub)
    if as_dense:
        args = tuple(T.to_dense(a) for a in args)
    return args + (N,)


def test_same_program_dense_and_sparse():
    sp = deeppoly_step(*_inputs(False))
    de = deeppoly_step(*_inputs(True))
    for s, d in zip(sp[:-1], de[:-1]):
        assert isinstance(s, SparseTensor) and isinstance(d, torch.Tensor)
        assert_matches(s, d)
    assert sp[-1] == de[-1]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_random_programs_dense_and_sparse(data):
    a, b = data.draw(tensor_pair(kinds_a=KINDS, kinds_b=KINDS))

    def prog(x, y):
        s = T.binary(x, y, "mul")
        m = T.binary(s, 0.5, "max")
        w = T.where(T.binary(x, y, "lt"), m, T.unary(y, "neg"))
        r = T.reduce_sum(T.clamp(w, -2.0, 2.0), -1, True)
        e = T.expand(r, T.shape(x))
        return T.binary(e, T.slice_range(T.embed_range(x, 0, 1, T.shape(x)[0] + 2), 0, 1, T.shape(x)[0] + 1), "sub")

    got = prog(a, b)
    exp = prog(a.to_dense(), b.to_dense())
    assert isinstance(exp, torch.Tensor)
    assert_matches(got, exp)


def test_mixed_sparse_and_dense_arguments():
    a = SparseTensor((2, 3), 0.0, [((0, 1), DenseBlock(torch.ones(2, 2)))])
    d = torch.arange(6.0).reshape(2, 3)
    assert_matches(T.binary(a, d, "add"), a.to_dense() + d)
    assert_matches(T.inner(a, d.T), a.to_dense() @ d.T)
    assert T.binary(d, 1.0, "add").dtype == torch.float32
    assert torch.equal(T.binary(d, math.inf, "min"), d)
    assert T.binary(d.double(), 1.0, "add").dtype == torch.float64
