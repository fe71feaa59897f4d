"""Benchmark: the compiled engine on an accelerator against the CPU (not a test; CI has no GPU).

    python bench/device_parity.py --device cuda
    python bench/device_parity.py --device cuda --certifiers deeppoly --nets mnist_relu_6_100 --n 100

For each (certifier, shared network) the compiled engine runs the first ``--n`` images at the paper's
epsilon three times: on the CPU in float64 (the reference the soundness tests check), on ``--device``
in float64 (must agree with the CPU to 1e-9 relative: same arithmetic, other kernels) and on
``--device`` in float32 (the precision GPU verifiers use: every image certified in float32 must be
certified in float64 too; the largest relative difference to the float64 bounds is reported --
float32 rounding through many layers, not a pass/fail figure).  Device times are the median of ``--repeat`` runs after one warm-up run (first-call kernel
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
import time
from pathlib import Path

import torch

from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
from cfruntime.flow.engine import run_certifier
from cfruntime.properties import load_paper_problem
from cfruntime.properties.paper_eps import PAPER_EPSILON

REPO = Path(__file__).resolve().parent.parent
DEFAULT_NETS = "mnist_relu_3_50,mnist_relu_6_100,mnist_convSmallRELU__DiffAI,cifar_relu_6_100.nchwfix"


def analyse(cert, net, prop, n, batch, device, dtype):
    """Margin lower/upper bounds [n, K] (on the CPU, float64) and the wall time of the whole pass."""
    lows, ups = [], []
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for s in range(0, n, batch):
        sl = slice(s, min(n, s + batch))
        res = run_certifier(cert, net.with_margin_layer(prop.C[sl]), prop.lb[sl], prop.ub[sl],
                            dtype=dtype, device=device)
        lows.append(res.lower)
        ups.append(res.upper)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    return torch.cat(lows).double().cpu(), torch.cat(ups).double().cpu(), elapsed


def certified(lower, prop, pred):
    own = torch.nn.functional.one_hot(prop.labels[: lower.shape[0]], prop.C.shape[1]).bool()
    return ((lower > 0) | own).all(1) & (pred == prop.labels[: lower.shape[0]])


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
        net, prop = load_paper_problem(net_name, args.n)
        batch = 10 if "conv" in net_name.lower() else 100
        pred = net.forward(prop.x.double()).argmax(1)
        for cert_name in args.certifiers.split(","):
            cert = compile_certifier(*load_certifier_source(cert_name), pipeline_for(True))
            lo_cpu, up_cpu, t_cpu = analyse(cert, net, prop, args.n, batch, "cpu", torch.float64)
            timed = {}
            for dtype in (torch.float64, torch.float32):
                analyse(cert, net, prop, min(args.n, batch), batch, args.device, dtype)  # warm-up
                runs = [analyse(cert, net, prop, args.n, batch, args.device, dtype) for _ in range(args.repeat)]
                timed[dtype] = (runs[0][0], runs[0][1], statistics.median(r[2] for r in runs))
            lo64, up64, t64 = timed[torch.float64]
            lo32, up32, t32 = timed[torch.float32]
            d64 = max(rel_diff(lo64, lo_cpu), rel_diff(up64, up_cpu))
            d32 = max(rel_diff(lo32, lo_cpu), rel_diff(up32, up_cpu))
            c64 = certified(lo_cpu, prop, pred)
            c32 = certified(lo32, prop, pred)
            extra32 = int((c32 & ~c64).sum())
            verdict = "ok" if d64 <= 1e-9 and extra32 == 0 else "MISMATCH"
            ok_all &= verdict == "ok"
            row = dict(certifier=cert_name, network=net_name, eps=PAPER_EPSILON[net_name],
                       certified_f64=int(c64.sum()), certified_f32=int(c32.sum()), correct=int((pred == prop.labels).sum()),
                       rel_diff_f64=d64, rel_diff_f32=d32, f32_certified_not_f64=extra32,
                       cpu_f64_s=t_cpu, device_f64_s=t64, device_f32_s=t32, verdict=verdict)
            rows.append(row)
            print(f"{cert_name:10s} {net_name:28s} {row['certified_f64']:8d} {row['certified_f32']:8d} {d64:12.2e} "
                  f"{d32:12.2e} {t_cpu:9.2f} {t64:9.3f} {t32:9.3f}  {verdict}", flush=True)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps({"meta": meta, "runs": rows}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0 if ok_all else 2


if __name__ == "__main__":
    sys.exit(main())
