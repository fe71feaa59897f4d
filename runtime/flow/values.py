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
