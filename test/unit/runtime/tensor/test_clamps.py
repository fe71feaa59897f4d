"""clamps.clamp_number: torch.clamp's values (relu for max(t, 0)), and a gradient torch's autograd gives."""

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


def test_max_zero_is_one_relu_node():
    """max(t, 0) is recorded as ReluBackward (one fused backward), its gradient 1 above 0, 0 below."""
    t = torch.tensor([-2.0, -0.5, 0.5, 3.0], dtype=torch.float64, requires_grad=True)
    out = clamp_number(t, 0, None)
    assert type(out.grad_fn).__name__ == "ReluBackward0"
    out.sum().backward()
    assert t.grad.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert torch.equal(positive_part(t.detach()), t.detach().clamp(min=0))


def test_other_bounds_stay_clamp():
    t = torch.tensor([-2.0, 3.0], requires_grad=True)
    assert type(clamp_number(t, -1.0, None).grad_fn).__name__.startswith("Clamp")
    assert type(clamp_number(t, True, None).grad_fn).__name__.startswith("Clamp")  # a bool is no number 0
