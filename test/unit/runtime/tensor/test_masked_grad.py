"""``multiply``/``divide`` (:mod:`cfruntime.tensor.masked_grad`): the values of ``*`` and ``/``, the
gradient of torch's where the result is used, and a zero (not NaN) gradient where it is not."""

import pytest
import torch

from cfruntime.tensor.masked_grad import divide, multiply


def test_values_and_no_recording_without_grad():
    a = torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64)
    b = torch.tensor([0.5, 0.0, -4.0], dtype=torch.float64)
    assert torch.equal(multiply(a, b), a * b) and torch.equal(divide(a, b), a / b)
    assert divide(2.0, a).tolist() == (2.0 / a).tolist() and multiply(a, 3.0).tolist() == (a * 3.0).tolist()
    x = a.clone().requires_grad_(True)
    with torch.no_grad():
        assert divide(x, b).grad_fn is None and multiply(x, b).grad_fn is None


@pytest.mark.parametrize("op", [multiply, divide])
def test_gradcheck_where_defined(op):
    a = torch.tensor([[1.0, -2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([[0.5], [-1.5]], dtype=torch.float64, requires_grad=True)  # broadcast: [2, 3]
    assert torch.autograd.gradcheck(op, (a, b))
    assert torch.autograd.gradcheck(lambda x: op(x, 2.5), (a,))
    assert torch.autograd.gradcheck(lambda x: op(2.5, x), (b,))


def test_unselected_branch_gives_zero_gradient():
    """ReLU's upper slope at a neuron with u == l: ``where(u - l > 0, u / (u - l) * w, 0)``: torch's
    own gradient is NaN for ``u``, ``l`` and ``w``; ours is 0 there and torch's elsewhere."""
    u = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    l = torch.tensor([1.0, -1.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)

    def f(div, mul):
        width = u - l
        return torch.where(width > 0, mul(div(u, width), w), 0.0).sum()

    f(torch.true_divide, torch.mul).backward()
    assert torch.isnan(u.grad[0]) and torch.isnan(w.grad[0])
    want = [t.grad[1].item() for t in (u, l, w)]
    for t in (u, l, w):
        t.grad = None
    f(divide, multiply).backward()
    assert [t.grad[0].item() for t in (u, l, w)] == [0.0, 0.0, 0.0]
    assert [t.grad[1].item() for t in (u, l, w)] == pytest.approx(want, rel=1e-15)
