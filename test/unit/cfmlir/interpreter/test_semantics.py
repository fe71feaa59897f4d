"""Evaluator semantics: fresh noise symbols, currying, per-neuron conditionals, input initialisation
from the shape constraints, and one-line errors."""

from __future__ import annotations

import pytest
import torch

from cfmlir.interpreter.errors import InterpreterError
from cfmlir.interpreter.run import analyze, compile_source, load_certifier
from cfmlir.interpreter.values import Poly, Sym
from cfruntime.network.graph import Layer, Network
from cftest.interp import mlp

NET = dict(weights=[[[1.0, -2.0]]], biases=[[0.5]])  # y = x1 - 2 x2 + 1/2 (input -> affine)

HEAD = "def Shape as (Float lo, Float hi, SymExp Z){[(curr >= curr[lo]),(curr <= curr[hi]),(curr In curr[Z])]};\n"
FLOW = "func priority(Neuron n) = n[layer];\nfunc stop(Neuron n) = true;\nflow(forward, priority, stop, t);\n"


def prog(body: str, funcs: str = ""):
    return compile_source(HEAD + funcs + "transformer t{\n" + body + "\n}\n" + FLOW, "sem.cf")


def test_input_initialised_from_constraints_not_names():
    # members named lo/hi, constraints written with curr on the left: lo is the lower bound.
    p = prog("Affine -> (1.0, 2.0, prev[Z].dot(curr[weight]) + sym + sym);")
    res = analyze(p, mlp(**NET), [0.0, -1.0], [1.0, 3.0])
    assert res.member("lo", 0) == [0.0, -1.0] and res.member("hi", 0) == [1.0, 3.0]
    z0, z1 = res.member("Z", 0)
    assert z0 == Sym(0.5, {0: 0.5}) and z1 == Sym(1.0, {1: 2.0})
    # sym is fresh on every evaluation: two new symbols (2 and 3), each with coefficient 1
    (z,) = res.member("Z", 1)
    assert z == Sym(0.5 - 2.0, {0: 0.5, 1: -4.0, 2: 1.0, 3: 1.0})
    assert res.noise_symbols == 4


def test_currying_and_per_neuron_conditionals():
    funcs = "func add3(Float a, Float b, Float c) = a + b + c;\nfunc app(Float x) = add3(1.0)(x)(10.0);\n"
    p = prog("Affine -> (app(curr[bias]), curr[layer] == 1 ? 7.0 : 8.0, curr[bias] > 0.0 ? sym : 0.0);", funcs)
    net = mlp([[[1.0, 1.0], [1.0, 1.0]]], [[0.5, -0.5]])
    res = analyze(p, net, [0.0, 0.0], [1.0, 1.0])
    assert res.member("lo", 1) == [11.5, 10.5]
    assert res.member("hi", 1) == [7.0, 7.0]
    za, zb = res.member("Z", 1)
    assert za == Sym(0.0, {2: 1.0}) and zb == Sym(0.0, {})


def test_map_over_polyexp_and_dot():
    p = compile_source(
        "def Shape as (Float l, Float u, PolyExp L){[(curr[l]<=curr),(curr[u]>=curr),(curr[L]<=curr)]};\n"
        "func f(Neuron n, Float c) = c * n[u] + 100.0;\n"
        "transformer t{ Affine -> ((prev.dot(curr[weight]) + curr[bias]).map(f), 0.0, prev.dot(curr[weight]) + curr[bias]); }\n"
        + FLOW, "map.cf")
    res = analyze(p, mlp(**NET), [0.0, -1.0], [1.0, 3.0])
    # map: const 1/2 + f(x1, 1) + f(x2, -2) = 1/2 + (1 + 100) + (-6 + 100)
    assert res.lower == [195.5]
    (L,) = res.member("L", 1)
    assert L == Poly(0.5, {0: 1.0, 1: -2.0})


def test_missing_rule_is_a_one_line_error():
    base = mlp([[[1.0]], [[1.0]]], [[0.0], [0.0]])  # input, affine, relu, affine
    net = Network(base.layers + [Layer(index=4, kind="add", shape=(1,), preds=[1, 3])], source="handbuilt.onnx")
    src = ("def Shape as (Float lo, Float hi){[(curr >= curr[lo]),(curr <= curr[hi])]};\n"
           "transformer t{ Affine -> (prev[lo].dot(curr[weight]), prev[hi].dot(curr[weight])); "
           "Relu -> (prev[lo], prev[hi]); }\n" + FLOW)
    with pytest.raises(InterpreterError) as ei:  # t has no Neuron_add rule (every shipped certifier has one)
        analyze(compile_source(src, "t.cf"), net, [0.0], [1.0])
    assert str(ei.value) == "error: certifier 't' has no rule for 'Neuron_add' (layer 4 of handbuilt.onnx)"


def test_member_read_before_computed():
    src = (HEAD + "transformer t{ Affine -> (prev[lo].dot(curr[weight]), 0.0, 0.0); Relu -> (prev[lo], 0.0, 0.0); }\n"
           "func priority(Neuron n) = 0 - n[layer];\nfunc stop(Neuron n) = false;\nflow(forward, priority, stop, t);\n")
    p = compile_source(src, "rev.cf")
    with pytest.raises(InterpreterError, match="read before the flow computed it"):
        analyze(p, mlp([[[1.0]], [[1.0]]], [[0.0], [0.0]]), [0.0], [1.0])


def test_undetermined_input_member_is_an_error():
    with pytest.raises(InterpreterError, match="cannot initialise shape member 'k'"):
        compile_source("def Shape as (Float l, Float k){[(curr[l]<=curr)]};\ntransformer t{ Affine -> (0.0, 0.0); }\n"
                       + FLOW, "k.cf")


def test_sigmoid_and_add_layers():
    # input x in [-1, 1] (2 neurons) -> affine (identity) -> sigmoid, and a residual add of affine and sigmoid
    eye = torch.eye(2, dtype=torch.float64)
    layers = [Layer(index=0, kind="input", shape=(2,)),
              Layer(index=1, kind="affine", shape=(2,), preds=[0], linear_kind="dense", weight=eye, bias=torch.zeros(2, dtype=torch.float64)),
              Layer(index=2, kind="sigmoid", shape=(2,), preds=[1]),
              Layer(index=3, kind="add", shape=(2,), preds=[1, 2])]
    net = Network(layers, source="res.onnx")
    res = analyze(load_certifier("ibp"), net, [-1.0, 0.0], [1.0, 0.0])
    import math
    s = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert res.layer_bounds()[2][0] == pytest.approx([s(-1), 0.5], abs=1e-12)
    assert res.lower == pytest.approx([-1 + s(-1), 0.5], abs=1e-12) and res.upper == pytest.approx([1 + s(1), 0.5], abs=1e-12)
    for name in ("deeppoly", "deepz", "crown_ibp"):
        r = analyze(load_certifier(name), net, [-1.0, 0.0], [1.0, 0.0])
        # sound: min/max of x + sigmoid(x) (increasing) are at the box corners
        assert r.lower[0] <= -1 + s(-1) + 1e-9 and r.upper[0] >= 1 + s(1) - 1e-9 and r.lower[0] >= -3 and r.upper[0] <= 3
