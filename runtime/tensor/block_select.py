"""Selection block: one stored entry per row, at a column given per row.

Core ``c [*lead, m]`` and a column ``index [m]`` (int64, into ``n`` columns): the extent is
``[*lead, m, n]`` and its only mapped entries are ``phi(l.., r) = (l.., r, index[r])``; every other
entry is a hole (the background).  Several rows may select the same column (an upsampling), and a
column may be selected by no row (a crop).

Example: core ``[[a, b, c]]`` with ``index = [2, 0, 2]`` and ``n = 3`` has the dense form
(background 0)::

    [[[0, 0, a],
      [b, 0, 0],
      [0, 0, c]]]

This is the weight of a *gather* layer (``cfruntime.network.graph.GatherSpec``: ``y_r = s_r x_{i_r}``)
-- the interleaving of a transposed convolution's phases, a nearest-neighbour upsampling, a
transpose or slice of perturbed values -- whose dense matrix is ``m x n`` (28,800 x 28,800 float64,
6.6 GB, for cgan_2023's 32x30x30 transposed convolution) where this holds ``m`` values.  Products
with it are gathers and scatters of rows and columns (:mod:`cfruntime.tensor.matmul`), its
concretisation against bounds one gather (:mod:`cfruntime.tensor.segmented_ops`).
"""

from __future__ import annotations

from typing import Callable

import torch

from .block_base import Block, is_full, same_value
from .block_lead import LeadCoreBlock
from .block_repeat import DenseBlock


class SelectBlock(LeadCoreBlock):
    kind = "select"
    has_holes = True

    def __init__(self, core: torch.Tensor, index: torch.Tensor, n_cols: int):
        if core.dim() < 1 or index.dim() != 1 or index.shape[0] != core.shape[-1]:
            raise ValueError(f"select block: core {tuple(core.shape)} and index {tuple(index.shape)} do not fit")
        self.core = core
        self.index = index
        self.n_cols = int(n_cols)
        self.lead = tuple(core.shape[:-1])
        self.shape = self.lead + (int(core.shape[-1]), self.n_cols)

    def with_core(self, core: torch.Tensor) -> "SelectBlock":
        return SelectBlock(core, self.index, self.n_cols)

    def same_geometry(self, other) -> bool:
        return (isinstance(other, SelectBlock) and self.shape == other.shape
                and (self.index is other.index or torch.equal(self.index, other.index)))

    def to_dense(self, fill) -> torch.Tensor:
        out = torch.full(self.shape, fill, dtype=self.dtype, device=self.device)
        self.write_into(out, fill)
        return out

    def write_into(self, view: torch.Tensor, fill=None) -> None:
        rows = torch.arange(self.shape[-2], device=self.core.device)
        view[..., rows, self.index.to(self.core.device)] = self.core

    def map_values(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Block:
        return self.with_core(fn(self.core))

    def structure(self) -> tuple:
        return (self.core, self.index, self.n_cols)

    def selected(self, t: torch.Tensor) -> torch.Tensor:
        """``t[..., r, index[r]]`` for every row ``r`` of a tensor ``t`` of the extent's last two
        dimensions (leading ones broadcast): the entries of ``t`` this block's entries meet."""
        rows = torch.arange(self.shape[-2], device=t.device)
        return t[..., rows, self.index.to(t.device)]

    def times_dense(self, t: torch.Tensor):
        if not isinstance(t, torch.Tensor):
            return super().times_dense(t)
        t = t.expand(*t.shape[:-2], *self.shape[-2:]) if t.shape[-2:] != self.shape[-2:] else t
        return self.with_core(self.core * self.selected(t))

    def scale_rows(self, c: torch.Tensor) -> "SelectBlock":
        """``diag(c) @ self`` (``c [.., m]``)."""
        return self.with_core(self.core * c)

    def scale_cols(self, c: torch.Tensor) -> "SelectBlock":
        """``self @ diag(c)`` (``c [.., n]``)."""
        return self.with_core(self.core * c[..., self.index.to(c.device)])

    def any_value(self, fill) -> bool:
        if self.numel() == 0:
            return False
        return bool(self.core.any()) or (self.n_cols > 1 and bool(fill))

    def all_value(self, fill) -> bool:
        if self.numel() == 0:
            return True
        return bool(self.core.all()) and (self.n_cols <= 1 or bool(fill))

    # -------------------------------------------------------- structural ops
    def restrict(self, rel, fill) -> Block:
        if is_full(rel, self.shape):
            return self
        (r0, r1), (c0, c1) = rel[-2], rel[-1]
        lead = tuple(slice(lo, hi) for lo, hi in rel[:-2])
        core, index = self.core[lead + (slice(r0, r1),)], self.index[r0:r1]
        if (c0, c1) == (0, self.n_cols):
            return SelectBlock(core, index, self.n_cols)
        inside = (index >= c0) & (index < c1)
        # a row whose column is cut away keeps one entry holding the background: the same dense form
        fill_t = torch.full((), fill, dtype=core.dtype, device=core.device)
        return SelectBlock(torch.where(inside.to(core.device), core, fill_t),
                           torch.where(inside, index - c0, torch.zeros_like(index)), c1 - c0)

    def sum_dim(self, dim: int, fill) -> Block:
        zero = same_value(fill, 0) or fill is False
        r = len(self.shape)
        if zero and dim == r - 1 and self.core.dtype != torch.bool:  # a row's one entry
            return DenseBlock(self.core)
        if zero and dim == r - 2 and self.core.dtype != torch.bool:  # the entries of each column added
            out = torch.zeros(self.lead + (self.n_cols,), dtype=self.core.dtype, device=self.core.device)
            return DenseBlock(out.index_add_(out.dim() - 1, self.index.to(self.core.device), self.core))
        if self._lead_only([dim]) and zero and self.core.dtype != torch.bool:
            return self.with_core(self.core.sum(dim))
        return super().sum_dim(dim, fill)
