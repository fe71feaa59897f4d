"""The peer's side of the side-by-side benchmarks (``bench/peer_compare.py`` and its alpha rows,
``bench/peer_compare_alpha.py``), and how both measure: auto_LiRPA on the same boxes through the shared
harness (``../shared/peers``), warm minimum-of-N timing of both tools interleaved, and torch-operation counts.  Its own module so
that the two scripts import it and not each other."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
PEERS = SHARED / "peers"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_side_by_side(runs: dict, batches, device, repeat: int, warm: dict | None = None,
                       min_seconds: float = 0.0, max_repeat: int = 50) -> dict:
    """``{name: (seconds, outputs)}`` of several tools timed *interleaved*: after each tool's warm-up
    (the first batch, then ``warm[name]`` runs of all batches: our CPU runs replay a recording
    from a batch shape's fourth call on), every repetition runs
    all batches of each tool in turn (the order rotating), and each tool's time is its minimum over the
    repetitions.  A load spike or a slow drift of the machine then falls on every tool alike, where
    timing one tool's repetitions after the other's put it on one side only (the misses of
    ``bench/peer_compare.py`` moved between rows from run to run).  Repetitions: ``repeat``, and more
    (up to ``max_repeat``) until every tool has been timed for ``min_seconds`` in all (short rows: a
    few milliseconds a run are noisy)."""
    warm = warm or {}
    for name, run_batch in runs.items():
        run_batch(batches[0])
        for _ in range(warm.get(name, 0)):
            for b in batches:
                run_batch(b)
    sync(device)
    names = list(runs)
    best = {n: (math.inf, None) for n in names}
    spent = {n: 0.0 for n in names}
    k = 0
    while k < repeat or (k < max_repeat and min(spent.values()) < min_seconds):
        for name in names[k % len(names):] + names[:k % len(names)]:
            total, res = 0.0, []
            for b in batches:
                t0 = time.perf_counter()
                out = runs[name](b)
                sync(device)
                total += time.perf_counter() - t0
                res.append(out)
            spent[name] += total
            if total < best[name][0]:
                best[name] = (total, res)
        k += 1
    return best


class Peer:
    """auto_LiRPA on the same boxes, through the shared harness's ONNX loader and margin matrix."""

    def __init__(self, onnx_path: Path, prop, batches, device, dense_intermediate: bool = False):
        import lirpa_bounds as lb
        from auto_LiRPA import BoundedModule

        model, tnet = lb.load_network(str(onnx_path), peer_converter())
        _, dims = lb.onnx_input_info(model)
        shape = [d if d is not None else 1 for d in dims[1:]]
        n = prop.lb.shape[0]
        self.lo = prop.lb.float().reshape(n, *shape).to(device)
        self.hi = prop.ub.float().reshape(n, *shape).to(device)
        self.x = (self.lo + self.hi) / 2
        self.C, self.others = lb.margin_C(prop.labels.to(device), prop.C.shape[1], device, torch.float32)
        tnet = tnet.to(device, torch.float32)
        opts = {}
        if dense_intermediate:
            opts = {"sparse_intermediate_bounds": False, "sparse_conv_intermediate_bounds": False}
            if any(node.op_type == "Conv" for node in model.graph.node):
                opts["conv_mode"] = "matrix"
        bs = len(batches[0])
        self.module = BoundedModule(tnet, torch.zeros_like(self.x[:bs]), bound_opts=opts, device=device)
        self.method = None

    def tensor(self, b):
        from auto_LiRPA import BoundedTensor, PerturbationLpNorm

        idx = torch.as_tensor(b, device=self.x.device)
        return idx, BoundedTensor(self.x[idx], PerturbationLpNorm(norm=float("inf"), x_L=self.lo[idx], x_U=self.hi[idx]))

    def bounds(self, idx, bx):
        with torch.no_grad():
            lb, _ = self.module.compute_bounds(x=(bx,), method=self.method, C=self.C[idx])
        return lb

    def __call__(self, b):
        idx, bx = self.tensor(b)
        return self.bounds(idx, bx)


def count_ops(fn):
    from cfruntime.op_count import OpCounter

    with OpCounter() as c:
        fn()
    return c.ops, c.syncs


def margins_ours(lowers, labels, others) -> torch.Tensor:
    low = torch.cat([l.double().cpu() for l in lowers])
    return low.gather(1, others.cpu())


def peer_converter() -> str:
    """The harness's ONNX -> torch converter: onnx2pytorch where it imports (it needs a working torchvision),
    else the harness's own small converter (feed-forward MLP/conv graphs: every row here)."""
    try:
        import onnx2pytorch  # noqa: F401
    except Exception:  # noqa: BLE001
        return "native"
    return "onnx2pytorch"


def peer_available() -> str | None:
    """None if auto_LiRPA and the harness import, else why not."""
    if not (PEERS / "auto_LiRPA").is_dir():
        return f"{PEERS} not found (the peer tools; see ../shared/peers/README.md)"
    for p in (str(PEERS / "auto_LiRPA"), str(PEERS)):
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        import auto_LiRPA  # noqa: F401
        import lirpa_bounds  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return f"auto_LiRPA cannot be imported ({type(exc).__name__}: {exc}); set-up in ../shared/peers/README.md"
    return None
