"""Acceptance 1 of issue 24: an unsound certifier never answers.

Each of the 13 mutants of :mod:`cftest.gate_mutants` (one textual edit of a shipped certifier: a zonotope
centre shift, a halved ReLU upper slope, a sigmoid tangent at the wrong end, a tanh chord on the wrong
side, a wrong back-substitution sign, an unclamped IBP ReLU, a Maxpool with the smallest upper bound, a
LeakyRelu with the wrong slope, ...), on a small network built here that runs the broken rule: ``cf-run``
in dataset and VNN-LIB mode exits 3 with the one line ``error: FILE:LINE:COL: rule T.Op is unsound: <the
replayed counterexample>``, writes no JSON (a VNN-LIB result file says ``unknown``), certifies nothing;
:func:`cfmlir.certify` raises :class:`~cfmlir.proof_gate.UnsoundCertifierError` for both kinds of
property.  On a network that runs only the file's sound rules the run answers and its JSON names the rules
proved.  The case of the issue (a deepz copy with a shifted ReLU centre answered ``unsat`` on the shipped
3x50 net, image 0, eps 0.01) is run end to end in a subprocess.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import cfmlir
from cfmlir import proof_gate
from cfmlir.tools import cf_run
from cftest import REPO
from cftest.gate_mutants import MUTANTS, NETWORK_OPERATORS, network, robustness_vnnlib, two_images

CF_RUN = [sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())"]
PREP = ["--mean", "0", "--std", "1", "--layout", "NCHW", "--flatten-order", "CHW"]  # no guessed-preprocessing warnings


def strict_json(path):
    def refuse(c):
        raise AssertionError(f"non-finite {c} in {path}")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """This module's proof and compile cache, the networks of every kind, a CSV of two images, a VNN-LIB
    robustness property per network, and each mutant as a .cf file."""
    d = tmp_path_factory.mktemp("gate")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CFMLIR_CACHE_DIR", str(d / "cache"))
        mp.setattr(proof_gate, "_MEMO", {})
        data, prop = two_images(d, seed=5)  # every network has MNIST's input and 10 outputs: one property for all
        nets = {kind: network(kind, d / f"{kind}.onnx") for kind in NETWORK_OPERATORS}
        props = {kind: prop for kind in NETWORK_OPERATORS}
        cfs = {}
        for i, (name, m) in enumerate(MUTANTS.items()):
            cfs[name] = d / f"mutant_{i}.cf"
            cfs[name].write_text(m.text())
        yield {"dir": d, "csv": data, "nets": nets, "props": props, "cfs": cfs}


def run_main(capsys, *args):
    rc = cf_run.main([str(a) for a in args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def transformer_of(text: str) -> str:
    return re.search(r"^transformer (\w+)\s*\{", text, re.MULTILINE).group(1)


def assert_refused(rc, out, err, cf, m, json_path):
    """Exit 3, exactly one line: the rule, where it is, and the replayed counterexample; no verdict."""
    assert rc == 3, (out, err)
    lines = [l for l in err.splitlines() if l.strip()]
    head = f"error: {cf}:{m.rule_line()}:5: rule {transformer_of(m.text())}.{m.op} is unsound: "
    assert len(lines) == 1 and lines[0].startswith(head), err
    assert re.search(r"violates '|traverse invariant", lines[0]), lines[0]  # the replayed counterexample
    assert "Traceback" not in err and "internal error" not in err
    assert not json_path.exists()
    assert "unsat" not in out and "certified:" not in out


@pytest.mark.parametrize("name", list(MUTANTS))
def test_cf_run_refuses_the_mutant(world, capsys, tmp_path, name):
    m, cf = MUTANTS[name], world["cfs"][name]
    net = world["nets"][m.net]
    out_json = tmp_path / "out.json"
    rc, out, err = run_main(capsys, "--certifier", cf, "--net", net, "--data", world["csv"], "--eps", "0.01",
                            *PREP, "--json", out_json)
    assert_refused(rc, out, err, cf, m, out_json)
    res = tmp_path / "result.txt"
    rc, out, err = run_main(capsys, "--certifier", cf, "--net", net, "--vnnlib", world["props"][m.net],
                            "--results", res, "--json", out_json)
    assert_refused(rc, out, err, cf, m, out_json)
    assert res.read_text() == "unknown\n"


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_api_refuses_the_mutant(world, name):
    m = MUTANTS[name]
    cert = cfmlir.compile(world["cfs"][name])
    net = cfmlir.load_network(world["nets"][m.net], mean=0.0, std=1.0, layout="NCHW", flatten_order="CHW")
    for prop in (cfmlir.robustness_property(net, world["csv"], eps=0.01), cfmlir.load_vnnlib(world["props"][m.net], net)):
        with pytest.raises(proof_gate.UnsoundCertifierError) as e:
            cfmlir.certify(cert, net, prop)
        assert e.value.rule.name == f"{transformer_of(m.text())}.{m.op}" and e.value.loc.line == m.rule_line()
    with pytest.raises(proof_gate.UnsoundCertifierError):  # the reference interpreter's engine too
        cfmlir.certify(cert, net, cfmlir.robustness_property(net, world["csv"], eps=0.01, n=1), engine="interpreter")


SOUND_ONLY = [name for name, m in MUTANTS.items() if m.sound_net is not None]


@pytest.mark.parametrize("name", SOUND_ONLY)
def test_the_sound_rules_of_a_mutant_answer(world, capsys, tmp_path, name):
    m, cf = MUTANTS[name], world["cfs"][name]
    net = world["nets"][m.sound_net]
    t = transformer_of(m.text())
    rules = {f"{t}.{op}": "verified" for op in NETWORK_OPERATORS[m.sound_net]}
    out_json = tmp_path / "out.json"
    rc, out, err = run_main(capsys, "--certifier", cf, "--net", net, "--data", world["csv"], "--eps", "0.01",
                            *PREP, "--json", out_json)
    assert rc == 0 and "error" not in err, err
    d = strict_json(out_json)
    assert d["proved"] is True and d["proof"]["rules"] == rules and d["unsound"] is False
    rc, out, err = run_main(capsys, "--certifier", cf, "--net", net, "--vnnlib", world["props"][m.sound_net],
                            "--json", out_json)
    assert rc == 0, err
    d = strict_json(out_json)
    assert d["proved"] is True and d["proof"]["rules"] == rules and d["verdict"] in ("unsat", "sat", "unknown")
    api_net = cfmlir.load_network(net, mean=0.0, std=1.0, layout="NCHW", flatten_order="CHW")
    res = cfmlir.certify(cfmlir.compile(cf), api_net, cfmlir.robustness_property(api_net, world["csv"], eps=0.01))
    assert res.proof.proved is True and res.proof.json()["proof"]["rules"] == rules


def test_the_issue_case_end_to_end(tmp_path):
    """A deepz copy whose ReLU shifts the zonotope's centre answered ``unsat``, exit 0, on the shipped
    mnist_relu_3_50 with a robustness property of test image 0 at eps 0.01; the shipped deepz still does."""
    from cfruntime.default_data import default_data_path, default_network_path

    m = MUTANTS["deepz ReLU shifts the zonotope centre"]
    cf = tmp_path / "deepz_copy.cf"
    cf.write_text(m.text())
    net = cfmlir.load_network(default_network_path())
    img0 = cfmlir.robustness_property(net, default_data_path(), eps=0.01, n=1)  # in the network's input space
    prop = robustness_vnnlib(tmp_path / "img0.vnnlib", img0.lb[0], img0.ub[0], int(img0.labels[0]))
    env = {**__import__("os").environ, "CFMLIR_CACHE_DIR": str(tmp_path / "cache")}

    def run(*args):
        return subprocess.run(CF_RUN + [str(a) for a in args], capture_output=True, text=True, cwd=REPO, env=env,
                              timeout=600)

    shipped = run("--certifier", "deepz", "--net", default_network_path(), "--vnnlib", prop)
    assert shipped.returncode == 0 and "verdict:   unsat" in shipped.stdout, shipped.stderr
    res = tmp_path / "r.txt"
    p = run("--certifier", cf, "--net", default_network_path(), "--vnnlib", prop, "--results", res)
    assert p.returncode == 3 and "unsat" not in p.stdout, (p.stdout, p.stderr)
    assert p.stderr.startswith(f"error: {cf}:{m.rule_line()}:5: rule deepz.Relu is unsound: ")
    assert res.read_text() == "unknown\n"
    p = run("--certifier", cf, "--n", "1", "--eps", "0.01", "--data", default_data_path(), "--net", default_network_path())
    assert p.returncode == 3 and "certified" not in p.stdout and "rule deepz.Relu is unsound" in p.stderr
