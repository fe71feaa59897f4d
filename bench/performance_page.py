"""Generate ``docs/performance.md`` (and the README's ``cf-verify`` table) from ``bench/results/*.json``.

    python bench/performance_page.py            # rewrite docs/performance.md
    python bench/performance_page.py --check    # exit 1 when docs/performance.md or the README table is stale

Every figure on the page is read from a results file that a benchmark script wrote; none is typed by
hand, so the page cannot drift from the measurements.  ``test/unit/bench/test_performance_page.py``
runs ``--check``.  To add a table: a function ``(results dir) -> markdown`` in ``SECTIONS``.

Algorithm: for each section in order, load its JSON files, render a markdown table under the section's
fixed heading and method sentence; join them under a header naming the generator; compare or write.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "performance.md"
README = ROOT / "README.md"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_table  # noqa: E402  (bench/ is a folder of scripts, not a package)

NAMES = {"ibp": "IBP", "crown_ibp": "CROWN-IBP", "deepz": "DeepZ", "deeppoly": "DeepPoly",
         "reusecert": "ReuseCert", "polyzono": "PolyZono", "zid": "ZID", "skippoly": "SkipPoly"}


def _name(certifier: str) -> str:
    return NAMES.get(certifier, certifier)


def _load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(head: list[str], rows: list[list]) -> str:
    return "\n".join([_row(head), "|---" * len(head) + "|"] + [_row(r) for r in rows])


def _seconds(s: float) -> str:
    return f"{s:.2f} s" if s < 100 else f"{s:.0f} s"


def _run_cell(r: dict) -> str:
    """A ``bench/certify.py`` run: certified/correct and analysis seconds, or why it did not finish."""
    if r["status"] != "ok":
        return r["status"]
    return f"{r['certified']}/{r['correct']}, {_seconds(r['analysis_s'])}"


def verify_table() -> str:
    """The README's table: one row per certifier, proof time of all its rules (``bench/verify_times.py``)."""
    data = _load("verify_times.json")
    rows = []
    for run in data["runs"]:
        verified = sum(r["status"] == "verified" for r in run["rules"])
        rows.append([_name(run["certifier"]), f"{verified}/{len(run['rules'])}", f"K={run['K']}, M={run['M']}",
                     _seconds(run["seconds"])])
    return _table(["certifier", "rules verified", "bound", "seconds"], rows)


def _verify(_: Path) -> str:
    meta = _load("verify_times.json")["meta"]
    return (f"`{meta['command']}` ({meta['cpu_count']}-core {meta['machine']}, {meta['date']}; "
            "`bench/results/verify_times.json`):\n\n" + verify_table())


def _certify_float32(_: Path) -> str:
    data = _load("certify_float32.json")
    nets = list(dict.fromkeys(r["network"] for r in data["runs"]))
    cells: dict[str, dict[str, str]] = {}
    for r in data["runs"]:
        cells.setdefault(_name(r["certifier"]), {})[r["network"]] = _run_cell(r)
    rows = [[c] + [per.get(n, "") for n in nets] for c, per in cells.items()]
    return (f"Every shipped certifier, default pipeline, {data['dtype']}, {data['n']} images at the paper's ε, "
            "one fresh process per run (`python bench/certify.py --dtype float32 --modes CF`, "
            "`bench/results/certify_float32.json`); certified/correct and analysis seconds:\n\n"
            + _table(["certifier"] + nets, rows))


def _modes(_: Path) -> str:
    data = _load("certify.json")
    modes = list(dict.fromkeys(r["mode"] for r in data["runs"]))
    cells: dict[tuple, dict[str, str]] = {}
    for r in data["runs"]:
        cells.setdefault((r["network"], f"ε {r['eps']}", _name(r["certifier"])), {})[r["mode"]] = _run_cell(r)
    rows = [list(key) + [per.get(m, "") for m in modes] for key, per in cells.items()]
    return ("The four modes (CF: g-BSCR + rewrites, -S: dense torch, -R: no domain rewrites), "
            f"{data['dtype']}, {data['n']} images (`python bench/certify.py`, `bench/results/certify.json`; "
            "measured before the layer-granular runtime, kept as the ablation):\n\n"
            + _table(["network", "ε", "certifier"] + modes, rows))


