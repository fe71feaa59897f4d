"""cf-verify on issue 16's activation rules: the piecewise-linear ones (LeakyRelu for every alpha, Abs,
Relu6, HardTanh) are verified in every shipped certifier, IBP's Elu and Softplus and DeepPoly's Elu
too (exp and log are over-approximated, see cfmlir.verify.nonlinear); unsound variants are refuted
with a replayed counterexample."""

from __future__ import annotations

import pytest

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_source
from cfmlir.verify import COUNTEREXAMPLE, VERIFIED, verify_source

PIECEWISE_LINEAR = {"LeakyRelu", "Abs", "Relu6", "HardTanh"}


@pytest.mark.parametrize("name", list(BASE_CERTIFIERS) + ["deeppoly_2"])
def test_piecewise_linear_activation_rules_verified(name):
    results = verify_source(*certifier_source(name), K=2, M=2, timeout=60, ops=PIECEWISE_LINEAR)
    assert sorted(r.op for r in results) == sorted(PIECEWISE_LINEAR)
    assert [r.line() for r in results if r.status != VERIFIED] == []


@pytest.mark.parametrize("name, ops", [("ibp", {"Elu", "Softplus"}), ("deeppoly", {"Elu"})])
def test_exp_log_rules_verified(name, ops):
    results = verify_source(*certifier_source(name), K=2, M=2, timeout=60, ops=ops)
    assert sorted(r.op for r in results) == sorted(ops) and [r.line() for r in results if r.status != VERIFIED] == []


#: (certifier, old text, new text, rule): each breaks a shape constraint for some input.
UNSOUND = [
    # the monotone image: wrong for a negative alpha (V-shaped) -- the reason for the third point
    ("ibp", "func lk_lo(Float a, Float l, Float u) = min(min(leaky(a, l), leaky(a, u)), leaky(a, at0(l, u)));",
     "func lk_lo(Float a, Float l, Float u) = leaky(a, l);", "LeakyRelu"),
    ("ibp", "func elu_lo(Float a, Float l, Float u) = min(min(elu(a, l), elu(a, u)), elu(a, at0(l, u)));",
     "func elu_lo(Float a, Float l, Float u) = elu(a, l);", "Elu"),
    # the convex-side lines taken for every alpha (concave for alpha > 1)
    ("deeppoly", "func lk_lower(Float a, Neuron n) = a <= 1.0 ?", "func lk_lower(Float a, Neuron n) = a <= 100.0 ?", "LeakyRelu"),
    # the lower line through (l, f(l)) instead of the corner (max(l, a), .)
    ("deeppoly", "line_lower(n, cl_lo_k(a, b, n[l], n[u]), max(n[l], a), clip(a, b, max(n[l], a)))",
     "line_lower(n, cl_lo_k(a, b, n[l], n[u]), n[l], clip(a, b, n[l]))", "Relu6"),
    # the zonotope's offset range forgets the kinks
    ("deepz", "max(cl_g(a, b, k, clip(l, u, a)), cl_g(a, b, k, clip(l, u, b))));",
     "cl_g(a, b, k, l));", "HardTanh"),
    ("skippoly", "func line_lower(Neuron n, Float k, Float x0, Float y0) = y0 - k * x0 + replace_lower(n, k);",
     "func line_lower(Neuron n, Float k, Float x0, Float y0) = y0 - k * x0 + k * n[L];", "Abs"),
]


@pytest.mark.parametrize("mutant", UNSOUND, ids=[f"{m[0]}-{m[3]}-{i}" for i, m in enumerate(UNSOUND)])
def test_unsound_activation_variant_refuted(mutant):
    cert, old, new, op = mutant
    text, file = certifier_source(cert)
    assert text.count(old) == 1, old
    (r,) = verify_source(text.replace(old, new), file, ops={op}, timeout=60)
    assert r.status == COUNTEREXAMPLE, r.line()
    assert "violates" in r.detail
