"""The alpha rows of ``bench/peer_compare.py``: our ``alpha_deeppoly`` optimised against auto_LiRPA's
alpha-CROWN (not a test).

    python bench/peer_compare.py --alpha                          # every alpha row, CPU, 2 threads
    python bench/peer_compare.py --alpha --rows mnist_6x100 --n 10 --repeat 1

Both tools optimise the lower bounds of the robustness margins ``y_true - y_j`` of the same L-inf boxes
in float32, with the same settings: 20 iterations of Adam, learning rate 0.5 decayed by 0.98 per
iteration, parameters initialised to CROWN/DeepPoly's slopes, keep-best, patience 10, no early stop
(``OptimizeOptions(early_stop=False)``; auto_LiRPA's ``stop_criterion_func`` is never true by default),
lower bounds only (auto_LiRPA ``bound_upper=False``).  Ours iterates unwidened and ends with one
widened float64 run (rigorous bounds; ``--widen off`` skips it).  The peer environment needs torch
2.13: in torch 2.14 auto_LiRPA's alphas get no gradient (see :func:`clamp_gradient_at_bounds`; the
script warns).  auto_LiRPA runs with its default
options (sparse intermediate bounds, patches for convolutions: its alphas of a convolution's bounds are
shared per output channel, ours are per neuron).  Timing: a warm-up batch, then the minimum over
``--repeat`` runs of every batch; margins: ours minus theirs (>= -1e-3 is "at least as tight"),
certified counts; operations and host syncs: the whole optimisation of the first batch, divided by
the iterations it ran (one iteration: a forward and a backward pass, and the optimiser step).

``--reproducibility`` runs both tools again on the same images in batches of 20, 5, 2 and 1: a change of
summation order only (every parameter is per sample, Adam is element-wise, keep-best is per margin;
alpha-CROWN's early stop, which watches a batch's summed loss, is off in these runs and in a run at the
row's batch size they are compared with), and reports by how much each tool's margins move against its
own run at the row's batch size (``peer_self_min``: the most negative ``peer_bX - peer``;
``ours_self_min`` likewise; per batch size ``peer_self``/``ours_self``), alpha-CROWN's spread per margin over its
batchings, and ours in every batching against alpha-CROWN's worst batching of each margin
(``ours_vs_peer_worst``).  The optimisation is not convex and Adam's steps follow the gradient's sign, so last-bit
differences can end on other slopes: the peer's own spread is the noise floor of "ours minus theirs".
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from cfmlir.optimize import OptimizeOptions, OptimizeReport, optimize_bounds
from peer_side import Peer, count_ops, margins_ours, timed_side_by_side
from peer_table import print_row

ITERATIONS, LR = 20, 0.5

#: the batch sizes of the reproducibility runs (``--reproducibility``)
REBATCH = (20, 5, 2, 1)


@dataclass(frozen=True)
class AlphaRow:
    name: str
    net: str
    batch: int
    n: int
    eps: float | None = None  # None: the paper's epsilon


ALPHA_ROWS = [
    AlphaRow("mnist_6x100", "mnist_relu_6_100", 10, 20),
    AlphaRow("mnist_6x100_eps0.012", "mnist_relu_6_100", 10, 20, 0.012),
    AlphaRow("mnist_9x200", "mnist_relu_9_200", 10, 20),
    AlphaRow("mnist_9x200_eps0.01", "mnist_relu_9_200", 10, 20, 0.01),
    AlphaRow("mnist_convsmall_diffai", "mnist_convSmallRELU__DiffAI", 10, 20),
    AlphaRow("mnist_convsmall_diffai_eps0.2", "mnist_convSmallRELU__DiffAI", 10, 20, 0.2),
    AlphaRow("cifar_convsmall_pgd", "cifar10_convSmallRELU__PGDK", 10, 20),
    AlphaRow("cifar_convsmall_pgd_eps0.002", "cifar10_convSmallRELU__PGDK", 10, 20, 0.002),
]

HEADER = (f"{'alpha row':30s} {'batch':>5s} {'ours s':>9s} {'peer s':>9s} {'ratio':>6s} {'cert o/p':>9s} "
          f"{'ops/iter o/p':>14s} {'syncs/it o/p':>12s} {'min(o-p)':>9s} {'mean(o-p)':>9s}")


class AlphaOurs:
    """alpha_deeppoly optimised per batch (margin network per batch made beforehand)."""

    def __init__(self, net, prop, batches, device, widen: bool):
        import cfmlir

        self.cert = cfmlir.compile("alpha_deeppoly").compiled
        self.device, self.widen = device, widen
        self.work = {b[0]: (net.with_margin_layer(prop.C[b[0]:b[-1] + 1]), prop.lb[b[0]:b[-1] + 1], prop.ub[b[0]:b[-1] + 1])
                     for b in batches}
        self.reports: list[OptimizeReport] = []

    def __call__(self, b):
        mnet, lb, ub = self.work[b[0]]
        rep = OptimizeReport()
        lower, _, _ = optimize_bounds(self.cert, mnet, lb, ub, OptimizeOptions(ITERATIONS, LR, early_stop=False),
                                      dtype=torch.float32, device=self.device, widen=self.widen, report=rep)
        self.reports.append(rep)
        return lower


class AlphaPeer:
    """auto_LiRPA's alpha-CROWN (``CROWN-Optimized``, lower bounds only) on the same boxes."""

    def __init__(self, peer):
        self.peer = peer
        opts = self.peer.module.bound_opts["optimize_bound_args"]
        opts.update(iteration=ITERATIONS, lr_alpha=LR)

    def bounds(self, idx, bx):
        lb, _ = self.peer.module.compute_bounds(x=(bx,), method="CROWN-Optimized", C=self.peer.C[idx], bound_upper=False)
        return lb.detach()

    def __call__(self, b):
        idx, bx = self.peer.tensor(b)
        return self.bounds(idx, bx)