def _compile(_: Path) -> str:
    data = _load("compile_times.json")
    rows = [[_name(c), f"{s:.3f} s"] for c, s in data["compile_s"].items()]
    return ("Compiling a certifier, uncached, default pipeline (`bench/results/compile_times.json`):\n\n"
            + _table(["certifier", "compile"], rows))


def _peer(_: Path) -> str:
    files = ["peer_compare.json", "peer_compare_fixed_malloc.json", "peer_compare_cuda.json"]
    return ("Side by side with auto_LiRPA 0.7.1 (`python bench/peer_compare.py [--device cuda] [--malloc fixed]`, "
            "warm, minimum of 3; `python bench/peer_table.py FILE...` prints this table from "
            + ", ".join(f"`bench/results/{f}`" for f in files) + "):\n\n"
            + peer_table.table([RESULTS / f for f in files]))


def _peer_widened(_: Path) -> str:
    files = ["peer_compare_widened.json", "peer_compare_widened_mnist.json", "peer_compare_cuda_widened.json"]
    return ("Our float32 bounds widened against rounding (sound; auto_LiRPA's are not), side by side "
            "(`python bench/peer_compare.py --widen on --repeat 3`): `peer_compare_widened.json` has every row "
            "(2026-12-05 00:45-00:55 UTC, both tools' repetitions interleaved, `bench/peer_side.py`: our CPU runs replay the "
            "run recorded at a batch shape's third call, "
            "`runtime/flow/tape.py`, as `cf-run` does over many batches; the eager times, what a single batch costs, are "
            "`ours_eager_s` in the JSON; the op and sync counts are of one eager run; the time ratios of this machine move by up to 10% "
            "between runs -- cifar convMed DeepPoly 1.01x in a run 20 minutes before, 0.97x in this one -- "
            "the op counts do not), `peer_compare_widened_mnist.json` the mnist rows of 2026-11-25 (quiet), "
            "`peer_compare_cuda_widened.json` "
            "every row on an H200 (`bash bench/gpu_session.sh` in one lease of a GPU machine; our runs replay a "
            "CUDA graph, the op and sync counts are of one eager run). Certified counts below "
            "auto_LiRPA's are what widening costs on that row:\n\n"
            + peer_table.table([RESULTS / f for f in files]))


def _memory(_: Path) -> str:
    rows = []
    for f in sorted(RESULTS.glob("memory_*.json")):
        data = json.loads(f.read_text())
        for r in data["runs"]:
            rows.append([r["network"], r.get("batch", data["n"]), _name(r["certifier"]),
                         f"{r['certified']}/{r['correct']}" if r["status"] == "ok" else r["status"],
                         _seconds(r["analysis_s"]), f"{r['peak_mib'] / 1024:.1f} GiB"])
    return ("Memory of the DeepZ family, float32, CPU, peak resident memory, one process per run "
            "(`python bench/certify.py --certifiers deepz,polyzono,zid --nets NET --modes CF --dtype float32 "
            "--n B --batch B --out bench/results/memory_NET.json`):\n\n"
            + _table(["network", "batch", "certifier", "certified", "analysis", "peak memory"], rows))


