"""Acceptance 3 (first half): bounds of IBP, DeepPoly, DeepZ and CROWN-IBP on hand-built 2-2-2 and
2-3-3-2 ReLU networks equal values derived by hand (below, in the comments), to 1e-9.

Notation: inputs x1, x2 in [-1, 1]; "L(n)"/"U(n)" are the stored polyhedral bounds of neuron n; a
back-substitution replaces each neuron of the highest layer by c*L (c >= 0) or c*U (c < 0) for the
lower bound (the other way round for the upper bound) until only a constant is left.
DeepZ: x1 = e0, x2 = e1; every crossing ReLU (l < 0 < u) makes a fresh symbol e_k; the ReLU
zonotope is lam*z + mu - mu*e_k with lam = u/(u-l), mu = -u*l/(2(u-l)), and its bounds are
l' = u*l/(u-l), u' = u.
"""

from __future__ import annotations

import pytest

from cfmlir.interpreter.run import analyze, load_certifier
from cftest.interp import NET_B, assert_close, hand_analysis, mlp

BOX = ([-1.0, -1.0], [1.0, 1.0])

# ------------------------------------------------------------------------------------------------
# Net A (2-2-2):  h1 = x1 + x2 + 1, h2 = x1 - x2;  r = relu(h);  y1 = r1 + 2 r2,  y2 = -r1 + r2 + 1
# ------------------------------------------------------------------------------------------------
NET_A = dict(weights=[[[1, 1], [1, -1]], [[1, 2], [-1, 1]]], biases=[[1, 0], [0, 1]])

# Layer 1 (all certifiers): h1 in [-1, 3], h2 in [-2, 2].
#
# IBP: r1 in [0, 3], r2 in [0, 2];  y1 = r1 + 2 r2 in [0, 7];  y2 = -r1 + r2 + 1 in [-3+0+1, 0+2+1] = [-2, 3].
#
# DeepPoly: r1: l+u = 2 >= 0 -> L = h1; crossing -> U = 3/4 h1 + 3/4 (lam = 3/4, -u*l/(u-l) = 3/4).
#           r2: l+u = 0 >= 0 -> L = h2; U = 1/2 h2 + 1.
#   y1 lower: L(r1) + 2 L(r2) = h1 + 2 h2 = 3 x1 - x2 + 1 -> -3 - 1 + 1 = -3
#   y1 upper: U(r1) + 2 U(r2) = 3/4 h1 + 3/4 + h2 + 2 = 7/4 x1 - 1/4 x2 + 7/2 -> 7/4 + 1/4 + 7/2 = 5.5
#   y2 lower: -U(r1) + L(r2) + 1 = -3/4 h1 - 3/4 + h2 + 1 = 1/4 x1 - 7/4 x2 - 1/2 -> -1/4 - 7/4 - 1/2 = -2.5
#   y2 upper: -L(r1) + U(r2) + 1 = -h1 + 1/2 h2 + 2 = -1/2 x1 - 3/2 x2 + 1 -> 1/2 + 3/2 + 1 = 3
# CROWN-IBP: layer 1 is the only hidden affine layer (IBP = exact there), the ReLU relaxation is
#   DeepPoly's and the last layer back-substitutes: the same numbers as DeepPoly.
#
# DeepZ: h1 = 1 + e0 + e1, h2 = e0 - e1.
#   r1 (l=-1, u=3): lam = 3/4, mu = 3/8: Z = 3/4 (1 + e0 + e1) + 3/8 - 3/8 e2 = 9/8 + 3/4 e0 + 3/4 e1 - 3/8 e2
#   r2 (l=-2, u=2): lam = 1/2, mu = 1/2: Z = 1/2 e0 - 1/2 e1 + 1/2 - 1/2 e3
#   y1 = r1 + 2 r2 = 17/8 + 7/4 e0 - 1/4 e1 - 3/8 e2 - e3: radius 7/4 + 1/4 + 3/8 + 1 = 27/8
#        -> [17/8 - 27/8, 17/8 + 27/8] = [-1.25, 5.5]
#   y2 = -r1 + r2 + 1 = 3/8 - 1/4 e0 - 5/4 e1 + 3/8 e2 - 1/2 e3: radius 1/4 + 5/4 + 3/8 + 1/2 = 19/8
#        -> [-2, 2.75]
EXPECTED_A = {
    "ibp": ([0.0, -2.0], [7.0, 3.0]),
    "deeppoly": ([-3.0, -2.5], [5.5, 3.0]),
    "crown_ibp": ([-3.0, -2.5], [5.5, 3.0]),
    "deepz": ([-1.25, -2.0], [5.5, 2.75]),
}

