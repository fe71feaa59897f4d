"""Coverage of VNN-COMP benchmarks, measured: runs benchmark folders through ``cf-run --instances`` and
prints a table per benchmark (issue 16).

    .venv/bin/python bench/vnncomp.py DIR [DIR ...] [--certifier deeppoly] [--timeout S] [--device cpu]
                                      [--dtype float64] [--out bench/results/vnncomp.json]

``DIR`` is a benchmark folder holding ``instances.csv`` (or 2021's ``<name>_instances.csv``; the competition's layout: ``onnx,vnnlib,timeout``
per line, paths relative to the folder, ``.gz`` files allowed), or a folder whose sub-folders are such
benchmarks (e.g. a checkout of ``vnncomp2022_benchmarks/benchmarks``).  Per benchmark: instances,
how many loaded and were analysed (any verdict but ``error``), ``unsat``/``sat``/``unknown``/``timeout``/
``error`` counts, the most common error reasons, and the time (instances, and starting the analysis
process); while it runs, one line per instance on stderr (``mlp [1/2] net.onnx p.vnnlib: unsat (0.4s)``).
``--timeout`` replaces the CSV's per-instance timeouts (useful for a quick coverage run); ``--cap S``
keeps the competition's timeouts but cuts each to at most ``S`` seconds, and ``--first N`` runs only the
first ``N`` instances of each benchmark (a subset that fits a CPU budget; both are recorded in the JSON).  The JSON is written again after every
benchmark, so a run stopped part-way keeps the benchmarks it finished.
Every verdict comes from ``cf-run``, whose ``sat`` answers carry a confirmed counterexample.
``--optimize N`` is passed on (N steps of the certifier's parameters, e.g. ``--certifier alpha_deeppoly``);
``--bab auto|on|off`` is passed on (branch and bound after one pass, :mod:`cfmlir.bab`; ``off`` measures
one pass alone, as issue 25's with/without ``--optimize`` counts do);
``--split auto|on|off`` is passed on (input splitting, :mod:`cfmlir.input_splitting`); the ``split``
column counts the instances that splitting decided.

``--reference DIR`` compares the verdicts with other verifiers' answers: every ``*.csv`` of ``DIR``
in the competition's results format (``benchmark,onnx,vnnlib,prepare_s,result,run_s``, ``holds``/
``violated`` or ``unsat``/``sat``; e.g. ``results_csv/`` of ``stanleybak/vnncomp2021_results``), or,
when ``DIR`` has none, every ``TOOL/YEAR_BENCHMARK/results.csv`` below it (the layout of 2022 on, e.g.
``ChristopherBrix/vnncomp2024_results``: one folder per tool, one per benchmark, same columns).  An
instance's reference is the majority of the tools that decided it (none on a tie), leaving out the answers the
organisers withdrew (:data:`WITHDRAWN`: RPM's mnistfc of 2021); the ``vs ref``
column is ``agree/disagree`` over the instances both decided, each disagreement listed in the JSON.

``--coverage`` runs nothing: it loads every network each benchmark's CSV names and prints, as a
Markdown table, which shipped certifiers have a rule for every layer kind those networks make (``✓``,
else the missing rules), or why a network does not load (a file missing from the checkout, an
unsupported op) -- the benchmark x certifier table of ``docs/vnncomp.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

VERDICTS = ("unsat", "sat", "unknown", "timeout", "error")
CF_RUN = [sys.executable, "-m", "cfmlir.tools.cf_run"]


def instances_csv(folder: Path) -> Path | None:
    """The folder's ``instances.csv`` (VNN-COMP 2022 on), or its one ``*_instances.csv`` (2021)."""
    if (folder / "instances.csv").is_file():
        return folder / "instances.csv"
    named = sorted(folder.glob("*_instances.csv")) if folder.is_dir() else []
    return named[0] if len(named) == 1 else None


