"""Branch and bound on S-curve networks (sigmoid, tanh; issue 26's general-activation splits): a curve
neuron's input interval is cut in two at 0 or its midpoint, the cut enters the bound through a multiplier
with a constant (``s (z - t) >= 0``, :mod:`cfmlir.bab.lagrangian`) and the layers after it are
recomputed; every bound of a cut subdomain holds on its concrete points, and the search decides a
property that one pass cannot."""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
import pytest
import torch

from cfmlir.bab import BabOptions, branching
from cfmlir.bab.bounding import CertifierBounding, subdomain_membership
from cfmlir.bab.domains import hi_key, lo_key, split_key
from cfmlir.bab.driver import run_bab
from cfmlir.bab.lagrangian import beta_key, cut_biases
from cfmlir.bab.structure import CurveLayer, structure_of
from cftest.bab_cases import root_domain
from cftest.nets import mlp

PER_CASE_S = 120


@pytest.mark.parametrize("kind", ["sigmoid", "tanh"])
def test_structure_finds_the_curve_layers(kind):
    mnet = mlp([3, 6, 5, 2], activation=kind, seed=0).with_margin_layer(torch.tensor([[1.0, -1.0]], dtype=torch.float64))
    st = structure_of(mnet)
    assert st.split_layers == () and st.branchable and not st.piecewise_linear
    assert st.curve_layers == (CurveLayer(2, 1, 6, kind), CurveLayer(4, 3, 5, kind))
    assert st.carried == (1, 3)


def _curve_case(seed: int = 0, sizes=(3, 10, 10, 2), kind: str = "sigmoid", cert=None):
    net = mlp(list(sizes), activation=kind, seed=seed)
    A = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    mnet = net.with_margin_layer(A)
    st = structure_of(mnet)
    lb, ub = -torch.ones(sizes[0], dtype=torch.float64), torch.ones(sizes[0], dtype=torch.float64)
    bounding = CertifierBounding(cert, mnet, st, (lb, ub))
    root, first = root_domain(bounding, st, 1)
    root["rows"] = first.rows
    for c in st.curve_layers:
        root[split_key(c.pre)] = torch.zeros(1, c.size, dtype=torch.int8)
    return mnet, st, bounding, root, (lb, ub)


def test_cut_children_cover_the_parent(shipped):
    """Cutting a straddling neuron at 0 and a one-sided one at its midpoint: the children's intervals are
    ``[lo, t]`` and ``[t, hi]``, marked -1 / +1; nothing else changes; too narrow a neuron is no candidate."""
    mnet, st, _, root, _ = _curve_case(cert=shipped.compiled("deeppoly"))
    c = st.curve_layers[0]
    lo, hi = root[lo_key(c.pre)][0], root[hi_key(c.pre)][0]
    straddle = int(torch.nonzero((lo < 0) & (hi > 0))[0])
    one_sided = int(torch.nonzero((lo >= 0) | (hi <= 0))[0])
    d = root.repeat(2)
    kids = branching.neuron_children(st, d, torch.tensor([straddle, one_sided]))
    assert kids[lo_key(c.pre)][0, straddle] == 0 and kids[hi_key(c.pre)][2, straddle] == 0
    mid = (lo[one_sided] + hi[one_sided]) / 2
    assert kids[lo_key(c.pre)][1, one_sided] == mid and kids[hi_key(c.pre)][3, one_sided] == mid
    assert kids[split_key(c.pre)][:, [straddle, one_sided, straddle, one_sided]].diagonal().tolist() == [1, 1, -1, -1]
    for r, n in ((0, straddle), (1, one_sided)):  # the upper child keeps hi, the lower keeps lo
        assert kids[hi_key(c.pre)][r, n] == hi[n] and kids[lo_key(c.pre)][r + 2, n] == lo[n]
    others = torch.ones(c.size, dtype=torch.bool)
    others[[straddle, one_sided]] = False
    assert torch.equal(kids[lo_key(c.pre)][:, others], lo[others].expand(4, -1))
    assert kids["depth"].tolist() == [1, 1, 1, 1]
    # a neuron narrower than CURVE_MIN_WIDTH is no candidate and not counted
    d = root.repeat(1)
    d[hi_key(c.pre)][0, straddle] = d[lo_key(c.pre)][0, straddle] + branching.CURVE_MIN_WIDTH / 2
    scores = branching.neuron_scores(mnet, st, d, torch.zeros(1, dtype=torch.int64))
    assert scores[0, straddle] == -1 and bool((scores[0, :c.size] > 0).sum() == c.size - 1)
    assert int(branching.unstable_count(st, d)[0]) == int(branching.unstable_count(st, root)[0]) - 1


