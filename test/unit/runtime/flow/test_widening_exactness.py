"""The widening trusts the compiler's exactness tags (:mod:`cfruntime.flow.widening`, section 7): exact
values get no rounding term, inexact ones keep theirs.  Each case is a rule on the last layer of a
small net (nothing reads it later, so no pre-charge pads it): its widened float32 bounds must enclose
the rule evaluated in real arithmetic (float64) on the stored float32 bounds of its predecessor.  For
exact values they *are* that evaluation; for every inexact value a mutant tag that calls it exact
(dropping its term) is caught by the same check -- the term is needed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cfmlir.compiler import compile_certifier, pipeline_for
from cfruntime.flow.engine import run_certifier
from cfruntime.network import network_from_model
from cfruntime.network.builders import mlp_model
from cftest.specs import interval_spec

SHAPE = interval_spec("t", "(RULE)")
N_IN, N_OUT, BATCH = 6, 64, 16


def net_and_boxes():
    rng = np.random.default_rng(7)
    w = rng.normal(size=(N_OUT, N_IN)).astype(np.float32)
    b = rng.normal(size=N_OUT).astype(np.float32)
    net = network_from_model(mlp_model([w], [b], ["relu"], input_shape=(N_IN,)))  # input, affine, relu (last)
    g = torch.Generator().manual_seed(3)
    c = torch.rand(BATCH, N_IN, generator=g, dtype=torch.float64) * 2 - 1
    r = torch.rand(BATCH, N_IN, generator=g, dtype=torch.float64) * 0.3
    return net, c - r, c + r


def run(rule: str, tags: dict | None = None):
    """``(l, u, ref_l, ref_u)``: the rule layer's stored float32 bounds and the rule in float64 on its
    predecessor's stored bounds.  ``tags``: the exactness tags to run with instead of the compiler's."""
    cert = compile_certifier(SHAPE.replace("RULE", rule), "exactness_case.cf", pipeline_for(True), use_cache=False)
    if tags is not None:
        cert.exact = {**cert.exact, "Relu": tags}
    net, lb, ub = net_and_boxes()
    res = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False)
    pl, pu = (res.store.get(1, m).double() for m in ("l", "u"))
    ref = REFERENCE[rule](pl, pu)
    return res.store.get(2, "l").double(), res.store.get(2, "u").double(), *ref


#: the rules, evaluated in float64 (exact for these operands up to float64's own 1e-16)
REFERENCE = {
    "prev[l] >= 0 ? prev[l] : 0, max(prev[u], 0.0)": lambda l, u: (l.clamp(min=0), u.clamp(min=0)),
    "prev[l] * 0.5, prev[u] * 4.0": lambda l, u: (l * 0.5, u * 4.0),
    "-prev[u], -prev[l]": lambda l, u: (-u, -l),
    "max(prev[l], 0.5), min(prev[u], 6.0)": lambda l, u: (l.clamp(min=0.5), u.clamp(max=6.0)),
    "(prev[l] + prev[u] >= 0.0) ? prev[l] : 0.0, prev[u]": lambda l, u: (torch.where(l + u >= 0, l, 0.0), u),
    "prev[l] * 0.3, prev[u] * 0.3": lambda l, u: (l * 0.3, u * 0.3),
    "max(prev[l], 0.1), max(prev[u], 0.1)": lambda l, u: (l.clamp(min=0.1), u.clamp(min=0.1)),
    "prev[l] + prev[u], prev[u] - prev[l]": lambda l, u: (l + u, u - l),
    "prev[l] / 3.0, prev[u] / 3.0": lambda l, u: (l / 3.0, u / 3.0),
}

EXACT_RULES = [r for r in REFERENCE if not any(s in r for s in ("0.3", "0.1", "+ prev[u],", "/ 3.0"))]
INEXACT_RULES = [r for r in REFERENCE if r not in EXACT_RULES]


@pytest.mark.parametrize("rule", EXACT_RULES)
def test_exact_values_are_the_rule_itself(rule):
    """Clamps and max/min with representable constants, products with powers of two, negation, a
    selection under an exact condition: float32 computes them without rounding, and the widening adds
    nothing to a last layer's."""
    l, u, rl, ru = run(rule)
    assert torch.equal(l, rl) and torch.equal(u, ru)


