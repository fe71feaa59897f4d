"""Counterexample search: projected gradient descent with random restarts, batched over boxes and
restarts, and the float64 confirmation of what it finds.

Algorithm: every attacked box starts ``restarts`` points (the box's centre and uniform random points, the odd
restarts' moved first by two signed steps along a random output direction, :func:`cfruntime.box_search.diversify`,
unless ``diversified=False``: the driver's attacks on input-split boxes, where the one random restart is better
left uniform) and
minimises the violation ``min_k max_{r in k} (A_r y - b_r)`` of the property (:meth:`Objective.violation`;
``<= 0``: the output satisfies a disjunct) or, per disjunct, ``max_{r in k} (A_r y - b_r)`` (one start
per disjunct and restart: a minimum over disjuncts has a gradient for one of them only) by signed
gradient steps of ``width * step_t`` (decaying), projected onto the box.  An optional ``penalty(values)``
(``[N]``, >= 0) is added to the objective: the driver uses it to pull the points of a ReLU-split domain
into its subdomain.  The best point of every start is kept.  A point whose violation is ``<= 0`` is only a
candidate: :func:`confirm` rounds it to float32 inside the box and evaluates the network again in
float64 (:func:`cfruntime.results.confirm_counterexample`); only then is it a ``sat``.
"""

from __future__ import annotations

import torch

from cfruntime.box_search import ODI_STEPS, diversify


def pgd(net, objective, lb: torch.Tensor, ub: torch.Tensor, *, restarts: int, steps: int, generator: torch.Generator,
        per_disjunct: bool = False, penalty=None, deadline: float | None = None, diversified: bool = True):
    """``(x [N, n], violation [N])``: the best point found in each box ``[lb[i], ub[i]]`` (``[N, n]``) and
    its violation (see the module docstring); fewer steps when the :func:`time.monotonic` ``deadline``
    comes first.  ``diversified=False``: the odd restarts keep their uniform random starts."""
    import time

    n_box, n = lb.shape
    groups = len(objective.groups) if per_disjunct else 1
    reps = restarts * groups
    lo, hi = lb.repeat(reps, 1), ub.repeat(reps, 1)  # [reps * N, n]: restart-major blocks of N boxes
    width = hi - lo
    x = lo + torch.rand(lo.shape, generator=generator, dtype=lo.dtype) * width
    for g in range(groups):  # the first start of every box (and disjunct): its centre
        x[g * restarts * n_box:g * restarts * n_box + n_box] = (lb + ub) / 2
    odd = torch.nonzero((torch.arange(lo.shape[0]) // n_box) % restarts % 2 == 1).reshape(-1)
    if diversified and odd.numel():  # the odd restarts: output-diversified starts
        x[odd] = diversify(net, x[odd], lo[odd], hi[odd], None, ODI_STEPS, generator, forward=net.forward)
    target = torch.arange(groups).repeat_interleave(restarts * n_box) if per_disjunct else None
    best_x, best = x.clone(), torch.full((lo.shape[0],), torch.inf, dtype=lo.dtype)
    for t in range(steps + 1):
        x = x.detach().requires_grad_(True)
        values = net.forward_all(x) if penalty is not None else None
        y = values[-1] if values is not None else net.forward(x)
        obj = _objective(objective, y, target)
        total = obj if penalty is None else obj + penalty(values)
        with torch.no_grad():
            better = total < best
            best = torch.where(better, total, best)
            best_x[better] = x[better]
        if t == steps or (deadline is not None and time.monotonic() > deadline):
            break
        (g,) = torch.autograd.grad(total.sum(), x)
        step = width * (0.1 * (1 - t / steps) + 0.005)
        with torch.no_grad():
            x = torch.minimum(torch.maximum(x - step * g.sign(), lo), hi)
    with torch.no_grad():
        violation = objective.violation(net.forward(best_x))
    violation = violation.reshape(reps, n_box)
    pick = violation.argmin(0)
    rows = pick * n_box + torch.arange(n_box)
    return best_x[rows], violation.amin(0)


def _objective(objective, y, target):
    if target is None:
        return objective.violation(y)
    excess = y @ objective.A.T.to(y.dtype) - objective.b.to(y.dtype)  # [N, R]
    member = objective.member[target]  # [N, R]
    return torch.where(member, excess, torch.full_like(excess, -torch.inf)).amax(1)


def confirm(net, prop, region: int, xs: torch.Tensor, violations: torch.Tensor, limit: int = 8):
    """The first confirmed counterexample (:class:`cfruntime.results.Counterexample`) among the points ``xs``
    whose violation is ``<= 0`` (at most ``limit`` tried, the most violating first), else None."""
    from cfruntime.results import confirm_counterexample

    order = torch.argsort(violations)
    for i in order[:limit].tolist():
        if not float(violations[i]) <= 0:
            break
        cex = confirm_counterexample(net, prop, region, xs[i].detach().numpy())
        if cex is not None:
            return cex
    return None


def split_penalty(structure, domains, rows: torch.Tensor):
    """``penalty(values) -> [N]``: how far points are outside their subdomains (the sum of ``relu(-z)`` over
    the active ReLU splits and ``relu(z)`` over the inactive ones, and of the distance of every cut curve
    neuron's value to its interval; ``rows``: each point's domain), or None when no domain has a split."""
    from cfmlir.bab.domains import hi_key, lo_key, split_key

    splits = [(s.pre, domains[split_key(s.pre)][rows].to(torch.float64)) for s in structure.split_layers
              if split_key(s.pre) in domains]
    cuts = [(c.pre, (domains[split_key(c.pre)][rows] != 0).to(torch.float64), domains[lo_key(c.pre)][rows],
             domains[hi_key(c.pre)][rows]) for c in structure.curve_layers if split_key(c.pre) in domains]
    if not splits and not cuts:
        return None

    def penalty(values):
        total = 0.0
        for k, sign in splits:
            total = total + torch.relu(-sign * values[k]).sum(1)
        for k, mark, lo, hi in cuts:
            z = values[k]
            total = total + (mark * (torch.relu(lo - z) + torch.relu(z - hi))).sum(1)
        return total

    return penalty
