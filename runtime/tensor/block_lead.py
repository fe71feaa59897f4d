"""Blocks whose core starts with the extent's leading dimensions: the structural operations on those.

A patches block's core is ``[*lead, Co, Ho, Wo, Ci, kh, kw]``, a selection block's ``[*lead, m]``: the
extent is ``[*lead, rows, cols]`` and every leading dimension of the extent is the same dimension of the
core, followed by :attr:`LeadCoreBlock.core_tail` dimensions of the kind's own layout.  Adding, removing,
broadcasting or reordering leading dimensions is then the same operation on the core, and keeps the kind;
a size-1 dimension among the last two is a :class:`~.block_unit_dims.UnitDimBlock` (the inner product that
asks for it takes it away again); anything else goes through the dense form.

Example: a selection block of extent ``[1, 5, 4]`` (core ``[1, 5]``) expanded to 3 along dimension 0 is the
selection block of core ``core.expand(3, 5)``, extent ``[3, 5, 4]``.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .block_base import Block
from .block_fallback import DenseFallbackBlock
from .block_unit_dims import UnitDimBlock


class LeadCoreBlock(DenseFallbackBlock):
    """Subclasses set ``core``, ``lead`` (the extent's leading sizes), :attr:`core_tail` and ``with_core``."""

    #: how many dimensions of the core follow the leading ones
    core_tail = 1
    core: torch.Tensor
    lead: tuple[int, ...]

    def with_core(self, core: torch.Tensor) -> Block:  # pragma: no cover - overridden
        """The same kind and geometry with another core (leading sizes from the core)."""
        raise NotImplementedError

    def _lead_only(self, dims: Sequence[int]) -> bool:
        return all(d < len(self.lead) for d in dims)

    def add_dim(self, dim: int, fill) -> Block:
        if dim <= len(self.lead):
            return self.with_core(self.core.unsqueeze(dim))
        return UnitDimBlock(self, [dim])

    def remove_dim(self, dim: int, fill) -> Block:
        if self._lead_only([dim]):
            return self.with_core(self.core.squeeze(dim))
        return super().remove_dim(dim, fill)

    def expand_dim(self, dim: int, size: int, fill) -> Block:
        if self._lead_only([dim]):
            shape = list(self.core.shape)
            shape[dim] = size
            return self.with_core(self.core.expand(shape))
        return super().expand_dim(dim, size, fill)

    def permute(self, perm: Sequence[int], fill) -> Block:
        r = len(self.shape)
        if list(perm[-2:]) == [r - 2, r - 1]:
            return self.with_core(self.core.permute(*perm[:-2], *range(r - 2, r - 2 + self.core_tail)))
        return super().permute(perm, fill)
