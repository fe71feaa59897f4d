"""Branching: which ReLU neuron, S-curve neuron or input dimension each domain is split on, and its two children.

Algorithm (ReLU splits, scores after BaBSR, Bunel et al. 2020): for each domain, the row to improve (the
best row of its worst disjunct, :meth:`Objective.target_rows`) is propagated backwards through the
network with every unstable ReLU replaced by a linear relaxation slope -- ``u/(u-l)`` for a negative
coefficient (the upper line, whose intercept ``-l u/(u-l)`` loosens the lower bound), ``1`` or ``0`` for a
positive one (DeepPoly's lower line) -- giving ``lam``, the coefficient of each ReLU's output in the row's
linear bound.  A neuron's score estimates how much splitting it improves the bound:

    score = | max(b lam (s - 1), b lam s) + min(lam, 0) (-l s) |,    s = u/(u - l)

(``b``: the bias of the affine layer computing the pre-activation; the second term is the intercept the
split removes).  Only unstable neurons (``l < 0 < u``) are candidates.  The *intercept score*
``-min(lam, 0) (-l s)`` (the intercept term alone) is the backup ranking FSB also draws candidates from, as
alpha-beta-CROWN's kFSB does: on oval21's ``cifar_base_kw`` img5303 the BaBSR score alone keeps choosing
first-layer convolution neurons whose splits change nothing (the worst subdomain split 30 times at the same
bound), where the intercept score picks the last hidden layer's and the property is decided in 75 subdomains.

S-curve neurons (sigmoid, tanh; GenBaB-style branching on general activations) are cut at ``t = 0`` when
``l < 0 < u`` (each side is then convex or concave, where the certifier's lines are tight), else at the
midpoint; a cut ``[l, u] -> [l, t], [t, u]`` is sound for any ``t``.  Their score is ``|lam|`` times an
estimate of the relaxation's gap over ``[l, u]``,

    gap = f(u) - f(l) - (u - l) min(f'(l), f'(u))

(the output range less what a line of the smaller end slope explains: ``O((u - l)^2)`` on a narrow
interval, the whole range on a wide one); neurons narrower than :data:`CURVE_MIN_WIDTH` are not cut.
They are numbered after the ReLU neurons.  *FSB* (filtered smart branching)
takes each domain's ``k`` best-scored candidates (and the best by the intercept score among the rest),
bounds both children of every candidate (one engine call for all), and keeps the candidate whose
children's values have the largest sum (:data:`FSB_REDUCE`; input splits: whose worse child is best) --
its children are then already bounded.  The scores only steer the search: any choice is sound.

Input splits halve a domain's box along its widest dimension (``input_split="widest"``, the default), or the
one with the largest ``width_i * |d row / d x_i|`` at the box's centre (``"gradient"``; the widest where the
gradient vanishes), or, with FSB and ``input_candidates > 1``, the best of that many best-scored dimensions
after bounding both halves.  With clipping (:mod:`cfmlir.bab.clipping`) the widest dimension wins: on the
eight ACAS Xu instances FSB over the gradient's three best left open at 116 s, widest + clipping decides
six in 0.8-20.6 s, the gradient's best + clipping four (docs/bab.md).
"""

from __future__ import annotations

import torch

from cfmlir.bab.domains import hi_key, lo_key, split_key
from cfmlir.bab.domains import Domains
from cfruntime.network.graph import ELEMENTWISE_FUNCTIONS

#: FSB over neuron splits ranks a candidate by the sum of its two children's values, not by the worse one: a
#: child keeps the better of its own and its parent's rows, so where no candidate's worse child gains anything
#: they all sit at the parent's value, and a candidate whose worse child gains 1e-5 beat one whose better child
#: gains 0.15 -- on mnistfc 256x2 prop_0 (DeepPoly) the search then split one subdomain 130 deep without
#: deciding, where the sum decides it in 1575 subdomains (2.8 s; the worse child's value alone with BaBSR's
#: candidates only: 1237, 2.6 s)
FSB_REDUCE = "sum"
#: an S-curve neuron whose input interval is narrower than this is not cut any more
CURVE_MIN_WIDTH = 1e-4

#: the derivatives of the curve kinds (:data:`cfmlir.bab.structure.CURVE_KINDS`)
CURVE_DERIVATIVES = {
    "sigmoid": lambda x: torch.sigmoid(x) * (1 - torch.sigmoid(x)),
    "tanh": lambda x: 1 - torch.tanh(x) ** 2,
}


