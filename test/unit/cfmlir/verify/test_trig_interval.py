"""The prover's interval enclosures of ``sin``, ``cos`` and ``floor`` (cfmlir/verify/interval.py): every real value
of the function on the interval lies in the enclosure -- checked against mpmath at 60 digits at the ends, at the
true extrema ``(k + 1/2) pi`` / ``k pi`` (also far out, where float ``2 pi`` has drifted) and at random inner
points -- and the enclosure is tight (within a few ulp of the true image) on small intervals."""

from __future__ import annotations

import math
import random

import pytest

from cfmlir.verify import interval as I

mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 60


def _true(f, x) -> float:
    return float(getattr(mpmath, f)(mpmath.mpf(x)))


def _extrema(f, lo: float, hi: float) -> list:
    """The true extreme points of f in [lo, hi] (as mpf) with their values."""
    shift = mpmath.mpf(1) / 2 if f == "sin" else 0
    k0 = int(mpmath.floor(mpmath.mpf(lo) / mpmath.pi - shift)) - 1
    out = []
    for k in range(k0, k0 + 8):
        c = (k + shift) * mpmath.pi
        if mpmath.mpf(lo) <= c <= mpmath.mpf(hi):
            out.append(1.0 if k % 2 == 0 else -1.0)
    return out


def _check(f, lo, hi):
    enc = getattr(I, f)((lo, hi))
    rng = random.Random(hash((lo, hi)))
    pts = [lo, hi] + [lo + (hi - lo) * rng.random() for _ in range(20)]
    vals = [_true(f, x) for x in pts] + _extrema(f, lo, hi)
    for v in vals:
        assert enc[0] <= v <= enc[1], (f, lo, hi, enc, v)
    return enc, vals


@pytest.mark.parametrize("f", ["sin", "cos"])
def test_random_intervals_are_enclosed(f):
    rng = random.Random(7)
    for _ in range(300):
        c = rng.choice([1.0, 10.0, 1e3, 1e6, 1e12]) * (2 * rng.random() - 1)
        w = rng.choice([1e-12, 1e-6, 0.01, 1.0, 3.0, 6.9])
        _check(f, c, c + w)


@pytest.mark.parametrize("f,shift", [("sin", 0.5), ("cos", 0.0)])
def test_true_extrema_far_out_are_included(f, shift):
    """The narrowest float interval around the true extremum (k + shift) pi, k up to 10^15 (where k times float pi
    is off by 0.1): the enclosure reaches the extreme value."""
    for k in (0, 1, 7, 10 ** 6 + 1, 3 * 10 ** 9, 10 ** 15, -(10 ** 15) - 1):
        c = float((k + mpmath.mpf(shift)) * mpmath.pi)
        d = max(1e-12, 2 * math.ulp(c))  # c is within half an ulp of the true extremum
        lo, hi = c - d, c + d
        enc, _ = _check(f, lo, hi)
        want = 1.0 if k % 2 == 0 else -1.0
        assert (enc[1] == 1.0) if want > 0 else (enc[0] == -1.0), (k, enc)


@pytest.mark.parametrize("f", ["sin", "cos"])
def test_small_intervals_are_tight(f):
    rng = random.Random(3)
    for _ in range(200):
        lo = 20 * (2 * rng.random() - 1)
        hi = lo + 0.001 * rng.random()
        enc, vals = _check(f, lo, hi)
        assert enc[1] - enc[0] <= (max(vals) - min(vals)) + 1e-14, (lo, hi, enc)


def test_wide_or_unbounded_intervals_are_the_whole_range():
    for a in ((0.0, 7.0), (-math.inf, 0.0), (1.0, math.inf), (-1e300, 1e300)):
        assert I.sin(a) == (-1.0, 1.0) and I.cos(a) == (-1.0, 1.0)


def test_floor_is_exact_at_the_ends():
    assert I.floor((-1.5, 2.0)) == (-2.0, 2.0)
    assert I.floor((0.999999999, 1.0)) == (0.0, 1.0)
    assert I.floor((-math.inf, 3.5)) == (-math.inf, 3.0)
    assert I.floor((2.0 ** 60, 2.0 ** 60)) == (2.0 ** 60, 2.0 ** 60)