def test_cut_biases_are_rounded_down():
    """The constant ``sum_i beta_i s_i t_i`` of the cut constraints is never above its exact value, and
    within its error bound of it."""
    g = torch.Generator().manual_seed(0)
    beta = torch.rand(5, 2, 300, generator=g, dtype=torch.float64) * 1e3
    signs = torch.randint(-1, 2, (5, 300), generator=g).to(torch.int8)
    t = torch.randn(5, 300, generator=g, dtype=torch.float64) * 7
    c = cut_biases({1: beta}, {1: signs}, {1: t})[1]
    for p in range(5):
        for r in range(2):
            exact = sum(Fraction(float(beta[p, r, i])) * int(signs[p, i]) * Fraction(float(t[p, i])) for i in range(300))
            assert Fraction(float(c[p, r])) <= exact
            assert float(exact - Fraction(float(c[p, r]))) <= 1e-9 * float((beta[p, r] * t[p].abs()).sum())


def _random_cuts(st, root, vals, g, n_domains: int, n_cuts: int):
    """``n_domains`` cut subdomains of ``root``, each made by ``n_cuts`` cuts of random curve neurons, taking
    each time the child that holds a sampled point (so each subdomain has points)."""
    total = sum(c.size for c in st.curve_layers)
    out = []
    for _ in range(n_domains):
        point = int(torch.randint(vals[0].shape[0], (1,), generator=g))
        d = root.select(slice(0, 1))
        for _ in range(n_cuts):
            n = int(torch.randint(total, (1,), generator=g))
            kids = branching.neuron_children(st, d, torch.tensor([n]))
            start = 0
            for c in st.curve_layers:
                if n < start + c.size:
                    z = float(vals[c.pre][point, n - start])
                    d = kids.select(slice(0, 1) if z >= float(kids[lo_key(c.pre)][0, n - start]) else slice(1, 2))
                    break
                start += c.size
        out.append(d)
    from cfmlir.bab.domains import Domains

    return Domains.cat(out)


@pytest.mark.parametrize("kind", ["sigmoid", "tanh"])
@pytest.mark.parametrize("seed", range(2))
def test_bounds_hold_on_cut_subdomains(shipped, kind, seed):
    """Random cut subdomains (up to 8 cuts): with random multipliers (0 to 1e3) on the cut constraints, the
    rows' bounds hold on the sampled points of each subdomain (and the membership test keeps the points that
    satisfy every cut and only those); recomputing the layers after the cuts keeps every carried bound sound."""
    g = torch.Generator().manual_seed(seed)
    mnet, st, bounding, root, (lb, ub) = _curve_case(seed, kind=kind, cert=shipped.compiled("deeppoly"))
    x = lb + (ub - lb) * torch.rand(20000, 3, generator=g, dtype=torch.float64)
    vals = mnet.forward_all(x)
    d = _random_cuts(st, root, vals, g, 12, 2 + 3 * seed)
    inside_of = subdomain_membership(d, st)
    rows_idx = torch.arange(12).repeat_interleave(x.shape[0])
    inside = inside_of([v.repeat(12, 1) for v in vals], rows_idx).reshape(12, -1)
    for r in range(12):
        ok = torch.ones(x.shape[0], dtype=torch.bool)
        for c in st.curve_layers:
            z, cut = vals[c.pre], d[split_key(c.pre)][r] != 0
            ok &= ((z[:, cut] >= d[lo_key(c.pre)][r, cut]) & (z[:, cut] <= d[hi_key(c.pre)][r, cut])).all(1)
        assert torch.equal(inside[r], ok) and int(ok.sum()) > 0
    bounding.beta_layers = tuple(c.pre for c in st.curve_layers)
    for scale in (0.0, 0.1, 1.0, 1e3):
        for c in st.curve_layers:
            d[beta_key(c.pre)] = (scale * torch.rand(12, 1, c.size, generator=g)).to(torch.float32)
        rows = bounding.bound(d, "replace").rows
        for r in range(12):
            assert bool((vals[-1][inside[r]] >= rows[r] - 1e-9 * (1 + rows[r].abs())).all()), (scale, r)
    tight = bounding.bound(d, "tighten")
    for r in range(12):
        for k, (lo, hi) in tight.carried.items():
            z = vals[k][inside[r]]
            assert bool((z >= lo[r] - 1e-9).all() and (z <= hi[r] + 1e-9).all()), (k, r)


