"""The delta-complete procedure for sigmoid/tanh/exp/log obligations, part by part: outward-rounded
intervals, the expressions' algebra, derivatives, case splitting, and whole decisions -- a tight
sound obligation verified, an epsilon-violated one refuted with a point that really violates it,
tails of the unbounded line handled without a box."""

from __future__ import annotations

import math
import random
import time
from fractions import Fraction

import pytest
import z3

from cfmlir.verify import delta
from cfmlir.verify import expr as E
from cfmlir.verify import interval as I
from cfmlir.verify.calculus import affine_in, derivative
from cfmlir.verify.cases import cases
from cfmlir.verify.nonlinear import Nonlinear
from cfmlir.verify.tape import tape_of
from cfmlir.verify.terms import canonical

RNG = random.Random(7)


def _floats(n):
    out = []
    for _ in range(n):
        e = RNG.choice([-30, -3, 0, 2, 12])
        out.append(RNG.uniform(-1, 1) * 10.0 ** e)
    return out


# -- intervals -------------------------------------------------------------------------------------
def _contains(iv, q: Fraction) -> bool:
    lo, hi = iv
    return (lo == -math.inf or Fraction(lo) <= q) and (hi == math.inf or q <= Fraction(hi))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_interval_arithmetic_contains_the_exact_result(op):
    f = {"add": I.add, "sub": I.sub, "mul": I.mul, "div": I.div}[op]
    exact = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "div": lambda a, b: a / b}[op]
    xs = _floats(60)
    for a, b in zip(xs, reversed(xs)):
        if op == "div" and b == 0:
            continue
        iv = f((a, a), (b, b))
        assert _contains(iv, exact(Fraction(a), Fraction(b))), (op, a, b, iv)


def test_interval_exact_sum_is_not_widened_and_zero_stays_zero():
    assert I.add((0.0, 0.0), (0.0, 0.0)) == (0.0, 0.0)
    assert I.add((1.0, 1.0), (2.0, 2.0)) == (3.0, 3.0)
    lo, hi = I.add((0.1, 0.1), (0.2, 0.2))  # not exact: widened around the exact 0.3
    assert Fraction(lo) < Fraction(3, 10) < Fraction(hi)


def test_interval_exp_log_enclose_and_overflow_soundly():
    for x in [-800.0, -1.0, 0.0, 0.5, 700.0]:
        lo, hi = I.exp((x, x))
        assert lo <= math.exp(x) <= hi if x < 709 else lo > 0
    assert I.exp((0.0, 1000.0))[1] == math.inf and I.exp((1000.0, 1000.0))[0] > 1e300
    assert I.log((-1.0, 0.0)) == I.WHOLE and I.log((0.0, 1.0))[0] == -math.inf
    assert I.mul((0.0, 0.0), (-math.inf, math.inf)) == (0.0, 0.0)
    assert I.div((1.0, 1.0), (-1.0, 1.0)) == I.WHOLE


# -- expressions ------------------------------------------------------------------------------------
x, l, u = E.var("x"), E.var("l"), E.var("u")


def sig(t):
    return canonical("sigmoid", t)


def test_expressions_cancel_and_simplify():
    assert sig(x) - sig(x) is E.ZERO
    assert E.exp(E.ZERO) is E.ONE and E.log(E.ONE) is E.ZERO
    assert E.cmp(E.scale(u - l, Fraction(1, 2)), False) is E.cmp(u - l, False)  # one scaling
    assert E.not_(E.cmp(x, False)) is E.cmp(-x, True)
    T = sig(l) + (sig(u) - sig(l)) * E.inv(u - l) * (x - l) - sig(x)
    assert E.subst_var(T, "x", l) is E.ZERO  # the chord at its left end


def test_softplus_pieces_are_one_term():
    c = E.cmp(x, False)
    sp = E.ite(c, x, E.ZERO) + E.log(1 + E.exp(-E.ite(c, x, -x)))  # max(x, 0) + log(1 + exp(-|x|))
    on = E.substitute(sp, {c.id: E.TRUE})
    off = E.substitute(sp, {c.id: E.FALSE})
    assert on is off is E.log(1 + E.exp(x))


