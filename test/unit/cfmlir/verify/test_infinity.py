"""Infinite constants (``1.0 / 0.0``) in rules: comparisons settled in the extended reals
(cfmlir/verify/infinity.py); what has no extended-real value (``inf - inf``, ``0 * inf``) refused."""

from __future__ import annotations

import pytest
import z3

from cfmlir.verify import FragmentError, verify_source
from cfmlir.verify.infinity import INF, NotExtendedReal, mentions, settle

x, l, u = z3.Reals("x l u")


def _valid(f) -> bool:
    s = z3.Solver()
    s.add(z3.Not(f))
    return s.check() == z3.unsat


def test_minus_inf_is_below_every_real_and_inf_above():
    assert z3.is_true(settle(-INF <= x)) and z3.is_true(settle(x < INF))
    assert z3.is_false(settle(INF <= x)) and z3.is_false(settle(x == INF))
    assert z3.is_true(settle(2 * INF + x - 7 > u))


def test_a_conditional_infinite_bound_is_split_on_its_condition():
    f = settle(z3.If(l > 0, 1 / u, -INF) <= x)
    assert not mentions(f)
    assert _valid(f == z3.Or(z3.Not(l > 0), 1 / u <= x))
    g = settle(z3.If(z3.If(INF >= 0, INF, -INF) >= x, l, u) == l)  # abs(inf) >= x: true
    assert _valid(g == (l == l))


@pytest.mark.parametrize("bad", [INF - INF <= x, INF * x >= 0, INF * INF > x, INF <= INF])
def test_what_float64_makes_nan_is_refused(bad):
    with pytest.raises(NotExtendedReal):
        settle(bad)


SPEC = """def Shape as (Float l, Float u){[(curr[l]<=curr),(curr[u]>=curr)]};
func stop(Neuron n) = false;
func priority(Neuron n) = n[layer];
transformer t{
    Reciprocal -> %s;
}
flow(forward, priority, stop, t);
"""


def test_reciprocal_across_zero_with_infinite_bounds_is_verified():
    body = "((prev[l] > 0.0) or (prev[u] < 0.0)) ? (1.0 / prev[u], 1.0 / prev[l]) : (-1.0 / 0.0, 1.0 / 0.0)"
    (r,) = verify_source(SPEC % body, "rc.cf", timeout=20)
    assert r.status == "verified", r.line()


def test_reciprocal_across_zero_with_an_infinite_bound_on_the_wrong_side_is_refuted():
    body = "((prev[l] > 0.0) or (prev[u] < 0.0)) ? (1.0 / prev[u], 1.0 / prev[l]) : (1.0 / 0.0, 1.0 / 0.0)"
    (r,) = verify_source(SPEC % body, "rc.cf", timeout=20)
    assert r.status == "counterexample" and "curr[l] <= curr" in r.detail, r.line()


def test_inf_minus_inf_in_a_rule_is_outside_the_fragment():
    body = "((prev[l] > 0.0) or (prev[u] < 0.0)) ? (1.0 / prev[u], 1.0 / prev[l]) : ((1.0 / 0.0) - (1.0 / 0.0), 1.0 / 0.0)"
    with pytest.raises(FragmentError, match="no value"):
        verify_source(SPEC % body, "rc.cf", timeout=20)
