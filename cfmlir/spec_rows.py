"""Specification rows that are zero: bounded by nobody, given back as exactly 0.

A robustness specification ``C [N, K, K]`` has the row ``e_true - e_true = 0`` for every sample
(:func:`cfruntime.properties.robustness_spec`): its margin is exactly 0 whatever the network does, yet
bounding it costs a tenth of the last layer's back-substitution on a 10-class net (auto_LiRPA's margin
matrix has the K - 1 others only).  :func:`compact` drops such rows when every sample has the same
number of them, :func:`spread` puts the bounds back in place with 0 for the dropped rows::

    C2, keep = compact(C)           # C [N, 10, 10] -> C2 [N, 9, 10], keep [N, 9] (row indices), or (C, None)
    lower = spread(lower2, keep, 10)  # [N, 9] -> [N, 10], 0 in each sample's dropped row

Host-side on the specification tensor (never on the device's bounds): no host sync in the engine.
"""

from __future__ import annotations

import torch


def compact(C):
    """``(C without its zero rows, kept row indices [N, K'])``, or ``(C, None)`` when no row is zero or the
    samples have different numbers of zero rows."""
    if not isinstance(C, torch.Tensor) or C.dim() != 3 or C.shape[1] < 2 or C.numel() == 0:
        return C, None
    nonzero = C.ne(0).any(-1)  # [N, K]
    counts = nonzero.sum(1)
    k = int(counts[0])
    if k == C.shape[1] or k == 0 or not bool((counts == k).all()):
        return C, None
    keep = nonzero.nonzero()[:, 1].reshape(C.shape[0], k)
    return C.gather(1, keep.unsqueeze(-1).expand(-1, -1, C.shape[-1])), keep


def spread(x: torch.Tensor, keep, k: int) -> torch.Tensor:
    """Bounds ``[N, K']`` of the kept rows as ``[N, K]``: 0 (the margin's exact value) in the dropped rows."""
    if keep is None:
        return x
    keep = keep.to(x.device)
    return torch.zeros(x.shape[0], k, dtype=x.dtype, device=x.device).scatter_(1, keep, x)
