"""Outward-rounded interval arithmetic (cfmlir/verify/interval.py) at the edges of float64: a product
that underflows to 0 or overflows still encloses the exact real product; the log of an interval
reaching below 0 claims nothing.  Each end is checked against exact rational arithmetic."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from cfmlir.verify import interval as I

TINY, HUGE = 1e-200, 1e200


def _contains(iv, q: Fraction) -> bool:
    lo, hi = iv
    return (lo == -math.inf or Fraction(lo) <= q) and (hi == math.inf or q <= Fraction(hi))


@pytest.mark.parametrize("a, b", [(TINY, TINY), (-TINY, TINY), (TINY, -TINY), (-TINY, -TINY),
                                  (5e-324, 0.5), (1e-170, 1e-170)])
def test_a_product_that_underflows_to_zero_still_encloses_the_real_product(a, b):
    assert a * b == 0.0  # float64 rounds the product to 0 ...
    iv = I.mul((a, a), (b, b))
    exact = Fraction(a) * Fraction(b)
    assert exact != 0 and _contains(iv, exact), (a, b, iv)  # ... the enclosure keeps its sign
    assert (iv[0] < 0) if exact < 0 else (iv[1] > 0)


@pytest.mark.parametrize("a, b", [(HUGE, HUGE), (-HUGE, HUGE), (1.7976931348623157e308, 2.0)])
def test_a_product_that_overflows_is_not_claimed_finite(a, b):
    iv = I.mul((a, a), (b, b))
    assert _contains(iv, Fraction(a) * Fraction(b)), iv


def test_a_product_with_an_exact_zero_factor_stays_zero():
    assert I.mul((0.0, 0.0), (-math.inf, math.inf)) == (0.0, 0.0)
    assert I.mul((0.0, 0.0), (TINY, TINY)) == (0.0, 0.0)


def test_powers_of_tiny_intervals_keep_their_sign():
    a = (-9.13294601567651e-178, -8.391074179148738e-178)  # the auditor's find: x^3 was [0, 0]
    iv = I.power(a, 3)
    assert iv[0] < 0
    for x in a:
        assert _contains(iv, Fraction(x) ** 3)


def test_log_of_an_interval_reaching_below_zero_claims_nothing():
    assert I.log((-1.0, 2.0)) == I.WHOLE  # was (-inf, log 2]: a claim about log of negatives
    assert I.log((-1e-300, 1e300)) == I.WHOLE
    assert I.log((-1.0, 0.0)) == I.WHOLE and I.log((0.0, 0.0)) == I.WHOLE
    lo, hi = I.log((0.0, math.e))
    assert lo == -math.inf and 1.0 <= hi < 1.0 + 1e-12
    lo, hi = I.log((1.0, 1.0))
    assert lo <= 0.0 <= hi


def test_random_products_near_the_edges_enclose_the_exact_product():
    rng = random.Random(11)
    for _ in range(3000):
        xs = [rng.choice((1.0, -1.0)) * rng.uniform(1, 2) * 2.0 ** rng.randint(-1100, 1023) for _ in range(4)]
        a, b = sorted(xs[:2]), sorted(xs[2:])
        iv = I.mul(tuple(a), tuple(b))
        for x in a:
            for y in b:
                assert _contains(iv, Fraction(x) * Fraction(y)), (a, b, iv)
