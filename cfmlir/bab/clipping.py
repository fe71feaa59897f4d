"""Clipping input boxes to where a counterexample may still lie (input branching).

Algorithm: a domain's row ``r`` has a lower bound ``A_r y >= L_r(x) = a_r . x + c_r`` linear in the input
over its box ``B = [lb, ub]`` (what a back-substitution certifier concretises), and its slack
``ell_r = min_B L_r - b_r`` (the bound the search keeps, less the row's threshold).  A counterexample of
disjunct ``k`` satisfies ``A_r y <= b_r`` for every row ``r`` of ``k``, so it lies where ``L_r(x) <= b_r``:
for each dimension ``i`` with ``a_ri > 0``

    x_i <= lb_i - e_r / a_ri,        and with a_ri < 0:   x_i >= ub_i - e_r / a_ri,    e_r = ell_r - delta_r

(``L_r - b_r`` at ``x`` is ``ell_r`` plus ``a_ri (x_i - lb_i)`` on the dimension alone, the others at
their minimum; ``delta_r > 0`` clips a little less than the line allows, so the part cut off has a bound
``>= delta_r`` rather than 0 and is not lost to rounding).  Each disjunct gives a box (empty once ``e_r >
0`` on one of its rows: the disjunct is refuted there); the clipped box is the hull of the disjuncts'
boxes.  alpha-beta-CROWN's input splitting does the same (``clip_input_domain``).

The coefficients ``a_r`` come from the certifier as the gradient of its bound with respect to the box,
every carried layer's bounds held fixed (``d/d lb_i + d/d ub_i``: ``min_B a.x = sum min(a_i lb_i, a_i
ub_i)``), which is exact for a certifier whose bound is such a concretisation -- and nothing guarantees
that for a user's certifier.  So no clip is trusted: every part of the box it cuts off (a *slab*: the box
with dimension ``i`` restricted to ``[lb_i, lb'_i]`` or ``[ub'_i, ub_i]``) is bounded by the certifier
itself, with the domain's layer bounds (valid on the slab, a part of the box), and a side whose slab is
not verified is not clipped.  The slabs and the clipped box cover the box, so no counterexample is lost.
"""

from __future__ import annotations

import torch

#: a side is clipped only when it cuts off at least this share of the dimension's width (each clipped side
#: costs one more bound, its slab's)
MIN_SHARE = 0.01
#: the margin ``delta_r = DELTA (1 + |ell_r|)`` each clip keeps from its line (the module docstring)
DELTA = 1e-7


def clip_boxes(lb: torch.Tensor, ub: torch.Tensor, slack: torch.Tensor, coeff: torch.Tensor,
               groups) -> tuple[torch.Tensor, torch.Tensor]:
    """``(lb', ub')`` ``[P, n]``: the boxes ``[lb, ub]`` clipped to the hull of the disjuncts' counterexample
    regions under the linear bounds (the module docstring); ``slack`` ``[P, R]``: each row's ``ell_r``;
    ``coeff`` ``[P, R, n]``: its ``a_r``; ``groups``: each disjunct's rows.  A box whose every disjunct is
    refuted is returned unclipped (it is verified anyway); sides that would gain less than
    :data:`MIN_SHARE` of their width are not clipped."""
    e = slack - DELTA * (1 + slack.abs())
    hull_lo = torch.full_like(lb, torch.inf)
    hull_hi = torch.full_like(ub, -torch.inf)
    for rows in groups:
        lo, hi = lb.clone(), ub.clone()
        refuted = torch.zeros(lb.shape[0], dtype=torch.bool)
        for r in rows:
            a, er = coeff[:, r], e[:, r].unsqueeze(1)
            refuted |= er[:, 0] > 0
            step = -er / torch.where(a == 0, torch.ones_like(a), a)  # a_ri (x_i - end) <= -e_r
            hi = torch.where((a > 0) & (er < 0), torch.minimum(hi, lb + step), hi)
            lo = torch.where((a < 0) & (er < 0), torch.maximum(lo, ub + step), lo)
        refuted |= (lo > hi).any(1)
        keep = ~refuted.unsqueeze(1)
        hull_lo = torch.where(keep, torch.minimum(hull_lo, lo), hull_lo)
        hull_hi = torch.where(keep, torch.maximum(hull_hi, hi), hull_hi)
    none = (hull_lo > hull_hi).any(1, keepdim=True)
    width = ub - lb
    new_lo = torch.where(none | (hull_lo - lb < MIN_SHARE * width), lb, torch.maximum(lb, hull_lo))
    new_hi = torch.where(none | (ub - hull_hi < MIN_SHARE * width), ub, torch.minimum(ub, hull_hi))
    return new_lo, new_hi


def slabs(lb: torch.Tensor, ub: torch.Tensor, new_lb: torch.Tensor, new_ub: torch.Tensor):
    """The parts of the boxes a clip cuts off: ``(owner [S], dim [S], upper [S] bool, slab_lb [S, n],
    slab_ub [S, n])`` -- for each box ``owner`` and clipped side, the box with dimension ``dim`` restricted to
    ``[lb, lb']`` (lower side) or ``[ub', ub]`` (``upper``).  With the clipped box they cover the box."""
    low = new_lb > lb
    high = new_ub < ub
    owner_l, dim_l = torch.nonzero(low, as_tuple=True)
    owner_h, dim_h = torch.nonzero(high, as_tuple=True)
    owner, dim = torch.cat([owner_l, owner_h]), torch.cat([dim_l, dim_h])
    upper = torch.cat([torch.zeros_like(owner_l, dtype=torch.bool), torch.ones_like(owner_h, dtype=torch.bool)])
    s_lb, s_ub = lb[owner].clone(), ub[owner].clone()
    rows = torch.arange(owner.numel())
    s_ub[rows[~upper], dim[~upper]] = new_lb[owner[~upper], dim[~upper]]
    s_lb[rows[upper], dim[upper]] = new_ub[owner[upper], dim[upper]]
    return owner, dim, upper, s_lb, s_ub


def confirmed(lb: torch.Tensor, ub: torch.Tensor, new_lb: torch.Tensor, new_ub: torch.Tensor, owner, dim, upper,
              verified: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(lb', ub')``: the clipped boxes with every side whose slab is not ``verified`` (``[S]`` bool) put back."""
    out_lb, out_ub = new_lb.clone(), new_ub.clone()
    back = ~verified
    lo, hi = back & ~upper, back & upper
    out_lb[owner[lo], dim[lo]] = lb[owner[lo], dim[lo]]
    out_ub[owner[hi], dim[hi]] = ub[owner[hi], dim[hi]]
    return out_lb, out_ub
