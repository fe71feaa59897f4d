"""The g-BSCR tensor ``T = (d, S, B, Z)``.

* ``background`` (``d``): scalar for every position not covered by a block,
  and for the holes inside blocks (0, 1, +-inf, True/False, ...);
* ``blocks``: list of ``(start, block)`` pairs -- ``S`` and ``B`` -- whose
  extents ``[start, start + block.shape)`` do not overlap;
* ``shape`` (``Z``): the full shape, any rank (0-d included).

Example: the DeepPoly coefficient of 3 neurons over ``N_total = 10`` neurons
whose only non-zero part is over the previous layer (neurons 4..7) is::

    SparseTensor((2, 3, 10), 0.0, [((0, 0, 4), DenseBlock(torch.randn(2, 3, 4)))])

Blocks carry the tensor's dtype/device; the background is stored as a Python
scalar already rounded to the dtype.

The arithmetic operators (``a + b``, ``a @ b``, ...) are the functional API's
``binary``/``unary``/``inner``, which import this module: :mod:`.api` installs
them here with :func:`register_operators` when it is imported (always, by the
package's ``__init__``), so this module does not import the API back.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Iterable, Sequence

import torch

from .block_base import Block
from .block_repeat import DenseBlock
from .overlap import Region, intersect, region_of, relative


#: The functional API's ``binary``, ``unary`` and ``inner`` (see :func:`register_operators`).
_OPERATORS: dict[str, Callable] = {}


def register_operators(*, binary: Callable, unary: Callable, inner: Callable) -> None:
    """Install the functions :class:`SparseTensor`'s operators call: ``binary(a, b, op)``,
    ``unary(a, op)`` and ``inner(a, b)`` (:mod:`.api` does, when it is imported)."""
    _OPERATORS.update(binary=binary, unary=unary, inner=inner)


def _operator(name: str) -> Callable:
    try:
        return _OPERATORS[name]
    except KeyError:
        raise RuntimeError("SparseTensor operators need cfruntime.tensor.api, which registers them: "
                           "import cfruntime.tensor") from None


@functools.lru_cache(maxsize=1024)
def _rounded(value, kind: type, dtype: torch.dtype):
    return torch.tensor(value, dtype=dtype).item()


def py_scalar(value, dtype: torch.dtype):
    """``value`` converted to ``dtype`` and back to a Python scalar (memoised: tensors are built with
    a handful of backgrounds, thousands of times per analysis)."""
    if isinstance(value, torch.Tensor):
        value = value.item()
    return _rounded(value, type(value), dtype)  # the type keeps 1, 1.0 and True apart


class SparseTensor:
    __slots__ = ("shape", "background", "blocks", "dtype", "device")

    def __init__(self, shape: Sequence[int], background=0.0,
                 blocks: Iterable[tuple[Sequence[int], Block]] = (),
                 dtype: torch.dtype | None = None, device=None):
        self.shape = tuple(int(s) for s in shape)
        blocks = [(tuple(int(x) for x in s), b) for s, b in blocks]
        blocks = [(s, b) for s, b in blocks if b.numel() > 0]
        if dtype is None:
            if blocks:
                dtype = blocks[0][1].dtype
            elif isinstance(background, bool):
                dtype = torch.bool
            else:
                dtype = torch.get_default_dtype()
        if device is None:
            device = blocks[0][1].device if blocks else torch.device("cpu")
        self.dtype = dtype
        self.device = torch.device(device)
        self.background = py_scalar(background, dtype)
        self.blocks = [(s, b.to(dtype)) for s, b in blocks]
        for s, b in self.blocks:
            if len(s) != len(self.shape) or len(b.shape) != len(self.shape):
                raise ValueError(f"block rank mismatch: start {s}, block {b.shape}, tensor {self.shape}")

    # ------------------------------------------------------------ helpers
    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)

    def nbytes(self) -> int:
        """Bytes held by block cores (the background is one scalar)."""
        return sum(b.nbytes() for _, b in self.blocks)

    def regions(self) -> list[Region]:
        return [region_of(s, b.shape) for s, b in self.blocks]

    def covered(self) -> int:
        return sum(b.numel() for _, b in self.blocks)

    def with_blocks(self, blocks, background=None, shape=None, dtype=None) -> "SparseTensor":
        return SparseTensor(self.shape if shape is None else shape,
                            self.background if background is None else background,
                            blocks, dtype=self.dtype if dtype is None else dtype, device=self.device)

    def validate(self) -> None:
        """Raise if blocks leave the tensor or overlap (for tests)."""
        regs = self.regions()
        for r in regs:
            for (lo, hi), n in zip(r, self.shape):
                if lo < 0 or hi > n:
                    raise AssertionError(f"block {r} outside shape {self.shape}")
        for i in range(len(regs)):
            for j in range(i + 1, len(regs)):
                if intersect(regs[i], regs[j]) is not None:
                    raise AssertionError(f"overlapping blocks {regs[i]} and {regs[j]}")

    # --------------------------------------------------------- conversion
    def to_dense(self) -> torch.Tensor:
        out = torch.full(self.shape, self.background, dtype=self.dtype, device=self.device)
        for s, b in self.blocks:
            view = out[tuple(slice(x, x + n) for x, n in zip(s, b.shape))]
            b.write_into(view, self.background)
        return out

    def blocks_within(self, region: Region):
        """``(intersection, block restricted to it)`` for every block meeting ``region``."""
        for s, b in self.blocks:
            reg = region_of(s, b.shape)
            inter = intersect(reg, region)
            if inter is not None:
                yield inter, b.restrict(relative(inter, reg), self.background).inherit_flags(b)

    def materialize(self, region: Region) -> torch.Tensor:
        """Dense values of the sub-region ``region`` (list of (lo, hi))."""
        out = torch.full(tuple(hi - lo for lo, hi in region), self.background,
                         dtype=self.dtype, device=self.device)
        for inter, sub in self.blocks_within(region):
            view = out[tuple(slice(lo, hi) for lo, hi in relative(inter, region))]
            sub.write_into(view, self.background)
        return out

    @classmethod
    def from_dense(cls, t: torch.Tensor, background=None) -> "SparseTensor":
        """One dense block (or none) covering the bounding box of the entries that
        differ from ``background`` (default: 0 / False)."""
        if background is None:
            background = False if t.dtype == torch.bool else 0
        bg = py_scalar(background, t.dtype)
        if t.dim() == 0:
            return cls((), t.item(), [], dtype=t.dtype, device=t.device)
        if isinstance(bg, float) and math.isnan(bg):
            diff = ~torch.isnan(t)
        else:
            diff = t != bg
        if not bool(diff.any()):
            return cls(t.shape, bg, [], dtype=t.dtype, device=t.device)
        start, sl = [], []
        for d in range(t.dim()):
            other = tuple(k for k in range(t.dim()) if k != d)
            line = diff.any(dim=other) if other else diff
            idx = torch.nonzero(line).flatten()
            lo, hi = int(idx[0]), int(idx[-1]) + 1
            start.append(lo)
            sl.append(slice(lo, hi))
        return cls(t.shape, bg, [(start, DenseBlock(t[tuple(sl)]))], dtype=t.dtype, device=t.device)

    # ---------------------------------------------------------- operators
    def __add__(self, o):
        return _operator("binary")(self, o, "add")

    def __radd__(self, o):
        return _operator("binary")(o, self, "add")

    def __sub__(self, o):
        return _operator("binary")(self, o, "sub")

    def __rsub__(self, o):
        return _operator("binary")(o, self, "sub")

    def __mul__(self, o):
        return _operator("binary")(self, o, "mul")

    def __rmul__(self, o):
        return _operator("binary")(o, self, "mul")

    def __truediv__(self, o):
        return _operator("binary")(self, o, "div")

    def __rtruediv__(self, o):
        return _operator("binary")(o, self, "div")

    def __neg__(self):
        return _operator("unary")(self, "neg")

    def __matmul__(self, o):
        return _operator("inner")(self, o)

    def __repr__(self) -> str:
        kinds = ", ".join(f"{b.kind}@{s}:{b.shape}" for s, b in self.blocks)
        return (f"SparseTensor(shape={self.shape}, background={self.background}, "
                f"dtype={self.dtype}, blocks=[{kinds}])")
