"""``cf-run --check``: the soundness safety net for user-written certifiers.

Unsound mutants of the shipped certifiers (made by string replacement, written to ``tmp_path``) are
refuted on the shipped default network (exit status 3, one report per violating layer, ``"unsound":
true``, nothing certified; a VNN-LIB ``unsat`` is not kept); a copy of a shipped certifier is checked by
default and passes; ``--no-check`` and shipped certifiers by name keep the old behaviour.  With
``../shared``: every shipped certifier passes the check on the 3x50, sigmoid 6x200 and ConvSmall MNIST
nets (10 images, the evaluation's epsilon), and ReLU/sigmoid/tanh mutants are caught on the shared MLPs.

Most runs call ``main`` in this process (the CLI's own code path, without a new interpreter's start-up);
the exit status end to end is checked in a subprocess.  The prover (:mod:`cfmlir.proof_gate`) refutes these
mutants before any analysis; here it is made to miss them (:mod:`cftest.proofs`, in this module's own
cache folder), so that the check, the second net, is what is tested.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from cfmlir.certifiers import CERTIFIER_DIR, certifier_names, certifier_source
from cfmlir.tools import cf_run, run_args, run_setup
from cfruntime.default_data import default_data_path, default_network_path
from cfruntime.network.builders import mlp_model
from cfruntime.properties import shared_dir
from cftest import REPO

CF_RUN = [sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())"]
NET, DATA = default_network_path(), default_data_path()

#: (shipped certifier, text replaced, replacement): each makes a bound that is wrong for some inputs
MUTANTS = {
    "deeppoly_relu_upper_0": ("deeppoly", "relu(prev[u])", "0.0"),
    "ibp_relu_lower_plus_1": ("ibp", "Relu -> ((prev[l] >= 0 ? prev[l] : 0),", "Relu -> ((prev[l] >= 0 ? prev[l] : 0) + 1,"),
    "deepz_relu_z_upper_0": ("deepz", "func relu_z_upper(Float l, Float u) = u <= 0.0 ? 0.0 : u;",
                             "func relu_z_upper(Float l, Float u) = 0.0;"),
    "ibp_relu_upper_0": ("ibp", "(prev[u] >= 0 ? prev[u] : 0));", "0.0);"),
    # 1% too tight on the first ReLU layer (where IBP is exact): only a search for the maximum finds it
    "ibp_relu_upper_99pct": ("ibp", "(prev[u] >= 0 ? prev[u] : 0));", "(prev[u] >= 0 ? prev[u] : 0) * 0.99);"),
    "deeppoly_sigmoid_upper_low": ("deeppoly", "Sigmoid -> (sigma(prev[l]), sigma(prev[u]),", "Sigmoid -> (sigma(prev[l]), sigma(prev[l]),"),
    "deeppoly_tanh_upper_low": ("deeppoly", "Tanh -> (tanh(prev[l]), tanh(prev[u]),", "Tanh -> (tanh(prev[l]), tanh(prev[l]),"),
}


@pytest.fixture(autouse=True, scope="module")
def _own_cache(tmp_path_factory):
    """This module's compile and proof cache (the mutants are recorded as proved there only)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CFMLIR_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


def mutant(tmp_path: Path, name: str) -> Path:
    """The mutant ``name`` as a .cf file, recorded as proved (a prover that misses it)."""
    from cftest.proofs import record_verified

    base, old, new = MUTANTS[name]
    text, _ = certifier_source(base)
    assert text.count(old) == 1, (name, old)
    p = tmp_path / f"{name}.cf"
    p.write_text(text.replace(old, new), encoding="utf-8")
    record_verified(text.replace(old, new), str(p))
    return p


