"""Unit-dimension block: another block seen with extra size-1 dimensions.

A block kind whose layout fixes the meaning of its last dimensions (a convolution or patches block is
``[*lead, rows, cols]``) cannot take a size-1 dimension after them.  ``UnitDimBlock(base, dims)``
holds ``base`` unchanged and inserts size-1 dimensions at the (sorted, result-relative) positions
``dims``; removing them again gives ``base`` back, so ``add_dim`` followed by ``remove_dim`` -- what
``rt.inner`` does to the traverse's ``add_dim(coeffs, 3)`` -- never unrolls a convolution.
Index map: ``phi(i) = i`` with the entries at ``dims`` (always 0) dropped, then ``base``'s map.

Example: a conv block of extent ``[10, 800, 2704]`` with ``dims = (3,)`` has extent
``[10, 800, 2704, 1]``; ``remove_dim(3)`` returns the conv block itself.

Every other operation goes through the dense form (correct, not fast).
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from .block_base import Block
from .block_fallback import DenseFallbackBlock


class UnitDimBlock(DenseFallbackBlock):
    kind = "unit_dims"

    def __init__(self, base: Block, dims: Sequence[int]):
        self.base = base
        self.dims = tuple(sorted(dims))
        shape = list(base.shape)
        for d in self.dims:
            shape.insert(d, 1)
        self.shape = tuple(shape)
        self.has_holes = base.has_holes

    def cores(self) -> list[torch.Tensor]:
        return self.base.cores()

    def to_dense(self, fill) -> torch.Tensor:
        return self.base.to_dense(fill).reshape(self.shape)

    def map_values(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Block:
        return UnitDimBlock(self.base.map_values(fn), self.dims)

    def structure(self) -> tuple:
        return (self.base, self.dims)

    def add_dim(self, dim: int, fill) -> Block:
        dims = [d + 1 if d >= dim else d for d in self.dims] + [dim]
        return UnitDimBlock(self.base, dims)

    def remove_dim(self, dim: int, fill) -> Block:
        if dim not in self.dims:
            return super().remove_dim(dim, fill)
        dims = [d - 1 if d > dim else d for d in self.dims if d != dim]
        return UnitDimBlock(self.base, dims) if dims else self.base

    def any_value(self, fill) -> bool:
        return self.base.any_value(fill)

    def all_value(self, fill) -> bool:
        return self.base.all_value(fill)
