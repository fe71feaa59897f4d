"""cf-verify on issue 27's rules: Neuron_mult (McCormick's planes, the interval product, the product
zonotope) is verified in every shipped certifier (a product is a polynomial: exact in the solver);
unsound variants are refuted with a replayed counterexample."""

from __future__ import annotations

import pytest

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_source
from cfmlir.verify import COUNTEREXAMPLE, VERIFIED, verify_source

EXACT_OPS = {"Neuron_mult"}


@pytest.mark.parametrize("name", list(BASE_CERTIFIERS) + ["deeppoly_2"])
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
]


@pytest.mark.parametrize("mutant", UNSOUND, ids=[f"{m[0]}-{m[3]}-{i}" for i, m in enumerate(UNSOUND)])
def test_unsound_variant_refuted(mutant):
    cert, old, new, op = mutant
    text, file = certifier_source(cert)
    assert text.count(old) == 1, old
    (r,) = verify_source(text.replace(old, new), file, ops={op}, timeout=60)
    assert r.status == COUNTEREXAMPLE, r.line()
    assert "violates" in r.detail
