"""cf-verify: unsound mutants refuted with replayed counterexamples, sound variants verified, the CLI's
exit statuses and one-line errors (shipped certifiers: test_shipped_proved.py; bad input:
test/unit/tools/test_cf_verify_cli.py)."""

from __future__ import annotations

import json

import pytest

from cfmlir.certifiers import certifier_source
from cfmlir.syntax.parser import parse
from cfmlir.syntax.unparse import unparse
from cfmlir.tools.cf_verify import main as cf_verify
from cfmlir.verify import COUNTEREXAMPLE, UNKNOWN, VERIFIED, FragmentError, verify_source

from cftest.mutants import SOUND, UNSOUND, source, verdict

def test_sound_sigmoid_rule_is_never_a_counterexample():
    text, file = certifier_source("deeppoly")
    (r,) = verify_source(text, file, ops={"Sigmoid"}, timeout=3)
    assert r.status in (VERIFIED, UNKNOWN), r.line()
    if r.status == UNKNOWN:
        assert r.detail


@pytest.mark.parametrize("mutant", UNSOUND, ids=[m[0] for m in UNSOUND])
def test_unsound_mutant_has_replayed_counterexample(mutant):
    r = verdict(mutant)
    assert r.status == COUNTEREXAMPLE, r.line()
    assert "violates" in r.detail or "traverse invariant" in r.detail


@pytest.mark.parametrize("variant", SOUND, ids=[m[0] for m in SOUND])
def test_sound_variant_verified(variant):
    r = verdict(variant)
    assert r.status == VERIFIED, r.line()


def test_counts_of_the_acceptance():
    assert len(UNSOUND) >= 12 and len(SOUND) >= 8


# -- CLI --------------------------------------------------------------------------------------------


def test_cli_verified_exit_0_and_json(tmp_path, capsys):
    out = tmp_path / "v.json"
    assert cf_verify(["ibp", "--rule", "Relu", "--rule", "Affine", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ibp.Affine: verified (K=2, M=2)" in text and "ibp.Relu: verified (K=2, M=2)" in text
    data = json.loads(out.read_text())
    assert data["exit_status"] == 0 and {r["status"] for r in data["rules"]} == {VERIFIED}


def test_cli_counterexample_exit_1(tmp_path, capsys):
    name, cert, old, new, op = UNSOUND[0]
    text, _ = source(name, cert, old, new)
    f = tmp_path / "bad.cf"
    f.write_text(text)
    assert cf_verify([str(f), "--rule", "Relu"]) == 1
    assert "deeppoly.Relu: counterexample: violates 'curr[u] >= curr'" in capsys.readouterr().out


def test_cli_unknown_exit_3(capsys):
    assert cf_verify(["deeppoly", "--rule", "Sigmoid", "--timeout", "1"]) in (0, 3)


LP_SPEC = """def Shape as (Float l, Float u){[(curr[l]<=curr),(curr[u]>=curr)]};
func priority(Neuron n) = n[layer];
func stop(Neuron n) = true;
transformer t{
    Relu -> (lp(minimize, prev, [prev >= prev[l]]), prev[u]);
}
flow(forward, priority, stop, t);
"""


def test_cli_fragment_error_exit_4(tmp_path, capsys):
    f = tmp_path / "lp.cf"
    f.write_text(LP_SPEC)
    code = cf_verify([str(f)])
    err = capsys.readouterr().err.strip()
    assert code == 4, err
    assert len(err.splitlines()) == 1 and "lp.cf:5:" in err and "'lp'" in err and "Traceback" not in err


def test_fragment_error_is_a_cf_error():
    with pytest.raises(FragmentError, match="cannot encode 'lp'"):
        verify_source(LP_SPEC, "lp.cf")


def test_cli_bad_spec_and_options(tmp_path, capsys):
    assert cf_verify([str(tmp_path / "missing.cf")]) == 5
    assert "cannot read the spec" in capsys.readouterr().err
    bad = tmp_path / "bad.cf"
    bad.write_text("def Shape as (Float l{")
    assert cf_verify([str(bad)]) == 5
    assert "bad.cf:1:" in capsys.readouterr().err
    assert cf_verify(["ibp", "--nprev", "0"]) == 2


def test_unparse_round_trips_shape_constraints():
    text, file = certifier_source("deeppoly")
    prog = parse(text, file)
    shape = next(d for d in prog.decls if type(d).__name__ == "ShapeDecl")
    assert [unparse(c) for c in shape.constraints] == ["curr[l] <= curr", "curr[u] >= curr", "curr[L] <= curr", "curr[U] >= curr"]