def _widening(_: Path) -> str:
    data = _load("float32_widening.json")
    per: dict[str, list[dict]] = {}
    for r in data["rows"]:
        per.setdefault(r["network"], []).append(r)
    rows = []
    for net, rs in per.items():
        raw = [r["violations_raw_float32"] for r in rs]
        ratios = [r["margin_width_ratio_median"] for r in rs]
        rows.append([net, len(rs), f"{min(raw)}-{max(raw)}", sum(r["violations_widened_float32"] for r in rs),
                     "/".join(str(sum(r[k] for r in rs)) for k in
                              ("certified_float64", "certified_raw_float32", "certified_widened_float32")),
                     f"{min(ratios):.3g}-{max(ratios):.4g}"])
    times = _load("float32_widening_times.json")["rows"]
    trows = [[r["network"], _name(r["certifier"]), f"{r['time_ratio']:.2f}x"] for r in times]
    return ("float32 widening (`python bench/float32_widening.py`, `bench/results/float32_widening.json`): bounds "
            "beaten by a float64 execution, certified counts and margin widths:\n\n"
            + _table(["network", "certifiers", "bounds beaten, raw float32", "widened",
                      "certified f64/raw/widened", "margin width widened/f64 (median per certifier)"], rows)
            + "\n\nTime of a widened run over a raw one (`--times-only`, `bench/results/float32_widening_times.json`):\n\n"
            + _table(["network", "certifier", "widened/raw"], trows))


def _gbscr(_: Path) -> str:
    data = _load("gbscr_ops.json")
    return ("g-BSCR against dense torch and torch.sparse on DeepPoly back-substitution steps "
            "(`python bench/gbscr_ops.py`, `bench/results/gbscr_ops.json`):\n\n```\n" + data["table"].rstrip() + "\n```")


def _parity(_: Path) -> str:
    data = _load("device_parity.json")
    rows = [[r["network"], _name(r["certifier"]), f"{r['rel_diff_f64']:.2g}", f"{r['rel_diff_f32']:.2g}"]
            for r in data["runs"]]
    return (f"CPU against {data['meta'].get('device_name', data['meta']['device'])} (`python bench/device_parity.py`, "
            "`bench/results/device_parity.json`), largest relative bound difference:\n\n"
            + _table(["network", "certifier", "float64", "float32"], rows))


def _vnncomp(_: Path) -> str:
    data = _load("vnncomp2021_split.json")
    keys = ["instances", "analysed", "unsat", "sat", "unknown", "timeout", "error", "split"]
    rows = [[b["benchmark"]] + [b[k] for k in keys] + [_seconds(b["instances_s"])] for b in data["benchmarks"]]
    return (f"VNN-COMP 2021 with input splitting ({data['certifier']}, {data['dtype']}, {data['device']}, "
            f"`--timeout {data['timeout_override_s']:g}`, `--split {data['split']}`; "
            "`bench/results/vnncomp2021_split.json`):\n\n" + _table(["benchmark"] + keys + ["seconds"], rows))


SECTIONS = [
    ("Proving the shipped certifiers (`cf-verify`)", _verify),
    ("Every shipped certifier", _certify_float32),
    ("Side by side with auto_LiRPA", _peer),
    ("Side by side with auto_LiRPA, widened float32", _peer_widened),
    ("Memory of the DeepZ family", _memory),
    ("What float32 widening costs", _widening),
    ("The four modes (ablation)", _modes),
    ("Compile times", _compile),
    ("g-BSCR operations", _gbscr),
    ("CPU and GPU agree", _parity),
    ("VNN-COMP 2021", _vnncomp),
]


def page() -> str:
    parts = ["# Performance\n",
             "Generated by `python bench/performance_page.py` from `bench/results/*.json`; do not edit by hand "
             "(a test fails when this page and the results differ). Machines: as each results file says "
             "(2-core CPU unless a GPU is named).\n"]
    for title, render in SECTIONS:
        parts.append(f"## {title}\n\n{render(RESULTS)}\n")
    return "\n".join(parts)


def stale() -> list[str]:
    """The generated texts that differ from what is on disk (empty when everything is up to date)."""
    out = []
    if not PAGE.exists() or PAGE.read_text() != page():
        out.append(str(PAGE.relative_to(ROOT)))
    if verify_table() not in README.read_text():
        out.append("README.md (the cf-verify table)")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report whether the generated texts are up to date")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        for f in bad:
            print(f"error: {f} is out of date with bench/results: run python bench/performance_page.py", file=sys.stderr)
        return 1 if bad else 0
    PAGE.write_text(page())
    print(f"wrote {PAGE.relative_to(ROOT)}; README cf-verify table:\n{verify_table()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
