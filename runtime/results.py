"""VNN-COMP result files and confirmed counterexamples.

A result file (what VNN-COMP's ``run_instance.sh`` leaves at ``RESULTS_FILE``) is one verdict on its
first line -- ``unsat``, ``sat``, ``unknown``, ``timeout`` or ``error`` -- and, for ``sat``, the
counterexample after it: every input and every output of the network as an s-expression, one
``(name value)`` per line inside the outer parentheses::

    sat
    ((X_0 0.25)
     (X_1 -0.5)
     (Y_0 1.125)
     (Y_1 1.25))

(the layout of VNN-COMP's result files; its checker joins the lines, splits at ``)`` and reads
``name value`` with one space between them, then runs the ONNX model on ``X`` in the model's input
type -- float32 -- and compares with ``Y``).

A ``sat`` verdict is only ever written with a counterexample that the loaded network confirms:
:func:`confirm_counterexample` takes the point found by the search, rounds it to float32 (inside the
box: the checker feeds float32 inputs), evaluates the network at that point in float64 and keeps it
only when it lies in the region's input box and its output satisfies every constraint of one of the
region's disjuncts, with no tolerance.  ``Y`` is that float64 output.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: writing a verdict must not cost its import
    import numpy as np

#: the verdicts of a result file
VERDICTS = ("unsat", "sat", "unknown", "timeout", "error")


@dataclass
class Counterexample:
    """A confirmed counterexample: input ``x`` (float64 values of float32 numbers, in the order of the
    VNN-LIB ``X_i``), the network's float64 output ``y`` at ``x``, the input region and the disjunct
    of that region whose constraints ``y`` satisfies."""

    x: np.ndarray
    y: np.ndarray
    region: int
    disjunct: int

    def to_json(self) -> dict:
        return {"x": self.x.tolist(), "y": self.y.tolist(), "region": self.region, "disjunct": self.disjunct}


def float32_in_box(x: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray | None:
    """``x`` rounded to float32, nudged by one float32 step back into ``[lb, ub]`` where rounding left
    it; None when some coordinate has no float32 value in its interval."""
    import numpy as np

    x32 = np.clip(x, lb, ub).astype(np.float32)
    low = x32.astype(np.float64) < lb
    x32[low] = np.nextafter(x32[low], np.float32(np.inf))
    high = x32.astype(np.float64) > ub
    x32[high] = np.nextafter(x32[high], np.float32(-np.inf))
    x64 = x32.astype(np.float64)
    if np.any(x64 < lb) or np.any(x64 > ub):
        return None
    return x64


def confirm_counterexample(network, prop, region: int, x) -> Counterexample | None:
    """The counterexample at (a float32 rounding of) ``x`` in ``prop.regions[region]``, confirmed by
    evaluating ``network`` in float64; None when neither the rounded nor the given point lies in the
    box and violates the property."""
    import numpy as np
    import torch

    from cfruntime.properties.vnnlib import output_in_disjunct

    reg = prop.regions[region]
    x = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x, dtype=np.float64).reshape(-1)
    candidates = [c for c in (float32_in_box(x, reg.lb, reg.ub), x) if c is not None]
    for cand in candidates:
        if cand.shape != reg.lb.shape or not np.all(np.isfinite(cand)):
            continue
        if np.any(cand < reg.lb) or np.any(cand > reg.ub):
            continue
        with torch.no_grad():
            y = network.forward(torch.from_numpy(cand.copy()).reshape(1, -1)).to("cpu", torch.float64)[0].numpy()
        if not np.all(np.isfinite(y)):
            continue
        k = output_in_disjunct(reg, y)
        if k is not None:
            return Counterexample(cand, y.astype(np.float64), region, k)
    return None


def _num(v: float) -> str:
    """The shortest text that reads back as the same float64."""
    return repr(float(v))


def result_text(verdict: str, counterexample: Counterexample | None = None) -> str:
    """The content of a result file: the verdict line, and the counterexample for ``sat``."""
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict '{verdict}' (expected one of {', '.join(VERDICTS)})")
    if verdict != "sat":
        return verdict + "\n"
    if counterexample is None:
        raise ValueError("a sat result needs its counterexample")
    items = [f"(X_{i} {_num(v)})" for i, v in enumerate(counterexample.x)]
    items += [f"(Y_{j} {_num(v)})" for j, v in enumerate(counterexample.y)]
    return "sat\n(" + "\n ".join(items) + ")\n"


def write_result(path: str | Path, verdict: str, counterexample: Counterexample | None = None) -> None:
    """Write a result file (see :func:`result_text`); :class:`OSError` when it cannot be written."""
    Path(path).write_text(result_text(verdict, counterexample), encoding="utf-8")


def parse_result(text: str) -> tuple[str, list[float] | None, list[float] | None]:
    """``(verdict, xs, ys)`` of a result file's text (``xs``/``ys`` None unless ``sat``); the inverse of
    :func:`result_text`.  :class:`ValueError` for a malformed file."""
    lines = text.strip().splitlines()
    if not lines or lines[0].strip() not in VERDICTS:
        raise ValueError(f"first line must be one of {', '.join(VERDICTS)}, got '{lines[0] if lines else ''}'")
    verdict = lines[0].strip()
    if verdict != "sat":
        return verdict, None, None
    body = " ".join(lines[1:]).strip()
    if len(body) < 2 or body[0] != "(" or body[-1] != ")":
        raise ValueError("a sat result needs the counterexample ((X_0 v) ... (Y_0 v) ...)")
    xs: list[float] = []
    ys: list[float] = []
    for part in body[1:-1].split(")"):
        part = part.strip()
        if not part:
            continue
        if part[0] != "(":
            raise ValueError(f"malformed counterexample entry '{part}'")
        name, value = part[1:].split(" ")
        dest = xs if name.startswith("X_") else ys if name.startswith("Y_") else None
        if dest is None or int(name[2:]) != len(dest):
            raise ValueError(f"unexpected counterexample variable '{name}'")
        dest.append(float(value))
    return verdict, xs, ys


def read_result(path: str | Path) -> tuple[str, list[float] | None, list[float] | None]:
    """:func:`parse_result` of a file."""
    return parse_result(Path(path).read_text(encoding="utf-8"))
