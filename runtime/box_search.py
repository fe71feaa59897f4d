"""Points of input boxes and projected gradient descent over them: the concrete search shared by the
soundness check (:func:`cfruntime.soundness.check_bounds`) and the attacks
(:func:`cfruntime.soundness.vnnlib_counterexample`, :mod:`cfruntime.region_screen`).

Example: ``pts, src = box_points(lb, ub, 256, 64, gen)`` -> ``[B, P, n]`` points of the boxes ``[lb[b],
ub[b]]``; ``best_x, best = pgd(net, lb, ub, sample_ids, objective, 50, gen)`` minimises ``objective`` over
rows of the boxes ``lb[sample_ids]..ub[sample_ids]``.
"""

from __future__ import annotations

import math

import torch

from cfruntime.network.graph import Network


def box_points(lb: torch.Tensor, ub: torch.Tensor, n_samples: int, n_vertices: int, gen: torch.Generator):
    """For each sample: [P, n] points (uniform, vertices, centre, corners) tagged with their source."""
    b, n = lb.shape
    pts, src = [], []
    if n_samples > 0:
        u = torch.rand(b, n_samples, n, generator=gen, dtype=torch.float64)
        pts.append(lb[:, None] + u * (ub - lb)[:, None])
        src += ["sample"] * n_samples
    pts.append(((lb + ub) / 2)[:, None])
    pts.append(lb[:, None])
    pts.append(ub[:, None])
    src += ["sample", "vertex", "vertex"]
    if n_vertices > 0:
        free = (ub > lb).sum(dim=1).max().item()
        if free > 0 and 2 ** free <= n_vertices:
            k = 2 ** free
            bits = ((torch.arange(k)[:, None] >> torch.arange(free)[None, :]) & 1).to(torch.float64)  # [k, free]
            sel = torch.zeros(b, k, n, dtype=torch.float64)
            for i in range(b):
                idx = torch.nonzero(ub[i] > lb[i]).reshape(-1)
                sel[i][:, idx[: bits.shape[1]]] = bits[:, : idx.numel()]
        else:
            k = n_vertices
            sel = (torch.rand(b, k, n, generator=gen, dtype=torch.float64) < 0.5).to(torch.float64)
        pts.append(lb[:, None] + sel * (ub - lb)[:, None])
        src += ["vertex"] * k
    return torch.cat(pts, dim=1), src


#: layer kinds whose derivative is 0 wherever it exists (steps): the attacks differentiate them as the
#: identity (straight-through, as attacks on quantised nets do); their values stay the network's
STEP_KINDS = frozenset({"sign", "floor"})


def forward_upto(network: Network, x: torch.Tensor, sample_ids, upto: int | None) -> list[torch.Tensor]:
    """``network.forward_all`` of flat inputs ``x`` [R, n], stopped after layer ``upto`` (None: all), with
    the gradient of a step layer (:data:`STEP_KINDS`) passed straight through: without it, PGD on a net of
    Sign activations (traffic_signs_recognition_2023) gets a zero gradient and never moves."""
    last = len(network.layers) - 1 if upto is None else min(upto, len(network.layers) - 1)
    vals = [x]
    for layer in network.layers[1:last + 1]:
        v = layer.evaluate([vals[p] for p in layer.preds], sample_ids)
        if layer.kind in STEP_KINDS and v.requires_grad:
            before = vals[layer.preds[0]]
            v = before + (v - before).detach()
        vals.append(v)
    return vals


def pgd(network: Network, lb, ub, sample_ids, objective, steps: int, gen: torch.Generator, start=None,
         upto: int | None = None):
    """Minimise ``objective(vals, y) -> [R]`` over rows of the boxes ``lb[sample_ids]..ub[sample_ids]``
    (``vals``: the layers up to ``upto``, default all).  Returns (best_x [R, n], best_obj [R])."""
    lo, hi = lb[sample_ids], ub[sample_ids]
    if start is None:
        x = lo + torch.rand(lo.shape, generator=gen, dtype=torch.float64) * (hi - lo)
    else:
        x = start.clone()
    best_x = x.clone()
    best = torch.full((x.shape[0],), math.inf, dtype=torch.float64)
    width = hi - lo
    for t in range(steps + 1):
        x = x.detach().requires_grad_(True)
        vals = forward_upto(network, x, sample_ids, upto)
        obj = objective(vals)
        with torch.no_grad():
            better = obj < best
            best = torch.where(better, obj, best)
            best_x[better] = x[better].detach()
        if t == steps:
            break
        (g,) = torch.autograd.grad(obj.sum(), x)
        step = width * (2.0 / steps) * (1.0 - t / (steps + 1))
        with torch.no_grad():
            x = torch.minimum(torch.maximum(x - step * g.sign(), lo), hi)
    return best_x.detach(), best.detach()
