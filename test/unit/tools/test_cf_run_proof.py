"""``cf-run``'s proof gate (:mod:`cfmlir.proof_gate`): the JSON's ``"proved"``/``"proof"``, the one warning of an
``unknown`` rule (also once in ``--instances``), ``--require-proof`` and ``--proof-timeout``, a refuted rule under
``--timeout`` and in ``--instances`` (exit 3, result files ``unknown``), a cache hit, and VNN-COMP's
``prepare_instance`` proving ahead.  The mutants of every kind: ``test_proof_gate_mutants.py``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cfmlir import proof_gate
from cfmlir.certifiers import certifier_source
from cfmlir.tools import cf_run
from cfmlir.tools.instances import prepare_main
from cftest import REPO
from cftest.gate_mutants import MUTANTS, network, robustness_vnnlib, two_images

CF_RUN = [sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())"]
PREP = ["--mean", "0", "--std", "1", "--layout", "NCHW", "--flatten-order", "CHW"]
UNSOUND = MUTANTS["ibp ReLU upper bound without the clamp at 0"]


@pytest.fixture()
def case(tmp_path, monkeypatch):
    """A fresh proof cache, a relu net, two images, a VNN-LIB property, a copy of ibp.cf and the unsound mutant."""
    monkeypatch.setenv("CFMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(proof_gate, "_MEMO", {})
    data, prop = two_images(tmp_path, seed=2)
    copy = tmp_path / "ibp_copy.cf"
    copy.write_text(certifier_source("ibp")[0])
    bad = tmp_path / "ibp_bad.cf"
    bad.write_text(UNSOUND.text())
    return {"dir": tmp_path, "net": network("relu", tmp_path / "relu.onnx"), "csv": data, "vnnlib": prop,
            "copy": copy, "bad": bad}


def run_main(capsys, *args):
    rc = cf_run.main([str(a) for a in args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def strict(path):
    return json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in {path}"))


def dataset(case, cf, *extra):
    return ("--certifier", cf, "--net", case["net"], "--data", case["csv"], "--eps", "0.01", *PREP, *extra)


def test_proved_shipped_and_cached(case, capsys):
    out = case["dir"] / "o.json"
    rc, _, err = run_main(capsys, *dataset(case, case["copy"], "--json", out))
    assert rc == 0 and "warning" not in err, err
    d = strict(out)
    assert d["proved"] is True and d["proof"]["rules"] == {"ibp.Affine": "verified", "ibp.Relu": "verified"}
    assert d["proof"]["K"] == 2 and d["proof"]["M"] == 2 and d["proof"]["cached"] is False
    proof_gate._MEMO.clear()  # as a new process would
    rc, _, err = run_main(capsys, *dataset(case, case["copy"], "--json", out))
    assert rc == 0 and strict(out)["proof"]["cached"] is True
    rc, _, err = run_main(capsys, *dataset(case, "ibp", "--json", out))
    assert rc == 0 and strict(out)["proved"] == "shipped" and "proof" not in strict(out)


def test_unknown_rules_warn_once_and_require_proof_refuses(case, capsys):
    out = case["dir"] / "o.json"
    rc, stdout, err = run_main(capsys, *dataset(case, case["copy"], "--proof-timeout", "1e-6", "--json", out))
    assert rc == 0, err
    warnings = [l for l in err.splitlines() if l.startswith("warning:") and "not proved sound" in l]
    assert len(warnings) == 1 and "ibp.Affine" in warnings[0] and "ibp.Relu" in warnings[0]
    d = strict(out)
    assert d["proved"] is False and set(d["proof"]["rules"].values()) == {"unknown"}
    assert "timeout" in d["proof"]["details"]["ibp.Relu"] and "certified" in d
    out.unlink()
    rc, stdout, err = run_main(capsys, *dataset(case, case["copy"], "--proof-timeout", "1e-6", "--require-proof", "--json", out))
    assert rc == 3 and not out.exists() and "certified:" not in stdout
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {case['copy']}: rule(s) ibp.") and "a proof is required" in lines[0]
    res = case["dir"] / "r.txt"
    rc, stdout, err = run_main(capsys, "--certifier", case["copy"], "--net", case["net"], "--vnnlib", case["vnnlib"],
                               "--results", res, "--proof-timeout", "1e-6", "--require-proof")
    assert rc == 3 and res.read_text() == "unknown\n" and "verdict" not in stdout


def test_a_longer_proof_timeout_proves_what_a_short_one_left_unknown(case, capsys):
    out = case["dir"] / "o.json"
    run_main(capsys, *dataset(case, case["copy"], "--proof-timeout", "1e-6"))
    rc, _, err = run_main(capsys, *dataset(case, case["copy"], "--json", out))
    assert rc == 0 and strict(out)["proved"] is True and "warning" not in err


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "soon"])
def test_bad_proof_timeout_is_one_line(capsys, bad):
    with pytest.raises(SystemExit) as e:
        cf_run.main(["--proof-timeout", bad])
    rc, err = e.value.code, capsys.readouterr().err
    assert rc == 1 and err.startswith("error: cf-run: argument --proof-timeout: must be a ") and len(err.splitlines()) == 1


def test_the_search_certifier_goes_through_the_gate_too(case, capsys, monkeypatch):
    """Branch and bound's own certifier (``args.bab_certifier``, auto's choice on residual nets) is proved for the
    network before any analysis, as the pass's is: a refuted rule there is exit 3 and an ``unknown`` result file,
    though the pass's certifier (shipped ibp) is sound; an unknown one is the run's warning."""
    real = cf_run.build_parser

    def with_search(search):
        def parser():
            p = real()
            p.set_defaults(bab_certifier=str(search))
            return p
        monkeypatch.setattr(cf_run, "build_parser", parser)

    res, out = case["dir"] / "r.txt", case["dir"] / "o.json"
    vnnlib = ("--certifier", "ibp", "--net", case["net"], "--vnnlib", case["vnnlib"], "--bab", "on", "--results", res)
    with_search(case["bad"])
    rc, stdout, err = run_main(capsys, *vnnlib)
    assert rc == 3 and res.read_text() == "unknown\n" and "verdict" not in stdout
    assert err.startswith(f"error: {case['bad']}:{UNSOUND.rule_line()}:5: rule ibp.Relu is unsound: ")
    with_search(case["copy"])
    rc, stdout, err = run_main(capsys, *vnnlib, "--proof-timeout", "1e-6", "--json", out)
    assert rc == 0 and len([l for l in err.splitlines() if "not proved sound" in l and str(case["copy"]) in l]) == 1
    assert strict(out)["proved"] == "shipped"
    rc, stdout, err = run_main(capsys, *vnnlib, "--proof-timeout", "1e-6", "--require-proof")
    assert rc == 3 and "a proof is required" in err

def test_under_timeout_and_in_instances(case, tmp_path):
    """The worker processes: a refuted rule is exit 3 and ``unknown`` result files; an unknown one is one warning
    for the whole run."""
    env = {**__import__("os").environ, "CFMLIR_CACHE_DIR": str(tmp_path / "cache")}

    def run(*args):
        return subprocess.run(CF_RUN + [str(a) for a in args], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)

    res = tmp_path / "r.txt"
    p = run("--certifier", case["bad"], "--net", case["net"], "--vnnlib", case["vnnlib"], "--results", res, "--timeout", "300")
    assert p.returncode == 3 and res.read_text() == "unknown\n" and "verdict" not in p.stdout
    assert p.stderr.startswith(f"error: {case['bad']}:{UNSOUND.rule_line()}:5: rule ibp.Relu is unsound: ")
    csv_path = tmp_path / "instances.csv"
    csv_path.write_text(f"{case['net']},{case['vnnlib']},300\n{case['net']},{case['vnnlib']},300\n")
    out = tmp_path / "out.csv"
    p = run("--certifier", case["bad"], "--instances", csv_path, "--results", out)
    assert p.returncode == 3, p.stderr
    assert [line.split(",")[2] for line in out.read_text().splitlines()] == ["unknown", "unknown"]
    errors = [l for l in p.stderr.splitlines() if l.startswith("error:")]
    assert [e.split(": ")[1] for e in errors] == [f"{csv_path}:1", f"{csv_path}:2"]
    assert all("rule ibp.Relu is unsound" in e for e in errors)
    assert all(f.read_text() == "unknown\n" for f in (tmp_path / "out_results").iterdir())
    p = run("--certifier", case["copy"], "--instances", csv_path, "--proof-timeout", "1e-6", "--json", tmp_path / "all.json")
    assert p.returncode == 0, p.stderr
    assert len([l for l in p.stderr.splitlines() if "not proved sound" in l]) == 1
    rows = strict(tmp_path / "all.json")["instances"]
    assert [r["result"]["proved"] for r in rows] == [False, False]


def test_prepare_instance_proves_ahead(case, capsys):
    """``vnncomp/prepare_instance.sh`` proves the rules the instance's network runs (cached for
    ``run_instance.sh``) and refuses an unsound certifier there already (exit 3)."""
    assert prepare_main(["prepare", str(case["copy"]), str(case["net"]), str(case["vnnlib"])]) == 0
    assert any(p.name.startswith(proof_gate.spec_hash(case["copy"].read_text())[:32])
               for p in (case["dir"] / "cache" / "proofs").iterdir())
    assert prepare_main(["prepare", str(case["bad"]), str(case["net"]), str(case["vnnlib"])]) == 3
    err = capsys.readouterr().err
    assert "rule ibp.Relu is unsound" in err.splitlines()[-1]


def test_ray_dataset_mode_is_refused_before_ray_starts(case, capsys, monkeypatch):
    """``--ray``: the proof runs in the driver before the cluster is started (an unsound certifier never
    reaches it)."""
    pytest.importorskip("ray")
    from cfmlir import distributed

    def no_cluster(*a, **kw):
        raise AssertionError("Ray was started for a refuted certifier")

    monkeypatch.setattr(distributed, "session", no_cluster)
    rc, out, err = run_main(capsys, *dataset(case, case["bad"], "--ray"))
    assert rc == 3 and "rule ibp.Relu is unsound" in err and "certified:" not in out


def test_instances_prove_outside_the_instance_clock(tmp_path):
    """A proof longer than an instance's limit (the S-curve refutation takes seconds) is not killed with the
    instance -- it would be again for every instance, and the run would say ``timeout``: it runs before the
    instance's clock starts, and the refuted certifier answers nothing (exit 3, ``unknown``)."""
    import numpy as np

    m = MUTANTS["deeppoly sigmoid tangent taken at the wrong end"]
    cf = tmp_path / "sig.cf"
    cf.write_text(m.text())
    net = network("sigmoid", tmp_path / "sig.onnx")
    prop = robustness_vnnlib(tmp_path / "p.vnnlib", np.zeros(784), np.full(784, 0.01), 3)
    csv_path = tmp_path / "instances.csv"
    csv_path.write_text(f"{net},{prop},0.5\n{net},{prop},0.5\n")
    env = {**__import__("os").environ, "CFMLIR_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run(CF_RUN + ["--certifier", str(cf), "--instances", str(csv_path), "--results", str(tmp_path / "o.csv")],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert [line.split(",")[2] for line in (tmp_path / "o.csv").read_text().splitlines()] == ["unknown", "unknown"]
    assert p.stderr.count("rule deeppoly.Sigmoid is unsound") == 2
    assert "and proving the certifier's rules)" in p.stdout
