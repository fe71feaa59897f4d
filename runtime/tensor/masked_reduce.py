"""Masked extremum: the minimum (maximum) over one dimension of ``p`` where ``c`` is non-zero.

``masked_extremum(c, p, dim, "min") == where(c != 0, p, inf).amin(dim)`` (``-inf`` and ``amax`` for
``"max"``): a traverse's priority selection, the least priority among the neurons a coefficient
tensor still refers to.  When ``c`` is a g-BSCR tensor with background 0 neither the mask nor the
masked copy is built: positions outside ``c``'s blocks give the identity, and each block of ``c`` is
read once ("has this row a non-zero entry?") wherever ``p`` is constant along ``dim`` over it, as a
layer's priority is; elsewhere the block is combined with ``p`` entry by entry.

Example (dim 1)::

    c = [[0, 2, 0],      p = [[5, 1, 3],      min -> [1, inf]
         [0, 0, 0]]           [5, 1, 3]]
"""

from __future__ import annotations

import math

import torch

from .api import _as_sparse, _device_of, is_sparse, to_dense
from .block_base import Block, same_value
from .block_repeat import RepeatBlock
from .overlap import Region, intersect, region_of, relative, shape_of
from .shape_ops import broadcast_shape, broadcast_to
from .sparse_tensor import SparseTensor

IDENTITY = {"min": math.inf, "max": -math.inf}


def masked_extremum(c, p, dim: int, kind: str) -> torch.Tensor:
    """``where(c != 0, p, identity)`` reduced over ``dim`` by ``kind`` (``"min"``/``"max"``); ``c`` and
    ``p`` are torch or g-BSCR tensors of equal rank whose size-1 dimensions broadcast."""
    if kind not in IDENTITY:
        raise ValueError(f"masked_extremum reduces by min or max, not {kind!r}")
    if is_sparse(c) and (c.background is False or same_value(c.background, 0)) \
            and getattr(p, "dtype", None) is not None and p.dtype.is_floating_point:
        return _masked_extremum_sparse(c, p, dim, kind)
    return _entrywise(to_dense(c), to_dense(p), dim, kind)


def _entrywise(c: torch.Tensor, p: torch.Tensor, dim: int, kind: str) -> torch.Tensor:
    """The definition, on dense tensors: ``where(c != 0, p, identity)`` reduced over ``dim``."""
    masked = torch.where(c != 0, p, IDENTITY[kind])
    return masked.amin(dim) if kind == "min" else masked.amax(dim)


def _masked_extremum_sparse(c: SparseTensor, p, dim: int, kind: str) -> torch.Tensor:
    shape = broadcast_shape(c.shape, p.shape)
    dim %= len(shape)
    c = broadcast_to(c, shape)
    p = broadcast_to(_as_sparse(p, (c,), _device_of((c, p))), shape)
    pick = torch.minimum if kind == "min" else torch.maximum
    out = torch.full(shape[:dim] + shape[dim + 1:], IDENTITY[kind], dtype=p.dtype, device=p.device)
    p_dense = None  # built only if p's blocks cut across a block of c
    for start, block in c.blocks:
        region = region_of(start, block.shape)
        tiles = _tiles(p, region)
        if tiles is None:
            if p_dense is None:
                p_dense = to_dense(p)
            tiles_red = [(region, _entrywise(block.to_dense(0), p_dense[_slices(region)], dim, kind))]
        else:
            tiles_red = [(tile, _tile_extremum(block.restrict(relative(tile, region), 0), p_tile, p, dim, kind))
                         for tile, p_tile in tiles]
        for tile, red in tiles_red:
            idx = _slices(tile[:dim] + tile[dim + 1:])
            out[idx] = pick(out[idx], red)
    return out


def _tiles(p: SparseTensor, region: Region) -> list[tuple[Region, Block | None]] | None:
    """``region`` cut by ``p``'s blocks: ``(tile, p's block restricted to it)`` pairs that cover it
    exactly, or ``[(region, None)]`` where only ``p``'s background reaches it; ``None`` if ``p``'s
    blocks cover only part of it."""
    tiles = []
    for start, pb in p.blocks:
        rp = region_of(start, pb.shape)
        inter = intersect(region, rp)
        if inter is not None:
            tiles.append((inter, pb.restrict(relative(inter, rp), p.background)))
    if not tiles:
        return [(region, None)]
    if sum(math.prod(shape_of(t)) for t, _ in tiles) != math.prod(shape_of(region)):
        return None
    return tiles


def _tile_extremum(cb: Block, pb: Block | None, p: SparseTensor, dim: int, kind: str) -> torch.Tensor:
    """The masked extremum over one tile, where ``c`` is ``cb`` and ``p`` is ``pb`` (``None``: ``p``'s
    background)."""
    if pb is None:
        along = torch.tensor(p.background, dtype=p.dtype, device=p.device)
    elif isinstance(pb, RepeatBlock) and pb.core.shape[dim] == 1:
        along = pb.core.squeeze(dim)  # constant along dim: one value per line
    else:
        return _entrywise(cb.to_dense(0), pb.to_dense(p.background), dim, kind)
    return torch.where(_rows_nonzero(cb, dim), along, IDENTITY[kind])


def _rows_nonzero(cb: Block, dim: int) -> torch.Tensor:
    """Whether each line of ``cb`` along ``dim`` holds a non-zero (NaN counts) entry."""
    if isinstance(cb, RepeatBlock):
        return _core_rows_nonzero(cb.core, dim).expand(cb.shape[:dim] + cb.shape[dim + 1:])
    if dim == len(cb.shape) - 1 and hasattr(cb, "row_extremum"):  # conv/patches: mapped entries only
        return cb.map_values(lambda t: (t != 0).to(torch.float32)).row_extremum("max") > 0
    return (cb.to_dense(0) != 0).any(dim)


#: Lines longer than this are first probed on their leading entries (see :func:`_core_rows_nonzero`).
PROBE = 16


def _core_rows_nonzero(core: torch.Tensor, dim: int) -> torch.Tensor:
    """``core.any(dim)`` (any of numbers is "any non-zero"; NaN counts).  Long lines along the last
    dimension are settled by their first ``PROBE`` entries where one is non-zero, as nearly every line of
    a coefficient block is, and only the others are read in full: one pass over a sliver of the core
    instead of all of it."""
    if dim != core.dim() - 1 or core.shape[dim] <= 4 * PROBE:
        return core.any(dim)
    rows = core[..., :PROBE].any(dim)
    undecided = ~rows
    if bool(undecided.any()):
        rows[undecided] = core[undecided].any(-1)
    return rows


def _slices(region: Region) -> tuple[slice, ...]:
    return tuple(slice(lo, hi) for lo, hi in region)
