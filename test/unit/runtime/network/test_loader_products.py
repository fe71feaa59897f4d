"""Products of perturbed values (issue 27): Mul and MatMul of two values, Pow with integer exponents,
Max/Min of values and constants.  Every model equals onnxruntime and has the intended layers."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from cfruntime.network.builders import make_model
from cftest.ort_match import f32, kinds, matches_ort


def test_mul_of_two_values_broadcasts_and_is_one_mul_layer():
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"),
             helper.make_node("Slice", ["input", "s", "e", "ax"], ["col"], name="col"),
             helper.make_node("Mul", ["r", "col"], ["output"], name="mul")]
    inits = {"s": np.array([0], np.int64), "e": np.array([1], np.int64), "ax": np.array([2], np.int64)}
    net = matches_ort(make_model(nodes, inits, (3, 4), output_rank=3))
    assert kinds(net) == ["input", "relu", "affine", "mul"]
    mul = net.layers[-1]
    assert mul.preds == [1, 2] and mul.size == 12


def test_a_square_is_one_mul_layer_over_one_layer():
    nodes = [helper.make_node("Gemm", ["input", "W"], ["h"], transB=1, name="fc"),
             helper.make_node("Mul", ["h", "h"], ["output"], name="sq")]
    net = matches_ort(make_model(nodes, {"W": f32(4, 3)}, (3,)))
    assert kinds(net) == ["input", "affine", "mul"] and net.layers[-1].preds == [1, 1]


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_pow_by_an_integer(n):
    nodes = [helper.make_node("Pow", ["input", "e"], ["p"], name="pow"), helper.make_node("Relu", ["p"], ["output"], name="r")]
    net = matches_ort(make_model(nodes, {"e": np.float32(n)}, (4,)), spread=1.5, tol=1e-4)
    assert kinds(net).count("mul") == {1: 0, 2: 1, 3: 2, 5: 3}[n]


def test_attention_matmuls_of_two_values():
    """``softmax``-free attention core: ``(x Wq)(x Wk)^T`` then ``. (x Wv)``, per head, as exported."""
    T, D = 3, 4
    nodes = [helper.make_node("MatMul", ["input", "Wq"], ["q"], name="q"),
             helper.make_node("MatMul", ["input", "Wk"], ["k"], name="k"),
             helper.make_node("MatMul", ["input", "Wv"], ["v"], name="v"),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="kt"),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
             helper.make_node("MatMul", ["s", "v"], ["output"], name="sv")]
    inits = {"Wq": f32(D, D), "Wk": f32(D, D), "Wv": f32(D, D)}
    net = matches_ort(make_model(nodes, inits, (T, D), output_rank=3), tol=1e-4)
    assert kinds(net).count("mul") == 2
    assert net.output_size == T * D


def test_max_min_of_values_and_constants():
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"),
             helper.make_node("Sigmoid", ["input"], ["s"], name="sig"),
             helper.make_node("Max", ["r", "s", "c"], ["m"], name="max"),
             helper.make_node("Min", ["m", "input"], ["output"], name="min")]
    net = matches_ort(make_model(nodes, {"c": np.float32(0.3)}, (5,)))
    assert kinds(net).count("relu") == 4
    x = np.array([[-2.0, -0.1, 0.0, 0.4, 3.0]])
    import torch

    got = net(torch.from_numpy(x)).numpy()
    expect = np.minimum(np.maximum(np.maximum(np.maximum(x, 0), 1 / (1 + np.exp(-x))), 0.3), x)
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-12)


def test_min_of_two_slices_of_one_layer():
    """``min(a, b) = a - relu(a - b)``: ``a - b`` is one dense layer over the input, the result sums a
    selection of the input and the negated ReLU layer."""
    nodes = [helper.make_node("Split", ["input"], ["a", "b"], axis=1, name="split"),
             helper.make_node("Min", ["a", "b"], ["output"], name="min")]
    net = matches_ort(make_model(nodes, {}, (6,), opset=13))
    assert [(l.kind, l.linear_kind) for l in net.layers[1:]] == [
        ("affine", "dense"), ("relu", None), ("affine", "gather"), ("affine", "gather"), ("add", None)]


def test_division_by_a_value_is_a_reciprocal_and_a_product():
    nodes = [helper.make_node("Sigmoid", ["input"], ["s"], name="sig"),
             helper.make_node("Add", ["s", "one"], ["d"], name="plus1"),
             helper.make_node("Div", ["input", "d"], ["q"], name="div"),
             helper.make_node("Div", ["two", "d"], ["r"], name="div2"),
             helper.make_node("Add", ["q", "r"], ["output"], name="add")]
    net = matches_ort(make_model(nodes, {"one": np.float32(1.0), "two": np.float32(2.0)}, (4,)), tol=1e-5)
    assert kinds(net).count("reciprocal") == 2 and kinds(net).count("mul") == 1


@pytest.mark.parametrize("opset,axis,shape", [(13, -1, (2, 3)), (13, 1, (3, 2)), (11, 1, (2, 3)), (11, 2, (2, 2, 3))])
def test_softmax_inside_the_network(opset, axis, shape):
    """``softmax(x) W``: ``1 / sum_j exp(x_j - x_i)`` per group (opset 13: one axis; before: every axis
    from ``axis`` on), equal to onnxruntime."""
    n = int(np.prod(shape))
    nodes = [helper.make_node("Softmax", ["input"], ["p"], axis=axis, name="softmax"),
             helper.make_node("Flatten", ["p"], ["f"], axis=1, name="flat"),
             helper.make_node("Gemm", ["f", "W"], ["output"], transB=1, name="fc")]
    net = matches_ort(make_model(nodes, {"W": f32(3, n)}, shape, opset=opset), spread=3.0, tol=1e-5)
    assert kinds(net).count("exp") == 1 and kinds(net).count("reciprocal") == 1
