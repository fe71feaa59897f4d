"""Points of input boxes and projected gradient descent over them: the concrete search shared by the
soundness check (:func:`cfruntime.soundness.check_bounds`) and the attacks
(:func:`cfruntime.soundness.vnnlib_counterexample`, :mod:`cfruntime.region_screen`).

Example: ``pts, src = box_points(lb, ub, 256, 64, gen)`` -> ``[B, P, n]`` points of the boxes ``[lb[b],
ub[b]]``; ``best_x, best = pgd(net, lb, ub, sample_ids, objective, 50, gen)`` minimises ``objective`` over
rows of the boxes ``lb[sample_ids]..ub[sample_ids]``; ``diversify_steps=ODI_STEPS`` first moves the odd rows'
random starts along random output directions (:func:`diversify`).
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


#: :func:`diversify`'s steps for the attacks on VNN-LIB properties: two signed steps of half the box reach a
#: corner region.  mnistfc 2021 256x6 ``prop_3_0.05`` (sat): PGD from uniform starts ends at violations
#: 0.73-0.81 on every disjunct whatever its steps and restarts; from two diversified starts it reaches below 0
ODI_STEPS = 2


def diversify(network: Network, x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, sample_ids, steps: int,
              gen: torch.Generator, forward=None) -> torch.Tensor:
    """Output-diversified starts (Tashiro et al., 2020): each row of ``x`` [R, n] takes ``steps`` signed
    steps of half its box ``[lo, hi]`` up the gradient of ``w_r . f(x_r)``, ``w_r`` a random direction in
    ``[-1, 1]^out`` per row, projected onto the box.  PGD from uniform starts stays where the property's
    violation is flat or locally minimal; a random output direction moves the start to another part of the
    box (towards a corner: the attack's objective alone may have no gradient there).  ``forward(x) -> y``
    defaults to the network's output with step layers passed straight through (:func:`forward_upto`)."""
    if steps <= 0 or x.shape[0] == 0:
        return x
    forward = forward or (lambda v: forward_upto(network, v, sample_ids, None)[-1])
    half = (hi - lo) / 2
    w = None
    for _ in range(steps):
        x = x.detach().requires_grad_(True)
        y = forward(x).reshape(x.shape[0], -1)
        if w is None:
            w = 2 * torch.rand(y.shape, generator=gen, dtype=y.dtype) - 1
        (g,) = torch.autograd.grad((w * y).sum(), x)
        with torch.no_grad():
            x = torch.minimum(torch.maximum(x + half * g.sign(), lo), hi)
    return x.detach()


def pgd(network: Network, lb, ub, sample_ids, objective, steps: int, gen: torch.Generator, start=None,
         upto: int | None = None, diversify_steps: int = 0):
    """Minimise ``objective(vals, y) -> [R]`` over rows of the boxes ``lb[sample_ids]..ub[sample_ids]``
    (``vals``: the layers up to ``upto``, default all).  Random starts, or ``start``; with
    ``diversify_steps`` the odd rows' random starts are first moved by :func:`diversify` (the even rows keep
    theirs: what plain PGD finds is still found).  Returns (best_x [R, n], best_obj [R])."""
    lo, hi = lb[sample_ids], ub[sample_ids]
    if start is None:
        x = lo + torch.rand(lo.shape, generator=gen, dtype=torch.float64) * (hi - lo)
        odd = torch.arange(1, x.shape[0], 2)
        if diversify_steps > 0 and odd.numel():
            x[odd] = diversify(network, x[odd], lo[odd], hi[odd], sample_ids[odd], diversify_steps, gen)
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
