"""Gradients of the parametric certifiers (issue 25, acceptance 3): float64 ``torch.autograd.gradcheck``
of the margins' bounds with respect to the parameters, and -- with the parameters held at fixed values
strictly inside their domains -- with respect to the input box and every weight, kernel and bias, on
small MLP, CNN and residual networks, for every shipped certifier with parameters."""

from __future__ import annotations

import pytest
import torch

from cfruntime.flow.engine import run_certifier
from cfruntime.flow.param_store import ParamStore
from cfruntime.network.tensors import network_tensors, with_tensors
from cftest.nets import boxes, mlp, residual_mlp, small_conv

PARAMETRIC = ("alpha_deeppoly", "alpha_deepz")
NETS = {"mlp": lambda: mlp([3, 5, 4, 3], seed=4), "cnn": small_conv, "residual": residual_mlp}
RADIUS = {"mlp": 0.6, "cnn": 0.4, "residual": 0.6}


def _interior_store(cert, net, lb, ub, fraction=0.37):
    """A first run with every parameter at ``lo + fraction * (hi - lo)`` of its domain; returns the
    parameters' values and, per parameter tensor, where its domain is not a single point."""
    ps = ParamStore(fill=lambda lo, hi, init: lo + (hi - lo) * torch.full_like(lo, fraction))
    run_certifier(cert, net, lb, ub, params=ps)
    base = {k: v.detach().clone() for k, v in ps.raw.items()}
    free = {}
    for k, v in base.items():
        lo, hi = ps.last_domains[(k[0], k[2])]
        wide = torch.as_tensor(hi > lo)
        while wide.dim() < v.dim():  # a pair parameter [B, bounded, replaced]: one domain per replaced neuron
            wide = wide.unsqueeze(1)
        free[k] = wide.expand(v.shape)
    return base, free


def _store(values: dict) -> ParamStore:
    store = ParamStore()
    store.raw = dict(values)
    return store


def _problem(certifier, net_name, shipped):
    net = NETS[net_name]()
    lb, ub = boxes(net.input_size, batch=2, seed=1, radius=RADIUS[net_name])
    return shipped.compiled(certifier), net, lb, ub


@pytest.mark.parametrize("net_name", sorted(NETS))
@pytest.mark.parametrize("certifier", PARAMETRIC)
def test_gradcheck_in_the_parameters(shipped, certifier, net_name):
    cert, net, lb, ub = _problem(certifier, net_name, shipped)
    base, free = _interior_store(cert, net, lb, ub)
    keys = [k for k in base if bool(free[k].any())]
    assert keys, "no parameter with a domain wider than a point: the test would check nothing"

    def f(*xs):
        values = dict(base)
        for k, x in zip(keys, xs):
            values[k] = torch.where(free[k], x, base[k])
        res = run_certifier(cert, net, lb, ub, params=_store(values))
        return res.lower, res.upper

    xs = tuple(base[k].clone().requires_grad_(True) for k in keys)
    assert torch.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-5, rtol=1e-4, fast_mode=net_name == "cnn")


@pytest.mark.parametrize("net_name", sorted(NETS))
@pytest.mark.parametrize("certifier", PARAMETRIC)
def test_gradcheck_in_the_box_and_weights_at_fixed_parameters(shipped, certifier, net_name):
    cert, net, lb, ub = _problem(certifier, net_name, shipped)
    base, _ = _interior_store(cert, net, lb, ub)

    def f(lo, hi, *tensors):
        res = run_certifier(cert, with_tensors(net, tensors), lo, hi, params=_store(base))
        return res.lower, res.upper

    inputs = (lb.clone().requires_grad_(True), ub.clone().requires_grad_(True),
              *[t.detach().clone().requires_grad_(True) for t in network_tensors(net)])
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-4, fast_mode=True)


@pytest.mark.parametrize("certifier", PARAMETRIC)
def test_the_gradient_in_the_parameters_is_not_zero(shipped, certifier):
    """The checks above would pass vacuously if no bound depended on a parameter: at least one does."""
    cert, net, lb, ub = _problem(certifier, "mlp", shipped)
    base, free = _interior_store(cert, net, lb, ub)
    xs = {k: v.clone().requires_grad_(True) for k, v in base.items() if bool(free[k].any())}
    res = run_certifier(cert, net, lb, ub, params=_store({**base, **xs}))
    grads = torch.autograd.grad(res.lower.sum(), list(xs.values()), allow_unused=True)
    assert any(g is not None and bool((g != 0).any()) for g in grads)
