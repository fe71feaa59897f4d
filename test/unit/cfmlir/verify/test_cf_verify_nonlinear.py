"""cf-verify refutes unsound S-shaped and exponential rules within the default time limit, each with a
counterexample replayed through the reference interpreter (float64, checked in exact arithmetic)."""

from __future__ import annotations

import pytest

from cfmlir.certifiers import certifier_source
from cfmlir.verify import COUNTEREXAMPLE, verify_source

DEFAULT_TIMEOUT_S = 20.0  # cf-verify's default --timeout

#: (id, certifier, old text, new text, rule): unsound S-curve / exponential rules.
NONLINEAR_UNSOUND = [
    # a sigmoid tangent taken at the wrong end: DeepPoly's upper line on the convex side (u <= 0)
    # is the chord; the tangent at u lies below sigma there
    ("sigmoid-tangent-at-wrong-end", "deeppoly",
     "func sig_upper(Neuron n) = n[u] <= 0.0 ? sigma(n[u]) + sig_chord(n[l], n[u]) * (n - n[u])",
     "func sig_upper(Neuron n) = n[u] <= 0.0 ? sigma(n[u]) + dsigma(n[u]) * (n - n[u])", "Sigmoid"),
    # a tanh chord used on the wrong side: the chord from l as a lower line on the convex side (u <= 0)
    ("tanh-chord-on-convex-side", "deeppoly",
     "func tanh_lower(Neuron n) = n[l] > 0.0 ?", "func tanh_lower(Neuron n) = n[u] <= 0.0 ?", "Tanh"),
    # a softplus chord shifted down
    ("softplus-chord-shifted-down", "deeppoly",
     "func sp_upper(Neuron n) = line_upper(n, sp_chord(n[l], n[u]), n[l], softplus(n[l]));",
     "func sp_upper(Neuron n) = line_upper(n, sp_chord(n[l], n[u]), n[l], softplus(n[l]) - 0.01);", "Softplus"),
    # an Elu lower tangent too steep: the slope at u through the midpoint
    ("elu-lower-tangent-too-steep", "deeppoly",
     "line_lower(n, delu(a, mid(n)), mid(n), elu(a, mid(n)))",
     "line_lower(n, delu(a, n[u]), mid(n), elu(a, mid(n)))", "Elu"),
    # a dropped min(): the crossing branch's slope is the derivative at l, not the smaller end slope
    ("sigmoid-dropped-min", "deeppoly",
     ": sigma(n[l]) + min(dsigma(n[l]), dsigma(n[u])) * (n - n[l]);", ": sigma(n[l]) + dsigma(n[l]) * (n - n[l]);", "Sigmoid"),
    # an exp-based rule off by a constant: IBP's Elu lower bound raised by 0.001
    ("elu-interval-off-by-constant", "ibp",
     "func elu_lo(Float a, Float l, Float u) = min(min(elu(a, l), elu(a, u)), elu(a, at0(l, u)));",
     "func elu_lo(Float a, Float l, Float u) = min(min(elu(a, l), elu(a, u)), elu(a, at0(l, u))) + 0.001;", "Elu"),
    # DeepZ's sigmoid zonotope with half the radius
    ("sigmoid-zonotope-half-radius", "deepz",
     "func sig_z(Float l, Float u, SymExp z) = min(dsigma(l), dsigma(u)) * z + 0.5 * (sigma(u) + sigma(l) - min(dsigma(l), dsigma(u)) * (u + l)) + (0.5 *",
     "func sig_z(Float l, Float u, SymExp z) = min(dsigma(l), dsigma(u)) * z + 0.5 * (sigma(u) + sigma(l) - min(dsigma(l), dsigma(u)) * (u + l)) + (0.25 *", "Sigmoid"),
    # a softplus tangent with the slope of exp instead of sigmoid
    ("softplus-tangent-wrong-slope", "deeppoly",
     "func sp_lower(Neuron n) = line_lower(n, sigma(mid(n)), mid(n), softplus(mid(n)));",
     "func sp_lower(Neuron n) = line_lower(n, exp(mid(n)), mid(n), softplus(mid(n)));", "Softplus"),
]


@pytest.mark.parametrize("mutant", NONLINEAR_UNSOUND, ids=[m[0] for m in NONLINEAR_UNSOUND])
def test_unsound_nonlinear_rule_refuted_with_replayed_counterexample(mutant):
    _name, cert, old, new, op = mutant
    text, file = certifier_source(cert)
    assert text.count(old) == 1, old
    (r,) = verify_source(text.replace(old, new), file, ops={op}, timeout=DEFAULT_TIMEOUT_S)
    assert r.status == COUNTEREXAMPLE, r.line()
    assert r.detail.startswith("violates '"), r.detail  # the interpreter's replay names the constraint
    assert r.extra["excess"] > 0


def test_at_least_six_mutants():
    assert len(NONLINEAR_UNSOUND) >= 6
