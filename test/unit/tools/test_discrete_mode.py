"""``cf-run --vnnlib`` on a network the loader refuses (``ArgMax``) whose property leaves free only a position the
network rounds (``tools/discrete_mode.py``): decided by enumeration, with the competition's result file; any other
refused network keeps its one error line."""

from __future__ import annotations

import builtins
import json

import numpy as np
import onnx
import pytest

from cfmlir.tools.cf_run import main as cf_run
from cfruntime.results import read_result
from cftest.discrete_models import position_model, vnnlib_text

ort = pytest.importorskip("onnxruntime")


def _files(tmp_path, lo, hi, outputs):
    net, prop = tmp_path / "pos.onnx", tmp_path / "p.vnnlib"
    onnx.save(position_model(), str(net))
    prop.write_text(vnnlib_text(lo, hi, outputs))
    return net, prop


@pytest.mark.parametrize("timeout", [None, "30"])
def test_a_rounded_position_is_decided_without_a_certifier(tmp_path, capsys, timeout):
    """Pixels (1, 2), position in [0, 6.5]: the total ``TABLE[p] . (1, 2)`` is at least -1.5 (row 6), so
    ``Y_1 <= -2`` is unsat and ``Y_1 <= -1.4`` sat at position 6; in-process and in a ``--timeout`` worker."""
    lo, hi = [1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.5, 0.0]
    extra = [] if timeout is None else ["--timeout", timeout]
    net, prop = _files(tmp_path, lo, hi, ["(<= Y_1 -2.0)"])
    res, out = tmp_path / "r.txt", tmp_path / "r.json"
    assert cf_run(["--net", str(net), "--vnnlib", str(prop), "--results", str(res), "--json", str(out), *extra]) == 0
    text = capsys.readouterr().out
    assert "(not used: unsupported ONNX op 'ArgMax' at node 'argmax')" in text
    assert "verdict:   unsat (enumeration: 7 of 7 points, X_2 trunc, by ONNX Runtime)" in text
    d = json.loads(out.read_text())
    assert d["verdict"] == "unsat" and d["enumeration"]["reads"] == {"X_2": "trunc"} and d["regions"] == []
    assert read_result(res)[0] == "unsat"

    net, prop = _files(tmp_path, lo, hi, ["(<= Y_1 -1.4)"])
    assert cf_run(["--net", str(net), "--vnnlib", str(prop), "--results", str(res), *extra]) == 0
    verdict, x, y_given = read_result(res)
    assert verdict == "sat"
    y = ort.InferenceSession(str(net), providers=["CPUExecutionProvider"]).run(None, {"x": np.float32(x)})[0]
    assert x[2] == 6.0 and np.array_equal(y, np.float32(y_given)) and y[1] <= -1.4


def test_a_real_valued_free_input_keeps_the_loaders_error(tmp_path, capsys):
    net, prop = _files(tmp_path, [0.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.0, 0.0], ["(<= Y_1 -2.0)"])
    assert cf_run(["--net", str(net), "--vnnlib", str(prop)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {net}: unsupported ONNX op 'ArgMax' at node 'argmax'"]


def test_without_onnx_runtime_the_error_says_what_would_decide_it(tmp_path, capsys, monkeypatch):
    real_import = builtins.__import__

    def no_ort(name, *a, **k):
        if name == "onnxruntime":
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ort)
    net, prop = _files(tmp_path, [1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.0, 0.0], ["(<= Y_1 -2.0)"])
    assert cf_run(["--net", str(net), "--vnnlib", str(prop)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {net}: unsupported ONNX op 'ArgMax' at node 'argmax'; ")
    assert err[0].endswith("pip install onnxruntime")


def test_without_a_property_the_refused_network_is_refused_at_once(tmp_path, capsys):
    net, _ = _files(tmp_path, [1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.0, 0.0], [])
    assert cf_run(["--net", str(net), "--data", str(tmp_path / "none.csv"), "--eps", "0.1"]) == 1
    assert capsys.readouterr().err.strip() == f"error: {net}: unsupported ONNX op 'ArgMax' at node 'argmax'"


def test_prepare_instance_accepts_a_refused_network_only_when_it_can_be_enumerated(tmp_path, capsys):
    """VNN-COMP's ``prepare_instance.sh``: ready (0) for the rounded position, the loader's line (1) when a pixel is free."""
    from cfmlir.tools.instances import prepare_main

    net, prop = _files(tmp_path, [1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.0, 0.0], ["(<= Y_1 -2.0)"])
    assert prepare_main(["prepare", "deeppoly", str(net), str(prop)]) == 0
    net, prop = _files(tmp_path, [0.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.0, 0.0], ["(<= Y_1 -2.0)"])
    capsys.readouterr()
    assert prepare_main(["prepare", "deeppoly", str(net), str(prop)]) == 1
    assert capsys.readouterr().err.strip() == f"error: {net}: unsupported ONNX op 'ArgMax' at node 'argmax'"
