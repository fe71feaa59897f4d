"""``bench/bab_compare.py`` runs alpha-beta-CROWN with the competition's configuration made fit for this CPU
(issue 26.3): on the CPU, one instance at a time (no CSV paths), branch and bound instead of a MIP (gurobi)
and without oval21's CPLEX cutting planes, which otherwise end every oval21 instance in an error."""

from __future__ import annotations

import sys

from cftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import bab_compare  # noqa: E402 - the bench script

OVAL21 = """general:
  root_path: ../../vnncomp2021/benchmarks/oval21
  csv_name: oval21_instances.csv
  complete_verifier: bab-refine
  conv_mode: matrix
solver:
  batch_size: 2000
bab:
  branching:
    candidates: 10
  cut:
    enabled: True
    cplex_cuts: True
    bab_cut: True
attack:
  pgd_order: middle
"""


def test_oval21_configuration_runs_on_this_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr(bab_compare, "PEERS", tmp_path / "no-peers")
    abcrown = tmp_path / "abcrown"
    cfg = abcrown / "src" / "complete_verifier" / "exp_configs" / "vnncomp21" / "oval21.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(OVAL21)
    text = bab_compare.abcrown_config("oval21", "nets/cifar_base_kw.onnx", abcrown, tmp_path).read_text()
    assert "general:\n  device: cpu\n" in text
    assert "root_path" not in text and "csv_name" not in text
    assert "complete_verifier: bab\n" in text
    assert "  cut:\n    enabled: False\n    cplex_cuts: False\n    bab_cut: True\n" in text
    assert "conv_mode: matrix" in text and "pgd_order: middle" in text


def test_a_benchmark_without_a_configuration_is_not_run_by_abcrown(tmp_path):
    assert bab_compare.abcrown_config("nonexistent", "x.onnx", tmp_path, tmp_path) is None


def test_on_a_gpu_the_tools_own_configuration_with_that_device(tmp_path, monkeypatch):
    """``--device cuda``: the tool's own VNN-COMP 2021 configuration even where the peers folder has a CPU
    variant (those cut the attack's restarts for 2 cores), one ``device:`` line naming the GPU, and the same
    MIP-free rewriting."""
    peers = tmp_path / "peers"
    peers.mkdir()
    (peers / "mnist_fc_cpu.yaml").write_text("general:\n  device: cpu\nattack:\n  pgd_restarts: 10\n")
    monkeypatch.setattr(bab_compare, "PEERS", peers)
    abcrown = tmp_path / "abcrown"
    cfg = abcrown / "src" / "complete_verifier" / "exp_configs" / "vnncomp21" / "mnistfc.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("general:\n  root_path: ../x\n  device: cpu\n  complete_verifier: bab-refine\n"
                   "attack:\n  pgd_restarts: 100\n")
    assert bab_compare.abcrown_config("mnistfc", "a.onnx", abcrown, tmp_path) == peers / "mnist_fc_cpu.yaml"
    text = bab_compare.abcrown_config("mnistfc", "a.onnx", abcrown, tmp_path, "cuda").read_text()
    assert text.count("device:") == 1 and "general:\n  device: cuda\n" in text
    assert "complete_verifier: bab\n" in text and "pgd_restarts: 100" in text and "root_path" not in text


def test_only_keeps_the_named_instances_of_the_subset(tmp_path):
    import argparse

    (tmp_path / "b_instances.csv").write_text("n1.onnx,p1.vnnlib,60\nn1.onnx,p2.vnnlib,60\nn2.onnx,p1.vnnlib,120\n")
    args = argparse.Namespace(skip=0, every=1, first=None, only="n2.onnx:p1.vnnlib,n1.onnx:p2.vnnlib")
    assert bab_compare.instance_lines(tmp_path, args) == [["n1.onnx", "p2.vnnlib", "60"], ["n2.onnx", "p1.vnnlib", "120"]]
    args.only = "n2.onnx"
    try:
        bab_compare.instance_lines(tmp_path, args)
    except SystemExit as e:
        assert "ONNX:VNNLIB" in str(e)
    else:
        raise AssertionError("a malformed --only was taken")


def test_every_instance_is_saved_as_it_ends(tmp_path, monkeypatch):
    """The JSON is written after every instance: a run stopped in its second instance keeps the first
    (``"complete": false``); a finished benchmark says ``"complete": true``."""
    import json

    import pytest

    bench = tmp_path / "b"
    bench.mkdir()
    (bench / "b_instances.csv").write_text("n1.onnx,p1.vnnlib,60\nn2.onnx,p2.vnnlib,60\n")
    out = tmp_path / "r.json"
    calls = []

    def ours(onnx, vnnlib, limit, tmp, certifier, extra=()):
        calls.append(onnx.name)
        if onnx.name == "n2.onnx" and len(calls) == 2:
            raise KeyboardInterrupt  # the run stopped during the second instance
        return {"verdict": "unsat", "wall_s": 1.0, "cpu_s": 1.0}

    monkeypatch.setattr(bab_compare, "run_ours", ours)
    argv = [str(tmp_path), "--benchmarks", "b", "--tools", "ours", "--out", str(out)]
    with pytest.raises(KeyboardInterrupt):
        bab_compare.main(argv)
    saved = json.loads(out.read_text())["benchmarks"]["b"]
    assert saved["complete"] is False and [r["onnx"] for r in saved["rows"]] == ["n1.onnx"]
    assert saved["summary"]["ours"]["decided"] == 1
    assert bab_compare.main(argv) == 0
    saved = json.loads(out.read_text())["benchmarks"]["b"]
    assert saved["complete"] is True and [r["onnx"] for r in saved["rows"]] == ["n1.onnx", "n2.onnx"]
