"""Linear ops on perturbed values (issue 27): selections with constant parameters (Gather,
GatherElements, GatherND, ScatterND, Where, Expand, Tile, Resize/Upsample nearest, DepthToSpace),
Neg, ReduceSum/ReduceMean, Add/Sub of two values, ConvTranspose.  Every model built here equals
onnxruntime on random inputs and has the intended layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

from cfruntime.errors import UnsupportedOpError
from cfruntime.network import network_from_model
from cfruntime.network.builders import make_model
from cftest.ort_match import f32, kinds, matches_ort

i64 = lambda *v: np.array(v, np.int64)  # noqa: E731


def free_output(model):
    """The model with its output's dimensions left symbolic (the loader infers them)."""
    for i, d in enumerate(model.graph.output[0].type.tensor_type.shape.dim):
        d.dim_param = f"o{i}"
    return model


def one(op, inputs, inits, shape, opset=13, output_rank=2, **attrs):
    return make_model([helper.make_node(op, inputs, ["output"], name=op.lower(), **attrs)], inits, shape, opset=opset,
                      output_rank=output_rank)


SELECTIONS = {
    "gather": lambda: one("Gather", ["input", "idx"], {"idx": i64(4, 0, -1, 2)}, (5,), axis=1),
    "gather_2d": lambda: one("Gather", ["input", "idx"], {"idx": i64(2, 0)}, (3, 4), output_rank=3, axis=1),
    "gather_elements": lambda: one("GatherElements", ["input", "idx"], {"idx": np.array([[[0, 2], [1, 1], [3, 0]]], np.int64)},
                                   (3, 4), output_rank=3, axis=2),
    "gather_nd": lambda: one("GatherND", ["input", "idx"], {"idx": np.array([[[1, 2], [0, 3]]], np.int64)}, (3, 4),
                             batch_dims=1),
    "scatter_nd": lambda: free_output(make_model([
        helper.make_node("Relu", ["input"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "rs"], ["r2"], name="rs"),
        helper.make_node("ScatterND", ["data", "idx", "r2"], ["output"], name="scatter")],
        {"data": np.ones((6, 3), np.float32), "idx": np.array([[4], [1]], np.int64), "rs": i64(2, 3)}, (2, 3),
        dynamic_batch=False, check=False)),
    "where": lambda: one("Where", ["cond", "input", "other"], {"cond": np.array([True, False, True, False]),
                                                               "other": np.float32(-3.0)}, (4,)),
    "expand": lambda: one("Expand", ["input", "shape"], {"shape": i64(1, 3, 4)}, (3, 1), output_rank=3),
    "tile": lambda: one("Tile", ["input", "reps"], {"reps": i64(1, 2, 3)}, (2, 2), output_rank=3),
    "resize_nearest": lambda: one("Resize", ["input", "", "scales"], {"scales": np.array([1, 1, 2, 2], np.float32)},
                                  (2, 3, 3), output_rank=4, mode="nearest"),
    "resize_sizes": lambda: one("Resize", ["input", "", "", "sizes"], {"sizes": i64(1, 2, 5, 4)}, (2, 3, 3),
                                output_rank=4, mode="nearest", coordinate_transformation_mode="asymmetric",
                                nearest_mode="floor"),
    "upsample": lambda: one("Upsample", ["input", "scales"], {"scales": np.array([1, 1, 2, 3], np.float32)}, (2, 2, 3),
                            opset=9, output_rank=4, mode="nearest"),
    "depth_to_space": lambda: one("DepthToSpace", ["input"], {}, (8, 2, 2), output_rank=4, blocksize=2),
}


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_selections_equal_onnxruntime_and_are_one_gather_layer(name):
    net = matches_ort(SELECTIONS[name]())
    layers = [(l.kind, l.linear_kind) for l in net.layers[1:]]
    if name == "scatter_nd":
        assert layers == [("relu", None), ("affine", "gather")]
    else:
        assert layers == [("affine", "gather")]