# ------------------------------------------------------------------------------------------------
# Net B (2-3-3-2):
#   h1 = x1 + x2 + 3  in [1, 5]  (always active)
#   h2 = x1 - x2 - 3  in [-5, -1] (always inactive)
#   h3 = x1 + x2 - 1  in [-3, 1]  (crossing, l+u < 0)
#   r = relu(h)
#   g1 = r1 - 2 r3 - 2,  g2 = r2 + r3,  g3 = -r1 + 2 r3 + 2
#   s = relu(g)
#   y1 = s1 + s2 - s3,   y2 = -s1 + s3 + 1
# ------------------------------------------------------------------------------------------------
# (NET_B: cftest.interp, shared with the traverse tests)

# IBP: r1 in [1,5], r2 in [0,0], r3 in [0,1];
#   g1 in [1-2-2, 5-0-2] = [-3, 3], g2 in [0, 1], g3 in [-5+0+2, -1+2+2] = [-3, 3];
#   s1 in [0,3], s2 in [0,1], s3 in [0,3];  y1 in [0+0-3, 3+1-0] = [-3, 4];  y2 in [-3+0+1, 0+3+1] = [-2, 4].
#
# DeepPoly (layer 2): r1: L = U = h1;  r2: L = U = 0 (l+u < 0, u <= 0);  r3: L = 0 (l+u = -2 < 0),
#   U = 1/4 h3 + 3/4.
# Layer 3:
#   g1 lower: h1 - 2 U(r3) - 2 = h1 - 1/2 h3 - 7/2 = 1/2 (x1 + x2) -> -1;   upper: h1 - 2 = x1 + x2 + 1 -> 3
#   g2 lower: 0;   upper: U(r3) = 1/4 (x1 + x2) + 1/2 -> 1
#   g3 lower: -h1 + 2 = -(x1 + x2) - 1 -> -3;   upper: -h1 + 2 U(r3) + 2 = -1/2 (x1 + x2) -> 1
# Layer 4: s1 (g1 in [-1,3]): L = g1, U = 3/4 g1 + 3/4;  s2 (g2 in [0,1]): L = U = g2;
#          s3 (g3 in [-3,1]): L = 0, U = 1/4 g3 + 3/4.
# Layer 5:
#   y1 lower: g1 + g2 - 1/4 g3 - 3/4
#           -> (r1 - 2 r3 - 2) + (r2 + r3) - 1/4 (-r1 + 2 r3 + 2) - 3/4 = 5/4 r1 + r2 - 3/2 r3 - 13/4
#           -> 5/4 h1 - 3/2 (1/4 h3 + 3/4) - 13/4 = 5/4 h1 - 3/8 h3 - 35/8
#           -> 7/8 (x1 + x2) - 1/4 -> -2
#   y1 upper: 3/4 g1 + 3/4 + g2 -> 3/4 (r1 - 2 r3 - 2) + r2 + r3 + 3/4 = 3/4 r1 + r2 - 1/2 r3 - 3/4
#           -> 3/4 h1 - 3/4 (r3 with coefficient < 0 takes L = 0) -> 3/4 (x1 + x2) + 3/2 -> 3
#   y2 lower: -3/4 g1 - 3/4 + 1 -> -3/4 (r1 - 2 r3 - 2) + 1/4 = -3/4 r1 + 3/2 r3 + 7/4
#           -> -3/4 h1 + 7/4 -> -3/4 (x1 + x2) - 1/2 -> -2
#   y2 upper: -g1 + 1/4 g3 + 7/4 -> -(r1 - 2 r3 - 2) + 1/4 (-r1 + 2 r3 + 2) + 7/4 = -5/4 r1 + 5/2 r3 + 17/4
#           -> -5/4 h1 + 5/2 (1/4 h3 + 3/4) + 17/4 = -5/4 h1 + 5/8 h3 + 49/8
#           -> -5/8 (x1 + x2) + 7/4 -> 3
#
# CROWN-IBP: layers 1-4 as IBP for the concrete bounds (g1, g3 in [-3, 3]), with the DeepPoly ReLU
#   relaxation built on them: s1: L = g1 (l+u = 0), U = 1/2 g1 + 3/2;  s2: L = U = g2;
#   s3: L = g3, U = 1/2 g3 + 3/2.  The last layer back-substitutes:
#   y1 lower: g1 + g2 - 1/2 g3 - 3/2 -> (r1 - 2 r3 - 2) + (r2 + r3) - 1/2 (-r1 + 2 r3 + 2) - 3/2
#           = 3/2 r1 + r2 - 2 r3 - 9/2 -> 3/2 h1 - 2 (1/4 h3 + 3/4) - 9/2 = 3/2 h1 - 1/2 h3 - 6
#           -> (x1 + x2) - 1 -> -3
#   y1 upper: 1/2 g1 + 3/2 + g2 - g3 -> 1/2 (r1 - 2 r3 - 2) + r2 + r3 - (-r1 + 2 r3 + 2) + 3/2
#           = 3/2 r1 + r2 - 2 r3 - 3/2 -> 3/2 h1 - 3/2 -> 3/2 (x1 + x2) + 3 -> 6
#   y2 lower: -1/2 g1 - 3/2 + g3 + 1 -> -1/2 (r1 - 2 r3 - 2) + (-r1 + 2 r3 + 2) - 1/2 = -3/2 r1 + 3 r3 + 5/2
#           -> -3/2 h1 + 5/2 -> -3/2 (x1 + x2) - 2 -> -5
#   y2 upper: -g1 + 1/2 g3 + 3/2 + 1 -> -(r1 - 2 r3 - 2) + 1/2 (-r1 + 2 r3 + 2) + 5/2 = -3/2 r1 + 3 r3 + 11/2
#           -> -3/2 h1 + 3 (1/4 h3 + 3/4) + 11/2 = -3/2 h1 + 3/4 h3 + 31/4 -> -3/4 (x1 + x2) + 5/2 -> 4
#
# DeepZ: h1 = 3 + e0 + e1, h2 = -3 + e0 - e1, h3 = -1 + e0 + e1.
#   r1 = h1 (active), r2 = 0 (inactive), r3 (l=-3, u=1): lam = 1/4, mu = 3/8:
#      Z = 1/8 + 1/4 e0 + 1/4 e1 - 3/8 e2, bounds [-3/4, 1]
#   g1 = r1 - 2 r3 - 2 = 3/4 + 1/2 e0 + 1/2 e1 + 3/4 e2            -> [-1, 5/2]
#   g2 = r2 + r3       = 1/8 + 1/4 e0 + 1/4 e1 - 3/8 e2            -> [-3/4, 1]
#   g3 = -r1 + 2 r3 + 2 = -3/4 - 1/2 e0 - 1/2 e1 - 3/4 e2          -> [-5/2, 1]
#   s1 (l=-1, u=5/2): lam = 5/7, mu = 5/14:  Z = 25/28 + 5/14 (e0 + e1) + 15/28 e2 - 5/14 e3
#   s2 (l=-3/4, u=1): lam = 4/7, mu = 3/14:  Z = 2/7 + 1/7 (e0 + e1) - 3/14 e2 - 3/14 e4
#   s3 (l=-5/2, u=1): lam = 2/7, mu = 5/14:  Z = 1/7 - 1/7 (e0 + e1) - 3/14 e2 - 5/14 e5
#   y1 = s1 + s2 - s3 = 29/28 + 9/14 (e0 + e1) + 15/28 e2 - 5/14 e3 - 3/14 e4 + 5/14 e5
#        radius 77/28 -> [-48/28, 106/28] = [-12/7, 53/14]
#   y2 = -s1 + s3 + 1 = 1/4 - 1/2 (e0 + e1) - 3/4 e2 + 5/14 e3 - 5/14 e5
#        radius 69/28 -> [-62/28, 76/28] = [-31/14, 19/7]
EXPECTED_B = {
    "ibp": ([-3.0, -2.0], [4.0, 4.0]),
    "deeppoly": ([-2.0, -2.0], [3.0, 3.0]),
    "crown_ibp": ([-3.0, -5.0], [6.0, 4.0]),
    "deepz": ([-12 / 7, -31 / 14], [53 / 14, 19 / 7]),
}

