"""A dense ``[*, m, k]`` tensor kept as a few columns and one row held on all the others.

``KeptColumns(kept, held, cols)`` is the tensor ``T`` with ``T[..., i, cols[j]] = kept[..., i, j]`` and
``T[..., i, c] = held[..., 0, c]`` on every other column ``c``: what an optimiser's slopes are when only
the unstable neurons' slopes are free (:class:`cfruntime.flow.param_store.ParamStore`, sparse), e.g.
``[B, 800, 2704]`` kept as ``[B, 800, 359]`` and ``[B, 1, 2704]``.  It is not a torch tensor: only the
scales of a back-substitution (``segmented_ops.substitute``'s ``scales``) receive one, and they use it
without making ``T``:

* :meth:`times` -- ``p * T`` for a dense ``p``: ``p * held`` and, on the kept columns, ``p * kept``;
* :meth:`gather` -- ``T`` flattened over its last two dimensions at given positions (what a
  convolution's patches read, :meth:`PatchesBlock.times_dense
  <cfruntime.tensor.block_patches.PatchesBlock.times_dense>`): one gather from the kept values and the
  held row side by side, so the gradient is made for those only, never for the ``m x k`` entries;
* :meth:`dense` -- ``T`` itself, for any other use.
"""

from __future__ import annotations

import torch


class KeptColumns:
    """``T [*, m, k]`` from ``kept [*, m, F]``, ``held [*, 1, k]`` and ``cols [F]`` (see the module docstring)."""

    def __init__(self, kept: torch.Tensor, held: torch.Tensor, cols: torch.Tensor):
        self.kept, self.held, self.cols = kept, held, cols
        lead = torch.broadcast_shapes(kept.shape[:-2], held.shape[:-2])
        self.shape = torch.Size((*lead, kept.shape[-2], held.shape[-1]))
        self.dtype, self.device = kept.dtype, kept.device

    def dim(self) -> int:
        return len(self.shape)

    def dense(self) -> torch.Tensor:
        """``T`` as a tensor."""
        return self.held.expand(self.shape).index_copy(-1, self.cols, self.kept.expand(*self.shape[:-1], -1))

    def times(self, p: torch.Tensor) -> torch.Tensor:
        """``p * T`` for a tensor ``p`` broadcast to ``T``'s shape."""
        out = p * self.held
        out = out.expand(torch.broadcast_shapes(out.shape, self.shape)).clone() if out.shape != self.shape else out
        part = p.index_select(-1, self.cols) * self.kept
        return out.index_copy_(-1, self.cols, part.expand(*out.shape[:-1], -1))

    def gather(self, flat: torch.Tensor) -> torch.Tensor:
        """``T.reshape(*, m * k)[..., flat]`` without making ``T``: positions ``row * k + col``."""
        m, k = self.shape[-2:]
        f = self.cols.numel()
        lead = self.shape[:-2]
        at = torch.full((k,), -1, dtype=torch.long, device=flat.device)
        at[self.cols] = torch.arange(f, device=flat.device)
        row, col = flat // k, flat % k
        pos = at[col]
        index = torch.where(pos >= 0, row * f + pos, m * f + col)
        source = torch.cat([self.kept.expand(*lead, m, f).reshape(*lead, m * f),
                            self.held.expand(*lead, 1, k).reshape(*lead, k)], -1)
        return source.index_select(-1, index)