def test_derivatives_match_finite_differences():
    terms = [sig(x), canonical("tanh", 3 * x - l), E.log(1 + E.exp(x * x)) * l, E.inv(2 + x * x) - E.exp(-x) * u]
    for T in terms:
        D = derivative(T, "x")
        for _ in range(10):
            p = {"x": RNG.uniform(-3, 3), "l": RNG.uniform(-2, 2), "u": RNG.uniform(-2, 2)}
            h = 1e-6
            (f1,) = tape_of([T]).value({**p, "x": p["x"] + h})
            (f0,) = tape_of([T]).value({**p, "x": p["x"] - h})
            (d,) = tape_of([D]).value(p)
            assert d == pytest.approx((f1 - f0) / (2 * h), rel=1e-4, abs=1e-6), (T, p)


def test_affine_decomposition():
    assert affine_in(3 * x + l * u - 2, "x") == (3, l * u - 2)
    assert affine_in(x * l + x, "x") is None and affine_in(E.exp(x) + x, "x") is None


def test_tape_encloses_point_values():
    T = E.log(1 + E.exp(x)) - sig(x) * l + E.inv(1 + x * x)
    tape = tape_of([T])
    for _ in range(50):
        box = {v: tuple(sorted((RNG.uniform(-5, 5), RNG.uniform(-5, 5)))) for v in ("x", "l")}
        (iv,) = tape.enclose(box)
        p = {v: RNG.uniform(*box[v]) for v in box}
        (val,) = tape.value(p)
        assert iv[0] - 1e-12 <= val <= iv[1] + 1e-12


# -- cases -----------------------------------------------------------------------------------------
def _holds(f, p) -> bool:
    if f is E.TRUE:
        return True
    if f is E.FALSE:
        return False
    if isinstance(f, E.Cmp):
        (v,) = tape_of([_noite(f.p, p)]).value(p)
        return v > 0 if f.strict else v >= 0
    if isinstance(f, E.And):
        return all(_holds(g, p) for g in f.parts)
    if isinstance(f, E.Or):
        return any(_holds(g, p) for g in f.parts)
    raise TypeError(f)


def _noite(poly, p):
    """``poly`` with its conditionals resolved at ``p``."""
    while poly.has_ite:
        t = E.ites(poly)[0]
        poly = E.substitute(poly, {t.cond.id: E.TRUE if _holds(_noite_f(t.cond, p), p) else E.FALSE})
    return poly


def _noite_f(f, p):
    if isinstance(f, E.Cmp):
        return E.cmp(_noite(f.p, p), f.strict)
    return f


def test_cases_cover_exactly_the_formula():
    mn = E.ite(E.cmp(u - l, False), l, u)  # min(l, u)
    ab = E.ite(E.cmp(x, False), x, -x)  # |x|
    formulas = [E.cmp(mn - ab + 1, True), E.cmp(E.exp(l) - x, False)]
    cs = [atoms for atoms, _weak in cases(formulas)]
    for _ in range(300):
        p = {"x": RNG.uniform(-3, 3), "l": RNG.uniform(-3, 3), "u": RNG.uniform(-3, 3)}
        want = all(_holds(_noite_f(f, p), p) for f in formulas)
        got = any(all(_holds(a, p) for a in atoms) for atoms in cs)
        assert want == got, p


def test_min_is_rewritten_without_comparing_its_arguments():
    mn = E.ite(E.cmp(u - l, False), l, u)  # min(l, u)
    cs = [atoms for atoms, _weak in cases([E.cmp(mn - x, True)])]
    assert len(cs) == 1 and {str(a) for a in cs[0]} == {str(E.cmp(l - x, True)), str(E.cmp(u - x, True))}


# -- decisions -------------------------------------------------------------------------------------
def _decide(premises, goal, nl, seconds=60.0):
    return delta.decide(premises, goal, nl.order, time.perf_counter() + seconds)


def test_tight_sound_obligation_is_verified():
    """DeepPoly's sigmoid lower line when l <= 0: the line through (l, sigma(l)) with the smaller end
    slope is below sigma on [l, u]; it touches sigma at x = l (the difference is exactly 0 there)."""
    zl, zu, zx = z3.Reals("l u x")
    nl = Nonlinear()
    sl, su, sx = (nl.apply("sigmoid", t) for t in (zl, zu, zx))
    dl, du = sl * (1 - sl), su * (1 - su)
    k = z3.If(dl <= du, dl, du)
    line = sl + k * (zx - zl)
    d = _decide([zl <= zx, zx <= zu, zl <= 0], z3.Not(line <= sx), nl)
    assert d.status == delta.UNSAT, d


