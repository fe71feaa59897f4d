"""Small networks built in the tests (no ../shared needed)."""

import numpy as np

import torch

from cfruntime.network import network_from_model
from cfruntime.network.builders import mlp_model


def mlp(sizes, activation="relu", seed=0):
    rng = np.random.default_rng(seed)
    weights = [rng.normal(size=(o, i)).astype(np.float32) for i, o in zip(sizes[:-1], sizes[1:])]
    biases = [rng.normal(size=o).astype(np.float32) for o in sizes[1:]]
    acts = [activation] * (len(weights) - 1) + [None]
    return network_from_model(mlp_model(weights, biases, acts, input_shape=(sizes[0],)))


def mlp_file(path, inputs: int, outputs: int, input_shape=None, seed: int = 3, hidden: int = 4):
    """Save a ReLU MLP ``inputs -> hidden -> outputs`` (first weights scaled by 0.05, so that pixel-sized
    inputs stay small) as an ONNX file at ``path`` (input of ``input_shape``, default ``(inputs,)``)."""
    import onnx

    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal((hidden, inputs)).astype(np.float32) * 0.05,
               rng.standard_normal((outputs, hidden)).astype(np.float32)]
    onnx.save(mlp_model(weights, activations="relu", input_shape=input_shape or (inputs,)), str(path))
    return path


def boxes(n_in, batch=3, seed=1, radius=0.3):
    g = torch.Generator().manual_seed(seed)
    centre = torch.rand(batch, n_in, generator=g, dtype=torch.float64) * 2 - 1
    r = torch.rand(batch, n_in, generator=g, dtype=torch.float64) * radius
    return centre - r, centre + r


def layered_case(kind: str):
    """``(net, lb, ub)``: a ReLU MLP 4-12-12-10-3 (``"mlp"``) or :func:`small_conv` (``"conv"``), with three boxes
    around random centres: networks whose hidden layers the row-subset tests take apart."""
    if kind == "mlp":
        return (mlp([4, 12, 12, 10, 3], seed=3), *boxes(4, batch=3, seed=2, radius=0.4))
    return (small_conv(seed=1), *boxes(50, batch=3, seed=4, radius=0.3))


def _model(nodes, inits, in_shape, out_dim):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, *in_shape])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, out_dim])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return network_from_model(model)


def small_conv(seed=0):
    """Conv(2->3, k3, s1, p1) - Relu - Conv(3->2, k2, s2) - Relu - Flatten - Gemm(->3) on 1x2x5x5 inputs."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    inits = {"K1": f(3, 2, 3, 3), "B1": f(3), "K2": f(2, 3, 2, 2), "B2": f(2), "W": f(3, 8), "B": f(3)}
    nodes = [
        helper.make_node("Conv", ["input", "K1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "K2", "B2"], ["c2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Flatten", ["r2"], ["fl"], axis=1),
        helper.make_node("Gemm", ["fl", "W", "B"], ["out"], transB=1),
    ]
    return _model(nodes, inits, (2, 5, 5), 3)


def residual_mlp(seed=0):
    """Gemm(3->4) - Relu - Gemm(4->4) - Relu - Add(with the first Relu) - Gemm(->2)."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.7).astype(np.float32)  # noqa: E731
    inits = {"W1": f(4, 3), "B1": f(4), "W2": f(4, 4), "B2": f(4), "W3": f(2, 4), "B3": f(2)}
    nodes = [
        helper.make_node("Gemm", ["input", "W1", "B1"], ["a1"], transB=1),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("Gemm", ["r1", "W2", "B2"], ["a2"], transB=1),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("Add", ["r2", "r1"], ["s"]),
        helper.make_node("Gemm", ["s", "W3", "B3"], ["out"], transB=1),
    ]
    return _model(nodes, inits, (3,), 2)


def residual_conv(seed=0):
    """TinyYOLO's block on 1x2x6x6 inputs: Conv(2->3, k3, p1) - Relu - Conv(3->3, k3, p1), beside Conv(2->3, k1);
    Add - Relu - AveragePool(2x2, s2) - Flatten - Gemm(->3).  Two convolutions feed the join and the pool
    feeds the Gemm: layers whose bounds no rule reads."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    inits = {"K1": f(3, 2, 3, 3), "B1": f(3), "K2": f(3, 3, 3, 3), "B2": f(3), "K3": f(3, 2, 1, 1), "W": f(3, 27),
             "B": f(3)}
    nodes = [
        helper.make_node("Conv", ["input", "K1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "K2", "B2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["input", "K3"], ["c3"], kernel_shape=[1, 1]),
        helper.make_node("Add", ["c2", "c3"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("AveragePool", ["r2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["fl"], axis=1),
        helper.make_node("Gemm", ["fl", "W", "B"], ["out"], transB=1),
    ]
    return _model(nodes, inits, (2, 6, 6), 3)


def generator_net(seed=0, upsample=False):
    """A cgan_2023-like generator and critic on 2 inputs: Gemm(2->72) - Relu - Reshape(8x3x3) -
    ConvTranspose(8->4, k4, s2, p1: 4x6x6) - Relu - [Resize(nearest, x2: 4x12x12) -] Conv(4->4, k3, s2, p1) -
    Relu - Flatten - Gemm(->2).  The transposed convolution loads as a convolution of its phases and a
    gather that interleaves them, the Resize as a gather of repeated neurons: gather layers whose weight is
    a selection block."""
    from onnx import helper

    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.4).astype(np.float32)  # noqa: E731
    side = 6 if not upsample else 12
    inits = {"W1": f(72, 2), "B1": f(72), "S": np.array([1, 8, 3, 3], dtype=np.int64), "KT": f(8, 4, 4, 4),
             "BT": f(4), "K": f(4, 4, 3, 3), "B": f(4), "W2": f(2, 4 * (side // 2) ** 2),
             "SC": np.array([1, 1, 2, 2], dtype=np.float32)}
    nodes = [
        helper.make_node("Gemm", ["input", "W1", "B1"], ["a1"], transB=1),
        helper.make_node("Relu", ["a1"], ["r1"]),
        helper.make_node("Reshape", ["r1", "S"], ["i1"]),
        helper.make_node("ConvTranspose", ["i1", "KT", "BT"], ["t1"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["t1"], ["r2"]),
        *([helper.make_node("Resize", ["r2", "", "SC"], ["u"], mode="nearest")] if upsample else []),
        helper.make_node("Conv", ["u" if upsample else "r2", "K", "B"], ["c1"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r3"]),
        helper.make_node("Flatten", ["r3"], ["fl"], axis=1),
        helper.make_node("Gemm", ["fl", "W2"], ["out"], transB=1),
    ]
    return _model(nodes, inits, (2,), 2)
