"""alpha_deeppoly's sigmoid and tanh lines are CROWN's (Zhang et al. 2018) at their initial tangent
points: on one neuron ``y = f(x)``, ``x in [l, u]``, the bounds of ``y`` and ``-y`` are the upper line
at ``u`` and the lower line at ``l``, checked against this file's own CROWN (torch, float64) on
intervals left of, right of and across 0, narrow and wide.  (test_bounded_peer.py compares whole
networks with auto_LiRPA's CROWN where its environment is set up; cf-verify proves the lines for every
tangent point, test_scurve.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cfmlir
from cfruntime.flow.engine import run_certifier
from cfruntime.network import network_from_model
from cfruntime.network.builders import mlp_model

SIG = {"sigmoid": (torch.sigmoid, lambda x: torch.sigmoid(x) * (1 - torch.sigmoid(x)), 1.0),
       "tanh": (torch.tanh, lambda x: 1 - torch.tanh(x) ** 2, 2.0)}


def _tangent_point(l):
    """CROWN's d >= 0 whose sigmoid tangent passes (l, sigma(l)), l < 0: two Newton steps."""
    s = torch.sigmoid
    ds = lambda x: s(x) * (1 - s(x))  # noqa: E731
    d = torch.minimum(l.abs(), torch.log1p(l.abs()))
    for _ in range(2):
        fp = ds(d) * (1 - 2 * s(d)) * (l - d)
        d = torch.where(fp != 0, d - (s(d) + ds(d) * (l - d) - s(l)) / torch.where(fp != 0, fp, 1), d)
    return d


def crown(act: str, l, u):
    """(upper line at u, lower line at l) of CROWN's relaxation of ``act`` on [l, u]."""
    f, df, k = SIG[act]
    at = lambda d, x: f(d) + df(d) * (x - d)  # noqa: E731
    m = (l + u) / 2
    du = torch.clamp(torch.maximum(_tangent_point(k * l) / k, m), torch.zeros_like(u), u.clamp(min=0))
    dl = torch.clamp(torch.minimum(-_tangent_point(-k * u) / k, m), l.clamp(max=0), torch.zeros_like(l))
    lifted = at(du, u) + torch.clamp(f(l) - at(du, l), min=0)
    lowered = at(dl, l) - torch.clamp(at(dl, u) - f(u), min=0)
    up = torch.where(l >= 0, at(m, u), torch.where((u <= 0) | (at(u, l) < f(l)), f(u), lifted))
    lo = torch.where(u <= 0, at(m, l), torch.where((l >= 0) | (at(l, u) > f(u)), f(l), lowered))
    return up, lo


def _one_neuron(act: str, w: float):
    one = np.ones((1, 1), np.float32)
    return network_from_model(mlp_model([one, one * w], activations=act, input_shape=(1,)))


@pytest.mark.parametrize("act", sorted(SIG))
def test_lines_are_crowns(act):
    cert = cfmlir.compile("alpha_deeppoly").compiled
    g = torch.Generator().manual_seed(3)
    centre = torch.cat([torch.rand(40, generator=g) * 8 - 4, torch.zeros(4)]).double()
    width = torch.cat([torch.rand(40, generator=g) * 6 + 1e-3, torch.tensor([0.1, 1.0, 4.0, 12.0])]).double()
    l, u = centre - width / 2, centre + width / 2
    lb, ub = l.view(-1, 1), u.view(-1, 1)
    up, lo = crown(act, l, u)
    plus = run_certifier(cert, _one_neuron(act, 1.0), lb, ub)
    minus = run_certifier(cert, _one_neuron(act, -1.0), lb, ub)
    torch.testing.assert_close(plus.upper[:, 0], up, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(-minus.lower[:, 0], up, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(plus.lower[:, 0], lo, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(-minus.upper[:, 0], lo, rtol=1e-9, atol=1e-9)
    straddling = (l < 0) & (u > 0)
    assert int(straddling.sum()) >= 10
    f = SIG[act][0]
    assert bool((up >= f(u) - 1e-12).all() and (lo <= f(l) + 1e-12).all())
    # the lifted tangents are used (strictly above f(u) on some straddling interval)
    assert bool((up[straddling] > f(u)[straddling] + 1e-6).any())


@pytest.mark.parametrize("act", sorted(SIG))
def test_one_sided_tangent_points_are_optimised(act):
    """On an interval left of 0 the lower line is a tangent at a point of [l, u] (right of 0 the upper
    line): its point is the parameter ``sdl``/``tdl`` (``sdu``/``tdu``), initialised at the midpoint
    (CROWN's line, the first run), and the optimisation moves it to the end where the bound is taken:
    the bound approaches ``f(l)`` (``f(u)``).  With the midpoint fixed (the rule before 2026-12-03) the
    optimised bound stayed the first run's: ml4acopf_2024's ``14_ieee prop3`` needed ``0.1 sigma(z) >
    -1e-6`` for a ``z`` in ``[-5.2, -0.2]`` and got ``-0.0076``."""
    from cfmlir.optimize import OptimizeOptions, optimize_bounds

    cert = cfmlir.compile("alpha_deeppoly").compiled
    f = SIG[act][0]
    l = torch.tensor([[-5.0], [1.0]], dtype=torch.float64)
    u = torch.tensor([[-1.0], [5.0]], dtype=torch.float64)
    net = _one_neuron(act, 1.0).with_margin_layer(torch.tensor([[1.0], [-1.0]], dtype=torch.float64))
    first = run_certifier(cert, net, l, u).lower
    lower, _, _ = optimize_bounds(cert, net, l, u, OptimizeOptions(iterations=30), dtype=torch.float64)
    # row 0: y >= f(l) on the left interval; row 1: -y >= -f(u) on the right one
    exact = torch.stack([f(l[0, 0]), -f(u[1, 0])])
    got = torch.stack([lower[0, 0], lower[1, 1]])
    assert bool((got <= exact + 1e-12).all())                       # sound
    assert bool((torch.stack([first[0, 0], first[1, 1]]) < exact - 0.01).all())  # the midpoint's line is far off
    torch.testing.assert_close(got, exact, rtol=0, atol=1e-3)      # the optimised tangent point is near the end
