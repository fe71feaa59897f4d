"""The sin/cos extremum lemma (cfmlir/verify/trig_extrema.py): true of the real functions (mpmath at 60
digits, near 0 and many periods out), its z3 encoding decides small cases both ways, and the prover uses
it (IBP's Sin rule is verified with it and not without it)."""

from __future__ import annotations

import random
from fractions import Fraction
from types import SimpleNamespace

import pytest
import z3

from cfmlir.certifiers import certifier_source
from cfmlir.verify import VERIFIED, trig_chord, trig_extrema, verify_source

mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 60


def _extremum_k(offset: Fraction, a, b):
    """An integer k with (2k + offset) pi strictly inside (a, b) (mpmath), else None."""
    k = int(mpmath.floor((a / mpmath.pi - offset) / 2)) - 1
    while (2 * k + offset) * mpmath.pi < b:
        if (2 * k + offset) * mpmath.pi > a:
            return k
        k += 1
    return None


@pytest.mark.parametrize("f", sorted(trig_extrema.EXTREMA))
@pytest.mark.parametrize("centre", [0.0, 1234.5, -98765.4321, 999999.0, -3.0e12])
def test_lemma_holds_for_the_real_functions(f, centre):
    """Whenever f(t) is below (above) both f(a) and f(b) for a <= t <= b, a minimum (maximum)
    (2k + offset) pi lies in (a, b), and the z3 encoding with that k holds (PI_LO/PI_HI)."""
    fn = getattr(mpmath, f)
    lo_off, hi_off = trig_extrema.EXTREMA[f]
    rng = random.Random(f"{f}{centre}")
    hits = 0
    for _ in range(300):
        a = mpmath.mpf(centre) + mpmath.mpf(rng.uniform(-10, 10))
        b = a + mpmath.mpf(rng.choice([1e-3, 0.1, 1.0, 3.0, 8.0])) * rng.random()
        for t in (a + (b - a) * rng.random() for _ in range(5)):
            fa, ft, fb = fn(a), fn(t), fn(b)
            for below, off in ((ft < fa and ft < fb, lo_off), (ft > fa and ft > fb, hi_off)):
                if not below:
                    continue
                hits += 1
                k = _extremum_k(off, a, b)
                assert k is not None, (f, a, t, b)
                ra, rb = (z3.RealVal(str(x)) for x in (a, b))
                enc = z3.simplify(trig_extrema.extremum_between(z3.RealVal(k), off, ra, rb))
                assert z3.is_true(enc), (f, k, a, b)
    assert hits >= 50  # (the lemma's premise occurred: the test is not vacuous)


def test_floor_maximality_for_integers():
    """The fact added with each witness k: k <= t implies k <= floor(t) (for the integer k)."""
    rng = random.Random(7)
    for _ in range(1000):
        t = Fraction(rng.randint(-10**9, 10**9), rng.randint(1, 1000))
        for k in range(int(t) - 3, int(t) + 4):
            if k <= t:
                assert k <= (t.numerator // t.denominator)


def _sin_case(lo: Fraction, hi: Fraction):
    """l <= x <= u in [lo, hi], sin x below sin l and sin u: sat iff a minimum of sin is in (lo, hi).
    (The witnesses k are z3 integers here; in the prover they are reals tied to the rule's floor.)"""
    names = ("l", "x", "u")
    apps = [SimpleNamespace(f="sin", id=i) for i in range(3)]
    args = [z3.Real(n) for n in names]
    vals = [z3.Real(f"sin_{n}") for n in names]
    var = lambda a: vals[a.id]  # noqa: E731
    arg = lambda a: args[a.id]  # noqa: E731
    ks = iter(range(100))
    s = z3.Solver()
    s.add(*trig_extrema.lemmas(apps, var, arg, lambda: z3.ToReal(z3.Int(f"k{next(ks)}"))))
    l, x, u = args
    s.add(l >= z3.RealVal(lo), u <= z3.RealVal(hi), l <= x, x <= u, vals[1] < vals[0], vals[1] < vals[2])
    return s.check()


@pytest.mark.parametrize("far", [0, 100000, -100000])
def test_encoding_decides_both_ways(far):
    """Without a minimum (2k - 1/2) pi in [lo, hi] the case is unsat; with one, sat (the lemma does not
    refute a true minimum).  ``far`` periods out, with 2 pi as a 20-digit rational (error 1e-15)."""
    shift = far * Fraction(62831853071795864769, 10**19)
    assert _sin_case(shift + Fraction(1, 10), shift + 3) == z3.unsat  # -pi/2 < 0.1 < 3 < 3 pi / 2
    assert _sin_case(shift + 4, shift + 5) == z3.sat  # 3 pi / 2 = 4.71 inside


def test_the_prover_uses_the_lemma(monkeypatch):
    """IBP's Sin rule: verified with the lemma (the per-case query here; trig_chord's whole-obligation
    query states it too, and is switched off for this test); without it the no-minimum case stays open."""
    text, file = certifier_source("ibp")
    monkeypatch.setattr(trig_chord, "unsat", lambda *a, **k: False)
    [r] = verify_source(text, file, K=2, M=2, timeout=30.0, ops={"Sin"})
    assert r.status == VERIFIED, r.line()
    monkeypatch.setattr(trig_extrema, "unsat", lambda *a, **k: False)
    [r] = verify_source(text, file, K=2, M=2, timeout=2.0, ops={"Sin"})
    assert r.status != VERIFIED


def test_degenerate_interval_and_linear_atoms_only():
    """l = u forces sin x = sin l (the equality fact); a nonlinear atom is dropped (linear() false),
    which only weakens the case: the rest is still refuted, and the query stays linear."""
    from cfmlir.verify import expr as E

    l, x, u = (E.var(n) for n in ("l", "x", "u"))
    sin = lambda p: E.fn("sin", p)  # noqa: E731
    box = [E.ge(x, l), E.ge(u, x), E.ge(l, u)]
    assert trig_extrema.unsat(box + [E.gt(sin(l), sin(x)), E.gt(sin(u), E.const(-2))])
    assert not trig_extrema.unsat([E.ge(x, l), E.ge(u, x), E.gt(sin(l), sin(x)), E.gt(sin(u), E.const(-2))])
    product = E.gt(E.mul(l, u), E.const(5))
    assert not trig_extrema.linear(product.p) and trig_extrema.linear(E.gt(sin(E.add(l, u)), x).p)
    assert trig_extrema.unsat(box + [E.gt(sin(l), sin(x)), product])
