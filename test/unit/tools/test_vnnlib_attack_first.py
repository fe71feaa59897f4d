"""VNN-LIB mode attacks before it bounds: a property the attack violates is ``sat`` without any bounding pass
(on wide nets one pass costs minutes where the attack costs seconds: cgan_2023), and a property the
attack cannot violate still gets its pass."""

from __future__ import annotations

import json

import pytest

import cfmlir.api
from cftest.vnnlib_cases import properties, vector_net

from cfmlir.tools.cf_run import main as cf_run


def _run(tmp_path, capsys, net, prop):
    out = tmp_path / "r.json"
    code = cf_run(["--net", str(net), "--vnnlib", str(prop), "--json", str(out), "--quiet", "--bab", "off", "--split", "off"])
    assert code == 0, capsys.readouterr().err
    return json.loads(out.read_text())


def test_violated_property_is_sat_without_a_bounding_pass(tmp_path, capsys, monkeypatch):
    net = vector_net(tmp_path / "v.onnx")
    holds, violated = properties(tmp_path, net, 0.01)
    calls = []
    real = cfmlir.api.certify
    monkeypatch.setattr(cfmlir.api, "certify", lambda *a, **k: calls.append(1) or real(*a, **k))
    d = _run(tmp_path, capsys, net, violated)
    assert d["verdict"] == "sat" and d["regions"] == [] and calls == []
    x = d["counterexample"]["x"]
    assert len(x) == 5
    d = _run(tmp_path, capsys, net, holds)
    assert d["verdict"] == "unsat" and len(d["regions"]) == 1 and calls == [1]


@pytest.mark.parametrize("stop", ["memory", "deadline"])
def test_a_pass_that_does_not_fit_in_memory_ends_unknown_or_sat_by_more_attacks(tmp_path, capsys, monkeypatch, stop):
    """One bounding pass out of memory (traffic_signs_recognition_2023's 64x64 net: 24.7 GiB at its first
    convolution), or whose layer in blocks would end after the time limit (VNN-COMP 2024 TinyYOLO), proves
    nothing: the instance is ``unknown`` -- not an error -- and the attack goes on with new seeds and more
    restarts, so a violated property the first attack missed is still ``sat``."""
    import cfruntime.soundness
    from cfruntime.flow.engine import EngineOutOfMemory, EnginePastDeadline

    def no_memory(*a, **k):
        if stop == "deadline":
            raise EnginePastDeadline(2, "affine", 100, 400, 240.0, 80.0)
        raise EngineOutOfMemory(2, "affine", 1, 24 << 30, "cpu")

    monkeypatch.setattr(cfmlir.api, "certify", no_memory)
    real = cfruntime.soundness.vnnlib_counterexample
    seeds = []

    def first_misses(net, prop, **k):
        seeds.append(k.get("seed", 0))
        return None if len(seeds) == 1 else real(net, prop, **k)

    monkeypatch.setattr(cfruntime.soundness, "vnnlib_counterexample", first_misses)
    net = vector_net(tmp_path / "v.onnx")
    holds, violated = properties(tmp_path, net, 0.01)
    d = _run(tmp_path, capsys, net, violated)
    assert d["verdict"] == "sat" and ("24.00 GiB" if stop == "memory" else "240 s more") in d["out_of_memory"]
    assert seeds[:2] == [0, 1]
    seeds.clear()
    d = _run(tmp_path, capsys, net, holds)  # no deadline: one more attack, then unknown
    assert d["verdict"] == "unknown" and d["regions"] == [] and seeds == [0, 1]


def test_attacks_go_on_until_the_deadline(tmp_path):
    """Under a time limit the attacks repeat (new seeds, the last size of restarts) and stop before the
    deadline would pass."""
    import time

    from cfruntime.network import load_onnx
    from cfruntime.properties import parse_vnnlib

    from cfmlir.tools.vnnlib_mode import attack_until

    path = vector_net(tmp_path / "v.onnx")
    holds, _ = properties(tmp_path, path, 0.01)
    net, prop = load_onnx(path), parse_vnnlib(str(holds))
    t0 = time.monotonic()
    assert attack_until(net, prop, t0 + 3.0) is None
    assert 1.0 < time.monotonic() - t0 < 3.0


def test_a_layer_too_big_for_memory_runs_in_blocks_until_the_deadline(tmp_path, monkeypatch):
    """Without a time limit the pass runs a layer too big for memory a block of neurons at a time
    (``CompiledEngine.blocks``); under one (an instance's deadline, as the ``--timeout`` worker sets it)
    the engine gets the deadline: blocks only while the layer's predicted end is before it, else the pass
    ends and the attack has the time that is left (``test_layer_in_blocks``)."""
    import time

    from cfmlir.tools import vnnlib_mode
    from cfmlir.tools.run_args import build_parser
    from cfmlir.tools.run_setup import load_program

    net = vector_net(tmp_path / "v.onnx")
    holds, _ = properties(tmp_path, net, 0.01)
    seen = []
    real = cfmlir.api.certify
    monkeypatch.setattr(cfmlir.api, "certify", lambda *a, engine, **k: seen.append(engine.blocks) or real(*a, engine=engine, **k))
    args = build_parser().parse_args(["--net", str(net), "--vnnlib", str(holds), "--bab", "off", "--split", "off"])
    loaded = load_program(args, "deeppoly")
    assert vnnlib_mode.vnnlib_instance(args, loaded, "deeppoly")[0]["verdict"] == "unsat"
    args.split_deadline = time.monotonic() + 60.0
    assert vnnlib_mode.vnnlib_instance(args, loaded, "deeppoly")[0]["verdict"] == "unsat"
    assert seen == [True, args.split_deadline]


