"""Deciding a VNN-LIB property by evaluating every point that matters, where the network reads the free inputs
only through integer roundings (:mod:`cfruntime.network.discrete_inputs`): a complete method for networks no
certifier rule covers (cctsdb_yolo_2023's ``ArgMax``, ``ScatterND`` and ``Range`` on a patch's position).

Algorithm:

1. Per input region, the free inputs (``lo < hi``) and how the network reads each (``trunc``, ``floor``,
   ``ceil``, ``round``; a free input nothing reads keeps ``lo``).  The region's bounds are taken to float32
   (inwards: the model's inputs are float32), and a rounding ``r`` takes, over ``[lo, hi]``, exactly the
   integers ``v`` from ``r(lo)`` to ``r(hi)`` (monotone and integer-valued); each ``v`` is reached at
   ``clip(v, lo, hi)``, its *witness* (checked: ``r(witness) == v``).  A fixed input is read at its nearest
   float32 (as the competition's checker feeds it).
2. Every combination of witnesses (their product, at most ``max_points``), the fixed inputs at their value,
   evaluated by ONNX Runtime on the ONNX file itself (float32, the file's own arithmetic: the loader cannot
   read these networks, and the competition checks a counterexample with ONNX Runtime too).  Every other
   point of the box has the same rounded values as one of these, hence the same output.
3. ``sat`` at the first output inside a disjunct of the region (the point and output are the
   counterexample); ``unsat`` when every output has, in every disjunct, a row ``A y > b`` by more than
   :data:`MARGIN` (relative); otherwise ``unknown`` (an output within rounding distance of the boundary).
   A deadline passed, or too many points: ``unknown`` with the reason.

Example: cctsdb_yolo_2023 ``patch-1``, ``X_12288, X_12289`` in ``[0, 62]``: 3,969 points, 0.7 s.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cfruntime.errors import NetworkError
from cfruntime.network.discrete_inputs import Rounding, discrete_reads
from cfruntime.results import Counterexample, float32_in_box

#: the most points one property may need (their product over the free inputs, summed over regions)
MAX_POINTS = 1_000_000
#: ``unsat`` needs every row that refutes a disjunct to clear its bound by this much (times ``1 + |b|``)
MARGIN = 1e-6
#: the deadline is looked at after this many points
CHECK_EVERY = 256

_ROUND = {"trunc": np.trunc, "floor": np.floor, "ceil": np.ceil, "round": np.round}


@dataclass
class Enumerated:
    """What :func:`enumerate_property` found: the verdict, the points evaluated, the free inputs and their
    roundings (``X_i -> kind``), the counterexample of a ``sat``, and why it stopped early (or None)."""

    verdict: str
    points: int
    total: int
    seconds: float
    reads: dict[int, str] = field(default_factory=dict)
    counterexample: Counterexample | None = None
    stopped: str | None = None

    def json(self) -> dict:
        return {"points": self.points, "total": self.total, "seconds": self.seconds, "stopped": self.stopped,
                "reads": {f"X_{i}": kind for i, kind in sorted(self.reads.items())}}


def witnesses(lo: float, hi: float, rounding: Rounding) -> np.ndarray:
    """One float32 point of ``[lo, hi]`` per value the rounding takes there (step 1 of the module docstring);
    a :class:`ValueError` when the values overflow the rounding's type or are too many."""
    ends = float32_in_box(np.array([lo, hi]), np.array([lo, lo]), np.array([hi, hi]))
    if ends is None:
        raise ValueError(f"no float32 number in [{lo!r}, {hi!r}]")
    lo32, hi32 = np.float32(ends[0]), np.float32(ends[1])
    r = _ROUND[rounding.kind]
    first, last = float(r(np.float32(lo32))), float(r(np.float32(hi32)))
    if first < rounding.low or last > rounding.high:
        raise ValueError(f"rounded values {first:g}..{last:g} overflow the cast's type")
    if last - first + 1 > MAX_POINTS:
        raise ValueError(f"{last - first + 1:.0f} values")
    values = np.arange(first, last + 1)
    points = np.clip(values, lo32, hi32).astype(np.float32)
    if not np.array_equal(r(points), values.astype(np.float32)):  # every value reached by its witness
        raise ValueError("a rounded value has no float32 witness")
    return points


class NotEnumerable(Exception):
    """The property cannot be decided this way (the message says why: a free input read as a real, too many
    points, ONNX Runtime missing)."""


