"""Diagonal block: diagonal over extent dims ``delta`` and ``delta + 1``.

The core omits one of the two equal indices (0-based ``delta``):
``phi(i_0..i_{r-1}) = (i_0, .., i_delta, i_delta, i_{delta+1}, .., i_{r-1})``.
Off-diagonal positions of the extent are holes (they hold the background).

Example: core ``[[1, 2, 3]]`` (shape [1, 3]) with ``delta = 1`` has extent
[1, 3, 3] and dense form (background 0)::

    [[[1, 0, 0],
      [0, 2, 0],
      [0, 0, 3]]]

This is how a ReLU layer's per-neuron slopes (``lambda``) appear in a bound
matrix ``[batch, N, N]``: core ``[batch, n]``, ``delta = 1``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from .block_base import Block, is_full, same_value
from .block_fallback import DenseFallbackBlock
from .block_repeat import DenseBlock


def diagonal_of(t: torch.Tensor, delta: int) -> torch.Tensor:
    """Core layout of the diagonal of ``t`` over dims ``delta, delta+1``."""
    return torch.diagonal(t, 0, delta, delta + 1).movedim(-1, delta)


class DiagonalBlock(DenseFallbackBlock):
    kind = "diagonal"
    has_holes = True

    def __init__(self, core: torch.Tensor, delta: int):
        if not 0 <= delta < core.dim():
            raise ValueError(f"delta {delta} out of range for core rank {core.dim()}")
        self.core = core
        self.delta = int(delta)
        s = tuple(core.shape)
        self.shape = s[: delta + 1] + (s[delta],) + s[delta + 1:]

    @property
    def n(self) -> int:
        return self.core.shape[self.delta]

    def to_dense(self, fill) -> torch.Tensor:
        out = torch.full(self.shape, fill, dtype=self.dtype, device=self.device)
        self.write_into(out, fill)
        return out

    def write_into(self, view: torch.Tensor, fill=None) -> None:
        torch.diagonal(view, 0, self.delta, self.delta + 1).copy_(self.core.movedim(self.delta, -1))

    def map_values(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Block:
        return DiagonalBlock(fn(self.core), self.delta)

    def structure(self) -> tuple:
        return (self.core, self.delta)

    def _core_dim(self, dim: int) -> int:
        return dim if dim <= self.delta else dim - 1

    # -------------------------------------------------------- structural ops
    def restrict(self, rel, fill) -> Block:
        if is_full(rel, self.shape):
            return self
        d = self.delta
        if rel[d] != rel[d + 1]:
            return super().restrict(rel, fill)
        sl = tuple(slice(lo, hi) for k, (lo, hi) in enumerate(rel) if k != d + 1)
        return DiagonalBlock(self.core[sl], d)

    def add_dim(self, dim: int, fill) -> Block:
        d = self.delta
        if dim <= d:
            return DiagonalBlock(self.core.unsqueeze(dim), d + 1)
        if dim >= d + 2:
            return DiagonalBlock(self.core.unsqueeze(dim - 1), d)
        return super().add_dim(dim, fill)

    def remove_dim(self, dim: int, fill) -> Block:
        d = self.delta
        if dim in (d, d + 1):
            return DenseBlock(self.core)  # n == 1: the diagonal is the whole block
        if dim < d:
            return DiagonalBlock(self.core.squeeze(dim), d - 1)
        return DiagonalBlock(self.core.squeeze(dim - 1), d)

    def expand_dim(self, dim: int, size: int, fill) -> Block:
        d = self.delta
        if dim in (d, d + 1):
            return super().expand_dim(dim, size, fill)
        cd = self._core_dim(dim)
        shape = list(self.core.shape)
        shape[cd] = size
        return DiagonalBlock(self.core.expand(shape), d)

    def permute(self, perm: Sequence[int], fill) -> Block:
        d = self.delta
        perm = list(perm)
        q, q2 = perm.index(d), perm.index(d + 1)
        if abs(q - q2) != 1:
            return super().permute(perm, fill)
        drop = max(q, q2)
        core_perm = [self._core_dim(e) for pos, e in enumerate(perm) if pos != drop]
        return DiagonalBlock(self.core.permute(*core_perm), min(q, q2))

    def sum_dim(self, dim: int, fill) -> Block:
        d = self.delta
        zero = same_value(fill, 0) or fill is False
        if zero and dim in (d, d + 1):
            return DenseBlock(self.core.long() if self.core.dtype == torch.bool else self.core)
        if zero and self.core.dtype != torch.bool:
            return DiagonalBlock(self.core.sum(self._core_dim(dim)), d - 1 if dim < d else d)
        return super().sum_dim(dim, fill)

    def any_value(self, fill) -> bool:
        if self.numel() == 0:
            return False
        return bool(self.core.any()) or (self.n > 1 and bool(fill))

    def all_value(self, fill) -> bool:
        if self.numel() == 0:
            return True
        return bool(self.core.all()) and (self.n <= 1 or bool(fill))
