"""How the compiled engine builds its tensors: planned g-BSCR (default), general g-BSCR, or dense.

Only the constructors differ; every operation goes through the polymorphic g-BSCR API, so the same
emitted program runs in every representation:

* ``planned`` -- coefficient tensors are :class:`~cfruntime.tensor.Segmented`: their neuron (or
  noise-symbol) dimension is cut into the network's layers and each layer holds at most one block
  whose kind follows from the rule that made it, never from values (no host-device syncs);
* ``gbscr`` -- general g-BSCR :class:`~cfruntime.tensor.SparseTensor` tensors, whose blocks are
  found from the values (prunes, probes); what certifiers whose traverse decides per neuron use;
* ``dense`` -- plain torch tensors (the paper's no-sparsity ablation, ``--no-sparse``).
"""

from __future__ import annotations

import torch

from cfruntime import tensor as gb
from cfruntime.tensor import (ConstantBlock, ConvBlock, DenseBlock, DiagonalBlock, PatchesBlock, Segmented, SelectBlock,
                              SparseTensor)

KINDS = ("planned", "gbscr", "dense")


class Representation:
    """Constructors for the tensors the engine creates itself."""

    def __init__(self, kind: str | bool = "planned", dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu"):
        if isinstance(kind, bool):  # the historical ``sparse`` flag
            kind = "gbscr" if kind else "dense"
        if kind not in KINDS:
            raise ValueError(f"unknown tensor representation '{kind}' (one of {', '.join(KINDS)})")
        self.kind = kind
        self.dtype = dtype
        self.device = torch.device(device)

    @property
    def sparse(self) -> bool:
        """Whether coefficient tensors are structured (convolutions stay convolution blocks)."""
        return self.kind != "dense"

    @property
    def planned(self) -> bool:
        return self.kind == "planned"

    def tensor(self, t: torch.Tensor):
        """A (small, dense-by-nature) tensor as the engine's representation."""
        t = t.to(self.dtype).to(self.device)
        return SparseTensor(t.shape, 0.0, [((0,) * t.dim(), DenseBlock(t))]) if self.kind == "gbscr" else t

    def zeros(self, shape):
        """All-zero coefficients ``[..., W]`` (no blocks)."""
        if self.kind == "planned":
            return Segmented(shape, len(shape) - 1, {}, self.dtype, self.device)
        if self.kind == "gbscr":
            return SparseTensor(shape, 0.0, [], dtype=self.dtype, device=self.device)
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def embed(self, x, dim: int, start: int, total: int):
        """``x`` placed at ``start`` inside a zero tensor of size ``total`` along ``dim``."""
        if self.kind == "planned" and isinstance(x, torch.Tensor):
            dim %= x.dim()
            shape = list(x.shape)
            shape[dim] = total
            return Segmented(shape, dim, {start: x.to(self.dtype).to(self.device)}, self.dtype, self.device)
        if self.kind == "gbscr" and not gb.is_sparse(x):
            x = self.tensor(x)
        return gb.embed_range(x, dim, start, total)

    def one_hot(self, lead: tuple[int, ...], count: int, start: int, total: int):
        """``[*lead, count, total]`` with ones at ``[..., i, start + i]`` (a diagonal block)."""
        if self.sparse:
            core = torch.ones((*lead, count), dtype=self.dtype, device=self.device)
            return self._diagonal(core, len(lead), start, total)
        out = torch.zeros((*lead, count, total), dtype=self.dtype, device=self.device)
        idx = torch.arange(count, device=self.device)
        out[..., idx, start + idx] = 1.0
        return out

    def scaled_one_hot(self, scale: torch.Tensor, start: int, total: int):
        """``[B, n, total]`` with ``scale[b, i]`` at ``[b, i, start + i]``."""
        scale = scale.to(self.dtype).to(self.device)
        b, n = scale.shape
        if self.sparse:
            return self._diagonal(scale, 1, start, total)
        out = torch.zeros((b, n, total), dtype=self.dtype, device=self.device)
        idx = torch.arange(n, device=self.device)
        out[:, idx, start + idx] = scale
        return out

    def _diagonal(self, core: torch.Tensor, delta: int, start: int, total: int):
        shape = tuple(core.shape) + (total,)
        block = DiagonalBlock(core, delta)
        if self.kind == "planned":
            return Segmented(shape, len(shape) - 1, {start: block}, self.dtype, self.device)
        return SparseTensor(shape, 0.0, [((0,) * (len(shape) - 1) + (start,), block)])

    def per_layer_constant(self, layers, n, value):
        """Metadata of the neurons ``n`` (a :class:`~cfruntime.flow.values.Neurons`) that is one
        number per layer (``layer``, ``last_layer``): ``value(k)`` for every neuron of layer ``k``,
        laid out as ``n.shape``; in g-BSCR one constant block per layer the range meets."""
        lo, hi = n.start, n.start + n.count
        pieces = [(max(lo, l.offset), min(hi, l.offset + l.size), value(l.index)) for l in layers]
        pieces = [(a, b, v) for a, b, v in pieces if a < b]
        if self.kind != "gbscr":
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
        if self.kind == "planned":
            return Segmented(block.shape, 2, {0: block}, self.dtype, self.device)
        return SparseTensor(block.shape, 0.0, [((0, 0, 0), block)], dtype=self.dtype, device=self.device)

    def pool_weights(self, w: torch.Tensor, spec, start: int, total: int):
        """``[B, out, total]`` coefficients with ``w[b, i, k]`` at the ``k``-th neuron of the max-pool
        window of output ``i`` (``spec``: a :class:`~cfruntime.network.graph.MaxPoolSpec` whose input
        layer starts at ``start``; ``w`` is ``[B, out, K]``, 0 at padding entries): one patches block
        (a kernel per output position, channel-diagonal) on the input layer, never the dense
        ``[B, out, in]`` matrix.  ``None`` where the windows are not patches (dilation), or for
        dense tensors."""
        if not self.sparse or tuple(spec.dilation) != (1, 1):
            return None
        c, ho, wo = spec.out_shape
        ci, h, wi = spec.in_shape
        kh, kw = spec.kernel
        b = w.shape[0]
        if ci != c or w.shape[-1] != kh * kw:
            return None
        core = torch.zeros((b, c, ho, wo, c, kh, kw), dtype=self.dtype, device=self.device)
        # core[b, ch, oh, ow, ch, i, j] = w[b, (ch, oh, ow), (i, j)]: the diagonal over the two channel dims
        core.diagonal(dim1=1, dim2=4).copy_(w.to(self.dtype).reshape(b, c, ho, wo, kh, kw).permute(0, 2, 3, 4, 5, 1))
        block = PatchesBlock(core, (h, wi), tuple(spec.stride), (spec.padding[0], spec.padding[1]))
        if block.shape != (b, c * ho * wo, ci * h * wi):
            return None
        shape = (b, block.shape[1], total)
        if self.kind == "planned":
            return Segmented(shape, 2, {start: block}, self.dtype, self.device)
        return SparseTensor(shape, 0.0, [((0, 0, start), block)], dtype=self.dtype, device=self.device)

    def diagonal_weight(self, scale: torch.Tensor):
        """The ``[1, n, n]`` weight matrix ``diag(scale)`` of an affine layer that scales each neuron
        (an input normalisation) as one diagonal block, never unrolled."""
        core = scale.to(self.dtype).to(self.device).unsqueeze(0)
        return self._diagonal(core, 1, 0, core.shape[1])

    def select_weight(self, gather):
        """The ``[1, size, in_size]`` weight matrix of a gather layer (a
        :class:`~cfruntime.network.graph.GatherSpec`: ``y_r = scale_r x_{index_r}``) as one selection
        block, never unrolled (``m x n`` dense entries against ``m``)."""
        core = gather.scale.to(self.dtype).to(self.device).unsqueeze(0)
        block = SelectBlock(core, gather.index.to(self.device), gather.in_size)
        if self.kind == "planned":
            return Segmented(block.shape, 2, {0: block}, self.dtype, self.device)
        return SparseTensor(block.shape, 0.0, [((0, 0, 0), block)], dtype=self.dtype, device=self.device)

    def cat(self, parts, dim: int):
        return gb.cat(parts, dim)

    def float_member(self, parts: list[tuple[int, object]], batch: int, total: int):
        """A Float member of all ``total`` neurons from the stored ``(offset, [B, n_k])`` of the
        analysed layers (the others are 0): planned, a segmented ``[B, N]`` (no copy)."""
        if self.kind == "planned":
            segs = {off: gb.to_dense(v).to(self.dtype) for off, v in parts}
            return Segmented((batch, total), 1, segs, self.dtype, self.device)
        return None

    # -- the layers of a coefficient tensor (a layer-granular traverse) --------------------------------
    def layers_in(self, coeff, layout, current: int) -> list[int]:
        """The layers analysed before layer ``current`` on which ``coeff`` (``[..., N]`` over all
        neurons) may be non-zero: the segments present (planned) or the blocks' reach (g-BSCR), both
        structural; for a dense tensor (which has no structure) those where it holds a non-zero value.
        ``layout`` is the network's :class:`~cfruntime.flow.layout.NetworkLayout`."""
        if coeff is None:
            return []
        if isinstance(coeff, Segmented):
            at, sizes = layout.layer_at, layout.sizes
            ks = [at.get(s) for s in coeff.parts]
            if all(k is not None and coeff.parts[s].shape[coeff.sdim] == sizes[k] for s, k in zip(coeff.parts, ks)):
                return sorted(k for k in ks if k < current)
            coeff = coeff.to_sparse()  # parts that are not whole layers: read the general blocks
        done = [(k, off, n) for k, (off, n) in enumerate(zip(layout.offsets, layout.sizes)) if k < current]
        if not gb.is_sparse(coeff):
            return [k for k, off, n in done if bool(coeff[..., off:off + n].any())]
        d = len(coeff.shape) - 1
        spans = [(st[d], st[d] + b.shape[d]) for st, b in coeff.blocks]
        return [k for k, off, n in done if any(lo < off + n and off < hi for lo, hi in spans)]

    def take_range(self, coeff, start: int, size: int):
        """The last dimension of ``coeff`` restricted to ``[start, start + size)``."""
        if isinstance(coeff, Segmented):
            part = coeff.parts.get(start)
            if isinstance(part, torch.Tensor) and part.shape[coeff.sdim] == size:
                return part
        return gb.slice_range(coeff, len(coeff.shape) - 1, start, start + size)

    def drop_ranges(self, coeff, ranges):
        """``coeff`` with its last dimension zero on every ``(start, size)`` of ``ranges``."""
        d = len(coeff.shape) - 1
        if isinstance(coeff, Segmented) and all(coeff.parts.get(s) is None or coeff.parts[s].shape[d] == n for s, n in ranges):
            return coeff.without(ranges)
        coeff = gb.to_dense(coeff) if isinstance(coeff, Segmented) else coeff
        if not gb.is_sparse(coeff):
            out = coeff.clone()
            for start, size in ranges:
                out[..., start:start + size] = 0
            return out
        width = coeff.shape[d]
        pieces, at = [], 0
        for start, size in sorted(ranges):
            if start > at:
                pieces.append(gb.slice_range(coeff, d, at, start))
            pieces.append(SparseTensor(tuple(coeff.shape[:d]) + (size,), 0.0, [], dtype=self.dtype, device=self.device))
            at = start + size
        if at < width:
            pieces.append(gb.slice_range(coeff, d, at, width))
        return gb.cat(pieces, d) if len(pieces) > 1 else pieces[0]
