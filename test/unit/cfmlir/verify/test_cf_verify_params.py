"""cf-verify with parameters (issue 25, acceptance 2): the parametric rules of alpha_deeppoly and
alpha_deepz are verified for every parameter value in the domain, and domains made too wide get
counterexamples that the reference interpreter confirms (replayed with the model's parameter values,
which lie in the wide domain and are named in the counterexample)."""

from __future__ import annotations

import pytest

from cfmlir.certifiers import certifier_source
from cfmlir.verify import COUNTEREXAMPLE, VERIFIED, FragmentError, verify_source

PIECEWISE_LINEAR = {"Affine", "Relu", "Neuron_add", "Maxpool", "LeakyRelu", "Abs", "Relu6", "HardTanh"}


@pytest.mark.parametrize("name", ["alpha_deeppoly", "alpha_deepz"])
def test_parametric_certifiers_verified(name):
    text, file = certifier_source(name)
    results = verify_source(text, file, K=2, M=2, timeout=60, ops=PIECEWISE_LINEAR)
    assert {r.op for r in results} >= {"Affine", "Relu"}
    assert [r.line() for r in results if r.status != VERIFIED] == []


def _widened(name: str, old: str, new: str) -> tuple[str, str]:
    text, file = certifier_source(name)
    assert text.count(old) == 1, old
    return text.replace(old, new), f"{name}_wide.cf"


#: (certifier, the domain as shipped, a domain too wide, the rule refuted, the parameter's name)
TOO_WIDE = [
    # a ReLU lower line a*x with a up to 2 lies above relu(x) = x for x > 0: the back-substitution of
    # an Affine neuron's lower bound is not a lower bound any more
    ("alpha_deeppoly", "param al for Relu in [prev[l] >= 0.0 ? 1.0 : 0.0, prev[u] <= 0.0 ? 0.0 : 1.0]",
     "param al for Relu in [prev[l] >= 0.0 ? 1.0 : 0.0, 2.0]", "Affine", "al"),
    # the same for the slopes of the upper bounds' back-substitution (a negative coefficient times 2*x
    # is below it times relu(x) for x > 0).  (A negative slope is no counterexample: the coefficient
    # changes sign and the ReLU's upper polyhedron, a non-negative neuron's, is used -- looser, sound.)
    ("alpha_deeppoly", "param au for Relu in [prev[l] >= 0.0 ? 1.0 : 0.0, prev[u] <= 0.0 ? 0.0 : 1.0]",
     "param au for Relu in [0.0, 2.0]", "Affine", "au"),
    # a zonotope slope above 1: relu(x) - a*x < 0 at x = u, below the zonotope's offset range
    ("alpha_deepz", "param a for Relu in [0.0, 1.0]", "param a for Relu in [0.0, 1.5]", "Relu", "a"),
    # a negative zonotope slope: relu(x) - a*x < 0 at x = l
    ("alpha_deepz", "param a for Relu in [0.0, 1.0]", "param a for Relu in [-0.5, 1.0]", "Relu", "a"),
]


@pytest.mark.parametrize("case", TOO_WIDE, ids=[f"{c[0]}-{c[4]}-{c[2].split('[', 1)[1]}" for c in TOO_WIDE])
def test_too_wide_domain_has_a_confirmed_counterexample(case):
    name, old, new, op, param = case
    text, file = _widened(name, old, new)
    (r,) = verify_source(text, file, K=2, M=2, timeout=60, ops={op})
    assert r.status == COUNTEREXAMPLE, r.line()
    assert "violates" in r.detail or "traverse invariant" in r.detail
    assert f"{param}(" in r.detail.split("parameters: ", 1)[1]


def test_the_wide_and_the_shipped_domain_differ_only_there():
    for name, old, new, op, _ in TOO_WIDE:
        text, file = _widened(name, old, new)
        (r,) = verify_source(*certifier_source(name), K=2, M=2, timeout=60, ops={op})
        assert r.status == VERIFIED, r.line()


def test_a_parameter_of_a_list_operator_read_on_another_neuron_is_outside_the_fragment():
    text = """
def Shape as (Float l, Float u){[curr[l] <= curr, curr[u] >= curr]};
param k for Affine in [0.0, 1.0] else 1.0;
func low(Neuron n) = n[l] * n[k];
transformer t { Affine -> (prev.dot(curr[weight]) + curr[bias] >= 0.0 ? 0.0 : 0.0, 0.0); Relu -> (low(prev) * 0.0, prev[u]); }
""".replace("prev.dot(curr[weight]) + curr[bias] >= 0.0 ? 0.0 : 0.0", "0.0")
    with pytest.raises(FragmentError, match="parameter 'k' of the operator 'Affine' read on a neuron other than curr"):
        verify_source(text, "list_param.cf", ops={"Relu"}, timeout=10)
