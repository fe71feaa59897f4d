"""The ONNX shapes VNN-COMP networks bring (issue 16): Pad before Conv/AveragePool/MaxPool, Pad modes,
inputs without a batch dimension (VNN-COMP's ``test`` benchmark has a rank-1 input), Squeeze/Unsqueeze,
row-wise MatMul/Gemm; each model built here equals onnxruntime on random inputs, and unsupported
configurations are one-line errors."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from cfruntime.errors import UnsupportedOpError
from cfruntime.network import load_onnx, network_from_model
from cfruntime.network.builders import make_model
from cftest.onnx_reference import ort_session

RNG = np.random.default_rng(16)


def f32(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def raw_model(nodes, inits, in_dims, out_dims, opset=13, check=True):
    """A model whose input and output shapes are written as given (``in_dims`` may lack a batch)."""
    graph = helper.make_graph(
        nodes, "vnncomp_like",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(in_dims))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(out_dims))],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    return model


def ort_per_sample(model, xs: np.ndarray) -> np.ndarray:
    """onnxruntime on each sample, fed in the model's declared input shape."""
    sess = ort_session(model)
    inp = sess.get_inputs()[0]
    shape = [1 if not isinstance(d, int) else d for d in inp.shape]
    out = [sess.run(None, {inp.name: x.astype(np.float32).reshape(shape)})[0].reshape(-1) for x in xs]
    return np.stack(out)


def check_against_ort(model, n=5, lo=-1.0, hi=1.0):
    """Loader forward (float64) equals onnxruntime (float32) on ``n`` random inputs."""
    net = network_from_model(model)
    xs = RNG.uniform(lo, hi, (n, net.input_size))
    ours = net.forward(torch.from_numpy(xs)).numpy()
    ref = ort_per_sample(model, xs)
    scale = max(1.0, float(np.abs(ref).max()))
    assert ours.shape == ref.shape
    assert np.abs(ours - ref).max() <= 1e-5 * scale
    allv = net.forward_all(torch.from_numpy(xs))
    assert all(v.shape == (n, l.size) for v, l in zip(allv, net.layers))
    return net


def kinds(net):
    return [(l.kind, l.linear_kind) for l in net.layers]


def pad_node(name, inp, out, pads, mode=None, value=None, opset=13):
    """A Pad node (pads as an input since opset 11) and its initializers."""
    inits = {f"{name}_pads": np.asarray(pads, np.int64)}
    ins = [inp, f"{name}_pads"]
    if value is not None:
        inits[f"{name}_value"] = np.asarray(value, np.float32)
        ins.append(f"{name}_value")
    kw = {"mode": mode} if mode else {}
    return helper.make_node("Pad", ins, [out], name=name, **kw), inits


