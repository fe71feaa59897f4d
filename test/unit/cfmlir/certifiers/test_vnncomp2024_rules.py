"""The rules of issue 27's layer kinds in the shipped certifiers: ``mul`` (Neuron_mult, McCormick),
``sign``, ``floor``, ``sin``, ``cos``, ``exp``, ``reciprocal`` and a Softmax built from them.  On small
networks (:mod:`cftest.product_nets`: products of two layers, a square, operands on both sides of 0; each function
over several periods, steps or orders of magnitude; reciprocals of positive and of negative values;
a Softmax loaded from ONNX), the compiled engine gives the reference interpreter's bounds on every
layer in every mode, and those bounds contain every concrete value the soundness checker finds
(samples, box vertices, PGD); every certifier is exact on a box that is one point; IBP's bounds are
the exact images."""

import pytest
import torch

from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.network.graph import binary_image, elementwise_image
from cftest.activation_nets import CERTIFIERS, assert_exact_on_a_point, assert_matches_interpreter_on, boxes
from cftest.product_nets import NETS, UNARY, network

CHECK = {"n_samples": 256, "n_vertices": 8, "pgd_steps": 20, "pgd_neurons": 32}


def test_the_operands_take_both_signs(shipped):
    """The products' operands lie below 0, above 0 and across 0 in some boxes (every corner matters)."""
    for name in ("product",):
        net = network(name)
        lb, ub = boxes(net)
        res = run_certifier(shipped.compiled("ibp", True), net, lb, ub)
        signs = {"neg": 0, "pos": 0, "across": 0}
        for layer in net.layers:
            if layer.kind == "mul":
                for p in layer.preds:
                    l, u = (gb.to_dense(res.store.get(p, m)) for m in ("l", "u"))
                    signs["neg"] += int((u < 0).sum())
                    signs["pos"] += int((l > 0).sum())
                    signs["across"] += int(((l < 0) & (u > 0)).sum())
        assert min(signs.values()) > 0, (name, signs)


@pytest.mark.parametrize("name", CERTIFIERS)
def test_compiled_equals_interpreter_and_is_sound(name, compiled_matches_interpreter, shipped):
    assert_matches_interpreter_on(NETS, network, boxes, name, shipped, compiled_matches_interpreter, CHECK)


@pytest.mark.parametrize("name", CERTIFIERS)
def test_exact_on_a_point(name, shipped):
    assert_exact_on_a_point(name, shipped.compiled(name, True), NETS, network)


def test_ibp_images_are_exact(shipped):
    """IBP's bounds of every product and function layer are the exact image of its inputs' bounds."""
    for net_name in NETS:
        net = network(net_name)
        lb, ub = boxes(net)
        res = run_certifier(shipped.compiled("ibp", True), net, lb, ub)
        get = lambda k, m: gb.to_dense(res.store.get(k, m))  # noqa: E731
        for layer in net.layers:
            if layer.kind == "mul":
                want = binary_image("mul", *[(get(p, "l"), get(p, "u")) for p in layer.preds])
            elif layer.kind in UNARY or layer.kind == "reciprocal":
                want = elementwise_image(layer.kind, None, get(layer.preds[0], "l"), get(layer.preds[0], "u"))
            else:
                continue
            torch.testing.assert_close(get(layer.index, "l"), want[0], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(get(layer.index, "u"), want[1], rtol=1e-12, atol=1e-12)


def test_the_boxes_reach_every_branch(shipped):
    """The functions' inputs span several steps/periods in some boxes (sign: both sides of 0; sin/cos:
    intervals holding an extreme and intervals without one; reciprocal: positive and negative)."""
    seen = {}
    for net_name in NETS:
        net = network(net_name)
        lb, ub = boxes(net)
        res = run_certifier(shipped.compiled("ibp", True), net, lb, ub)
        for layer in net.layers:
            if layer.kind in UNARY or layer.kind == "reciprocal":
                l, u = (gb.to_dense(res.store.get(layer.preds[0], m)) for m in ("l", "u"))
                s = seen.setdefault(layer.kind, set())
                s.update({"neg" if bool((u < 0).any()) else None, "pos" if bool((l > 0).any()) else None,
                          "wide" if bool((u - l > 7).any()) else None, "narrow" if bool((u - l < 0.5).any()) else None})
    for kind in ("sign", "floor", "sin", "cos"):
        assert {"neg", "pos", "wide", "narrow"} <= seen[kind], (kind, seen[kind])
    assert {"neg", "pos"} <= seen["reciprocal"]


def test_deeppoly_products_are_inside_the_interval_product(shipped):
    """DeepPoly's bounds of the first product (its operands' bounds are IBP's: exact affine maps and a
    ReLU) lie inside IBP's: the interval product intersected with McCormick's back-substituted planes."""
    net = network("product")
    lb, ub = boxes(net)
    ibp = run_certifier(shipped.compiled("ibp", True), net, lb, ub)
    dp = run_certifier(shipped.compiled("deeppoly", True), net, lb, ub)
    first = next(l.index for l in net.layers if l.kind == "mul")
    li, ui = (gb.to_dense(ibp.store.get(first, m)) for m in ("l", "u"))
    ld, ud = (gb.to_dense(dp.store.get(first, m)) for m in ("l", "u"))
    assert bool((ld >= li - 1e-12).all()) and bool((ud <= ui + 1e-12).all())
