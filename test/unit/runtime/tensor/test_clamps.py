"""clamps: torch.clamp's values and gradients (relu's kernels for max(t, 0), clamp's gradient at 0), and the gradient at 0 of the splits built on them."""

import math

import pytest
import torch

from cfruntime.tensor.clamps import clamp_number, positive_part

VALUES = torch.tensor([-math.inf, -3.5, -1e-30, -0.0, 0.0, 1e-30, 2.25, math.inf, math.nan], dtype=torch.float64)


@pytest.mark.parametrize("lo,hi", [(0, None), (0.0, None), (None, 0), (-1.0, 2.0), (1.5, None), (None, None)])
def test_values_equal_torch_clamp(lo, hi):
    if lo is None and hi is None:
        with pytest.raises(RuntimeError):  # as torch.clamp: at least one bound
            clamp_number(VALUES, lo, hi)
        return
    want, got = torch.clamp(VALUES, lo, hi), clamp_number(VALUES, lo, hi)
    assert torch.equal(torch.isnan(want), torch.isnan(got))
    assert torch.equal(want.nan_to_num(), got.nan_to_num())


def test_max_zero_has_clamps_gradient_in_one_kernel():
    """max(t, 0): clamp's gradient -- 1 at and above 0 (also -0.0), 0 below, 0 at NaN -- from one
    backward kernel (threshold_backward, not clamp's comparison, scalar tensor and select)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    vals = [-2.0, -0.5, -0.0, 0.0, 1e-300, 0.5, 3.0, math.nan]
    t = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
    ref = t.detach().clone().requires_grad_(True)
    out = clamp_number(t, 0, None)
    assert torch.equal(out.detach().nan_to_num(), ref.detach().clamp(min=0).nan_to_num())
    seen = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Ops():
        (g,) = torch.autograd.grad(out.sum(), t)
    (want,) = torch.autograd.grad(ref.clamp(min=0).sum(), ref)
    assert g.tolist()[:7] == want.tolist()[:7] == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert "threshold_backward" in seen and "where" not in seen
    assert torch.equal(positive_part(t.detach()).nan_to_num(), t.detach().clamp(min=0).nan_to_num())


def test_max_zero_gradient_at_zero_reaches_a_slope():
    """A coefficient that is exactly 0 (a row a slope of 0 cut) still passes a gradient to that slope
    through its positive part: d/da max(a * c, 0) at a = 0 is c for c > 0 (relu's gradient gave 0)."""
    a = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    c = torch.tensor([2.0, 0.5, 1.0], dtype=torch.float64)
    (g,) = torch.autograd.grad(clamp_number(a * c, 0, None).sum(), a)
    assert g.tolist() == [2.0, 0.5, 1.0]


def test_other_bounds_stay_clamp():
    t = torch.tensor([-2.0, 3.0], requires_grad=True)
    assert type(clamp_number(t, -1.0, None).grad_fn).__name__.startswith("Clamp")
    assert type(clamp_number(t, True, None).grad_fn).__name__.startswith("Clamp")  # a bool is no number 0


@pytest.mark.parametrize("form", ["box", "select", "clamps"])
def test_every_form_of_the_box_contraction_gives_a_zero_coefficient_the_lower_side(form, monkeypatch):
    """``sum_k x+ p + x- n`` (a row of coefficients ``x`` against a box's bounds ``p``/``n``) is computed
    in three forms by size -- centre/radius (``x (p+n)/2 + |x| (p-n)/2``), a select (``x * where(x >= 0,
    p, n)``) and the two clamps -- and all three must give a coefficient of exactly 0 the gradient ``p``
    (the positive side, the one a slope at 0 moves into): with abs's gradient the centre/radius form
    gave the mean ``(p + n)/2`` (it fails here with ``torch.abs`` in place of ``magnitude``)."""
    from cfruntime.tensor import segmented_ops as so

    monkeypatch.setattr(so, "BOX_FORM_MIN", 0 if form == "box" else 1 << 40)
    monkeypatch.setattr(so, "SMALL_PRODUCT", 1 << 40 if form == "select" else 0)
    x = torch.tensor([[[0.0, 2.0, -1.0, 0.0]]], dtype=torch.float64, requires_grad=True)
    p = torch.tensor([[[-1.0, -2.0, 0.5, 3.0]]], dtype=torch.float64)
    n = torch.tensor([[[4.0, 5.0, 1.5, 7.0]]], dtype=torch.float64)
    out = so.split_inner_plain(x, p, n)
    assert out.item() == pytest.approx(2.0 * -2.0 + -1.0 * 1.5)
    (g,) = torch.autograd.grad(out.sum(), x)
    assert g.tolist() == [[[-1.0, -2.0, 1.5, 3.0]]]
