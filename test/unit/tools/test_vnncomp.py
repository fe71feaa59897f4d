"""VNN-COMP mode of cf-run (real CLI in subprocesses): gzip inputs, --results, --timeout, --instances,
and the vnncomp/ entry points."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest

from cftest.instances_folder import numpy_forward, reference_output, relu_net, vnnlib_text

from cfruntime.results import parse_result, read_result
from cftest import REPO

CF_RUN = [sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())"]


def run(*args, env=None):
    return subprocess.run(CF_RUN + [str(a) for a in args], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)


def assert_one_line_error(p):
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("error:"), lines[0]
    return lines[0]


def check_counterexample(bench, onnx_path, xs, ys):
    """The counterexample lies in the box, its Y is the network's output at X, and it violates the property."""
    x, y = np.array(xs), np.array(ys)
    assert x.shape == (4,) and y.shape == (3,)
    assert np.all(x >= bench["lb"]) and np.all(x <= bench["ub"])
    assert np.array_equal(x.astype(np.float32).astype(np.float64), x)  # float32 values: what the checker feeds
    assert y == pytest.approx(numpy_forward(bench["ws"], bench["bs"], x), rel=1e-12, abs=1e-12)
    ref = reference_output(onnx_path, x)
    if ref is not None:
        assert np.max(np.abs(ref - y)) < 1e-5
        assert ref[0] >= bench["sat_level"] - 1e-5
    assert y[0] >= bench["sat_level"]


def test_instances_folder(bench, tmp_path):
    d = bench["dir"]
    out = tmp_path / "run.csv"
    js = tmp_path / "run.json"
    t0 = time.perf_counter()
    p = run("--certifier", "deeppoly", "--instances", d / "instances.csv", "--results", out, "--json", js)
    wall = time.perf_counter() - t0
    assert p.returncode == 1, p.stderr  # two instances failed; the run went on
    assert "Traceback" not in p.stderr
    errors = p.stderr.strip().splitlines()
    assert len(errors) == 2, p.stderr
    assert errors[0].startswith(f"error: {d / 'instances.csv'}:5: ") and "small.onnx.gz" in errors[0]
    assert errors[1].startswith(f"error: {d / 'instances.csv'}:7: ") and "Erf" in errors[1]
    rows = list(csv.reader(out.read_text().splitlines()))
    assert [r[:3] for r in rows] == [
        ["onnx/small.onnx", "vnnlib/unsat.vnnlib", "unsat"],
        ["onnx/small.onnx", "vnnlib/sat.vnnlib", "sat"],
        ["onnx/small_gz.onnx", "vnnlib/unsat_gz.vnnlib.gz", "unsat"],
        ["onnx/big.onnx", "vnnlib/big.vnnlib", "timeout"],
        ["onnx/small.onnx.gz", "vnnlib/unsat.vnnlib", "error"],
        ["onnx/sign.onnx", "vnnlib/unsat.vnnlib", "error"],
        ["onnx/small.onnx", "vnnlib/unsat.vnnlib", "unsat"],  # a fresh worker after the timeout
    ]
    times = [float(r[3]) for r in rows]
    assert all(t >= 0 for t in times)
    assert times[3] < 0.01 + 2.0  # abandoned at about its timeout
    assert wall < 120
    # the summary: counts per verdict and the total time
    assert "verdicts:  3 unsat, 1 sat, 0 unknown, 1 timeout, 2 error" in p.stdout
    assert "time:" in p.stdout and "total" in p.stdout
    # the per-instance result files
    res = tmp_path / "run_results"
    files = sorted(res.iterdir())
    assert [f.name for f in files] == ["0001_small_unsat.txt", "0002_small_sat.txt", "0003_small_gz_unsat_gz.txt",
                                      "0004_big_big.txt", "0005_small_unsat.txt", "0007_sign_unsat.txt",
                                      "0008_small_unsat.txt"]
    verdicts = [read_result(f)[0] for f in files]
    assert verdicts == [r[2] for r in rows]
    verdict, xs, ys = read_result(res / "0002_small_sat.txt")
    assert verdict == "sat"
    check_counterexample(bench, d / "onnx" / "small.onnx", xs, ys)
    text = (res / "0002_small_sat.txt").read_text()
    lines = text.splitlines()
    assert lines[0] == "sat" and lines[1].startswith("((X_0 ") and lines[2].startswith(" (X_1 ")
    assert lines[-1].startswith(" (Y_2 ") and lines[-1].endswith("))") and len(lines) == 1 + 4 + 3
    # the JSON has every instance
    dj = json.loads(js.read_text())
    assert [r["verdict"] for r in dj["instances"]] == [r[2] for r in rows]
    assert dj["counts"]["unsat"] == 3 and dj["instances"][1]["result"]["counterexample"]["x"] == xs


