"""Input splitting (``cfmlir.input_splitting``, ``cf-run --split``): on a 2-input ReLU net whose minimum over
the box is known (a dense grid and a Lipschitz bound), a property one DeepPoly pass leaves unknown is
proved by splitting (and holds: no grid point violates it), one that is violated gets a confirmed
counterexample, and the box limit, the deadline and ``--split off``/``auto`` do what they say."""

from __future__ import annotations

import json
import time

import numpy as np
import onnx
import pytest
import torch

import cfmlir
from cfmlir.input_splitting import _halves, decide_by_splitting, free_inputs, should_split
from cfmlir.tools.cf_run import main as cf_run
from cfruntime.network import load_onnx
from cfruntime.properties import parse_vnnlib
from cftest.instances_folder import numpy_forward, relu_net, vnnlib_text

SIZES = [2, 16, 16, 1]
GRID = 401


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """The net, its file, and thresholds ``t`` of the property ``Y_0 <= t`` (the violation) over
    ``[-1, 1]^2``: ``holds`` 0.2% of the output range below the minimum over a 401x401 grid (splitting
    proves it in about 100 boxes, so it holds everywhere), ``violated`` 5% above it."""
    d = tmp_path_factory.mktemp("split")
    ws, bs, model = relu_net(SIZES, seed=5)
    onnx.save(model, str(d / "net.onnx"))
    g = np.linspace(-1.0, 1.0, GRID)
    pts = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    ys = np.array([numpy_forward(ws, bs, p)[0] for p in pts])
    spread = ys.max() - ys.min()
    return {"dir": d, "net": d / "net.onnx", "ws": ws, "bs": bs, "grid_min": ys.min(),
            "holds": ys.min() - 0.002 * spread, "violated": ys.min() + 0.05 * spread}


def _prop(case, t: float, name: str):
    path = case["dir"] / f"{name}.vnnlib"
    path.write_text(vnnlib_text([-1.0, -1.0], [1.0, 1.0], 1, [f"(assert (<= Y_0 {float(t)!r}))"]))
    return path


def _run(case, t: float, name: str, *flags) -> dict:
    out = case["dir"] / f"{name}.json"
    rc = cf_run(["--quiet", "--certifier", "deeppoly", "--net", str(case["net"]), "--vnnlib", str(_prop(case, t, name)),
                 "--json", str(out), *map(str, flags)])
    assert rc == 0
    return json.loads(out.read_text())


def test_splitting_proves_what_one_pass_cannot(case):
    assert case["holds"] < case["grid_min"]  # the property holds at every grid point
    one_pass = _run(case, case["holds"], "holds_off", "--split", "off")
    assert one_pass["verdict"] == "unknown" and "split" not in one_pass  # the test means something
    split = _run(case, case["holds"], "holds_on")
    assert split["verdict"] == "unsat"
    assert split["split"]["boxes"] > 16 and split["split"]["stopped"] is None


def test_splitting_finds_a_confirmed_counterexample(case):
    net = load_onnx(case["net"])
    prop = parse_vnnlib(_prop(case, case["violated"], "violated"))
    eng = cfmlir.engine_for(cfmlir.compile("deeppoly"))
    res = decide_by_splitting(eng, net, prop, [False], max_boxes=10000)
    assert res.verdict == "sat" and res.stopped is None
    cex = res.counterexample
    assert np.all(cex.x >= -1.0) and np.all(cex.x <= 1.0)
    assert numpy_forward(case["ws"], case["bs"], cex.x)[0] <= case["violated"] + 1e-9


def test_box_limit_and_deadline_stop_unknown(case):
    limited = _run(case, case["holds"], "holds_limit", "--max-boxes", 4)
    assert limited["verdict"] == "unknown"
    assert limited["split"] == {"boxes": limited["split"]["boxes"], "rounds": limited["split"]["rounds"],
                                "stopped": "box limit"}
    assert limited["split"]["boxes"] <= 4
    net = load_onnx(case["net"])
    prop = parse_vnnlib(_prop(case, case["holds"], "holds_deadline"))
    eng = cfmlir.engine_for(cfmlir.compile("deeppoly"))
    res = decide_by_splitting(eng, net, prop, [False], max_boxes=10000, deadline=time.monotonic() - 1.0)
    assert (res.verdict, res.boxes, res.stopped) == ("unknown", 0, "deadline")


def test_verified_regions_are_not_split(case):
    net = load_onnx(case["net"])
    prop = parse_vnnlib(_prop(case, case["holds"], "holds_done"))
    res = decide_by_splitting(cfmlir.engine_for(cfmlir.compile("deeppoly")), net, prop, [True], max_boxes=10)
    assert (res.verdict, res.boxes, res.rounds) == ("unsat", 0, 0)


