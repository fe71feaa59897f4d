"""Every supported ONNX op, on small built models, against onnxruntime and a float64 reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import helper

from cfruntime.network import Network, network_from_model
from cfruntime.network.builders import conv_residual_model, make_model, mlp_model, random_mlp_weights
from cftest.onnx_reference import ort_run, reference_forward, softmax_np

RNG = np.random.default_rng(1234)


def f32(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def check(model, in_shape, n=6, softmax=False, lo=0.0, hi=1.0) -> Network:
    """Loader forward == float64 reference (1e-10) == onnxruntime float32 (1e-5 rel); layer invariants hold."""
    net = network_from_model(model)
    x = RNG.uniform(lo, hi, (n, *in_shape))
    y64 = net.forward(torch.from_numpy(x)).numpy()
    ref = reference_forward(model, x)
    scale = max(1.0, float(np.abs(ref).max()))
    assert np.abs(y64 - ref).max() <= 1e-10 * scale
    ort = ort_run(model, x)
    ours = softmax_np(y64) if softmax else y64
    assert np.abs(ours - ort.reshape(n, -1)).max() <= 1e-5 * scale
    y32 = net.forward(torch.from_numpy(x.astype(np.float32)))
    assert y32.dtype == torch.float32
    assert np.abs(y32.numpy() - y64).max() <= 1e-4 * scale
    # forward_all agrees with forward, has one [n, size] tensor per layer
    allv = net.forward_all(torch.from_numpy(x))
    assert len(allv) == len(net)
    assert all(v.shape == (n, l.size) for v, l in zip(allv, net.layers))
    assert torch.allclose(allv[-1], torch.from_numpy(y64), rtol=0, atol=1e-12)
    check_layer_invariants(net)
    return net


def check_layer_invariants(net: Network):
    off = 0
    for i, layer in enumerate(net.layers):
        assert layer.index == i and layer.offset == off
        off += layer.size
        assert all(p < i for p in layer.preds)
        if layer.kind == "affine":
            pred = net[layer.preds[0]]
            W = layer.weight_matrix()
            assert W.shape == (layer.size, pred.size)
            assert layer.bias.shape == (layer.size,)
            v = torch.randn(3, pred.size, dtype=torch.float64)
            u = torch.randn(3, layer.size, dtype=torch.float64)
            assert torch.allclose(layer.matvec(v), v @ W.T, atol=1e-10)
            assert torch.allclose(layer.rmatvec(u), u @ W, atol=1e-10)
            if layer.linear_kind == "conv":
                c = layer.conv
                assert c.in_shape == pred.shape or np.prod(c.in_shape) == pred.size
                assert c.out_shape == layer.shape
    assert net.num_neurons == off


# ------------------------------------------------------------------------------------------------
def test_mlp_with_normalisation_folds_into_first_gemm():
    ws, bs = random_mlp_weights([16, 7, 5, 3], seed=3)
    model = mlp_model(ws, bs, "relu", input_shape=(1, 4, 4), mean=[[[[0.3]]]], std=[[[[0.2]]]])
    net = check(model, (1, 4, 4))
    assert [l.kind for l in net.layers] == ["input", "affine", "relu", "affine", "relu", "affine"]
    assert net[1].linear_kind == "dense" and net[1].shape == (7,)
    assert net.input_shape == (1, 4, 4) and net.output_size == 3
    # Sub/Div folded exactly: W' = W / std, b' = b - W @ (mean/std)
    W = ws[0].astype(np.float64)
    assert np.allclose(net[1].weight.numpy(), W / 0.2, atol=1e-5)


@pytest.mark.parametrize("act", ["sigmoid", "tanh", "relu"])
def test_activations(act):
    ws, bs = random_mlp_weights([5, 6, 4], seed=5, scale=2.0)
    net = check(mlp_model(ws, bs, [act, act]), (5,), lo=-2, hi=2)
    assert [l.kind for l in net.layers] == ["input", "affine", act, "affine", act]


@pytest.mark.parametrize("transB,alpha,beta,cshape", [(0, 0.5, 2.0, (1, 4)), (1, 1.5, 0.25, (4,)), (0, 1.0, 1.0, ()), (1, 2.0, 0.0, None)])
def test_gemm_attributes(transB, alpha, beta, cshape):
    W = f32(4, 6) if transB else f32(6, 4)
    inits = {"W": W}
    ins = ["input", "W"]
    if cshape is not None:
        inits["C"] = f32(*cshape) if cshape else np.float32(0.7)
        ins.append("C")
    nodes = [helper.make_node("Gemm", ins, ["g"], transB=transB, alpha=alpha, beta=beta, name="gemm"),
             helper.make_node("Relu", ["g"], ["output"], name="relu")]
    net = check(make_model(nodes, inits, (6,)), (6,), lo=-1, hi=1)
    assert len(net) == 3


@pytest.mark.parametrize("bias_first", [False, True])
def test_matmul_add_both_orders_and_collapse(bias_first):
    inits = {"W1": f32(5, 4), "b1": f32(4), "W2": f32(4, 3), "b2": f32(3)}
    add1 = ["b1", "m1"] if bias_first else ["m1", "b1"]
    nodes = [
        helper.make_node("MatMul", ["input", "W1"], ["m1"], name="mm1"),
        helper.make_node("Add", add1, ["a1"], name="add1"),
        helper.make_node("MatMul", ["a1", "W2"], ["m2"], name="mm2"),  # no activation in between: collapses
        helper.make_node("Add", ["b2", "m2"] if not bias_first else ["m2", "b2"], ["a2"], name="add2"),
        helper.make_node("Relu", ["a2"], ["output"], name="relu"),
    ]
    net = check(make_model(nodes, inits, (5,)), (5,), lo=-1, hi=1)
    assert [l.kind for l in net.layers] == ["input", "affine", "relu"]
    W = inits["W1"].astype(np.float64) @ inits["W2"].astype(np.float64)
    assert np.allclose(net[1].weight.numpy(), W.T, atol=1e-6)


def conv_nodes(pads, strides=(1, 1), dil=(1, 1), norm=True, k=3):
    inits = {"K": f32(3, 2, k, k), "B": f32(3), "mean": np.array([0.4, 0.6], np.float32).reshape(1, 2, 1, 1),
             "std": np.array([0.25, 0.5], np.float32).reshape(1, 2, 1, 1)}
    nodes = []
    cur = "input"
    if norm:
        nodes += [helper.make_node("Sub", ["input", "mean"], ["s"], name="sub"), helper.make_node("Div", ["s", "std"], ["d"], name="div")]
        cur = "d"
    nodes += [helper.make_node("Conv", [cur, "K", "B"], ["c"], kernel_shape=[k, k], pads=list(pads), strides=list(strides),
                               dilations=list(dil), name="conv"),
              helper.make_node("Relu", ["c"], ["r"], name="relu"),
              helper.make_node("Flatten", ["r"], ["output"], axis=1, name="flat")]
    return nodes, inits


@pytest.mark.parametrize("pads,strides,dil", [((0, 0, 0, 0), (1, 1), (1, 1)), ((1, 0, 2, 1), (2, 1), (1, 1)),
                                               ((2, 2, 2, 2), (1, 2), (2, 2)), ((0, 1, 0, 0), (2, 2), (1, 2))])
@pytest.mark.parametrize("norm", [True, False])
def test_conv(pads, strides, dil, norm):
    nodes, inits = conv_nodes(pads, strides, dil, norm)
    net = check(make_model(nodes, inits, (2, 7, 6), output_rank=2), (2, 7, 6))
    kinds = [(l.kind, l.linear_kind) for l in net.layers]
    if norm and any(pads):
        # zero padding after normalisation != before: normalisation stays a diagonal layer
        assert kinds == [("input", None), ("affine", "gather"), ("affine", "conv"), ("relu", None)]
    else:
        assert kinds == [("input", None), ("affine", "conv"), ("relu", None)]
    conv = [l for l in net.layers if l.linear_kind == "conv"][0].conv
    assert conv.padding == tuple(pads) and conv.stride == strides and conv.dilation == dil
    assert conv.kernel.shape == (3, 2, 3, 3)
    if not norm:
        assert conv.bias_per_channel is not None


def test_batchnorm_folds_into_conv_and_dense():
    inits = {"K": f32(3, 2, 3, 3), "B": f32(3), "g": np.array([1.5, 0.5, 2.0], np.float32), "b": f32(3), "m": f32(3),
             "v": np.array([0.5, 1.0, 2.0], np.float32), "g2": np.array([1.2, 0.7, 0.9], np.float32), "b2": f32(3),
             "m2": f32(3), "v2": np.array([1.5, 0.3, 0.8], np.float32)}
    nodes = [helper.make_node("Conv", ["input", "K", "B"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"], epsilon=1e-3, name="bn"),
             helper.make_node("Relu", ["bn"], ["r"], name="relu"),
             helper.make_node("BatchNormalization", ["r", "g2", "b2", "m2", "v2"], ["bn2"], name="bn_pre"),  # before a padded conv
             helper.make_node("Flatten", ["bn2"], ["output"], name="flat")]
    net = check(make_model(nodes, inits, (2, 5, 5)), (2, 5, 5))
    assert [(l.kind, l.linear_kind) for l in net.layers] == [("input", None), ("affine", "conv"), ("relu", None), ("affine", "gather")]


@pytest.mark.parametrize("pads,cip,strides", [((0, 0, 0, 0), 0, (2, 2)), ((1, 1, 1, 1), 0, (2, 2)), ((1, 1, 1, 1), 1, (1, 1)), ((0, 1, 0, 1), 0, (1, 2))])
def test_average_pool(pads, cip, strides):
    inits = {"W": f32(3, 12), "b": f32(3)}
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"),
             helper.make_node("AveragePool", ["r"], ["ap"], kernel_shape=[2, 2], pads=list(pads), strides=list(strides),
                              count_include_pad=cip, name="avgpool"),
             helper.make_node("Flatten", ["ap"], ["f"], name="flat")]
    model0 = make_model(nodes + [helper.make_node("Identity", ["f"], ["output"], name="id")], {}, (2, 4, 5))
    net = network_from_model(model0)
    n_flat = net.output_size
    inits = {"W": f32(3, n_flat), "b": f32(3)}
    nodes.append(helper.make_node("Gemm", ["f", "W", "b"], ["output"], transB=1, name="fc"))
    net = check(make_model(nodes, inits, (2, 4, 5)), (2, 4, 5), lo=-1, hi=1)
    # AveragePool is linear: folded into the following Gemm
    assert [l.kind for l in net.layers] == ["input", "relu", "affine"]


def test_global_average_pool():
    nodes = [helper.make_node("Relu", ["input"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["output"], name="flat")]
    net = check(make_model(nodes, {}, (3, 4, 4)), (3, 4, 4), lo=-1, hi=1)
    assert net.output_size == 3 and net[-1].linear_kind == "conv"


@pytest.mark.parametrize("pads,strides,dil,ceil", [((0, 0, 0, 0), (2, 2), (1, 1), 0), ((1, 0, 1, 1), (2, 1), (1, 1), 0),
                                                    ((1, 1, 1, 1), (1, 1), (2, 2), 0), ((0, 0, 0, 0), (2, 2), (1, 1), 1)])
def test_maxpool(pads, strides, dil, ceil):
    nodes = [helper.make_node("Conv", ["input", "K"], ["c"], kernel_shape=[1, 1], name="conv1x1"),
             helper.make_node("MaxPool", ["c"], ["mp"], kernel_shape=[2, 3], pads=list(pads), strides=list(strides),
                              dilations=list(dil), ceil_mode=ceil, name="maxpool"),
             helper.make_node("Flatten", ["mp"], ["output"], name="flat")]
    net = check(make_model(nodes, {"K": f32(2, 2, 1, 1)}, (2, 5, 7)), (2, 5, 7), lo=-1, hi=1)
    mp = [l for l in net.layers if l.kind == "maxpool"][0]
    assert mp.maxpool.index_map.shape == (mp.size, 6)
    pred = net[mp.preds[0]]
    assert int(mp.maxpool.index_map.max()) < pred.size and int(mp.maxpool.index_map.min()) >= -1


def test_conv_residual_model_with_final_softmax():
    model = conv_residual_model(seed=2)
    net = check(model, (3, 8, 8), softmax=True)
    kinds = [l.kind for l in net.layers]
    assert "add" in kinds and "maxpool" in kinds
    add = net[kinds.index("add")]
    assert len(add.preds) == 2 and add.preds[0] != add.preds[1]
    assert any("Softmax" in n for n in net.notices)


def test_transpose_reshape_flatten_idiom():
    inits = {"shape": np.array([-1, 48], np.int64), "W": f32(5, 48), "b": f32(5)}
    nodes = [helper.make_node("Transpose", ["input"], ["t"], perm=[0, 2, 3, 1], name="transpose"),
             helper.make_node("Reshape", ["t", "shape"], ["rs"], name="reshape"),
             helper.make_node("Gemm", ["rs", "W", "b"], ["output"], transB=1, name="fc")]
    net = check(make_model(nodes, inits, (3, 4, 4)), (3, 4, 4))
    assert [l.kind for l in net.layers] == ["input", "affine"]
    # the permutation is folded into the columns of W
    P = np.arange(48).reshape(3, 4, 4).transpose(1, 2, 0).reshape(-1)
    Wexp = np.zeros((5, 48))
    Wexp[:, P] = inits["W"]
    assert np.allclose(net[1].weight.numpy(), Wexp, atol=1e-6)


def test_identity_dropout_constant_mul():
    const = helper.make_tensor("cval", 1, [1, 4], [0.5, -1.0, 2.0, 0.25])
    shape = helper.make_tensor("shp", 7, [2], [0, -1])
    nodes = [helper.make_node("Constant", [], ["c"], value=const, name="const"),
             helper.make_node("Constant", [], ["s"], value=shape, name="const_shape"),
             helper.make_node("Identity", ["input"], ["i"], name="id"),
             helper.make_node("Dropout", ["i"], ["dr"], name="dropout"),
             helper.make_node("Reshape", ["dr", "s"], ["rs"], name="reshape"),
             helper.make_node("Mul", ["c", "rs"], ["m"], name="mul"),
             helper.make_node("Sub", ["c", "m"], ["sb"], name="sub_rev"),
             helper.make_node("Relu", ["sb"], ["output"], name="relu")]
    net = check(make_model(nodes, {}, (2, 2)), (2, 2), lo=-1, hi=1)
    assert [(l.kind, l.linear_kind) for l in net.layers] == [("input", None), ("affine", "gather"), ("relu", None)]


def test_unused_branch_is_ignored_and_neuron_numbering():
    ws, bs = random_mlp_weights([4, 3, 2], seed=9)
    model = mlp_model(ws, bs, "relu")
    model.graph.node.append(helper.make_node("Relu", ["input"], ["unused"], name="dead"))
    net = network_from_model(model)
    assert [l.size for l in net.layers] == [4, 3, 3, 2]
    assert [l.offset for l in net.layers] == [0, 4, 7, 10]
    assert net.num_neurons == 12
    assert net.layer_of_neuron(7).index == 2 and net.layer_of_neuron(11).index == 3
    assert list(net[2].neurons) == [7, 8, 9]
    with pytest.raises(IndexError):
        net.layer_of_neuron(12)
    assert "layer 3: affine dense" in net.summary()


def test_full_kernel_conv_is_a_dense_layer():
    """MATLAB-style fully-connected layers: Conv 1x784 on [1,1,784], then 1x1 convs (mnist_nln_* nets)."""
    inits = {"mean": f32(1, 1, 1, 12), "K1": f32(5, 1, 1, 12), "B1": f32(5), "K2": f32(3, 5, 1, 1), "B2": f32(3)}
    nodes = [helper.make_node("Sub", ["input", "mean"], ["s"], name="sub_mean_image"),
             helper.make_node("Conv", ["s", "K1", "B1"], ["c1"], kernel_shape=[1, 12], name="fc1"),
             helper.make_node("Tanh", ["c1"], ["t"], name="tanh"),
             helper.make_node("Conv", ["t", "K2", "B2"], ["c2"], kernel_shape=[1, 1], name="fc2"),
             helper.make_node("Flatten", ["c2"], ["f"], name="flat"),
             helper.make_node("Softmax", ["f"], ["output"], name="softmax")]
    net = check(make_model(nodes, inits, (1, 1, 12)), (1, 1, 12), softmax=True, lo=-1, hi=1)
    assert [(l.kind, l.linear_kind) for l in net.layers] == [("input", None), ("affine", "dense"), ("tanh", None), ("affine", "dense")]
    assert net[1].shape == (5, 1, 1) and net[3].shape == (3,)
