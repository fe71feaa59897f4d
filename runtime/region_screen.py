"""An attack on a VNN-LIB property of many input regions (nn4sys_2023's ``lindex``: 200 to 60,000 boxes of
one input each), where one attack per region (:func:`cfruntime.soundness.vnnlib_counterexample` on a few
regions) costs a forward pass per region and step: all regions screened by sampled points at once, then
PGD from the regions that came nearest to a violation.

Algorithm:

1. Each region's disjuncts padded into ``A [R, D, J, m]``, ``b [R, D, J]``: a missing row of a disjunct is
   ``0 y <= +inf`` (always holds), a missing disjunct ``0 y <= -inf`` (never holds), so that an output's
   *violation* ``min_d max_j (A_d y - b_d)`` is ``<= 0`` exactly when it lies in one of the region's
   disjuncts (a disjunct without rows holds everywhere: ``-inf``).
2. Samples: per region ``n`` uniform points (``n`` from a total budget, :data:`SAMPLE_POINTS`), its centre
   and two corners, in chunks of regions (:data:`CHUNK_ROWS` points a forward pass); the first point in
   region, then point order whose violation is ``<= 0`` is the answer.
3. PGD on the violation: ``rows`` random starts in each of the regions whose best sample came nearest
   (the smallest violation; as many regions as :data:`PGD_ROWS` rows allow), all rows in chunks; the
   first end point in row order whose violation is ``<= 0`` is the answer.

Example: ``screen_regions(net, parse_vnnlib("lindex_1000.vnnlib"))`` -> ``(region, x, y)`` or None; the
caller confirms ``y = net(x)`` in float64 (:func:`cfruntime.properties.confirm_counterexample`).
"""

from __future__ import annotations

import math

import torch

from cfruntime.box_search import box_points, pgd

#: sampled points over all regions together (at least :data:`MIN_SAMPLES` per region, at most the caller's)
SAMPLE_POINTS = 1 << 16
MIN_SAMPLES = 4
#: PGD rows over all regions together (the nearest regions' starts)
PGD_ROWS = 1 << 10
#: points of one forward (and backward) pass: nn4sys_2023's ``mscn_128d_dual`` keeps ~15,000 values a point,
#: so 32,768 points a pass took 14 GB (9,190 regions); 4,096 take under 1 GB
CHUNK_ROWS = 1 << 12


def screen_regions(network, prop, *, n_samples: int = 256, steps: int = 50, rows: int = 10, seed: int = 0):
    """``(region_index, x [n], y [m])`` with ``x`` in the region's box and ``y = network(x)`` in one of its
    disjuncts, or None (the module docstring's steps, ``rows`` PGD starts per chosen region)."""
    regions = prop.regions
    R = len(regions)
    A, b = padded_disjuncts(regions, prop.num_outputs)
    lb = torch.from_numpy(_stack([reg.lb for reg in regions]))
    ub = torch.from_numpy(_stack([reg.ub for reg in regions]))
    gen = torch.Generator().manual_seed(seed)

    def violation(y: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return (torch.einsum("pdjm,pm->pdj", A[ids], y) - b[ids]).amax(dim=2).amin(dim=1)

    n_s = max(MIN_SAMPLES, min(n_samples, SAMPLE_POINTS // R))
    per_region = n_s + 3  # the samples, the centre, two corners (box_search.box_points)
    chunk = max(1, CHUNK_ROWS // per_region)
    best = torch.full((R,), math.inf, dtype=torch.float64)
    for r0 in range(0, R, chunk):
        r1 = min(R, r0 + chunk)
        pts, _ = box_points(lb[r0:r1], ub[r0:r1], n_s, 0, gen)  # [c, P, n]
        ids = torch.arange(r0, r1).repeat_interleave(pts.shape[1])
        xs = pts.reshape(-1, pts.shape[-1])
        with torch.no_grad():
            v = violation(network.forward(xs), ids)
        hit = _first_hit(network, xs, ids, v)
        if hit is not None:
            return hit
        best[r0:r1] = v.reshape(r1 - r0, -1).amin(dim=1)
    rows = max(1, rows)
    chosen = torch.argsort(best)[: max(1, PGD_ROWS // rows)]
    ss_all = chosen.repeat_interleave(rows)
    for k0 in range(0, ss_all.shape[0], CHUNK_ROWS):
        ss = ss_all[k0:k0 + CHUNK_ROWS]
        bx, _ = pgd(network, lb, ub, ss, lambda vals, ss=ss: violation(vals[-1], ss), steps, gen)
        with torch.no_grad():
            v = violation(network.forward(bx), ss)
        hit = _first_hit(network, bx, ss, v)
        if hit is not None:
            return hit
    return None


def padded_disjuncts(regions, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(A [R, D, J, m], b [R, D, J])``: every region's disjuncts ``A_d y <= b_d`` padded as the module
    docstring says (``D``, ``J``: the most disjuncts of a region, rows of a disjunct)."""
    import numpy as np

    D = max((len(reg.disjuncts) for reg in regions), default=0)
    J = max((A_d.shape[0] for reg in regions for A_d, _ in reg.disjuncts), default=0)
    A = np.zeros((len(regions), max(D, 1), max(J, 1), m))
    b = np.full((len(regions), max(D, 1), max(J, 1)), -np.inf)
    for r, reg in enumerate(regions):
        for d, (A_d, b_d) in enumerate(reg.disjuncts):
            b[r, d] = np.inf
            A[r, d, :A_d.shape[0]] = A_d
            b[r, d, :A_d.shape[0]] = b_d
    return torch.from_numpy(A), torch.from_numpy(b)


def _first_hit(network, xs: torch.Tensor, ids: torch.Tensor, v: torch.Tensor):
    """``(region, x, network(x))`` of the first row of ``xs`` whose violation ``v`` is ``<= 0``, or None."""
    at = torch.nonzero(v <= 0).reshape(-1)
    if at.numel() == 0:
        return None
    k = int(at[0])
    x = xs[k].detach()
    with torch.no_grad():
        y = network.forward(x.reshape(1, -1))[0]
    return int(ids[k]), x, y


def _stack(arrays):
    import numpy as np

    return np.stack(arrays).astype(np.float64)
