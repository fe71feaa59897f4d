"""Branch and bound side by side with alpha-beta-CROWN: the same VNN-COMP instances, the same time limits,
one run at a time on this machine (issue 26, acceptance 3).

    .venv/bin/python bench/bab_compare.py BENCHMARKS_DIR --benchmarks mnistfc,acasxu [--first 20] [--every 1]
        [--timeout CAP_S] [--abcrown ../abcrown] [--reference RESULTS_CSV_DIR] [--certifier auto]
        [--tools ours,abcrown] [--ours-args "--bab-beta off"] [--out bench/results/bab_compare.json]
        [--device cuda --abcrown-python python3]     # both tools on a GPU (bench/gpu_session.sh)

``BENCHMARKS_DIR`` holds the benchmark folders (a checkout of ``stanleybak/vnncomp2021``'s ``benchmarks/``);
each instance line ``onnx,vnnlib,timeout`` of a benchmark's CSV is run by

* **ours**: ``cf-run --net ONNX --vnnlib VNNLIB --timeout T --results FILE --json FILE`` (VNN-COMP mode:
  one pass, the counterexample search, then branch and bound, ``--bab auto``);
* **abcrown**: ``abcrown.py --config CFG --onnx_path ONNX --vnnlib_path COPY --timeout T --results_file
  FILE`` in ``ABCROWN/src/complete_verifier`` with ``ABCROWN/venv`` (set up by
  ``../shared/peers/abcrown/setup.sh``; the property is copied into a scratch folder because it writes
  ``PROP.vnnlib.compiled`` beside it), killed at ``T`` plus a grace of ``GRACE_S`` (its attack does not
  look at the clock): then ``timeout``.  ``CFG`` is ``../shared/peers/abcrown/<benchmark>_cpu.yaml`` when
  it exists (acasxu, mnist_fc), else the tool's own VNN-COMP 2021 configuration with ``device: cpu``, no
  CSV paths, and plain branch and bound instead of a MIP (``bab-refine``/``mip`` need gurobi) and without
  cutting planes (oval21's come from CPLEX).

Per benchmark and tool: the instances run, decided (``unsat``/``sat``), wrong answers against the official
answers (the majority of the competition's verifiers, ``--reference``: ``results_csv/`` of
``stanleybak/vnncomp2021_results``), the mean wall time per decided instance, the mean CPU time (the child's
user + system seconds: the machine is shared, wall times are not), and subdomains per second (ours:
``bab.domains_per_second`` of the JSON; abcrown: its last ``N domains visited`` over its ``Cumulative time``),
and per disjunct (``disjunct_domains_per_second``): alpha-beta-CROWN searches each disjunct of a property in
a tree of its own (a robustness property's 9 ``y_j >= y_true`` are 9 trees of one row each), where one of our
subdomains bounds every disjunct its parent left open (9 rows at once), so ours count once per open disjunct
(``bab.disjunct_domains_per_second``) and theirs as they are.
Results go to ``--out`` as JSON with one row per instance and tool, written again after every instance (a
benchmark's ``"complete": false`` until its last instance: a run stopped early keeps what it measured).  ``--skip S`` / ``--every K`` / ``--first N`` pick a
subset of each benchmark's CSV lines; ``--only ONNX:VNNLIB,...`` keeps the instances named (e.g. those another run left
open, to run at the competition's limits).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vnncomp import instances_csv, reference_verdicts, votes_for  # noqa: E402 - the sibling bench script

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO.parent / "shared" / "peers" / "abcrown"
#: seconds abcrown may run past its time limit before it is killed (its first attack ignores the clock)
GRACE_S = 10.0
#: abcrown configurations of VNN-COMP 2021 (complete_verifier/exp_configs/...) per benchmark folder
ABCROWN_CONFIGS = {
    "mnistfc": "mnist_fc_cpu.yaml", "acasxu": "acasxu_cpu.yaml",
    "oval21": "exp_configs/vnncomp21/oval21.yaml", "eran": "exp_configs/vnncomp21/eran_mlp.yaml",
    "eran/sigmoid": "exp_configs/vnncomp21/eran_sigmoid.yaml",
    "cifar10_resnet": "exp_configs/vnncomp21/cifar10-resnet.yaml",
}
#: on a GPU, the tool's own configurations where the peers folder has a CPU variant
ABCROWN_GPU_CONFIGS = {"mnistfc": "exp_configs/vnncomp21/mnistfc.yaml", "acasxu": "exp_configs/vnncomp21/acasxu.yaml"}
DECIDED = ("unsat", "sat")


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_ours(onnx: Path, vnnlib: Path, limit: float, tmp: Path, certifier: str, extra: list[str] = ()) -> dict:
    results, out = tmp / "ours.txt", tmp / "ours.json"
    for f in (results, out):
        f.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "cfmlir.tools.cf_run", "--certifier", certifier, "--net", str(onnx),
           "--vnnlib", str(vnnlib), "--timeout", str(limit), "--results", str(results), "--json", str(out), "--quiet", *extra]
    t0, c0 = time.perf_counter(), _child_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall, cpu = time.perf_counter() - t0, _child_cpu() - c0
    verdict = results.read_text().split("\n")[0].strip() if results.is_file() else "error"
    row = {"verdict": verdict, "wall_s": wall, "cpu_s": cpu, "rc": proc.returncode}
    if out.is_file():
        bab = json.loads(out.read_text()).get("bab")
        if bab:
            row.update(domains=bab["domains"], domains_per_second=bab["domains_per_second"], stopped=bab["stopped"],
                       disjunct_domains_per_second=bab.get("disjunct_domains_per_second"))
    if verdict == "error":
        row["error"] = (proc.stderr.strip().splitlines() or ["?"])[-1][:200]
        row["log_tail"] = proc.stderr.strip().splitlines()[-25:]
    return row


def abcrown_config(benchmark: str, onnx: str, abcrown: Path, tmp: Path, device: str = "cpu") -> Path | None:
    """The configuration abcrown runs an instance with (ERAN's sigmoid nets have their own).  On a GPU
    (``device`` not ``cpu``) always the tool's own VNN-COMP 2021 configuration (the ``*_cpu.yaml`` of the
    peers folder cut the attack's restarts for 2 CPU cores), with the same MIP-free rewriting."""
    if benchmark == "eran" and "sigmoid" in onnx:
        benchmark = "eran/sigmoid"
    name = ABCROWN_CONFIGS.get(benchmark)
    if name is None:
        return None
    if device == "cpu" and (PEERS / name).is_file():
        return PEERS / name
    name = ABCROWN_GPU_CONFIGS.get(benchmark, name)
    src = abcrown / "src" / "complete_verifier" / name
    if not src.is_file():
        return None
    # one instance at a time on the CPU: no CSV mode, and plain branch and bound where the GPU configuration
    # refines with a MIP (gurobi, not licensed here), as ../shared/peers/abcrown/*_cpu.yaml do
    text = re.sub(r"^  (root_path|csv_name):.*\n", "", src.read_text(), flags=re.M)
    text = re.sub(r"complete_verifier: (bab-refine|mip)", "complete_verifier: bab", text)
    # oval21's cutting planes come from CPLEX (not installed here): branch and bound without cuts
    text = re.sub(r"^(  cut:\n(?:    .*\n)*?)    enabled: True\n", r"\1    enabled: False\n", text, flags=re.M)
    text = re.sub(r"cplex_cuts: True", "cplex_cuts: False", text)
    cpu = tmp / f"{benchmark.replace('/', '_')}_{device.replace(':', '')}.yaml"
    text = re.sub(r"^  device: .*\n", "", text, flags=re.M)
    if re.search(r"^general:", text, re.M):
        text = re.sub(r"^general:\n", f"general:\n  device: {device}\n", text, count=1, flags=re.M)
    else:
        text = f"general:\n  device: {device}\n" + text
    cpu.write_text(text)
    return cpu


def run_abcrown(onnx: Path, vnnlib: Path, limit: float, tmp: Path, abcrown: Path, config: Path,
                python: str | None = None) -> dict:
    work = tmp / "abcrown"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    prop = work / vnnlib.name
    shutil.copy(vnnlib, prop)
    results = work / "out.txt"
    cmd = [python or str(abcrown / "venv" / "bin" / "python"), "abcrown.py", "--config", str(config), "--onnx_path", str(onnx),
           "--vnnlib_path", str(prop), "--timeout", str(limit), "--results_file", str(results)]
    t0, c0 = time.perf_counter(), _child_cpu()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=abcrown / "src" / "complete_verifier",
                              timeout=limit + GRACE_S, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        log, killed = proc.stdout + proc.stderr, False
    except subprocess.TimeoutExpired as exc:
        log, killed = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or ""), True
    wall, cpu = time.perf_counter() - t0, _child_cpu() - c0
    verdict = "timeout" if killed else (results.read_text().split("\n")[0].strip() if results.is_file() else "error")
    row = {"verdict": verdict, "wall_s": wall, "cpu_s": cpu}
    visited = re.findall(r"(\d+) domains visited", log)
    spent = re.findall(r"Cumulative time: ([\d.]+)", log)
    if visited and spent and float(spent[-1]) > 0:
        rate = int(visited[-1]) / float(spent[-1])  # its subdomains are per disjunct already (a tree each)
        row.update(domains=int(visited[-1]), domains_per_second=rate, disjunct_domains_per_second=rate)
    if verdict == "error":
        row["error"] = (log.strip().splitlines() or ["?"])[-1][:200]
        row["log_tail"] = log.strip().splitlines()[-25:]
    return row


