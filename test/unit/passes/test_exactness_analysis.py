"""The exactness analysis (``--exactness``, :mod:`cfmlir.passes.exactness_analysis`): which member values
a rule computes without rounding, and what the shipped certifiers get."""

from __future__ import annotations

import pytest

from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
from cfmlir.passes.exactness_analysis import representable
from cfmlir.passes.pipeline import DEFAULT_PIPELINE, NO_REWRITE_PIPELINE

SHAPE = """def Shape as (Float l, Float u, PolyExp L, PolyExp U){[(curr[l]<=curr),(curr[u]>=curr),(curr[L]<=curr),(curr[U]>=curr)]};
func simplify_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[l]) : (coeff * n[u]);
func simplify_upper(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[u]) : (coeff * n[l]);
func priority(Neuron n) = n[layer];
func stop(Neuron n) = true;
transformer t{
    Affine -> ((prev.dot(curr[weight]) + curr[bias]).map(simplify_lower), (prev.dot(curr[weight]) + curr[bias]).map(simplify_upper), prev.dot(curr[weight]) + curr[bias], prev.dot(curr[weight]) + curr[bias]);
    Relu -> (RULE);
}
flow(forward, priority, stop, t);
"""


def tags(rule: str, rewrite: bool = True) -> dict:
    cert = compile_certifier(SHAPE.replace("RULE", rule), "exactness_case.cf", pipeline_for(rewrite), use_cache=False)
    return cert.exact["Relu"]


#: (rule, tags of l, u, L, U): one case per rule of the analysis, its exact and its inexact side
CASES = [
    # clamps at 0 (a ternary the rewrites turn into a clamp, a max): transparent; at 0.5 exact, at 0.1 not
    ("(prev[l] >= 0 ? prev[l] : 0), max(prev[u], 0.0), prev, prev", "transparent 1.0", "transparent 1.0", "unit", "unit"),
    ("max(prev[l], 0.5), min(prev[u], 6.0), 0.0, 0.0", "exact 1.0 0.5", "exact 1.0 6.0", "unit", "unit"),
    ("max(prev[l], 0.1), min(prev[u], 0.1), 0.0, 0.0", "inexact", "inexact", "unit", "unit"),
    # products: by a power of two exact (transparent for a positive one), by 0.3 not
    ("prev[l] * 0.5, prev[u] * 4.0, prev, prev", "transparent 0.5", "transparent 4.0", "unit", "unit"),
    ("prev[l] * 0.3, prev[u] * 0.3, prev, prev", "inexact", "inexact", "unit", "unit"),
    ("prev[u] * (-2.0), prev[l] / 4.0, prev, prev", "exact 2.0 0.0", "exact 0.25 0.0", "unit", "unit"),
    # negation and copies of the other role: exact, not transparent
    ("-prev[u], -prev[l], prev, prev", "exact 1.0 0.0", "exact 1.0 0.0", "unit", "unit"),
    ("prev[u], prev[u], prev, prev", "exact 1.0 0.0", "transparent 1.0", "unit", "unit"),
    # selections: under an exact condition (comparisons of stored bounds, of their sum with 0) exact,
    # under a rounded one (a product compared with 0) not
    ("(prev[l] + prev[u] >= 0.0) ? prev[l] : 0.0, prev[u], (prev[l] + prev[u] >= 0.0) ? prev : 0.0, prev",
     "transparent 1.0", "transparent 1.0", "unit", "unit"),
    ("(prev[l] * prev[u] >= 0.0) ? prev[l] : 0.0, prev[u], (prev[l] * prev[u] >= 0.0) ? prev : 0.0, prev",
     "inexact", "transparent 1.0", "inexact", "unit"),
    ("(prev[l] > 0.1) ? prev[l] : 0.0, prev[u], prev, prev", "inexact", "transparent 1.0", "unit", "unit"),
    # sums and quotients round
    ("prev[l] + prev[u], prev[u] - prev[l], prev, prev", "inexact", "inexact", "unit", "unit"),
    ("prev[l] / 3.0, prev[u], prev, prev", "inexact", "transparent 1.0", "unit", "unit"),
    # PolyExps: a stored bound times a unit coefficient is exact, a quotient times it is not
    ("prev[l], prev[u], prev[l] * prev, (prev[u] / (prev[u] - prev[l])) * prev", "transparent 1.0", "transparent 1.0",
     "exact", "inexact"),
]


@pytest.mark.parametrize("rule,l,u,L,U", CASES)
def test_each_rule_tags_exact_and_inexact_values(rule, l, u, L, U):
    got = tags(rule)
    assert (got["l"], got["u"], got["L"], got["U"]) == (l, u, L, U)


def test_without_rewrites_a_ternary_of_a_stored_bound_and_0_is_transparent():
    got = tags("(prev[l] >= 0 ? prev[l] : 0), (prev[u] >= 0 ? prev[u] : 0), prev, prev", rewrite=False)
    assert got["l"] == got["u"] == "transparent 1.0"


def test_a_rule_that_substitutes_is_marked():
    assert tags("prev[l], prev[u], prev, prev").get("@substitutes") is None
    cert = compile_certifier(*load_certifier_source("deeppoly"), pipeline_for(True))
    assert cert.exact["Affine"]["@substitutes"] == "yes" and "@substitutes" not in cert.exact["Relu"]


@pytest.mark.parametrize("name", ["ibp", "crown_ibp", "deeppoly"])
def test_shipped_relu_bounds_are_transparent_affine_bounds_inexact(name):
    exact = compile_certifier(*load_certifier_source(name), pipeline_for(True)).exact
    assert exact["Relu"]["l"] == exact["Relu"]["u"] == "transparent 1.0"
    assert exact["Affine"]["l"] == exact["Affine"]["u"] == "inexact"
    assert exact["Maxpool"]["l"] == exact["Maxpool"]["u"] == "exact 1.0 0.0"  # a max over the window
    assert exact["Sigmoid"]["l"] == "inexact"
    if name != "ibp":
        assert exact["Relu"]["L"] == "unit" and exact["Relu"]["U"] == "inexact"


def test_both_pipelines_end_with_the_analysis():
    assert DEFAULT_PIPELINE[-1] == NO_REWRITE_PIPELINE[-1] == "exactness"


@pytest.mark.parametrize("c,ok", [(0.0, True), (6.0, True), (-1.0, True), (0.5, True), (2.0 ** -13, True), (256.0, True),
                                  (257.0, False), (0.1, False), (0.3, False), (1e-6, False), (2.0 ** 20, False),
                                  (float("-inf"), True)])
def test_representable_in_every_widened_dtype(c, ok):
    import torch

    assert representable(c) == ok
    if ok and c == c and abs(c) != float("inf"):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            assert float(torch.tensor(c, dtype=dt)) == c