def benchmarks(dirs: list[str]) -> list[Path]:
    """Every benchmark folder (one with an instances CSV) named or directly below a named folder."""
    found = []
    for d in map(Path, dirs):
        if instances_csv(d) is not None:
            here = [d]
        else:
            here = sorted(p for p in d.iterdir() if instances_csv(p) is not None) if d.is_dir() else []
        if not here:
            raise SystemExit(f"error: {d}: no instances.csv in it or in its sub-folders")
        found += here
    return found


def reason(message: str | None) -> str:
    """The kind of an error message (``error: CSV:LINE: net.onnx: unsupported ONNX op 'X' ...`` ->
    ``unsupported ONNX op 'X'``)."""
    text = (message or "").strip()
    for key in ("unsupported ONNX op", "has no rule for", "no such", "out of memory"):
        i = text.find(key)
        if i >= 0:
            return text[i:].split(" at node")[0].split(" (layer")[0][:80]
    return text.split(": ")[-1][:80] if text else "?"


def _within(benchmark: str, path: str) -> str:
    """A file's path within its benchmark's folder, without ``./`` parts or ``.gz``:
    ``vnncomp2024_benchmarks/benchmarks/safenlp/./onnx/medical/p.onnx`` -> ``onnx/medical/p.onnx``; a path
    that does not name the folder stays as it is (``./net.onnx.gz`` -> ``net.onnx``)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if benchmark in parts:
        parts = parts[len(parts) - parts[::-1].index(benchmark):]
    return "/".join(parts).removesuffix(".gz")


def _key(benchmark: str, onnx: str, vnnlib: str) -> tuple[str, str, str]:
    """An instance's name across result files: the benchmark and the files' paths within its folder.  Not
    the files' names alone: safenlp's ``onnx/medical/perturbations_0.onnx`` and ``vnnlib/medical/
    hyperrectangle_1101.vnnlib`` have namesakes in ``ruarobot/``, another net and property."""
    return benchmark, _within(benchmark, onnx), _within(benchmark, vnnlib)


def _names(key: tuple[str, str, str]) -> tuple[str, str, str]:
    return key[0], key[1].rsplit("/", 1)[-1], key[2].rsplit("/", 1)[-1]


def votes_for(reference: dict, benchmark: str, onnx: str, vnnlib: str, by_names: dict | None = None) -> Counter | None:
    """The reference votes on an instance: those on its files' paths within the benchmark folder
    (:func:`_key`), else -- a results file whose paths name the folder differently -- those on its files'
    names where exactly one instance has them.  ``by_names`` is :func:`names_index` of ``reference``, made
    once for many calls."""
    key = _key(benchmark, onnx, vnnlib)
    if key in reference:
        return reference[key]
    same = (by_names if by_names is not None else names_index(reference)).get(_names(key), [])
    return reference[same[0]] if len(same) == 1 else None


def names_index(reference: dict) -> dict:
    """``{(benchmark, onnx name, vnnlib name): [keys of reference with those names]}``."""
    out: dict = {}
    for key in reference:
        out.setdefault(_names(key), []).append(key)
    return out


#: a reference result's meaning
_REFERENCE = {"holds": "unsat", "unsat": "unsat", "violated": "sat", "sat": "sat"}


def result_files(folder: str) -> list[Path]:
    """The results CSVs of ``folder``: its own ``*.csv`` (2021), else ``TOOL/YEAR_BENCHMARK/results.csv``
    below it (2022 on)."""
    files = sorted(Path(folder).glob("*.csv"))
    return files or sorted(Path(folder).glob("*/*/results.csv"))


#: answers the organisers withdrew from their own scoring, as ``(tool, benchmark)``: VNN-COMP 2021 removed
#: RPM's mnistfc answers after the competition (a VNN-LIB parsing bug: ``stanleybak/vnncomp2021_results``,
#: README "Changes from VNNCOMP Presentation Results" 2 and ``skip_benchmarks['RPM']`` in process_results.py).
#: Counted, they were the only answer of 14 mnistfc instances (all ``violated``, no other tool decided them)
#: and tied 6 that one tool proved.
WITHDRAWN = {("RPM", "mnistfc")}


def result_tool(path: Path) -> str:
    """The tool a results CSV is from: its name (2021's ``TOOL.csv``) or its folder (``TOOL/YEAR_BENCHMARK/results.csv``)."""
    return path.parent.parent.name if path.name == "results.csv" else path.stem


def reference_verdicts(folder: str) -> dict:
    """``{instance key: Counter(unsat=n, sat=m)}`` over every results CSV of ``folder`` (see the module
    docstring), without the answers in :data:`WITHDRAWN`."""
    files = result_files(folder)
    if not files:
        raise SystemExit(f"error: {folder}: no results CSV in it (neither *.csv nor TOOL/YEAR_BENCHMARK/results.csv)")
    out: dict = {}
    for f in files:
        tool = result_tool(f)
        for row in csv.reader(f.read_text(errors="replace").splitlines()):
            verdict = row[4].strip().lower() if len(row) >= 5 else ""  # a-b-CROWN's 2021 CSV writes SAT/UNSAT
            if verdict in _REFERENCE and (tool, row[0]) not in WITHDRAWN:
                out.setdefault(_key(row[0], row[1], row[2]), Counter())[_REFERENCE[verdict]] += 1
    return out


def compare(rows: list[dict], benchmark: str, reference: dict) -> dict:
    """Our decided verdicts against the reference majority: ``{"agree", "disagree", "disagreements"}``."""
    agree, disagreements, by_names = 0, [], names_index(reference)
    for r in rows:
        votes = votes_for(reference, benchmark, r["onnx"], r["vnnlib"], by_names)
        if r["verdict"] not in ("unsat", "sat") or not votes or votes["unsat"] == votes["sat"]:
            continue
        majority = "unsat" if votes["unsat"] > votes["sat"] else "sat"
        if r["verdict"] == majority:
            agree += 1
        else:
            disagreements.append({"onnx": r["onnx"], "vnnlib": r["vnnlib"], "ours": r["verdict"], "votes": dict(votes)})
    return {"agree": agree, "disagree": len(disagreements), "disagreements": disagreements}


def subset_csv(csv_path: Path, tmp: Path, cap: float | None, first: int | None) -> Path:
    """The instances CSV to run: ``csv_path`` itself, or (``--cap``/``--first``) a copy in ``tmp`` with
    absolute paths, its first ``first`` lines, each timeout cut to at most ``cap`` seconds."""
    if cap is None and first is None:
        return csv_path
    rows = [row for row in csv.reader(csv_path.read_text().splitlines()) if row and not row[0].startswith("#")]
    out = []
    for row in rows[:first]:
        if len(row) != 3:  # cf-run reports a malformed CSV itself: pass the line on unchanged
            out.append(row)
            continue
        onnx_text, vnnlib_text, timeout_text = (x.strip() for x in row)
        try:
            limit = float(timeout_text)
            timeout_text = f"{min(limit, cap):g}" if cap is not None else timeout_text
        except ValueError:
            pass
        out.append([str((csv_path.parent / onnx_text).absolute()), str((csv_path.parent / vnnlib_text).absolute()),
                    timeout_text])
    path = tmp / "instances.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(out)
    return path


def cf_run_command(csv_path: Path, out_json: Path, args) -> list[str]:
    """The ``cf-run --instances`` command line for one benchmark's (subset) CSV, with the flags passed on."""
    cmd = CF_RUN + ["--certifier", args.certifier, "--instances", str(csv_path), "--json", str(out_json),
                    "--device", args.device, "--dtype", args.dtype, "--split", args.split, "--bab", args.bab]
    if args.timeout is not None:
        cmd += ["--timeout", str(args.timeout)]
    if args.optimize:
        cmd += ["--optimize", str(args.optimize)]
    return cmd


def run_with_progress(cmd: list[str], name: str, stderr_path: Path) -> str:
    """Runs ``cf-run --instances``, echoing each of its per-instance lines (``[k/N] onnx vnnlib: verdict
    (s)``) to stderr as it comes, prefixed with the benchmark's name (a full-limit run takes hours);
    returns cf-run's stderr."""
    with stderr_path.open("w+") as err, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True) as p:
        for line in p.stdout:
            if line.startswith("["):
                print(f"{name} {line.rstrip()}", file=sys.stderr, flush=True)
        p.wait()
        err.seek(0)
        return err.read()


