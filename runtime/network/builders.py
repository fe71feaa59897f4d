"""Tiny ONNX model builders (tests and examples run without ``../shared``).

* :func:`make_model` -- wrap nodes + initializers into a checked ``ModelProto``;
* :func:`mlp_model` -- fully-connected net from weight matrices + activations
  (optional leading Sub/Div normalisation, optional final Softmax);
* :func:`conv_residual_model` -- a small conv net with normalisation, an
  asymmetric-padding strided conv, BatchNorm, a residual Add, MaxPool,
  AveragePool, Flatten, Gemm and a final Softmax;
* :func:`random_mlp_weights` -- reproducible random weights.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ACTIVATION_OPS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh"}


def make_model(nodes, initializers: dict[str, np.ndarray], input_shape: Sequence[int], *, input_name: str = "input",
               output_name: str = "output", opset: int = 13, dynamic_batch: bool = True, check: bool = True,
               output_rank: int = 2) -> onnx.ModelProto:
    """Build a one-input one-output float32 model. ``input_shape`` excludes the batch dimension."""
    batch = "batch" if dynamic_batch else 1
    inp = helper.make_tensor_value_info(input_name, TensorProto.FLOAT, [batch, *input_shape])
    out = helper.make_tensor_value_info(output_name, TensorProto.FLOAT, [batch] + [f"d{i}" for i in range(1, output_rank)])
    inits = [numpy_helper.from_array(np.asarray(v, dtype=np.float32) if np.asarray(v).dtype.kind == "f" else np.asarray(v), k)
             for k, v in initializers.items()]
    graph = helper.make_graph(list(nodes), "cfruntime_test", [inp], [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="cfruntime.builders")
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    return model


def random_mlp_weights(sizes: Sequence[int], seed: int = 0, scale: float = 1.0):
    """Weights ``[out, in]`` and biases for layer sizes ``[in, h1, ..., out]``."""
    rng = np.random.default_rng(seed)
    ws, bs = [], []
    for a, b in zip(sizes[:-1], sizes[1:]):
        ws.append((rng.standard_normal((b, a)) * scale / np.sqrt(a)).astype(np.float32))
        bs.append((rng.standard_normal(b) * 0.1).astype(np.float32))
    return ws, bs


def mlp_model(weights: Sequence[np.ndarray], biases: Sequence[np.ndarray] | None = None,
              activations: Sequence[str | None] | str | None = "relu", *, input_shape: Sequence[int] | None = None,
              mean=None, std=None, softmax: bool = False, opset: int = 13) -> onnx.ModelProto:
    """Fully-connected model: ``[Sub mean] [Div std] [Flatten] (Gemm act)* Gemm [act] [Softmax]``.

    ``weights[i]`` is ``[out, in]`` (stored transB=1 like PyTorch exports).
    ``activations``: one name per hidden layer (``'relu'|'sigmoid'|'tanh'|None``)
    or a single name for all hidden layers; pass ``len(weights)`` entries to put
    an activation after the last layer too.
    """
    n = len(weights)
    if biases is None:
        biases = [np.zeros(w.shape[0], np.float32) for w in weights]
    if activations is None or isinstance(activations, str):
        activations = [activations] * (n - 1)
    activations = list(activations) + [None] * (n - len(activations))
    input_shape = tuple(input_shape or (weights[0].shape[1],))
    nodes, inits = [], {}
    cur = "input"
    if mean is not None:
        inits["mean"] = np.asarray(mean, np.float32)
        nodes.append(helper.make_node("Sub", [cur, "mean"], ["x_sub"], name="norm_sub"))
        cur = "x_sub"
    if std is not None:
        inits["std"] = np.asarray(std, np.float32)
        nodes.append(helper.make_node("Div", [cur, "std"], ["x_div"], name="norm_div"))
        cur = "x_div"
    if len(input_shape) > 1:
        nodes.append(helper.make_node("Flatten", [cur], ["x_flat"], axis=1, name="flatten"))
        cur = "x_flat"
    for i, (w, b, act) in enumerate(zip(weights, biases, activations)):
        inits[f"W{i}"], inits[f"b{i}"] = np.asarray(w, np.float32), np.asarray(b, np.float32)
        nodes.append(helper.make_node("Gemm", [cur, f"W{i}", f"b{i}"], [f"fc{i}"], transB=1, name=f"fc{i}"))
        cur = f"fc{i}"
        if act:
            nodes.append(helper.make_node(ACTIVATION_OPS[act], [cur], [f"act{i}"], name=f"act{i}"))
            cur = f"act{i}"
    if softmax:
        nodes.append(helper.make_node("Softmax", [cur], ["probs"], axis=1, name="softmax"))
        cur = "probs"
    nodes.append(helper.make_node("Identity", [cur], ["output"], name="out"))
    return make_model(nodes, inits, input_shape, opset=opset)


def conv_residual_model(seed: int = 0, channels: int = 3, hw: int = 8, classes: int = 4, softmax: bool = True) -> onnx.ModelProto:
    """Small conv net covering Sub/Div, Conv (stride 2, asymmetric pads, dilation),
    BatchNormalization, residual Add, MaxPool, AveragePool, Flatten, Gemm, Softmax."""
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.5  # noqa: E731
    c1 = 4
    inits = {
        "mean": rng.uniform(0.3, 0.6, (1, channels, 1, 1)).astype(np.float32),
        "std": rng.uniform(0.2, 0.4, (1, channels, 1, 1)).astype(np.float32),
        "K1": f(c1, channels, 3, 3), "B1": f(c1),
        "bn_s": rng.uniform(0.5, 1.5, c1).astype(np.float32), "bn_b": f(c1), "bn_m": f(c1),
        "bn_v": rng.uniform(0.5, 1.5, c1).astype(np.float32),
        "K2": f(c1, c1, 3, 3), "B2": f(c1),
        "K3": f(c1, c1, 2, 2), "B3": f(c1),
    }
    # spatial: hw -> conv1 (k3, s1, pads (1,0,1,2)) -> hw x (hw+1)
    nodes = [
        helper.make_node("Sub", ["input", "mean"], ["s"], name="norm_sub"),
        helper.make_node("Div", ["s", "std"], ["d"], name="norm_div"),
        helper.make_node("Conv", ["d", "K1", "B1"], ["c1"], kernel_shape=[3, 3], pads=[1, 0, 1, 2], strides=[1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn1"], epsilon=1e-3, name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "K2", "B2"], ["c2"], kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Add", ["r2", "r1"], ["res"], name="residual"),
        helper.make_node("MaxPool", ["res"], ["mp"], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1], name="maxpool"),
        helper.make_node("Conv", ["mp", "K3", "B3"], ["c3"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 1, 1, 0], name="conv3"),
        helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
        helper.make_node("AveragePool", ["r3"], ["ap"], kernel_shape=[2, 2], strides=[1, 1], name="avgpool"),
        helper.make_node("Flatten", ["ap"], ["fl"], axis=1, name="flatten"),
    ]
    # shapes: conv1 (pads t1 l0 b1 r2) -> (c1, hw, hw); conv2 (dilation 2, pad 2, k3) and maxpool (k2 s1,
    # end pads 1) keep it; conv3 (k2 s2, pads t0 l1 b1 r0) -> ((hw-1)//2+1)^2; avgpool k2 s1 -> -1
    h3 = w3 = (hw - 1) // 2 + 1
    n_flat = c1 * (h3 - 1) * (w3 - 1)
    inits["W"] = f(classes, n_flat)
    inits["b"] = f(classes)
    nodes.append(helper.make_node("Gemm", ["fl", "W", "b"], ["logits"], transB=1, name="fc"))
    last = "logits"
    if softmax:
        nodes.append(helper.make_node("Softmax", ["logits"], ["output"], axis=1, name="softmax"))
    else:
        nodes.append(helper.make_node("Identity", [last], ["output"], name="out"))
    return make_model(nodes, inits, (channels, hw, hw))