def run_main(capsys, *args):
    """``cf-run ARGS`` in this process: (exit status, stdout, stderr)."""
    rc = cf_run.main([str(a) for a in args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def violation_lines(err: str) -> list[str]:
    return [l for l in err.splitlines() if l.startswith("unsound: ")]


def assert_refuted(rc, out, err, json_path: Path, layers_kind: str | None = "relu") -> dict:
    """Exit 3, the per-layer report, the JSON marked unsound and nothing certified."""
    assert rc == run_args.EXIT_UNSOUND, (out, err)
    assert "Traceback" not in err
    lines = violation_lines(err)
    heads = [l for l in lines if not l.startswith("unsound:   also ")]
    assert heads, err
    for l in heads:
        assert "bound(s) violated; worst: neuron " in l and (" sample " in l or " region " in l) and " bound " in l
    if layers_kind is not None:  # the first wrong layer is the mutated rule's (later ones may inherit it)
        first = min(heads, key=lambda l: int(l.split("layer ", 1)[1].split()[0]))
        assert f"({layers_kind})" in first, first
    # at most CHECK_SHOWN lines per layer
    per_layer = {}
    for l in lines:
        k = l.split("layer ", 1)[1].split()[0]
        per_layer[k] = per_layer.get(k, 0) + 1
    assert all(n <= run_setup.CHECK_SHOWN for n in per_layer.values())
    assert err.strip().splitlines()[-1].startswith("error: unsound bounds: the soundness check found ")
    assert "check:     UNSOUND: " in out
    d = json.loads(json_path.read_text())
    assert d["unsound"] is True
    assert d["check"]["violations"] == sum(d["check"]["violations_per_layer"].values()) > 0
    assert len(heads) == len(d["check"]["violations_per_layer"])
    assert d["violations"] and all({"layer", "neuron", "side", "bound", "value", "excess", "found_by"} <= set(v)
                                   for v in d["violations"])
    for v in d["violations"]:
        assert v["excess"] > 0 and ((v["value"] < v["bound"]) if v["side"] == "lower" else (v["value"] > v["bound"]))
    assert d["times"]["check_s"] == d["check"]["seconds"] > 0
    if "certified" in d:
        assert not any(d["certified"])
    return d


# ----------------------------------------------------------------------------------------------
# always run: the shipped default net (ERAN MNIST 3x50) and its 10 images, and small built nets

@pytest.mark.parametrize("name", ["deeppoly_relu_upper_0", "ibp_relu_lower_plus_1", "deepz_relu_z_upper_0"])
def test_relu_mutants_are_refuted(tmp_path, capsys, name):
    out_json = tmp_path / "out.json"
    cf = mutant(tmp_path, name)
    rc, out, err = run_main(capsys, "--certifier", cf, "--net", NET, "--data", DATA, "--eps", "0.005", "--json", out_json)
    d = assert_refuted(rc, out, err, out_json)
    assert "certified: 0/" in out
    # the wrong member is a ReLU layer's: lower bounds for +1, upper ones for the 0 upper bounds
    first = min(v["layer"] for v in d["violations"])
    assert {v["kind"] for v in d["violations"] if v["layer"] == first} == {"relu"}
    sides = {v["side"] for v in d["violations"] if v["layer"] == first}
    assert sides == ({"lower"} if "lower" in name else {"upper"})
    c = d["check"]
    assert c["tol"] == 1e-6 and c["points"] == 10 * c["points_per_sample"] and c["pgd_targets"] > 0
    assert c["samples"] == run_setup.CHECK_PARAMS["n_samples"] + 1


def test_quiet_still_reports_the_violations(tmp_path, capsys):
    cf = mutant(tmp_path, "deepz_relu_z_upper_0")
    rc, out, err = run_main(capsys, "--certifier", cf, "--quiet", "--net", NET, "--data", DATA, "--eps", "0.005", "--n", "2")
    assert rc == run_args.EXIT_UNSOUND and out == ""
    assert violation_lines(err) and err.strip().splitlines()[-1].startswith("error: unsound bounds:")


def test_no_check_keeps_the_old_behaviour(tmp_path, capsys):
    cf = mutant(tmp_path, "deeppoly_relu_upper_0")
    out_json = tmp_path / "out.json"
    rc, out, err = run_main(capsys, "--certifier", cf, "--no-check", "--net", NET, "--data", DATA, "--eps", "0.005",
                            "--json", out_json)
    assert rc == 0 and not violation_lines(err) and "check:" not in out
    d = json.loads(out_json.read_text())
    assert "unsound" not in d and "check" not in d and "check_s" not in d["times"]
    assert any(d["certified"])  # what the unchecked, unsound analysis claims


def test_copy_of_a_shipped_certifier_is_checked_and_passes(tmp_path, capsys):
    copy = tmp_path / "my_deeppoly.cf"
    copy.write_bytes((CERTIFIER_DIR / "deeppoly.cf").read_bytes())
    results = {}
    for cf in (copy, CERTIFIER_DIR / "deeppoly.cf", "deeppoly"):  # a path (even the shipped file's) is checked
        out_json = tmp_path / "out.json"
        rc, out, err = run_main(capsys, "--certifier", cf, "--net", NET, "--data", DATA, "--eps", "0.005", "--json", out_json)
        assert rc == 0 and not violation_lines(err), err
        results[str(cf)] = d = json.loads(out_json.read_text())
        if cf == "deeppoly":
            assert "unsound" not in d and "check:" not in out
        else:
            assert d["unsound"] is False and d["violations"] == [] and d["check"]["violations"] == 0
            assert "check:     no violation (" in out and "s)" in out
            assert d["check"]["seconds"] > 0 and d["check"]["points"] > 0
    a, b = results[str(copy)], results["deeppoly"]
    assert a["certified"] == b["certified"] and any(a["certified"]) and a["margin_lb"] == b["margin_lb"]


def test_shipped_certifier_by_name_checks_only_with_check(tmp_path, capsys):
    out_json = tmp_path / "out.json"
    rc, out, err = run_main(capsys, "--certifier", "ibp", "--net", NET, "--data", DATA, "--eps", "0.005", "--json", out_json)
    assert rc == 0 and "unsound" not in json.loads(out_json.read_text())
    rc, out, err = run_main(capsys, "--certifier", "ibp", "--check", "--check-tol", "1e-9", "--net", NET, "--data", DATA,
                            "--eps", "0.005", "--json", out_json)
    d = json.loads(out_json.read_text())
    assert rc == 0 and d["unsound"] is False and d["check"]["tol"] == 1e-9 and "tol 1e-09" in out
    rc, out, err = run_main(capsys, "--check")  # no arguments: deeppoly on the default net, checked
    assert rc == 0 and "check:     no violation" in out


def test_tolerance_is_passed_through(tmp_path, capsys):
    """A 1% too tight upper bound is a violation at the default tolerance, not at --check-tol 0.05."""
    cf = mutant(tmp_path, "ibp_relu_upper_99pct")
    out_json = tmp_path / "out.json"
    rc, out, err = run_main(capsys, "--certifier", cf, "--net", NET, "--data", DATA, "--eps", "0.005", "--json", out_json)
    d = assert_refuted(rc, out, err, out_json)
    assert {v["side"] for v in d["violations"]} == {"upper"}
    worst = max(v["excess"] / max(1.0, abs(v["bound"])) for v in d["violations"])
    assert worst < 0.05
    rc, out, err = run_main(capsys, "--certifier", cf, "--check-tol", "0.05", "--net", NET, "--data", DATA, "--eps", "0.005",
                            "--json", out_json)
    d = json.loads(out_json.read_text())
    assert rc == 0 and d["unsound"] is False and d["check"]["tol"] == 0.05


def test_interpreter_engine_is_checked_too(tmp_path, capsys):
    cf = mutant(tmp_path, "deeppoly_relu_upper_0")
    out_json = tmp_path / "out.json"
    rc, out, err = run_main(capsys, "--engine", "interpreter", "--certifier", cf, "--net", NET, "--data", DATA,
                            "--eps", "0.005", "--n", "3", "--json", out_json)
    d = assert_refuted(rc, out, err, out_json)
    assert {v["sample"] for v in d["violations"]} <= {0, 1, 2}
    copy = tmp_path / "copy.cf"
    copy.write_text(certifier_source("deeppoly")[0])
    rc, out, err = run_main(capsys, "--engine", "interpreter", "--certifier", copy, "--net", NET, "--data", DATA,
                            "--eps", "0.005", "--n", "3", "--json", out_json)
    assert rc == 0 and json.loads(out_json.read_text())["unsound"] is False


@pytest.mark.parametrize("act,name", [("sigmoid", "deeppoly_sigmoid_upper_low"), ("tanh", "deeppoly_tanh_upper_low")])
def test_s_shaped_mutants_are_refuted_on_a_built_net(tmp_path, capsys, act, name):
    rng = np.random.default_rng(0)
    w = [rng.standard_normal((20, 784)).astype(np.float32) * 0.1, rng.standard_normal((10, 20)).astype(np.float32)]
    net = tmp_path / f"{act}.onnx"
    onnx.save(mlp_model(w, activations=act, input_shape=(1, 28, 28)), str(net))
    out_json = tmp_path / "out.json"
    rc, out, err = run_main(capsys, "--certifier", mutant(tmp_path, name), "--net", net, "--data", DATA, "--eps", "0.01",
                            "--n", "4", "--json", out_json)
    assert_refuted(rc, out, err, out_json, layers_kind=act)
    rc, out, err = run_main(capsys, "--certifier", "deeppoly", "--check", "--net", net, "--data", DATA, "--eps", "0.01",
                            "--n", "4", "--json", out_json)
    assert rc == 0 and json.loads(out_json.read_text())["unsound"] is False


@pytest.fixture()
def relu2(tmp_path):
    """y0 = relu(x0) + relu(x1) on [-1, 1]^2 (maximum 2)."""
    w = [np.eye(2, dtype=np.float32), np.array([[1, 1]], np.float32)]
    p = tmp_path / "relu2.onnx"
    onnx.save(mlp_model(w, None, ["relu", None], input_shape=(2,)), str(p))
    return p


def vnnlib(tmp_path, threshold) -> Path:
    p = tmp_path / f"y0_ge_{threshold}.vnnlib"
    p.write_text("(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n"
                 "(assert (>= X_0 -1))\n(assert (<= X_0 1))\n(assert (>= X_1 -1))\n(assert (<= X_1 1))\n"
                 f"(assert (>= Y_0 {threshold}))\n")
    return p


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_vnnlib_unsat_from_unsound_bounds_is_not_kept(tmp_path, capsys, relu2, engine):
    """IBP with ReLU upper bounds 0 'proves' y0 < 3 and y0 < 1.5: the check refutes its bounds; the first
    verdict becomes unknown, the second sat (the counterexample search runs on every non-unsat verdict)."""
    cf = mutant(tmp_path, "ibp_relu_upper_0")
    out_json = tmp_path / "v.json"
    for threshold, sound_verdict, checked_verdict in ((3, "unsat", "unknown"), (1.5, "sat", "sat")):
        prop = vnnlib(tmp_path, threshold)
        rc, out, err = run_main(capsys, "--engine", engine, "--certifier", cf, "--no-check", "--net", relu2,
                                "--vnnlib", prop, "--json", out_json)
        # unchecked: at 3 the mutant's unsat (right by luck); at 1.5 the attack, which runs before the bounding
        # pass, finds the counterexample first (sat), where the mutant's bounds alone said unsat
        unchecked = "unsat" if threshold == 3 else "sat"
        assert rc == 0 and json.loads(out_json.read_text())["verdict"] == unchecked
        rc, out, err = run_main(capsys, "--engine", engine, "--certifier", cf, "--net", relu2, "--vnnlib", prop,
                                "--json", out_json)
        if threshold == 3:
            d = assert_refuted(rc, out, err, out_json, layers_kind=None)
            assert d["verdict"] == checked_verdict and f"verdict:   {checked_verdict}" in out
            assert all("region" in v and v["region"] == 0 for v in d["violations"])
        else:  # the attack answers first with a confirmed counterexample: the mutant's bounds are never asked
            assert rc == 0 and json.loads(out_json.read_text())["verdict"] == "sat"
        rc, out, err = run_main(capsys, "--engine", engine, "--certifier", "ibp", "--check", "--net", relu2,
                                "--vnnlib", prop, "--json", out_json)
        d = json.loads(out_json.read_text())
        assert rc == 0 and d["unsound"] is False and d["verdict"] == sound_verdict


@pytest.mark.parametrize("bad", ["abc", "-1", "inf"])
def test_bad_check_tol_is_one_line_error(capsys, bad):
    rc, out, err = run_main(capsys, "--check-tol", bad)
    assert rc == 1 and err.strip().startswith("error: --check-tol must be") and len(err.strip().splitlines()) == 1


def test_exit_status_3_end_to_end(tmp_path):
    """The real command: status 3, the report on stderr, nothing certified."""
    cf = mutant(tmp_path, "deeppoly_relu_upper_0")
    out_json = tmp_path / "out.json"
    p = subprocess.run(CF_RUN + ["--certifier", str(cf), "--json", str(out_json)], capture_output=True, text=True,
                       cwd=REPO, timeout=300)
    assert p.returncode == 3, p.stderr
    assert "Traceback" not in p.stderr and violation_lines(p.stderr)
    assert "certified: 0/9" in p.stdout
    d = json.loads(out_json.read_text())
    assert d["unsound"] is True and not any(d["certified"])


# ----------------------------------------------------------------------------------------------
# ../shared: real networks at the evaluation's epsilon

SHARED = shared_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared (networks and data) not available")
SHARED_NETS = ("mnist_relu_3_50", "mnist_ffnnSIGMOID__Point_6x200", "mnist_convSmallRELU__Point")
#: a lighter check than cf-run's default for the whole matrix (the default's cost is in the README)
LIGHT = {"n_samples": 64, "n_vertices": 16, "pgd_steps": 10, "pgd_neurons": 4, "pgd_restarts": 1}
#: the shipped certifiers (deeppoly_p as two depths)
SHIPPED = [n for n in certifier_names() if not n.startswith("deeppoly_")] + ["deeppoly_0", "deeppoly_3"]


def supports(cert: str, net_name: str) -> bool:
    if "SIGMOID" not in net_name:
        return True
    return "Sigmoid ->" in certifier_source(cert)[0]


def shared_args(net_name: str, n: int = 10) -> list:
    from cfruntime.properties import PAPER_EPSILON
    from cfruntime.properties.paper_eps import dataset_csv

    return ["--net", SHARED / "nets" / f"{net_name}.onnx", "--data", SHARED / "data" / dataset_csv(net_name),
            "--n", n, "--eps", PAPER_EPSILON[net_name]]


@needs_shared
@pytest.mark.parametrize("net_name", SHARED_NETS)
def test_shipped_certifiers_pass_the_check_on_shared_nets(tmp_path, capsys, monkeypatch, net_name):
    monkeypatch.setattr(run_setup, "CHECK_PARAMS", LIGHT)
    certs = [c for c in SHIPPED if supports(c, net_name)]
    assert len(certs) >= (6 if "SIGMOID" in net_name else 10)
    out_json = tmp_path / "out.json"
    found = {}
    for cert in certs:
        rc, out, err = run_main(capsys, "--certifier", cert, "--check", *shared_args(net_name), "--json", out_json)
        d = json.loads(out_json.read_text())
        found[cert] = (rc, d.get("unsound"), d.get("violations", [])[:3])
        assert d["n"] == 10 and d["check"]["layers"] >= 5
    assert all(v[0] == 0 and v[1] is False for v in found.values()), found


@needs_shared
@pytest.mark.parametrize("net_name,name", [
    ("mnist_relu_3_50", "deeppoly_relu_upper_0"), ("mnist_relu_3_50", "ibp_relu_lower_plus_1"),
    ("mnist_relu_3_50", "deepz_relu_z_upper_0"),
    ("mnist_ffnnSIGMOID__Point_6x200", "deeppoly_sigmoid_upper_low"), ("mnist_nln_tansig_200_50", "deeppoly_tanh_upper_low"),
])
def test_mutants_are_caught_on_shared_mlps(tmp_path, capsys, net_name, name):
    out_json = tmp_path / "out.json"
    kind = "relu" if "relu" in name else ("sigmoid" if "sigmoid" in name else "tanh")
    rc, out, err = run_main(capsys, "--certifier", mutant(tmp_path, name), *shared_args(net_name, 4), "--json", out_json)
    assert_refuted(rc, out, err, out_json, layers_kind=kind)
