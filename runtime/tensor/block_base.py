"""Common interface of g-BSCR sparse blocks.

A sparse block ``B = (b, Theta)`` is a *core* tensor ``b`` plus parameters
``Theta``; every block kind defines an injective index map ``phi_Theta`` from
core indices to indices of the block's dense *extent* (``Block.shape``, which
always has the rank of the enclosing tensor).  Positions of the extent that are
not in the image of ``phi`` are *holes*: they hold the enclosing tensor's
background value ``d``.  Because holes follow the background, an elementwise
function ``f`` can be applied to a tensor by applying it to every core and to
``d`` -- the holes of the result automatically hold ``f(d)``.

Blocks are immutable; operations return new blocks (they may share storage).
Every method that needs the value of the holes takes it as ``fill``.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from contextlib import contextmanager

import torch


def same_value(x, y) -> bool:
    """Scalar equality where NaN equals NaN."""
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return bool(x == y)


def rel_slices(rel: Sequence[tuple[int, int]]) -> tuple[slice, ...]:
    return tuple(slice(lo, hi) for lo, hi in rel)


def is_full(rel: Sequence[tuple[int, int]], shape: Sequence[int]) -> bool:
    return all(lo == 0 and hi == n for (lo, hi), n in zip(rel, shape))



#: ``absent_zero``: an entry outside every block is an *absent* term, so ``0 * inf`` there is 0 rather
#: than dense torch's NaN; blocks are then not scanned for inf/NaN before the sparse fast paths.
_SEMANTICS = {"absent_zero": False}


@contextmanager
def absent_zero_semantics():
    """Within this context g-BSCR treats implicit zeros as absent terms (ConstraintFlow's semantics of
    PolyExp/SymExp coefficients): products with them are 0 even against inf/NaN.  Outside it (the
    default) every operation equals the dense torch result exactly, NaN included."""
    old = _SEMANTICS["absent_zero"]
    _SEMANTICS["absent_zero"] = True
    try:
        yield
    finally:
        _SEMANTICS["absent_zero"] = old

class Block:
    """Abstract sparse block.  Subclasses set ``kind`` and ``has_holes``."""

    kind = "abstract"
    has_holes = False

    shape: tuple[int, ...]

    # ------------------------------------------------------------------ basics
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the stored values (of the first core)."""
        return self.cores()[0].dtype

    @property
    def device(self) -> torch.device:
        return self.cores()[0].device

    def numel(self) -> int:
        return math.prod(self.shape)

    def nbytes(self) -> int:
        """Bytes of stored data (core tensors only)."""
        return sum(t.numel() * t.element_size() for t in self.cores())

    def cores(self) -> list[torch.Tensor]:
        """The stored tensors (most kinds store one, ``self.core``)."""
        return [self.core]

    def to_dense(self, fill) -> torch.Tensor:  # pragma: no cover - overridden
        """Dense form of the extent; holes hold ``fill``."""
        raise NotImplementedError

    def write_into(self, view: torch.Tensor, fill) -> None:
        """Write the block into ``view`` (already filled with ``fill``)."""
        view.copy_(self.to_dense(fill))

    def map_values(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> "Block":  # pragma: no cover
        """Apply an elementwise function to the stored values (same kind)."""
        raise NotImplementedError

    def to(self, dtype: torch.dtype) -> "Block":
        if dtype == self.dtype:
            return self
        return self.map_values(lambda c: c.to(dtype))

    def all_finite(self) -> bool:
        """Whether every stored value is finite (cached: blocks are never modified in place).

        Under :func:`cfruntime.tensor.absent_zero_semantics` this is assumed without looking."""
        if _SEMANTICS["absent_zero"]:
            return True
        cached = self.__dict__.get("_all_finite")
        if cached is None:
            cached = all(bool(torch.isfinite(c).all()) for c in self.cores() if c.is_floating_point())
            self.__dict__["_all_finite"] = cached
        return cached

    def inherit_flags(self, src: "Block") -> "Block":
        """Carry ``src``'s cached finiteness over to a block made from it by a structural op
        (slicing, adding/removing/broadcasting/permuting dimensions moves values, never makes new ones)."""
        if self is not src:
            for key in ("_all_finite", "_no_nan"):
                if key in src.__dict__ and key not in self.__dict__:
                    self.__dict__[key] = src.__dict__[key]
        return self

    def no_nan(self) -> bool:
        """Whether no stored value is NaN (cached like :meth:`all_finite`)."""
        if _SEMANTICS["absent_zero"]:
            return True
        cached = self.__dict__.get("_no_nan")
        if cached is None:
            cached = self.__dict__.get("_all_finite") or all(not bool(torch.isnan(c).any()) for c in self.cores() if c.is_floating_point())
            self.__dict__["_no_nan"] = cached
        return cached

    # -------------------------------------------------------- structural ops
    def _dense(self, t: torch.Tensor) -> "Block":
        from .block_dense import DenseBlock

        return DenseBlock(t)

    def restrict(self, rel: Sequence[tuple[int, int]], fill) -> "Block":
        """Sub-block for the relative region ``rel`` (list of (lo, hi))."""
        if is_full(rel, self.shape):
            return self
        return self._dense(self.to_dense(fill)[rel_slices(rel)])

    def add_dim(self, dim: int, fill) -> "Block":
        return self._dense(self.to_dense(fill).unsqueeze(dim))

    def remove_dim(self, dim: int, fill) -> "Block":
        return self._dense(self.to_dense(fill).squeeze(dim))

    def expand_dim(self, dim: int, size: int, fill) -> "Block":
        """Logically repeat a size-1 dimension ``size`` times."""
        from .block_repeat import make_bcast_block

        dense = self.to_dense(fill)
        shape = list(self.shape)
        shape[dim] = size
        return make_bcast_block(dense, tuple(shape))

    def permute(self, perm: Sequence[int], fill) -> "Block":
        return self._dense(self.to_dense(fill).permute(*perm))

    def sum_dim(self, dim: int, fill) -> "Block":
        """Sum over ``dim`` of the extent (holes count as ``fill``)."""
        return self._dense(self.to_dense(fill).sum(dim))

    def any_value(self, fill) -> bool:
        return bool(self.to_dense(fill).any())

    def all_value(self, fill) -> bool:
        return bool(self.to_dense(fill).all())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype})"