def enumerate_property(model, model_path: str | Path, prop, deadline: float | None = None,
                       max_points: int = MAX_POINTS) -> Enumerated:
    """Decide ``prop`` on the ONNX ``model`` (read from ``model_path``, which ONNX Runtime runs) by evaluating
    every point that matters (the module docstring); ``deadline`` is a :func:`time.monotonic` time.  Raises
    :class:`NotEnumerable` when the network reads a free input as a real number or the points are too many."""
    from cfruntime.network.discrete_inputs import NotDiscrete

    t0 = time.perf_counter()
    plans, reads, total = [], {}, 0
    for k, reg in enumerate(prop.regions):
        free = np.asarray(reg.lb) < np.asarray(reg.ub)
        try:
            rounds = discrete_reads(model, free)
            axes = {i: witnesses(float(reg.lb[i]), float(reg.ub[i]), r) for i, r in sorted(rounds.items())}
        except NotDiscrete as e:
            raise NotEnumerable(str(e)) from None
        except ValueError as e:
            raise NotEnumerable(f"region {k}: {e}") from None
        count = int(np.prod([len(a) for a in axes.values()], dtype=np.float64)) if axes else 1
        total += count
        if total > max_points:
            raise NotEnumerable(f"{total} points or more (at most {max_points})")
        plans.append((k, reg, axes))
        reads.update({i: r.kind for i, r in rounds.items()})
    session, name, shape = _session(model_path)
    done, near = 0, False
    for k, reg, axes in plans:
        x = _start(reg)
        A, b, groups = reg.stacked()
        tol = MARGIN * (1.0 + np.abs(b))
        for combo in itertools.product(*axes.values()):
            x[list(axes)] = combo
            y = _run(session, name, x, shape, model_path, axes)
            done += 1
            rows = A @ y - b
            hit = next((d for d, g in enumerate(groups) if np.all(rows[g] <= 0.0)), None)
            if hit is not None:
                cex = Counterexample(_as_given(x, reg), y, k, hit)
                return Enumerated("sat", done, total, time.perf_counter() - t0, reads, cex)
            near = near or not all(np.any(rows[g] > tol[g]) for g in groups)
            if deadline is not None and done % CHECK_EVERY == 0 and time.monotonic() > deadline:
                return Enumerated("unknown", done, total, time.perf_counter() - t0, reads, stopped="the time limit")
    verdict = "unknown" if near else "unsat"
    stopped = "an output within rounding distance of the property's boundary" if near else None
    return Enumerated(verdict, done, total, time.perf_counter() - t0, reads, stopped=stopped)


def _start(reg) -> np.ndarray:
    """The model's float32 input at the region's lower corner: a fixed input (``lo == hi``) at its nearest
    float32 (what the model reads: the competition's checker feeds float32), a free one at the first float32
    number in its interval."""
    lo, hi = np.asarray(reg.lb, np.float64), np.asarray(reg.ub, np.float64)
    x = lo.astype(np.float32)
    up = (x.astype(np.float64) < lo) & (lo < hi)
    x[up] = np.nextafter(x[up], np.float32(np.inf))
    return x


def _as_given(x32: np.ndarray, reg) -> np.ndarray:
    """The counterexample's input: the fixed inputs as the property gives them, the free ones as evaluated."""
    lo, hi = np.asarray(reg.lb, np.float64), np.asarray(reg.ub, np.float64)
    return np.where(lo < hi, x32.astype(np.float64), lo)


def _run(session, name: str, x: np.ndarray, shape: tuple, model_path, free) -> np.ndarray:
    """The model's first output at ``x`` (float64 of its float32 values); one error line naming the values of
    the ``free`` inputs when it fails there (an index out of range at some rounded value)."""
    try:
        return session.run(None, {name: x.reshape(shape)})[0].astype(np.float64).reshape(-1)
    except Exception as e:  # noqa: BLE001 - ONNX Runtime's InvalidArgument/Fail/...
        where = ", ".join(f"X_{i} = {x[i]:g}" for i in free)
        raise NetworkError(f"ONNX Runtime cannot evaluate the model at {where}: {' '.join(str(e).split())[:300]}",
                           file=model_path) from None


def _session(model_path):
    """An ONNX Runtime session of the model (one thread), its data input's name and shape."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise NotEnumerable("ONNX Runtime is not installed (pip install onnxruntime)") from None
    from cfruntime import gzio

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(gzio.read_bytes(model_path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ONNX Runtime raises its own Fail/InvalidGraph/...
        raise NetworkError(f"ONNX Runtime cannot run the model ({' '.join(str(e).split())[:200]})", file=model_path) from None
    inp = session.get_inputs()[0]
    if inp.type != "tensor(float)":  # the witnesses and fixed inputs are float32 numbers
        raise NotEnumerable(f"the model's input is {inp.type}, not float32")
    shape = tuple(d if isinstance(d, int) and d > 0 else 1 for d in inp.shape)
    return session, inp.name, shape
