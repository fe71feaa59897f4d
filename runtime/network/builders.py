"""Tiny ONNX model builders (tests and examples run without ``../shared``).

* :func:`make_model` -- wrap nodes + initializers into a checked ``ModelProto``;
* :func:`mlp_model` -- fully-connected net from weight matrices + activations
  (optional leading Sub/Div normalisation, optional final Softmax);
* :func:`conv_residual_model` -- a small conv net with normalisation, an
  asymmetric-padding strided conv, BatchNorm, a residual Add, MaxPool,
  AveragePool, Flatten, Gemm and a final Softmax;
* :func:`random_mlp_weights` -- reproducible random weights;
* :func:`layer_op_model` -- one small model per layer op people's networks bring (LeakyRelu, Elu,
  Softplus, Abs, the Clip forms, Concat, Slice, Split, a rank-1 input): :data:`LAYER_OP_MODELS`.
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


# ---------------------------------------------------------------------------------------------
# one model per layer op (issue 16)
# ---------------------------------------------------------------------------------------------
def _raw_model(nodes, inits: dict, in_dims, out_dims, opset: int = 13) -> onnx.ModelProto:
    """A float32 model whose input and output shapes are written as given (``in_dims`` may lack a
    batch dimension); float initializers are stored as float32, integer ones as they are."""
    graph = helper.make_graph(
        list(nodes), "cfruntime_layer_op",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(in_dims))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(out_dims))],
        [numpy_helper.from_array(np.asarray(v, np.float32) if np.asarray(v).dtype.kind == "f" else np.asarray(v), k)
         for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="cfruntime.builders")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _activation_mlp(rng, act, spread: float, n_in: int = 4, hidden: int = 6, classes: int = 3):
    """``X[N, n_in] -> Gemm(hidden) -> <act on 'h', making 'a'> -> Gemm(classes)``; ``act`` is a node
    or ``(node, its initializers)``; the first Gemm's outputs spread over about ``[-spread, spread]``
    on inputs in [-1, 1]."""
    node, extra = act if isinstance(act, tuple) else (act, {})
    inits = {"W1": rng.standard_normal((hidden, n_in)) * spread / np.sqrt(n_in), "b1": rng.standard_normal(hidden) * 0.2 * spread,
             "W2": rng.standard_normal((classes, hidden)) * 0.7, "b2": rng.standard_normal(classes) * 0.1}
    nodes = [helper.make_node("Gemm", ["X", "W1", "b1"], ["h"], transB=1, name="fc1"), node,
             helper.make_node("Gemm", ["a", "W2", "b2"], ["Y"], transB=1, name="fc2")]
    return _raw_model(nodes, {**inits, **extra}, ["N", n_in], ["N", classes])


def _clip(lo, hi):
    """A Clip node ``h -> a`` with the bounds ``lo``/``hi`` (None: absent) as inputs, and its initializers."""
    inits, ins = {}, ["h", "", ""]
    for i, (name, v) in enumerate((("lo", lo), ("hi", hi)), start=1):
        if v is not None:
            inits[name] = np.asarray(v, np.float32)
            ins[i] = name
    while ins and not ins[-1]:
        ins.pop()
    return helper.make_node("Clip", ins, ["a"], name="clip"), inits


def _concat_one_layer(rng):
    """Relu, then two affine branches of it (a Gemm, a per-neuron scaling) and a constant, joined by a
    Concat: one affine layer over the Relu."""
    inits = {"W1": rng.standard_normal((6, 4)), "b1": rng.standard_normal(6) * 0.3, "A": rng.standard_normal((5, 6)) * 0.5,
             "s": rng.standard_normal((1, 6)), "c": rng.standard_normal((1, 2)), "W2": rng.standard_normal((3, 13)) * 0.5}
    nodes = [helper.make_node("Gemm", ["X", "W1", "b1"], ["h"], transB=1, name="fc1"), helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "A"], ["p"], transB=1, name="branch_a"), helper.make_node("Mul", ["r", "s"], ["q"], name="branch_b"),
             helper.make_node("Concat", ["p", "q", "c"], ["cat"], axis=1, name="concat"),
             helper.make_node("Gemm", ["cat", "W2"], ["Y"], transB=1, name="fc2")]
    return _raw_model(nodes, inits, ["N", 4], ["N", 3])


def _concat_branches(rng):
    """Branches after different nonlinear layers (a Relu branch, a LeakyRelu branch) and the input
    itself, joined by a Concat on the last axis: parts summed by ``add`` layers."""
    inits = {"W1": rng.standard_normal((5, 4)), "b1": rng.standard_normal(5) * 0.3, "A": rng.standard_normal((3, 4)),
             "W2": rng.standard_normal((3, 12)) * 0.5}
    nodes = [helper.make_node("Gemm", ["X", "W1", "b1"], ["h"], transB=1, name="fc1"), helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Gemm", ["X", "A"], ["g"], transB=1, name="fc_b"),
             helper.make_node("LeakyRelu", ["g"], ["t"], alpha=0.1, name="lrelu"),
             helper.make_node("Concat", ["r", "t", "X"], ["cat"], axis=-1, name="concat"),
             helper.make_node("Gemm", ["cat", "W2"], ["Y"], transB=1, name="fc2")]
    return _raw_model(nodes, inits, ["N", 4], ["N", 3])


def _slice_split(rng):
    """A conv tensor cut by Slice (negative steps, an end past the start) and Split into channel
    groups, each through its own activation, joined again along the channels."""
    inits = {"K": rng.standard_normal((4, 1, 2, 2)), "B": rng.standard_normal(4) * 0.3,
             "st": np.array([0, 3, -1], np.int64), "en": np.array([4, 0, -100], np.int64),
             "ax": np.array([1, 2, 3], np.int64), "sp": np.array([1, -2, -1], np.int64), "sz": np.array([1, 3], np.int64),
             "W2": rng.standard_normal((3, 4 * 2 * 4)) * 0.5}
    nodes = [helper.make_node("Conv", ["X", "K", "B"], ["c"], kernel_shape=[2, 2], name="conv"),  # [1, 4, 4, 4]
             helper.make_node("Slice", ["c", "st", "en", "ax", "sp"], ["sl"], name="slice"),  # [1, 4, 2, 4]
             helper.make_node("Split", ["sl", "sz"], ["p1", "p2"], axis=1, name="split"),
             helper.make_node("Relu", ["p1"], ["q1"], name="relu"), helper.make_node("Abs", ["p2"], ["q2"], name="abs"),
             helper.make_node("Concat", ["q2", "q1"], ["cat"], axis=1, name="concat"),
             helper.make_node("Flatten", ["cat"], ["fl"], name="flatten"), helper.make_node("Gemm", ["fl", "W2"], ["Y"], transB=1, name="fc")]
    return _raw_model(nodes, inits, [1, 1, 5, 5], [1, 3])


def _vector(rng):
    """A rank-1 input without a batch dimension (VNN-COMP's ``test`` nets): MatMul, Split into two
    halves, Softplus and Elu on them, a Slice of the input, Concat, MatMul."""
    inits = {"W1": rng.standard_normal((5, 6)), "st": np.array([1], np.int64), "en": np.array([4], np.int64),
             "W2": rng.standard_normal((9, 2)) * 0.5}
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["h"], name="mm1"), helper.make_node("Split", ["h"], ["h1", "h2"], axis=0, name="split"),
             helper.make_node("Softplus", ["h1"], ["s1"], name="softplus"), helper.make_node("Elu", ["h2"], ["s2"], alpha=0.5, name="elu"),
             helper.make_node("Slice", ["X", "st", "en"], ["xs"], name="slice"),
             helper.make_node("Concat", ["s1", "xs", "s2"], ["cat"], axis=0, name="concat"),
             helper.make_node("MatMul", ["cat", "W2"], ["Y"], name="mm2")]
    return _raw_model(nodes, inits, [5], [2])


#: Model name -> ``rng -> ModelProto`` (see :func:`layer_op_model`).
LAYER_OP_MODELS = {
    "leakyrelu": lambda rng: _activation_mlp(rng, helper.make_node("LeakyRelu", ["h"], ["a"], alpha=0.2, name="lrelu"), 2.0),
    "leakyrelu_default": lambda rng: _activation_mlp(rng, helper.make_node("LeakyRelu", ["h"], ["a"], name="lrelu"), 2.0),
    "elu": lambda rng: _activation_mlp(rng, helper.make_node("Elu", ["h"], ["a"], alpha=0.5, name="elu"), 2.0),
    "softplus": lambda rng: _activation_mlp(rng, helper.make_node("Softplus", ["h"], ["a"], name="softplus"), 3.0),
    "abs": lambda rng: _activation_mlp(rng, helper.make_node("Abs", ["h"], ["a"], name="abs"), 2.0),
    "relu6": lambda rng: _activation_mlp(rng, _clip(0.0, 6.0), 8.0),
    "hardtanh": lambda rng: _activation_mlp(rng, _clip(-1.0, 1.0), 2.0),
    "clip": lambda rng: _activation_mlp(rng, _clip(-0.5, 2.0), 3.0),
    "clip_min": lambda rng: _activation_mlp(rng, _clip(0.5, None), 2.0),
    "clip_max": lambda rng: _activation_mlp(rng, _clip(None, -0.25), 2.0),
    "concat_one_layer": _concat_one_layer,
    "concat_branches": _concat_branches,
    "slice_split": _slice_split,
    "vector": _vector,
}


def layer_op_model(name: str, seed: int = 0) -> onnx.ModelProto:
    """The small float32 model ``name`` of :data:`LAYER_OP_MODELS` with reproducible weights."""
    return LAYER_OP_MODELS[name](np.random.default_rng(seed))