def _lipschitz_unsat_case(seed: int, margin: float):
    """A 2-input sigmoid net and a property ``A y <= b`` with ``b`` below the minimum of ``A y`` over the box
    for sure: the minimum over a 401 x 401 grid less a Lipschitz bound of the grid's gaps, less ``margin``
    times the sampled spread."""
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty

    net = mlp([2, 8, 8, 2], activation="sigmoid", seed=seed)
    A = np.array([[1.0, -1.0]])
    grid = np.linspace(-1.0, 1.0, 401)
    X = torch.from_numpy(np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2))
    y = (net.forward(X) @ torch.from_numpy(A).T).reshape(-1)
    weights = [l.weight for l in net.layers if l.kind == "affine"]
    lip = float(torch.linalg.matrix_norm(torch.from_numpy(A) @ weights[-1].to(torch.float64), 2))
    for w in weights[:-1]:
        lip *= 0.25 * float(torch.linalg.matrix_norm(w.to(torch.float64), 2))
    gap = lip * (grid[1] - grid[0]) * np.sqrt(2) / 2
    b = float(y.min()) - gap - margin * float(y.max() - y.min())
    return net, VnnlibProperty(2, 2, [InputRegion(np.array([-1.0, -1.0]), np.array([1.0, 1.0]), [(A, np.array([b]))])])


def test_cuts_decide_what_one_pass_cannot(shipped):
    """An unsat property one pass of DeepPoly leaves open is decided by cutting curve neurons, every batch's
    bounds checked on concrete points of its subdomains (``--check``); without the multipliers the cuts
    alone leave it open on the same budget (a cut's constraint reaches the bound only through them)."""
    from cfmlir.tools.run_setup import _SoundnessCheck

    net, prop = _lipschitz_unsat_case(1, 0.1)
    cert = shipped.compiled("deeppoly")
    one_pass = run_bab(cert, net, prop, deadline=time.monotonic() + PER_CASE_S,
                       options=BabOptions(branching="relu", attack_restarts=0, max_domains=1))
    assert one_pass.verdict == "unknown"
    check = _SoundnessCheck(1e-9, "region")
    out = run_bab(cert, net, prop, deadline=time.monotonic() + PER_CASE_S, check=check,
                  options=BabOptions(branching="relu", attack_restarts=0, max_domains=1000))
    assert out.verdict == "unsat" and out.stats["beta"] == "on" and out.stats["domains"] > 1
    assert not check.unsound and check.totals["batches"] > 1
    without = run_bab(cert, net, prop, deadline=time.monotonic() + PER_CASE_S,
                      options=BabOptions(branching="relu", attack_restarts=0, beta=False,
                                         max_domains=2 * out.stats["domains"]))
    assert without.verdict == "unknown"


def test_auto_branches_on_curve_neurons_of_a_wide_input(shipped):
    """``branching="auto"`` on a sigmoid net with more than 16 varying inputs cuts its neurons (it split the
    input box before: the net had no ReLU)."""
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty

    net = mlp([20, 8, 2], activation="sigmoid", seed=3)
    A = np.array([[1.0, -1.0]])
    prop = VnnlibProperty(20, 2, [InputRegion(np.full(20, -0.5), np.full(20, 0.5), [(A, np.array([-1e3]))])])
    out = run_bab(shipped.compiled("deeppoly"), net, prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(attack_restarts=0, max_domains=4))
    assert out.stats["branching"] == ["curve"]