def test_halves_cover_the_box():
    lb = torch.tensor([[0.0, -1.0, 2.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
    ub = torch.tensor([[1.0, 1.0, 2.0], [3.0, 2.0, 5.0]], dtype=torch.float64)
    clb, cub = _halves(lb, ub, torch.tensor([1, 2]))
    assert clb.tolist() == [[0.0, -1.0, 2.0], [1.0, 1.0, 1.0], [0.0, 0.0, 2.0], [1.0, 1.0, 3.0]]
    assert cub.tolist() == [[1.0, 0.0, 2.0], [3.0, 2.0, 3.0], [1.0, 1.0, 2.0], [3.0, 2.0, 5.0]]


def test_auto_splits_only_low_dimensional_boxes(tmp_path):
    def prop(n_free, n=784):
        ub = [0.0] * n
        ub[:n_free] = [1.0] * n_free
        p = tmp_path / f"p{n_free}.vnnlib"
        p.write_text(vnnlib_text([0.0] * n, ub, 1, ["(assert (<= Y_0 0.0))"]))
        return parse_vnnlib(p)

    few, many = prop(5), prop(100)
    assert (free_inputs(few), free_inputs(many)) == (5, 100)
    assert should_split("auto", few) and not should_split("auto", many)
    assert should_split("on", many) and not should_split("off", few)


def test_auto_leaves_the_reference_interpreter_one_pass(case):
    d = _run(case, case["holds"], "holds_interp", "--engine", "interpreter")
    assert d["verdict"] == "unknown" and "split" not in d
    assert _run(case, case["holds"], "holds_interp_on", "--engine", "interpreter", "--split", "on")["verdict"] == "unsat"


def test_check_sees_every_split_batch(case):
    """``--check`` checks the bounds of the halves too (a certifier's unsound bounds could otherwise prove a
    property by splitting unchecked)."""
    d = _run(case, case["holds"], "holds_check", "--check")
    assert d["verdict"] == "unsat" and d["unsound"] is False
    assert d["check"]["batches"] > d["split"]["rounds"] >= 2


@pytest.mark.parametrize("mutant", ["deeppoly ReLU upper bound 0", "deeppoly ReLU lower polyhedron is the upper bound u"])
def test_an_unsound_certifier_proves_nothing_by_splitting(case, mutant, monkeypatch, tmp_path):
    """A mutant certifier's bounds, refuted by the check (on by default for a .cf file), never make an ``unsat``,
    whether the first pass or the halves are refuted; the exit status says unsound.  (The prover refutes these
    mutants before any analysis: here it is made to miss them, :mod:`cftest.proofs`, so that the check is tested.)"""
    from cfmlir.certifiers import certifier_source
    from cftest.mutants import UNSOUND
    from cftest.proofs import prover_misses

    k = [m[0] for m in UNSOUND].index(mutant)
    _, base, old, new, _ = UNSOUND[k]
    text = certifier_source(base)[0]
    assert old in text
    cf = case["dir"] / f"mutant_{k}.cf"
    cf.write_text(text.replace(old, new))
    prover_misses(monkeypatch, tmp_path / "cache", text.replace(old, new))
    out = case["dir"] / f"{cf.stem}.json"
    rc = cf_run(["--quiet", "--certifier", str(cf), "--net", str(case["net"]), "--split", "on",
                 "--vnnlib", str(_prop(case, case["holds"], cf.stem)), "--json", str(out)])
    d = json.loads(out.read_text())
    assert rc == 3 and d["unsound"] is True and d["verdict"] != "unsat"


def test_split_dimensions_by_chunks_are_the_same(case):
    from cfmlir.input_splitting import _split_dims

    net = load_onnx(case["net"])
    g = torch.Generator().manual_seed(0)
    lb = torch.rand(10, 2, generator=g, dtype=torch.float64) - 1
    ub = lb + torch.rand(10, 2, generator=g, dtype=torch.float64)
    A = torch.ones(1, 1, dtype=torch.float64)
    assert torch.equal(_split_dims(net, A, lb, ub, 3), _split_dims(net, A, lb, ub, 100))


def test_a_round_is_predicted_from_the_last_ones_time_per_half():
    from cfmlir.input_splitting import predicted_round_s

    assert predicted_round_s(0.0, 0, 8) == 0.0  # the first round always starts
    assert predicted_round_s(2.0, 8, 16) == pytest.approx(4.0)  # twice the halves
    assert predicted_round_s(2.0, 8, 4) == pytest.approx(1.0)  # half of them verified: shorter


class _SlowEngine:
    """Bounds that never verify anything and take ``per_box`` seconds a box."""

    def __init__(self, per_box: float):
        self.per_box = per_box

    def bounds(self, mnet, lb, ub, with_layers=False):
        n = len(lb)
        time.sleep(self.per_box * n)
        low = torch.full((n, mnet.layers[-1].size), -1e9, dtype=torch.float64)
        return low, -low, None


def test_splitting_uses_the_time_there_is_and_ends_before_the_deadline(case):
    """Rounds of 0.04 s a half: the search runs rounds as long as the next one is predicted to fit, stops at
    the deadline, never after it, and not long before (the next round would not have fitted)."""
    net = load_onnx(case["net"])
    prop = parse_vnnlib(_prop(case, case["holds"], "holds_slow"))
    t0 = time.monotonic()
    deadline = t0 + 3.0
    res = decide_by_splitting(_SlowEngine(0.04), net, prop, [False], max_boxes=10 ** 6, deadline=deadline)
    end = time.monotonic()
    assert (res.verdict, res.stopped) == ("unknown", "deadline")
    assert end <= deadline + 0.1, end - deadline
    # halves per round 2, 4, 8, 16, 32 (0.08 ... 1.28 s, 2.5 s in all): the fifth round (1.28 s predicted after
    # 1.2 s) fits, the sixth (2.56 s) does not
    assert res.rounds >= 5 and end - t0 >= 2.3, (res.rounds, end - t0)
