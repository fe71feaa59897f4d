"""Acceptance 4: traverse semantics -- the priority and stop functions matter.

* DeepPoly_p (``deeppoly_<p>``): p = 0 equals IBP at every layer; hand-derived bounds for p = 0, 1, 2
  and full depth on the 2-3-3-2 net of test_hand_bounds; on the shared MNIST 3x50 net the margin
  bounds of every p lie between p = 0 (intervals) and p = 8 (= full DeepPoly); p = 1 -> 2 is not
  monotone there (see the test).
  The template's stop function ``n[layer] < cl - 2 * depth()`` counts *affine* layers (each followed
  by its activation layer in the graph).  DeepPoly's bounds are not monotone in p for every network
  (net B, y1: p = 1 gives -3.5 < -3 of p = 0): DeepPoly can be looser than interval arithmetic.
* A custom certifier where the traverse priority / stop function change the result (hand-derived).
"""

from __future__ import annotations

import pytest

from cfmlir.interpreter.errors import InterpreterError
from cfmlir.interpreter.run import analyze, certify_sample, compile_source, load_certifier
from cftest.interp import NET_B, assert_close, hand_analysis, mlp, random_mlp, shared_mnist_3x50


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_deeppoly_0_equals_ibp_on_every_layer(seed):
    net = random_mlp([4, 7, 6, 5, 3], seed)
    lo, hi = [-0.4] * 4, [0.3] * 4
    a = analyze(load_certifier("deeppoly_0"), net, lo, hi).layer_bounds()
    b = analyze(load_certifier("ibp"), net, lo, hi).layer_bounds()
    for layer in a:
        assert_close(a[layer][0], b[layer][0], 1e-12)
        assert_close(a[layer][1], b[layer][1], 1e-12)


# Net B (see test_hand_bounds for the network and the p = 0 (IBP) / full DeepPoly derivations):
# (Below, "p = k" is the stop rule n[layer] < cl - k in network layers; deeppoly_<p> stops at
# cl - 2p, so deeppoly_1 is "p = 2" and deeppoly_2 is "p = 4".)
# p = 1: at layer 3 (cl = 3) neurons of layers < 2 are stopped: the ReLUs r are replaced by L/U and
#   h is concretised with its interval: g1 lower h1 - 1/2 h3 - 7/2 -> 1 - 1/2 - 7/2 = -3, upper h1 - 2 -> 3;
#   g2 in [0, 1/4*1 + 3/4] = [0, 1]; g3 lower -h1 + 2 -> -3, upper -h1 + 1/2 h3 + 7/2 -> 3 (= IBP).
#   Layer 4: s1: L = g1, U = 1/2 g1 + 3/2; s2: L = U = g2; s3: L = g3, U = 1/2 g3 + 3/2.
#   Layer 5 (cl = 5): s replaced, g concretised:
#     y1 lower g1 + g2 - 1/2 g3 - 3/2 -> -3 + 0 - 3/2 - 3/2 = -6;  upper 1/2 g1 + 3/2 + g2 - g3 -> 3/2+3/2+1+3 = 7
#     y2 lower -1/2 g1 - 3/2 + g3 + 1 -> -3/2 - 3/2 - 3 + 1 = -5;  upper -g1 + 1/2 g3 + 5/2 -> 3 + 3/2 + 5/2 = 7
# p = 2: layer 3 reaches the input (= full DeepPoly there); layer 5 replaces s and g and concretises r
#   (r1 in [1,5], r2 = 0, r3 in [0,1]) in the expressions of the DeepPoly derivation:
#     y1 lower 5/4 r1 + r2 - 3/2 r3 - 13/4 -> 5/4 - 3/2 - 13/4 = -3.5;  upper 3/4 r1 + r2 - 1/2 r3 - 3/4 -> 3
#     y2 lower -3/4 r1 + 3/2 r3 + 7/4 -> -15/4 + 7/4 = -2;  upper -5/4 r1 + 5/2 r3 + 17/4 -> -5/4+5/2+17/4 = 5.5
# p = 4 reaches the input from layer 5: full DeepPoly.
DEEPPOLY_P_NET_B = {  # deeppoly_<p> -> bounds derived above for network depth 2p
    0: ([-3.0, -2.0], [4.0, 4.0]),
    1: ([-3.5, -2.0], [3.0, 5.5]),
    2: ([-2.0, -2.0], [3.0, 3.0]),
    8: ([-2.0, -2.0], [3.0, 3.0]),
}


@pytest.mark.parametrize("p", sorted(DEEPPOLY_P_NET_B))
def test_deeppoly_p_hand_derived(p):
    hand_analysis(f"deeppoly_{p}", NET_B, DEEPPOLY_P_NET_B[p])


@pytest.fixture(scope="module")
def mnist():
    return shared_mnist_3x50()


def _margins(name, net, prop, i):
    r = certify_sample(load_certifier(name), net, prop.lb[i], prop.ub[i], int(prop.labels[i]))
    return r.margin_lb, r.margin_ub


