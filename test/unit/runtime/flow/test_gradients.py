"""The compiled engine's bounds are differentiable: ``torch.autograd.gradcheck`` (float64) of the
margins' bounds with respect to the input box and every weight, kernel and bias of small MLP, CNN and
residual networks, for the shipped certifiers, in every tensor representation (planned and general
g-BSCR, dense)."""

from __future__ import annotations

import pytest
import torch

from cfruntime.flow.engine import run_certifier
from cfruntime.network.tensors import fresh_views, network_tensors, with_tensors
from cftest.nets import boxes, mlp, residual_mlp, small_conv

NETS = {"mlp": lambda: mlp([3, 5, 4, 3]), "cnn": small_conv, "residual": residual_mlp}
REPRESENTATIONS = ("planned", "gbscr", "dense")


def _margin_matrix(n_out: int, batch: int) -> torch.Tensor:
    """``[B, n_out - 1, n_out]``: label ``b % n_out`` minus each other output."""
    rows = []
    for b in range(batch):
        y = b % n_out
        c = torch.zeros(n_out - 1, n_out, dtype=torch.float64)
        others = [j for j in range(n_out) if j != y]
        c[:, y] = 1.0
        c[torch.arange(n_out - 1), others] = -1.0
        rows.append(c)
    return torch.stack(rows)


def _bounds_fn(cert, net, representation: str, C: torch.Tensor):
    """``f(lb, ub, *tensors) -> (lower, upper)`` of the margins ``C net(x)`` over the box."""
    def f(lb, ub, *tensors):
        mnet = with_tensors(net, tensors).with_margin_layer(C)
        res = run_certifier(cert, mnet, lb, ub, representation=representation)
        return res.lower, res.upper
    return f


def _inputs(net, batch=2, seed=3):
    lb, ub = boxes(net.input_size, batch=batch, seed=seed, radius=0.2)
    tensors = [t.detach().clone().requires_grad_(True) for t in network_tensors(net)]
    return (lb.requires_grad_(True), ub.requires_grad_(True), *tensors)


@pytest.mark.parametrize("representation", REPRESENTATIONS)
@pytest.mark.parametrize("net_name", sorted(NETS))
@pytest.mark.parametrize("certifier", ["deeppoly", "crown_ibp"])
def test_gradcheck_box_and_weights(shipped, certifier, net_name, representation):
    net = NETS[net_name]()
    cert = shipped.compiled(certifier)
    inputs = _inputs(net)
    f = _bounds_fn(cert, net, representation, _margin_matrix(net.output_size, 2))
    # full Jacobians on the default representation; a directional check (fast mode) on the others
    assert torch.autograd.gradcheck(f, inputs, fast_mode=representation != "planned" or net_name == "cnn")


OTHER_CERTIFIERS = ("ibp", "deepz", "polyzono", "reusecert", "skippoly", "zid", "deeppoly_1")


@pytest.mark.parametrize("net_name", ["mlp", "residual"])
@pytest.mark.parametrize("certifier", OTHER_CERTIFIERS)
def test_gradcheck_other_certifiers(shipped, certifier, net_name):
    """Every other shipped certifier (a directional check: gradcheck's fast mode) on the planned and
    the dense representation."""
    net = NETS[net_name]()
    cert = shipped.compiled(certifier)
    inputs = _inputs(net)
    for representation in ("planned", "dense"):
        f = _bounds_fn(cert, net, representation, _margin_matrix(net.output_size, 2))
        assert torch.autograd.gradcheck(f, inputs, fast_mode=True), representation


def _grads(cert, net, lb, ub, dtype, **kw):
    """``(lower, upper, gradient of sum(lower) - sum(upper) w.r.t. lb and every network tensor)``."""
    tensors = [t.detach().clone().requires_grad_(True) for t in network_tensors(net)]
    lb = lb.detach().clone().requires_grad_(True)
    res = run_certifier(cert, with_tensors(net, tensors), lb, ub, dtype=dtype, **kw)
    (res.lower.sum() - res.upper.sum()).backward()
    return res.lower, res.upper, torch.cat([lb.grad.flatten()] + [t.grad.flatten() for t in tensors])


