"""What the float32 widening costs, and that it is needed (issue 14, point 5): prints a table, writes JSON.

For each shared network (first ``--n`` images at the paper's epsilon) and each shipped certifier, three
compiled runs of the same boxes: float64, raw float32 (``widen=False``) and widened float32 (the
default).  Per row:

* ``viol raw`` / ``viol wide``: bounds (every layer and the margins) that a float64 concrete execution
  beats by more than ``--tol`` relative (default 1e-9; :func:`cfruntime.soundness.check_bounds` with
  samples, box vertices and PGD);
* certified counts in float64 / raw float32 / widened float32;
* the widening's loss of precision: median and max over the margins of ``width(wide) / width(f64)``,
  and the largest ``lower(f64) - lower(wide)``;
* torch operations and host syncs of one float32 run, raw and widened (deterministic; on a GPU
  without CUDA graphs each operation is a kernel launch);
* times (median of ``--repeat`` runs, after one warm-up) of raw and widened float32 runs, and their ratio.

Every run goes through the public API: the bounds, verdicts and layer bounds are one
``cfmlir.certify`` of all the boxes in one batch; the operation counts and the times are of the
engine's bound computation alone (``cfmlir.engine_for(...).bounds`` on a margin network made
beforehand), as ``certify``'s margin network and verdicts are no part of what the widening costs.  The
counts include the engine's operations that take the boxes in (none for float64 CPU tensors of the
network's input width, 6 for other arrays) and give the bounds back (2 casts to float64), in the raw and
the widened run alike.

    .venv/bin/python bench/float32_widening.py [--n 10] [--nets ...] [--certifiers ...] [--out bench/results/float32_widening.json]
    .venv/bin/python bench/float32_widening.py --times-only NET:CERTIFIER ... --out bench/results/float32_widening_times.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import cfmlir
from cfmlir.certifiers import BASE_CERTIFIERS
from cfruntime.flow.engine import EngineError
from cfruntime.op_count import OpCounter
from cfruntime.properties import shared_dir
from cfruntime.soundness import check_bounds
from paper_problems import paper_problem, run_script

NETS = ("mnist_relu_3_50", "mnist_relu_9_200", "mnist_ffnnSIGMOID__Point_6x200", "mnist_nln_tansig_200_50",
        "mnist_convSmallRELU__DiffAI", "cifar_relu_4_100", "cifar10_convSmallRELU__Point", "cifar10_convSmallRELU__PGDK")


def _certify(cert, net, prop, dtype: str, widen: bool) -> cfmlir.Result:
    """All the boxes in one batch, with every layer's bounds."""
    return cfmlir.certify(cert, net, prop, dtype=dtype, widen=widen, batch_size=len(prop), layer_bounds=True)


def _margins(res: cfmlir.Result):
    """The margin layer's ``(lower, upper)`` [N, K], float64 (own columns as computed, not zeroed)."""
    return res.layer_bounds[max(res.layer_bounds)]


def _bounds(cert, mnet, prop, widen):
    """The engine's bound computation alone, in float32 (what is timed and counted)."""
    return cfmlir.engine_for(cert, dtype="float32", widen=widen).bounds(mnet, prop.lb, prop.ub)


def _timed(cert, mnet, prop, widen, repeat):
    _bounds(cert, mnet, prop, widen)  # warm-up
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        _bounds(cert, mnet, prop, widen)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _ops(cert, mnet, prop, widen):
    """Torch operations and host syncs of one float32 run (deterministic: they predict GPU time)."""
    with OpCounter() as oc:
        _bounds(cert, mnet, prop, widen)
    return oc.ops, oc.syncs


def _violations(net, prop, res: cfmlir.Result, tol):
    last = max(res.layer_bounds)
    layers = {k: v for k, v in res.layer_bounds.items() if k != last}
    return check_bounds(net.network, prop.lb, prop.ub, layers, margin_bounds=_margins(res), C=prop.C,
                        n_samples=64, n_vertices=16, pgd_steps=10, tol=tol)


