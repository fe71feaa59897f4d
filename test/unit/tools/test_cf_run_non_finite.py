"""Acceptance 4 of issue 24: no run exits 0 with a non-finite bound, and every JSON is strict JSON.

Each cause -- a BatchNorm whose folded weights are NaN (a negative variance), float32 overflow on weights near
3e38, a ``0.0/0.0`` in a certifier -- ends ``cf-run`` with one ``error:`` line naming the first layer whose
bounds are not finite (index, kind, ONNX node) and the cause, exit status 1, no JSON; in dataset mode and
VNN-LIB mode (the result file then says ``error``), in this process, under ``--timeout`` and in
``--instances``; with the compiled engine and the interpreter's.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

from cfmlir.tools import cf_run, run_setup
from cfruntime.network.builders import make_model
from cftest import REPO
from cftest.gate_mutants import two_images

CF_RUN = [sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())"]
PREP = ["--mean", "0", "--std", "1", "--layout", "NCHW", "--flatten-order", "CHW"]
IBP_NAN = ("    Relu -> ((prev[l] >= 0 ? prev[l] : 0), (prev[u] >= 0 ? prev[u] : 0));",
           "    Relu -> ((prev[l] >= 0 ? prev[l] : 0) + 0.0/0.0, (prev[u] >= 0 ? prev[u] : 0));")


def _save(path, nodes, inits):
    onnx.save(make_model(nodes, inits, (1, 28, 28)), str(path))
    return path


def _mlp(rng, w1, extra_nodes=(), extra_inits=None, hidden_out="h"):
    inits = {"W1": w1, "b1": (rng.standard_normal(8) * 0.1).astype(np.float32),
             "W2": rng.standard_normal((10, 8)).astype(np.float32), "b2": np.zeros(10, np.float32), **(extra_inits or {})}
    nodes = [helper.make_node("Flatten", ["input"], ["x"], name="flatten"),
             helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1, name="fc1"), *extra_nodes,
             helper.make_node("Relu", [hidden_out], ["a"], name="relu"),
             helper.make_node("Gemm", ["a", "W2", "b2"], ["output"], transB=1, name="fc2")]
    return nodes, inits


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    d = tmp_path_factory.mktemp("nonfinite")
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((8, 784)) * 0.05).astype(np.float32)
    var = np.ones(8, np.float32)
    var[2] = -1.0  # 1 / sqrt(var + eps): NaN once folded into the Gemm
    bn = helper.make_node("BatchNormalization", ["h", "g", "beta", "mu", "var"], ["hb"], name="bn")
    nodes, inits = _mlp(rng, w1, [bn], {"g": np.ones(8, np.float32), "beta": np.zeros(8, np.float32),
                                        "mu": np.zeros(8, np.float32), "var": var}, hidden_out="hb")
    nets = {"bn_nan": _save(d / "bn_nan.onnx", nodes, inits)}
    big = np.sign(rng.standard_normal((8, 784))).astype(np.float32) * np.float32(3e38)
    nets["huge"] = _save(d / "huge.onnx", *_mlp(rng, big))
    nets["plain"] = _save(d / "plain.onnx", *_mlp(rng, w1))
    data, prop = two_images(d)
    return {"dir": d, "nets": nets, "csv": data, "vnnlib": prop}


def run(*args, env=None):
    return subprocess.run(CF_RUN + [str(a) for a in args], capture_output=True, text=True, cwd=REPO, timeout=600, env=env)


def assert_non_finite(p, layer_text: str, cause: str, json_path=None):
    """Exit 1 and one ``error:`` line that names the layer and the cause; no results claimed."""
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr
    errors = [l for l in p.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1, p.stderr
    assert f"non-finite bound at {layer_text}" in errors[0] and cause in errors[0], errors[0]
    assert "certified:" not in p.stdout and "verdict:" not in p.stdout
    if json_path is not None:
        assert not json_path.exists()
    return errors[0]


BN_LAYER = "layer 1 (affine, ONNX node 'flatten,fc1,bn')"


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_a_nan_batchnorm_in_dataset_mode(case, tmp_path, engine):
    out = tmp_path / "o.json"
    p = run("--certifier", "deeppoly", "--engine", engine, "--net", case["nets"]["bn_nan"], "--data", case["csv"],
            "--eps", "0.01", *PREP, "--json", out)
    line = assert_non_finite(p, BN_LAYER, "its parameters (weights/bias in the network file) hold NaN", out)
    assert line.startswith(f"error: {case['nets']['bn_nan']}: ") and "is NaN (sample 0)" in line


def test_a_nan_batchnorm_in_vnnlib_mode(case, tmp_path):
    res, out = tmp_path / "r.txt", tmp_path / "o.json"
    for extra in ((), ("--timeout", "120")):  # in this process, and in the --timeout worker
        p = run("--certifier", "deeppoly", "--net", case["nets"]["bn_nan"], "--vnnlib", case["vnnlib"], "--results", res,
                "--json", out, *extra)
        assert_non_finite(p, BN_LAYER, "its parameters", out)
        assert res.read_text() == "error\n"


def test_a_nan_batchnorm_in_instances(case, tmp_path):
    csv_path = tmp_path / "instances.csv"
    csv_path.write_text(f"{case['nets']['bn_nan']},{case['vnnlib']},60\n{case['nets']['plain']},{case['vnnlib']},60\n")
    out = tmp_path / "out.csv"
    p = run("--certifier", "deeppoly", "--instances", csv_path, "--results", out, "--json", tmp_path / "all.json")
    assert p.returncode == 1, p.stderr
    errors = [l for l in p.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {csv_path}:1: ") and BN_LAYER in errors[0], p.stderr
    verdicts = [line.split(",")[2] for line in out.read_text().splitlines()]
    assert verdicts[0] == "error" and verdicts[1] in ("unsat", "sat", "unknown"), verdicts
    results = sorted((tmp_path / "out_results").iterdir())
    assert results[0].read_text() == "error\n"
    json.loads((tmp_path / "all.json").read_text(), parse_constant=lambda c: pytest.fail(c))


def test_float32_overflow(case, tmp_path):
    p = run("--certifier", "deeppoly", "--dtype", "float32", "--net", case["nets"]["huge"], "--data", case["csv"],
            "--eps", "0.01", *PREP, "--json", tmp_path / "o.json")
    assert_non_finite(p, "layer 1 (affine, ONNX node 'flatten,fc1')", "float32 overflow (magnitudes up to 3e+38",
                      tmp_path / "o.json")


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_a_nan_made_by_the_certifier(case, tmp_path, monkeypatch, engine):
    """``0.0/0.0`` in IBP's ReLU (recorded as proved: this tests the engines' check, not the prover)."""
    from cfmlir.certifiers import certifier_source
    from cftest.proofs import prover_misses

    text = certifier_source("ibp")[0]
    assert text.count(IBP_NAN[0]) == 1
    cf = tmp_path / "ibp_nan.cf"
    cf.write_text(text.replace(*IBP_NAN))
    env = prover_misses(monkeypatch, tmp_path / "cache", cf.read_text(), str(cf))
    res = tmp_path / "r.txt"
    p = run("--certifier", cf, "--engine", engine, "--net", case["nets"]["plain"], "--data", case["csv"], "--eps", "0.01",
            *PREP, env=env)
    assert_non_finite(p, "layer 2 (relu, ONNX node 'relu')", "the certifier's rule produced it from finite inputs")
    p = run("--certifier", cf, "--engine", engine, "--net", case["nets"]["plain"], "--vnnlib", case["vnnlib"],
            "--results", res, env=env)
    if res.read_text().startswith("sat\n"):
        # the attack runs before the bounding pass: a confirmed counterexample answers without the certifier
        assert p.returncode == 0 and "verdict:   sat" in p.stdout, p.stdout
    else:
        assert_non_finite(p, "layer 2 (relu, ONNX node 'relu')", "the certifier's rule")
        assert res.read_text() == "error\n"


def test_the_json_writer_refuses_non_finite_numbers(tmp_path):
    out = tmp_path / "o.json"
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(run_setup.UsageError, match=r'the results hold a non-finite number at \["a"\]\[1\]\["b"\]'):
            run_setup.write_json(out, {"a": [1.0, {"b": bad}]})
        assert not out.exists()
    run_setup.write_json(out, {"a": [1.0, 2]})
    assert json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(c)) == {"a": [1.0, 2]}


def test_every_cf_run_json_is_strict(case, tmp_path, capsys):
    """Dataset, VNN-LIB and --instances JSON of a normal run parse with a parser that refuses NaN/Infinity."""
    def strict(path):
        return json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in {path}"))

    o = tmp_path / "d.json"
    assert cf_run.main(["--certifier", "deeppoly", "--net", str(case["nets"]["plain"]), "--data", str(case["csv"]),
                        "--eps", "0.01", *PREP, "--json", str(o), "--layer-bounds", "--check"]) == 0
    assert strict(o)["proved"] == "shipped"
    v = tmp_path / "v.json"
    assert cf_run.main(["--certifier", "deeppoly", "--net", str(case["nets"]["plain"]), "--vnnlib", str(case["vnnlib"]),
                        "--json", str(v)]) == 0
    assert strict(v)["verdict"] in ("unsat", "sat", "unknown")
    capsys.readouterr()
