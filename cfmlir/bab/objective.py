"""The property of one input region as branch and bound sees it: constraint rows, disjuncts, and a domain's
*value* (how far it is from being verified).

A VNN-LIB region (:class:`cfruntime.properties.vnnlib.InputRegion`) describes the counterexamples as a
disjunction of conjunctions ``A_k y <= b_k``.  Stacked, the rows are ``A [R, m]``, ``b [R]`` and the groups
of rows of each disjunct.  With lower bounds ``lb_r`` of the rows ``A_r y`` on a domain:

    slack_r = lb_r - b_r                       (> 0: row r excludes every output of the domain)
    value_k = max over the rows r of disjunct k of slack_r   (> 0: disjunct k is refuted)
    value   = min over the disjuncts k of value_k            (> 0: the domain is verified)

which is :func:`cfruntime.properties.vnnlib.boxes_verified`'s predicate (the one definition of
"verified", used for every decision) made a number to order domains by.  A disjunct without rows
(every output a counterexample) has value ``-inf``.
"""

from __future__ import annotations

import numpy as np
import torch


class Objective:
    def __init__(self, region):
        A, b, groups = region.stacked()
        self.region = region
        self.A = torch.from_numpy(np.asarray(A, dtype=np.float64))
        self.b = torch.from_numpy(np.asarray(b, dtype=np.float64))
        self.groups = groups
        member = torch.zeros(len(groups), self.A.shape[0], dtype=torch.bool)
        for k, g in enumerate(groups):
            member[k, torch.as_tensor(np.asarray(g, dtype=np.int64))] = True
        self.member = member  # [K, R]

    @property
    def rows(self) -> int:
        return int(self.A.shape[0])

    def disjunct_values(self, rows_lb: torch.Tensor) -> torch.Tensor:
        """``[P, K]``: each disjunct's value on each domain (``rows_lb`` ``[P, R]``)."""
        slack = (rows_lb - self.b).unsqueeze(1)  # [P, 1, R]
        masked = torch.where(self.member.unsqueeze(0), slack, torch.full_like(slack, -torch.inf))
        return masked.amax(2) if self.rows else torch.full((rows_lb.shape[0], len(self.groups)), -torch.inf,
                                                            dtype=torch.float64)

    def value(self, rows_lb: torch.Tensor) -> torch.Tensor:
        """``[P]``: the domains' values (> 0: verified)."""
        return self.disjunct_values(rows_lb).amin(1)

    def verified(self, rows_lb: torch.Tensor) -> torch.Tensor:
        """``[P]`` bool: the domains every disjunct of which some row refutes."""
        from cfruntime.properties.vnnlib import boxes_verified

        return torch.from_numpy(boxes_verified(rows_lb.numpy(), self.b.numpy(), self.groups))

    def target_rows(self, rows_lb: torch.Tensor) -> torch.Tensor:
        """``[P]``: the row to improve on each domain -- the best row of its worst disjunct."""
        worst = self.disjunct_values(rows_lb).argmin(1)  # [P]
        slack = torch.where(self.member[worst], rows_lb - self.b, torch.full_like(rows_lb, -torch.inf))
        return slack.argmax(1)

    def violation(self, y: torch.Tensor) -> torch.Tensor:
        """``[N]``: ``min_k max_{r in k} (A_r y - b_r)`` of concrete outputs ``y [N, m]`` (<= 0: ``y``
        satisfies a disjunct: a counterexample)."""
        excess = (y @ self.A.T.to(y.dtype) - self.b.to(y.dtype)).unsqueeze(1)  # [N, 1, R]
        masked = torch.where(self.member.unsqueeze(0), excess, torch.full_like(excess, -torch.inf))
        per_disjunct = masked.amax(2) if self.rows else torch.full((y.shape[0], len(self.groups)), -torch.inf,
                                                                  dtype=y.dtype)
        return per_disjunct.amin(1)