def run_benchmark(folder: Path, args) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out_json = Path(tmp) / "out.json"
        csv_path = subset_csv(instances_csv(folder), Path(tmp), args.cap, args.first)
        stderr = run_with_progress(cf_run_command(csv_path, out_json, args), folder.name, Path(tmp) / "stderr.txt")
        if not out_json.is_file():  # the run could not start (malformed CSV, bad flags): one line says why
            msg = (stderr.strip().splitlines() or ["?"])[-1]
            return {"benchmark": folder.name, "failed": msg}
        d = json.loads(out_json.read_text())
    rows = d["instances"]
    counts = Counter(r["verdict"] for r in rows)
    errors = Counter(reason(r.get("message")) for r in rows if r["verdict"] == "error")
    split = sum(1 for r in rows if r["verdict"] in ("unsat", "sat") and "split" in (r.get("result") or {}))
    return {"benchmark": folder.name, "instances": len(rows), "analysed": len(rows) - counts["error"],
            **{v: counts[v] for v in VERDICTS}, "split": split, "error_reasons": dict(errors.most_common()),
            "instances_s": d["times"]["instances_s"], "startup_s": d["times"]["startup_s"], "rows": rows}


def coverage(folder: Path) -> dict:
    """``{"benchmark", "networks", "loaded", "kinds", "problems", "rules": {certifier: missing rules}}``
    for one benchmark folder (see ``--coverage``)."""
    from cfmlir.tools.onnx_support import CERTIFIER_FILES, certifier_rules
    from cfruntime.contract import OPERATOR_OF_KIND
    from cfruntime.gzio import existing
    from cfruntime.errors import UserError
    from cfruntime.network import load_onnx

    csv_path = instances_csv(folder)
    nets = sorted({row[0].strip() for row in csv.reader(csv_path.read_text().splitlines()) if row and not row[0].startswith("#")})
    kinds, problems, loaded = set(), Counter(), 0
    for name in nets:
        path = existing(csv_path.parent / name)
        if not path.is_file():
            problems["file missing from the checkout"] += 1
            continue
        try:
            net = load_onnx(path)
        except UserError as e:
            problems[reason(str(e))] += 1
            continue
        except Exception as e:  # noqa: BLE001 - a protobuf decode error (an LFS pointer) and the like
            problems[f"cannot read ({type(e).__name__})"] += 1
            continue
        loaded += 1
        kinds |= {layer.kind for layer in net.layers[1:]}
    needed = {OPERATOR_OF_KIND[k] for k in kinds}
    rules = {c: sorted(needed - certifier_rules(c)) for c in CERTIFIER_FILES}
    return {"benchmark": folder.name, "networks": len(nets), "loaded": loaded, "kinds": sorted(kinds),
            "problems": dict(problems), "rules": rules}


