"""Input splitting: deciding a VNN-LIB property that one pass of a certifier leaves ``unknown`` by
branch and bound over the input box (``cf-run --vnnlib``/``--instances``, ``--split``).

Algorithm: every input region the first pass did not verify is a pending box.  Each round splits
every pending box in two at the midpoint of one input dimension, the one with the largest
``width_i * sum_r |A_r . dy/dx_i|`` at the box's centre (its width times how much the property's
constraint rows ``A y`` move along it; the widest dimension where that gradient is 0), then

* evaluates the network at the centre of every half: a centre whose output satisfies a disjunct is a
  counterexample (``sat``, confirmed by :func:`cfruntime.results.confirm_counterexample`);
* bounds every half with the certifier, all the halves of a round in batches
  (:func:`cfmlir.engines.bounds_in_batches`, the rows ``A`` as the margin layer): a half where every
  disjunct has a row whose lower bound exceeds its right-hand side is verified and dropped.

The halves of a box cover it (both contain the midpoint), and each is bounded by the same sound
certifier, so no pending box left means the property holds on every region (``unsat``).  The search
stops ``unknown`` when the next round would pass ``max_boxes`` analysed boxes or end after the deadline:
a round's time is predicted from the last one's per half (:func:`predicted_round_s`: the last round's
seconds scaled by the ratio of the halves), so the time there is is used up to the last round that fits.
(A round that overruns costs nothing: the caller's deadline ends it -- ``cf-run`` kills the analysis at the
time limit, ``timeout`` instead of ``unknown`` -- and a counterexample found early in it still answers.)  The split dimension
only steers the search; which one is chosen never affects soundness.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

#: ``--split auto`` splits when at most this many input dimensions have a non-zero width
AUTO_MAX_FREE_INPUTS = 16
#: rows of ``A`` whose gradients steer the split (more rows: the first these many)
_GRADIENT_ROWS = 16


def predicted_round_s(last_round_s: float, last_halves: int, halves: int) -> float:
    """The predicted seconds of a round of ``halves`` halves after one of ``last_halves`` that took
    ``last_round_s``: linear in the halves (batching makes a round cheaper per half, never dearer, so this
    does not underestimate); 0 before the first round."""
    if last_halves <= 0:
        return 0.0
    return last_round_s * max(halves, 1) / last_halves


@dataclass
class SplitOutcome:
    """What input splitting found: ``verdict`` ``unsat``/``sat``/``unknown``; ``boxes`` halves analysed,
    ``rounds``; ``stopped`` why an ``unknown`` search ended (``"box limit"``, ``"deadline"``) else None;
    ``counterexample`` a :class:`cfruntime.results.Counterexample` for ``sat``."""

    verdict: str
    boxes: int
    rounds: int
    stopped: str | None = None
    counterexample: object = None

    def json(self) -> dict:
        return {"boxes": self.boxes, "rounds": self.rounds, "stopped": self.stopped}


def free_inputs(prop) -> int:
    """The most input dimensions of non-zero width in one region of ``prop``."""
    return max((int(np.count_nonzero(r.ub > r.lb)) for r in prop.regions), default=0)


def should_split(mode: str, prop) -> bool:
    """``--split``: ``on``, ``off``, or ``auto`` (at most :data:`AUTO_MAX_FREE_INPUTS` free inputs)."""
    if mode == "auto":
        return 0 < free_inputs(prop) <= AUTO_MAX_FREE_INPUTS
    return mode == "on"


def _split_dims(net, A: torch.Tensor, lb: torch.Tensor, ub: torch.Tensor, chunk: int) -> torch.Tensor:
    """The dimension to split of every box ``[lb, ub]`` ``[P, n]`` (see the module docstring), ``chunk``
    boxes at a time."""
    if lb.shape[0] > chunk:
        return torch.cat([_split_dims(net, A, lb[i:i + chunk], ub[i:i + chunk], chunk)
                          for i in range(0, lb.shape[0], chunk)])
    width = ub - lb
    x = ((lb + ub) / 2).requires_grad_(True)
    rows = net.forward(x) @ A[:_GRADIENT_ROWS].T  # [P, R]
    sens = torch.zeros_like(width)
    for r in range(rows.shape[1]):
        (g,) = torch.autograd.grad(rows[:, r].sum(), x, retain_graph=r + 1 < rows.shape[1])
        sens += g.abs()
    score = width * sens
    flat = score.amax(1, keepdim=True) <= 0  # no gradient (a dead region): the widest dimension
    score = torch.where(flat, width, score)
    return score.argmax(1)


def _halves(lb: torch.Tensor, ub: torch.Tensor, dims: torch.Tensor):
    """Both halves of every box along its dimension ``dims``: ``(lb [2P, n], ub [2P, n])``."""
    rows = torch.arange(lb.shape[0])
    mid = (lb[rows, dims] + ub[rows, dims]) / 2
    lo_ub, hi_lb = ub.clone(), lb.clone()
    lo_ub[rows, dims] = mid
    hi_lb[rows, dims] = mid
    return torch.cat([lb, hi_lb]), torch.cat([lo_ub, ub])


def decide_by_splitting(eng, net, prop, verified: list[bool], *, max_boxes: int, deadline: float | None = None,
                        batch_size: int = 256, device="cpu", check=None) -> SplitOutcome:
    """Decide ``prop`` (a :class:`cfruntime.properties.VnnlibProperty`) on ``net`` by input splitting with
    the engine ``eng`` (``bounds(margin_network, lb, ub, with_layers)``), given which regions one pass
    verified; ``deadline`` a :func:`time.monotonic` time; ``check(mnet, lb, ub, layers, region)`` is
    called on every batch's layer bounds (``cf-run --check``)."""
    from cfmlir.api import _raw
    from cfmlir.engines import bounds_in_batches
    from cfruntime.properties.vnnlib import boxes_verified, output_in_disjunct
    from cfruntime.results import confirm_counterexample

    net = _raw(net)  # a cfmlir.Network or a cfruntime network
    pending = {}  # region -> (lb [P, n], ub [P, n])
    for ri, (reg, ok) in enumerate(zip(prop.regions, verified)):
        if not ok:
            pending[ri] = (torch.from_numpy(reg.lb).reshape(1, -1).to(torch.float64),
                           torch.from_numpy(reg.ub).reshape(1, -1).to(torch.float64))
    boxes = rounds = last_count = 0
    last_round_s = 0.0
    while pending:
        count = 2 * sum(lb.shape[0] for lb, _ in pending.values())
        if boxes + count > max_boxes:
            return SplitOutcome("unknown", boxes, rounds, "box limit")
        if deadline is not None and time.monotonic() + predicted_round_s(last_round_s, last_count, count) > deadline:
            return SplitOutcome("unknown", boxes, rounds, "deadline")
        t0 = time.monotonic()
        rounds += 1
        after = {}
        for ri, (lb, ub) in pending.items():
            reg = prop.regions[ri]
            A_np, b, groups = reg.stacked()
            A = torch.from_numpy(np.asarray(A_np, dtype=np.float64))
            clb, cub = _halves(lb, ub, _split_dims(net, A, lb, ub, batch_size))
            centres = (clb + cub) / 2
            with torch.no_grad():
                ys = torch.cat([net.forward(centres[i:i + batch_size]).to("cpu", torch.float64)
                                for i in range(0, centres.shape[0], batch_size)]).numpy()
            for i, y in enumerate(ys):  # the halves' centres first: a violation ends the search
                if output_in_disjunct(reg, y) is not None:
                    cex = confirm_counterexample(net, prop, ri, centres[i].numpy())
                    if cex is not None:
                        return SplitOutcome("sat", boxes, rounds, None, cex)
            C = A.unsqueeze(0).expand(clb.shape[0], *A.shape)

            def on_slice(lo, hi, mnet, layers, ri=ri, clb=clb, cub=cub):
                if check is not None:
                    check(mnet, clb[lo:hi], cub[lo:hi], layers, ri)

            lower, _upper, _layers, _used = bounds_in_batches(
                eng, net, clb, cub, C, batch_size, device=device, with_layers=check is not None, on_slice=on_slice)
            boxes += clb.shape[0]
            keep = torch.from_numpy(~boxes_verified(lower.to("cpu", torch.float64).numpy(), b, groups))
            if bool(keep.any()):
                after[ri] = (clb[keep], cub[keep])
        pending = after
        last_round_s, last_count = time.monotonic() - t0, count
    return SplitOutcome("unsat", boxes, rounds)
