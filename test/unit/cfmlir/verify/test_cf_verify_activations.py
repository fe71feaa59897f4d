"""cf-verify on issue 16's activation rules: unsound variants are refuted with a replayed
counterexample (every shipped rule verified: test_shipped_proved.py)."""

from __future__ import annotations

import pytest

from cftest.mutants import assert_refuted

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
    assert_refuted(*mutant)
