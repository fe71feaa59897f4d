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


@pytest.mark.parametrize("name,tagged,untagged", [
    ("ibp", ["Affine", "Relu", "Maxpool", "Neuron_add", "Sigmoid"], []),
    ("deeppoly", ["Relu", "Sigmoid"], ["Affine", "Neuron_add", "Maxpool"]),  # traverses; a window's sums
    ("crown_ibp", ["Relu"], ["Affine"]),
    ("deepz", ["Relu"], ["Affine"]),  # a zonotope's concretisation sums over every noise symbol
])
def test_shipped_certifiers(name, tagged, untagged):
    exact = compile_certifier(*load_certifier_source(name), pipeline_for(True)).exact
    assert all(FANIN in exact[op] for op in tagged) and not any(FANIN in exact[op] for op in untagged)
    assert all("@substitutes" not in exact[op] for op in exact if FANIN in exact[op])
