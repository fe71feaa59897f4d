"""Deciding a property by evaluating every point that matters (``runtime/discrete_enumeration.py``): the
verdicts agree with the network evaluated at many real points of the box, the witnesses reach every rounded
value, and whatever cannot be decided this way says so."""

from __future__ import annotations

import time

import numpy as np
import onnx
import pytest

from cfruntime.discrete_enumeration import NotEnumerable, enumerate_property, witnesses
from cfruntime.errors import NetworkError
from cfruntime.network.discrete_inputs import Rounding
from cfruntime.properties import parse_vnnlib
from cftest.discrete_models import position_model, position_output, vnnlib_text

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize(("kind", "lo", "hi", "expected"), [
    ("trunc", -1.5, 2.5, [-1.0, 0.0, 1.0, 2.0]),
    ("floor", 0.5, 3.25, [0.5, 1.0, 2.0, 3.0]),
    ("ceil", 0.5, 3.25, [1.0, 2.0, 3.0, 3.25]),
    ("round", 0.25, 2.75, [0.25, 1.0, 2.0, 2.75]),
    ("trunc", 2.0, 2.5, [2.0]),
])
def test_witnesses_reach_every_rounded_value_once(kind, lo, hi, expected):
    points = witnesses(lo, hi, Rounding(kind))
    assert points.tolist() == expected
    assert np.all((points >= lo) & (points <= hi))
    # every real point of the interval rounds to the rounding of one witness
    r = {"trunc": np.trunc, "floor": np.floor, "ceil": np.ceil, "round": np.round}[kind]
    dense = np.linspace(lo, hi, 10_001).astype(np.float32)
    assert set(r(dense).tolist()) == set(r(points).tolist())


def test_witnesses_refuse_an_overflowing_cast():
    with pytest.raises(ValueError, match="overflow the cast's type"):
        witnesses(0.0, 300.0, Rounding("trunc", -128.0, 127.0))


def _decide(tmp_path, rounding, lo, hi, outputs, **kw):
    model = position_model(rounding)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    prop = parse_vnnlib(text=vnnlib_text(lo, hi, outputs))
    return enumerate_property(model, path, prop, **kw), path


def _outputs_at_random_points(rounding, lo, hi, n=4000, seed=0):
    rng = np.random.default_rng(seed)
    xs = rng.uniform(lo, hi, size=(n, len(lo))).astype(np.float32)
    return np.array([position_output(x, rounding) for x in xs])


@pytest.mark.parametrize("rounding", ["Cast", "Floor", "Ceil", "Round"])
def test_unsat_only_where_no_real_point_violates(tmp_path, rounding):
    """The total ``s_0 + s_1`` over pixels fixed at (1, 2) and the position free in [0, 6.4]: the lowest total
    is that of one table row.  Unsafe below a threshold: unsat just below the minimum over 4000 random real
    points (which visit every rounded position), sat just above it: the enumeration finds the minimising
    position, and the counterexample is ONNX Runtime's own output there."""
    lo, hi = [1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.4, 1.0]
    totals = _outputs_at_random_points(rounding, lo, hi)[:, 1]
    low = float(totals.min())
    found, _ = _decide(tmp_path, rounding, lo, hi, [f"(<= Y_1 {low - 1e-4!r})"])
    assert found.verdict == "unsat" and found.counterexample is None
    assert found.points == found.total == {"Cast": 7, "Floor": 7, "Ceil": 8, "Round": 7}[rounding]
    found, path = _decide(tmp_path, rounding, lo, hi, [f"(<= Y_1 {low + 1e-4!r})"])
    assert found.verdict == "sat"
    cex = found.counterexample
    assert np.all(cex.x >= lo) and np.all(cex.x <= hi)
    y = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": cex.x.astype(np.float32)})[0]
    assert np.array_equal(y, cex.y) and cex.y[1] <= low + 1e-4