def test_convex_chord_obligation_is_verified():
    zl, zu, zx = z3.Reals("l u x")
    nl = Nonlinear()
    el, eu, ex = (nl.apply("exp", t) for t in (zl, zu, zx))
    chord = el + (eu - el) / (zu - zl) * (zx - zl)
    d = _decide([zl <= zx, zx <= zu, zu - zl > 0], z3.Not(ex <= chord), nl)
    assert d.status == delta.UNSAT, d


def test_epsilon_violated_obligation_is_refuted_at_a_real_point():
    """exp(x) >= 1 + x + 1e-6 fails only where exp(x) - 1 - x < 1e-6, i.e. |x| < ~1.4e-3."""
    zx = z3.Real("x")
    nl = Nonlinear()
    ex = nl.apply("exp", zx)
    d = _decide([zx >= -1, zx <= 1], z3.Not(ex >= 1 + zx + z3.RealVal("1/1000000")), nl)
    assert d.status == delta.SAT, d
    p = d.points[0]["x"]
    assert math.expm1(p) - p < 1e-6  # a real violation, checked in float64 away from the tolerance


def test_tail_violation_is_found_on_the_unbounded_line():
    """tanh(x) <= 0.999999 fails only for x > ~7.25: no box was given."""
    zx = z3.Real("x")
    nl = Nonlinear()
    t = nl.apply("tanh", zx)
    d = _decide([], z3.Not(t <= z3.RealVal("0.999999")), nl)
    assert d.status == delta.SAT, d
    assert math.tanh(d.points[0]["x"]) > 0.999999


def test_bounded_function_verified_on_the_unbounded_line():
    zx, zy = z3.Reals("x y")
    nl = Nonlinear()
    s = nl.apply("sigmoid", zx)
    d = _decide([], z3.Not(s < 1), nl)
    assert d.status == delta.UNSAT, d
    e = nl.apply("exp", zy)
    d = _decide([zy <= zx], z3.Not(e >= 1 + zy), nl)  # exp's tangent at 0: tight at y = 0, any y
    assert d.status == delta.UNSAT, d


def test_decision_respects_its_deadline():
    zl, zu, zx = z3.Reals("l u x")
    nl = Nonlinear()
    sl, su, sx = (nl.apply("sigmoid", t) for t in (zl, zu, zx))
    t0 = time.perf_counter()
    d = delta.decide([zl <= zx, zx <= zu], z3.Not(sx * su <= sl + zx * zx), nl.order, t0 + 0.5)
    assert time.perf_counter() - t0 < 5.0
    assert d.status in (delta.UNKNOWN, delta.SAT)


def test_whole_conjunction_step_decides_zids_elu_zonotope_claim(monkeypatch):
    """Step 4: zid's Elu rule has a zonotope claim of 271 cases; z3 on the whole conjunction (its
    conditionals as ``If``) refutes it at once.  The rule is verified, and some obligation was decided by
    that step with no case enumerated; switched off, the same obligations go through the cases."""
    from cfmlir.certifiers import certifier_source
    from cfmlir.verify import VERIFIED, verify_source

    seen = []
    orig = delta.decide

    def spy(*a, **k):
        d = orig(*a, **k)
        seen.append(d)
        return d

    monkeypatch.setattr(delta, "decide", spy)
    text, file = certifier_source("zid")
    (r,) = verify_source(text, file, K=2, M=2, timeout=60, ops={"Elu"})
    assert r.status == VERIFIED, r.line()
    whole = [d for d in seen if d.detail == "the whole conjunction in the abstraction"]
    assert whole and all(d.status == delta.UNSAT and d.cases == 0 for d in whole)
    seen.clear()
    monkeypatch.setattr(delta, "WHOLE_S", 0.0)
    (r,) = verify_source(text, file, K=2, M=2, timeout=60, ops={"Elu"})
    assert r.status == VERIFIED, r.line()
    assert not any(d.detail == "the whole conjunction in the abstraction" for d in seen)
    assert max(d.cases for d in seen) > 100
