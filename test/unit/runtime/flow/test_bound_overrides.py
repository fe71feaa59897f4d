"""``run_certifier(..., bound_overrides=...)`` (:mod:`cfruntime.flow.overrides`) and the rules specialised to
given bounds (:mod:`cfruntime.flow.specialise`): inert overrides change nothing, a certifier's own bounds
given back (``replace``) reproduce its results exactly with the back-substitutions skipped, a sign fixed on
a pre-activation neuron makes its ReLU exact and the bounds hold on the subdomain for concrete points, the
float32 cast is outward, and the hook costs no host sync."""

from __future__ import annotations

import pytest
import torch

from cftest.nets import boxes, mlp
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.flow.overrides import BoundOverride
from cfruntime.op_count import OpCounter

POLYHEDRAL = ["deeppoly", "crown_ibp", "skippoly"]
ALL = POLYHEDRAL + ["deepz", "ibp", "deeppoly_2"]


def _bounds(cert, res, net):
    return {l.index: tuple(gb.to_dense(res.store.get(l.index, m)).expand(res.lower.shape[0], -1) for m in ("l", "u"))
            for l in net.layers[1:]}


@pytest.fixture(scope="module")
def case():
    net = mlp([4, 12, 12, 10, 3], seed=3)
    lb, ub = boxes(4, batch=5, seed=2, radius=0.4)
    return net, lb, ub


@pytest.mark.parametrize("name", ALL)
def test_inert_overrides_change_nothing(shipped, case, name):
    net, lb, ub = case
    cert = shipped.compiled(name)
    ref = run_certifier(cert, net, lb, ub)
    inf = float("inf")
    inert = {l.index: BoundOverride(torch.full((5, l.size), -inf, dtype=torch.float64),
                                    torch.full((5, l.size), inf, dtype=torch.float64)) for l in net.layers[1:]}
    got = run_certifier(cert, net, lb, ub, bound_overrides=inert)
    for k, (lo, hi) in _bounds(cert, ref, net).items():
        glo, ghi = _bounds(cert, got, net)[k]
        assert torch.equal(lo, glo) and torch.equal(hi, ghi), k
    assert torch.equal(run_certifier(cert, net, lb, ub, bound_overrides={}).lower, ref.lower)


@pytest.mark.parametrize("name", ALL)
def test_own_bounds_replaced_reproduce_the_result(shipped, case, name):
    """Every affine layer's Float bounds given back with ``replace=True``: the rules run without computing
    them (specialised) and the last layer's bounds are the full run's, bit for bit."""
    net, lb, ub = case
    cert = shipped.compiled(name)
    ref = run_certifier(cert, net, lb, ub)
    own = _bounds(cert, ref, net)
    last = net.layers[-1].index
    given = {k: BoundOverride(lo.clone(), hi.clone(), replace=True) for k, (lo, hi) in own.items()
             if k != last and net.layers[k].kind == "affine"}
    got = run_certifier(cert, net, lb, ub, bound_overrides=given)
    assert torch.equal(got.lower, ref.lower) and torch.equal(got.upper, ref.upper)


def test_replaced_bounds_skip_the_back_substitution(shipped, case, monkeypatch):
    """DeepPoly with the hidden affine layers' bounds given: only the last layer back-substitutes (2
    traverses, lower and upper, instead of 2 per affine layer), with no host sync beyond the finite
    check's one (cfruntime.flow.finite); a given-up side (+inf, replaced) is the caller's, not an error."""
    from cfruntime.flow.context import LayerContext

    net, lb, ub = case
    cert = shipped.compiled("deeppoly")
    ref = run_certifier(cert, net, lb, ub)
    own = _bounds(cert, ref, net)
    last = net.layers[-1].index
    given = {k: BoundOverride(lo.clone(), hi.clone(), replace=True) for k, (lo, hi) in own.items()
             if k != last and net.layers[k].kind == "affine"}
    traverses = []
    full_traverse = LayerContext.traverse_layers
    monkeypatch.setattr(LayerContext, "traverse_layers",
                        lambda self, *a: traverses.append(self.layer.index) or full_traverse(self, *a))
    # without the non-finite check (one host sync per call, the same with and without overrides)
    with OpCounter() as full:
        run_certifier(cert, net, lb, ub, graph=False, check_finite=False)
    affine = [l.index for l in net.layers if l.kind == "affine"]
    assert sorted(traverses) == sorted(affine * 2)
    traverses.clear()
    with OpCounter() as replaced:
        run_certifier(cert, net, lb, ub, bound_overrides=given, check_finite=False)
    assert traverses == [last, last]
    assert replaced.ops < full.ops and replaced.syncs == full.syncs == 0
    # the last layer's upper bounds given up (the largest float64: finite for the non-finite check): one
    # traverse, the lower bounds unchanged
    traverses.clear()
    huge = torch.finfo(torch.float64).max
    given[last] = BoundOverride(upper=torch.full((5, 3), huge, dtype=torch.float64), replace="upper")
    lower_only = run_certifier(cert, net, lb, ub, bound_overrides=given)
    assert traverses == [last] and torch.equal(lower_only.lower, ref.lower)
    assert bool((lower_only.upper == huge).all())
    # a side an override gives is the caller's value: +inf there is not a non-finite bound of the run
    given[last] = BoundOverride(upper=torch.full((5, 3), float("inf"), dtype=torch.float64), replace="upper")
    assert bool(torch.isinf(run_certifier(cert, net, lb, ub, bound_overrides=given).upper).all())


