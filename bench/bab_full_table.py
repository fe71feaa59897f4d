"""The full-limit table of issue 26, point 3: every instance of VNN-COMP 2021's mnistfc, oval21, eran, acasxu
and cifar10_resnet at the competition's own time limit, ours beside alpha-beta-CROWN, joined from all
``bench/bab_compare*.json`` files (``bench/bab_compare.py``; not a benchmark itself).

Usage:

    .venv/bin/python bench/bab_full_table.py /work/vnncomp2021/benchmarks [--results bench/results]
        [--benchmarks mnistfc,acasxu] [--out bench/results/bab_full_table.json] [--missing]

For each line of a benchmark's instances CSV and each tool (``ours``, ``abcrown``) the row that counts is the
latest one run on the CPU (a file whose ``machine.device`` is not ``cpu`` is left out) at that line's own
limit (``timeout_s`` equal to the CSV's timeout: a run capped below it does not count); for ours only runs
of the default configuration (no ``ours_args``, ``--certifier auto``).  Latest: the files ordered by the
date in their name (``YYYY-MM-DD``; none first), then by when git added them (not yet added: last), then by
name; within a file, a later row wins.

Per benchmark: the CSV's lines, the lines each tool has a row for, decided (``unsat+sat``), wrong answers
against the rows' ``official`` answers (blank without any), the mean wall time per decided instance, and the
instances one tool decided and the other (which has a row for it) did not.  Then the issue's bar -- ours
decides at least 90% of what alpha-beta-CROWN decides on every benchmark, and at least as many on two --
over the lines both tools have rows for, naming the benchmarks not fully covered.  ``--missing`` prints,
per benchmark and tool, the ``--only`` list of ``bench/bab_compare.py`` for the lines still without a row.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bab_compare import DECIDED, instance_lines, summarise  # noqa: E402 - the sibling bench script

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = "mnistfc,oval21,eran,acasxu,cifar10_resnet"
TOOLS = ("ours", "abcrown")
#: the fewest benchmarks on which ours must decide at least as many as alpha-beta-CROWN, and the least share
AT_LEAST_AS_MANY, SHARE = 2, 0.9


def _added(path: Path) -> float:
    """When git added ``path`` (seconds since the epoch; not yet added: the newest, inf; outside a repository: 0)."""
    p = subprocess.run(["git", "log", "--diff-filter=A", "--format=%ct", "--", path.name], cwd=path.parent,
                       capture_output=True, text=True)
    stamps = p.stdout.split()
    if p.returncode != 0:
        return 0
    return int(stamps[0]) if stamps else float("inf")


def result_files(results: Path) -> list[Path]:
    """The ``bab_compare*.json`` files of ``results``, oldest first."""
    def order(path: Path):
        date = re.search(r"\d{4}-\d{2}-\d{2}", path.name)
        return date.group() if date else "", _added(path), path.name
    return sorted(results.glob("bab_compare*.json"), key=order)


def counts_for(report: dict, tool: str) -> bool:
    """Whether ``tool``'s rows of a results file count: run on the CPU, ours in its default configuration."""
    machine = report.get("machine") or {}
    if machine.get("device", "cpu") != "cpu" or machine.get("gpu"):
        return False
    return tool != "ours" or (not report.get("ours_args") and report.get("certifier", "auto") == "auto")


def _key(onnx: str, vnnlib: str) -> tuple[str, str]:
    return Path(onnx).name, Path(vnnlib).name  # the names, as bab_compare.py's --only matches them


def latest_rows(files: list[Path], benchmark: str, lines: list[list[str]]) -> dict[str, dict]:
    """Tool -> CSV line key -> its latest row at the line's own limit (with ``official`` and ``file``)."""
    limits = {_key(onnx, vnnlib): float(limit) for onnx, vnnlib, limit in lines}
    chosen = {t: {} for t in TOOLS}
    for path in files:
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"error: {path}: {exc}") from None
        for row in ((report.get("benchmarks") or {}).get(benchmark) or {}).get("rows", []):
            key = _key(row["onnx"], row["vnnlib"])
            if key not in limits or abs(float(row.get("timeout_s", -1)) - limits[key]) > 1e-6:
                continue
            for t in TOOLS:
                if t in row and counts_for(report, t):
                    chosen[t][key] = {**row[t], "official": row.get("official"), "file": path.name}
    return chosen