def test_single_vnnlib_results_file_and_gzip(bench, tmp_path):
    d = bench["dir"]
    res = tmp_path / "r.txt"
    p = run("--certifier", "deeppoly", "--net", d / "onnx" / "small_gz.onnx.gz", "--vnnlib", d / "vnnlib" / "sat.vnnlib",
            "--results", res, "--json", tmp_path / "r.json")
    assert p.returncode == 0, p.stderr
    assert "verdict:   sat" in p.stdout
    verdict, xs, ys = read_result(res)
    assert verdict == "sat"
    check_counterexample(bench, d / "onnx" / "small.onnx", xs, ys)
    assert json.loads((tmp_path / "r.json").read_text())["counterexample"]["y"] == ys
    # unsat from a gzip property, through the child process of --timeout
    p = run("--certifier", "deeppoly", "--net", d / "onnx" / "small.onnx", "--vnnlib", d / "vnnlib" / "unsat_gz.vnnlib.gz",
            "--results", res, "--timeout", "120")
    assert p.returncode == 0, p.stderr
    assert res.read_text() == "unsat\n" and "verdict:   unsat" in p.stdout


def test_single_vnnlib_timeout_stops_the_analysis(tmp_path):
    """The interpreter needs about 30 s for this property (on 2 CPU cores); --timeout 6 (of which the child's
    start-up takes 2-3 s) ends the command after about 6 s: the analysis is killed, not waited for."""
    ws, bs, model = relu_net([30, 300, 300, 300, 300, 5], seed=3)
    net = tmp_path / "mid.onnx"
    onnx.save(model, str(net))
    prop = tmp_path / "mid.vnnlib"
    prop.write_text(vnnlib_text(-np.ones(30), np.ones(30), 5, ["(assert (>= Y_0 1000.0))"]))
    res = tmp_path / "r.txt"
    t0 = time.perf_counter()
    p = run("--engine", "interpreter", "--certifier", "deeppoly", "--net", net, "--vnnlib", prop, "--results", res,
            "--timeout", "6", "--json", tmp_path / "r.json")
    wall = time.perf_counter() - t0
    assert p.returncode == 0, p.stderr
    assert res.read_text() == "timeout\n"
    assert "verdict:   timeout" in p.stdout
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "timeout"
    assert wall < 6 + 6


def test_results_file_says_error_on_a_bad_instance(bench, tmp_path):
    d = bench["dir"]
    res = tmp_path / "r.txt"
    for extra in ((), ("--timeout", "60")):
        res.write_text("stale\n")
        p = run("--certifier", "deeppoly", "--net", d / "onnx" / "sign.onnx", "--vnnlib", d / "vnnlib" / "unsat.vnnlib",
                "--results", res, *extra)
        assert "Erf" in assert_one_line_error(p)
        assert res.read_text() == "error\n"


@pytest.mark.parametrize("content,line,what", [
    ("onnx/a.onnx,vnnlib/a.vnnlib,60\nonnx/a.onnx,vnnlib/a.vnnlib\n", 2, "expected 3 columns"),
    ("onnx/a.onnx,vnnlib/a.vnnlib,60,7\n", 1, "expected 3 columns"),
    ("# comment\n\nonnx/a.onnx,vnnlib/a.vnnlib,soon\n", 3, "timeout must be a positive number"),
    ("onnx/a.onnx,vnnlib/a.vnnlib,-1\n", 1, "timeout must be a positive number"),
])
def test_malformed_instances_csv(tmp_path, content, line, what):
    csv_path = tmp_path / "instances.csv"
    csv_path.write_text(content)
    out = tmp_path / "out.csv"
    msg = assert_one_line_error(run("--instances", csv_path, "--results", out))
    assert msg.startswith(f"error: {csv_path}:{line}: ") and what in msg
    assert not out.exists()  # nothing ran


def test_instances_missing_file_names_the_line(tmp_path):
    (tmp_path / "p.vnnlib").write_text(vnnlib_text([0.0], [1.0], 1, ["(assert (>= Y_0 5.0))"]))
    csv_path = tmp_path / "instances.csv"
    csv_path.write_text("nets/none.onnx,p.vnnlib,30\n")
    out = tmp_path / "out.csv"
    p = run("--instances", csv_path, "--results", out)
    msg = assert_one_line_error(p)
    assert msg.startswith(f"error: {csv_path}:1: ") and "nets/none.onnx" in msg
    assert out.read_text() == "nets/none.onnx,p.vnnlib,error,0.000\n"
    assert "0 unsat, 0 sat, 0 unknown, 0 timeout, 1 error" in p.stdout


@pytest.mark.parametrize("args,what", [
    (["--instances", "/nonexistent/instances.csv"], "no such instances file"),
    (["--instances", "x.csv", "--net", "n.onnx"], "cannot be combined"),
    (["--net", "n.onnx", "--data", "d.csv", "--eps", "0.1", "--results", "r.txt"], "to VNN-LIB properties"),
    (["--vnnlib", "p.vnnlib", "--timeout", "0"], "--timeout must be a positive number"),
    (["--vnnlib", "p.vnnlib", "--timeout", "inf"], "--timeout must be a positive number"),
])
def test_bad_vnncomp_flags(args, what):
    assert what in assert_one_line_error(run(*args))


def test_corrupt_gzip_is_one_line(tmp_path):
    bad = tmp_path / "bad.vnnlib.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    net = tmp_path / "n.onnx"
    onnx.save(relu_net([1, 2, 1], seed=0)[2], str(net))
    msg = assert_one_line_error(run("--certifier", "ibp", "--net", net, "--vnnlib", bad))
    assert "bad.vnnlib.gz" in msg and "gzip" in msg


