"""How the compiled engine builds its tensors: g-BSCR (default) or dense torch (``--no-sparse``).

Only the constructors differ; every operation goes through the polymorphic g-BSCR API, so the same
emitted program runs in both modes (the paper's no-sparsity ablation).
"""

from __future__ import annotations

import torch

from cfruntime import tensor as gb
from cfruntime.tensor import ConstantBlock, ConvBlock, DenseBlock, DiagonalBlock, SparseTensor


class Representation:
    """Constructors for the tensors the engine creates itself."""

    def __init__(self, sparse: bool, dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu"):
        self.sparse = sparse
        self.dtype = dtype
        self.device = torch.device(device)

    def tensor(self, t: torch.Tensor):
        """A (small, dense-by-nature) tensor as the engine's representation."""
        t = t.to(self.dtype).to(self.device)
        return SparseTensor(t.shape, 0.0, [((0,) * t.dim(), DenseBlock(t))]) if self.sparse else t

    def zeros(self, shape):
        if self.sparse:
            return SparseTensor(shape, 0.0, [], dtype=self.dtype, device=self.device)
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def embed(self, x, dim: int, start: int, total: int):
        """``x`` placed at ``start`` inside a zero tensor of size ``total`` along ``dim``."""
        if self.sparse and not gb.is_sparse(x):
            x = self.tensor(x)
        return gb.embed_range(x, dim, start, total)

    def one_hot(self, lead: tuple[int, ...], count: int, start: int, total: int):
        """``[*lead, count, total]`` with ones at ``[..., i, start + i]`` (a diagonal block)."""
        if self.sparse:
            core = torch.ones((*lead, count), dtype=self.dtype, device=self.device)
            block = DiagonalBlock(core, len(lead))
            return SparseTensor((*lead, count, total), 0.0, [((0,) * len(lead) + (0, start), block)])
        out = torch.zeros((*lead, count, total), dtype=self.dtype, device=self.device)
        idx = torch.arange(count, device=self.device)
        out[..., idx, start + idx] = 1.0
        return out

    def scaled_one_hot(self, scale: torch.Tensor, start: int, total: int):
        """``[B, n, total]`` with ``scale[b, i]`` at ``[b, i, start + i]``."""
        scale = scale.to(self.dtype).to(self.device)
        b, n = scale.shape
        if self.sparse:
            return SparseTensor((b, n, total), 0.0, [((0, 0, start), DiagonalBlock(scale, 1))])
        out = torch.zeros((b, n, total), dtype=self.dtype, device=self.device)
        idx = torch.arange(n, device=self.device)
        out[:, idx, start + idx] = scale
        return out

    def per_layer_constant(self, layers, n, value):
        """Metadata of the neurons ``n`` (a :class:`~cfruntime.flow.values.Neurons`) that is one
        number per layer (``layer``, ``last_layer``): ``value(k)`` for every neuron of layer ``k``,
        laid out as ``n.shape``; in g-BSCR one constant block per layer the range meets."""
        lo, hi = n.start, n.start + n.count
        pieces = [(max(lo, l.offset), min(hi, l.offset + l.size), value(l.index)) for l in layers]
        pieces = [(a, b, v) for a, b, v in pieces if a < b]
        if not self.sparse:
            vals = torch.cat([torch.full((b - a,), v, dtype=self.dtype) for a, b, v in pieces])
            return vals.reshape(n.shape).to(self.device)
        blocks = []
        for a, b, v in pieces:
            start, shape = [0] * n.rank, [1] * n.rank
            start[n.dim], shape[n.dim] = a - lo, b - a
            blocks.append((tuple(start), ConstantBlock.of(v, shape, self.dtype, self.device)))
        return SparseTensor(n.shape, 0.0, blocks, dtype=self.dtype, device=self.device)

    def conv_weight(self, conv):
        """The ``[1, out, in]`` weight matrix of a convolution (a
        :class:`~cfruntime.network.graph.ConvSpec`) as one convolution block, or ``None`` when the
        convolution is not one (asymmetric padding, dilation, a geometry that does not reproduce the
        layer's output size): such layers use their unrolled matrix."""
        t, l, b, r = conv.padding
        if (t, l) != (b, r) or tuple(conv.dilation) != (1, 1):
            return None
        kernel = conv.kernel.to(self.dtype).to(self.device)
        block = ConvBlock(kernel, conv.in_shape[1:], conv.stride, (t, l), lead=(1,))
        if block.out_chw != tuple(conv.out_shape):
            return None
        return SparseTensor(block.shape, 0.0, [((0, 0, 0), block)], dtype=self.dtype, device=self.device)

    def cat(self, parts, dim: int):
        return gb.cat(parts, dim)
