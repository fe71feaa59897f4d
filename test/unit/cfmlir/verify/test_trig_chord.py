"""The sin/cos chord lemma (cfmlir/verify/trig_chord.py): true of the real functions (mpmath, near 0
and far out), its whole-obligation query proves the bands the shipped rules use and refuses the
bands that are too narrow, and the prover uses it (DeepPoly's Sin band is verified with it and not
without it)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from cfmlir.certifiers import certifier_source
from cfmlir.verify import VERIFIED, delta, trig_chord, verify_source
from cfmlir.verify import expr as E
from cfmlir.verify.trig_extrema import EXTREMA

mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 50


def _extremum_inside(f, a, b) -> bool:
    """Some extremum (k + 1/2) pi (sin) / k pi (cos) strictly inside (a, b) (mpmath)."""
    shift = mpmath.mpf(1) / 2 if f == "sin" else 0
    k = mpmath.floor(a / mpmath.pi - shift)
    while (k + shift) * mpmath.pi < b:
        if (k + shift) * mpmath.pi > a:
            return True
        k += 1
    return False


@pytest.mark.parametrize("f", sorted(EXTREMA))
@pytest.mark.parametrize("centre", [0.0, 2.5, -777.25, 999999.5])
def test_lemma_holds_for_the_real_functions(f, centre):
    """(C1) |f(t) - chord(t)| <= (b - a)^2 / 8 always; (C2) <= max(|f(a)|, |f(b)|) (b - a)^2 / 8 when
    no extremum lies inside (a, b) -- and (C2)'s bound is beaten when one does (the premise matters)."""
    fn = getattr(mpmath, f)
    rng = random.Random(f"{f}{centre}")
    needed = 0
    for _ in range(400):
        a = mpmath.mpf(centre) + mpmath.mpf(rng.uniform(-4, 4))
        b = a + mpmath.mpf(rng.choice([1e-3, 0.3, 1.0, 2.0, 3.0])) * (mpmath.mpf(rng.random()) + mpmath.mpf(1) / 100)
        fa, fb = fn(a), fn(b)
        w2 = (b - a) ** 2 / 8
        m = max(abs(fa), abs(fb))
        inside = _extremum_inside(f, a, b)
        for s in (rng.random() for _ in range(7)):
            t = a + (b - a) * s
            err = abs(fn(t) - (fa + (fb - fa) / (b - a) * (t - a)))
            assert err <= w2 * (1 + mpmath.mpf(10) ** -40), (f, a, t, b)
            if not inside:
                assert err <= m * w2 * (1 + mpmath.mpf(10) ** -40) + mpmath.mpf(10) ** -45, (f, a, t, b)
            elif err > m * w2:
                needed += 1
    assert needed > 0  # (an extremum inside can break the endpoint bound: C2 needs its premise)


def _band_claim(f: str, band) -> list:
    """``l <= x <= u``, ``l < u`` and the negated claim ``chord(x) - band > f(x)`` (a counterexample
    to the lower line ``chord - band``)."""
    l, u, x = E.var("l"), E.var("u"), E.var("x")
    fl, fu, fx = E.fn(f, l), E.fn(f, u), E.fn(f, x)
    chord = E.add(fl, E.mul(E.sub(fu, fl), E.inv(E.sub(u, l)), E.sub(x, l)))
    return [E.ge(x, l), E.ge(u, x), E.gt(u, l), E.gt(E.sub(chord, band(l, u, fl, fu)), fx)]


def _w2(l, u, *_ends):
    return E.scale(E.power(E.sub(u, l), 2), Fraction(1, 8))


def _max_abs(p, q):
    ab = lambda r: E.ite(E.ge(r, E.const(0)), r, E.neg(r))  # noqa: E731
    return E.ite(E.ge(ab(p), ab(q)), ab(p), ab(q))


@pytest.mark.parametrize("f", sorted(EXTREMA))
def test_the_sound_band_is_proved(f):
    """The M = 1 band is proved in one query.  (The endpoint band needs the rule's ``has_phase``,
    whose ``floor`` makes the extremum's ``k`` an integer: DeepPoly's test below.)"""
    assert trig_chord.unsat(_band_claim(f, _w2), timeout=30)


@pytest.mark.parametrize("f", sorted(EXTREMA))
def test_the_unsound_bands_are_not_proved(f):
    """Half the M = 1 band, and the endpoint band where an extremum may lie inside [l, u], are false
    claims: the query must not answer unsat (each is beaten by a real point, e.g. sin on [-2, 2] at 0.6
    for the half band, sin on [0.5, 2.6] at 1.6 for the endpoint band)."""
    half = lambda l, u, fl, fu: E.scale(_w2(l, u), Fraction(1, 2))  # noqa: E731
    assert not trig_chord.unsat(_band_claim(f, half), timeout=30)
    ends = lambda l, u, fl, fu: E.mul(_w2(l, u), _max_abs(fl, fu))  # noqa: E731
    assert not trig_chord.unsat(_band_claim(f, ends), timeout=30)


def test_deeppoly_sin_band_needs_the_lemma(monkeypatch):
    """DeepPoly's Sin rule is verified with the chord lemma and not without it (its cases run out of
    time: more than 3000 per band obligation)."""
    text, file = certifier_source("deeppoly")
    (r,) = verify_source(text, file, K=2, M=2, timeout=60, ops={"Sin"})
    assert r.status == VERIFIED, r.line()
    monkeypatch.setattr(delta.trig_chord, "unsat", lambda formulas, timeout=5.0: False)
    (r,) = verify_source(text, file, K=2, M=2, timeout=10, ops={"Sin"})
    assert r.status != VERIFIED


def test_the_proof_does_not_depend_on_which_atoms_were_made_first():
    """The expressions are hash-consed process-wide, so an earlier proof fixes the ids (and the order)
    of ``sin(l)``, ``sin(u)``, ``x``...  A lemma stated for one orientation of a pair by id lost the
    band facts when ``sin(u)`` was made before ``sin(l)`` (the gate's order: DeepPoly's Sin ``unknown``).
    A fresh process makes them in the reverse order first."""
    import subprocess
    import sys

    code = (
        "from cfmlir.verify import expr as E\n"
        "[E.fn(f, E.var(v)) for v in ('x_p', 'u_p', 'l_p') for f in ('sin', 'cos', 'floor')]\n"
        "from cfmlir.certifiers import certifier_source\n"
        "from cfmlir.verify import verify_source\n"
        "(r,) = verify_source(*certifier_source('deeppoly'), K=2, M=2, timeout=60, ops={'Sin'})\n"
        "print(r.status)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[-1] == VERIFIED, p.stdout
