"""Benchmark: every certifier x shared network, in the paper's four modes (not a test).

    python bench/certify.py                              # the default selection (see --help)
    python bench/certify.py --certifiers deeppoly,ibp --nets mnist_relu_6_100 --modes all --n 100
    python bench/certify.py --certifiers deepz,polyzono,zid --nets cifar_relu_7_1024 --modes CF --dtype float32 \
        --n 20 --batch 20 --no-compile-times --out bench/results/memory_cifar_7x1024.json    # memory

For each (certifier, network, mode) one child process certifies the first ``--n`` images at the
paper's epsilon for that network with the public API (``cfmlir.certify``, the compiled engine; batch
100 for fully-connected nets, 10 for conv nets, as in the paper, or ``--batch``; a batch that runs out
of memory is split, and the run's ``batch_used`` says so) and reports the number of certified images,
the analysis time (``certify``'s ``analysis_s``; compilation excluded: the emitted module is cached)
and the peak resident memory of the process (``ru_maxrss``).  Runs over
``--timeout`` seconds are reported as timeouts.  A separate table gives the uncached compile time of
every shipped certifier (the full default pipeline, in-process).  Prints tables and writes
``bench/results/certify.json``.

Modes: ``CF`` (g-BSCR + rewrites), ``CF-S`` (dense tensors), ``CF-R`` (no domain rewrites),
``CF-R-S`` (neither).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_names
from paper_problems import PAPER_EPSILON, paper_batch_size, paper_files

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
MODES = {"CF": (True, True), "CF-S": (False, True), "CF-R": (True, False), "CF-R-S": (False, False)}

EPS = PAPER_EPSILON  # the paper's epsilons (cfruntime.properties.paper_eps)
DEFAULT_CERTIFIERS = ",".join(BASE_CERTIFIERS)
DEFAULT_NETS = "mnist_relu_3_50,mnist_relu_6_100,mnist_relu_6_500_pgd,mnist_convSmallRELU__DiffAI,cifar_relu_6_100.nchwfix"

#: one run, in a child process (its peak memory is the run's): the public API's certify, whose analysis
#: time (margin networks, bounds, verdicts; compilation excluded) is the figure
CHILD = r"""
import json, resource, sys
import cfmlir
cert_name, net_path, manifest, csv, eps, n, batch, sparse, rewrite, dtype = sys.argv[1:11]
cert = cfmlir.compile(cert_name, rewrite=rewrite == "1")
net = cfmlir.load_network(net_path, manifest=manifest)
prop = cfmlir.robustness_property(net, csv, float(eps), n=int(n))
net(prop.x.double())  # torch's first operations in this process (thread pool, kernels): not the analysis's time
res = cfmlir.certify(cert, net, prop, dtype=dtype, batch_size=int(batch), sparse=sparse == "1")
out = {"certified": int(res.certified.sum()), "correct": int(res.correct.sum()), "analysis_s": res.times["analysis_s"],
       "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
if res.batch_size != int(batch):  # a batch ran out of memory and was split
    out["batch_used"] = res.batch_size
print(json.dumps(out, allow_nan=False))
"""


def run_one(cert: str, net: str, mode: str, n: int, timeout: float, dtype: str = "float64", batch: int | None = None) -> dict:
    sparse, rewrite = MODES[mode]
    batch = batch or paper_batch_size(net)
    try:
        net_path, csv, eps, manifest = paper_files(net)
    except FileNotFoundError as exc:
        return {"status": "error", "error": str(exc)}
    args = [sys.executable, "-c", CHILD, cert, str(net_path), str(manifest), str(csv), repr(eps), str(n), str(batch),
            str(int(sparse)), str(int(rewrite)), dtype]
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    if p.returncode < 0:  # killed by a signal: on these machines, the kernel's out-of-memory killer
        return {"status": "error", "error": f"killed by signal {-p.returncode} (out of memory)"}
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"status": "error", "error": last[:200]}
    return {"status": "ok", **json.loads(p.stdout.strip().splitlines()[-1])}


def compile_times() -> dict[str, float]:
    """Seconds of an uncached compilation of every shipped certifier (the compiler itself: ``cfmlir.compile``
    reads the cache and has no option to bypass it)."""
    from cfmlir.certifiers import certifier_names, certifier_source
    from cfmlir.compiler import compile_certifier, pipeline_for

    compile_certifier(*certifier_source("ibp"), pipeline_for(True), use_cache=False)  # warm imports
    out = {}
    for name in certifier_names():
        t0 = time.perf_counter()
        compile_certifier(*certifier_source(name), pipeline_for(True), use_cache=False)
        out[name] = time.perf_counter() - t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--certifiers", default=DEFAULT_CERTIFIERS,
                    help="comma-separated certifier names, or 'all' (deeppoly_0..8 included)")
    ap.add_argument("--nets", default=DEFAULT_NETS, help="comma-separated network names, or 'all'")
    ap.add_argument("--modes", default="CF,CF-S,CF-R,CF-R-S", help="comma-separated modes, or 'all'")
    ap.add_argument("--n", type=int, default=100, help="images per network (default 100)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run (default 300)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "certify.json"))
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                    help="analysis precision (auto_LiRPA and ERAN's GPU paths use float32)")
    ap.add_argument("--batch", type=int, default=None, help="images per batch (default: 100, 10 for conv nets)")
    ap.add_argument("--no-compile-times", action="store_true")
    args = ap.parse_args()
    if not SHARED.is_dir():
        print(f"error: {SHARED} not found (the shared networks and data)", file=sys.stderr)
        return 1
    nets = list(EPS) if args.nets == "all" else args.nets.split(",")
    unknown = [net for net in nets if net not in EPS]
    if unknown:
        print(f"error: no paper epsilon for network {', '.join(unknown)} (known: {', '.join(EPS)})", file=sys.stderr)
        return 1
    modes = list(MODES) if args.modes == "all" else args.modes.split(",")
    certs = certifier_names() if args.certifiers == "all" else args.certifiers.split(",")
    results = {"n": args.n, "timeout_s": args.timeout, "dtype": args.dtype, "runs": [], "compile_s": {}}
    if not args.no_compile_times:
        results["compile_s"] = compile_times()
        print("compile time (uncached, default pipeline):")
        for name, s in results["compile_s"].items():
            print(f"  {name:12s} {s:6.2f} s")
    print(f"\n{'certifier':11s} {'network':32s} {'mode':7s} {'cert':>6s} {'time s':>8s} {'peak MiB':>9s}")
    for net in nets:
        for cert in certs:
            for mode in modes:
                r = run_one(cert, net, mode, args.n, args.timeout, args.dtype, args.batch)
                r.update(certifier=cert, network=net, mode=mode, eps=EPS[net], batch=args.batch or paper_batch_size(net))
                results["runs"].append(r)
                if r["status"] == "ok":
                    print(f"{cert:11s} {net:32s} {mode:7s} {r['certified']:3d}/{r['correct']:<3d}"
                          f"{r['analysis_s']:8.2f} {r['peak_mib']:9.0f}", flush=True)
                else:
                    print(f"{cert:11s} {net:32s} {mode:7s} {r['status']}: {r.get('error', '')}", flush=True)
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out).write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
