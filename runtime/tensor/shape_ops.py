"""Shape operations on g-BSCR tensors.

All of them move or re-index blocks without touching the data when the block
kinds allow it (dense / repeat / constant always do; diagonal, conv and patches
blocks do along their free / leading dims and are densified *per block*
otherwise):

* ``add_dim`` / ``remove_dim`` -- unsqueeze / squeeze a size-1 dim;
* ``expand_dim`` / ``broadcast_to`` / ``repeat`` -- logical repetition
  (size-1 dims become repeat blocks, no copy; ``repeat`` of a larger dim tiles
  the block list, sharing the cores);
* ``reduce_sum`` -- blocks are projected along the summed dim, overlapping
  projections are grouped (transitive closure) and summed per group;
* ``slice_range`` / ``embed_range`` -- neuron sub-ranges of a global index;
* ``permute`` / ``transpose``; ``cat``.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .block_base import same_value
from .block_repeat import ConstantBlock, DenseBlock
from .overlap import contains, intersect, plan_regions, region_of, relative, shape_of, start_of
from .sparse_tensor import SparseTensor


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy/torch broadcasting of shapes (``torch.broadcast_shapes`` without its slow first call,
    which imports sympy)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, n in enumerate(s, rank - len(s)):
            n = int(n)
            if n != 1:
                if out[i] not in (1, n):
                    raise RuntimeError(f"shapes {[tuple(x) for x in shapes]} are not broadcastable")
                out[i] = n
    return tuple(out)


def _norm(dim: int, ndim: int) -> int:
    if not -ndim <= dim < max(ndim, 1):
        raise IndexError(f"dim {dim} out of range for rank {ndim}")
    return dim % ndim if ndim else 0


def add_dim(a: SparseTensor, dim: int) -> SparseTensor:
    dim = _norm(dim, a.ndim + 1)
    shape = list(a.shape)
    shape.insert(dim, 1)
    blocks = []
    for s, b in a.blocks:
        s = list(s)
        s.insert(dim, 0)
        blocks.append((s, b.add_dim(dim, a.background).inherit_flags(b)))
    return a.with_blocks(blocks, shape=shape)


def remove_dim(a: SparseTensor, dim: int) -> SparseTensor:
    dim = _norm(dim, a.ndim)
    if a.shape[dim] != 1:
        raise ValueError(f"remove_dim: dim {dim} has size {a.shape[dim]}, not 1")
    shape = list(a.shape)
    del shape[dim]
    blocks = []
    for s, b in a.blocks:
        s = list(s)
        del s[dim]
        blocks.append((s, b.remove_dim(dim, a.background).inherit_flags(b)))
    return a.with_blocks(blocks, shape=shape)


def expand_dim(a: SparseTensor, dim: int, size: int) -> SparseTensor:
    dim = _norm(dim, a.ndim)
    if a.shape[dim] == size:
        return a
    if a.shape[dim] != 1:
        raise ValueError(f"expand_dim: dim {dim} has size {a.shape[dim]}, not 1")
    shape = list(a.shape)
    shape[dim] = size
    blocks = [(s, b.expand_dim(dim, size, a.background).inherit_flags(b)) for s, b in a.blocks]
    return a.with_blocks(blocks, shape=shape)


def broadcast_to(a: SparseTensor, shape: Sequence[int]) -> SparseTensor:
    shape = tuple(shape)
    if a.shape == shape:
        return a
    while a.ndim < len(shape):
        a = add_dim(a, 0)
    for d, (have, want) in enumerate(zip(a.shape, shape)):
        if have != want:
            a = expand_dim(a, d, want)
    return a


def expand(a: SparseTensor, shape: Sequence[int]) -> SparseTensor:
    """torch.Tensor.expand semantics (-1 keeps a size)."""
    shape = list(shape)
    off = len(shape) - a.ndim
    for i in range(a.ndim):
        if shape[off + i] == -1:
            shape[off + i] = a.shape[i]
    return broadcast_to(a, shape)


def repeat(a: SparseTensor, dim: int, times: int) -> SparseTensor:
    """Tile ``times`` copies along ``dim`` (torch.cat([a] * times, dim))."""
    dim = _norm(dim, a.ndim)
    if a.shape[dim] == 1:
        return expand_dim(a, dim, times)
    n = a.shape[dim]
    shape = list(a.shape)
    shape[dim] = n * times
    blocks = []
    for t in range(times):
        for s, b in a.blocks:
            s = list(s)
            s[dim] += t * n
            blocks.append((s, b))
    return a.with_blocks(blocks, shape=shape)


def permute(a: SparseTensor, perm: Sequence[int]) -> SparseTensor:
    perm = [_norm(p, a.ndim) for p in perm]
    blocks = [([s[p] for p in perm], b.permute(perm, a.background).inherit_flags(b)) for s, b in a.blocks]
    return a.with_blocks(blocks, shape=[a.shape[p] for p in perm])


def transpose(a: SparseTensor, d0: int, d1: int) -> SparseTensor:
    perm = list(range(a.ndim))
    d0, d1 = _norm(d0, a.ndim), _norm(d1, a.ndim)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return permute(a, perm)


def reduce_sum(a: SparseTensor, dim: int, keepdim: bool = False) -> SparseTensor:
    dim = _norm(dim, a.ndim)
    Z = a.shape[dim]
    bg = a.background
    bg_sum = torch.full((Z,), bg, dtype=a.dtype, device=a.device).sum()
    out_dtype = bg_sum.dtype
    out_shape = a.shape[:dim] + a.shape[dim + 1:]
    zero_bg = same_value(bg, 0) or bg is False
    proj = []
    for s, b in a.blocks:
        r = region_of(s, b.shape)
        proj.append(r[:dim] + r[dim + 1:])
    blocks = []
    for reg, members in plan_regions(proj):
        if len(members) == 1 and proj[members[0]] == reg:
            s, b = a.blocks[members[0]]
            blk = b.sum_dim(dim, bg)
            extra = Z - b.shape[dim]
            if extra > 0 and not zero_bg:
                add = torch.full((extra,), bg, dtype=a.dtype, device=a.device).sum()
                blk = blk.map_values(lambda c: c + add)
        else:
            slab = reg[:dim] + ((0, Z),) + reg[dim:]
            blk = DenseBlock(a.materialize(slab).sum(dim))
        blocks.append((start_of(reg), blk))
    out = SparseTensor(out_shape, bg_sum.item(), blocks, dtype=out_dtype, device=a.device)
    return add_dim(out, dim) if keepdim else out


def slice_range(a: SparseTensor, dim: int, start: int, stop: int) -> SparseTensor:
    """Entries ``start:stop`` along ``dim`` (e.g. one layer of a global neuron index)."""
    dim = _norm(dim, a.ndim)
    start, stop = max(0, start), min(a.shape[dim], stop)
    stop = max(start, stop)
    full = tuple((0, n) for n in a.shape)
    window = full[:dim] + ((start, stop),) + full[dim + 1:]
    blocks = []
    for inter, sub in a.blocks_within(window):
        ns = list(start_of(inter))
        ns[dim] -= start
        blocks.append((ns, sub))
    shape = list(a.shape)
    shape[dim] = stop - start
    return a.with_blocks(blocks, shape=shape)


def embed_range(a: SparseTensor, dim: int, start: int, total: int, fill=None) -> SparseTensor:
    """Place ``a`` at offset ``start`` of a tensor whose size along ``dim`` is
    ``total``; the rest holds ``fill`` (default: ``a``'s background)."""
    dim = _norm(dim, a.ndim)
    if start < 0 or start + a.shape[dim] > total:
        raise ValueError("embed_range: does not fit")
    shape = list(a.shape)
    shape[dim] = total
    if fill is None or same_value(fill, a.background):
        blocks = []
        for s, b in a.blocks:
            s = list(s)
            s[dim] += start
            blocks.append((s, b))
        return a.with_blocks(blocks, shape=shape)
    origin = [0] * a.ndim
    origin[dim] = start
    whole = region_of([0] * a.ndim, a.shape)
    if not a.blocks:
        blk = ConstantBlock(torch.full((1,) * a.ndim, a.background, dtype=a.dtype, device=a.device), a.shape)
    elif len(a.blocks) == 1 and contains(region_of(a.blocks[0][0], a.blocks[0][1].shape), whole) and not a.blocks[0][1].has_holes:
        blk = a.blocks[0][1]
    else:
        blk = DenseBlock(a.to_dense())
    return a.with_blocks([(origin, blk)], background=fill, shape=shape)


def cat(tensors: Sequence[SparseTensor], dim: int) -> SparseTensor:
    first = tensors[0]
    dim = _norm(dim, first.ndim)
    off = 0
    blocks = []
    for t in tensors:
        if same_value(t.background, first.background) and t.dtype == first.dtype:
            parts = t.blocks
        else:
            parts = [([0] * t.ndim, DenseBlock(t.to_dense().to(first.dtype)))]
        for s, b in parts:
            s = list(s)
            s[dim] += off
            blocks.append((s, b))
        off += t.shape[dim]
    shape = list(first.shape)
    shape[dim] = off
    return first.with_blocks(blocks, shape=shape)