def test_the_argmax_output_is_decided_exactly(tmp_path):
    """``argmax(TABLE[p] * (x_0, x_1))`` with x = (1, 1): row 3 (2.0, 0.25) picks 0, row 7 (0.25, 3.0) picks 1.
    A position in [3, 3.9] never picks 1 (unsat); one in [3, 7.5] does (sat), as random points agree."""
    found, _ = _decide(tmp_path, "Cast", [1.0, 1.0, 3.0, 0.0], [1.0, 1.0, 3.9, 0.0], ["(>= Y_0 0.5)"])
    assert found.verdict == "unsat"
    assert not np.any(_outputs_at_random_points("Cast", [1.0, 1.0, 3.0, 0.0], [1.0, 1.0, 3.9, 0.0])[:, 0] >= 0.5)
    found, _ = _decide(tmp_path, "Cast", [1.0, 1.0, 3.0, 0.0], [1.0, 1.0, 7.5, 0.0], ["(>= Y_0 0.5)"])
    assert found.verdict == "sat" and found.counterexample.y[0] == 1.0


def test_an_output_on_the_boundary_is_unknown(tmp_path):
    """The total at position 0 with pixels (1, 2) is exactly -1.0: ``Y_1 <= -1.0 - 1e-9`` is not violated there in
    float32, but no margin separates it: unknown, not unsat."""
    found, _ = _decide(tmp_path, "Cast", [1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 0.5, 0.0], ["(<= Y_1 -1.000000001)"])
    assert found.verdict == "unknown" and "rounding distance" in found.stopped


def test_a_fixed_input_keeps_its_given_value_in_the_counterexample(tmp_path):
    """x_0 = 0.1 has no float32 value: the model reads its nearest float32, the counterexample gives 0.1."""
    found, _ = _decide(tmp_path, "Cast", [0.1, 2.0, 0.0, 0.0], [0.1, 2.0, 6.0, 0.0], ["(<= Y_1 10.0)"])
    assert found.verdict == "sat" and found.counterexample.x[0] == 0.1


def test_a_real_valued_free_input_is_not_enumerable(tmp_path):
    with pytest.raises(NotEnumerable, match=r"X_0 reaches node 'mul' \(Mul\)"):
        _decide(tmp_path, "Cast", [0.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.0, 0.0], ["(<= Y_1 0.0)"])


def test_too_many_points_are_refused(tmp_path):
    with pytest.raises(NotEnumerable, match=r"7 points or more \(at most 5\)"):
        _decide(tmp_path, "Cast", [1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.0, 0.0], ["(<= Y_1 -5.0)"], max_points=5)


def test_the_deadline_stops_the_enumeration(tmp_path, monkeypatch):
    monkeypatch.setattr("cfruntime.discrete_enumeration.CHECK_EVERY", 1)
    found, _ = _decide(tmp_path, "Cast", [1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 6.0, 0.0], ["(<= Y_1 -5.0)"],
                       deadline=time.monotonic() - 1.0)
    assert (found.verdict, found.points, found.stopped) == ("unknown", 1, "the time limit")


def test_a_model_failing_at_a_rounded_value_is_one_error_line(tmp_path):
    """``Ceil`` of 7.4 is 8, past the table's 8 rows: ONNX Runtime's failure, named with the position."""
    with pytest.raises(NetworkError, match=r"m\.onnx: ONNX Runtime cannot evaluate the model at X_2 = 7\.4: .*indices"):
        _decide(tmp_path, "Ceil", [1.0, 2.0, 6.5, 0.0], [1.0, 2.0, 7.4, 0.0], ["(<= Y_1 -5.0)"])


def test_a_float64_input_is_refused(tmp_path):
    """The witnesses and the fixed inputs are float32 numbers: a model reading float64 is not enumerated."""
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Floor", ["x"], ["y"], name="floor")], "m",
                              [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "d.onnx"
    onnx.save(model, str(path))
    prop = parse_vnnlib(text=vnnlib_text([0.0, 1.0], [3.0, 1.0], ["(<= Y_0 -1.0)"]))
    with pytest.raises(NotEnumerable, match=r"the model's input is tensor\(double\), not float32"):
        enumerate_property(model, path, prop)
