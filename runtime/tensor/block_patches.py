"""Patches block: position-dependent convolution kernels (as in auto_LiRPA).

Core ``P`` has shape ``[*lead, Co, Ho, Wo, Ci, kh, kw]``: one ``[Ci, kh, kw]``
kernel per output neuron ``(co, oh, ow)``; parameters are the input map size
``(Hi, Wi)``, ``stride`` and ``padding``.  The extent is
``[*lead, Co*Ho*Wo, Ci*Hi*Wi]`` (rows: output neurons, columns: input neurons,
both flattened C,H,W).  Index map::

    phi(l.., co, oh, ow, ci, ki, kj) =
        (l.., (co*Ho + oh)*Wo + ow, (ci*Hi + ih)*Wi + iw)
        with ih = oh*sh - ph + ki, iw = ow*sw - pw + kj

restricted to core positions with ``0 <= ih < Hi, 0 <= iw < Wi`` (the others
fall into the zero padding and are ignored).  Unmapped extent positions are
holes.

Example: ``Co=Ci=1``, 1-D-like map ``Hi=1, Wi=3``, ``kh=1, kw=2``, stride 1,
padding 0, so ``Wo=2``; kernels ``P[0,0,0]=[a,b]`` and ``P[0,0,1]=[c,d]``
give the 2x3 matrix ``[[a, b, 0], [0, c, d]]`` -- unlike a convolution block
the two rows may use different kernels.  DeepPoly's back-substitution through
``conv -> relu`` (a conv block times a ReLU diagonal) produces exactly this.
"""

from __future__ import annotations

import functools

from typing import Callable

import torch

from .block_base import Block, is_full
from .block_lead import LeadCoreBlock
from .conv_utils import footprint_valid, pair, patch_index_map, unfold_image
from .kept_columns import KeptColumns


@functools.lru_cache(maxsize=64)
def _scatter_index(out_chw, in_chw, k_hw, stride, padding, device):
    """Flat dense index of every patches-core entry (clamped inside for padding entries), whether the
    entry is mapped, and which dense entries some entry maps to (made once per geometry)."""
    row, col, valid = patch_index_map(out_chw, in_chw, k_hw, stride, padding, device)
    rows, cols = out_chw[0] * out_chw[1] * out_chw[2], in_chw[0] * in_chw[1] * in_chw[2]
    flat = row * cols + col
    hit = torch.zeros(rows * cols, dtype=torch.int32, device=device).scatter_add_(0, flat, valid.int()) > 0
    return flat, valid, hit.view(rows, cols)


