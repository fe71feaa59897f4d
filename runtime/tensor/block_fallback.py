"""Structural operations through the dense form: the fallback of the block kinds with holes.

A diagonal, convolution, patches or unit-dimension block has structured answers for the common
structural operations (slicing a diagonal along both its dimensions, adding a leading dimension to a
convolution, ...) and calls these for the rest: they materialise the extent (holes hold ``fill``) and
return the most specific broadcast block of the result -- correct, not fast.

They live in a class of their own, between :class:`~.block_base.Block` and those kinds, because they
build :mod:`.block_repeat`'s blocks, which are themselves blocks: the interface module imports no kind.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .block_base import Block, is_full, rel_slices
from .block_repeat import DenseBlock, make_bcast_block


class DenseFallbackBlock(Block):
    """A block kind whose structural operations default to going through the dense form."""

    def _dense(self, t: torch.Tensor) -> Block:
        return DenseBlock(t)

    def restrict(self, rel: Sequence[tuple[int, int]], fill) -> Block:
        """Sub-block for the relative region ``rel`` (list of (lo, hi))."""
        if is_full(rel, self.shape):
            return self
        return self._dense(self.to_dense(fill)[rel_slices(rel)])

    def add_dim(self, dim: int, fill) -> Block:
        return self._dense(self.to_dense(fill).unsqueeze(dim))

    def remove_dim(self, dim: int, fill) -> Block:
        return self._dense(self.to_dense(fill).squeeze(dim))

    def expand_dim(self, dim: int, size: int, fill) -> Block:
        """Logically repeat a size-1 dimension ``size`` times."""
        dense = self.to_dense(fill)
        shape = list(self.shape)
        shape[dim] = size
        return make_bcast_block(dense, tuple(shape))

    def permute(self, perm: Sequence[int], fill) -> Block:
        return self._dense(self.to_dense(fill).permute(*perm))

    def sum_dim(self, dim: int, fill) -> Block:
        """Sum over ``dim`` of the extent (holes count as ``fill``)."""
        return self._dense(self.to_dense(fill).sum(dim))
