"""cf-run's VNN-LIB summary line of a branch and bound (``tools/vnnlib_mode.py``)."""

from __future__ import annotations

from cfmlir.bab.options import BabOutcome
from cfmlir.tools.vnnlib_mode import _bab_summary

STATS = {"domains": 120, "rounds": 4, "seconds": 2.0, "branching": ["relu"]}


def test_the_summary_says_when_and_why_split_multipliers_were_not_used():
    """A float32 run on a GPU (what a user reaches for) runs without beta: the line says so, and what keeps
    them, instead of leaving a slower search unexplained (the JSON's ``bab.beta`` says it too)."""
    off = "off (a widened float32 run: placeholder bounds would swamp its rounding charges; float64 keeps them)"
    text = _bab_summary(BabOutcome("unknown", stopped="deadline", stats={**STATS, "beta": off}))
    assert text == f"120 subdomains in 4 rounds, 60/s, relu splits, split multipliers {off}, stopped: deadline"
    # with them, or not asked for (--bab-beta off: no "beta" entry), nothing is added
    assert "multipliers" not in _bab_summary(BabOutcome("unsat", stats={**STATS, "beta": "on"}))
    assert _bab_summary(BabOutcome("unsat", stats=dict(STATS))) == "120 subdomains in 4 rounds, 60/s, relu splits"


def test_many_regions_splits_are_counted_not_listed():
    kinds = ["none"] * 4998 + ["input", "none", "relu"]
    text = _bab_summary(BabOutcome("unsat", stats={**STATS, "branching": kinds}))
    assert text == "120 subdomains in 4 rounds, 60/s, splits per region: none 4999, input 1, relu 1"
    assert _bab_summary(BabOutcome("unsat", stats={**STATS, "branching": ["none", "input"]})).endswith("none/input splits")
