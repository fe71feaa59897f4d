"""``cf-plot``: precision against runtime per network, from a benchmark JSON (the paper's Figures 6 and 7).

::

    cf-plot bench/results/certify_float32.json -o precision_vs_time.png
    cf-plot bench/results/certify.json -o ablation_cf_s.png --mode CF-S --percent

The input is what ``bench/certify.py`` writes: ``{"n", "dtype", "runs": [{"certifier", "network",
"mode", "status", "certified", "correct", "analysis_s", "eps", ...}], ...}`` (a bare list of runs is
accepted too).  One panel per network (in the order of the file), one point per certifier: the analysis
time on a log axis, the number of certified images (``--percent``: the percentage of the correctly
classified ones) on the other.  The DeepPoly_p family (``deeppoly_0`` ... ``deeppoly_8``, the paper's
Figure 7), when present, is drawn as one line through its points in the order of p.  Runs of one mode
are drawn (``--mode``, default ``CF``); runs that did not finish (``"status"`` other than ``ok``) are
named in their panel's title.

Needs matplotlib (``pip install 'cfmlir[plot]'``).  A file that cannot be read or is not such a JSON,
and an output that cannot be written, are one ``error:`` line and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from cfmlir.tools.arg_errors import one_line_errors
from cfruntime.errors import UserError

#: how the shipped certifiers are called in the paper
DISPLAY = {"ibp": "IBP", "crown_ibp": "CROWN-IBP", "deepz": "DeepZ", "deeppoly": "DeepPoly", "reusecert": "ReuseCert",
           "polyzono": "PolyZono", "zid": "ZID", "skippoly": "SkipPoly"}
MARKERS = "os^Dv<>PXh*p"
DEEPPOLY_P = re.compile(r"deeppoly_(\d+)$")
DEFAULT_MODE = "CF"


class PlotError(UserError):
    """A user error; ``str()`` is the message after ``error: ``."""


@dataclass
class Run:
    """One finished or failed (certifier, network) run of the selected mode."""

    certifier: str
    network: str
    status: str
    certified: float | None = None
    correct: float | None = None
    seconds: float | None = None
    eps: float | None = None


def _number(run: dict, key: str, where: str, required: bool = True) -> float | None:
    v = run.get(key)
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise PlotError(f"{where}: \"{key}\" must be a number, got {json.dumps(v)}")
    return float(v)


def read_runs(path: str | Path, mode: str = DEFAULT_MODE) -> tuple[list[Run], dict]:
    """The runs of ``mode`` in a benchmark JSON and the file's other top-level fields; a
    :class:`PlotError` for a file that cannot be read or does not have that shape."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise PlotError(f"{path}: cannot read ({e.strerror or e})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PlotError(f"{path}: not JSON ({' '.join(str(e).split())})") from None
    meta = {}
    if isinstance(doc, dict) and isinstance(doc.get("runs"), list):
        runs, meta = doc["runs"], {k: v for k, v in doc.items() if k != "runs"}
    elif isinstance(doc, list):
        runs = doc
    else:
        raise PlotError(f"{path}: not a benchmark JSON (expected an object with a \"runs\" list, as bench/certify.py "
                        "writes)")
    out, modes = {}, []
    for i, r in enumerate(runs):
        where = f"{path}: run {i}"
        if not isinstance(r, dict):
            raise PlotError(f"{where}: not an object")
        for key in ("certifier", "network"):
            if not isinstance(r.get(key), str) or not r[key]:
                raise PlotError(f"{where}: no \"{key}\" name")
        status = r.get("status", "ok")
        if not isinstance(status, str):
            raise PlotError(f"{where}: \"status\" must be a string")
        run_mode = r.get("mode", mode)
        if run_mode not in modes:
            modes.append(run_mode)
        if run_mode != mode:
            continue
        run = Run(r["certifier"], r["network"], status, eps=_number(r, "eps", where, required=False))
        if status == "ok":
            run.certified = _number(r, "certified", where)
            run.correct = _number(r, "correct", where, required=False)
            run.seconds = _number(r, "analysis_s", where)
            if run.seconds < 0 or run.certified < 0:
                raise PlotError(f"{where}: negative \"certified\" or \"analysis_s\"")
        out[(run.network, run.certifier)] = run  # a later run of the same pair replaces an earlier one
    if not any(r.status == "ok" for r in out.values()):
        have = ", ".join(str(m) for m in modes) or "none"
        raise PlotError(f"{path}: no finished run in mode {mode} (modes in the file: {have})")
    return list(out.values()), meta


def display_name(certifier: str) -> str:
    return DISPLAY.get(certifier, certifier)