@pytest.mark.parametrize("name", POLYHEDRAL + ["deepz", "ibp"])
def test_a_fixed_sign_is_sound_and_exact(shipped, case, name):
    """Pre-activation neuron 0 of layer 1 fixed active (``l := max(l, 0)``) on box 0 and inactive
    (``u := min(u, 0)``) on box 1: the stored bounds are the intersections, the ReLU after it is exact
    (its bounds are the pre-activation's clamped), and every layer's bounds hold on the concrete points of
    the boxes that obey the sign."""
    net, lb, ub = case
    cert = shipped.compiled(name)
    ref = run_certifier(cert, net, lb, ub)
    l1, u1 = _bounds(cert, ref, net)[1]
    lo = torch.full_like(l1, -float("inf"))
    hi = torch.full_like(u1, float("inf"))
    lo[0, 0], hi[1, 0] = 0.0, 0.0
    got = run_certifier(cert, net, lb, ub, bound_overrides={1: BoundOverride(lo, hi)})
    b = _bounds(cert, got, net)
    assert float(b[1][0][0, 0]) == max(float(l1[0, 0]), 0.0) and float(b[1][1][1, 0]) == min(float(u1[1, 0]), 0.0)
    assert float(b[2][0][0, 0]) == max(float(b[1][0][0, 0]), 0.0)  # ReLU of a non-negative interval: itself
    assert float(b[2][1][1, 0]) == 0.0  # ReLU of a non-positive interval: 0
    g = torch.Generator().manual_seed(0)
    x = lb[:2, None] + torch.rand(2, 4000, 4, generator=g, dtype=torch.float64) * (ub - lb)[:2, None]
    for row, keep in ((0, lambda z: z >= 0), (1, lambda z: z <= 0)):
        vals = net.forward_all(x[row])
        inside = keep(vals[1][:, 0])
        assert int(inside.sum()) > 10
        for k, (lo_k, hi_k) in b.items():
            v = vals[k][inside]
            assert bool((v >= lo_k[row] - 1e-9).all() and (v <= hi_k[row] + 1e-9).all()), (name, k, row)


def test_float32_casts_the_given_bounds_outward(shipped, case):
    net, lb, ub = case
    cert = shipped.compiled("deeppoly")
    third = torch.full((5, 12), 1.0 / 3.0, dtype=torch.float64)
    ov = BoundOverride(-third, third)
    cast = ov.cast(torch.float32, "cpu")
    assert cast.lower.dtype == torch.float32
    assert bool((cast.lower.double() <= -third).all() and (cast.upper.double() >= third).all())
    res = run_certifier(cert, net, lb, ub, dtype=torch.float32,
                        bound_overrides={1: BoundOverride(-third, third, replace=True)})
    l1, u1 = (gb.to_dense(res.store.get(1, m)).double() for m in ("l", "u"))
    assert bool((l1 <= -third).all() and (u1 >= third).all())  # float32 bounds still contain the given ones


def test_float32_keeps_a_split_bound_of_zero_exact(shipped, case):
    """A split neuron's bound 0 (and any value float32 holds exactly) stays itself in a float32 run: cast
    "outward" by a step, 0 became -1.4e-45, an unstable ReLU, whose free slope in alpha_deeppoly the
    float32 steps of a branch-and-bound search then moved (mnistfc 256x2 prop_1: open after 25,000
    subdomains, decided in 2,507 with the bound kept).  Inexact values still go outward."""
    net, lb, ub = case
    cert = shipped.compiled("alpha_deeppoly")
    lo = torch.full((5, 12), -1.0 / 3.0, dtype=torch.float64)
    hi = torch.full((5, 12), 1.0 / 3.0, dtype=torch.float64)
    lo[:, :4], hi[:, 4:8] = 0.0, 0.0  # active splits (lower bound 0), inactive ones (upper bound 0)
    cast = BoundOverride(lo, hi).cast(torch.float32, "cpu")
    assert bool((cast.lower[:, :4] == 0).all() and (cast.upper[:, 4:8] == 0).all())
    assert bool((cast.lower.double()[:, 4:] < lo[:, 4:]).all() and (cast.upper.double()[:, 8:] > hi[:, 8:]).all())
    from cfruntime.flow.param_store import ParamStore

    params = ParamStore()
    run_certifier(cert, net, lb, ub, dtype=torch.float32, widen=False, params=params,
                  bound_overrides={1: BoundOverride(lo, hi, replace=True)})
    (dom_lo, dom_hi), = [v for (name, k), v in params.last_domains.items() if name == "al" and k == 2]
    assert bool((dom_lo[:, :4] == 1).all() and (dom_hi[:, 4:8] == 0).all())  # stable: the slope is fixed


def test_bad_overrides_name_the_layer(shipped, case):
    net, lb, ub = case
    cert = shipped.compiled("deeppoly")
    with pytest.raises(ValueError, match=r"bound_overrides\[1\]: expected \[5, 12\]"):
        run_certifier(cert, net, lb, ub, bound_overrides={1: BoundOverride(torch.zeros(5, 3), None)})
    with pytest.raises(ValueError, match="no layer 99"):
        run_certifier(cert, net, lb, ub, bound_overrides={99: BoundOverride(None, None)})
    with pytest.raises(ValueError, match="needs the bounds of the sides it replaces"):
        BoundOverride(torch.zeros(5, 12), None, replace=True)
    with pytest.raises(ValueError, match="replace must be"):
        BoundOverride(torch.zeros(5, 12), None, replace="both")
