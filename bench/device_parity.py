"""Benchmark: the compiled engine on an accelerator against the CPU (not a test; CI has no GPU).

    python bench/device_parity.py --device cuda
    python bench/device_parity.py --device cuda --certifiers deeppoly --nets mnist_relu_6_100 --n 100

For each (certifier, shared network) the compiled engine runs the first ``--n`` images at the paper's
epsilon three times: on the CPU in float64 (the reference the soundness tests check), on ``--device``
in float64 (must agree with the CPU to 1e-9 relative: same arithmetic, other kernels) and on
``--device`` in float32 (the precision GPU verifiers use: every image certified in float32 must be
certified in float64 too; the largest relative difference to the float64 bounds is reported --
float32 rounding through many layers, not a pass/fail figure).  Every run is one ``cfmlir.certify``
(the public API: its batching loop, its margins and its ``certified`` verdicts) and its time is
``certify``'s ``analysis_s`` (the whole pass: margin networks, bounds back on the CPU, verdicts).
Device times are the median of ``--repeat`` runs after one warm-up run (first-call kernel
compilation and allocator growth excluded); the CPU time is one run.  Batch 100 for fully-connected
nets, 10 for conv nets, as in ``bench/certify.py``.  Prints a table and writes
``bench/results/device_parity.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path

import torch

import cfmlir
from paper_problems import PAPER_EPSILON, paper_batch_size, paper_problem, run_script

REPO = Path(__file__).resolve().parent.parent
DEFAULT_NETS = "mnist_relu_3_50,mnist_relu_6_100,mnist_convSmallRELU__DiffAI,cifar_relu_6_100.nchwfix"


def analyse(cert, net, prop, batch, device, dtype) -> cfmlir.Result:
    """``cfmlir.certify`` of ``prop`` (margins [n, K] on the CPU in float64, verdicts, ``analysis_s``:
    the wall time of the whole pass, which ends with the bounds copied back to the CPU)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return cfmlir.certify(cert, net, prop, device=device, dtype=dtype, batch_size=batch)


def rel_diff(a, b):
    fin = torch.isfinite(a) & torch.isfinite(b)
    same_inf = (a == b) | fin
    if not bool(same_inf.all()):
        return float("inf")
    d = (a[fin] - b[fin]).abs() / b[fin].abs().clamp_min(1.0)
    return float(d.max()) if d.numel() else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--certifiers", default="ibp,deepz,deeppoly,crown_ibp")
    ap.add_argument("--nets", default=DEFAULT_NETS)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "device_parity.json"))
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"error: device '{args.device}' is not available here", file=sys.stderr)
        return 1
    meta = {"device": args.device, "torch": torch.__version__, "python": platform.python_version(),
            "cpu_threads": torch.get_num_threads(), "n": args.n, "repeat": args.repeat}
    if args.device.startswith("cuda"):
        meta["device_name"] = torch.cuda.get_device_name(args.device)
    rows = []
    print(f"{'certifier':10s} {'network':28s} {'cert f64':>8s} {'cert f32':>8s} {'rel diff f64':>12s} "
          f"{'rel diff f32':>12s} {'cpu f64 s':>9s} {'dev f64 s':>9s} {'dev f32 s':>9s}  verdict")
    ok_all = True
    for net_name in args.nets.split(","):
        net, prop = paper_problem(net_name, args.n)
        _, warm_prop = paper_problem(net_name, min(args.n, paper_batch_size(net_name)))  # the first batch
        batch = paper_batch_size(net_name)
        for cert_name in args.certifiers.split(","):
            cert = cfmlir.compile(cert_name)
            cpu = analyse(cert, net, prop, batch, "cpu", "float64")
            timed = {}
            for dtype in ("float64", "float32"):
                analyse(cert, net, warm_prop, batch, args.device, dtype)  # warm-up
                runs = [analyse(cert, net, prop, batch, args.device, dtype) for _ in range(args.repeat)]
                timed[dtype] = (runs[0], statistics.median(r.times["analysis_s"] for r in runs))
            (r64, t64), (r32, t32), t_cpu = timed["float64"], timed["float32"], cpu.times["analysis_s"]
            d64 = max(rel_diff(r64.margin_lb, cpu.margin_lb), rel_diff(r64.margin_ub, cpu.margin_ub))
            d32 = max(rel_diff(r32.margin_lb, cpu.margin_lb), rel_diff(r32.margin_ub, cpu.margin_ub))
            c64, c32 = cpu.certified, r32.certified
            extra32 = int((c32 & ~c64).sum())
            verdict = "ok" if d64 <= 1e-9 and extra32 == 0 else "MISMATCH"
            ok_all &= verdict == "ok"
            row = dict(certifier=cert_name, network=net_name, eps=PAPER_EPSILON[net_name],
                       certified_f64=int(c64.sum()), certified_f32=int(c32.sum()), correct=int(cpu.correct.sum()),
                       rel_diff_f64=d64, rel_diff_f32=d32, f32_certified_not_f64=extra32,
                       cpu_f64_s=t_cpu, device_f64_s=t64, device_f32_s=t32, verdict=verdict)
            rows.append(row)
            print(f"{cert_name:10s} {net_name:28s} {row['certified_f64']:8d} {row['certified_f32']:8d} {d64:12.2e} "
                  f"{d32:12.2e} {t_cpu:9.2f} {t64:9.3f} {t32:9.3f}  {verdict}", flush=True)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps({"meta": meta, "runs": rows}, indent=1, allow_nan=False) + "\n")
    print(f"wrote {args.out}")
    return 0 if ok_all else 2


if __name__ == "__main__":
    run_script(main)