# Hidden-layer bounds derived above (layer index: (lower, upper)).
HIDDEN_B = {
    "ibp": {3: ([-3.0, 0.0, -3.0], [3.0, 1.0, 3.0]), 4: ([0.0, 0.0, 0.0], [3.0, 1.0, 3.0])},
    "deeppoly": {3: ([-1.0, 0.0, -3.0], [3.0, 1.0, 1.0]), 4: ([0.0, 0.0, 0.0], [3.0, 1.0, 1.0])},
    "crown_ibp": {3: ([-3.0, 0.0, -3.0], [3.0, 1.0, 3.0])},
    "deepz": {2: ([1.0, 0.0, -0.75], [5.0, 0.0, 1.0]), 3: ([-1.0, -0.75, -2.5], [2.5, 1.0, 1.0]),
              4: ([-5 / 7, -3 / 7, -5 / 7], [2.5, 1.0, 1.0])},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_A))
def test_net_a_2_2_2(name):
    res = hand_analysis(name, NET_A, EXPECTED_A[name])
    # layer 1 is exact interval arithmetic for every certifier
    l1 = res.layer_bounds()[1]
    assert_close(l1[0], [-1.0, -2.0])
    assert_close(l1[1], [3.0, 2.0])


@pytest.mark.parametrize("name", sorted(EXPECTED_B))
def test_net_b_2_3_3_2(name):
    res = hand_analysis(name, NET_B, EXPECTED_B[name])
    lb = res.layer_bounds()
    assert_close(lb[1][0], [1.0, -5.0, -3.0])
    assert_close(lb[1][1], [5.0, -1.0, 1.0])
    for layer, (l, u) in HIDDEN_B[name].items():
        assert_close(lb[layer][0], l)
        assert_close(lb[layer][1], u)


