"""Small hand-built networks of issue 27's layer kinds (products of two layers, a square, Sign, Floor,
Sin, Cos, Exp, Reciprocal, a Softmax loaded from ONNX): :func:`network` by name, :data:`NETS` every name.
Shared by the tests of those rules in the plain certifiers (``test_vnncomp2024_rules.py``) and in the
parametric ones at random parameters (``test_parametric_certifiers.py``)."""

from __future__ import annotations

from functools import lru_cache

import torch

from cfruntime.network.graph import Layer, Network


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