def benchmark_table(lines: list[list[str]], chosen: dict[str, dict]) -> dict:
    """The table row of one benchmark (every figure of the printed table and the bar's counts)."""
    keys = [_key(onnx, vnnlib) for onnx, vnnlib, _ in lines]
    rows = [{t: chosen[t][k] for t in TOOLS if k in chosen[t]} for k in keys]
    for row in rows:
        row["official"] = next((r["official"] for r in row.values() if r.get("official")), None)
    summary = {t: summarise(rows, t) for t in TOOLS}
    if not any(r["official"] for r in rows):
        for s in summary.values():
            s["wrong"] = None  # no official answers to check against
    both = [r for r in rows if all(t in r for t in TOOLS)]
    decided = {t: [r[t]["verdict"] in DECIDED for r in both] for t in TOOLS}
    only = {t: [f"{k[0]}:{k[1]}" for k, r in zip(keys, rows) if all(x in r for x in TOOLS)
                and r[t]["verdict"] in DECIDED and not any(r[x]["verdict"] in DECIDED for x in TOOLS if x != t)]
            for t in TOOLS}
    missing = {t: [f"{k[0]}:{k[1]}" for k in keys if k not in chosen[t]] for t in TOOLS}
    return {"lines": len(keys), "summary": summary, "only": only, "missing": missing,
            "both": {"lines": len(both), **{t: sum(d) for t, d in decided.items()}},
            "files": sorted({r["file"] for row in rows for t, r in row.items() if t in TOOLS})}


def the_bar(tables: dict[str, dict]) -> dict:
    """Issue 26's bar over the lines both tools have rows for (benchmarks without any are left out)."""
    ours, theirs = TOOLS
    judged = {b: t["both"] for b, t in tables.items() if t["both"]["lines"]}
    share = {b: c[ours] >= SHARE * c[theirs] for b, c in judged.items()}
    # ">= theirs" counts only where both tools ran every line (0 = 0 on a few lines proves nothing)
    as_many = [b for b, c in judged.items() if c[ours] >= c[theirs] and c["lines"] == tables[b]["lines"]]
    return {"share_everywhere": all(share.values()), "at_least_as_many": as_many,
            "holds_on_covered_part": bool(judged) and all(share.values()) and len(as_many) >= AT_LEAST_AS_MANY,
            "not_fully_covered": [b for b, t in tables.items() if t["both"]["lines"] < t["lines"]],
            "share": share}


def _fmt(v, p=1) -> str:
    return "-" if v is None else f"{v:.{p}f}"


def print_tables(tables: dict[str, dict], bar: dict, missing: bool) -> None:
    ours, theirs = TOOLS
    print(f"{'benchmark':15} {'lines':>5} {'covered':>9} {'decided ' + ours:>15} {'decided ' + theirs:>18} "
          f"{'wrong':>5} {'s/decided':>11}")
    for b, t in tables.items():
        s = t["summary"]
        dec = {x: f"{s[x]['decided']} ({s[x]['unsat']}+{s[x]['sat']})" for x in TOOLS}
        wrong = "/".join("" if s[x]["wrong"] is None else str(s[x]["wrong"]) for x in TOOLS)
        print(f"{b:15} {t['lines']:>5} {s[ours]['instances']:>4}/{s[theirs]['instances']:<4} {dec[ours]:>15} "
              f"{dec[theirs]:>18} {wrong if wrong != '/' else '':>5} "
              f"{_fmt(s[ours]['wall_s_per_decided']):>5}/{_fmt(s[theirs]['wall_s_per_decided']):<5}")
        for x in TOOLS:
            if t["only"][x]:
                print(f"  {x} only ({len(t['only'][x])}): {', '.join(t['only'][x])}")
    print(f"\nbar: ours decides >= {SHARE:.0%} of {theirs}'s on every benchmark and >= on {AT_LEAST_AS_MANY}, "
          "on the lines both tools ran:")
    for b, t in tables.items():
        c = t["both"]
        if c["lines"]:
            print(f"  {b:15} {c['lines']:>4}/{t['lines']:<4} lines: {ours} {c[ours]}, {theirs} {c[theirs]}: "
                  f">= {SHARE:.0%} {'yes' if bar['share'][b] else 'NO'}, >= {'yes' if b in bar['at_least_as_many'] else 'no'}")
        else:
            print(f"  {b:15}    0/{t['lines']:<4} lines: no line with rows of both tools")
    print(f"  holds on the covered part: {'yes' if bar['holds_on_covered_part'] else 'no'}"
          + (f" (not fully covered: {', '.join(bar['not_fully_covered'])})" if bar["not_fully_covered"] else ""))
    if missing:
        print("\nstill without a row at the competition's limit (bench/bab_compare.py --only):")
        for b, t in tables.items():
            for x in TOOLS:
                if t["missing"][x]:
                    print(f"  {b} {x} ({len(t['missing'][x])}): --only {','.join(t['missing'][x])}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benchmarks_dir")
    ap.add_argument("--results", default=str(REPO / "bench" / "results"))
    ap.add_argument("--benchmarks", default=BENCHMARKS)
    ap.add_argument("--out", default=None, help="write the table as JSON")
    ap.add_argument("--missing", action="store_true", help="print the --only lists of the lines without a row")
    args = ap.parse_args(argv)
    files = result_files(Path(args.results))
    every_line = argparse.Namespace(skip=0, every=1, first=None, only=None)
    tables = {}
    for b in args.benchmarks.split(","):
        lines = instance_lines(Path(args.benchmarks_dir) / b, every_line)
        tables[b] = benchmark_table(lines, latest_rows(files, b, lines))
    bar = the_bar(tables)
    print_tables(tables, bar, args.missing)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"results": [f.name for f in files], "benchmarks": tables, "bar": bar},
                                             indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