# -- ReLU splits ---------------------------------------------------------------------------------------------
def backward_coefficients(mnet, structure, domains: Domains, targets: torch.Tensor) -> dict[int, torch.Tensor]:
    """``{relu or curve layer: lam [P, n]}``: the coefficient of every split (or curve) layer's output in
    the relaxed linear form of each domain's target row (see the module docstring)."""
    if len(domains) == 0:
        return {}
    last = mnet.layers[-1]
    lam = {last.index: torch.nn.functional.one_hot(targets, last.size).to(torch.float64)}
    out = {}
    for layer in reversed(mnet.layers[1:]):
        g = lam.pop(layer.index, None)
        if g is None:
            continue
        kind = layer.kind
        if kind == "relu":
            out[layer.index] = g
            pre = layer.preds[0]
            if lo_key(pre) in domains:
                l, u = domains[lo_key(pre)], domains[hi_key(pre)]
                upper_slope = torch.where(u <= 0, 0.0, torch.where(l >= 0, 1.0, u / (u - l).clamp_min(1e-300)))
                lower_slope = torch.where(u <= 0, 0.0, torch.where(l >= 0, 1.0, (u >= -l).to(torch.float64)))
                g = g * torch.where(g < 0, upper_slope, lower_slope)
            _accumulate(lam, pre, g)
        elif kind == "affine":
            _accumulate(lam, layer.preds[0], layer.rmatvec(g))
        elif kind == "add":
            for q in layer.preds:
                _accumulate(lam, q, g)
        elif kind in ELEMENTWISE_FUNCTIONS:
            out[layer.index] = g
            pre = layer.preds[0]
            if lo_key(pre) in domains:  # the chord's slope
                l, u = domains[lo_key(pre)], domains[hi_key(pre)]
                f = ELEMENTWISE_FUNCTIONS[kind]
                width = (u - l).clamp_min(1e-12)
                g = g * (f(u, layer.alpha) - f(l, layer.alpha)) / width
            _accumulate(lam, pre, g)
        # a max-pool layer stops the propagation: the layers before it get no score from this row
    return out


def _accumulate(lam: dict, k: int, g: torch.Tensor) -> None:
    if k == 0:
        return
    lam[k] = g if k not in lam else lam[k] + g


def neuron_scores(mnet, structure, domains: Domains, targets: torch.Tensor) -> torch.Tensor:
    """``[P, N]``: the scores of every split layer's neurons (in the order of ``structure.split_layers``,
    concatenated), then of every curve layer's; ``-1`` for neurons that are no candidates (stable or split
    ReLUs, curve neurons narrower than :data:`CURVE_MIN_WIDTH`)."""
    return candidate_scores(mnet, structure, domains, targets)[0]


