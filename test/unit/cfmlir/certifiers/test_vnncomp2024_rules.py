"""The rules of issue 27's layer kinds in the shipped certifiers: ``mul`` (Neuron_mult, McCormick),
``sign``, ``floor``, ``sin``, ``cos``, ``exp``, ``reciprocal`` and a Softmax built from them.  On small
networks built here (products of two layers, a square, operands on both sides of 0; each function
over several periods, steps or orders of magnitude; reciprocals of positive and of negative values;
a Softmax loaded from ONNX), the compiled engine gives the reference interpreter's bounds on every
layer in every mode, and those bounds contain every concrete value the soundness checker finds
(samples, box vertices, PGD); every certifier is exact on a box that is one point; IBP's bounds are
the exact images."""

from functools import lru_cache

import pytest
import torch

from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.network.graph import Layer, Network, binary_image, elementwise_image
from cftest.activation_nets import CERTIFIERS, affine, assert_exact_on_a_point, assert_matches_interpreter_on, boxes

CHECK = {"n_samples": 256, "n_vertices": 8, "pgd_steps": 20, "pgd_neurons": 32}


def _dense(g, n_out, n_in, scale=1.5):
    return torch.randn(n_out, n_in, generator=g, dtype=torch.float64) * scale / n_in ** 0.5, \
        torch.randn(n_out, generator=g, dtype=torch.float64) * 0.4


@lru_cache(maxsize=None)
def network(name):
    """``product``: ``relu(A x) * (B x)`` then an affine layer and a square of it: products of two
    layers and of a layer with itself, operands of both signs (the ReLU's are >= 0)."""
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    L = [Layer(index=0, kind="input", shape=(3,))]

    def add(kind, preds, **kw):
        L.append(Layer(index=len(L), kind=kind, preds=list(preds), **kw))
        return len(L) - 1

    if name == "product":
        a = add("affine", [0], shape=(4,), linear_kind="dense", weight=_dense(g, 4, 3)[0], bias=_dense(g, 4, 3)[1])
        r = add("relu", [a], shape=(4,))
        b = add("affine", [0], shape=(4,), linear_kind="dense", weight=_dense(g, 4, 3)[0], bias=_dense(g, 4, 3)[1])
        m = add("mul", [r, b], shape=(4,))
        w, bias = _dense(g, 3, 4)
        c = add("affine", [m], shape=(3,), linear_kind="dense", weight=w, bias=bias)
        s = add("mul", [c, c], shape=(3,))
        w, bias = _dense(g, 2, 3)
        add("affine", [s], shape=(2,), linear_kind="dense", weight=w, bias=bias)
    elif name == "reciprocal":  # 1/x of positive values (after exp) and of negative ones
        a = add("affine", [0], shape=(5,), linear_kind="dense", weight=_dense(g, 5, 3)[0], bias=_dense(g, 5, 3)[1])
        e = add("exp", [a], shape=(5,))
        w = _dense(g, 4, 5)[0].abs()
        p = add("affine", [e], shape=(4,), linear_kind="dense", weight=w, bias=torch.full((4,), 0.5, dtype=torch.float64))
        r = add("reciprocal", [p], shape=(4,))
        w, bias = _dense(g, 3, 4)
        c = add("affine", [r], shape=(3,), linear_kind="dense", weight=w, bias=bias)
        e2 = add("exp", [c], shape=(3,))
        n = add("affine", [e2], shape=(3,), linear_kind="dense", weight=-_dense(g, 3, 3)[0].abs(),
                bias=torch.full((3,), -0.5, dtype=torch.float64))
        r2 = add("reciprocal", [n], shape=(3,))
        w, bias = _dense(g, 2, 3)
        add("affine", [r2], shape=(2,), linear_kind="dense", weight=w, bias=bias)
    elif name == "softmax":  # loaded from ONNX: differences, exp, sums, reciprocal
        return _softmax_network()
    else:  # ``input - (affine - kind) x 2 - affine`` with the pre-activations scaled by UNARY[name]
        kind, scale = name, UNARY[name]
        prev, n_in = 0, 3
        for n_out in (5, 4):
            w, bias = _dense(g, n_out, n_in, scale)
            a = add("affine", [prev], shape=(n_out,), linear_kind="dense", weight=w, bias=bias * scale)
            prev, n_in = add(kind, [a], shape=(n_out,)), n_out
        w, bias = _dense(g, 2, n_in)
        add("affine", [prev], shape=(2,), linear_kind="dense", weight=w, bias=bias)
    return Network(L, source=f"{name}.handbuilt")


def _softmax_network():
    import numpy as np
    from onnx import helper

    from cfruntime.network import network_from_model
    from cfruntime.network.builders import make_model

    rng = np.random.default_rng(2024)
    nodes = [helper.make_node("MatMul", ["input", "Wq"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
             helper.make_node("Flatten", ["p"], ["f"], axis=1, name="flat"),
             helper.make_node("Gemm", ["f", "W"], ["output"], transB=1, name="fc")]
    inits = {"Wq": rng.standard_normal((3, 3)).astype(np.float32), "W": rng.standard_normal((2, 6)).astype(np.float32)}
    return network_from_model(make_model(nodes, inits, (2, 3)))


#: unary kind -> the scale of its pre-activations (several steps, periods, orders of magnitude)
UNARY = {"sign": 2.0, "floor": 3.0, "sin": 4.0, "cos": 4.0, "exp": 1.0}
NETS = ("product", "reciprocal", "softmax") + tuple(UNARY)


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
