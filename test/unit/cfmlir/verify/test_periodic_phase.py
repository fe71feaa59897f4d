"""The Sin/Cos rules' ``has_phase`` (is an extremum p + 2 pi k of the function in [l, u]?) over the
reals: the spec writes 2 pi and the phases as rationals, so the k-th computed phase drifts from the
true one.  The earlier formula missed sin's maximum at pi/2 + 2 pi 10^15 in an interval of +-0.05
around it (upper bound 0.99875 < 1); the shipped one (a margin of 1e-8, the trivial image beyond
|x| = 1e6) finds every true extremum.  Checked in exact rational arithmetic against pi to 60 digits
(cf-verify has no trigonometry yet, so this formula is checked here on its own)."""

from __future__ import annotations

import math
import random
from fractions import Fraction as F

import pytest

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_source

C = F("6.283185307179586")
M = F("0.00000001")
PHASES = {"sin max": F("1.5707963267948966"), "sin min": F("-1.5707963267948966"),
          "cos max": F(0), "cos min": F("3.141592653589793")}
PI = F("3.141592653589793238462643383279502884197169399375105820974944")  # pi to 60 digits (error < 1e-60)
TRUE = {"sin max": PI / 2, "sin min": -PI / 2, "cos max": F(0), "cos min": PI}
SHIPPED = ("func has_phase(Float p, Float l, Float u) = (max(abs(l), abs(u)) > 1000000.0) or "
           "(p + 6.283185307179586 * floor((u + 0.00000001 - p) / 6.283185307179586) >= l - 0.00000001);")


def old_has_phase(p, l, u) -> bool:
    return p + C * math.floor((u - p) / C) >= l


def has_phase(p, l, u) -> bool:
    return max(abs(l), abs(u)) > 1000000 or p + C * math.floor((u + M - p) / C) >= l - M


@pytest.mark.parametrize("name", list(BASE_CERTIFIERS) + ["deeppoly_2"])
def test_every_certifier_ships_the_checked_formula(name):
    text = certifier_source(name)[0]
    if "has_phase" in text:
        assert SHIPPED in text


def test_the_earlier_formula_misses_a_true_maximum_far_out():
    q = PI / 2 + 2 * PI * 10 ** 15  # sin(q) = 1
    l, u = q - F("0.05"), q + F("0.05")
    assert not old_has_phase(PHASES["sin max"], l, u)  # so sin_hi = max(sin l, sin u) = cos(0.05) < 1
    assert has_phase(PHASES["sin max"], l, u)


@pytest.mark.parametrize("kind", list(PHASES))
def test_every_true_extremum_in_the_interval_is_found(kind):
    rng = random.Random(sum(map(ord, kind)))
    p, true = PHASES[kind], TRUE[kind]
    for _ in range(3000):
        k = rng.choice([0, 1, -1, rng.randint(-160000, 160000)])
        q = true + 2 * PI * k  # within 1e-54 of a true extremum: the margins below are far larger
        a, b = (F(rng.choice([0, 1e-30, 1e-12, 1e-6, rng.random()])) for _ in range(2))
        l, u = q - a - F(1, 10**50), q + b + F(1, 10**50)
        if max(abs(l), abs(u)) > 1000000:
            continue
        assert has_phase(p, l, u), (kind, k, float(l), float(u))
