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

The block modules depend one way, each only on those before it: this interface;
:mod:`.block_repeat` (the repeat block and its special cases, dense and
constant); :mod:`.block_fallback` (structural operations through the dense
form, which build dense blocks); the kinds with holes (:mod:`.block_diagonal`,
:mod:`.block_unit_dims`, then :mod:`.block_lead`'s leading-dimension operations for
:mod:`.block_patches` and :mod:`.block_select`, then :mod:`.block_conv`).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from contextlib import contextmanager

import torch

from .kept_columns import KeptColumns


def same_value(x, y) -> bool:
    """Scalar equality where NaN equals NaN."""
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    return bool(x == y)


def rel_slices(rel: Sequence[tuple[int, int]]) -> tuple[slice, ...]:
    return tuple(slice(lo, hi) for lo, hi in rel)


def is_full(rel: Sequence[tuple[int, int]], shape: Sequence[int]) -> bool:
    return all(lo == 0 and hi == n for (lo, hi), n in zip(rel, shape))


def same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are the same view of the same storage (so they hold the same values)."""
    return (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
            and a.dtype == b.dtype and a.device == b.device)


def _same_part(a, b) -> bool:
    """One part of two blocks' :meth:`Block.structure` is the same: a tensor viewing the same storage,
    a block of the same structure, else an equal value."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and same_view(a, b)
    if isinstance(a, Block):
        return isinstance(b, Block) and a.same_structure(b)
    return a == b


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

    def times_dense(self, t: torch.Tensor):
        """``self * t`` entry by entry for a finite tensor ``t`` of the extent's last two dimensions
        (leading ones broadcast; or a :class:`~cfruntime.tensor.kept_columns.KeptColumns`), where a hole
        times anything is a hole (0): this dense product, or a block of this kind where it keeps the
        holes (patches)."""
        return t.times(self.to_dense(0)) if isinstance(t, KeptColumns) else self.to_dense(0) * t

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
    # Every kind implements these; :class:`~.block_fallback.DenseFallbackBlock` does it through the
    # dense form for the cases a kind has no structured answer for.
    def restrict(self, rel: Sequence[tuple[int, int]], fill) -> "Block":  # pragma: no cover - overridden
        """Sub-block for the relative region ``rel`` (list of (lo, hi))."""
        raise NotImplementedError

    def add_dim(self, dim: int, fill) -> "Block":  # pragma: no cover - overridden
        """A size-1 dimension inserted at ``dim``."""
        raise NotImplementedError

    def remove_dim(self, dim: int, fill) -> "Block":  # pragma: no cover - overridden
        """The size-1 dimension ``dim`` removed."""
        raise NotImplementedError

    def expand_dim(self, dim: int, size: int, fill) -> "Block":  # pragma: no cover - overridden
        """Logically repeat a size-1 dimension ``size`` times."""
        raise NotImplementedError

    def permute(self, perm: Sequence[int], fill) -> "Block":  # pragma: no cover - overridden
        """The extent's dimensions reordered (``torch.permute``)."""
        raise NotImplementedError

    def sum_dim(self, dim: int, fill) -> "Block":  # pragma: no cover - overridden
        """Sum over ``dim`` of the extent (holes count as ``fill``)."""
        raise NotImplementedError

    def any_value(self, fill) -> bool:
        return bool(self.to_dense(fill).any())

    def all_value(self, fill) -> bool:
        return bool(self.to_dense(fill).all())

    # ---------------------------------------------------- structural equality
    def structure(self) -> tuple:  # pragma: no cover - overridden
        """What defines the block besides its kind and extent, in a fixed order: its stored tensors,
        the blocks it wraps and its parameters (everything else it holds is derived from these)."""
        raise NotImplementedError

    def same_structure(self, other: "Block") -> bool:
        """Whether ``other`` is the same block without reading a value: same kind and extent, equal
        parameters, wrapped blocks of the same structure, and stored tensors that are the very same
        view of the very same storage (so the same values)."""
        if self is other:
            return True
        if type(self) is not type(other) or self.shape != other.shape:
            return False
        return all(_same_part(a, b) for a, b in zip(self.structure(), other.structure(), strict=True))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype})"