def test_where_of_two_branches_joins_them():
    """``Where(c, relu(x), sigmoid(x))``: elements of two layers, joined by an ``add`` layer."""
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"), helper.make_node("Sigmoid", ["input"], ["s"], name="sig"),
             helper.make_node("Where", ["cond", "r", "s"], ["output"], name="where")]
    net = matches_ort(make_model(nodes, {"cond": np.array([True, False, False, True])}, (4,)))
    assert kinds(net) == ["input", "relu", "sigmoid", "affine", "affine", "add"]


def test_a_selection_of_constants_only_is_a_constant():
    """A Where choosing the constant everywhere makes no layer from the perturbed operand."""
    nodes = [helper.make_node("Where", ["cond", "input", "other"], ["w"], name="where"),
             helper.make_node("Add", ["input", "w"], ["output"], name="add")]
    inits = {"cond": np.array([False, False, False]), "other": f32(3)}
    net = matches_ort(make_model(nodes, inits, (3,)))
    assert kinds(net) == ["input", "affine"]


def test_resize_linear_is_refused_by_name():
    model = one("Resize", ["input", "", "scales"], {"scales": np.array([1, 1, 2, 2], np.float32)}, (2, 3, 3),
                output_rank=4, mode="linear")
    with pytest.raises(UnsupportedOpError, match=r"'Resize' at node 'resize' \(mode 'linear'"):
        network_from_model(model)


def test_a_data_dependent_index_is_refused():
    nodes = [helper.make_node("Cast", ["input"], ["i"], to=TensorProto.INT64, name="cast"),
             helper.make_node("Gather", ["w", "i"], ["output"], axis=0, name="g")]
    with pytest.raises(UnsupportedOpError, match="at node 'cast'"):
        network_from_model(make_model(nodes, {"w": f32(4)}, (2,), dynamic_batch=False, output_rank=2))


def test_neg_and_reductions():
    nodes = [helper.make_node("Neg", ["input"], ["n"], name="neg"),
             helper.make_node("ReduceSum", ["n", "ax"], ["s"], keepdims=1, name="sum"),
             helper.make_node("Relu", ["s"], ["r"], name="relu"),
             helper.make_node("ReduceMean", ["r"], ["output"], axes=[2], keepdims=0, name="mean")]
    net = matches_ort(make_model(nodes, {"ax": i64(1)}, (3, 4), output_rank=2))
    assert kinds(net) == ["input", "affine", "relu", "affine"]
    x = torch.arange(12, dtype=torch.float64).reshape(1, 12) - 20
    torch.testing.assert_close(net(x), torch.relu(-x.reshape(3, 4).sum(0)).mean().reshape(1, 1))


def test_reduce_sum_opset11_attribute_and_all_axes():
    model = one("ReduceSum", ["input"], {}, (2, 3), opset=11, output_rank=1, keepdims=0, axes=[1, 2])
    net = matches_ort(model)
    assert kinds(net) == ["input", "affine"] and net.output_size == 1


def test_add_and_sub_of_two_values_over_one_layer_are_one_dense_stage():
    """``x[1:] - x[:-1]`` and ``relu(x) + 2 relu(x)[::-1]``: one affine layer over the common layer."""
    nodes = [helper.make_node("Slice", ["input", "s1", "e1", "ax"], ["a"], name="sl1"),
             helper.make_node("Slice", ["input", "s0", "e0", "ax"], ["b"], name="sl0"),
             helper.make_node("Sub", ["a", "b"], ["d"], name="diff"),
             helper.make_node("Relu", ["d"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "two"], ["r2"], name="twice"),
             helper.make_node("Slice", ["r2", "sr", "er", "ax", "step"], ["rev"], name="rev"),
             helper.make_node("Add", ["r", "rev"], ["output"], name="add")]
    inits = {"s1": i64(1), "e1": i64(5), "s0": i64(0), "e0": i64(4), "ax": i64(1), "two": np.float32(2.0),
             "sr": i64(-1), "er": i64(-10), "step": i64(-1)}
    net = matches_ort(make_model(nodes, inits, (5,)))
    assert [(l.kind, l.linear_kind) for l in net.layers[1:]] == [("affine", "dense"), ("relu", None), ("affine", "dense")]