def test_a_slow_first_pass_hands_its_bounds_to_branch_and_bound(tmp_path, monkeypatch):
    """A first pass that leaves the property open and took longer than half the time left (TinyYOLO: 150-170 s
    under 300 s): branch and bound's root starts from the pass's layer bounds (one run of its rows, not a
    second pass) and the search decides.  Without them (more regions than ``ROOT_LAYERS_MAX_REGIONS``), the
    search stops before its root (``BabOptions.pass_seconds``): the instance ends ``unknown`` at once instead
    of running into the limit; with time for a root pass, the search runs and decides."""
    import dataclasses
    import time

    import numpy as np

    from cfmlir.tools import vnnlib_mode
    from cfmlir.tools.run_args import build_parser
    from cfmlir.tools.run_setup import load_program

    net = vector_net(tmp_path / "v.onnx")
    holds, _ = properties(tmp_path, net, 0.01)
    real = cfmlir.api.certify
    pause = [0.0]

    def open_after(*a, **k):  # the pass's bounds made too weak to verify, after ``pause`` seconds
        res = real(*a, **k)
        time.sleep(pause[0])
        return dataclasses.replace(res, verdict="unknown", row_lb=[np.asarray(lo) - 1e3 for lo in res.row_lb])

    monkeypatch.setattr(cfmlir.api, "certify", open_after)
    args = build_parser().parse_args(["--net", str(net), "--vnnlib", str(holds), "--bab", "on", "--split", "off"])
    loaded = load_program(args, "deeppoly")
    args.split_deadline = time.monotonic() + 120.0
    d = vnnlib_mode.vnnlib_instance(args, loaded, "deeppoly")[0]
    assert d["verdict"] == "unsat" and d["bab"]["domains"] >= 1
    assert d["bab"]["root"] == "first pass"  # deeppoly optimises nothing at its root: the pass's bounds always
    pause[0] = 3.0
    args.split_deadline = time.monotonic() + 5.0
    d = vnnlib_mode.vnnlib_instance(args, loaded, "deeppoly")[0]
    assert d["verdict"] == "unsat" and d["bab"]["root"] == "first pass" and d["bab"]["domains"] >= 1
    monkeypatch.setattr(vnnlib_mode, "ROOT_LAYERS_MAX_REGIONS", 0)
    args.split_deadline = time.monotonic() + 5.0
    d = vnnlib_mode.vnnlib_instance(args, loaded, "deeppoly")[0]
    assert d["verdict"] == "unknown" and d["bab"]["stopped"].startswith("deadline (one pass took 3 s")
    assert d["bab"]["domains"] == 0


def test_branch_and_bound_may_search_with_a_certifier_of_its_own(tmp_path, monkeypatch):
    """``--certifier auto`` on residual nets (``auto_certifier.RESIDUAL_SEARCH``): the first pass runs deeppoly, the
    search alpha_deeppoly (``args.bab_certifier``) from the pass's layer bounds, its root's rows optimised
    (``bab_root_optimize = "rows"``: not a pass of its own); the JSON names the search's certifier."""
    import dataclasses
    import time

    import numpy as np

    from cfmlir.bab.bounding import CertifierBounding
    from cfmlir.tools import vnnlib_mode
    from cfmlir.tools.run_args import build_parser
    from cfmlir.tools.run_setup import load_program

    net = vector_net(tmp_path / "v.onnx")
    holds, _ = properties(tmp_path, net, 0.01)
    real = cfmlir.api.certify

    def open_pass(*a, **k):  # the pass's bounds made too weak to verify
        res = real(*a, **k)
        return dataclasses.replace(res, verdict="unknown", row_lb=[np.asarray(lo) - 1e3 for lo in res.row_lb])

    monkeypatch.setattr(cfmlir.api, "certify", open_pass)
    searched = []
    real_optimized = CertifierBounding.bound_optimized
    monkeypatch.setattr(CertifierBounding, "bound_optimized", lambda self, *a, **k: searched.append(self.cert.name) or
                        real_optimized(self, *a, **k))
    args = build_parser().parse_args(["--net", str(net), "--vnnlib", str(holds), "--bab", "on", "--split", "off"])
    args.bab_certifier, args.bab_optimize, args.bab_root_optimize = "alpha_deeppoly", 20, "rows"
    args.split_deadline = time.monotonic() + 120.0
    d = vnnlib_mode.vnnlib_instance(args, load_program(args, "deeppoly"), "deeppoly")[0]
    assert d["certifier"] == "deeppoly" and d["verdict"] == "unsat"
    assert d["bab"]["certifier"] == "alpha_deeppoly" and d["bab"]["root"] == "first pass, rows optimised"
    assert searched == ["alpha_deeppoly"]