# -- Pad -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("conv_pads", [(0, 0, 0, 0), (1, 0, 0, 1)])
def test_zero_pad_before_conv_is_the_conv_padding(conv_pads):
    pad, inits = pad_node("pad", "X", "p", [0, 0, 1, 2, 0, 0, 2, 1])
    inits.update({"K": f32(3, 2, 3, 3), "B": f32(3)})
    nodes = [pad, helper.make_node("Conv", ["p", "K", "B"], ["c"], kernel_shape=[3, 3], pads=list(conv_pads), name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"), helper.make_node("Flatten", ["r"], ["Y"], name="flat")]
    net = check_against_ort(raw_model(nodes, inits, ["N", 2, 5, 6], ["N", "F"]))
    assert kinds(net) == [("input", None), ("affine", "conv"), ("relu", None)]
    t, l, b, r = conv_pads
    assert net[1].conv.padding == (1 + t, 2 + l, 2 + b, 1 + r)
    assert net[1].conv.in_shape == (2, 5, 6) and "pad" in net[1].name and "conv" in net[1].name


def test_zero_pad_after_normalisation_keeps_the_normalisation_apart():
    pad, inits = pad_node("pad", "d", "p", [0, 0, 1, 1, 0, 0, 1, 1])
    inits.update({"mean": np.array([0.4, 0.6], np.float32).reshape(1, 2, 1, 1), "std": np.array([0.25, 0.5], np.float32).reshape(1, 2, 1, 1),
                  "K": f32(2, 2, 2, 2)})
    nodes = [helper.make_node("Sub", ["X", "mean"], ["s"], name="sub"), helper.make_node("Div", ["s", "std"], ["d"], name="div"), pad,
             helper.make_node("Conv", ["p", "K"], ["c"], kernel_shape=[2, 2], strides=[2, 2], name="conv"),
             helper.make_node("Flatten", ["c"], ["Y"], name="flat")]
    net = check_against_ort(raw_model(nodes, inits, ["N", 2, 4, 4], ["N", "F"]), lo=0.0)
    # the zeros are inserted after the normalisation: it cannot be folded into the padded conv
    assert kinds(net) == [("input", None), ("affine", "gather"), ("affine", "conv")]
    assert net[2].conv.padding == (1, 1, 1, 1)


def test_zero_pad_before_average_pool_folds_into_the_pool():
    pad, inits = pad_node("pad", "r", "p", [0, 0, 1, 1, 0, 0, 1, 1])
    nodes = [helper.make_node("Relu", ["X"], ["r"], name="relu"), pad,
             helper.make_node("AveragePool", ["p"], ["a"], kernel_shape=[2, 2], strides=[2, 2], name="avgpool"),
             helper.make_node("Flatten", ["a"], ["Y"], name="flat")]
    net = check_against_ort(raw_model(nodes, inits, ["N", 2, 4, 4], ["N", "F"]))
    assert kinds(net) == [("input", None), ("relu", None), ("affine", "conv")]
    assert net[2].conv.padding == (1, 1, 1, 1) and net[2].conv.in_shape == (2, 4, 4)


def test_average_pool_with_own_padding_after_a_pad():
    pad, inits = pad_node("pad", "r", "p", [0, 0, 0, 1, 0, 0, 1, 0])
    nodes = [helper.make_node("Relu", ["X"], ["r"], name="relu"), pad,
             helper.make_node("AveragePool", ["p"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="avgpool"),
             helper.make_node("Flatten", ["a"], ["Y"], name="flat")]
    # count_include_pad=0: the pool's own padding is not counted (a dense layer), the Pad's zeros are
    net = check_against_ort(raw_model(nodes, inits, ["N", 1, 4, 5], ["N", "F"]))
    assert kinds(net) == [("input", None), ("relu", None), ("affine", "dense")]


def test_zero_pad_before_maxpool_is_a_layer_of_constant_zero_neurons():
    pad, inits = pad_node("pad", "r", "p", [0, 0, 1, 1, 0, 0, 1, 1])
    inits.update({"K": f32(2, 1, 2, 2)})
    nodes = [helper.make_node("Conv", ["X", "K"], ["c"], kernel_shape=[2, 2], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"), pad,
             helper.make_node("MaxPool", ["p"], ["m"], kernel_shape=[2, 2], strides=[2, 2], name="maxpool"),
             helper.make_node("Flatten", ["m"], ["Y"], name="flat")]
    # inputs below zero: many ReLU outputs are 0 and negative conv values would differ from -inf padding
    net = check_against_ort(raw_model(nodes, inits, ["N", 1, 5, 5], ["N", "F"]), lo=-2.0, hi=1.0)
    assert kinds(net) == [("input", None), ("affine", "conv"), ("relu", None), ("affine", "gather"), ("maxpool", None)]
    padded = net[3]
    assert padded.shape == (2, 6, 6) and padded.gather.in_size == 32
    zero = padded.gather.scale == 0
    assert int(zero.sum()) == 2 * (36 - 16) and torch.all(padded.bias[zero] == 0)
    assert int(net[4].maxpool.index_map.min()) >= 0  # the windows lie in the padded layer


@pytest.mark.parametrize("mode,value", [("constant", 0.75), ("reflect", None), ("edge", None)])
def test_pad_modes_and_values_are_exact_gathers(mode, value):
    pad, inits = pad_node("pad", "X", "p", [0, 0, 2, 1, 0, 0, 1, 2], mode=mode, value=value)
    inits.update({"K": f32(2, 2, 2, 2)})
    nodes = [pad, helper.make_node("Conv", ["p", "K"], ["c"], kernel_shape=[2, 2], name="conv"),
             helper.make_node("Flatten", ["c"], ["Y"], name="flat")]
    net = check_against_ort(raw_model(nodes, inits, ["N", 2, 4, 3], ["N", "F"]))
    assert kinds(net) == [("input", None), ("affine", "gather"), ("affine", "conv")]
    assert net[2].conv.padding == (0, 0, 0, 0)


def test_pad_of_a_vector_and_the_opset_10_attribute_form():
    nodes = [helper.make_node("Pad", ["X"], ["p"], pads=[0, 2, 0, 1], value=-0.5, name="pad_attr"),
             helper.make_node("Relu", ["p"], ["Y"], name="relu")]
    net = check_against_ort(raw_model(nodes, {}, [1, 3], [1, 6], opset=10))
    assert net.output_size == 6 and kinds(net) == [("input", None), ("affine", "gather"), ("relu", None)]


@pytest.mark.parametrize("case,detail", [
    ("batch", "pads on the batch dimension"),
    ("wrap", "mode 'wrap'"),
    ("negative", "negative pads"),
    ("reflect_too_wide", "reflect pads"),
])
def test_unsupported_pads_are_one_line_errors(tmp_path, case, detail):
    pads = {"batch": [1, 0, 0, 0, 0, 0, 0, 0], "negative": [0, 0, -1, 0, 0, 0, 0, 0],
            "reflect_too_wide": [0, 0, 4, 0, 0, 0, 0, 0]}.get(case, [0, 0, 1, 1, 0, 0, 1, 1])
    mode = {"wrap": "wrap", "reflect_too_wide": "reflect"}.get(case)
    pad, inits = pad_node("my_pad", "X", "Y", pads, mode=mode)
    model = raw_model([pad], inits, ["N", 1, 4, 4], ["N", 1, "H", "W"], opset=19, check=False)
    p = tmp_path / "pad.onnx"
    onnx.save(model, str(p))
    with pytest.raises(UnsupportedOpError) as ei:
        load_onnx(p)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"error: {p}: unsupported ONNX op 'Pad' at node 'my_pad' (")
    assert detail in msg


# -- inputs without a batch dimension --------------------------------------------------------------
@pytest.mark.parametrize("n_in", [1, 5])
def test_rank_one_unbatched_input(n_in):
    """VNN-COMP's test_nano/tiny/small: a vector input without a batch dimension, MatMul + Add."""
    inits = {"W1": f32(n_in, 4), "b1": f32(4), "W2": f32(4, 2), "b2": f32(2)}
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["m1"], name="mm1"), helper.make_node("Add", ["m1", "b1"], ["a1"], name="add1"),
             helper.make_node("Relu", ["a1"], ["r1"], name="relu"), helper.make_node("MatMul", ["r1", "W2"], ["m2"], name="mm2"),
             helper.make_node("Add", ["m2", "b2"], ["Y"], name="add2")]
    net = check_against_ort(raw_model(nodes, inits, [n_in], [2]))
    assert net.input_shape == (n_in,) and net.input_size == n_in and net.output_size == 2
    assert kinds(net) == [("input", None), ("affine", "dense"), ("relu", None), ("affine", "dense")]


@pytest.mark.parametrize("n_in", [1, 3])
def test_constant_matmul_vector_input(n_in):
    """VNN-COMP 2021's test_small: ``MatMul(W, X_0)`` with the constant first and a vector input [n]."""
    inits = {"W0": f32(2, n_in), "B0": f32(2), "W1": f32(1, 2), "B1": f32(1)}
    nodes = [helper.make_node("MatMul", ["W0", "X"], ["m0"], name="M0"), helper.make_node("Add", ["m0", "B0"], ["h0"], name="A0"),
             helper.make_node("Relu", ["h0"], ["r0"], name="R0"), helper.make_node("MatMul", ["W1", "r0"], ["m1"], name="M1"),
             helper.make_node("Add", ["m1", "B1"], ["Y"], name="A1")]
    net = check_against_ort(raw_model(nodes, inits, [n_in], [1]))
    assert net.input_shape == (n_in,) and kinds(net) == [("input", None), ("affine", "dense"), ("relu", None), ("affine", "dense")]


def test_constant_matmul_of_a_matrix_is_one_dense_layer():
    """``W @ X`` of a constant and a matrix (refused before issue 27): the dense map of the basis."""
    inits = {"W": f32(4, 2)}
    net = check_against_ort(raw_model([helper.make_node("MatMul", ["W", "X"], ["Y"], name="M0")], inits, [2, 3], [4, 3]))
    assert kinds(net) == [("input", None), ("affine", "dense")] and net[1].shape == (4, 3)


def test_unbatched_matrix_input_rowwise_matmul_and_reshape():
    inits = {"W": f32(3, 4), "b": f32(4), "shape": np.array([8], np.int64), "W2": f32(8, 3)}
    nodes = [helper.make_node("MatMul", ["X", "W"], ["m"], name="mm"), helper.make_node("Add", ["m", "b"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"), helper.make_node("Reshape", ["r", "shape"], ["f"], name="reshape"),
             helper.make_node("MatMul", ["f", "W2"], ["Y"], name="mm2")]
    net = check_against_ort(raw_model(nodes, inits, [2, 3], [3]))
    assert net.input_shape == (2, 3) and kinds(net) == [("input", None), ("affine", "dense"), ("relu", None), ("affine", "dense")]
    assert net[2].shape == (2, 4)


def test_unsqueeze_squeeze_and_scalar_input():
    """A scalar input made a batch of one by Unsqueeze, then Gemm, Squeeze."""
    inits = {"ax": np.array([0, 1], np.int64), "W": f32(3, 1), "b": f32(3), "sq": np.array([0], np.int64)}
    nodes = [helper.make_node("Unsqueeze", ["X", "ax"], ["u"], name="unsqueeze"),
             helper.make_node("Gemm", ["u", "W", "b"], ["g"], transB=1, name="gemm"),
             helper.make_node("Relu", ["g"], ["r"], name="relu"), helper.make_node("Squeeze", ["r", "sq"], ["Y"], name="squeeze")]
    net = check_against_ort(raw_model(nodes, inits, [], [3]))
    assert net.input_size == 1 and net.output_size == 3


def test_fixed_batch_of_one_may_drop_its_batch_dimension():
    inits = {"shape": np.array([12], np.int64), "W": f32(12, 2)}
    nodes = [helper.make_node("Reshape", ["X", "shape"], ["f"], name="reshape"), helper.make_node("MatMul", ["f", "W"], ["Y"], name="mm")]
    net = check_against_ort(raw_model(nodes, inits, [1, 3, 4], [2]))
    assert net.input_shape == (3, 4) and net.output_size == 2


def test_dynamic_batch_still_may_not_be_reshaped_away():
    inits = {"shape": np.array([-1], np.int64)}
    model = make_model([helper.make_node("Reshape", ["input", "shape"], ["output"], name="rs")], inits, (3,), output_rank=1)
    with pytest.raises(UnsupportedOpError, match=r"'Reshape' at node 'rs' \(Reshape to \[-1\] does not keep the batch"):
        network_from_model(model)


def test_maxpool_dense_windows_mask_the_padding():
    nodes = [helper.make_node("MaxPool", ["X"], ["m"], kernel_shape=[2, 2], pads=[1, 1, 0, 0], strides=[2, 2], name="mp"),
             helper.make_node("Flatten", ["m"], ["Y"], name="flat")]
    net = check_against_ort(raw_model(nodes, {}, ["N", 1, 3, 3], ["N", "F"]))
    spec = net[1].maxpool
    index, present = spec.dense_windows()
    assert index.shape == present.shape == spec.index_map.shape and int(index.min()) >= 0
    assert torch.equal(index[present], spec.index_map[present])
    assert not bool(present.all()) and bool(present.any(dim=1).all())
    # a padding entry repeats a neuron of its own window
    for row, keep in zip(index.tolist(), present.tolist()):
        assert set(row) == {j for j, k in zip(row, keep) if k}
