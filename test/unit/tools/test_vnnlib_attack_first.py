"""VNN-LIB mode attacks before it bounds: a property the attack violates is ``sat`` without any bounding pass
(on wide nets one pass costs minutes where the attack costs seconds: cgan_2023), and a property the
attack cannot violate still gets its pass."""

from __future__ import annotations

import json

import cfmlir.api
from cftest.vnnlib_cases import properties, vector_net

from cfmlir.tools.cf_run import main as cf_run


def _run(tmp_path, capsys, net, prop):
    out = tmp_path / "r.json"
    code = cf_run(["--net", str(net), "--vnnlib", str(prop), "--json", str(out), "--quiet", "--bab", "off", "--split", "off"])
    assert code == 0, capsys.readouterr().err
    return json.loads(out.read_text())


def test_violated_property_is_sat_without_a_bounding_pass(tmp_path, capsys, monkeypatch):
    net = vector_net(tmp_path / "v.onnx")
    holds, violated = properties(tmp_path, net, 0.01)
    calls = []
    real = cfmlir.api.certify
    monkeypatch.setattr(cfmlir.api, "certify", lambda *a, **k: calls.append(1) or real(*a, **k))
    d = _run(tmp_path, capsys, net, violated)
    assert d["verdict"] == "sat" and d["regions"] == [] and calls == []
    x = d["counterexample"]["x"]
    assert len(x) == 5
    d = _run(tmp_path, capsys, net, holds)
    assert d["verdict"] == "unsat" and len(d["regions"]) == 1 and calls == [1]
