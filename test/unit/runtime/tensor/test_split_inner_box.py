"""``rt.split_inner`` against a box (plain bound tensors, as in concretisation) runs as
``x * (pos + neg)/2 + |x| * (pos - neg)/2``; it must equal the clamped form
``clamp(x, min=0) . pos + clamp(x, max=0) . neg`` -- including where ``x``, ``pos`` or ``neg`` hold
infinities, which make the centre/radius form NaN where the clamped form is not.  Both run under the
engine's absent-zero semantics (a coefficient outside every block is an absent summand)."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cfruntime.tensor as T
from cfruntime.flow import ops as rt

from cftest.gbscr_strategies import KINDS, make_tensor, values


def clamped_form(x, pos, neg, dim):
    return rt.binary("add", rt.inner(rt.clamp(x, 0.0, None), pos, dim), rt.inner(rt.clamp(x, None, 0.0), neg, dim))


def dense(v):
    return T.to_dense(v) if T.is_sparse(v) else v


@settings(max_examples=120, deadline=None, derandomize=True)
@given(batch=st.integers(1, 3), rows=st.integers(1, 4), cols=st.integers(1, 9), seed=st.integers(0, 2**31 - 1),
       n_blocks=st.integers(0, 3), special=st.booleans())
def test_box_split_equals_the_clamped_form(batch, rows, cols, seed, n_blocks, special):
    gen = torch.Generator().manual_seed(seed)
    x = make_tensor(gen, (batch, rows, cols), torch.float64, 0.0, KINDS, n_blocks, special)
    pos = values(gen, (batch, 1, cols), torch.float64, special)
    neg = values(gen, (batch, 1, cols), torch.float64, special)
    with T.absent_zero_semantics():
        got, want = dense(rt.split_inner(x, pos, neg, 2)), dense(clamped_form(x, pos, neg, 2))
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_a_summand_that_is_nan_only_in_the_centre_radius_form_falls_back():
    # x = inf meets pos 1, neg -3: inf * (-1) + inf * 2 is NaN; the clamped form gives inf * 1 = inf
    x = T.SparseTensor((1, 1, 2), 0.0, [((0, 0, 0), T.DenseBlock(torch.tensor([[[math.inf, 2.0]]])))])
    pos, neg = torch.tensor([[[1.0, 1.0]]]), torch.tensor([[[-3.0, 5.0]]])
    with T.absent_zero_semantics():
        assert torch.equal(dense(rt.split_inner(x, pos, neg, 2)), torch.tensor([[math.inf]]))


def test_bounds_near_the_largest_float_do_not_overflow_the_centre():
    x = T.SparseTensor((1, 1, 1), 0.0, [((0, 0, 0), T.DenseBlock(torch.tensor([[[0.5]]], dtype=torch.float64)))])
    big = torch.full((1, 1, 1), 1.5e308, dtype=torch.float64)
    with T.absent_zero_semantics():
        assert torch.equal(dense(rt.split_inner(x, big, big.clone(), 2)), torch.tensor([[0.75e308]], dtype=torch.float64))


def test_a_zero_coefficient_of_a_block_gets_the_positive_sides_gradient():
    """The centre/radius form on a g-BSCR ``x`` takes ``|x|`` with gradient 1 at 0 (``unary("magnitude")``),
    so ``d/dx (x+ pos + x- neg)`` at ``x = 0`` is ``pos``, as the clamped form's (``clamps.positive_part``)
    and the dense form's; abs's gradient 0 there gave the mean ``(pos + neg) / 2`` (fails with ``"abs"``)."""
    core = torch.tensor([[[0.0, 2.0, -1.0, 0.0]]], dtype=torch.float64, requires_grad=True)
    x = T.SparseTensor((1, 1, 4), 0.0, [((0, 0, 0), T.DenseBlock(core))])
    pos = torch.tensor([[[-1.0, -2.0, 0.5, 3.0]]], dtype=torch.float64)
    neg = torch.tensor([[[4.0, 5.0, 1.5, 7.0]]], dtype=torch.float64)
    with T.absent_zero_semantics():
        out = dense(rt.split_inner(x, pos, neg, 2))
    assert out.item() == 2.0 * -2.0 + -1.0 * 1.5
    (g,) = torch.autograd.grad(out.sum(), core)
    assert g.tolist() == [[[-1.0, -2.0, 1.5, 3.0]]]
