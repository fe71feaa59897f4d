"""Invalid ONNX models are refused before any conversion (issue 24 point 4: opset 99 and opset 1 models,
an INT64 input, float16 Gemm weights: onnx's full checker and onnxruntime reject them), with one line
naming the file and the node; and every unsupported op of a model is listed at once (issue 27
acceptance 4), before the loader converts any node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cfruntime.errors import NetworkError, UnsupportedOpError, UnsupportedOpsError
from cfruntime.network import load_onnx, network_from_model
from cfruntime.network import onnx_loader
from cfruntime.network.builders import make_model


def gemm_model(opset=13, in_type=TensorProto.FLOAT, wdtype=np.float32):
    W = numpy_helper.from_array(np.ones((3, 2), dtype=wdtype), "W")
    B = numpy_helper.from_array(np.zeros(3, dtype=wdtype), "B")
    x = helper.make_tensor_value_info("x", in_type, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "B"], ["y"], name="gemm0", transB=1)], "g", [x], [y], [W, B])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


BAD = {
    "opset99": (lambda: gemm_model(opset=99),
                "invalid ONNX model: node 'gemm0' (Gemm): opset 99 of domain 'ai.onnx' is newer than any this onnx"),
    "opset1": (lambda: gemm_model(opset=1),
               "invalid ONNX model: node 'gemm0' (Gemm): opset 1 of domain 'ai.onnx' is older than 7"),
    "int64_input": (lambda: gemm_model(in_type=TensorProto.INT64),
                    "input 'x' has element type INT64 (read by node 'gemm0' (Gemm)): only a floating-point input"),
    "float16_weights": (lambda: gemm_model(wdtype=np.float16),
                        "invalid ONNX model: node 'gemm0' (Gemm): B has inconsistent type tensor(float16)"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_invalid_models_are_one_line_naming_file_and_node(case, tmp_path):
    make, message = BAD[case]
    p = tmp_path / f"{case}.onnx"
    onnx.save(make(), str(p))
    with pytest.raises(NetworkError) as ei:
        load_onnx(p)
    line = str(ei.value)
    assert "\n" not in line and line.startswith(f"error: {p}: {message}"), line


@pytest.mark.parametrize("case", sorted(BAD))
def test_onnxruntime_rejects_them_too(case):
    """The models above really are invalid: onnxruntime refuses every one (so refusing is right)."""
    ort = pytest.importorskip("onnxruntime")
    ort.set_default_logger_severity(3)
    with pytest.raises(Exception):  # noqa: B017 - onnxruntime's Fail / NotImplemented / InvalidGraph
        ort.InferenceSession(BAD[case][0]().SerializeToString(), providers=["CPUExecutionProvider"])


def test_the_valid_model_loads_and_runs():
    """The same Gemm at opset 13 with float32 weights is fine (the failures above are the defects)."""
    net = network_from_model(gemm_model())
    assert [l.kind for l in net.layers] == ["input", "affine"]


def several_unsupported(tmp_path):
    nodes = [helper.make_node("Erf", ["input"], ["a"], name="erf_1"),
             helper.make_node("Erf", ["a"], ["b"], name="erf_2"),
             helper.make_node("Round", ["b"], ["c"], name="round_1"),
             helper.make_node("Atan", ["c"], ["output"], name="atan_1")]
    p = tmp_path / "several.onnx"
    onnx.save(make_model(nodes, {}, (3,)), str(p))
    return p


def test_every_unsupported_op_is_listed_in_one_line(tmp_path):
    p = several_unsupported(tmp_path)
    with pytest.raises(UnsupportedOpsError) as ei:
        load_onnx(p)
    assert str(ei.value) == (f"error: {p}: unsupported ONNX ops: 'Erf' at node 'erf_1' (and 1 more node), "
                             "'Round' at node 'round_1', 'Atan' at node 'atan_1'")
    assert isinstance(ei.value, UnsupportedOpError) and (ei.value.op, ei.value.node) == ("Erf", "erf_1")
    assert [(r[0], r[2]) for r in ei.value.refused] == [("Erf", 2), ("Round", 1), ("Atan", 1)]


def test_the_refusal_comes_before_any_conversion(tmp_path, monkeypatch):
    """Nothing is converted (no node, no initializer read) before the unsupported ops are listed."""
    def no_conversion(*a, **k):
        raise AssertionError("a node was converted before the unsupported ops were listed")

    monkeypatch.setattr(onnx_loader._Loader, "convert", no_conversion)
    monkeypatch.setattr(onnx_loader.numpy_helper, "to_array", no_conversion)
    with pytest.raises(UnsupportedOpsError):
        load_onnx(several_unsupported(tmp_path))


def test_ops_on_constants_only_are_not_refused():
    """An op the loader has no layer for is fine on constants (it is folded): ``Erf`` of a weight."""
    nodes = [helper.make_node("Erf", ["w"], ["we"], name="erf_w"),
             helper.make_node("Mul", ["input", "we"], ["output"], name="scale")]
    w = np.array([0.5, -1.0, 2.0], np.float32)
    net = network_from_model(make_model(nodes, {"w": w}, (3,)))
    import math

    import torch

    x = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    expect = x * torch.tensor([math.erf(float(v)) for v in w], dtype=torch.float64)
    torch.testing.assert_close(net(x), expect, rtol=1e-6, atol=1e-7)


def test_other_domains_are_refused_by_name():
    nodes = [helper.make_node("Scaler", ["input"], ["output"], name="sc", domain="ai.onnx.ml", scale=[2.0])]
    model = make_model(nodes, {}, (3,), check=False)
    model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 2))
    with pytest.raises(UnsupportedOpsError, match=r"unsupported ONNX op 'Scaler' at node 'sc' \(domain 'ai.onnx.ml'\)"):
        network_from_model(model)


def test_cf_run_refuses_before_compiling(tmp_path, monkeypatch, capsys):
    """``cf-run`` checks the network before it compiles the certifier: the line comes first, exit 1."""
    from cfmlir.tools import cf_run, run_setup

    def no_compile(*a, **k):
        raise AssertionError("the certifier was compiled before the network was checked")

    monkeypatch.setattr(run_setup, "load_program", no_compile)
    monkeypatch.setattr(cf_run, "load_program", no_compile)
    p = several_unsupported(tmp_path)
    vnnlib = tmp_path / "p.vnnlib"
    vnnlib.write_text("(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 0))\n(assert (<= X_0 1))\n"
                      "(assert (>= Y_0 0))\n")
    rc = cf_run.main(["--net", str(p), "--vnnlib", str(vnnlib)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and err == [f"error: {p}: unsupported ONNX ops: 'Erf' at node 'erf_1' (and 1 more node), "
                               "'Round' at node 'round_1', 'Atan' at node 'atan_1'"]
