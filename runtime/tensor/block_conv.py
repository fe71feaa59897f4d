"""Convolution-kernel block: a conv2d weight seen as an [out x in] matrix.

Core ``W [Co, Ci, kh, kw]``; parameters: input map size ``(Hi, Wi)``, ``stride``,
``padding`` and ``lead`` (sizes of leading dims over which the same matrix is
logically repeated, e.g. a batch dim).  Output map size
``Ho = (Hi + 2 ph - kh) // sh + 1`` (same for W).  The extent is
``[*lead, Co*Ho*Wo, Ci*Hi*Wi]``; the block is the matrix ``M`` with
``M @ x.reshape(-1) == conv2d(x, W, stride, padding).reshape(-1)``.  Index map
(one core entry feeds many dense entries -- a repeat along output positions)::

    phi(co, ci, ki, kj) = {(l.., (co*Ho + oh)*Wo + ow, (ci*Hi + ih)*Wi + iw)
                           : ih = oh*sh - ph + ki, iw = ow*sw - pw + kj in range}

Unmapped extent positions are holes (background).

Example: ``W = [[[[a, b]]]]`` (Co=Ci=1, kh=1, kw=2), ``Hi=1, Wi=3``, stride 1,
padding 0 gives ``Wo = 2`` and the 2x3 matrix ``[[a, b, 0], [0, a, b]]``.

Matrix products with a conv block never build ``M``: ``X @ M`` is
``conv_transpose2d`` of the rows of X, ``M @ X`` is ``conv2d`` of the columns
(see :mod:`cfruntime.tensor.matmul`).  ``to_dense`` unrolls it (tests only).
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from .block_base import Block, is_full
from .block_fallback import DenseFallbackBlock
from .block_patches import PatchesBlock
from .block_unit_dims import UnitDimBlock
from .conv_utils import conv_out_hw, pair


class ConvBlock(DenseFallbackBlock):
    kind = "conv"
    has_holes = True

    def __init__(self, weight: torch.Tensor, in_hw, stride=1, padding=0, lead: Sequence[int] = ()):
        if weight.dim() != 4:
            raise ValueError("conv weight must be [Co, Ci, kh, kw]")
        self.weight = weight
        self.in_hw = pair(in_hw)
        self.stride = pair(stride)
        self.padding = pair(padding)
        self.lead = tuple(int(x) for x in lead)
        co, ci, kh, kw = weight.shape
        self.k_hw = (kh, kw)
        self.out_hw = conv_out_hw(self.in_hw, self.k_hw, self.stride, self.padding)
        self.out_chw = (co,) + self.out_hw
        self.in_chw = (ci,) + self.in_hw
        self.shape = self.lead + (co * self.out_hw[0] * self.out_hw[1], ci * self.in_hw[0] * self.in_hw[1])

    def cores(self) -> list[torch.Tensor]:
        return [self.weight]

    def with_weight(self, weight: torch.Tensor, lead=None) -> "ConvBlock":
        return ConvBlock(weight, self.in_hw, self.stride, self.padding,
                         self.lead if lead is None else lead)

    def same_geometry(self, other) -> bool:
        return (isinstance(other, ConvBlock) and self.shape == other.shape
                and self.weight.shape == other.weight.shape and self.in_hw == other.in_hw
                and self.stride == other.stride and self.padding == other.padding)

    def as_patches(self) -> PatchesBlock:
        """Same matrix as a patches block (kernel broadcast over positions; a view)."""
        co, ci, kh, kw = self.weight.shape
        ho, wo = self.out_hw
        core = self.weight[:, None, None].expand(co, ho, wo, ci, kh, kw)
        core = core.reshape((1,) * len(self.lead) + core.shape).expand(self.lead + core.shape)
        return PatchesBlock(core, self.in_hw, self.stride, self.padding)

    def to_dense(self, fill) -> torch.Tensor:
        return self.as_patches().to_dense(fill)

    def write_into(self, view: torch.Tensor, fill=None) -> None:
        self.as_patches().write_into(view, fill)

    def map_values(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Block:
        return self.with_weight(fn(self.weight))

    def times_dense(self, t: torch.Tensor):
        return self.as_patches().times_dense(t)

    def structure(self) -> tuple:
        return (self.weight, self.in_hw, self.stride, self.padding, self.lead)

    def any_value(self, fill) -> bool:
        return self.as_patches().any_value(fill)

    def all_value(self, fill) -> bool:
        return self.as_patches().all_value(fill)

    def row_extremum(self, kind: str) -> torch.Tensor:
        return self.as_patches().row_extremum(kind)

    def scale_rows(self, c: torch.Tensor) -> PatchesBlock:
        return self.as_patches().scale_rows(c)

    def scale_cols(self, c: torch.Tensor) -> PatchesBlock:
        return self.as_patches().scale_cols(c)

    # -------------------------------------------------------- structural ops
    def _lead_only(self, dims) -> bool:
        return all(d < len(self.lead) for d in dims)

    def restrict(self, rel, fill) -> Block:
        if is_full(rel, self.shape):
            return self
        if is_full(rel[-2:], self.shape[-2:]):
            return self.with_weight(self.weight, tuple(hi - lo for lo, hi in rel[:-2]))
        return super().restrict(rel, fill)

    def add_dim(self, dim: int, fill) -> Block:
        if dim <= len(self.lead):
            lead = list(self.lead)
            lead.insert(dim, 1)
            return self.with_weight(self.weight, tuple(lead))
        return UnitDimBlock(self, [dim])

    def remove_dim(self, dim: int, fill) -> Block:
        if self._lead_only([dim]):
            lead = list(self.lead)
            del lead[dim]
            return self.with_weight(self.weight, tuple(lead))
        return super().remove_dim(dim, fill)

    def expand_dim(self, dim: int, size: int, fill) -> Block:
        if self._lead_only([dim]):
            lead = list(self.lead)
            lead[dim] = size
            return self.with_weight(self.weight, tuple(lead))
        return super().expand_dim(dim, size, fill)

    def permute(self, perm, fill) -> Block:
        r = len(self.shape)
        if list(perm[-2:]) == [r - 2, r - 1]:
            return self.with_weight(self.weight, tuple(self.lead[p] for p in perm[:-2]))
        return super().permute(perm, fill)