def _rebatched(n: int, size: int) -> list[list[int]]:
    return [list(range(s, min(n, s + size))) for s in range(0, n, size)]


def reproducibility(net, prop, onnx_path, device, widen: bool, ours_m, batch: int, others) -> dict:
    """Both tools' margins again in batches of :data:`REBATCH` (a change of summation order only), against
    their run in batches of ``batch`` (ours: ``ours_m``; the peer's made here, without its early stop):
    per tool, the most negative difference and how many margins moved down by more than 1e-3 (over all
    batchings, ``*_self_min``, and per batch size, ``*_self``); alpha-CROWN's spread, the largest difference
    of one margin over its batchings (``peer_spread_max``, and how many margins spread more than 1e-3); and
    ours in each batching against alpha-CROWN's *worst* batching of each margin (``ours_vs_peer_worst``):
    what "at least as tight within 1e-3" measures once alpha-CROWN's own batch noise is allowed for."""
    n = prop.lb.shape[0]
    out = {"rebatch": list(REBATCH)}

    def peer_run(size):
        # a module per batch: auto_LiRPA 0.7.1 keys its sparse alphas by the layers unstable in the
        # module's first batch, and a later batch with unstable neurons elsewhere stops with a
        # KeyError (select_alpha_by_idx; mnist 9x200 in batches of 5)
        margins = []
        for b in _rebatched(n, size):
            tool = AlphaPeer(Peer(onnx_path, prop, [b], device))
            tool.peer.module.bound_opts["optimize_bound_args"]["early_stop_patience"] = ITERATIONS + 1
            margins.append(tool(b).double().cpu())
        return torch.cat(margins)

    def ours_run(size):
        batches = _rebatched(n, size)
        tool = AlphaOurs(net, prop, batches, device, widen)
        return margins_ours([tool(b) for b in batches], prop.labels, others)

    def below(d) -> list:
        return [float(d.min()), int((d < -1e-3).sum())]

    runs = {"peer": {batch: peer_run(batch)}, "ours": {batch: ours_m}}
    for who, run in (("peer", peer_run), ("ours", ours_run)):
        for size in REBATCH:
            runs[who][size] = run(size)
        self_d = {size: below(m - runs[who][batch]) for size, m in runs[who].items() if size != batch}
        out[f"{who}_self"] = self_d
        out[f"{who}_self_min"] = min([0.0] + [d[0] for d in self_d.values()])
        out[f"{who}_self_rows_looser_by_1e_3"] = max([0] + [d[1] for d in self_d.values()])
    peer_all = torch.stack(list(runs["peer"].values()))
    spread = peer_all.max(0).values - peer_all.min(0).values
    out["peer_spread_max"], out["peer_spread_rows_over_1e_3"] = float(spread.max()), int((spread > 1e-3).sum())
    worst = peer_all.min(0).values
    out["ours_vs_peer_worst"] = {size: below(m - worst) for size, m in runs["ours"].items()}
    return out