@pytest.mark.parametrize("i", [0, 1, 2])
def test_deeppoly_p_tightens_monotonically_on_mnist(mnist, i):
    net, prop = mnist
    m = {p: _margins(f"deeppoly_{p}", net, prop, i) for p in (0, 1, 2, 8)}
    ibp = _margins("ibp", net, prop, i)
    full = _margins("deeppoly", net, prop, i)
    assert m[0] == ibp  # p = 0 is IBP
    assert m[8] == full  # depth 8 >= the 7 layers of the margin network: full DeepPoly
    # Every depth is at least as tight as intervals (p = 0) and at most as tight as full DeepPoly.
    # (p = 1 -> 2 is *not* monotone on these images: concretising two affine layers further down,
    # after two more ReLU relaxations, loses more than it gains; DeepPoly_p is not monotone in p.)
    for a, b in ((0, 1), (0, 2), (1, 8), (2, 8)):
        assert all(x <= y + 1e-12 for x, y in zip(m[a][0], m[b][0])), (a, b)
        assert all(x >= y - 1e-12 for x, y in zip(m[a][1], m[b][1])), (a, b)
    # strictly tighter somewhere
    assert sum(m[1][0]) > sum(m[0][0]) + 1e-6 and sum(m[8][0]) > sum(m[1][0]) + 1e-9


# ------------------------------------------------------------------------------------------------
# A certifier whose result depends on the traverse priority and stop functions.
# Net: x in [-1, 1] -> h = x -> r = relu(h) -> y = r.  The ReLU stores L(r) = 2 h - L(h) = 2 h - x
# (a valid lower bound: it equals x <= relu(x)) and U(r) = 1/2 h + 1/2, so that back-substitution
# meets neurons of two layers at once.  Lower bound of y (start: E = r):
#   prio -layer (highest first):  r -> 2h - x;  h (coefficient 2) -> 2x;  E = 2x - x = x;  x -> L = -1
#                                 => -1
#   prio  layer (lowest first):   r -> 2h - x;  x (coefficient -1) -> -U(x) = -1;  E = 2h - 1;
#                                 h -> 2x;  x -> 2 * (-1);  => -3
#   prio constant 0 (all at once): r -> 2h - x;  {h, x} together: 2x - 1;  x -> -2 - 1  => -3
#   lowest first, stop c < 0:     r -> 2h - x;  x stopped (coefficient -1), h -> 2x;  E = x: its
#                                 coefficient is now 1, not stopped any more;  x -> -1  => -1
# Upper bound (every variant): r -> 1/2 h + 1/2 -> 1/2 x + 1/2 -> 1.
# ------------------------------------------------------------------------------------------------
ORDER_CF = """
def Shape as (Float l, Float u, PolyExp L, PolyExp U){[(curr[l]<=curr),(curr[u]>=curr),(curr[L]<=curr),(curr[U]>=curr)]};
func simplify_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (n[l] * coeff) : (coeff * n[u]);
func simplify_upper(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[u]) : (coeff * n[l]);
func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[L]) : (coeff * n[U]);
func replace_upper(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[U]) : (coeff * n[L]);
func priority(Neuron n) = n[layer];
func stop(Neuron n) = false;
func prio(Neuron n, Float c) = PRIO;
func stop_t(Neuron n, Float c) = STOP;
func lower(PolyExp e) = (e.traverse(backward, prio, stop_t, replace_lower){e <= e}).map(simplify_lower);
func upper(PolyExp e) = (e.traverse(backward, prio, stop_t, replace_upper){e >= e}).map(simplify_upper);
transformer order_test{
    Affine -> (lower(prev.dot(curr[weight]) + curr[bias]), upper(prev.dot(curr[weight]) + curr[bias]),
               prev.dot(curr[weight]) + curr[bias], prev.dot(curr[weight]) + curr[bias]);
    Relu -> (max(prev[l], 0.0), max(prev[u], 0.0), 2.0 * prev - prev[L], 0.5 * prev + 0.5);
}
flow(forward, priority, stop, order_test);
"""


@pytest.mark.parametrize("prio,stop,want_lb", [
    ("0 - n[layer]", "false", -1.0),
    ("n[layer]", "false", -3.0),
    ("0.0", "false", -3.0),
    ("n[layer]", "c < 0.0", -1.0),
])
def test_priority_and_stop_order_matters(prio, stop, want_lb):
    prog = compile_source(ORDER_CF.replace("PRIO", prio).replace("STOP", stop), "order.cf")
    net = mlp([[[1.0]], [[1.0]]], [[0.0], [0.0]])
    res = analyze(prog, net, [-1.0], [1.0])
    assert res.lower == [pytest.approx(want_lb, abs=1e-12)]
    assert res.upper == [pytest.approx(1.0, abs=1e-12)]


def test_runaway_traverse_is_an_error():
    src = ORDER_CF.replace("PRIO", "0.0").replace("STOP", "false").replace(
        "func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[L]) : (coeff * n[U]);",
        "func replace_lower(Neuron n, Float coeff) = coeff * n;")
    prog = compile_source(src, "loop.cf")
    with pytest.raises(InterpreterError, match="did not terminate"):
        analyze(prog, mlp([[[1.0]], [[1.0]]], [[0.0], [0.0]]), [-1.0], [1.0])
