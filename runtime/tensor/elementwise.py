"""Generic elementwise engine over g-BSCR tensors of one shape.

``elementwise(operands, fn, casts, region_kernel)``:

1. result background ``fn(d_1, .., d_n)`` (computed with torch on 0-d tensors,
   so dtype promotion, inf and NaN behave exactly as in dense torch);
2. output regions from :func:`overlap.plan_regions` over the blocks of all
   operands (overlap groups, transitive closure, split-or-merge);
3. per output region, each operand contributes ``None`` (only background
   there), its single block restricted to the region, or -- if several of its
   blocks meet the region or one covers it only partly -- a dense block of its
   materialised values;
4. ``region_kernel`` (op specific, see :mod:`binary`) or
   :func:`generic_region` turns the parts into one output block (or ``None``
   when the region equals the output background).
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from .block_base import Block, same_value
from .block_repeat import DenseBlock, RepeatBlock, make_bcast_block
from .overlap import contains, plan_regions, region_of, relative, shape_of, start_of
from .sparse_tensor import SparseTensor


SKIP = object()  # returned by a region kernel: the region equals the background


def _same_geometry(a: Block, b: Block) -> bool:
    from .block_conv import ConvBlock
    from .block_diagonal import DiagonalBlock
    from .block_patches import PatchesBlock
    from .block_select import SelectBlock

    if isinstance(a, DiagonalBlock) and isinstance(b, DiagonalBlock):
        return a.delta == b.delta and a.shape == b.shape
    if isinstance(a, (ConvBlock, PatchesBlock, SelectBlock)):
        return a.same_geometry(b)
    return False


def _is_const(p) -> bool:
    return isinstance(p, RepeatBlock) and p.core.numel() == 1


def generic_region(fn, parts: Sequence[Block | None], bgs: Sequence[torch.Tensor],
                   out_bg, shape) -> Block | None:
    """Kind-aware elementwise evaluation of one region (correct for any parts)."""
    # all repeat-like (dense / repeat / constant) or background: broadcast cores
    if all(p is None or isinstance(p, RepeatBlock) for p in parts):
        args = [bg if p is None else p.core for p, bg in zip(parts, bgs)]
        return make_bcast_block(fn(*args), shape)
    holed = [p for p in parts if p is not None and not isinstance(p, RepeatBlock)]
    # all holed parts share one geometry; the rest is background or constant
    if all(_same_geometry(holed[0], h) for h in holed[1:]) and \
            all(p is None or p in holed or _is_const(p) for p in parts):
        hole_args = [bg if (p is None or p in holed) else p.core.reshape(()) for p, bg in zip(parts, bgs)]
        if same_value(fn(*hole_args).item(), out_bg):
            idx = [i for i, p in enumerate(parts) if p is not None and p in holed]
            cores = {i: parts[i].cores()[0] for i in idx}

            def f(_core):
                args = [cores[i] if i in cores else hole_args[i] for i in range(len(parts))]
                return fn(*args)

            return holed[0].map_values(f)
    # fallback: dense evaluation of the region
    args = [bg if p is None else p.to_dense(bg.item()) for p, bg in zip(parts, bgs)]
    out = fn(*args)
    if tuple(out.shape) != tuple(shape):
        out = out.expand(shape).clone()
    return DenseBlock(out)


def elementwise(operands: Sequence[SparseTensor], fn: Callable, casts: Sequence[torch.dtype],
                region_kernel: Callable | None = None) -> SparseTensor:
    shape = operands[0].shape
    device = operands[0].device
    bgs = [torch.tensor(o.background, dtype=o.dtype, device=device).to(dt) for o, dt in zip(operands, casts)]
    out_bg_t = fn(*bgs)
    out_dtype = out_bg_t.dtype
    out_bg = out_bg_t.item()

    regions, owners, refs = [], [], []
    for i, o in enumerate(operands):
        for s, b in o.blocks:
            regions.append(region_of(s, b.shape))
            owners.append(i)
            refs.append(b)
    blocks = []
    for reg, members in plan_regions(regions, owners):
        rshape = shape_of(reg)
        parts: list[Block | None] = [None] * len(operands)
        for i, o in enumerate(operands):
            mine = [m for m in members if owners[m] == i]
            if not mine:
                continue
            if len(mine) == 1 and contains(regions[mine[0]], reg):
                p = refs[mine[0]].restrict(relative(reg, regions[mine[0]]), o.background)
            else:
                p = DenseBlock(o.materialize(reg))
            parts[i] = p.to(casts[i])
        blk = region_kernel(parts, bgs, out_bg, rshape) if region_kernel is not None else None
        if blk is SKIP:
            continue
        if blk is None:
            blk = generic_region(fn, parts, bgs, out_bg, rshape)
        if blk is not None:
            blocks.append((start_of(reg), blk.to(out_dtype)))
    return SparseTensor(shape, out_bg, blocks, dtype=out_dtype, device=device)
