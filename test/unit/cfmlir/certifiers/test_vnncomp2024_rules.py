"""The rules of issue 27's layer kinds in the shipped certifiers: ``mul`` (Neuron_mult, McCormick).
On small networks built here from layers (products of two layers, a square, operands on both sides of
0), the compiled engine gives the reference interpreter's bounds on every layer in every mode, and
those bounds contain every concrete value the soundness checker finds (samples, box vertices, PGD);
every certifier is exact on a box that is one point; IBP's product bounds are the exact image."""

from functools import lru_cache

import pytest
import torch

from cfmlir.certifiers import BASE_CERTIFIERS
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.network.graph import Layer, Network, binary_image

CERTIFIERS = list(BASE_CERTIFIERS) + ["deeppoly_0", "deeppoly_2"]
MODES = [("planned", True), ("gbscr", True), ("dense", True), ("planned", False)]
CHECK = {"n_samples": 256, "n_vertices": 8, "pgd_steps": 20, "pgd_neurons": 32}


def _affine(index, pred, w, b):
    return Layer(index=index, kind="affine", shape=(w.shape[0],), preds=[pred], linear_kind="dense", weight=w, bias=b)


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
    else:  # pragma: no cover - a name the tests do not use
        raise KeyError(name)
    return Network(L, source=f"{name}.handbuilt")


NETS = ("product",)


def boxes(net, batch=4, seed=11):
    g = torch.Generator().manual_seed(seed)
    centre = torch.rand(batch, net.input_size, generator=g, dtype=torch.float64) * 2 - 1
    radius = torch.tensor([0.02, 0.2, 0.6, 1.2], dtype=torch.float64)[:batch].unsqueeze(1)
    return centre - radius, centre + radius


def test_the_operands_take_both_signs(shipped):
    """The products' operands lie below 0, above 0 and across 0 in some boxes (every corner matters)."""
    for name in NETS:
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
    for net_name in NETS:
        net = network(net_name)
        lb, ub = boxes(net)
        compiled_matches_interpreter(f"{name} on {net_name}", net, lb, ub, shipped.interpreted(name),
                                     lambda rewrite: shipped.compiled(name, rewrite), MODES, CHECK)


@pytest.mark.parametrize("name", CERTIFIERS)
def test_exact_on_a_point(name, shipped):
    for net_name in NETS:
        net = network(net_name)
        x = boxes(net)[0][:2]
        values = net.forward_all(x)
        res = run_certifier(shipped.compiled(name, True), net, x, x)
        for layer in net.layers[1:]:
            for m in ("l", "u"):
                torch.testing.assert_close(gb.to_dense(res.store.get(layer.index, m)).expand(2, -1), values[layer.index],
                                           rtol=1e-9, atol=1e-9, msg=lambda s: f"{name} on {net_name}, layer {layer.index}: {s}")


def test_ibp_products_are_exact_images(shipped):
    for net_name in NETS:
        net = network(net_name)
        lb, ub = boxes(net)
        res = run_certifier(shipped.compiled("ibp", True), net, lb, ub)
        get = lambda k, m: gb.to_dense(res.store.get(k, m))  # noqa: E731
        for layer in net.layers:
            if layer.kind == "mul":
                want = binary_image("mul", *[(get(p, "l"), get(p, "u")) for p in layer.preds])
                torch.testing.assert_close(get(layer.index, "l"), want[0], rtol=1e-12, atol=1e-12)
                torch.testing.assert_close(get(layer.index, "u"), want[1], rtol=1e-12, atol=1e-12)


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