def coverage_head() -> str:
    """The ``--coverage`` table's head (two Markdown lines)."""
    from cfmlir.tools.onnx_support import CERTIFIER_FILES

    head = ["benchmark", "networks loaded", "layer kinds", *CERTIFIER_FILES, "not loaded"]
    return "| " + " | ".join(head) + " |\n" + "|" + "---|" * len(head)


def coverage_line(r: dict) -> str:
    """One ``--coverage`` row as a Markdown table line."""
    from cfmlir.tools.onnx_support import CERTIFIER_FILES

    kinds = ", ".join(k for k in r["kinds"] if k != "affine") or "affine"
    marks = [("–" if not r["loaded"] else ("✓" if not r["rules"][c] else "no " + ", ".join(r["rules"][c])))
             for c in CERTIFIER_FILES]
    why = "; ".join(f"{n}x {k}" for k, n in r["problems"].items())
    return f"| {r['benchmark']} | {r['loaded']}/{r['networks']} | {kinds} | " + " | ".join(marks) + f" | {why} |"


def coverage_table(rows: list[dict]) -> str:
    """The ``--coverage`` rows as a Markdown table."""
    return "\n".join([coverage_head(), *map(coverage_line, rows)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--certifier", default="deeppoly")
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--cap", type=float, default=None, metavar="S", help="cut each CSV timeout to at most S seconds")
    ap.add_argument("--first", type=int, default=None, metavar="N", help="only the first N instances of each benchmark")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--split", default="auto", choices=("auto", "on", "off"))
    ap.add_argument("--bab", default="auto", choices=("auto", "on", "off"), help="passed on to cf-run (off: one pass)")
    ap.add_argument("--reference", default=None, metavar="DIR", help="other verifiers' results CSVs to compare with")
    ap.add_argument("--out", default="bench/results/vnncomp.json")
    ap.add_argument("--coverage", action="store_true", help="load the networks only: the benchmark x certifier table")
    ap.add_argument("--optimize", type=int, default=0, metavar="N",
                    help="passed on to cf-run: N optimisation steps of a certifier's parameters (alpha_deeppoly)")
    args = ap.parse_args()
    if args.cap is not None and not args.cap > 0:
        ap.error(f"--cap must be a positive number of seconds, not {args.cap:g}")
    if args.first is not None and args.first < 1:
        ap.error(f"--first must be at least 1, not {args.first}")
    if args.optimize < 0:
        ap.error(f"--optimize must be at least 0, not {args.optimize}")
    if args.coverage:
        print(coverage_head(), flush=True)
        rows = []
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        for folder in benchmarks(args.dirs):  # each row as it comes (big networks load for minutes)
            rows.append(coverage(folder))
            print(coverage_line(rows[-1]), flush=True)
            Path(args.out).write_text(json.dumps({"coverage": rows}, indent=1) + "\n")
        return 0
    reference = reference_verdicts(args.reference) if args.reference else None
    results = []
    print(f"{'benchmark':24} {'inst':>5} {'analysed':>8} {'unsat':>5} {'sat':>4} {'unknown':>7} {'timeout':>7} "
          f"{'error':>5} {'split':>5} {'time s':>8} {'vs ref':>7}  most common error")
    for folder in benchmarks(args.dirs):
        r = run_benchmark(folder, args)
        results.append(r)
        if "failed" in r:
            print(f"{r['benchmark']:24} not run: {r['failed']}", flush=True)
            continue
        vs = "-"
        if reference is not None:
            r["reference"] = compare(r["rows"], r["benchmark"], reference)
            vs = f"{r['reference']['agree']}/{r['reference']['disagree']}"
        top = next(iter(r["error_reasons"].items()), None)
        print(f"{r['benchmark']:24} {r['instances']:5d} {r['analysed']:8d} {r['unsat']:5d} {r['sat']:4d} {r['unknown']:7d} "
              f"{r['timeout']:7d} {r['error']:5d} {r['split']:5d} {r['instances_s']:8.2f} {vs:>7}  "
              f"{f'{top[1]}x {top[0]}' if top else ''}", flush=True)
        _write(args, results)  # after every benchmark: a run stopped later keeps the benchmarks it finished
    _write(args, results)
    return 0


def _write(args, results: list) -> None:
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"certifier": args.certifier, "device": args.device, "dtype": args.dtype,
                                          "timeout_override_s": args.timeout, "cap_s": args.cap, "optimize": args.optimize, "first": args.first, "split": args.split,
                                          "bab": args.bab,
                                          "reference": args.reference, "benchmarks": results}, indent=1, allow_nan=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