def plot(runs: list[Run], out: str | Path, *, percent: bool = False, title: str | None = None, dpi: int = 150) -> None:
    """Draw the panels (see the module docstring) and write the image to ``out`` (its format from the
    suffix: png, pdf, svg)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotError("cf-plot needs matplotlib: pip install 'cfmlir[plot]'") from None

    nets = list(dict.fromkeys(r.network for r in runs))
    certs = list(dict.fromkeys(r.certifier for r in runs if not DEEPPOLY_P.match(r.certifier)))
    style = {c: (f"C{i % 10}", MARKERS[i % len(MARKERS)]) for i, c in enumerate(certs)}
    ncols = min(3, len(nets))
    nrows = math.ceil(len(nets) / ncols)
    fig = Figure(figsize=(4.4 * ncols, 3.6 * nrows + 0.9), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    handles = {}
    for k, net in enumerate(nets):
        ax = axes[k // ncols][k % ncols]
        here = [r for r in runs if r.network == net]
        ok = [r for r in here if r.status == "ok"]
        correct = max((r.correct for r in ok if r.correct is not None), default=None)

        def y(r: Run) -> float:
            if percent:
                return 100.0 * r.certified / r.correct if r.correct else 0.0
            return r.certified

        for r in ok:
            if DEEPPOLY_P.match(r.certifier):
                continue
            color, marker = style[r.certifier]
            h = ax.scatter([max(r.seconds, 1e-4)], [y(r)], color=color, marker=marker, s=48, zorder=3,
                           label=display_name(r.certifier))
            handles.setdefault(r.certifier, h)
        sweep = sorted((int(DEEPPOLY_P.match(r.certifier).group(1)), r) for r in ok if DEEPPOLY_P.match(r.certifier))
        if sweep:
            xs = [max(r.seconds, 1e-4) for _, r in sweep]
            ys = [y(r) for _, r in sweep]
            (h,) = ax.plot(xs, ys, color="0.35", marker=".", linewidth=1, zorder=2, label="DeepPoly_p (p = layers back)")
            handles.setdefault("deeppoly_p", h)
            for (p, _), xv, yv in zip(sweep, xs, ys):
                ax.annotate(str(p), (xv, yv), textcoords="offset points", xytext=(3, 3), fontsize=7, color="0.35")
        ax.set_xscale("log")
        eps = next((r.eps for r in here if r.eps is not None), None)
        failed = [f"{display_name(r.certifier)} ({r.status})" for r in here if r.status != "ok"]
        ax.set_title(net + (f", eps {eps:g}" if eps is not None else "")
                     + ("\nnot finished: " + ", ".join(failed) if failed else ""), fontsize=9)
        ax.set_xlabel("analysis time (s, log scale)", fontsize=8)
        if percent:
            ax.set_ylabel("certified (% of correct)", fontsize=8)
        else:
            ax.set_ylabel("certified" + (f" (of {correct:g} correct)" if correct is not None else ""), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    for k in range(len(nets), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    order = [c for c in certs if c in handles] + (["deeppoly_p"] if "deeppoly_p" in handles else [])
    fig.legend([handles[c] for c in order], [handles[c].get_label() for c in order], loc="outside lower center",
               ncol=min(len(order), 5), fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    out = Path(out)
    try:
        fig.savefig(out, dpi=dpi)
    except OSError as e:
        raise PlotError(f"{out}: cannot write ({e.strerror or e})") from None
    except ValueError as e:  # an unknown image format
        raise PlotError(f"{out}: {' '.join(str(e).split())}") from None


def build_parser() -> argparse.ArgumentParser:
    p = one_line_errors(argparse.ArgumentParser(
        prog="cf-plot", description="Plot precision against analysis time per network from a benchmark JSON "
                                    "(bench/certify.py's output)."))
    p.add_argument("bench", metavar="BENCH.json", help="benchmark results (bench/results/certify*.json)")
    p.add_argument("-o", "--out", required=True, metavar="OUT.png", help="image to write (png, pdf or svg)")
    p.add_argument("--mode", default=DEFAULT_MODE, help=f"which mode's runs to draw (default {DEFAULT_MODE})")
    p.add_argument("--percent", action="store_true", help="certified as a percentage of the correctly classified images")
    p.add_argument("--title", default=None, help="a title above the panels (default: images, dtype and mode)")
    p.add_argument("--dpi", type=int, default=150, help="resolution of a raster image (default 150)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.dpi <= 0:
            raise PlotError(f"--dpi must be positive, got {args.dpi}")
        runs, meta = read_runs(args.bench, args.mode)
        title = args.title
        if title is None:
            parts = [f"{meta['n']} images" if "n" in meta else None, meta.get("dtype"), f"mode {args.mode}"]
            title = "precision and analysis time: " + ", ".join(str(p) for p in parts if p)
        plot(runs, args.out, percent=args.percent, title=title, dpi=args.dpi)
    except UserError as e:
        print(" ".join(e.diagnostic.split()), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
