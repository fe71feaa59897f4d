"""Runtime values that are not plain tensors: affine forms and sets of neurons / noise symbols.

An :class:`Affine` is a tensor of PolyExps (coefficients over all neurons of the network) or SymExps
(coefficients over all noise symbols): ``coeff`` has one more trailing dimension than ``const``;
``coeff is None`` means all coefficients are zero (a promoted constant).

A :class:`Neurons` value is a tensor of neuron indices, shaped like the metadata of the ``cftensor``
value it implements.  Most sets are a contiguous slice of the global numbering laid out along one
dimension (a layer's neurons, the whole network for a map), which lets the runtime slice stored
tensors instead of gathering; ``start``/``count``/``dim`` record that slice.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Affine:
    """``const + sum_i coeff[..., i] * x_i`` for every position of ``const``."""

    coeff: object  # torch.Tensor | SparseTensor | None
    const: object  # torch.Tensor | SparseTensor | float

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        shape = None if self.coeff is None else tuple(self.coeff.shape)
        return f"Affine(coeff={shape}, const={getattr(self.const, 'shape', self.const)})"


@dataclass
class Neurons:
    """Neuron (or noise-symbol) indices laid out with shape ``shape``: ``count`` consecutive indices
    from ``start`` along dimension ``dim``, every other dimension of size 1."""

    start: int
    count: int
    dim: int
    rank: int
    noise: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        s = [1] * self.rank
        s[self.dim] = self.count
        return tuple(s)

    def index(self, device=None) -> torch.Tensor:
        return torch.arange(self.start, self.start + self.count, device=device).reshape(self.shape)


@dataclass
class Window:
    """Each neuron's own list of neurons of one layer: a max-pool layer's pooling windows.

    ``index`` holds global neuron indices shaped like the metadata of the ``cftensor`` value
    (``[1, curr, K]`` for a rule's ``prev``, more size-1 dimensions after ``add_dim``); every index
    lies in the layer whose neurons are ``start .. start + count - 1``.  Padding entries of a window
    repeat one of its neurons; the rule masks them out (``prev_mask``)."""

    index: torch.Tensor  # int64
    start: int
    count: int

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.index.shape)

    @property
    def rank(self) -> int:
        return self.index.dim()

    def local(self) -> torch.Tensor:
        """The indices within the layer, flattened (one gather over the layer's neurons)."""
        return (self.index - self.start).reshape(-1)


class WindowRows:
    """The coefficients of a window list's neurons (``prev[Z]`` of a max-pool rule), ``[B, out, K,
    W]``, not gathered until an operation needs them.

    The one operation that reads them without gathering is a weighted sum over the window
    (``inner`` over the list dimension, what ``zs.dot(w)`` becomes): :meth:`weighted` multiplies
    the stored coefficients of the window's layer by the window weights laid out as one patches
    block, so a layer's noise-symbol coefficients are never copied once per window entry (a ReLU
    layer's diagonal block would become a dense ``[n, n]`` matrix)."""

    def __init__(self, shape: tuple[int, ...], gather, weighted):
        self.shape = tuple(shape)
        self._gather = gather
        self._weighted = weighted
        self._dense = None

    def materialize(self):
        """The gathered coefficients (made once)."""
        if self._dense is None:
            self._dense = self._gather()
        return self._dense

    def weighted(self, w):
        """``sum_k w[..., k] * rows[..., k, :]`` for window weights ``w`` (``[B or 1, out, K]``)."""
        return self._weighted(w)
