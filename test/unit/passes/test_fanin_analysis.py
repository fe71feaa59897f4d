"""The fan-in analysis (:mod:`cfmlir.passes.fanin_analysis`, part of ``--exactness``): a rule whose sums
stay within the layer's fan-in gets ``"@fan-in" = "I R"``; one that may sum more terms gets no tag."""

from __future__ import annotations

import pytest

from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
from cftest.specs import INTERVAL_PRELUDE

FANIN = "@fan-in"


def tags(affine: str, relu: str = "(prev[l] >= 0 ? prev[l] : 0), (prev[u] >= 0 ? prev[u] : 0)", rewrite: bool = True):
    text = (INTERVAL_PRELUDE + "transformer t{\n    Affine -> (" + affine + ");\n    Relu -> (" + relu + ");\n}\n"
            + "flow(forward, priority, stop, t);\n")
    return compile_certifier(text, "fanin_case.cf", pipeline_for(rewrite), use_cache=False).exact


DOT = "(prev.dot(curr[weight]) + curr[bias])"


@pytest.mark.parametrize("rewrite", [True, False])
def test_interval_products_with_the_weight_are_within_the_fanin(rewrite):
    """IBP's Affine rule: one inner product whose coefficients are the weight, two reads (l, u); without
    the rewrites two sums of products selected by the coefficients' signs; its Relu: no sum, two reads."""
    exact = tags(f"{DOT}.map(simplify_lower), {DOT}.map(simplify_upper)", rewrite=rewrite)
    assert exact["Affine"][FANIN] == ("1 2" if rewrite else "2 2")
    assert exact["Relu"][FANIN] == "0 2"


@pytest.mark.parametrize("affine", [
    # a sum over the whole predecessor list (every neuron, not the weight's non-zeros)
    "sum(prev[l]), sum(prev[u])",
    # a product with coefficients that are not the weight (the stored bounds themselves: every entry)
    "prev.dot(prev[u]).map(simplify_lower), prev.dot(prev[u]).map(simplify_upper)",
    # stored bounds dotted with the weight directly are fine, but dotted with one another are not
    "prev[l].dot(prev[u]), prev[u].dot(prev[u])",
])
def test_sums_beyond_the_fanin_get_no_tag(affine):
    exact = tags(affine)
    assert FANIN not in exact["Affine"] and exact["Relu"][FANIN] == "0 2"


def test_a_dot_of_stored_bounds_with_the_weight_is_within_the_fanin():
    exact = tags("prev[l].dot(curr[weight]) - 1.0, prev[u].dot(curr[weight]) + 1.0")
    assert exact["Affine"][FANIN] == "2 2"


@pytest.mark.parametrize("name,tags,untagged", [
    ("ibp", {"Affine": "1 2", "Relu": "0 2", "Maxpool": "0 2", "Neuron_add": "0 4"}, []),
    # back-substitution to the input's box (stop_traverse = false: two traverses, lower and upper); a
    # max-pool's sums over its window
    ("deeppoly", {"Affine": "0 4 2", "Relu": "0 2", "Neuron_add": "0 4 2"}, ["Maxpool"]),
    ("crown_ibp", {"Affine": "1 7 2", "Relu": "0 2"}, ["Maxpool"]),  # IBP, or at the last layer traverses
    # a zonotope's sums (its product with the weight, its concretisation over every noise symbol) are
    # section 3's, not concretisations against stored bounds: only the reads count
    ("deepz", {"Affine": "0 1", "Relu": "0 3", "Neuron_add": "0 2"}, ["Maxpool"]),
    ("polyzono", {"Affine": "0 5 2", "Relu": "0 3"}, ["Maxpool"]),
    ("zid", {"Affine": "1 13 4", "Relu": "0 5"}, ["Maxpool"]),
    ("reusecert", {"Relu": "0 4"}, ["Affine"]),  # its traverses may stop
])
def test_shipped_certifiers(name, tags, untagged):
    exact = compile_certifier(*load_certifier_source(name), pipeline_for(True)).exact
    assert {op: exact[op].get(FANIN) for op in tags} == tags
    assert not any(FANIN in exact[op] for op in untagged)