class PatchesBlock(LeadCoreBlock):
    kind = "patches"
    core_tail = 6
    has_holes = True

    def __init__(self, core: torch.Tensor, in_hw, stride=1, padding=0):
        if core.dim() < 6:
            raise ValueError("patches core must be [*lead, Co, Ho, Wo, Ci, kh, kw]")
        self.core = core
        self.in_hw = pair(in_hw)
        self.stride = pair(stride)
        self.padding = pair(padding)
        co, ho, wo, ci, kh, kw = core.shape[-6:]
        self.out_chw = (co, ho, wo)
        self.in_chw = (ci,) + self.in_hw
        self.k_hw = (kh, kw)
        self.lead = tuple(core.shape[:-6])
        self.shape = self.lead + (co * ho * wo, ci * self.in_hw[0] * self.in_hw[1])

    def same_geometry(self, other: "PatchesBlock") -> bool:
        return (isinstance(other, PatchesBlock) and self.shape == other.shape
                and self.core.shape == other.core.shape and self.in_hw == other.in_hw
                and self.stride == other.stride and self.padding == other.padding)

    def with_core(self, core: torch.Tensor) -> "PatchesBlock":
        return PatchesBlock(core, self.in_hw, self.stride, self.padding)

    def to_dense(self, fill) -> torch.Tensor:
        out = torch.full(self.shape, fill, dtype=self.dtype, device=self.device)
        self.write_into(out, fill)
        return out

    def write_into(self, view: torch.Tensor, fill=None) -> None:
        """Scatter the mapped entries into ``view`` (which holds ``fill``).  Entries over the padding
        are added as zeros at a clamped position, so no mask is read on the host (a CUDA graph can be
        captured around it)."""
        flat, valid, hit = _scatter_index(self.out_chw, self.in_chw, self.k_hw, self.stride, self.padding, self.device)
        vals = torch.where(valid, self.core.reshape(self.lead + (-1,)), 0.0)
        rows, cols = view.shape[-2:]
        lead = tuple(view.shape[:-2])
        target = torch.zeros(view.shape, dtype=view.dtype, device=view.device)
        grid = target.view(lead + (rows * cols,))
        grid.scatter_add_(-1, flat.expand(lead + flat.shape), vals.expand(lead + vals.shape[-1:]).to(view.dtype))
        view.copy_(torch.where(hit, target, view))  # the holes keep what the view holds

    def map_values(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Block:
        return self.with_core(fn(self.core))

    def times_dense(self, t: torch.Tensor):
        """``self * t`` as patches: every kernel entry times ``t`` at the entry it maps to (one gather
        of ``t``, no dense matrix); a ``t`` of another extent is the dense product."""
        if tuple(t.shape[-2:]) != self.shape[-2:]:
            return super().times_dense(t)
        flat = _scatter_index(self.out_chw, self.in_chw, self.k_hw, self.stride, self.padding, self.device)[0]
        lead = tuple(t.shape[:-2])
        # padding entries read a clamped one: unmapped
        vals = t.gather(flat) if isinstance(t, KeptColumns) else t.reshape(lead + (-1,)).index_select(-1, flat)
        return self.with_core(self.core * vals.view(lead + self.core.shape[-6:]))

    def structure(self) -> tuple:
        return (self.core, self.in_hw, self.stride, self.padding)

    # ------------------------------------------------------------- scaling
    def scale_rows(self, c: torch.Tensor) -> "PatchesBlock":
        """``diag(c) @ self``; ``c`` has shape ``[*lead', rows]``."""
        cc = c.reshape(tuple(c.shape[:-1]) + self.out_chw + (1, 1, 1))
        return self.with_core(self.core * cc)

    def scale_cols(self, c: torch.Tensor) -> "PatchesBlock":
        """``self @ diag(c)``; ``c`` has shape ``[*lead', cols]``."""
        lead = tuple(c.shape[:-1])
        img = c.reshape((-1,) + self.in_chw)
        u = unfold_image(img, self.k_hw, self.stride, self.padding, self.out_chw[1:])
        # [N, Ci, kh, kw, Ho, Wo] -> [N, 1, Ho, Wo, Ci, kh, kw]
        u = u.permute(0, 4, 5, 1, 2, 3).unsqueeze(1)
        u = u.reshape(lead + tuple(u.shape[1:])).contiguous()  # so the product is laid out as the core
        return self.with_core(self.core * u)

    # ------------------------------------------------- reading the footprint
    def footprint(self) -> tuple[torch.Tensor, bool, bool]:
        """(valid ``[1, Ho, Wo, 1, kh, kw]``, all valid, some row has a hole): see
        :func:`conv_utils.footprint_valid`."""
        return footprint_valid(self.out_chw[1:], self.in_hw, self.k_hw, self.stride, self.padding,
                               self.core.device)

    def core_where_valid(self, other) -> torch.Tensor:
        """The core with its unmapped (padding) positions set to ``other``."""
        valid, all_valid, _ = self.footprint()
        if all_valid:
            return self.core
        return torch.where(valid, self.core, other)  # a number: no tensor made on the device

    def any_value(self, fill) -> bool:
        if self.numel() == 0:
            return False
        return bool(self.core_where_valid(False).any()) or (bool(fill) and self.footprint()[2])

    def all_value(self, fill) -> bool:
        if self.numel() == 0:
            return True
        return bool(self.core_where_valid(True).all()) and (bool(fill) or not self.footprint()[2])

    def row_extremum(self, kind: str) -> torch.Tensor:
        """``min``/``max`` of every row over its mapped entries (holes excluded): ``[*lead, rows]``."""
        ident = float("inf") if kind == "min" else float("-inf")
        c = self.core_where_valid(ident)
        red = c.amin(dim=(-3, -2, -1)) if kind == "min" else c.amax(dim=(-3, -2, -1))
        return red.reshape(tuple(red.shape[:-3]) + (self.shape[-2],))

    # -------------------------------------------------------- structural ops
    def restrict(self, rel, fill) -> Block:
        if is_full(rel, self.shape):
            return self
        if is_full(rel[-2:], self.shape[-2:]):
            sl = tuple(slice(lo, hi) for lo, hi in rel[:-2])
            return self.with_core(self.core[sl])
        return super().restrict(rel, fill)

