"""The proof gate (:mod:`cfmlir.proof_gate`): which rules are proved, what a refutation and an ``unknown``
give, the cache (per rule, keyed by spec, K, M and prover; a hit reads no prover), shipped certifiers, and
the gate in :func:`cfmlir.certify`.  The mutants of every kind, end to end: ``test/unit/tools/
test_proof_gate_mutants.py``."""

from __future__ import annotations

import json
import time

import pytest

import cfmlir
from cfmlir import proof_gate
from cfmlir.certifiers import certifier_source
from cfmlir.diagnostics import CfError
from cftest.gate_mutants import two_images
from cftest.nets import mlp, residual_mlp
from cftest.specs import interval_spec

DEEPZ_SHIFT = ("func relu_z(Float l, Float u, SymExp z) = l >= 0.0 ? z : (u <= 0.0 ? 0.0 : x(l, u, z));",
               "func relu_z(Float l, Float u, SymExp z) = l >= 0.0 ? z : (u <= 0.0 ? 0.0 : x(l, u, z) + 0.01);")

#: the flow uses ``good``: its Relu is outside the prover's fragment (``lp``); ``bad`` is unsound but unused
TWO_TRANSFORMERS = interval_spec("good", "(lp(minimize, prev, [prev >= prev[l]]), prev[u])",
                                 extra="transformer bad{\n    Affine -> (0.0, 0.0);\n    Relu -> (0.0, 0.0);\n}\n")


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """A fresh proof (and compile) cache and no proofs in memory: every test proves for itself."""
    monkeypatch.setenv("CFMLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(proof_gate, "_MEMO", {})
    return tmp_path / "cache"


def deepz_shift() -> str:
    text = certifier_source("deepz")[0]
    assert text.count(DEEPZ_SHIFT[0]) == 1
    return text.replace(*DEEPZ_SHIFT)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_operators_of_a_network_are_its_layer_kinds_and_affine():
    assert proof_gate.operators_of(mlp([3, 4, 2])) == {"Affine", "Relu"}
    assert proof_gate.operators_of(mlp([3, 4, 2], activation="sigmoid")) == {"Affine", "Sigmoid"}
    assert proof_gate.operators_of(residual_mlp()) == {"Affine", "Relu", "Neuron_add"}
    assert proof_gate.operators_of(mlp([3, 2])) == {"Affine"}  # no hidden layer: the margin layer's rule


def test_a_counterexample_is_one_located_line():
    text = deepz_shift()
    proof = proof_gate.prove(text, "my/deepz.cf", {"Affine", "Relu"})
    assert proof.proved is False and proof.refuted is not None
    assert {r.name: r.status for r in proof.rules} == {"deepz.Affine": "verified", "deepz.Relu": "counterexample"}
    with pytest.raises(proof_gate.UnsoundCertifierError) as e:
        proof_gate.enforce(proof)
    line = str(e.value)
    assert line.startswith(f"error: my/deepz.cf:{line_of(text, '    Relu ->')}:5: rule deepz.Relu is unsound: violates ")
    assert "\n" not in line and "curr In curr[Z]" in line
    assert e.value.exit_status == 3 and e.value.result_verdict == "unknown"
    assert isinstance(e.value, CfError)


def test_only_the_operators_asked_for_are_proved():
    proof = proof_gate.prove(deepz_shift(), "d.cf", {"Affine", "Maxpool"})  # the unsound Relu is not run
    assert proof.proved is True and proof.refuted is None
    assert {r.name for r in proof.rules} == {"deepz.Affine", "deepz.Maxpool"}
    assert proof.json()["proof"]["rules"] == {"deepz.Affine": "verified", "deepz.Maxpool": "verified"}


def test_only_the_flows_transformers_and_a_rule_outside_the_fragment_is_unknown():
    proof = proof_gate.prove(TWO_TRANSFORMERS, "two.cf", {"Affine", "Relu"})
    assert {r.name: r.status for r in proof.rules} == {"good.Affine": "verified", "good.Relu": "unknown"}
    assert "outside the prover's fragment" in proof.rules[1].detail and "'lp'" in proof.rules[1].detail
    assert proof.proved is False and proof.refuted is None
    warning = proof.warning()
    assert warning.startswith("warning: two.cf: rule(s) good.Relu (outside the prover's fragment") and "\n" not in warning
    with pytest.raises(proof_gate.UnprovedCertifierError, match=r"^error: two.cf: rule\(s\) good.Relu .* a proof is required"):
        proof_gate.enforce(proof, require=True)
    assert proof_gate.enforce(proof) is proof


def test_the_cache_answers_without_the_prover(monkeypatch, own_cache):
    import cfmlir.verify

    text = deepz_shift()
    first = proof_gate.prove(text, "a.cf", {"Affine", "Relu"})
    assert not first.cached
    files = list((own_cache / "proofs").iterdir())
    assert len(files) == 1 and files[0].name.startswith(proof_gate.spec_hash(text)[:32])
    assert f"-K2-M2-{proof_gate.prover_version()}" in files[0].name
    json.loads(files[0].read_text(), parse_constant=lambda c: pytest.fail(f"non-finite {c} in the cache"))

    def no_prover(*a, **kw):
        raise AssertionError("the prover ran on a cache hit")

    monkeypatch.setattr(cfmlir.verify, "verify_source", no_prover)
    monkeypatch.setattr(proof_gate, "_MEMO", {})  # a new process
    t0 = time.perf_counter()
    again = proof_gate.prove(text, "b.cf", {"Affine", "Relu"})
    assert time.perf_counter() - t0 < 0.5
    assert again.cached and [r.to_json() for r in again.rules] == [r.to_json() for r in first.rules]
    with pytest.raises(proof_gate.UnsoundCertifierError, match=r"^error: b.cf:"):  # the file of this run
        proof_gate.enforce(again)


def test_the_cache_is_per_rule(monkeypatch):
    import cfmlir.verify

    asked = []
    real = cfmlir.verify.verify_source

    def spy(text, file, **kw):
        asked.append(set(kw["ops"]))
        return real(text, file, **kw)

    monkeypatch.setattr(cfmlir.verify, "verify_source", spy)
    text = certifier_source("ibp")[0]
    proof_gate.prove(text, "ibp.cf", {"Affine"})
    proof_gate.prove(text, "ibp.cf", {"Affine", "Relu"})
    monkeypatch.setattr(proof_gate, "_MEMO", {})
    assert proof_gate.prove(text, "ibp.cf", {"Relu", "Affine"}).cached
    assert asked == [{"Affine"}, {"Relu"}]


def test_an_unknown_is_reused_only_for_a_time_limit_no_longer():
    text = certifier_source("ibp")[0]
    quick = proof_gate.prove(text, "ibp.cf", {"Affine", "Relu"}, timeout=1e-6)
    assert quick.proved is False and all(r.status == "unknown" and "timeout" in r.detail for r in quick.rules)
    assert proof_gate.prove(text, "ibp.cf", {"Affine", "Relu"}, timeout=1e-7).proved is False
    longer = proof_gate.prove(text, "ibp.cf", {"Affine", "Relu"}, timeout=30.0)
    assert longer.proved is True and not longer.cached


def test_the_proofs_live_in_the_compile_cache(monkeypatch, tmp_path):
    from cfmlir.compiler import cache_dir

    assert proof_gate.compile_cache_dir() == cache_dir()
    monkeypatch.delenv("CFMLIR_CACHE_DIR")
    assert proof_gate.compile_cache_dir() == cache_dir()


def test_a_cache_hit_imports_neither_the_prover_nor_the_compiler(own_cache):
    """In a new process: one small file read (no z3, no parser, no xDSL)."""
    import subprocess
    import sys

    text = certifier_source("ibp")[0]
    proof_gate.prove(text, "ibp.cf", {"Affine", "Relu"})
    code = ("import sys, time; from cfmlir import proof_gate; from cfmlir.certifiers import certifier_source; "
            "t = time.perf_counter(); p = proof_gate.prove(certifier_source('ibp')[0], 'ibp.cf', {'Affine', 'Relu'}); "
            "s = time.perf_counter() - t; "
            "print(p.cached, p.proved, [m for m in ('z3', 'xdsl', 'cfmlir.syntax.parser', 'torch') if m in sys.modules], s)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(" ", 3)
    assert out[:3] == ["True", "True", "[]"], out


def test_another_K_M_or_text_is_another_cache_file():
    text = certifier_source("ibp")[0]
    names = {proof_gate.cache_file(text).name, proof_gate.cache_file(text, K=3).name,
             proof_gate.cache_file(text, M=1).name, proof_gate.cache_file(text + "\n").name}
    assert len(names) == 4


def test_shipped_by_name_only():
    shipped = cfmlir.compile("ibp")
    assert shipped.shipped and proof_gate.is_shipped(shipped)
    assert proof_gate.proof_for(shipped, mlp([3, 4, 2])).json() == {"proved": "shipped"}
    path = cfmlir.compile(str(certifier_source("ibp")[1]))  # the shipped file by its path: a user's certifier
    assert not path.shipped and not proof_gate.is_shipped(path)
    text = cfmlir.compile(certifier_source("ibp")[0])  # source text
    assert not proof_gate.is_shipped(text)
    forged = cfmlir.api.Certifier("ibp", certifier_source("ibp")[0] + "\n// edited\n", "ibp.cf", True, None, shipped=True)
    assert not proof_gate.is_shipped(forged)  # a shipped name with other text is proved
    proof = proof_gate.proof_for(path, mlp([3, 4, 2]))
    assert proof.json()["proved"] is True and proof.json()["proof"]["rules"] == {"ibp.Affine": "verified", "ibp.Relu": "verified"}


# ---------------------------------------------------------------------------------------------
# the gate in cfmlir.certify
# ---------------------------------------------------------------------------------------------
@pytest.fixture()
def small(tmp_path):
    """A 784-input relu MLP saved as ONNX and a two-row CSV: (cfmlir.Network, property)."""
    import numpy as np
    import onnx

    from cfruntime.network.builders import mlp_model

    rng = np.random.default_rng(0)
    w = [rng.standard_normal((6, 784)).astype(np.float32) * 0.05, rng.standard_normal((10, 6)).astype(np.float32)]
    onnx.save(mlp_model(w, activations="relu", input_shape=(1, 28, 28)), str(tmp_path / "n.onnx"))
    data, _prop = two_images(tmp_path)
    net = cfmlir.load_network(tmp_path / "n.onnx", mean=0.0, std=1.0, layout="NCHW", flatten_order="CHW")
    return net, cfmlir.robustness_property(net, data, eps=0.01)


def test_certify_refuses_an_unsound_certifier(small):
    net, prop = small
    cert = cfmlir.compile(deepz_shift())
    with pytest.raises(proof_gate.UnsoundCertifierError, match=r"^error: inline.cf:\d+:5: rule deepz.Relu is unsound"):
        cfmlir.certify(cert, net, prop)


def test_certify_reports_the_proof(small):
    net, prop = small
    res = cfmlir.certify(cfmlir.compile(certifier_source("ibp")[0]), net, prop)
    assert res.proof.proved is True and set(res.proof.json()["proof"]["rules"]) == {"ibp.Affine", "ibp.Relu"}
    assert cfmlir.certify(cfmlir.compile("ibp"), net, prop).proof.proved == "shipped"


def test_certify_warns_about_unknown_rules_and_can_require_a_proof(small):
    net, prop = small
    cert = cfmlir.compile(certifier_source("ibp")[0])
    with pytest.warns(proof_gate.ProofWarning, match=r"rule\(s\) ibp.Affine .* not proved sound"):
        res = cfmlir.certify(cert, net, prop, proof_timeout=1e-6)
    assert res.proof.proved is False and res.proof.json()["proof"]["rules"]["ibp.Relu"] == "unknown"
    with pytest.raises(proof_gate.UnprovedCertifierError):
        cfmlir.certify(cert, net, prop, proof_timeout=1e-6, require_proof=True)


def test_certify_with_an_engine_object_needs_the_certifier_or_its_proof(small):
    net, prop = small
    cert = cfmlir.compile(certifier_source("ibp")[0])
    eng = cfmlir.engine_for(cert)
    with pytest.raises(ValueError, match="proves the certifier's rules"):
        cfmlir.certify(None, net, prop, engine=eng)
    proof = proof_gate.proof_for(cert, net)
    assert cfmlir.certify(None, net, prop, engine=eng, proof=proof).proof is proof
    other = proof_gate.proof_for(cfmlir.compile(certifier_source("deeppoly")[0]), net)
    with pytest.raises(ValueError, match="another certifier"):
        cfmlir.certify(cert, net, prop, proof=other)
