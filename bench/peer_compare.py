"""Benchmark: our compiled certifiers against auto_LiRPA (the hand-written peer), side by side (not a test).

    python bench/peer_compare.py                     # CPU, 2 threads, every row
    python bench/peer_compare.py --device cuda       # the same on a GPU
    python bench/peer_compare.py --rows mnist_6x100,mnist_6x100_b1 --certifiers deeppoly
    python bench/peer_compare.py --malloc fixed      # fixed allocator thresholds: repeatable CPU timings
    python bench/peer_compare.py --alpha             # alpha_deeppoly optimised vs alpha-CROWN (peer_compare_alpha.py)
    python bench/peer_compare.py --alpha --reproducibility   # and each tool against itself in other batch sizes

For every row (a shared network and a batch size) and certifier, both tools bound the robustness
margins ``y_true - y_j`` of the same L-inf boxes (the first ``n`` images at the paper's epsilon) in
float32, in one process: IBP = auto_LiRPA ``IBP``, CROWN-IBP = ``CROWN-IBP``, DeepPoly =
``backward`` (CROWN).  Timing is warm: one untimed warm-up batch (on the CPU, ours: then every batch
three times more, so that a batch shape's run is recorded and checked, :mod:`cfruntime.flow.tape` --
``ours_s`` is the replay, the steady state of ``cf-run`` over many batches, and ``ours_eager_s`` /
``eager_ratio`` the eager engine's time, what a single batch costs), then the minimum over ``--repeat``
runs of the whole set of batches (at least :data:`MIN_SECONDS` of runs per tool), the tools' runs
interleaved (``peer_side.timed_side_by_side``: a load spike falls on both alike) (bound computation only: network loading, compilation and the
``BoundedModule`` build are excluded; on CUDA the device is synchronised after every batch).
Both tools run in one process under glibc's allocator as it comes (its adaptive mmap/trim thresholds
make the CPU timings of big tensors vary by up to 1.5x between runs) or, with ``--malloc fixed``, with
those thresholds fixed (repeatable; both tools run faster, auto_LiRPA more).  For one certification (the first batch) the torch operations and host syncs of both tools are
counted (:class:`cfruntime.op_count.OpCounter`; ours eagerly: on CUDA our timed runs replay a CUDA
graph, which the counts do not see).  Our side goes through the public API: ``cfmlir.compile``, the
compiled engine's ``bounds`` (``cfmlir.engine_for``; its timed region therefore includes taking the
float64 boxes in and giving the bounds back on the CPU, as in every ``cfmlir.certify``) and our
certified counts from one untimed ``cfmlir.certify``.  TensorFloat-32 is off for both tools.  Margins
are compared with auto_LiRPA's: IBP and CROWN-IBP with the timed run, DeepPoly with an untimed auto_LiRPA run with dense intermediate
bounds (pure DeepPoly semantics; by default auto_LiRPA keeps IBP bounds where tighter).
auto_LiRPA's model comes from the harness's ONNX converter (``peer_converter`` in the JSON): its own small
one, or onnx2pytorch where that imports -- whose modules cost auto_LiRPA more operations (cifar convMed
IBP: 138 native, 184 through onnx2pytorch), so figures are comparable only under one converter; the
recorded ones are ``native`` (onnx2pytorch needs torchvision, which pip pairs with torch 2.14, not the
pinned 2.13).

Our float32 bounds are widened against rounding by default (what ``cf-run`` and the API give:
:mod:`cfruntime.flow.widening`; auto_LiRPA's are not); ``--widen off`` compares the raw float32 runs.
Prints a table and writes ``bench/results/peer_compare[_cuda][_raw][_fixed_malloc].json`` (``_raw``:
``--widen off``); ``bench/peer_table.py`` makes the markdown table of ``docs/performance.md`` from them.  auto_LiRPA 0.7.1 lives in
``../shared/peers`` (set-up in its README: ``onnx2pytorch`` and friends in this environment); without
it the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from cfmlir import spec_rows
from cfruntime.flow import graphs
from peer_side import Peer, count_ops, margins_ours, peer_available, peer_converter, timed_side_by_side
from peer_table import print_row

REPO = Path(__file__).resolve().parent.parent
PEER_METHOD = {"ibp": "IBP", "crown_ibp": "CROWN-IBP", "deeppoly": "backward"}
ALL_CERTIFIERS = ("ibp", "crown_ibp", "deeppoly")


@dataclass(frozen=True)
class Row:
    name: str
    net: str
    batch_cpu: int
    batch_gpu: int
    n: int
    certifiers: tuple[str, ...] = ALL_CERTIFIERS


ROWS = [
    Row("mnist_6x100", "mnist_relu_6_100", 100, 100, 100),
    Row("mnist_6x100_b1", "mnist_relu_6_100", 1, 1, 10),
    Row("mnist_9x200", "mnist_relu_9_200", 100, 100, 100),
    Row("mnist_6x500", "mnist_relu_6_500", 100, 100, 100),
    Row("mnist_convsmall_diffai", "mnist_convSmallRELU__DiffAI", 10, 100, 100),
    Row("cifar_convsmall_pgd", "cifar10_convSmallRELU__PGDK", 10, 100, 100),
    Row("cifar_convmed", "cifar10_convMedRELU", 10, 10, 100),
    # no DeepPoly row: auto_LiRPA 0.7.1's CROWN stops on ConvBig with "RuntimeError: The size of tensor
    # a (16384) must match the size of tensor b (16) at non-singleton dimension 3" (concretize_bounds,
    # an intermediate layer's patches-mode bound), on the CPU and on CUDA
    Row("cifar_convbig", "cifar10_convBigRELU", 10, 10, 100, ("ibp", "crown_ibp")),
]

#: glibc's allocator with fixed thresholds (see --malloc): freed big tensors stay in the process
MALLOC_FIXED = {"MALLOC_MMAP_THRESHOLD_": "1000000000", "MALLOC_TRIM_THRESHOLD_": "1000000000"}

#: DeepPoly's margins are compared with auto_LiRPA's dense-intermediate run (matrix mode for conv
#: nets), which needs memory quadratic in the neurons: above this many it is not run.
DENSE_REFERENCE_MAX_NEURONS = 20_000


#: whether our float32 bounds are widened to hold despite rounding (cfruntime.flow.widening; on by
#: default, as in cf-run; auto_LiRPA's are not: ``--widen off`` compares like with like)
WIDEN = True
#: each tool is timed at least this long in all (more repetitions than ``--repeat`` on the short rows, whose
#: runs of a few milliseconds are noisy)
MIN_SECONDS = 0.5


class Ours:
    """Our compiled certifier through the public API on the problem's boxes: the compiled engine's
    bounds per batch (``cfmlir.engine_for``; margin layer per batch made beforehand), float32."""

    def __init__(self, certifier: str, net, prop, batches, device):
        import cfmlir

        self.cert = cfmlir.compile(certifier)
        self.engine = cfmlir.engine_for(self.cert, device=device, dtype="float32", widen=WIDEN)
        self.eager_engine = cfmlir.engine_for(self.cert, device=device, dtype="float32", widen=WIDEN, graph=False)
        self.work = {}
        self.k = prop.C.shape[1]
        for b in batches:
            sl = slice(b[0], b[-1] + 1)
            # as cfmlir.certify (bounds_in_batches): the own class's zero row is not bounded (cfmlir.spec_rows)
            spec, kept = spec_rows.compact(prop.C[sl])
            self.work[b[0]] = (net.with_margin_layer(spec), prop.lb[sl], prop.ub[sl], kept)

    def __call__(self, b):
        """The margins' lower bounds of batch ``b`` (float64, on the CPU; 0 in the own class's row)."""
        mnet, lb, ub, kept = self.work[b[0]]
        return spec_rows.spread(self.engine.bounds(mnet, lb, ub)[0], kept, self.k)

    def eager(self, b):
        """Batch ``b`` run eagerly, for the operation count (on CUDA the timed engine replays a CUDA graph,
        whose operations a count does not see): the same engine settings with ``graph=False``."""
        mnet, lb, ub, kept = self.work[b[0]]
        return spec_rows.spread(self.eager_engine.bounds(mnet, lb, ub)[0], kept, self.k)


def run_row(row: Row, certifiers, device: torch.device, repeat: int, n_override: int | None,
            dense_max: int = DENSE_REFERENCE_MAX_NEURONS) -> list[dict]:
    import cfmlir
    from paper_problems import paper_files, paper_problem

    n = n_override or row.n
    batch = row.batch_gpu if device.type == "cuda" else row.batch_cpu
    net, prop = paper_problem(row.net, n)
    onnx_path = paper_files(row.net)[0]
    pred = net.forward(prop.x.double()).argmax(1)
    correct = pred == prop.labels
    batches = [list(range(s, min(n, s + batch))) for s in range(0, n, batch)]
    out = []
    for cert in certifiers:
        rec = {"row": row.name, "network": row.net, "batch": batch, "n": n, "certifier": cert,
               "correct": int(correct.sum()), "device": str(device)}
        try:
            ours = Ours(cert, net, prop, batches, device)
            peer = Peer(onnx_path, prop, batches, device)
            peer.method = PEER_METHOD[cert]
            # warm: on the CPU our runs are replayed from a batch shape's fourth call on (the steady state
            # of cf-run over many batches); a run of one batch is eager: its time is ours_eager_s
            replayed = device.type == "cpu"
            # interleaved (peer_side.timed_side_by_side): a load spike falls on every tool alike
            tools = {"ours": ours, "eager": ours.eager, "peer": peer} if replayed else {"ours": ours, "peer": peer}
            times = timed_side_by_side(tools, batches, device, repeat, min_seconds=MIN_SECONDS,
                                       warm={"ours": graphs.CPU_RECORD_AFTER if replayed else 0})
            (t_ours, low_ours), (t_peer, low_peer) = times["ours"], times["peer"]
            t_eager = times["eager"][0] if replayed else None
            ours_m = margins_ours(low_ours, prop.labels, peer.others)
            peer_m = torch.cat([l.double().cpu() for l in low_peer])
            verdicts = cfmlir.certify(ours.cert, net, prop, engine=ours.engine, device=device, batch_size=batch)
            cert_ours = int(verdicts.certified.sum())
            cert_peer = int((((peer_m > 0).all(1)) & correct).sum())
            ops_o, syncs_o = count_ops(lambda: ours.eager(batches[0]))  # the operations a replay saves
            idx, bx = peer.tensor(batches[0])  # a BoundedTensor cannot be made inside the counting mode
            ops_p, syncs_p = count_ops(lambda: peer.bounds(idx, bx))
            ref_m, ref_kind = peer_m, "timed run"
            if cert == "deeppoly":
                ref_m, ref_kind = None, "not compared (network too large for a dense-intermediate run)"
                if sum(l.size for l in net.layers) <= dense_max:
                    dense = Peer(onnx_path, prop, batches, device, dense_intermediate=True)
                    dense.method = "backward"
                    ref_m, ref_kind = torch.cat([dense(b).double().cpu() for b in batches]), "dense-intermediate"
            diff = (ours_m - ref_m).abs() if ref_m is not None else None
            tol_ok = bool((diff <= 1e-3 + 1e-4 * ref_m.abs()).all()) if ref_m is not None else None
            if diff is not None:  # the worst entry relative to the tolerance, and its size
                worst = int(torch.argmax(diff / (1e-3 + 1e-4 * ref_m.abs())))
                rec.update(margin_worst_ref=float(ref_m.flatten()[worst]), margin_worst_ours=float(ours_m.flatten()[worst]))
            rec.update(status="ok", ours_s=t_ours, peer_s=t_peer, ratio=t_ours / t_peer,
                       ours_eager_s=t_eager, eager_ratio=None if t_eager is None else t_eager / t_peer,
                       certified_ours=cert_ours, certified_peer=cert_peer,
                       ops_ours=ops_o, syncs_ours=syncs_o, ops_peer=ops_p, syncs_peer=syncs_p,
                       margin_max_abs_diff=float(diff.max()) if diff is not None else None, margins_agree=tol_ok,
                       margins_vs=ref_kind)
        except Exception as exc:  # noqa: BLE001 - one failing row is reported, the others still run
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            rec.update(status="error", error=msg)
        out.append(rec)
        _print(rec)
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return out


HEADER = (f"{'row':24s} {'certifier':9s} {'batch':>5s} {'ours s':>9s} {'peer s':>9s} {'ratio':>6s} {'eager':>6s} "
          f"{'cert o/p':>9s} {'ops o/p':>13s} {'syncs o/p':>10s} {'margin diff':>11s}")


def _print(r: dict) -> None:
    print_row(r, f"{r['row']:24s} {r['certifier']:9s} {r['batch']:5d}", lambda r: (
        f"{r['ours_s']:9.4f} {r['peer_s']:9.4f} {r['ratio']:6.2f} "
        + (f"{r['eager_ratio']:6.2f} " if r.get("eager_ratio") is not None else "     - ") +
        f"{r['certified_ours']:4d}/{r['certified_peer']:<4d} {r['ops_ours']:6d}/{r['ops_peer']:<6d} "
        f"{r['syncs_ours']:4d}/{r['syncs_peer']:<5d} "
        + (f"{r['margin_max_abs_diff']:11.2e}{'' if r['margins_agree'] else ' !'}" if r["margins_agree"] is not None else "        n/a")))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads for both tools (default 2)")
    ap.add_argument("--rows", default="all", help=f"comma-separated rows, or 'all': {', '.join(r.name for r in ROWS)}")
    ap.add_argument("--certifiers", default=",".join(ALL_CERTIFIERS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n", type=int, default=None, help="images per row (default: the row's)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--widen", choices=("on", "off"), default="on",
                    help="our float32 bounds widened against rounding (default on, as cf-run; auto_LiRPA's are not)")
    ap.add_argument("--dense-reference-max", type=int, default=DENSE_REFERENCE_MAX_NEURONS,
                    help="compare DeepPoly's margins with auto_LiRPA's dense-intermediate run on nets with at most "
                         f"this many neurons (default {DENSE_REFERENCE_MAX_NEURONS}; its memory is quadratic in them)")
    ap.add_argument("--malloc", choices=("glibc", "fixed"), default="glibc",
                    help="glibc (default): the allocator as both tools get it, whose adaptive thresholds make CPU "
                         "timings of big tensors vary by up to 1.5x from run to run (freed blocks go back to the "
                         "system and come back as page faults); fixed: mmap and trim thresholds fixed at 1 GB for "
                         "both tools (repeatable, and faster for both)")
    ap.add_argument("--alpha", action="store_true",
                    help="the alpha rows instead (bench/peer_compare_alpha.py: alpha_deeppoly optimised vs alpha-CROWN)")
    ap.add_argument("--reproducibility", action="store_true",
                    help="with --alpha: both tools again in batches of 20, 5, 2 and 1 (summation order only), their margins "
                         "against their own first run: the noise floor of the margin comparison")
    args = ap.parse_args()
    if args.malloc == "fixed" and any(os.environ.get(k) != v for k, v in MALLOC_FIXED.items()):
        # glibc reads these when the process starts: run this script again with them set
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **MALLOC_FIXED})
    why = peer_available()
    if why is not None:
        print(f"skipped: {why}")
        return 0
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger("auto_LiRPA").setLevel(logging.ERROR)
    torch.set_num_threads(args.threads)
    # full float32 for both tools: cuDNN's default TF32 convolutions round to a 10-bit mantissa (our
    # engine switches it off for its own runs; auto_LiRPA would otherwise run faster and coarser)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    global WIDEN
    WIDEN = args.widen == "on"
    if args.alpha:
        return _alpha_main(args, device)
    rows = ROWS if args.rows == "all" else [r for r in ROWS if r.name in args.rows.split(",")]
    certifiers = args.certifiers.split(",")
    name = (f"peer_compare{'_cuda' if device.type == 'cuda' else ''}{'' if WIDEN else '_raw'}"
            f"{'_fixed_malloc' if args.malloc == 'fixed' else ''}.json")
    out = Path(args.out) if args.out else REPO / "bench" / "results" / name
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    results = {"device": str(device), "gpu": gpu, "threads": torch.get_num_threads(), "dtype": "float32", "tf32": False, "widened": WIDEN,
               "repeat": args.repeat, "torch": torch.__version__,
               "malloc": MALLOC_FIXED if args.malloc == "fixed" else "glibc defaults", "peer_converter": peer_converter(),
               "load_average_at_start": list(os.getloadavg()), "cpu_count": os.cpu_count(), "runs": []}
    print(f"device {device}{f' ({gpu})' if gpu else ''}, {torch.get_num_threads()} threads, float32 "
          f"{'widened' if WIDEN else 'raw (--widen off)'}, warm, min of {args.repeat}")
    print(HEADER)
    for row in rows:
        results["runs"] += run_row(row, [c for c in certifiers if c in row.certifiers], device, args.repeat, args.n,
                                   args.dense_reference_max)
        results["load_average_at_end"] = list(os.getloadavg())  # the machine may be shared: ratios are what compares
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    print(f"\nwrote {out}")
    return 0


def _alpha_main(args, device: torch.device) -> int:
    """The alpha section (see :mod:`peer_compare_alpha`); JSON in ``bench/results/peer_compare_alpha[_cuda].json``."""
    from peer_compare_alpha import run_alpha

    out = Path(args.out) if args.out else REPO / "bench" / "results" / f"peer_compare_alpha{'_cuda' if device.type == 'cuda' else ''}.json"
    results = {"device": str(device), "threads": torch.get_num_threads(), "dtype": "float32", "widened": WIDEN,
               "repeat": args.repeat, "torch": torch.__version__, "peer_converter": peer_converter(), "runs": []}
    print(f"alpha rows: device {device}, {torch.get_num_threads()} threads, float32, warm, min of {args.repeat}")
    results["runs"] = run_alpha(args.rows, device, args.repeat, args.n, WIDEN, args.reproducibility)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