def run_alpha_row(row: AlphaRow, device: torch.device, repeat: int, n_override: int | None, widen: bool,
                  check_reproducibility: bool = False) -> dict:
    import cfmlir
    from paper_problems import paper_files, paper_problem

    n = n_override or row.n
    net, prop = paper_problem(row.net, n)
    if row.eps is not None:
        prop = cfmlir.robustness_property(net, paper_files(row.net)[1], row.eps, n=n)
    onnx_path = paper_files(row.net)[0]
    correct = net.forward(prop.x.double()).argmax(1) == prop.labels
    batches = [list(range(s, min(n, s + row.batch))) for s in range(0, n, row.batch)]
    rec = {"row": row.name, "network": row.net, "eps": prop.eps, "batch": row.batch, "n": n, "device": str(device),
           "correct": int(correct.sum()), "iterations": ITERATIONS, "lr": LR, "widened": widen}
    try:
        ours = AlphaOurs(net.network, prop, batches, device, widen)
        peer = AlphaPeer(Peer(onnx_path, prop, batches, device))
        times = timed_side_by_side({"ours": ours, "peer": peer}, batches, device, repeat)  # interleaved
        (t_ours, low_ours), (t_peer, low_peer) = times["ours"], times["peer"]
        ours_m = margins_ours(low_ours, prop.labels, peer.peer.others)
        peer_m = torch.cat([l.double().cpu() for l in low_peer])
        diff = ours_m - peer_m
        cert_ours = int((((ours_m > 0).all(1)) & correct).sum())
        cert_peer = int((((peer_m > 0).all(1)) & correct).sum())
        ours.reports.clear()
        ops_o, syncs_o = count_ops(lambda: ours(batches[0]))
        it_o = ours.reports[-1].iterations
        idx, bx = peer.peer.tensor(batches[0])
        # counted over exactly ITERATIONS iterations (its early stop after 10 without improvement off for
        # the count only: the timed runs keep it), so that the division by ITERATIONS is per iteration
        opts = peer.peer.module.bound_opts["optimize_bound_args"]
        patience, opts["early_stop_patience"] = opts["early_stop_patience"], ITERATIONS + 1
        ops_p, syncs_p = count_ops(lambda: peer.bounds(idx, bx))
        opts["early_stop_patience"] = patience
        rec.update(status="ok", ours_s=t_ours, peer_s=t_peer, ratio=t_ours / t_peer, certified_ours=cert_ours,
                   certified_peer=cert_peer, ops_per_iter_ours=ops_o / it_o, syncs_per_iter_ours=syncs_o / it_o,
                   ops_per_iter_peer=ops_p / ITERATIONS, syncs_per_iter_peer=syncs_p / ITERATIONS,
                   margin_min_ours_minus_peer=float(diff.min()), margin_mean_ours_minus_peer=float(diff.mean()),
                   rows_looser_by_1e_3=int((diff < -1e-3).sum()), rows=diff.numel())
    except Exception as exc:  # noqa: BLE001 - one failing row is reported, the others still run
        rec.update(status="error", error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
    if check_reproducibility and rec["status"] == "ok":
        try:
            rec.update(reproducibility(net.network, prop, onnx_path, device, widen, ours_m, row.batch, peer.peer.others))
        except Exception as exc:  # noqa: BLE001 - the row's own figures stand
            rec.update(reproducibility_error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
    print_alpha(rec)
    return rec


def print_alpha(r: dict) -> None:
    print_row(r, f"{r['row']:30s} {r['batch']:5d}", lambda r: (
        f"{r['ours_s']:9.3f} {r['peer_s']:9.3f} {r['ratio']:6.2f} "
        f"{r['certified_ours']:4d}/{r['certified_peer']:<4d} {r['ops_per_iter_ours']:6.0f}/{r['ops_per_iter_peer']:<7.0f} "
        f"{r['syncs_per_iter_ours']:5.1f}/{r['syncs_per_iter_peer']:<6.1f} {r['margin_min_ours_minus_peer']:9.2e} "
        f"{r['margin_mean_ours_minus_peer']:9.2e}"
        + (f" {r['peer_self_min']:9.2e} {r['ours_self_min']:9.2e} {r['peer_spread_max']:9.2e} "
           f"{min(d[0] for d in r['ours_vs_peer_worst'].values()):9.2e}" if "peer_self_min" in r else "")))


def clamp_gradient_at_bounds() -> float:
    """The gradient torch gives ``clamp(x, 0., 1.)`` at ``x = 0`` and ``x = 1``: 1 up to torch 2.13; 0 in
    torch 2.14, where auto_LiRPA's alphas, initialised at exactly 0 or 1 and clamped with number bounds
    (``BoundRelu._relu_mask_alpha``), get no gradient at all: its alpha-CROWN then never moves off its
    initial (CROWN) slopes and stops after ``early_stop_patience`` iterations."""
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    (g,) = torch.autograd.grad(torch.clamp(x, min=0.0, max=1.0).sum(), x)
    return float(g.min())


def run_alpha(rows: str, device: torch.device, repeat: int, n_override: int | None, widen: bool,
              check_reproducibility: bool = False) -> list[dict]:
    chosen = ALPHA_ROWS if rows == "all" else [r for r in ALPHA_ROWS if r.name in rows.split(",")]
    if clamp_gradient_at_bounds() == 0.0:
        print(f"warning: torch {torch.__version__} gives clamp no gradient at its bounds: auto_LiRPA's alpha-CROWN "
              f"does not optimise here (it stays at CROWN); use torch 2.13 in the peer environment", flush=True)
    print(HEADER + (f" {'peer self':>9s} {'ours self':>9s} {'pr spread':>9s} {'o-pr wrst':>9s}"
                    if check_reproducibility else ""))
    out = []
    for row in chosen:
        t0 = time.perf_counter()
        out.append(run_alpha_row(row, device, repeat, n_override, widen, check_reproducibility))
        out[-1]["wall_s"] = time.perf_counter() - t0
    return out


__all__ = ["ALPHA_ROWS", "run_alpha"]