TRAVERSE_SHAPE = """def Shape as (Float l, Float u, PolyExp L, PolyExp U){[(curr[l]<=curr),(curr[u]>=curr),(curr[L]<=curr),(curr[U]>=curr)]};
func simplify_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[l]) : (coeff * n[u]);
func simplify_upper(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[u]) : (coeff * n[l]);
func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[L]) : (coeff * n[U]);
func replace_upper(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[U]) : (coeff * n[L]);
func priority(Neuron n) = n[layer];
func priority2(Neuron n, Float c) = -n[layer];
func stop(Neuron n) = false;
func STOPFN
transformer t{
    Affine -> ((prev.dot(curr[weight]) + curr[bias]).traverse(backward, priority2, stop_t, REPLACE){true}.map(simplify_lower), (prev.dot(curr[weight]) + curr[bias]).traverse(backward, priority2, stop_t, replace_upper){true}.map(simplify_upper), prev.dot(curr[weight]) + curr[bias], prev.dot(curr[weight]) + curr[bias]);
    Relu -> ((prev[l] >= 0 ? prev[l] : 0), (prev[u] >= 0 ? prev[u] : 0), prev, prev);
}
flow(forward, priority, stop, t);
"""


@pytest.mark.parametrize("stop,replace,tagged", [
    ("stop_t(Neuron n, Float c) = false;", "replace_lower", True),  # to the input's box: no other concretisation
    # a traverse that stops at some layers leaves terms there, and its concretisation sums them densely
    ("stop_t(Neuron n, Float c) = n[layer] == 1;", "replace_lower", False),
    # a replacement by Float bounds concretises inside the traverse, against every layer it reaches
    ("stop_t(Neuron n, Float c) = false;", "simplify_lower", False),
])
def test_traverses_count_only_when_they_never_stop_and_replace_by_polyhedra(stop, replace, tagged):
    text = TRAVERSE_SHAPE.replace("STOPFN", stop).replace("REPLACE", replace)
    exact = compile_certifier(text, "fanin_traverse.cf", pipeline_for(True), use_cache=False).exact
    assert (exact["Affine"].get(FANIN) == "0 4 2") if tagged else (FANIN not in exact["Affine"])
    assert exact["Relu"][FANIN] == "0 2"


ZONO_SHAPE = """def Shape as (Float l, Float u, SymExp Z){[(curr[l]<=curr),(curr[u]>=curr),(curr In curr[Z])]};
func zl(Sym n, Float c) = (c > 0.0) ? c*(0.0 - 1.0) : c*(1.0);
func zu(Sym n, Float c) = (c > 0.0) ? c*(1.0) : c*(0.0 - 1.0);
func priority(Neuron n) = n[layer];
func stop(Neuron n) = true;
transformer t{
    Affine -> (AFFINE);
    Relu -> ((prev[l] >= 0 ? prev[l] : 0), (prev[u] >= 0 ? prev[u] : 0), prev[Z]);
}
flow(forward, priority, stop, t);
"""
ZDOT = "(prev[Z].dot(curr[weight]) + curr[bias])"


@pytest.mark.parametrize("affine,tag", [
    # DeepZ's: sums of the zonotope's coefficients with the weight and over its noise symbols only
    (f"{ZDOT}.map(zl), {ZDOT}.map(zu), {ZDOT}", "0 1"),
    # a stored bound added into the zonotope: its noise-symbol sums are checked as any sum (and fail)
    (f"({ZDOT} + prev[l].dot(curr[weight])).map(zl), {ZDOT}.map(zu), {ZDOT}", None),
    # a zonotope dotted with stored bounds: a sum over every predecessor with them as coefficients
    (f"prev[Z].dot(prev[u]).map(zl), {ZDOT}.map(zu), {ZDOT}", None),
])
def test_a_zonotopes_own_sums_are_not_concretisations_against_stored_bounds(affine, tag):
    """Section 1's pre-charge is for sums against stored Float bounds; a zonotope's product with the
    weight and its concretisation over noise symbols are charged by section 3 whatever their length, so
    they are left out -- but a sum any of whose operands depends on a stored bound (other than a
    zonotope) is analysed as before."""
    text = ZONO_SHAPE.replace("AFFINE", affine)
    exact = compile_certifier(text, "fanin_zono.cf", pipeline_for(True), use_cache=False).exact
    assert exact["Affine"].get(FANIN) == tag
    assert exact["Relu"][FANIN] == "0 3"