def test_run_instance_script(bench, tmp_path):
    d = bench["dir"]
    res = tmp_path / "result.txt"
    res.write_text("stale\n")
    env = dict(os.environ, CF_PYTHON=sys.executable, CF_CERTIFIER="deeppoly")
    prep = subprocess.run(["bash", str(REPO / "vnncomp" / "prepare_instance.sh"), "v1", "test", str(d / "onnx" / "small.onnx"),
                           str(d / "vnnlib" / "sat.vnnlib")], capture_output=True, text=True, env=env, timeout=300)
    assert prep.returncode == 0, prep.stderr
    p = subprocess.run(["bash", str(REPO / "vnncomp" / "run_instance.sh"), "v1", "test", str(d / "onnx" / "small.onnx"),
                        str(d / "vnnlib" / "sat.vnnlib"), str(res), "60"], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    verdict, xs, ys = read_result(res)
    assert verdict == "sat"
    check_counterexample(bench, d / "onnx" / "small.onnx", xs, ys)
    # prepare_instance.sh refuses an unsupported network in one line; run_instance.sh leaves 'error'
    prep = subprocess.run(["bash", str(REPO / "vnncomp" / "prepare_instance.sh"), "v1", "test", str(d / "onnx" / "sign.onnx"),
                           str(d / "vnnlib" / "unsat.vnnlib")], capture_output=True, text=True, env=env, timeout=300)
    assert "Erf" in assert_one_line_error(prep)
    p = subprocess.run(["bash", str(REPO / "vnncomp" / "run_instance.sh"), "v1", "test", str(d / "onnx" / "sign.onnx"),
                        str(d / "vnnlib" / "unsat.vnnlib"), str(res), "60"], capture_output=True, text=True, env=env, timeout=300)
    assert "Erf" in assert_one_line_error(p)
    assert res.read_text() == "error\n"
    bad = subprocess.run(["bash", str(REPO / "vnncomp" / "run_instance.sh"), "v2", "a", "b", "c", str(res), "1"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert "unsupported version" in assert_one_line_error(bad)


def test_result_text_round_trip():
    from cfruntime.results import Counterexample, result_text

    cex = Counterexample(np.array([0.25, -1e-7]), np.array([1.0 / 3.0]), 0, 0)
    text = result_text("sat", cex)
    assert text == f"sat\n((X_0 0.25)\n (X_1 -1e-07)\n (Y_0 {1.0 / 3.0!r}))\n"
    assert parse_result(text) == ("sat", [0.25, -1e-7], [1.0 / 3.0])
    for v in ("unsat", "unknown", "timeout", "error"):
        assert result_text(v) == v + "\n" and parse_result(v + "\n") == (v, None, None)
    with pytest.raises(ValueError):
        result_text("sat")
    with pytest.raises(ValueError):
        result_text("holds")


@pytest.mark.parametrize("grown, starts", [(False, 1), (True, 3)])
def test_a_worker_grown_past_half_its_data_limit_is_replaced(bench, tmp_path, monkeypatch, grown, starts):
    """``--instances``: the worker serves one instance after another and is replaced before the next once it
    holds more than half of its data limit (``cfruntime.memory_limit.grown_past_share``; a process's data only
    grows, and at the limit even reading the next network fails); the verdicts are the same either way."""
    import cfruntime.memory_limit
    from cfmlir.tools import cf_run, instances

    d = tmp_path / "b"
    d.mkdir()
    (d / "onnx").symlink_to(bench["dir"] / "onnx")
    (d / "vnnlib").symlink_to(bench["dir"] / "vnnlib")
    (d / "instances.csv").write_text("onnx/small.onnx,vnnlib/unsat.vnnlib,60\n" * 2 + "onnx/small.onnx,vnnlib/sat.vnnlib,60\n")
    started = []
    real_start = instances._start_worker
    monkeypatch.setattr(instances, "_start_worker", lambda *a: started.append(1) or real_start(*a))
    monkeypatch.setattr(cfruntime.memory_limit, "grown_past_share", lambda pid, share=0.5: grown)
    out = tmp_path / "r.json"
    assert cf_run.main(["--certifier", "deeppoly", "--instances", str(d / "instances.csv"), "--json", str(out), "--quiet"]) == 0
    assert [r["verdict"] for r in json.loads(out.read_text())["instances"]] == ["unsat", "unsat", "sat"]
    assert len(started) == starts


def test_grown_past_share_reads_the_process_data():
    """A process's data (``VmData``) against a share of the limit (or of the machine's memory): any process holds
    more than 0 of it and less than 100 times it; an unreadable process is not grown."""
    import os

    from cfruntime.memory_limit import grown_past_share

    if not sys.platform.startswith("linux"):
        pytest.skip("/proc: Linux")
    assert grown_past_share(os.getpid(), share=0.0)
    assert not grown_past_share(os.getpid(), share=100.0)
    assert not grown_past_share(2 ** 22 + 12345)  # no such process
