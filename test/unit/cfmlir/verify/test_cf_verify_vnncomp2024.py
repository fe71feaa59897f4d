"""cf-verify on issue 27's rules: Neuron_mult (McCormick's planes, the interval product, the product
zonotope; a polynomial: exact in the solver), Sign (exact), Exp (exp's facts of
cfmlir.verify.nonlinear), Floor (z3's integer part, mixed integer-real arithmetic) and Reciprocal
(its branch across 0 states infinite bounds, ``-1.0 / 0.0``: cfmlir.verify.infinity) are verified in
every shipped certifier; Sin and Cos are encoded (cfmlir.verify.nonlinear, the delta procedure's interval
sin/cos); IBP's sound Sin and Cos are proved (the extremum lemma, cfmlir.verify.trig_extrema), the
chord bands of the others with the chord lemma (cfmlir.verify.trig_chord).  Unsound variants of
each, Sin and Cos included, are refuted with a replayed counterexample."""

from __future__ import annotations

import pytest

from cfmlir.certifiers import BASE_CERTIFIERS, PARAMETRIC_CERTIFIERS, certifier_source
from cfmlir.verify import VERIFIED, verify_source
from cftest.mutants import assert_refuted

EXACT_OPS = {"Neuron_mult", "Sign", "Exp", "Floor", "Reciprocal"}


@pytest.mark.parametrize("name", list(BASE_CERTIFIERS) + ["deeppoly_2"] + list(PARAMETRIC_CERTIFIERS))
def test_exact_rules_verified(name):
    results = verify_source(*certifier_source(name), K=2, M=2, timeout=60, ops=EXACT_OPS)
    assert sorted(r.op for r in results) == sorted(EXACT_OPS)
    assert [r.line() for r in results if r.status != VERIFIED] == []


#: (certifier, old text, new text, rule): each breaks a shape constraint for some input.
UNSOUND = [
    # the upper plane with the lower plane's corner
    ("crown_ibp", "func mc_upper(Neuron x, Neuron y) = y[u] * x + x[l] * y - x[l] * y[u];",
     "func mc_upper(Neuron x, Neuron y) = y[l] * x + x[l] * y - x[l] * y[l];", "Neuron_mult"),
    # the interval product from two corners only (wrong when an operand changes sign)
    ("ibp", "func mc_lo(Float a, Float b, Float c, Float d) = min(min(a * c, a * d), min(b * c, b * d));",
     "func mc_lo(Float a, Float b, Float c, Float d) = min(a * c, b * d);", "Neuron_mult"),
    # half the product zonotope's error term
    ("deepz", "(((b - a) / 2.0) * ((d - c) / 2.0)) * sym;", "(((b - a) / 2.0) * ((d - c) / 4.0)) * sym;", "Neuron_mult"),
    # Sign's image without its zero
    ("ibp", "func sgn(Float x) = x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);", "func sgn(Float x) = x > 0.0 ? 1.0 : -1.0;", "Sign"),
    # the chord below a convex function
    ("deeppoly", "func exp_lower(Neuron n) = line_lower(n, exp(ex_t(n)), ex_t(n), exp(ex_t(n)));",
     "func exp_lower(Neuron n) = line_lower(n, ex_k(n[l], n[u]), n[l], exp(n[l]));", "Exp"),
    # Floor's image one step too high at the lower end
    ("ibp", "Floor -> (floor(prev[l]), floor(prev[u]));", "Floor -> (floor(prev[l]) + 1.0, floor(prev[u]));", "Floor"),
    # Floor's lower line x - 1 + 1/2 (floor(x) > x - 1 only)
    ("deeppoly", "line_lower(n, 1.0, 0.0, -1.0) : floor(n[l]);", "line_lower(n, 1.0, 0.0, -0.5) : floor(n[l]);", "Floor"),
    # Reciprocal's image with its ends swapped (1/x decreases)
    ("ibp", "func rc_lo(Float l, Float u) = rc_ok(l, u) ? 1.0 / u : -1.0 / 0.0;",
     "func rc_lo(Float l, Float u) = rc_ok(l, u) ? 1.0 / l : -1.0 / 0.0;", "Reciprocal"),
    # Reciprocal across 0 bounded below by 0 instead of -inf
    ("ibp", "func rc_lo(Float l, Float u) = rc_ok(l, u) ? 1.0 / u : -1.0 / 0.0;",
     "func rc_lo(Float l, Float u) = rc_ok(l, u) ? 1.0 / u : 0.0;", "Reciprocal"),
    # the chord of a convex 1/x used below it (l > 0)
    ("deeppoly", "func rc_lower(Neuron n) = n[l] > 0.0 ? line_lower(n, -1.0 / (mid(n) * mid(n)), mid(n), 1.0 / mid(n))",
     "func rc_lower(Neuron n) = n[l] > 0.0 ? line_lower(n, -1.0 / (n[l] * n[u]), n[l], 1.0 / n[l])", "Reciprocal"),
    # Sin's upper bound tested for a minimum (-pi/2) instead of a maximum: misses the 1 at pi/2
    ("ibp", "func sin_hi(Float l, Float u) = has_phase(1.5707963267948966, l, u)",
     "func sin_hi(Float l, Float u) = has_phase(-1.5707963267948966, l, u)", "Sin"),
    # Cos's upper bound tested for the phase pi (a minimum) instead of 0
    ("ibp", "func cos_hi(Float l, Float u) = has_phase(0.0, l, u)", "func cos_hi(Float l, Float u) = has_phase(3.141592653589793, l, u)", "Cos"),
    # Sin's lower bound at the lower end only (without the min of both ends)
    ("ibp", "? -1.0 : min(sin(l), sin(u));", "? -1.0 : sin(l);", "Sin"),
    # Sin's lower bound shifted up by 0.01
    ("ibp", "? -1.0 : min(sin(l), sin(u));", "? -1.0 : min(sin(l), sin(u)) + 0.01;", "Sin"),
    # Cos's upper bound shifted down by 0.01
    ("ibp", "? 1.0 : max(cos(l), cos(u));", "? 1.0 : max(cos(l), cos(u)) - 0.01;", "Cos"),
]


@pytest.mark.parametrize("mutant", UNSOUND, ids=[f"{m[0]}-{m[3]}-{i}" for i, m in enumerate(UNSOUND)])
def test_unsound_variant_refuted(mutant):
    assert_refuted(*mutant)