def times_only(args) -> None:
    """Raw and widened float32 runs alternated (one warm-up each), the best of ``--repeat``: a quieter
    measurement of the widening's time cost than the full table's."""
    rows = []
    for spec in args.times_only:
        net_name, name = spec.split(":")
        net, prop = paper_problem(net_name, args.n, shared_dir())
        mnet = net.with_margin_layer(prop.C)
        cert = cfmlir.compile(name)
        t = {False: [], True: []}
        for _ in range(args.repeat + 1):
            for widen in (False, True):
                t0 = time.perf_counter()
                _bounds(cert, mnet, prop, widen)
                t[widen].append(time.perf_counter() - t0)
        raw, wide = min(t[False][1:]), min(t[True][1:])
        rows.append({"network": net_name, "certifier": name, "n": args.n, "seconds_raw_float32": raw,
                     "seconds_widened_float32": wide, "time_ratio": wide / raw})
        print(f"{net_name:30} {name:10} raw {raw:.4f} s  widened {wide:.4f} s  ratio {wide / raw:.2f}", flush=True)
    Path(args.out).write_text(json.dumps({"meta": {"torch": torch.__version__, "threads": torch.get_num_threads(),
                                                    "device": "cpu"}, "rows": rows}, indent=1, allow_nan=False) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--tol", type=float, default=1e-9)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nets", nargs="+", default=list(NETS))
    ap.add_argument("--certifiers", nargs="+", default=list(BASE_CERTIFIERS))
    ap.add_argument("--out", default="bench/results/float32_widening.json")
    ap.add_argument("--times-only", nargs="+", metavar="NET:CERTIFIER", default=None,
                    help="only time raw and widened float32 runs of these pairs, alternating, best of --repeat")
    args = ap.parse_args()
    if args.times_only:
        return times_only(args)
    shared = shared_dir()
    if shared is None:
        raise SystemExit("error: ../shared (networks and data) not found")
    rows = []
    print(f"{'network':30} {'certifier':10} {'viol raw':>8} {'viol wide':>9} {'cert 64/raw/wide':>16} "
          f"{'width med':>9} {'width max':>9} {'lb loss':>9} {'ops raw/wide':>12} {'raw s':>7} {'wide s':>7} {'ratio':>6}")
    for net_name in args.nets:
        net, prop = paper_problem(net_name, args.n, shared)
        mnet = net.with_margin_layer(prop.C)
        for name in args.certifiers:
            cert = cfmlir.compile(name)
            try:
                r64 = _certify(cert, net, prop, "float64", False)
            except EngineError as exc:
                print(f"{net_name:30} {name:10} -- {exc}")
                rows.append({"network": net_name, "certifier": name, "skipped": str(exc)})
                continue
            raw = _certify(cert, net, prop, "float32", False)
            wide = _certify(cert, net, prop, "float32", True)
            v_raw = _violations(net, prop, raw, args.tol)
            v_wide = _violations(net, prop, wide, args.tol)
            (lo64, up64), (lo_wide, up_wide) = _margins(r64), _margins(wide)
            w64 = up64 - lo64
            ww = up_wide - lo_wide
            keep = torch.isfinite(ww) & (w64 > 1e-9)
            ratio = (ww[keep] / w64[keep]) if keep.any() else torch.ones(1, dtype=torch.float64)
            fin = torch.isfinite(lo_wide) & torch.isfinite(lo64)
            loss = float((lo64 - lo_wide)[fin].max()) if fin.any() else 0.0
            certified = [int(x.certified.sum()) for x in (r64, raw, wide)]
            ops = [_ops(cert, mnet, prop, w) for w in (False, True)]
            t_raw = _timed(cert, mnet, prop, False, args.repeat)
            t_wide = _timed(cert, mnet, prop, True, args.repeat)
            row = {"network": net_name, "certifier": name, "n": args.n, "tol": args.tol,
                   "violations_raw_float32": len(v_raw), "worst_raw_float32": v_raw[0].excess if v_raw else 0.0,
                   "violations_widened_float32": len(v_wide), "worst_widened_float32": v_wide[0].excess if v_wide else 0.0,
                   "certified_float64": certified[0], "certified_raw_float32": certified[1],
                   "certified_widened_float32": certified[2],
                   "margin_width_ratio_median": float(ratio.median()), "margin_width_ratio_max": float(ratio.max()),
                   "max_lower_bound_loss": loss, "seconds_raw_float32": t_raw, "seconds_widened_float32": t_wide,
                   "time_ratio": t_wide / t_raw if t_raw > 0 else None,
                   "ops_raw_float32": ops[0][0], "ops_widened_float32": ops[1][0],
                   "syncs_raw_float32": ops[0][1], "syncs_widened_float32": ops[1][1]}
            rows.append(row)
            print(f"{net_name:30} {name:10} {len(v_raw):8d} {len(v_wide):9d} {'/'.join(map(str, certified)):>16} "
                  f"{row['margin_width_ratio_median']:9.5f} {row['margin_width_ratio_max']:9.4f} {loss:9.3g} "
                  f"{f'{ops[0][0]}/{ops[1][0]}':>12} "
                  f"{t_raw:7.3f} {t_wide:7.3f} {row['time_ratio']:6.2f}", flush=True)
    meta = {"torch": torch.__version__, "threads": torch.get_num_threads(), "device": "cpu",
            "note": "violations: bounds beaten by a float64 concrete execution by more than tol relative"}
    Path(args.out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, allow_nan=False) + "\n")


if __name__ == "__main__":
    run_script(main)