def candidate_scores(mnet, structure, domains: Domains, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(scores, intercept scores)``, both ``[P, N]`` as :func:`neuron_scores` (larger is better, ``-1``: no
    candidate); a curve neuron's intercept score is its score."""
    lam = backward_coefficients(mnet, structure, domains, targets)
    parts, backup = [], []
    for s in structure.split_layers:
        l, u = domains[lo_key(s.pre)], domains[hi_key(s.pre)]
        g = lam.get(s.relu, torch.zeros_like(l))
        unstable = (l < 0) & (u > 0)
        slope = torch.where(unstable, u / (u - l).where(unstable, torch.ones_like(u)), torch.zeros_like(u))
        intercept = -l.clamp(max=0) * slope
        pre = mnet.layers[s.pre]
        bias = pre.bias.to(torch.float64).reshape(1, -1) if pre.kind == "affine" and pre.bias is not None \
            and pre.bias.dim() == 1 else torch.zeros(1, s.size, dtype=torch.float64)
        bl = bias * g
        score = (torch.maximum(bl * (slope - 1), bl * slope) + g.clamp(max=0) * intercept).abs()
        # a tiny intercept-based tie-break, so that an unstable neuron always outranks a stable one
        score = score + 1e-12 * (-g.clamp(max=0) * intercept + 1)
        parts.append(torch.where(unstable, score, torch.full_like(score, -1.0)))
        # (the bias term breaks the intercept score's ties, so that of two equal intercepts the one the
        # BaBSR estimate prefers comes first)
        second = -g.clamp(max=0) * intercept + 1e-12 * (score + 1)
        backup.append(torch.where(unstable, second, torch.full_like(second, -1.0)))
    for c in structure.curve_layers:
        l, u = domains[lo_key(c.pre)], domains[hi_key(c.pre)]
        g = lam.get(c.act, torch.zeros_like(l))
        f, df = ELEMENTWISE_FUNCTIONS[c.kind], CURVE_DERIVATIVES[c.kind]
        gap = (f(u, None) - f(l, None) - (u - l) * torch.minimum(df(l), df(u))).clamp(min=0)
        score = g.abs() * gap + 1e-12 * (u - l)  # the width breaks ties (and makes every candidate positive)
        parts.append(torch.where(_cuttable(l, u), score, torch.full_like(score, -1.0)))
        backup.append(parts[-1])
    return torch.cat(parts, 1), torch.cat(backup, 1)


def _cuttable(l: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    return (u - l) > CURVE_MIN_WIDTH


def cut_points(l: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Where an S-curve neuron with input interval ``[l, u]`` is cut: 0 when it lies inside, else the midpoint."""
    return torch.where((l < 0) & (u > 0), torch.zeros_like(l), (l + u) / 2)


def unstable_count(structure, domains: Domains) -> torch.Tensor:
    """``[P]``: each domain's neurons left to branch on (unstable ReLUs, curve neurons still wide enough)."""
    total = torch.zeros(len(domains), dtype=torch.int64)
    for s in structure.split_layers:
        l, u = domains[lo_key(s.pre)], domains[hi_key(s.pre)]
        total += ((l < 0) & (u > 0)).sum(1)
    for c in structure.curve_layers:
        total += _cuttable(domains[lo_key(c.pre)], domains[hi_key(c.pre)]).sum(1)
    return total


def neuron_children(structure, domains: Domains, choice: torch.Tensor) -> Domains:
    """The two children of every domain split on its neuron ``choice`` (``[P]``, indices into the
    concatenated split layers, then curve layers): rows ``0..P-1`` the upper side (a ReLU: ``z >= 0``,
    lower bound 0; a curve neuron: ``z >= t``), ``P..2P-1`` the lower side (``z <= 0``, ``z <= t``); one split
    deeper.  ``split<pre>`` marks the split neuron: ``+1``/``-1`` by side (a curve neuron cut again keeps
    the mark of its last cut; its interval holds all of them)."""
    p = len(domains)
    kids = domains.repeat(2)
    rows = torch.arange(p)
    start = 0
    for s in structure.split_layers:
        hit = (choice >= start) & (choice < start + s.size)
        if bool(hit.any()):
            r, n = rows[hit], choice[hit] - start
            kids[lo_key(s.pre)][r, n] = 0.0
            kids[split_key(s.pre)][r, n] = 1
            kids[hi_key(s.pre)][r + p, n] = 0.0
            kids[split_key(s.pre)][r + p, n] = -1
        start += s.size
    for c in structure.curve_layers:
        hit = (choice >= start) & (choice < start + c.size)
        if bool(hit.any()):
            r, n = rows[hit], choice[hit] - start
            t = cut_points(domains[lo_key(c.pre)][r, n], domains[hi_key(c.pre)][r, n])
            kids[lo_key(c.pre)][r, n] = t
            kids[split_key(c.pre)][r, n] = 1
            kids[hi_key(c.pre)][r + p, n] = t
            kids[split_key(c.pre)][r + p, n] = -1
        start += c.size
    kids["depth"] = kids["depth"] + 1
    return kids


# -- input splits --------------------------------------------------------------------------------------------
def input_scores(net, objective, domains: Domains, targets: torch.Tensor, method: str = "widest") -> torch.Tensor:
    """``[P, n0]``: ``method="widest"``, each box's widths (alpha-beta-CROWN's ``naive``: the longest edge);
    ``"gradient"``, ``width_i * |d A_target y / d x_i|`` at each box's centre (the width alone where the
    gradient is 0 everywhere)."""
    lb, ub = domains["lb"], domains["ub"]
    width = ub - lb
    if method == "widest":
        return width
    x = ((lb + ub) / 2).requires_grad_(True)
    rows = net.forward(x) @ objective.A.T.to(x.dtype)  # [P, R]
    picked = rows.gather(1, targets.reshape(-1, 1)).sum()
    (grad,) = torch.autograd.grad(picked, x)
    score = width * grad.abs()
    flat = score.amax(1, keepdim=True) <= 0
    return torch.where(flat, width, score).detach()


def input_children(domains: Domains, dims: torch.Tensor) -> Domains:
    """Both halves of every domain's box along its dimension ``dims`` (``[P]``): rows ``0..P-1`` the lower
    halves, ``P..2P-1`` the upper ones (the halves cover the box: both contain the midpoint)."""
    p = len(domains)
    kids = domains.repeat(2)
    rows = torch.arange(p)
    mid = (domains["lb"][rows, dims] + domains["ub"][rows, dims]) / 2
    kids["ub"][rows, dims] = mid
    kids["lb"][rows + p, dims] = mid
    kids["depth"] = kids["depth"] + 1
    return kids


# -- filtered smart branching ------------------------------------------------------------------------------
def pick_best_candidates(child_values: torch.Tensor, p: int, k: int, reduce: str = "worse") -> torch.Tensor:
    """``[P]``: for candidate children laid out ``[k blocks of (P active/lower, P inactive/upper)]``
    (values ``[2 k P]``), the candidate whose children are best: ``reduce="worse"``, the largest value of the
    worse child (ties: the better child); ``"sum"``, the largest sum of both children's values (see
    :data:`FSB_REDUCE`).  NaN counts as ``-inf``."""
    v = torch.nan_to_num(child_values.reshape(k, 2, p), nan=-torch.inf)
    worse, better = v.amin(1), v.amax(1)  # [k, P]
    if reduce == "sum":
        return torch.nan_to_num(worse + better, nan=-torch.inf).argmax(0)  # inf + -inf: a stable candidate
    if reduce != "worse":
        raise ValueError(f"unknown FSB reduction '{reduce}'")
    key = worse + 1e-9 * torch.tanh(better)
    key = torch.where(torch.isnan(key), torch.full_like(key, -torch.inf), key)
    return key.argmax(0)


def gather_candidate_children(children: Domains, best: torch.Tensor, p: int, k: int) -> Domains:
    """The two children of each domain's chosen candidate ``best`` from the candidates' children (same
    layout as :func:`pick_best_candidates`), as rows ``0..P-1`` and ``P..2P-1``."""
    rows = torch.arange(p)
    first = best * 2 * p + rows
    return children.select(torch.cat([first, first + p]))
