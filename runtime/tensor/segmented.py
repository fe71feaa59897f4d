"""Segmented g-BSCR tensors: a block layout planned from shapes, never from values.

A :class:`Segmented` tensor has one *segmented* dimension ``sdim``: the neuron dimension of PolyExp
coefficients (over all neurons of the network) or the noise-symbol dimension of SymExp coefficients.
That dimension is cut into fixed *segments* (a network's layers; the noise symbols of the input and
of each layer that makes some), and each segment holds at most one *part*: a dense torch tensor
broadcastable to the segment's extent (the tensor's shape with ``shape[sdim]`` the segment's size),
or a g-BSCR block of exactly that extent (diagonal, convolution, patches, ...).  An absent segment is
zero; a zero coefficient is an absent summand (ConstraintFlow's semantics), so products with it are 0.
(A bool mask may instead be true outside its parts, ``fill=True``: the complement of a mask.)

Which segments hold which kind of part follows from the op that made the value (``neurons.dot(W)``
puts ``W`` on the previous layer, ``neuron_to_poly`` a diagonal on the neurons' layer, ...) and the
layer kinds, never from the values: no operation reads a value to decide what to do, so there is no
host-device synchronisation and every call of a rule runs the same kernels.

Example: DeepPoly's back-substitution expression at the third layer of an MLP,
``[batch, curr, N]`` over the ``N`` neurons of layers of sizes 4, 5, 5::

    Segmented(shape=(1, 5, 14), sdim=2, parts={4: W})      # W: [1, 5, 5] on neurons 4..8

Operations with a fast path here return a :class:`Segmented` or a plain tensor; anything else goes
through :meth:`Segmented.to_sparse` (the general, value-driven g-BSCR tensor), which is always
correct.
"""

from __future__ import annotations

from typing import Callable

import torch

from .block_base import Block
from .block_diagonal import DiagonalBlock
from .block_repeat import make_bcast_block
from .sparse_tensor import SparseTensor


def is_segmented(x) -> bool:
    return isinstance(x, Segmented)


def _extent(shape: tuple[int, ...], sdim: int, n: int) -> tuple[int, ...]:
    s = list(shape)
    s[sdim] = n
    return tuple(s)


def part_dense(p) -> torch.Tensor:
    """A part as a (possibly broadcast) torch tensor."""
    return p if isinstance(p, torch.Tensor) else p.to_dense(0)


def part_as_block(p, extent) -> Block:
    return make_bcast_block(p, extent) if isinstance(p, torch.Tensor) else p


