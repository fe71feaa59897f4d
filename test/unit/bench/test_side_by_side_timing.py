"""``bench/peer_side.timed_side_by_side``: the benchmarks time the tools interleaved, so that a slow spell of
the machine falls on every tool alike (issue 29.1: the rows over 1.0x moved from run to run when one tool's
repetitions were all timed before the other's).  A fake clock: each run costs its tool's price, and the
machine is slow (x10) during a spell of consecutive runs."""

from __future__ import annotations

import sys

import pytest
import torch
from cftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import peer_side  # noqa: E402 - the bench script's module


class _Machine:
    def __init__(self, slow_runs: set[int]):
        self.now, self.runs, self.slow_runs, self.log = 0.0, 0, slow_runs, []

    def clock(self) -> float:
        return self.now

    def tool(self, name: str, price: float):
        def run(batch):
            factor = 10.0 if self.runs in self.slow_runs else 1.0
            self.runs += 1
            self.now += price * factor
            self.log.append(name)
            return (name, batch)
        return run


@pytest.fixture
def machine(monkeypatch):
    def make(slow_runs):
        m = _Machine(slow_runs)
        monkeypatch.setattr(peer_side.time, "perf_counter", m.clock)
        return m
    return make


def test_runs_are_interleaved_and_the_minimum_is_kept(machine):
    m = machine(slow_runs=set())
    out = peer_side.timed_side_by_side({"a": m.tool("a", 1.0), "b": m.tool("b", 2.0)}, [[0], [1]],
                                       torch.device("cpu"), repeat=3, warm={"a": 1})
    # warm-ups: a's first batch and one more pass, b's first batch; then a b | b a | a b (the order rotates)
    assert m.log == ["a", "a", "a", "b"] + ["a", "a", "b", "b", "b", "b", "a", "a", "a", "a", "b", "b"]
    assert out["a"][0] == 2.0 and out["b"][0] == 4.0
    assert out["a"][1] == [("a", [0]), ("a", [1])]


def test_a_slow_spell_cannot_fall_on_one_tool_only(machine):
    """A spell as long as one tool's whole set of repetitions: timed one tool after the other it made the
    second tool's every repetition slow (ratio 10x); interleaved, each tool keeps a fast one."""
    m = machine(slow_runs=set(range(2, 5)))  # runs 2..4 (after the two warm-ups): three repetitions' worth of one tool
    out = peer_side.timed_side_by_side({"a": m.tool("a", 1.0), "b": m.tool("b", 1.0)}, [[0]],
                                       torch.device("cpu"), repeat=3)
    assert out["a"][0] == out["b"][0] == 1.0


def test_short_runs_repeat_until_min_seconds(machine):
    m = machine(slow_runs=set())
    out = peer_side.timed_side_by_side({"a": m.tool("a", 0.01), "b": m.tool("b", 0.02)}, [[0]],
                                       torch.device("cpu"), repeat=3, min_seconds=0.25, max_repeat=50)
    assert m.log.count("a") - 1 == 25 and out["a"][0] == pytest.approx(0.01)  # 25 x 0.01 s reach 0.25 s
    m2 = machine(slow_runs=set())
    peer_side.timed_side_by_side({"a": m2.tool("a", 0.001)}, [[0]], torch.device("cpu"), repeat=3,
                                 min_seconds=10.0, max_repeat=7)
    assert m2.log.count("a") - 1 == 7  # capped