def _gpu_name(device: str) -> str | None:
    if device == "cpu":
        return None
    import torch  # only for the name of the GPU the run used

    return torch.cuda.get_device_name(torch.device(device)) if torch.cuda.is_available() else None


def instance_lines(folder: Path, args) -> list[list[str]]:
    """``[onnx, vnnlib, limit]`` of the benchmark ``folder``'s instances CSV, the subset ``--skip``/``--every``/
    ``--first`` chooses (one line of error and exit without a CSV)."""
    csv_path = instances_csv(folder)
    if csv_path is None:
        raise SystemExit(f"error: {folder}: no instances CSV")
    lines = [l.split(",") for l in csv_path.read_text().splitlines() if l.strip() and not l.startswith("#")]
    lines = lines[args.skip::args.every][:args.first]
    if getattr(args, "only", None):
        wanted = [tuple(item.split(":", 1)) for item in args.only.split(",")]
        if any(len(w) != 2 for w in wanted):
            raise SystemExit(f"error: --only {args.only}: give ONNX:VNNLIB pairs, comma-separated")
        lines = [l for l in lines if (Path(l[0]).name, Path(l[1]).name) in
                 {(Path(o).name, Path(v).name) for o, v in wanted}]
    return lines


def majority(reference: dict | None, benchmark: str, onnx: str, vnnlib: str) -> str | None:
    votes = votes_for(reference or {}, benchmark, onnx, vnnlib)
    if not votes or votes["unsat"] == votes["sat"]:
        return None
    return "unsat" if votes["unsat"] > votes["sat"] else "sat"