class Segmented:
    """A tensor of shape ``shape`` whose dimension ``sdim`` is segmented; ``parts`` maps a segment's
    start to its part (see the module docstring)."""

    __slots__ = ("shape", "sdim", "parts", "dtype", "device", "fill", "memo")

    def __init__(self, shape, sdim: int, parts: dict, dtype: torch.dtype, device, fill=0):
        self.shape = tuple(int(s) for s in shape)
        self.sdim = sdim % len(self.shape)
        self.parts = parts
        self.dtype = dtype
        self.device = torch.device(device) if not isinstance(device, torch.device) else device
        self.fill = fill
        self.memo: dict | None = None  # views derived from this (immutable) tensor, made once

    # -- basics ----------------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        kinds = ", ".join(f"{s}:{'dense' if isinstance(p, torch.Tensor) else p.kind}{tuple(p.shape)}" for s, p in self.parts.items())
        return f"Segmented{self.shape}@{self.sdim}[{kinds}]"

    def like(self, parts: dict, shape=None, sdim=None) -> "Segmented":
        return Segmented(self.shape if shape is None else shape, self.sdim if sdim is None else sdim, parts, self.dtype,
                         self.device, self.fill)

    def extent(self, p) -> tuple[int, ...]:
        return _extent(self.shape, self.sdim, p.shape[self.sdim])

    def spans(self) -> list[tuple[int, int]]:
        """``(start, stop)`` of every present segment along ``sdim``."""
        return [(s, s + p.shape[self.sdim]) for s, p in self.parts.items()]

    def to_dense(self) -> torch.Tensor:
        out = torch.full(self.shape, self.fill, dtype=self.dtype, device=self.device)
        for s, p in self.parts.items():
            view = out.narrow(self.sdim, s, p.shape[self.sdim])
            if isinstance(p, torch.Tensor):
                view.copy_(p.expand(view.shape))
            else:
                p.write_into(view, 0)
        return out

    def to_sparse(self) -> SparseTensor:
        """The same tensor as a general g-BSCR tensor (background 0)."""
        blocks = []
        for s, p in sorted(self.parts.items()):
            start = [0] * self.ndim
            start[self.sdim] = s
            blocks.append((tuple(start), part_as_block(p, self.extent(p))))
        background = self.fill if self.dtype == torch.bool else float(self.fill)
        return SparseTensor(self.shape, background, blocks, dtype=self.dtype, device=self.device)

    def map_parts(self, fn_dense: Callable, fn_block: Callable | None = None) -> "Segmented":
        """Apply an elementwise ``f`` with ``f(0) == 0`` to every part."""
        fn_block = fn_block or (lambda b: b.map_values(fn_dense))
        return self.like({s: fn_dense(p) if isinstance(p, torch.Tensor) else fn_block(p) for s, p in self.parts.items()})

    # -- structural ops --------------------------------------------------------------------------
    def add_dim(self, dim: int) -> "Segmented":
        dim %= self.ndim + 1
        shape = self.shape[:dim] + (1,) + self.shape[dim:]
        parts = {s: p.unsqueeze(dim) if isinstance(p, torch.Tensor) else p.add_dim(dim, 0) for s, p in self.parts.items()}
        out = self.like(parts, shape, self.sdim + (1 if dim <= self.sdim else 0))
        out.memo = {("unit", dim): self.parts}  # removing the added unit dimension again gives these parts
        return out

    def remove_dim(self, dim: int) -> "Segmented":
        dim %= self.ndim
        if dim == self.sdim or self.shape[dim] != 1:
            raise ValueError(f"remove_dim: dim {dim} of {self.shape} is not a size-1 dimension")
        shape = self.shape[:dim] + self.shape[dim + 1:]
        parts = {s: p.squeeze(dim) if isinstance(p, torch.Tensor) else p.remove_dim(dim, 0) for s, p in self.parts.items()}
        return self.like(parts, shape, self.sdim - (1 if dim < self.sdim else 0))

    def expand_dim(self, dim: int, size: int) -> "Segmented":
        """Logically repeat a size-1 dimension (dense parts stay broadcast; no copy)."""
        dim %= self.ndim
        if self.shape[dim] == size:
            return self
        if dim == self.sdim:
            raise ValueError("the segmented dimension cannot be broadcast")
        shape = _extent(self.shape, dim, size)
        parts = {s: p if isinstance(p, torch.Tensor) else p.expand_dim(dim, size, 0) for s, p in self.parts.items()}
        return self.like(parts, shape)

    def permute(self, perm) -> "Segmented":
        perm = [d % self.ndim for d in perm]
        shape = tuple(self.shape[d] for d in perm)
        parts = {s: p.permute(*perm) if isinstance(p, torch.Tensor) else p.permute(perm, 0) for s, p in self.parts.items()}
        return self.like(parts, shape, perm.index(self.sdim))

    def slice(self, dim: int, start: int, stop: int) -> "Segmented":
        """``self[..., start:stop, ...]`` along ``dim`` (along ``sdim``: parts keep their blocks,
        cut only where a segment straddles the range)."""
        dim %= self.ndim
        if start == 0 and stop == self.shape[dim]:
            return self
        shape = _extent(self.shape, dim, stop - start)
        parts = {}
        if dim != self.sdim:
            for s, p in self.parts.items():
                if isinstance(p, torch.Tensor):
                    parts[s] = p if p.shape[dim] == 1 else p.narrow(dim, start, stop - start)
                else:
                    rel = [(0, n) for n in p.shape]
                    rel[dim] = (start, stop)
                    parts[s] = p.restrict(rel, 0)
            return self.like(parts, shape)
        for s, p in self.parts.items():
            n = p.shape[dim]
            lo, hi = max(s, start), min(s + n, stop)
            if lo >= hi:
                continue
            if lo == s and hi == s + n:
                parts[s - start] = p
            elif isinstance(p, torch.Tensor):
                parts[lo - start] = p.narrow(dim, lo - s, hi - lo)
            else:
                rel = [(0, m) for m in p.shape]
                rel[dim] = (lo - s, hi - s)
                parts[lo - start] = p.restrict(rel, 0)
        return self.like(parts, shape)

    def widen(self, width: int) -> "Segmented":
        """The segmented dimension extended with absent (zero) segments up to ``width``."""
        return self if width == self.shape[self.sdim] else self.like(dict(self.parts), _extent(self.shape, self.sdim, width))

    def without(self, spans) -> "Segmented":
        """The parts whose segment starts are not in ``spans`` (a traverse step removes a layer)."""
        starts = {s for s, _ in spans}
        return self.like({s: p for s, p in self.parts.items() if s not in starts})

    def part(self, start: int):
        return self.parts.get(start)

    def without_unit_dim(self, dim: int) -> dict:
        """Its parts with the size-1 dimension ``dim`` removed, made once per tensor."""
        memo = self.memo if self.memo is not None else {}
        self.memo = memo
        key = ("unit", dim)
        if key not in memo:
            memo[key] = {s: p.squeeze(dim) if isinstance(p, torch.Tensor) else p.remove_dim(dim, 0) for s, p in self.parts.items()}
        return memo[key]


# -- constructors ----------------------------------------------------------------------------------
def placed(p, shape, sdim: int, start: int, dtype, device) -> Segmented:
    """``p`` as the only part, at ``start`` along ``sdim`` of a tensor of shape ``shape``."""
    return Segmented(shape, sdim, {start: p}, dtype, device)


def empty(shape, sdim: int, dtype, device) -> Segmented:
    return Segmented(shape, sdim, {}, dtype, device)


def diagonal(core: torch.Tensor, shape, start: int) -> Segmented:
    """``[*lead, n, W]`` with ``core[..., i]`` at ``[..., i, start + i]``."""
    return Segmented(shape, len(shape) - 1, {start: DiagonalBlock(core, core.dim() - 1)}, core.dtype, core.device)