@pytest.mark.parametrize("representation", REPRESENTATIONS)
@pytest.mark.parametrize("certifier", ["deeppoly", "crown_ibp", "deepz"])
def test_widened_float32_keeps_widened_values_and_has_a_gradient(shipped, certifier, representation):
    """float32 with widening: the bounds of a run with gradients are the widened ones (those of the
    same run without gradients, up to the last bits of other kernels), below/above every concrete
    output of sampled inputs, and their gradient is the float64 one within float32 accuracy (the
    widening terms are constants for the gradient)."""
    net = small_conv()
    cert = shipped.compiled(certifier)
    lb, ub = boxes(net.input_size, batch=2, seed=5, radius=0.1)
    lo, hi, g32 = _grads(cert, net, lb, ub, torch.float32, representation=representation)
    assert lo.dtype == torch.float32 and lo.requires_grad
    with torch.no_grad():
        ref = run_certifier(cert, net, lb, ub, dtype=torch.float32, representation=representation)
    torch.testing.assert_close(lo, ref.lower, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(hi, ref.upper, rtol=1e-5, atol=1e-5)
    raw = run_certifier(cert, net, lb, ub, dtype=torch.float32, representation=representation, widen=False)
    assert bool((lo <= raw.lower).all()) and bool((hi >= raw.upper).all())  # widened outward
    g = torch.Generator().manual_seed(0)
    x = lb.unsqueeze(1) + (ub - lb).unsqueeze(1) * torch.rand(lb.shape[0], 200, lb.shape[1], generator=g, dtype=lb.dtype)
    y = torch.stack([net.forward(x[r]) for r in range(lb.shape[0])])  # [B, 200, n] concrete outputs
    assert bool((lo.detach().double().unsqueeze(1) <= y).all()) and bool((hi.detach().double().unsqueeze(1) >= y).all())
    _, _, g64 = _grads(cert, net, lb, ub, torch.float64, representation=representation)
    torch.testing.assert_close(g32.double(), g64, rtol=1e-3, atol=1e-3 * float(g64.abs().max()))


def test_no_gradient_wanted_records_nothing(shipped):
    """Under ``torch.no_grad`` (or with nothing asking for a gradient) the result carries no graph,
    and with gradients the values are the same up to the last bits."""
    net = mlp([3, 5, 4, 3])
    cert = shipped.compiled("deeppoly")
    lb, ub = boxes(3)
    plain = run_certifier(cert, net, lb, ub)
    assert not plain.lower.requires_grad and plain.lower.grad_fn is None
    tensors = [t.detach().clone().requires_grad_(True) for t in network_tensors(net)]
    with torch.no_grad():
        quiet = run_certifier(cert, with_tensors(net, tensors), lb, ub)
    assert not quiet.lower.requires_grad
    torch.testing.assert_close(quiet.lower, plain.lower, rtol=0, atol=0)
    loud = run_certifier(cert, with_tensors(net, tensors), lb, ub)
    assert loud.lower.requires_grad
    torch.testing.assert_close(loud.lower, plain.lower, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("net_name", sorted(NETS))
def test_training_steps_in_place(shipped, net_name):
    """A training loop: bounds, backward, an in-place update of the network's own tensors (as
    ``optimizer.step()`` does), again.  Every step's bounds and gradients equal those of a fresh copy
    of the updated tensors, with and without gradients (nothing derived from a tensor is kept stale)."""
    net = NETS[net_name]()
    cert = shipped.compiled("crown_ibp")
    lb, ub = boxes(net.input_size, batch=2, seed=7, radius=0.1)
    tensors = [t.detach().clone().requires_grad_(True) for t in network_tensors(net)]
    live = with_tensors(net, tensors)
    for _ in range(3):
        res = run_certifier(cert, live, lb, ub, representation="planned")
        res.lower.sum().backward()
        fresh = [t.detach().clone().requires_grad_(True) for t in tensors]
        ref = run_certifier(cert, with_tensors(net, fresh), lb, ub, representation="planned")
        ref.lower.sum().backward()
        torch.testing.assert_close(res.lower, ref.lower, rtol=0, atol=0)
        for t, f in zip(tensors, fresh):
            torch.testing.assert_close(t.grad, f.grad, rtol=0, atol=0)
        with torch.no_grad():
            for t in tensors:
                t -= 0.05 * t.grad
                t.grad = None
            quiet = run_certifier(cert, live, lb, ub, representation="planned")
            again = run_certifier(cert, with_tensors(net, [t.clone() for t in tensors]), lb, ub, representation="planned")
        # (a stale copy would be off by the step; tensors that require grad may meet other kernels: last bits)
        torch.testing.assert_close(quiet.lower, again.lower, rtol=1e-13, atol=1e-13)


def test_fresh_views_and_with_tensors():
    net = small_conv()
    tensors = network_tensors(net)
    assert [tuple(t.shape) for t in tensors][:2] == [(3, 2, 3, 3), (75,)]  # the first convolution: kernel, bias
    with pytest.raises(ValueError, match="holds 6 tensors, 1 were given"):
        with_tensors(net, tensors[:1])
    with pytest.raises(ValueError, match="shape"):
        with_tensors(net, [t.reshape(-1) for t in tensors])
    leaf = [t.detach().clone().requires_grad_(True) for t in tensors]
    viewed = fresh_views(with_tensors(net, leaf))
    got = network_tensors(viewed)
    assert all(g is not t and g.data_ptr() == t.data_ptr() and g.grad_fn is not None for g, t in zip(got, leaf))
    assert network_tensors(fresh_views(net))[0] is tensors[0]  # nothing asks for a gradient: shared


@pytest.mark.parametrize("certifier", ("deeppoly", "crown_ibp") + OTHER_CERTIFIERS)
def test_gradient_is_finite_at_eps_zero(shipped, certifier):
    """At a zero-width box (certified training starts at ``eps = 0``) every neuron has ``l == u``:
    the relaxations' unselected branches divide by zero, and the gradient is still finite."""
    for net, activation in ((mlp([3, 5, 4, 3]), "relu"), (mlp([3, 5, 4, 3], "sigmoid"), "sigmoid"), (small_conv(), "relu")):
        lb, _ = boxes(net.input_size, batch=2)
        for dtype in (torch.float64, torch.float32):
            lo, hi, g = _grads(shipped.compiled(certifier), net, lb, lb.clone(), dtype, widen=False)
            assert bool(torch.isfinite(g).all()), (activation, dtype)
            want = net.forward(lb).to(dtype)
            torch.testing.assert_close(lo.detach(), want, rtol=1e-4, atol=1e-4)


def _wide_conv():
    """Conv(2->4, k3, p1) - Relu - Conv(4->4, k3, p1) - Relu - Flatten - Gemm(->3) on 1x2x6x6 inputs:
    per-layer expressions of more than SMALL_PRODUCT entries (the kernels' big-tensor paths)."""
    import numpy as np
    from onnx import helper

    from cftest.nets import _model

    rng = np.random.default_rng(5)
    f = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    inits = {"K1": f(4, 2, 3, 3), "B1": f(4), "K2": f(4, 4, 3, 3), "B2": f(4), "W": f(3, 144), "B": f(3)}
    nodes = [
        helper.make_node("Conv", ["input", "K1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "K2", "B2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Flatten", ["r2"], ["fl"], axis=1),
        helper.make_node("Gemm", ["fl", "W", "B"], ["out"], transB=1),
    ]
    return _model(nodes, inits, (2, 6, 6), 3)


@pytest.mark.parametrize("representation", ["planned", "gbscr"])
@pytest.mark.parametrize("certifier", ["deeppoly", "crown_ibp", "deepz"])
def test_gradcheck_big_tensors(shipped, certifier, representation):
    """Networks whose expressions take the kernels' big-tensor paths (in-place updates of fresh
    temporaries in the forward-only run): a wider MLP and CNN, gradcheck's directional check (the
    dense representation has no such paths)."""
    for net in (mlp([10, 70, 70, 70, 3], seed=3), _wide_conv()):
        inputs = _inputs(net, seed=4)
        f = _bounds_fn(shipped.compiled(certifier), net, representation, _margin_matrix(net.output_size, 2))
        assert torch.autograd.gradcheck(f, inputs, fast_mode=True, atol=1e-5, rtol=1e-3)