def summarise(rows: list[dict], tool: str) -> dict:
    mine = [r[tool] for r in rows if tool in r]
    decided = [r for r in mine if r["verdict"] in DECIDED]
    rates = [r["domains_per_second"] for r in mine if r.get("domains_per_second")]
    per_disjunct = [r["disjunct_domains_per_second"] for r in mine if r.get("disjunct_domains_per_second")]
    return {"instances": len(mine), "unsat": sum(r["verdict"] == "unsat" for r in mine),
            "sat": sum(r["verdict"] == "sat" for r in mine), "decided": len(decided),
            "wrong": sum(1 for r in rows if tool in r and r[tool]["verdict"] in DECIDED and r.get("official")
                         and r[tool]["verdict"] != r["official"]),
            "wall_s_per_decided": sum(r["wall_s"] for r in decided) / len(decided) if decided else None,
            "cpu_s_per_decided": sum(r["cpu_s"] for r in decided) / len(decided) if decided else None,
            "domains_per_second": sum(rates) / len(rates) if rates else None,
            "disjunct_domains_per_second": sum(per_disjunct) / len(per_disjunct) if per_disjunct else None}


def _save(out, report) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(report, indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benchmarks_dir")
    ap.add_argument("--benchmarks", default="mnistfc,acasxu")
    ap.add_argument("--first", type=int, default=None)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--skip", type=int, default=0, help="start at this CSV line (0-based)")
    ap.add_argument("--timeout", type=float, default=None, help="cap the CSV's time limits at S seconds")
    ap.add_argument("--only", default=None,
                    help="only these instances of the subset: ONNX:VNNLIB file names, comma-separated")
    ap.add_argument("--abcrown", default=str(REPO.parent / "abcrown"))
    ap.add_argument("--reference", default=None)
    ap.add_argument("--certifier", default="auto", help="cf-run --certifier (auto: alpha_deeppoly; deeppoly on residual ReLU nets, searching with alpha_deeppoly)")
    ap.add_argument("--ours-args", default="", help="more cf-run arguments for ours, e.g. '--bab-beta off'")
    ap.add_argument("--tools", default="ours,abcrown")
    ap.add_argument("--device", default="cpu",
                    help="torch device of both tools (ours: cf-run --device; abcrown: general: device); e.g. cuda")
    ap.add_argument("--abcrown-python", default=None,
                    help="the Python abcrown runs with (default ABCROWN/venv/bin/python, what setup.sh makes)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "bab_compare.json"))
    args = ap.parse_args(argv)
    tools = args.tools.split(",")
    reference = reference_verdicts(args.reference) if args.reference else None
    abcrown = Path(args.abcrown)
    if "abcrown" in tools and args.abcrown_python is None and not (abcrown / "venv" / "bin" / "python").is_file():
        raise SystemExit(f"error: {abcrown}: no alpha-beta-CROWN set-up (../shared/peers/abcrown/setup.sh)")
    ours_extra = shlex.split(args.ours_args) + (["--device", args.device] if args.device != "cpu" else [])
    report = {"machine": {"cpus": os.cpu_count(), "load_at_start": os.getloadavg(), "device": args.device,
                          "gpu": _gpu_name(args.device)}, "timeout_override_s": args.timeout, "ours_args": ours_extra,
              "certifier": args.certifier, "benchmarks": {}}
    print(f"{'benchmark':16} {'tool':8} {'inst':>4} {'unsat':>5} {'sat':>4} {'decided':>7} {'wrong':>5} "
          f"{'wall s/dec':>10} {'cpu s/dec':>9} {'dom/s':>8} {'disj-dom/s':>10}")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        for bench in args.benchmarks.split(","):
            folder = Path(args.benchmarks_dir) / bench
            lines = instance_lines(folder, args)
            rows = []
            for onnx, vnnlib, limit in lines:
                limit = min(args.timeout, float(limit)) if args.timeout else float(limit)
                row = {"onnx": onnx, "vnnlib": vnnlib, "timeout_s": limit,
                       "official": majority(reference, bench, onnx, vnnlib)}
                onnx_p, vnnlib_p = folder / onnx, folder / vnnlib
                if "ours" in tools:
                    row["ours"] = run_ours(onnx_p, vnnlib_p, limit, tmp, args.certifier, ours_extra)
                config = abcrown_config(bench, onnx, abcrown, tmp, args.device) if "abcrown" in tools else None
                if config is not None:
                    row["abcrown"] = run_abcrown(onnx_p, vnnlib_p, limit, tmp, abcrown, config, args.abcrown_python)
                rows.append(row)
                # after every instance: a run stopped early keeps what it measured ("complete": false)
                report["benchmarks"][bench] = {"summary": {t: summarise(rows, t) for t in tools}, "rows": rows,
                                               "complete": False}
                _save(args.out, report)
                print(f"  {onnx} {vnnlib}: " + ", ".join(f"{t} {row[t]['verdict']} {row[t]['wall_s']:.1f}s"
                                                         for t in tools if t in row)
                      + (f" (official {row['official']})" if row["official"] else ""), flush=True)
            summary = {t: summarise(rows, t) for t in tools}
            report["benchmarks"][bench] = {"summary": summary, "rows": rows, "complete": True}
            for t, s in summary.items():
                fmt = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
                print(f"{bench:16} {t:8} {s['instances']:>4} {s['unsat']:>5} {s['sat']:>4} {s['decided']:>7} "
                      f"{s['wrong']:>5} {fmt(s['wall_s_per_decided']):>10} {fmt(s['cpu_s_per_decided']):>9} "
                      f"{fmt(s['domains_per_second'], 0):>8} {fmt(s['disjunct_domains_per_second'], 0):>10}", flush=True)
            _save(args.out, report)
    return 1 if any(s["wrong"] for b in report["benchmarks"].values() for t, s in b["summary"].items() if t == "ours") else 0


if __name__ == "__main__":
    sys.exit(main())