def test_sub_of_two_layers_is_an_add_layer_with_a_negated_operand():
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"), helper.make_node("Sigmoid", ["input"], ["s"], name="sig"),
             helper.make_node("Sub", ["r", "s"], ["output"], name="sub")]
    net = matches_ort(make_model(nodes, {}, (4,)))
    assert kinds(net) == ["input", "relu", "sigmoid", "affine", "add"]


def test_a_larger_constant_broadcasts_the_value():
    nodes = [helper.make_node("Mul", ["input", "c"], ["output"], name="mul")]
    net = matches_ort(make_model(nodes, {"c": f32(1, 3, 2)}, (3, 1), output_rank=3))
    assert kinds(net) == ["input", "affine"] and net.output_size == 6


CONVT = [
    dict(C=2, O=3, H=3, W=4, k=(3, 3), strides=[2, 2], pads=[0, 0, 0, 0]),
    dict(C=2, O=2, H=4, W=4, k=(4, 4), strides=[2, 2], pads=[1, 1, 1, 1]),
    dict(C=3, O=2, H=5, W=3, k=(3, 2), strides=[1, 1], pads=[1, 0, 1, 0]),
    dict(C=2, O=2, H=3, W=3, k=(3, 3), strides=[3, 2], pads=[2, 1, 0, 1], output_padding=[1, 1]),
    dict(C=1, O=2, H=3, W=3, k=(2, 3), strides=[2, 1], pads=[0, 1, 1, 0], dilations=[2, 2]),
    dict(C=2, O=1, H=2, W=2, k=(2, 2), strides=[4, 4], pads=[0, 0, 0, 0]),
]


@pytest.mark.parametrize("case", range(len(CONVT)))
def test_conv_transpose_equals_onnxruntime(case):
    c = dict(CONVT[case])
    C, O, H, W, k = c.pop("C"), c.pop("O"), c.pop("H"), c.pop("W"), c.pop("k")
    node = helper.make_node("ConvTranspose", ["input", "K", "B"], ["output"], name="convt", kernel_shape=list(k), **c)
    net = matches_ort(make_model([node], {"K": f32(C, O, *k), "B": f32(O)}, (C, H, W), output_rank=4))
    s = c["strides"]
    expect = ["input", "affine"] if s == [1, 1] else ["input", "affine", "affine"]
    assert kinds(net) == expect
    assert max(l.size for l in net.layers) <= s[0] * s[1] * net.output_size + O * (s[0] * s[1]) * (H + W + 8) * 4


def test_conv_transpose_then_batchnorm_relu_is_the_cgan_block():
    nodes = [helper.make_node("ConvTranspose", ["input", "K", "B"], ["c"], name="convt", strides=[2, 2], kernel_shape=[4, 4]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["output"], name="relu")]
    inits = {"K": f32(4, 3, 4, 4), "B": f32(3), "g": f32(3), "b": f32(3), "m": f32(3), "v": np.abs(f32(3)) + 0.5}
    net = matches_ort(make_model(nodes, inits, (4, 2, 2), output_rank=4))
    assert kinds(net) == ["input", "affine", "affine", "relu"]


@pytest.mark.parametrize("op", ["Sign", "Floor", "Sin", "Cos", "Exp", "Reciprocal"])
def test_issue27_elementwise_ops_are_one_layer_each(op):
    nodes = [helper.make_node("Gemm", ["input", "W"], ["h"], transB=1, name="fc"),
             helper.make_node(op, ["h"], ["output"], name=op.lower())]
    net = matches_ort(make_model(nodes, {"W": f32(5, 3)}, (3,)), spread=3.0, tol=1e-5)
    assert [l.kind for l in net.layers] == ["input", "affine", op.lower()]
