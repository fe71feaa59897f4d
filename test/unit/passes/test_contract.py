"""The compiler, the compiled engine and the interpreter read shape roles, type letters and layer
operators from one contract (:mod:`cfruntime.contract`): a shape written with strict comparisons,
mirrored comparisons and ``and`` gives both engines the same roles and the same bounds."""

import pytest
import torch

from cfmlir.compiler import compile_certifier, pipeline_for
from cfmlir.interpreter.run import analyze, compile_source
from cfruntime import contract
from cfruntime.flow.engine import run_certifier

from cftest.nets import boxes, mlp

SPEC = """
def Shape as (Float hi, PolyExp LO, Float lo, PolyExp UP){[(curr < curr[hi]) and (curr[LO] <= curr), curr > curr[lo], (curr[UP] >= curr)]};
func simplify_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[lo]) : (coeff * n[hi]);
func simplify_upper(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[hi]) : (coeff * n[lo]);
func priority(Neuron n) = n[layer];
func stop(Neuron n) = false;
transformer t{
    Affine -> ((prev.dot(curr[weight]) + curr[bias]).map(simplify_upper), prev.dot(curr[weight]) + curr[bias],
               (prev.dot(curr[weight]) + curr[bias]).map(simplify_lower), prev.dot(curr[weight]) + curr[bias]);
    Relu -> (prev[hi] >= 0 ? prev[hi] : 0, prev, prev[lo] >= 0 ? prev[lo] : 0, prev);
}
flow(forward, priority, stop, t);
"""


def test_constraint_roles():
    role = contract.constraint_role
    assert role("<=", "l", False, None, True) == ("l", contract.LOWER)
    assert role("<", "l", False, None, True) == ("l", contract.LOWER)
    assert role(">", None, True, "l", False) == ("l", contract.LOWER)  # curr > curr[l]
    assert role(">=", "u", False, None, True) == ("u", contract.UPPER)
    assert role("<", None, True, "u", False) == ("u", contract.UPPER)
    assert role("In", None, True, "Z", False) == ("Z", contract.ZONOTOPE)
    assert role("==", "l", False, None, True) is None
    assert contract.roles_from([("m", contract.LOWER), None, ("m", contract.UPPER)]) == {"m": contract.LOWER}


def test_compiler_and_interpreter_read_the_same_roles():
    cert = compile_certifier(SPEC, "roles.cf", pipeline_for(True), use_cache=False)
    roles = {name: role for name, _, role in cert.members}
    assert roles == {"hi": contract.UPPER, "LO": contract.LOWER, "lo": contract.LOWER, "UP": contract.UPPER}
    prog = compile_source(SPEC, "roles.cf", "roles")
    net = mlp([3, 4, 2], seed=1)
    lb, ub = boxes(3, batch=2, seed=2)
    res = run_certifier(cert, net, lb, ub)
    for i in range(2):
        ref = analyze(prog, net, lb[i], ub[i])
        for member in ("lo", "hi"):
            want = torch.tensor(ref.member(member, net.layers[-1].index), dtype=torch.float64)
            torch.testing.assert_close(res.store.get(net.layers[-1].index, member)[i], want, rtol=1e-9, atol=1e-9)
    assert torch.all(res.lower <= res.upper)


@pytest.mark.parametrize("kind", sorted(contract.OPERATOR_OF_KIND))
def test_every_layer_kind_has_one_operator(kind):
    from cfmlir.interpreter.flow import KIND_TO_OP
    from cfruntime.flow.engine import OPERATOR_OF_KIND

    assert KIND_TO_OP[kind] == OPERATOR_OF_KIND[kind] == contract.OPERATOR_OF_KIND[kind]
