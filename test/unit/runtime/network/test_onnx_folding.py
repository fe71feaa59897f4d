"""Shape computations are folded at load time (issue 27): ``Shape``, ``ConstantOfShape``, ``Gather``,
``Slice``, ``Concat``, ``Unsqueeze``, ``Cast``, ``Range``, ``Equal``, ``Where``, ``Expand`` on
constants and static shapes leave no layer; the network equals onnxruntime."""

from __future__ import annotations

import numpy as np

import pytest
import torch
from onnx import TensorProto, helper

from cfruntime.network import network_from_model
from cfruntime.network.builders import make_model
from cfruntime.network.onnx_folding import FoldingError, fold_node, foldable
from cftest.onnx_reference import ort_run

RNG = np.random.default_rng(27)
i64 = lambda *v: np.array(v, np.int64)  # noqa: E731


def equals_ort(model, n=5):
    net = network_from_model(model)
    xs = RNG.uniform(-2, 2, (n, *net.input_shape))
    ours = net(torch.from_numpy(xs)).numpy()
    ref = ort_run(model, xs.astype(np.float32), batch_one=True).reshape(n, -1)
    assert np.abs(ours - ref).max() <= 1e-5 * max(1.0, float(np.abs(ref).max()))
    return net


def test_reshape_by_a_computed_shape_is_one_layer():
    """``x.reshape(x.shape[0], -1) @ W`` as exporters write it (vit, dist_shift)."""
    nodes = [helper.make_node("Shape", ["input"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["b"], axis=0, name="gather"),
             helper.make_node("Unsqueeze", ["b", "ax0"], ["bu"], name="unsq"),
             helper.make_node("Concat", ["bu", "minus1"], ["newshape"], axis=0, name="cat"),
             helper.make_node("Reshape", ["input", "newshape"], ["flat"], name="reshape"),
             helper.make_node("MatMul", ["flat", "W"], ["output"], name="mm")]
    inits = {"zero": np.array(0, np.int64), "ax0": i64(0), "minus1": i64(-1), "W": RNG.standard_normal((12, 4)).astype(np.float32)}
    net = equals_ort(make_model(nodes, inits, (3, 4)))
    assert [l.kind for l in net.layers] == ["input", "affine"]


def test_masks_made_of_shapes_fold_into_the_weights():
    """``ConstantOfShape(Shape(x)) == c`` -> ``Where`` -> ``Expand`` -> ``Mul``: one affine layer."""
    nodes = [helper.make_node("Shape", ["input"], ["s"], name="shape"),
             helper.make_node("Slice", ["s", "one", "three"], ["s12"], name="slice"),
             helper.make_node("ConstantOfShape", ["s12"], ["zeros"], name="cos",
                              value=helper.make_tensor("v", TensorProto.INT64, [1], [0])),
             helper.make_node("Range", ["r0", "r4", "r1"], ["ramp"], name="range"),
             helper.make_node("Add", ["zeros", "ramp"], ["grid"], name="grid"),
             helper.make_node("Equal", ["grid", "two"], ["mask"], name="eq"),
             helper.make_node("Where", ["mask", "a", "b"], ["w"], name="where"),
             helper.make_node("Expand", ["w", "s"], ["wx"], name="expand"),
             helper.make_node("Cast", ["wx"], ["wf"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Mul", ["input", "wf"], ["m"], name="mul"),
             helper.make_node("Relu", ["m"], ["output"], name="relu")]
    scalar = lambda v: np.array(v, np.int64)  # noqa: E731
    inits = {"one": i64(1), "three": i64(3), "r0": scalar(0), "r4": scalar(4), "r1": scalar(1), "two": i64(2),
             "a": np.array(3.0, np.float64), "b": np.array(-0.5, np.float64)}
    net = equals_ort(make_model(nodes, inits, (3, 4), output_rank=3))
    assert [l.kind for l in net.layers] == ["input", "affine", "relu"]
    x = torch.ones(1, 12, dtype=torch.float64)
    expect = torch.tensor([[-0.5, -0.5, 3.0, -0.5] * 3], dtype=torch.float64)
    torch.testing.assert_close(net(x), torch.relu(expect))


def test_size_and_shape_with_start_end():
    """``Shape(x, start=1)`` (opset 15) and ``Size``: the static shape of the perturbed value."""
    nodes = [helper.make_node("Shape", ["input"], ["s"], start=1, name="shape"),
             helper.make_node("Size", ["input"], ["n"], name="size"),
             helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("ReduceProd", ["s"], ["p"], keepdims=0, name="prod"),
             helper.make_node("Cast", ["p"], ["pf"], to=TensorProto.FLOAT, name="cast2"),
             helper.make_node("Div", ["nf", "pf"], ["ratio"], name="div"),
             helper.make_node("Mul", ["input", "ratio"], ["m"], name="mul"),
             helper.make_node("Relu", ["m"], ["output"], name="relu")]
    model = make_model(nodes, {}, (2, 3), opset=15, output_rank=3)
    net = equals_ort(model)
    assert [l.kind for l in net.layers] == ["input", "relu"]  # Size / prod(shape[1:]) = 1: no affine layer


def test_fold_node_uses_the_specification():
    """Gather with negative indices, Slice clamps (onnx.reference's), integer Div truncates (ONNX
    Runtime's: onnx.reference floors)."""
    div = helper.make_node("Div", ["a", "b"], ["y"])
    assert fold_node(div, [i64(7, -7), i64(2, 2)], 13)[0].tolist() == [3, -3]
    gather = helper.make_node("Gather", ["a", "i"], ["y"], axis=0)
    assert fold_node(gather, [i64(4, 5, 6), np.array(-1, np.int64)], 13)[0].tolist() == 6
    sl = helper.make_node("Slice", ["a", "s", "e"], ["y"])
    assert fold_node(sl, [np.arange(5.0), i64(1), i64(99)], 13)[0].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert fold_node(helper.make_node("Cos", ["a"], ["y"]), [np.array([0.0])], 13)[0].dtype == np.float64


def test_random_ops_and_unknown_ops_are_not_folded():
    assert not foldable("RandomNormalLike") and not foldable("NoSuchOp") and foldable("Where")
    with pytest.raises(FoldingError, match="no reference implementation of 'RandomUniformLike'"):
        fold_node(helper.make_node("RandomUniformLike", ["a"], ["y"]), [np.zeros(2)], 13)


def test_a_failing_constant_node_is_one_line():
    """A constant node the specification cannot evaluate (a Reshape to a computed, incompatible shape,
    which the checker's inference cannot see) names the node."""
    nodes = [helper.make_node("Add", ["bad0", "zero"], ["bad"], name="computed"),
             helper.make_node("Reshape", ["w", "bad"], ["w2"], name="rs_w"),
             helper.make_node("Add", ["input", "w2"], ["output"], name="add")]
    model = make_model(nodes, {"w": np.ones(6, np.float32), "bad0": i64(4, 2), "zero": i64(0, 0)}, (6,), check=False)
    with pytest.raises(Exception) as ei:
        network_from_model(model)
    assert str(ei.value).startswith("error: <model>: ") and "\n" not in str(ei.value) and "rs_w" in str(ei.value)



def test_constants_fold_at_the_models_opset():
    """``Unsqueeze`` with an ``axes`` attribute (opset 11; an input from 13) folds as opset 11 says."""
    nodes = [helper.make_node("Unsqueeze", ["w"], ["w2"], axes=[0], name="unsq_w"),
             helper.make_node("Add", ["input", "w2"], ["output"], name="add")]
    net = equals_ort(make_model(nodes, {"w": np.arange(3, dtype=np.float32)}, (3,), opset=11))
    assert [l.kind for l in net.layers] == ["input", "affine"]
