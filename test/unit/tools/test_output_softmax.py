"""A Softmax at a network's output (issue 27): dropped when the property only compares outputs (the
order of the outputs is the logits'), analysed (exp and reciprocal layers) when the property compares
an output with a constant -- where bounds on the logits would answer a different question."""

from __future__ import annotations

import json

import numpy as np
import torch
from onnx import helper

from cfmlir.tools.cf_run import main as cf_run
from cfruntime.network import load_onnx
from cfruntime.properties import parse_vnnlib
from cftest.vnnlib_cases import _save, vnnlib


def softmax_net(path):
    """``[2] -> W x + b -> softmax``: on the box below the logits are about (-0.5, -3), so ``y_0`` is
    about 0.92 while the logit ``x_0`` is negative."""
    inits = {"W": np.array([[1.0, 0.0], [0.0, 1.0]], np.float32), "b": np.array([-0.5, -3.0], np.float32)}
    nodes = [helper.make_node("MatMul", ["X", "W"], ["m"], name="mm"), helper.make_node("Add", ["m", "b"], ["z"], name="add"),
             helper.make_node("Softmax", ["z"], ["Y"], axis=-1, name="softmax")]
    return _save(path, nodes, inits, [1, 2], [1, 2])


def run(tmp_path, capsys, asserts):
    net = softmax_net(tmp_path / "net.onnx")
    prop = vnnlib(tmp_path / "p.vnnlib", [-0.1, -0.1], [0.1, 0.1], 2, asserts)
    out = tmp_path / "out.json"
    rc = cf_run(["--net", str(net), "--vnnlib", str(prop), "--json", str(out), "--quiet"])
    capsys.readouterr()
    return rc, json.loads(out.read_text())


def test_a_threshold_on_a_probability_reads_the_softmax(tmp_path, capsys):
    """``Y_0 <= 0.5`` never holds (y_0 >= 0.9 on the box); the logit x_0 <= 0.5 always does: with the
    Softmax dropped the answer would be a (wrong) sat."""
    rc, out = run(tmp_path, capsys, ["(assert (<= Y_0 0.5))"])
    assert rc == 0 and out["verdict"] == "unsat"


def test_a_comparison_of_outputs_drops_it(tmp_path, capsys):
    """``Y_1 >= Y_0`` holds nowhere; decided on the logits (the Softmax dropped: no exp layer analysed)."""
    rc, out = run(tmp_path, capsys, ["(assert (>= Y_1 Y_0))"])
    assert rc == 0 and out["verdict"] == "unsat"
    assert load_onnx(tmp_path / "net.onnx").output_softmax_dropped


def test_the_kept_softmax_is_the_network(tmp_path):
    net = load_onnx(softmax_net(tmp_path / "net.onnx"), keep_output_softmax=True)
    assert not net.output_softmax_dropped and {"exp", "reciprocal"} <= {l.kind for l in net.layers}
    x = torch.tensor([[0.3, -0.2]], dtype=torch.float64)
    z = x + torch.tensor([-0.5, -3.0], dtype=torch.float64)
    torch.testing.assert_close(net(x), torch.softmax(z, dim=1), rtol=1e-6, atol=1e-7)


def test_compares_outputs_only(tmp_path):
    def prop(asserts):
        return parse_vnnlib(vnnlib(tmp_path / "q.vnnlib", [0, 0], [1, 1], 3, asserts))

    assert prop(["(assert (or (and (>= Y_0 Y_1)) (and (<= Y_2 Y_0))))"]).compares_outputs_only()
    assert not prop(["(assert (>= Y_0 0.5))"]).compares_outputs_only()
    assert not prop(["(assert (>= Y_0 (- 0.1)))"]).compares_outputs_only()
    assert not prop(["(assert (<= Y_0 0.0))"]).compares_outputs_only()
