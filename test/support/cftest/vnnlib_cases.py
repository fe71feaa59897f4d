"""Generated VNN-COMP-like cases for ``cf-run --vnnlib`` tests: a verivital-like conv net, a net shaped like
VNN-COMP's ``test`` benchmark, VNN-LIB properties that hold or are violated around a point, and the verdict
of one run."""

from __future__ import annotations

import json

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from cfmlir.tools.cf_run import main as cf_run
from cfruntime.network import load_onnx


def _save(path, nodes, inits, in_dims, out_dims):
    graph = helper.make_graph(nodes, "vnncomp_like", [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(in_dims))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(out_dims))],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def verivital_like(path, pool: str, seed: int = 0):
    """[1, 1, 8, 8] -> Conv(1->3, k3) -> Relu -> Pad(1) -> MaxPool/AveragePool(k2, s2) -> Flatten -> Gemm(10)."""
    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)  # noqa: E731
    inits = {"K": f(3, 1, 3, 3), "B": f(3) + 0.2, "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "W": f(10, 3 * 4 * 4),
             "b": f(10)}
    op = "MaxPool" if pool == "maxpool" else "AveragePool"
    nodes = [helper.make_node("Conv", ["X", "K", "B"], ["c"], kernel_shape=[3, 3], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"), helper.make_node("Pad", ["r", "pads"], ["p"], name="pad"),
             helper.make_node(op, ["p"], ["q"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             helper.make_node("Flatten", ["q"], ["fl"], name="flatten"), helper.make_node("Gemm", ["fl", "W", "b"], ["Y"], transB=1, name="fc")]
    return _save(path, nodes, inits, [1, 1, 8, 8], [1, 10])


def vector_net(path, seed: int = 1):
    """[5] (no batch dimension) -> MatMul/Add -> Relu -> MatMul/Add -> [2], as VNN-COMP's test nets."""
    rng = np.random.default_rng(seed)
    inits = {"W1": rng.standard_normal((5, 6)).astype(np.float32), "b1": rng.standard_normal(6).astype(np.float32),
             "W2": rng.standard_normal((6, 2)).astype(np.float32), "b2": rng.standard_normal(2).astype(np.float32)}
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]), helper.make_node("MatMul", ["r1", "W2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["Y"])]
    return _save(path, nodes, inits, [5], [2])


def generated_net(directory, name: str):
    """The generated network ``name`` (``verivital_maxpool``, ``verivital_avgpool``: :func:`verivital_like`;
    ``test_vector``: :func:`vector_net`) saved as ``directory / "<name>.onnx"``: its path."""
    path = directory / f"{name}.onnx"
    if name == "test_vector":
        return vector_net(path)
    return verivital_like(path, name.split("_")[1])


def vnnlib(path, lb, ub, n_out, output_asserts):
    lines = [f"(declare-const X_{i} Real)" for i in range(len(lb))] + [f"(declare-const Y_{j} Real)" for j in range(n_out)]
    for i, (lo, hi) in enumerate(zip(lb, ub)):
        lines += [f"(assert (>= X_{i} {float(lo)!r}))", f"(assert (<= X_{i} {float(hi)!r}))"]
    path.write_text("\n".join(lines + output_asserts) + "\n")
    return path


def properties(tmp_path, net_path, radius):
    """(holds, violated): around a point whose top output wins by a clear margin, 'some other output
    is at least the top one' (false on a tiny box), and 'the top output is at least its value - 1'
    (true at the centre)."""
    net = load_onnx(net_path)
    rng = np.random.default_rng(7)
    for _ in range(100):
        x = rng.uniform(0.0, 1.0, net.input_size)
        y = net.forward(torch.from_numpy(x).reshape(1, -1))[0].numpy()
        top = int(y.argmax())
        if y[top] - np.delete(y, top).max() > 0.5:
            break
    others = [j for j in range(len(y)) if j != top]
    lb, ub = x - radius, x + radius
    holds = vnnlib(tmp_path / "holds.vnnlib", lb, ub, len(y),
                   ["(assert (or " + " ".join(f"(and (>= Y_{j} Y_{top}))" for j in others) + "))"])
    violated = vnnlib(tmp_path / "violated.vnnlib", lb, ub, len(y), [f"(assert (>= Y_{top} {float(y[top]) - 1.0!r}))"])
    return holds, violated


def assert_verdicts(capsys, tmp_path, net_path, certifier: str, engine: str) -> None:
    """cf-run ``--certifier certifier --engine engine`` on the network ``net_path``: the property that holds
    around a point (:func:`properties`, radius 1e-3) is ``unsat`` or ``unknown``, the violated one ``sat``."""
    holds, violated = properties(tmp_path, net_path, radius=1e-3)
    common = ("--certifier", certifier, "--engine", engine, "--net", net_path)
    assert verdict(capsys, tmp_path, *common, "--vnnlib", holds) in ("unsat", "unknown")
    assert verdict(capsys, tmp_path, *common, "--vnnlib", violated) == "sat"


def verdict(capsys, tmp_path, *args):
    out = tmp_path / "result.json"
    code = cf_run([*map(str, args), "--json", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    d = json.loads(out.read_text())
    assert all(np.isfinite(r["row_lb"]).all() for r in d["regions"])
    return d["verdict"]
