"""Every shipped certifier is proved sound in the test suite: each of its rules ``verified`` at
K=2, M=2 (polynomial claims by z3, sigmoid/tanh/exp/log claims by the delta-complete procedure).
The run-time proof gate relies on this test: a shipped certifier's run needs no proof at run time.

The time limit per rule is generous (a loaded test machine); ``bench/verify_times.py`` measures the
times (docs/proving.md).

Sin and Cos (issue 27): their image claims (IBP) are proved with the extremum lemma of
cfmlir/verify/trig_extrema.py, the chord bands of the polyhedral and zonotope certifiers with the
chord lemma of cfmlir/verify/trig_chord.py (whole obligations in linear z3)."""

from __future__ import annotations

import re

import pytest

from cfmlir.certifiers import BASE_CERTIFIERS, DEEPPOLY_P_RANGE, certifier_source
from cfmlir.syntax.parser import parse
from cfmlir.verify import VERIFIED, verify_source

RULE_TIMEOUT_S = 120.0


def _rules(text, file) -> list[str]:
    return [r.op for d in parse(text, file).decls if type(d).__name__ == "TransformerDecl" for r in d.rules]


@pytest.mark.parametrize("name", list(BASE_CERTIFIERS) + ["deeppoly_2"])
def test_shipped_certifier_proved(name):
    text, file = certifier_source(name)
    rules = _rules(text, file)
    results = verify_source(text, file, K=2, M=2, timeout=RULE_TIMEOUT_S, ops=set(rules))
    assert sorted(r.op for r in results) == sorted(rules)
    assert [r.line() for r in results if r.status != VERIFIED] == []


def test_deeppoly_p_family_differs_only_in_its_depth():
    """The proof of deeppoly_2 covers every deeppoly_p: the sources differ in the depth line (and the
    transformer's name) only, and only the traverse's stop function reads the depth (a traverse is
    verified through its invariant, whatever stops it)."""

    def norm(text):
        return re.sub(r"deeppoly_\d+", "deeppoly_P", re.sub(r"func depth\(\) = \d+;", "", text))

    base = certifier_source("deeppoly_2")[0]
    for p in DEEPPOLY_P_RANGE:
        assert norm(certifier_source(f"deeppoly_{p}")[0]) == norm(base)
    code = [ln for ln in base.splitlines() if not ln.lstrip().startswith("//")]
    assert [ln.split("=")[0].strip() for ln in code if "depth()" in ln] == ["func depth()", "func stop_p(Int cl, Neuron n, Float c)"]
    assert all("traverse(" in ln for ln in code if "stop_p" in ln and not ln.startswith("func stop_p"))