def test_deepz_noise_symbols_fresh_per_crossing_relu():
    # Net B: 2 input symbols + one per crossing ReLU (r3, s1, s2, s3) = 6.
    res = analyze(load_certifier("deepz"), mlp(**NET_B), *BOX)
    assert res.noise_symbols == 6
    z = res.member("Z", 4)
    assert sorted(z[0].coeffs) == [0, 1, 2, 3] and sorted(z[2].coeffs) == [0, 1, 2, 5]


def test_deeppoly_polyexps_are_stored():
    res = analyze(load_certifier("deeppoly"), mlp(**NET_B), *BOX)
    L, U = res.member("L", 2), res.member("U", 2)
    h = res.view.layers[1].offset
    # r1: L = U = h1; r2: L = U = 0; r3: L = 0, U = 1/4 h3 + 3/4
    assert dict(L[0].coeffs) == {h: 1.0} and L[0].const == 0.0
    assert L[1].coeffs == {} and U[1].coeffs == {}
    assert L[2].coeffs == {} and L[2].const == 0.0
    assert U[2].coeffs == {h + 2: 0.25} and U[2].const == 0.75


def test_margins_and_certified_flag():
    from cfmlir.interpreter.run import certify_sample

    # Net A at the point box x = (1, 0) +- 0.1: y = (relu(2)+2 relu(1), -2+1+1) = (4, 0): label 0 wins.
    net = mlp(**NET_A)
    s = certify_sample(load_certifier("ibp"), net, [0.9, -0.1], [1.1, 0.1], label=0)
    # IBP: h1 in [1.8, 2.2], h2 in [0.8, 1.2] (active); y1 in [1.8+1.6, 2.2+2.4] = [3.4, 4.6],
    # y2 = -r1 + r2 + 1 in [-2.2+0.8+1, -1.8+1.2+1] = [-0.4, 0.4]; folded margin y1 - y2 = 2 r1 + r2 - 1
    # in [3.6+0.8-1, 4.4+1.2-1] = [3.4, 4.6].
    assert s.margin_lb[0] == 0.0 and s.margin_ub[0] == 0.0
    assert s.margin_lb[1] == pytest.approx(3.4, abs=1e-9) and s.margin_ub[1] == pytest.approx(4.6, abs=1e-9)
    assert s.certified
    s1 = certify_sample(load_certifier("ibp"), net, [0.9, -0.1], [1.1, 0.1], label=1)
    assert not s1.certified and s1.margin_ub[0] == pytest.approx(-3.4, abs=1e-9)
