"""Repeat block: a core stored once and logically repeated along some dims.

Core ``b`` has the rank of the extent ``Z_B``; along every *repeated* dimension
``b`` has size 1, along the others it has the full extent size.

Index map: ``phi(i_1..i_r) = {(j_1..j_r) : j_k = i_k if b.shape[k] == Z_B[k]}``,
i.e. the dense form is ``b.expand(Z_B)`` (no holes).  Strictly the map goes the
other way (every dense index reads core index ``i_k = 0`` on repeated dims); it
is injective on the stored values in the sense that each stored value owns a
whole line of the extent.

Example: ``b = [[1], [2]]`` (shape [2, 1]) with extent [2, 3] is::

    [[1, 1, 1],
     [2, 2, 2]]

This class is also the shared implementation of its two special cases, defined
here too: :class:`DenseBlock` (nothing repeated) and :class:`ConstantBlock`
(everything repeated).  Every operation of the three returns the most specific
kind of its result (:func:`make_bcast_block`), so the three are one module.

Dense block: the core *is* the dense form of the block.  Index map: identity,
``phi(i_1..i_r) = (i_1..i_r)``; no holes.  Example: core ``[[1, 2], [3, 4]]``
placed at start ``(1, 0)`` of a 3x3 tensor with background 0 gives::

    [[0, 0, 0],
     [1, 2, 0],
     [3, 4, 0]]

Constant block: one scalar repeated over the whole extent.  The core is a
single value (stored as a tensor with all dims of size 1); every dense index of
the extent reads core index ``(0, ..., 0)``; no holes.  Example: value ``7``
with extent [2, 3] is ``[[7, 7, 7], [7, 7, 7]]``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from .block_base import Block, is_full


class RepeatBlock(Block):
    kind = "repeat"
    has_holes = False

    def __init__(self, core: torch.Tensor, shape: Sequence[int]):
        shape = tuple(int(s) for s in shape)
        if core.dim() != len(shape):
            raise ValueError(f"core rank {core.dim()} != extent rank {len(shape)}")
        for c, s in zip(core.shape, shape):
            if c != s and c != 1:
                raise ValueError(f"core shape {tuple(core.shape)} cannot repeat to {shape}")
        self.core = core
        self.shape = shape

    def repeated_dims(self) -> list[int]:
        return [k for k, (c, s) in enumerate(zip(self.core.shape, self.shape)) if c == 1 and s != 1]

    def expanded(self) -> torch.Tensor:
        """Dense view of the extent (stride 0 along repeated dims; no copy)."""
        return self.core.expand(self.shape)

    def to_dense(self, fill=None) -> torch.Tensor:
        return self.expanded().clone()

    def write_into(self, view: torch.Tensor, fill=None) -> None:
        view.copy_(self.expanded())

    def map_values(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> Block:
        return make_bcast_block(fn(self.core), self.shape)

    def structure(self) -> tuple:
        return (self.core, self.shape)

    # -------------------------------------------------------- structural ops
    def restrict(self, rel, fill=None) -> Block:
        if is_full(rel, self.shape):
            return self
        sl = tuple(slice(None) if c == 1 and s != 1 else slice(lo, hi)
                   for (lo, hi), c, s in zip(rel, self.core.shape, self.shape))
        return make_bcast_block(self.core[sl], tuple(hi - lo for lo, hi in rel))

    def add_dim(self, dim: int, fill=None) -> Block:
        shape = list(self.shape)
        shape.insert(dim, 1)
        return make_bcast_block(self.core.unsqueeze(dim), tuple(shape))

    def remove_dim(self, dim: int, fill=None) -> Block:
        shape = list(self.shape)
        del shape[dim]
        return make_bcast_block(self.core.squeeze(dim), tuple(shape))

    def expand_dim(self, dim: int, size: int, fill=None) -> Block:
        shape = list(self.shape)
        shape[dim] = size
        return make_bcast_block(self.core, tuple(shape))

    def permute(self, perm, fill=None) -> Block:
        return make_bcast_block(self.core.permute(*perm), tuple(self.shape[p] for p in perm))

    def sum_dim(self, dim: int, fill=None) -> Block:
        shape = list(self.shape)
        n = shape.pop(dim)
        if self.core.shape[dim] == 1 and n != 1:
            core = self.core.squeeze(dim)
            if core.dtype == torch.bool:
                core = core.long()
            return make_bcast_block(core * n, tuple(shape))
        return make_bcast_block(self.core.sum(dim), tuple(shape))

    def _first_line(self) -> torch.Tensor:
        """The core's first line along its last dimension: a probe that usually settles any/all
        without reading the whole core (a loop test on large coefficients)."""
        return self.core[(0,) * (self.core.dim() - 1)] if self.core.dim() > 1 else self.core

    def any_value(self, fill=None) -> bool:
        return bool(self.numel()) and (bool(self._first_line().any()) or bool(self.core.any()))

    def all_value(self, fill=None) -> bool:
        return not self.numel() or (bool(self._first_line().all()) and bool(self.core.all()))


class DenseBlock(RepeatBlock):
    """Nothing repeated: the core is the extent."""

    kind = "dense"

    def __init__(self, core: torch.Tensor):
        super().__init__(core, tuple(core.shape))

    def to_dense(self, fill=None) -> torch.Tensor:
        return self.core


class ConstantBlock(RepeatBlock):
    """Everything repeated: one value over the extent."""

    kind = "constant"

    def __init__(self, core: torch.Tensor, shape: Sequence[int]):
        shape = tuple(int(s) for s in shape)
        if core.numel() != 1:
            raise ValueError("constant block core must hold exactly one value")
        super().__init__(core.reshape((1,) * len(shape)), shape)

    @classmethod
    def of(cls, value, shape, dtype=torch.float32, device=None) -> "ConstantBlock":
        return cls(torch.full((1,) * len(shape), value, dtype=dtype, device=device), shape)

    @property
    def value(self):
        return self.core.reshape(()).item()


def make_bcast_block(core: torch.Tensor, shape: Sequence[int]) -> Block:
    """Most specific block kind (dense / repeat / constant) for ``core.expand(shape)``.

    ``core`` may have fewer dims than ``shape`` (leading dims are added)."""
    shape = tuple(int(s) for s in shape)
    if core.dim() < len(shape):
        core = core.reshape((1,) * (len(shape) - core.dim()) + tuple(core.shape))
    if tuple(core.shape) == shape:
        return DenseBlock(core)
    if core.numel() == 1:
        return ConstantBlock(core.reshape((1,) * len(shape)), shape)
    return RepeatBlock(core, shape)
