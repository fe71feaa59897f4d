"""Test helpers: onnxruntime runners and an independent op-by-op float64 reference evaluator."""

from __future__ import annotations


import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, numpy_helper
from cftest import REPO

REPO_ROOT = REPO
SHARED = REPO_ROOT.parent / "shared"


def ort_session(model_or_path):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    src = model_or_path.SerializeToString() if isinstance(model_or_path, onnx.ModelProto) else str(model_or_path)
    return ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


def ort_run(model_or_path, x: np.ndarray, dtype=np.float32, batch_one: bool | None = None) -> np.ndarray:
    """Run a model on ``x`` [N, ...]; feeds rows one by one if the model's batch dim is fixed."""
    sess = ort_session(model_or_path)
    inp = sess.get_inputs()[0]
    fixed = isinstance(inp.shape[0], int) if batch_one is None else batch_one
    x = np.asarray(x, dtype=dtype)
    if fixed:
        return np.concatenate([sess.run(None, {inp.name: x[i:i + 1]})[0] for i in range(x.shape[0])])
    return sess.run(None, {inp.name: x})[0]


def to_double_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """Same graph with float64 initializers/constants/IO (onnxruntime runs it in double where kernels exist)."""
    m = onnx.ModelProto.FromString(model.SerializeToString())
    g = m.graph
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))
    for n in g.node:
        for a in n.attribute:
            if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float64), a.t.name))
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.DOUBLE
    del g.value_info[:]
    return m


def _pads4(a):
    p = list(a.get("pads", [0, 0, 0, 0]))
    return p  # top, left, bottom, right


def reference_forward(model: onnx.ModelProto, x: np.ndarray, drop_final_softmax: bool = True) -> np.ndarray:
    """Naive float64 op-by-op evaluation of the ONNX graph (independent of the loader's folding)."""
    g = model.graph
    env = {t.name: torch.from_numpy(numpy_helper.to_array(t).astype(np.float64) if numpy_helper.to_array(t).dtype.kind == "f"
                                    else numpy_helper.to_array(t).copy()) for t in g.initializer}
    inp = [i for i in g.input if i.name not in env][0]
    env[inp.name] = torch.from_numpy(np.asarray(x, dtype=np.float64))
    out_name = g.output[0].name
    for node in g.node:
        a = {at.name: onnx.helper.get_attribute_value(at) for at in node.attribute}
        ins = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Constant":
            arr = numpy_helper.to_array(a["value"])
            y = torch.from_numpy(arr.astype(np.float64) if arr.dtype.kind == "f" else arr.copy())
        elif op in ("Identity", "Dropout"):
            y = ins[0]
        elif op == "Sub":
            y = ins[0] - ins[1]
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Mul":
            y = ins[0] * ins[1]
        elif op == "Div":
            y = ins[0] / ins[1]
        elif op == "Relu":
            y = torch.relu(ins[0])
        elif op == "Sigmoid":
            y = torch.sigmoid(ins[0])
        elif op == "Tanh":
            y = torch.tanh(ins[0])
        elif op == "Gemm":
            A = ins[0].T if a.get("transA", 0) else ins[0]
            B = ins[1].T if a.get("transB", 0) else ins[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(ins) > 2 and ins[2] is not None:
                y = y + a.get("beta", 1.0) * ins[2]
        elif op == "MatMul":
            y = ins[0] @ ins[1]
        elif op == "Flatten":
            y = ins[0].reshape(ins[0].shape[0], -1)
        elif op == "Reshape":
            shape = [int(s) for s in ins[1].tolist()]
            shape = [ins[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
            y = ins[0].reshape(shape)
        elif op == "Transpose":
            y = ins[0].permute(*a["perm"])
        elif op == "Conv":
            t, l, b, r = _pads4(a)
            y = F.conv2d(F.pad(ins[0], (l, r, t, b)), ins[1], ins[2] if len(ins) > 2 else None,
                         stride=tuple(a.get("strides", [1, 1])), dilation=tuple(a.get("dilations", [1, 1])))
        elif op == "BatchNormalization":
            s = ins[1] / torch.sqrt(ins[4] + a.get("epsilon", 1e-5))
            sh = (1, -1, 1, 1)
            y = (ins[0] - ins[3].reshape(sh)) * s.reshape(sh) + ins[2].reshape(sh)
        elif op == "MaxPool":
            t, l, b, r = _pads4(a)
            xp = F.pad(ins[0], (l, r, t, b), value=float("-inf"))
            y = F.max_pool2d(xp, tuple(a["kernel_shape"]), tuple(a.get("strides", [1, 1])),
                             dilation=tuple(a.get("dilations", [1, 1])), ceil_mode=bool(a.get("ceil_mode", 0)))
        elif op in ("AveragePool", "GlobalAveragePool"):
            k = tuple(a["kernel_shape"]) if op == "AveragePool" else tuple(ins[0].shape[2:])
            t, l, b, r = _pads4(a)
            st = tuple(a.get("strides", [1, 1])) if op == "AveragePool" else (1, 1)
            xp = F.pad(ins[0], (l, r, t, b))
            ones = torch.ones_like(ins[0][:, :1])
            mask = F.pad(ones, (l, r, t, b), value=1.0 if a.get("count_include_pad", 0) else 0.0)
            ssum = F.avg_pool2d(xp, k, st, divisor_override=1)
            cnt = F.avg_pool2d(mask, k, st, divisor_override=1)
            y = ssum / cnt
        elif op == "Softmax":
            y = ins[0] if (drop_final_softmax and node.output[0] == out_name) else torch.softmax(ins[0], dim=a.get("axis", 1))
        else:
            raise NotImplementedError(op)
        env[node.output[0]] = y
    out = env[out_name]
    return out.reshape(out.shape[0], -1).numpy()


def softmax_np(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