@pytest.mark.parametrize("rule", INEXACT_RULES)
def test_inexact_values_keep_their_term_and_dropping_it_is_unsound(rule):
    """A product with 0.3, a clamp at 0.1 (rounded to float32: above the real 0.1), a sum, a quotient:
    widened they enclose the real rule; tagged exact (the term dropped) they do not."""
    l, u, rl, ru = run(rule)
    assert bool((l <= rl).all()) and bool((u >= ru).all())
    assert bool((l < rl).all()) and bool((u > ru).all())  # a term was added
    ml, mu, rl, ru = run(rule, {"l": "exact 1.0 1.0", "u": "exact 1.0 1.0"})
    assert bool((ml > rl).any()) or bool((mu < ru).any()), "the mutant without the term is not caught"


def mlp3():
    """input(6) - affine(8) - relu - affine(8) - relu - affine(3): a chain whose ReLUs are transparent."""
    rng = np.random.default_rng(11)
    ws = [rng.normal(size=s).astype(np.float32) for s in ((8, 6), (8, 8), (3, 8))]
    bs = [rng.normal(size=s[0]).astype(np.float32) for s in ((8, 6), (8, 8), (3, 8))]
    return network_from_model(mlp_model(ws, bs, "relu", input_shape=(6,)))


def test_transparent_relu_bounds_are_the_clamps_of_the_pre_charged_affine_bounds():
    """A ReLU's bounds get no term of their own (the affine layer before it carries the pre-charge
    of every later sum over them, at least the ReLU's own); every other layer's are moved."""
    from cfmlir.compiler import load_certifier_source
    from cfruntime.flow.widening import Widening

    cert = compile_certifier(*load_certifier_source("crown_ibp"), pipeline_for(True))
    net = mlp3()
    _, lb, ub = net_and_boxes()
    res = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False)
    raw = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False, widen=False)
    for relu in (2, 4):
        for m in ("l", "u"):
            assert torch.equal(res.store.get(relu, m), res.store.get(relu - 1, m).clamp(min=0))
    for k in (1, 3):  # affine layers: moved outward by their own term and the pre-charge
        assert bool((res.store.get(k, "l") < raw.store.get(k, "l")).all())
        assert bool((res.store.get(k, "u") > raw.store.get(k, "u")).all())
    plan = Widening(cert, net, _rep(), BATCH).plan
    assert [plan.float_kind[k][0] for k in range(6)] == ["input", "inexact", "transparent", "inexact", "transparent", "inexact"]
    assert plan.rho[1] >= plan.rho[2] > 0 and plan.rho[3] >= plan.rho[4] > 0 and plan.rho[5] == 0


def _rep():
    from cfruntime.flow.representation import Representation

    return Representation("planned", torch.float32, "cpu")


def test_an_affine_layers_term_rides_on_its_relus_relaxations():
    """CROWN-IBP/DeepPoly: an affine layer followed by ReLUs only keeps one expression for its lower
    and upper polyhedra (its substitution error is charged on the ReLU's constants); the last layer's
    polyhedra are never substituted and stay as made."""
    from cfmlir.compiler import load_certifier_source

    cert = compile_certifier(*load_certifier_source("deeppoly"), pipeline_for(True))
    net = mlp3()
    _, lb, ub = net_and_boxes()
    res = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False)
    raw = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False, widen=False)
    for k in (1, 3, 5):
        L, U = res.store.get(k, "L"), res.store.get(k, "U")
        assert L.const is U.const and L.coeff is U.coeff  # one expression, constants not moved
    for k in (2, 4):
        L, U, rL, rU = res.store.get(k, "L"), res.store.get(k, "U"), raw.store.get(k, "L"), raw.store.get(k, "U")
        assert bool((L.const < rL.const).all()) and bool((U.const > rU.const).all())
