"""The widening's pre-charge counts the successors' fan-in when the compiler shows every rule's sums are
within it (:func:`cfruntime.flow.widening.concretisation_terms`, section 1; tags from
:mod:`cfmlir.passes.fanin_analysis`): IBP on a convolution sums one kernel's worth of terms, not the
whole layer feeding it, so its widening is an order of magnitude smaller (cifar convMed IBP: 44 -> 60
of 61 certified); CROWN-IBP's hidden layers are IBP's and its traverses never stop, so only the input
box counts its size (cifar ConvSmall PGD CROWN-IBP: 60 -> 61 of 61).  A zonotope's sums are section
3's, so DeepZ counts its reads only (cifar ConvSmall Point: its margins' widening about halved).  Without
the tags (a traverse that may stop, a max-pool's window sum, an untagged rule) the count stays the
layer's size.

Soundness: the widened float32 bounds enclose the float64 run's (the real-valued interval bounds up
to float64's own rounding, ~1e-13 relative, far below float32's) on every layer.  No execution can
show a count that is too small: float32 matrix products err by 4-9 ``u sum|c||x|`` on sums of 256 to
16384 positive terms (measured on this CPU), below even ``gamma(S + 9)``, the smallest pre-charge --
the proof is the count, which the analysis' tests check op by op."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
import torch
from onnx import helper

from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
from cfruntime import contract
from cfruntime.flow import widening
from cfruntime.flow.engine import run_certifier
from cfruntime.network import network_from_model
from cfruntime.network.builders import make_model


@lru_cache(maxsize=None)
def certifier(name: str):
    return compile_certifier(*load_certifier_source(name), pipeline_for(True))


def wide_net(pool: bool = True):
    """A 16-channel convolution (1600 neurons) read by a 3x3 convolution (fan-in 144), a max-pool (fan-in
    4; without ``pool`` none) and a dense head (fan-in 32, or 128 without the pool)."""
    rng = np.random.default_rng(5)
    f = lambda *s: (rng.standard_normal(s) * 0.4).astype(np.float32)  # noqa: E731
    inits = {"K1": f(16, 1, 3, 3), "B1": f(16) + 2, "K2": f(8, 16, 3, 3), "B2": f(8),
             "W": f(3, 8 * 2 * 2) if pool else f(3, 8 * 4 * 4), "b": f(3)}
    nodes = [
        helper.make_node("Conv", ["input", "K1", "B1"], ["c1"], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "K2", "B2"], ["c2"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2" if pool else "p"]),
        *([helper.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2])] if pool else []),
        helper.make_node("Flatten", ["p"], ["fl"], axis=1),
        helper.make_node("Gemm", ["fl", "W", "b"], ["output"], transB=1),
    ]
    return network_from_model(make_model(nodes, inits, (1, 12, 12)))


def boxes(net, eps=0.01, n=4):
    g = torch.Generator().manual_seed(1)
    x = torch.rand(n, net.layers[0].size, generator=g, dtype=torch.float64)
    return x - eps, x + eps


def test_ibp_counts_the_successors_fanin_plus_their_reads():
    net = wide_net()
    terms = widening.concretisation_terms(certifier("ibp"), net)
    kinds = [l.kind for l in net.layers]
    assert kinds == ["input", "affine", "relu", "affine", "relu", "maxpool", "affine"]
    # input -> conv 3x3x1 (1 product, 2 reads); conv1 -> relu (2 reads); relu1 -> conv 3x3x16;
    # conv2 -> relu; relu2 -> max-pool (a max: reads only); pool -> dense 32 wide; the last: none
    assert terms == [9 + 2, 2, 144 + 2, 2, 2, 32 + 2, 0]
    assert terms[2] < net.layers[2].size  # 1600 neurons, 146 terms


@pytest.mark.parametrize("name", ["crown_ibp", "deeppoly"])
def test_traverses_to_the_input_box_count_the_input_only(name):
    """CROWN-IBP (IBP below the last layer, a traverse at it) and DeepPoly (traverses everywhere) never
    stop a traverse: the input's box is concretised over all its 144 neurons, hidden layers only by the
    element-wise rules' reads or IBP's kernels; their max-pool rules sum a window (no tag)."""
    net = wide_net(pool=False)
    terms = widening.concretisation_terms(certifier(name), net)
    reads = {"crown_ibp": 7, "deeppoly": 4}[name]
    ibp = 1 if name == "crown_ibp" else 0  # CROWN-IBP's hidden affine layers: IBP's product with the weight
    assert terms == [max(144 + reads, ibp * 9 + reads), 2, ibp * 144 + reads, 2, ibp * 128 + reads, 0]
    assert widening.concretisation_terms(certifier(name), wide_net(pool=True)) is None
    assert widening.substitutes(certifier(name), net) and not widening.substitutes(certifier("ibp"), net)


def test_a_zonotopes_own_sums_do_not_count():
    """DeepZ's rules concretise no stored bound: the affine rule reads the predecessor's zonotope only
    (its sums are section 3's), the ReLU its bounds element-wise -- the counts are the reads."""
    net = wide_net(pool=False)
    assert widening.concretisation_terms(certifier("deepz"), net) == [1, 3, 1, 3, 1, 0]
    assert not widening.substitutes(certifier("deepz"), net)
    assert widening.concretisation_terms(certifier("deepz"), wide_net(pool=True)) is None  # max-pool's sums


@pytest.mark.parametrize("name", ["deepz", "zid", "polyzono"])
def test_zonotope_certifiers_widened_enclose_the_real_bounds_and_are_tighter(name):
    extra = widened_extra(certifier(name), wide_net(pool=False))
    assert extra("counted", 1) < 0.5 * extra("size", 1), (extra("counted", 1), extra("size", 1))


def without_tag(cert, operator: str):
    """``cert`` with ``operator``'s fan-in tag removed (as a module compiled before the analysis)."""
    import copy

    mutant = copy.copy(cert)
    mutant.exact = {op: {k: v for k, v in t.items() if not (op == operator and k == contract.EXACT_FANIN)}
                    for op, t in cert.exact.items()}
    return mutant


def test_one_untagged_rule_falls_back_to_the_layer_size():
    cert = certifier("ibp")
    assert widening.concretisation_terms(without_tag(cert, "Maxpool"), wide_net()) is None


def layer_bounds(cert, net, lb, ub, dtype):
    res = run_certifier(cert, net, lb, ub, dtype=dtype, graph=False)
    return {l.index: (res.store.get(l.index, "l").double(), res.store.get(l.index, "u").double())
            for l in net.layers[1:]}


def widened_extra(cert, net):
    """Check that ``cert``'s widened float32 bounds enclose the float64 run's on every layer, with its
    fan-in tags ("counted") and with the Affine rule's removed ("size"); return ``extra(which, k)``: the
    width the widening adds to layer ``k``'s bounds, summed."""
    lb, ub = boxes(net)
    real = layer_bounds(cert, net, lb, ub, torch.float64)  # float64: unwidened, the real bounds to ~1e-13
    runs = {"counted": layer_bounds(cert, net, lb, ub, torch.float32),
            "size": layer_bounds(without_tag(cert, "Affine"), net, lb, ub, torch.float32)}
    for k, (rl, ru) in real.items():
        for got in runs.values():
            assert bool((got[k][0] <= rl).all()) and bool((got[k][1] >= ru).all()), k
    return lambda which, k: float(((runs[which][k][1] - runs[which][k][0]) - (real[k][1] - real[k][0])).sum())


@pytest.mark.parametrize("name", ["ibp", "crown_ibp"])
def test_fanin_widening_encloses_the_real_bounds_and_is_tighter_than_the_size_count(name):
    extra = widened_extra(certifier(name), wide_net(pool=name == "ibp"))
    # the extra width on the conv reading the 1600-neuron layer, and at the end (CROWN-IBP's hidden
    # bounds are IBP's; its polyhedra keep their own, unchanged, terms)
    for k in ((3, 6) if name == "ibp" else (3,)):
        assert extra("counted", k) < (0.25 if name == "ibp" else 0.75) * extra("size", k), (k, extra("counted", k))
