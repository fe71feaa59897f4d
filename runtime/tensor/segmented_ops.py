"""Operations on :class:`~cfruntime.tensor.segmented.Segmented` tensors that keep the planned layout.

Every function returns ``NotImplemented`` when its operands are outside the layouts it handles; the
functional API (:mod:`cfruntime.tensor.api`) then runs the general g-BSCR operation on
:meth:`Segmented.to_sparse` operands, so the result is always correct.  The fast paths:

=====================================  ==================================================================
``add``/``sub`` of two segmented        segment by segment (an absent segment is 0); parts of one kind
                                        stay that kind (dense + dense, diagonal + diagonal)
``mul``/``div`` by a tensor constant    every part scaled (a diagonal part scales its core)
along the segmented dim (or a number)
``where(c, a, b)``, ``c`` constant      segment by segment; a number 0 branch is an absent segment
along the segmented dim
``neg``, ``abs``, clamps at 0            part by part (``f(0) == 0``)
``split_inner``/``inner`` over the       one product per present segment, summed: a plain tensor
segmented dim (concretisation)
``split_inner``/``inner`` of a tensor    one product per segment of the right operand: a segmented
with a segmented right operand over     result (back-substitution through one layer)
a plain dim
=====================================  ==================================================================

``split_inner(x, p, n)`` is ``sum(clamp(x, 0) * p + clamp(x, max=0) * n)``; for big ``x`` it is
computed as ``x * (p + n) / 2 + |x| * (p - n) / 2`` (one pass over ``x`` fewer).  No function reads a
value to choose a path.
"""

from __future__ import annotations

import torch

from .block_base import Block
from .block_conv import ConvBlock
from .block_diagonal import DiagonalBlock
from .block_patches import PatchesBlock
from .block_repeat import make_bcast_block
from .block_select import SelectBlock
from .clamps import clamp_number, magnitude, negative_part, positive_part
from .kept_columns import KeptColumns
from .lazy_parts import LazyParts
from .masked_grad import divide, multiply, records
from .matmul import block_matmul
from .patches_align import aligned, diagonal_as_patches
from .scalars import where_number
from .unit_views import squeezed, unsqueezed
from .segmented import Segmented, is_segmented, part_dense

#: Above this many entries of ``x``, concretisation uses the centre/radius form (one pass fewer).
BOX_FORM_MIN = 1 << 20


def _bshape(*shapes) -> tuple[int, ...]:
    """torch's broadcast of shapes (plain Python: no dispatcher call)."""
    r = max(len(s) for s in shapes)
    out = [1] * r
    for s in shapes:
        for i, n in enumerate(s, r - len(s)):
            if n != 1:
                if out[i] not in (1, n):
                    raise ValueError(f"shapes {shapes} do not broadcast")
                out[i] = n
    return tuple(out)


def _promote(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    return a if a == b else torch.promote_types(a, b)


#: Up to this many entries, an elementwise form (``sum(x * v)``, a ``where`` over ``x``) beats batched
#: matrix products and clamps: fewer operations.  Above it, torch's broadcasting ``where`` and big
#: temporaries cost more than the operations they save (measured on CPU).
SMALL_PRODUCT = 1 << 13


def _product_numel(x: torch.Tensor, v: torch.Tensor) -> int:
    """Entries of the broadcast product ``x * v``."""
    n = 1
    for a, b in zip(x.shape[::-1], v.shape[::-1]):
        n *= max(a, b)
    for a in (x.shape if x.dim() > v.dim() else v.shape)[:abs(x.dim() - v.dim())]:
        n *= a
    return n


def _bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a [B|1, m, k] @ b [B|1, k, n]`` as one ``bmm`` (a size-1 batch is expanded, not copied)."""
    if a.dim() == 3 and b.dim() == 3:
        ba, bb = a.shape[0], b.shape[0]
        if ba == bb:
            return torch.bmm(a, b)
        if ba == 1:
            return torch.bmm(a.expand(bb, -1, -1), b)
        if bb == 1:  # one matrix for the whole batch: a single matrix product over the stacked rows
            if a.is_contiguous():
                return torch.mm(a.view(-1, a.shape[2]), kept_view(b, "m0", lambda s: s[0])).view(ba, a.shape[1], b.shape[2])
            return torch.bmm(a, b.expand(ba, -1, -1))
    return torch.matmul(a, b)


def _fit(p, extent):
    """A part brought to ``extent`` (blocks must match it exactly; dense parts broadcast)."""
    if isinstance(p, torch.Tensor) or tuple(p.shape) == tuple(extent):
        return p
    for d, (have, want) in enumerate(zip(p.shape, extent)):
        if have != want:
            p = p.expand_dim(d, want, 0)
    return p


def _is_diag(p, sdim: int) -> bool:
    return isinstance(p, DiagonalBlock) and sdim in (p.delta, p.delta + 1)


def _const_along(x, sdim: int):
    """``x`` (a number or a tensor) as a tensor of size 1 along ``sdim``, or None if it varies there."""
    if not isinstance(x, torch.Tensor):
        return x
    if x.shape[sdim] == 1:
        return x
    if x.stride(sdim) == 0:
        return x.narrow(sdim, 0, 1)
    return None


# -- elementwise -------------------------------------------------------------------------------------
def _add_parts(pa, pb, op: str, extent):
    if isinstance(pa, torch.Tensor) and isinstance(pb, torch.Tensor):
        return pa + pb if op == "add" else pa - pb
    if op == "sub":
        pb = _neg_part(pb)
    pa, pb = _fit(pa, extent), _fit(pb, extent)
    same = _same_kind_sum(pa, pb)
    if same is not None:
        return same
    return part_dense(pa) + part_dense(pb)


def _same_kind_sum(pa, pb):
    """``pa + pb`` kept in their block kind when they share one, else None."""
    return _core_combine(pa, pb, torch.add)


def _core_combine(pa, pb, fn):
    """``fn(pa, pb)`` entry by entry for two blocks of one kind and geometry (diagonals on the same
    dimensions, patches or selections of one geometry, a convolution seen as patches, patches of nested windows
    and a diagonal beside patches brought onto one window: :mod:`.patches_align`) through their cores, when
    ``fn`` maps two holes (0, 0) to 0; None for other pairs."""
    if isinstance(pa, DiagonalBlock) and isinstance(pb, DiagonalBlock) and pa.delta == pb.delta and pa.shape == pb.shape:
        return DiagonalBlock(fn(pa.core, pb.core), pa.delta)
    if isinstance(pa, ConvBlock) and isinstance(pb, (ConvBlock, PatchesBlock)):
        pa = pa.as_patches()
    if isinstance(pb, ConvBlock) and isinstance(pa, PatchesBlock):
        pb = pb.as_patches()
    pa, pb = _diagonal_as_patches(pa, pb), _diagonal_as_patches(pb, pa)
    if isinstance(pa, PatchesBlock) and isinstance(pb, PatchesBlock) and not pa.same_geometry(pb):
        pa, pb = aligned(pa, pb) or (pa, pb)
    if isinstance(pa, (PatchesBlock, SelectBlock)) and pa.same_geometry(pb):
        return pa.with_core(fn(pa.core, pb.core))
    return None


def _diagonal_as_patches(p, other):
    """``p`` as patches on ``other``'s map when ``p`` is a diagonal of the last two dims and ``other`` patches
    of a map onto itself (a residual join's skip path); else ``p``."""
    if isinstance(p, DiagonalBlock) and isinstance(other, PatchesBlock) and p.delta == p.core.dim() - 1 \
            and p.shape == other.shape:
        return diagonal_as_patches(p.core, other) or p
    return p


def _neg_part(p):
    return -p if isinstance(p, torch.Tensor) else p.map_values(torch.neg)


#: comparisons ``cmp(x, s)`` with a number that are false at ``x == 0`` (so absent stays absent: False)
_ZERO_FALSE = {"gt": lambda s: s >= 0, "lt": lambda s: s <= 0, "ne": lambda s: s == 0}


def _filled(*xs) -> bool:
    """Whether some operand is a complemented mask (true outside its parts): few fast paths apply."""
    return any(is_segmented(x) and x.fill for x in xs)


def binary(a, b, op: str):
    if _filled(a, b):
        return NotImplemented
    if is_segmented(a) and is_segmented(b) and op == "mul":
        return _product(a, b)
    if is_segmented(a) and isinstance(b, (int, float)) and not isinstance(b, bool) and op in _ZERO_FALSE \
            and _ZERO_FALSE[op](b):
        fn = {"gt": torch.gt, "lt": torch.lt, "ne": torch.ne}[op]
        out = a.map_parts(lambda t: fn(t, b))
        out.dtype = torch.bool
        return out
    if is_segmented(a) and is_segmented(b):
        if op not in ("add", "sub") or a.sdim != b.sdim or a.ndim != b.ndim or a.shape[a.sdim] != b.shape[b.sdim]:
            return NotImplemented
        shape = _bshape(a.shape, b.shape)
        parts = {}
        for s in sorted(set(a.parts) | set(b.parts)):
            pa, pb = a.parts.get(s), b.parts.get(s)
            extent = list(shape)
            extent[a.sdim] = (pa if pa is not None else pb).shape[a.sdim]
            if pa is not None and pb is not None:
                if pa.shape[a.sdim] != pb.shape[a.sdim]:
                    return NotImplemented
                parts[s] = _add_parts(pa, pb, op, extent)
            elif pa is not None:
                parts[s] = _fit(pa, extent)
            else:
                parts[s] = _fit(pb if op == "add" else _neg_part(pb), extent)
        return Segmented(shape, a.sdim, parts, _promote(a.dtype, b.dtype), a.device)
    seg, other, seg_first = (a, b, True) if is_segmented(a) else (b, a, False)
    if op not in ("mul", "div") or (op == "div" and not seg_first) or not isinstance(other, (torch.Tensor, int, float)):
        return NotImplemented
    if isinstance(other, torch.Tensor) and other.dim() != seg.ndim:
        return NotImplemented
    x = _const_along(other, seg.sdim)
    if x is None:
        return NotImplemented
    return _scale(seg, x, op)


def _product(a: Segmented, b: Segmented):
    """``a * b`` entry by entry: present where both are (a bool operand is a mask)."""
    if a.dtype == torch.bool and b.dtype != torch.bool:
        return _masked(a, b)
    if b.dtype == torch.bool and a.dtype != torch.bool:
        return _masked(b, a)
    if a.sdim != b.sdim or a.ndim != b.ndim or a.shape[a.sdim] != b.shape[b.sdim]:
        return NotImplemented
    shape = _bshape(a.shape, b.shape)
    parts = {}
    for s in set(a.parts) & set(b.parts):
        pa, pb = a.parts[s], b.parts[s]
        if pa.shape[a.sdim] != pb.shape[a.sdim]:
            return NotImplemented
        extent = list(shape)
        extent[a.sdim] = pa.shape[a.sdim]
        pa, pb = _fit(pa, extent), _fit(pb, extent)
        kept = _core_combine(pa, pb, _mul_or_mask)
        parts[s] = kept if kept is not None else _mul_or_mask(part_dense(pa), part_dense(pb))
    dtype = a.dtype if a.dtype == b.dtype else (b.dtype if a.dtype == torch.bool else a.dtype)
    return Segmented(shape, a.sdim, dict(sorted(parts.items())), dtype, a.device)


def _masked(c: Segmented, a: Segmented):
    """``c ? a : 0`` for a bool mask ``c`` (possibly complemented) over ``a``'s segments."""
    if c.sdim != a.sdim or c.ndim != a.ndim or c.shape[c.sdim] != a.shape[a.sdim]:
        return NotImplemented
    shape = _bshape(c.shape, a.shape)
    parts = {}
    for s, pa in a.parts.items():
        pc = c.parts.get(s)
        extent = list(shape)
        extent[a.sdim] = pa.shape[a.sdim]
        if pc is None:
            if c.fill:
                parts[s] = _fit(pa, extent)
            continue
        if pc.shape[c.sdim] != pa.shape[a.sdim]:
            return NotImplemented
        pa, pc = _fit(pa, extent), _fit(pc, extent)
        kept = _core_combine(pc, pa, lambda m, v: torch.where(m, v, 0.0))  # a's holes are 0 either way
        if kept is not None:
            parts[s] = kept
        else:
            parts[s] = torch.where(part_dense(_fit(pc, extent)) if not c.fill else _dense_filled(pc, extent),
                                   part_dense(_fit(pa, extent)), 0.0)
    return Segmented(shape, a.sdim, parts, a.dtype, a.device)


def _dense_filled(p, extent):
    """A complemented mask's part as a dense tensor (its holes are true)."""
    return p.expand(extent) if isinstance(p, torch.Tensor) else p.to_dense(True)


def _mul_or_mask(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x * y``; a bool factor selects (an unselected inf gives 0, the absent summand)."""
    if x.dtype == torch.bool and y.dtype != torch.bool:
        return torch.where(x, y, 0.0)
    if y.dtype == torch.bool and x.dtype != torch.bool:
        return torch.where(y, x, 0.0)
    return x * y


def reduce_sum(a: Segmented, dim: int):
    """Sum over ``dim``: over the segmented dimension, the parts' sums (a plain tensor); over another,
    part by part (a broadcast part counts its entries)."""
    if a.fill or a.dtype == torch.bool:
        return NotImplemented
    dim %= a.ndim
    if dim == a.sdim:
        out = None
        for p in a.parts.values():
            if isinstance(p, DiagonalBlock) and a.sdim in (p.delta, p.delta + 1):
                t = p.core  # one entry per line
            elif isinstance(p, (ConvBlock, PatchesBlock)) and dim == a.ndim - 1:
                pp = p.as_patches() if isinstance(p, ConvBlock) else p  # a row's mapped entries
                t = pp.core_where_valid(0.0).sum((-3, -2, -1)).reshape(tuple(pp.core.shape[:-6]) + (pp.shape[-2],))
            elif isinstance(p, SelectBlock) and dim == a.ndim - 1:
                t = p.core  # a row's one entry
            else:
                t = part_dense(p).sum(dim)
            out = t if out is None else out + t
        shape = a.shape[:dim] + a.shape[dim + 1:]
        if out is None:
            return torch.zeros(shape, dtype=a.dtype, device=a.device)
        return out if tuple(out.shape) == shape else out.expand(shape)
    parts = {}
    n = a.shape[dim]
    for st, p in a.parts.items():
        if isinstance(p, torch.Tensor):
            parts[st] = p.sum(dim) if p.shape[dim] == n else p.squeeze(dim) * n
        else:
            return NotImplemented
    shape = a.shape[:dim] + a.shape[dim + 1:]
    return Segmented(shape, a.sdim - (1 if dim < a.sdim else 0), parts, a.dtype, a.device)


def _scale(seg: Segmented, x, op: str):
    """Every part times (or divided by) ``x``, a number or a tensor of size 1 along ``sdim``."""
    shape = _bshape(seg.shape, tuple(x.shape)) if isinstance(x, torch.Tensor) else seg.shape
    if isinstance(x, torch.Tensor) and shape[seg.sdim] != seg.shape[seg.sdim]:
        return NotImplemented
    fn = multiply if op == "mul" else divide
    parts = {}
    for s, p in seg.parts.items():
        if isinstance(p, torch.Tensor):
            parts[s] = fn(p, x)
        elif _is_diag(p, seg.sdim):
            xs = squeezed(x, seg.sdim) if isinstance(x, torch.Tensor) else x
            extent = list(shape)
            extent[seg.sdim] = p.shape[seg.sdim]
            parts[s] = DiagonalBlock(fn(_fit(p, extent).core, xs), p.delta)
        elif not isinstance(x, torch.Tensor):
            parts[s] = p.map_values(lambda c: fn(c, x))
        elif isinstance(p, (ConvBlock, PatchesBlock)) and seg.sdim == seg.ndim - 1:
            pp = p.as_patches() if isinstance(p, ConvBlock) else p  # row by row: scale the kernels
            parts[s] = pp.with_core(fn(pp.core, _row_values(pp, x.squeeze(-1))))
        else:
            parts[s] = fn(part_dense(p), x)
    dtype = _promote(seg.dtype, x.dtype) if isinstance(x, torch.Tensor) else seg.dtype
    return Segmented(shape, seg.sdim, parts, dtype, seg.device)


def _is_zero_number(v) -> bool:
    return not isinstance(v, (torch.Tensor, Segmented)) and not isinstance(v, bool) and v == 0


def where(c, a, b):
    """``c ? a : b`` where ``a``/``b`` are segmented or the number 0 and ``c`` is constant along the
    segmented dimension, or ``c ? a : 0`` with a segmented bool ``c`` (a mask)."""
    if _filled(a, b):
        return NotImplemented
    if is_segmented(c):
        if c.dtype == torch.bool and is_segmented(a) and _is_zero_number(b):
            return _masked(c, a)
        return NotImplemented
    segs = [x for x in (a, b) if is_segmented(x)]
    if not segs or not all(is_segmented(x) or _is_zero_number(x) for x in (a, b)):
        return NotImplemented
    ref = segs[0]
    if any(x.sdim != ref.sdim or x.ndim != ref.ndim or x.shape[x.sdim] != ref.shape[ref.sdim] for x in segs):
        return NotImplemented
    if isinstance(c, bool):
        return a if c else b
    if not isinstance(c, torch.Tensor) or c.dim() != ref.ndim:
        return NotImplemented
    cc = _const_along(c, ref.sdim)
    if cc is None:
        return NotImplemented
    cc = cc.to(torch.bool)
    shape = _bshape(cc.shape, *[x.shape for x in segs])
    if shape[ref.sdim] != ref.shape[ref.sdim]:
        return NotImplemented
    pa_all = a.parts if is_segmented(a) else {}
    pb_all = b.parts if is_segmented(b) else {}
    parts = {}
    for s in sorted(set(pa_all) | set(pb_all)):
        pa, pb = pa_all.get(s), pb_all.get(s)
        n = (pa if pa is not None else pb).shape[ref.sdim]
        extent = list(shape)
        extent[ref.sdim] = n
        diag_a = pa is None or _is_diag(pa, ref.sdim)
        diag_b = pb is None or _is_diag(pb, ref.sdim)
        if diag_a and diag_b:  # a diagonal (or absent) on each side stays a diagonal
            delta = (pa if pa is not None else pb).delta
            if (pa is not None and pa.delta != delta) or (pb is not None and pb.delta != delta):
                return NotImplemented
            cs = squeezed(cc, ref.sdim)
            ca = _fit(pa, extent).core if pa is not None else 0.0
            cb = _fit(pb, extent).core if pb is not None else 0.0
            parts[s] = DiagonalBlock(where_number(cs, ca, cb), delta) if not (isinstance(ca, float) and isinstance(cb, float)) else None
            if parts[s] is not None and parts[s].shape != tuple(extent):
                parts[s] = _fit(parts[s], extent)
            continue
        rowwise = _rowwise_where(cc.squeeze(-1), pa, pb) if ref.sdim == ref.ndim - 1 else None
        if rowwise is not None:
            parts[s] = _fit(rowwise, extent)
            continue
        da = part_dense(_fit(pa, extent)) if pa is not None else 0.0
        db = part_dense(_fit(pb, extent)) if pb is not None else 0.0
        parts[s] = torch.where(cc, da, db)
    parts = {s: p for s, p in parts.items() if p is not None}
    return Segmented(shape, ref.sdim, parts, ref.dtype, ref.device)


def _row_values(p: PatchesBlock, c: torch.Tensor) -> torch.Tensor:
    """Per-row values ``c [*lead, rows]`` laid out against a patches core (one kernel per row)."""
    return c.reshape(tuple(c.shape[:-1]) + p.out_chw + (1, 1, 1))


def _rowwise_where(c: torch.Tensor, pa, pb):
    """``where(c, a, b)`` with a condition per row for patches/convolution parts (or absent ones) of
    one geometry: the kernels of each row are chosen; None for other kinds."""
    blocks = [p.as_patches() if isinstance(p, ConvBlock) else p for p in (pa, pb)]
    present = [p for p in blocks if p is not None]
    if not present or not all(isinstance(p, PatchesBlock) for p in present) or \
            (len(present) == 2 and not present[0].same_geometry(present[1])):
        return None
    ref = present[0]
    ca = blocks[0].core if blocks[0] is not None else 0.0
    cb = blocks[1].core if blocks[1] is not None else 0.0
    return ref.with_core(torch.where(_row_values(ref, c), ca, cb))


def unary(a: Segmented, op: str):
    if op == "not" and a.dtype == torch.bool:  # the complement of a mask: true outside its parts
        out = a.map_parts(torch.logical_not, lambda b: b.map_values(torch.logical_not))
        out.fill = not a.fill
        return out
    if a.fill:
        return NotImplemented
    if op == "neg":
        return a.map_parts(torch.neg)
    if op == "abs":
        return a.map_parts(torch.abs)
    if op == "magnitude":
        return a.map_parts(magnitude)
    return NotImplemented


def clamp(a: Segmented, lo, hi):
    if a.fill or lo not in (None, 0, 0.0) or hi not in (None, 0, 0.0):
        return NotImplemented
    return a.map_parts(lambda t: clamp_number(t, lo, hi))


# -- contractions -------------------------------------------------------------------------------------
def _pos(p):
    return positive_part(p) if isinstance(p, torch.Tensor) else p.map_values(positive_part)


def _neg(p):
    return negative_part(p) if isinstance(p, torch.Tensor) else p.map_values(negative_part)


def _as_block(p, lead) -> Block:
    """A part as a block whose leading dims (all but the last two) are ``lead``."""
    shape = tuple(lead) + tuple(p.shape[-2:])
    if isinstance(p, torch.Tensor):
        return make_bcast_block(p.reshape((1,) * (len(shape) - p.dim()) + tuple(p.shape)), shape)
    return _fit(p, shape)


def _mm(a, b):
    """``a [*L, m, k] @ b [*L', k, n]`` for parts (tensors, diagonal or other g-BSCR blocks, whose
    leading dims broadcast); a tensor or a block."""
    ta, tb = isinstance(a, torch.Tensor), isinstance(b, torch.Tensor)
    if ta and tb:
        if a.dtype != b.dtype:
            dt = torch.promote_types(a.dtype, b.dtype)
            a, b = a.to(dt), b.to(dt)
        return _bmm(a, b)
    da = isinstance(a, DiagonalBlock) and a.delta == len(a.shape) - 2
    db = isinstance(b, DiagonalBlock) and b.delta == len(b.shape) - 2
    if ta and db:
        return a * _block_row(b)
    if da and tb:
        return a.core.unsqueeze(-1) * b
    if da and db:
        lead = _bshape(a.shape[:-2], b.shape[:-2])
        core = a.core * b.core
        return DiagonalBlock(core.expand(lead + core.shape[-1:]), len(lead))
    lead = _bshape(a.shape[:-2], b.shape[:-2])
    out = block_matmul(_as_block(a, lead), _as_block(b, lead))
    return out.expanded() if hasattr(out, "expanded") and out.kind in ("dense", "repeat", "constant") else out


def _add(acc, t):
    if acc is None:
        return t
    if isinstance(acc, torch.Tensor) and isinstance(t, torch.Tensor):
        return acc + t
    same = _same_kind_sum(acc, t) if acc.shape == t.shape else None
    return same if same is not None else part_dense(acc) + part_dense(t)


def _contract_last(x, p, n):
    """``sum_k x+[..., m, k] p[..., 0, k] + x-[..., m, k] n[..., 0, k]`` -> ``[..., m]`` (``p is n``:
    one product; ``p``/``n`` None: absent, zero)."""
    if p is n:
        return None if p is None else _dot_last(x, p)
    if p is None or n is None:
        return _dot_last(_pos(x), p) if n is None else _dot_last(_neg(x), n)
    if _box_form_pays(x):  # centre/radius: one pass over x (or a block's core) fewer than the clamps
        half_p, half_n = p * 0.5, n * 0.5  # |x| with gradient 1 at 0: a 0 meets p, as in the forms below
        return _dot_last(x, half_p + half_n) + _dot_last(_magnitude(x), half_p - half_n)
    if isinstance(x, torch.Tensor):
        if _product_numel(x, p) <= SMALL_PRODUCT:
            return (x * torch.where(x >= 0, p, n)).sum(-1)  # each coefficient meets its bound
    return _dot_last(_pos(x), p) + _dot_last(_neg(x), n)


def _box_form_pays(x) -> bool:
    """Whether ``x`` (a tensor, or a block by its core) is big enough for the centre/radius form."""
    core = x if isinstance(x, torch.Tensor) else getattr(x, "core", None)
    return isinstance(core, torch.Tensor) and core.numel() >= BOX_FORM_MIN


def _split_over_segments(x: Segmented, pos, neg, same: bool):
    """Contraction over ``x``'s segmented (last) dimension against ``[..., 1, W]`` operands."""
    out = None
    for s, xp in x.parts.items():
        w = xp.shape[x.sdim]
        p = _segment_of(pos, s, w, x.sdim)
        n = p if same else _segment_of(neg, s, w, x.sdim)
        if p is NotImplemented or n is NotImplemented:
            return NotImplemented
        term = _contract_last(xp, p, n)
        if term is not None:
            out = term if out is None else out + term
    if out is None:
        return torch.zeros(_bshape(x.shape[:-1], pos.shape[:-1]), dtype=x.dtype, device=x.device)
    return out


def _segment_of(v, start: int, width: int, sdim: int):
    if is_segmented(v):
        if v.sdim != sdim:
            return NotImplemented
        p = v.parts.get(start)
        if p is not None and p.shape[sdim] != width:
            return NotImplemented
        return part_dense(p) if p is not None else None
    if isinstance(v, torch.Tensor):
        return v.narrow(sdim, start, width)
    return NotImplemented


def split_inner(x, pos, neg, dim: int, same: bool = False):
    """``sum over dim of clamp(x, 0) * pos + clamp(x, max=0) * neg`` (``same``: ``pos`` and ``neg``
    are one value, so ``sum(x * pos)``), for the planned layouts; NotImplemented otherwise."""
    if not all(isinstance(v, (torch.Tensor, Segmented)) for v in (x, pos, neg)):
        return NotImplemented
    r = len(x.shape)
    dim %= r
    if _filled(x, pos, neg):
        return NotImplemented
    if is_segmented(x) and x.sdim == dim == r - 1:
        for v in (pos, neg):
            if len(v.shape) != r or v.shape[r - 2] != 1:
                return NotImplemented
        return _split_over_segments(x, pos, neg, same)
    if (is_segmented(pos) or is_segmented(neg)) and dim == r - 2 and x.shape[-1] == 1:
        return _split_through(x, pos, neg, same)
    return NotImplemented


def _sole_block(x, sdim: int):
    """``x`` as one block: a tensor ``x`` itself, the part of a segmented ``x`` along ``sdim`` whose one
    segment starts at 0; None for anything else."""
    if is_segmented(x):
        if x.sdim != sdim or len(x.parts) != 1 or next(iter(x.parts)) != 0:
            return None
        return next(iter(x.parts.values()))
    return x if isinstance(x, torch.Tensor) else None


def _drop_unit(p, dim: int):
    return p.squeeze(dim) if isinstance(p, torch.Tensor) else p.remove_dim(dim, 0)


def _is_row_diag(p) -> bool:
    return isinstance(p, DiagonalBlock) and p.delta == len(p.shape) - 2


def _split_through(x, pos, neg, same: bool):
    """``x [*L, m, k, 1]`` against ``pos``/``neg`` ``[*L', 1, k, W]`` segmented along ``W``:
    one product per segment, a segmented ``[*, m, W]`` result."""
    r = len(x.shape)
    for v in (pos, neg):
        if not is_segmented(v) or v.ndim != r or v.sdim != r - 1 or v.shape[r - 3] != 1:
            return NotImplemented
    ref = pos
    xp = _sole_block(x, r - 2)
    if xp is None:
        return NotImplemented
    xm = xp.squeeze(-1) if isinstance(xp, torch.Tensor) else xp.remove_dim(r - 1, 0)
    xplus = xminus = sign = None
    parts = {}
    for s in sorted(set(pos.parts) | set(neg.parts)):
        p, n = pos.parts.get(s), neg.parts.get(s)
        pm = None if p is None else _drop_unit(p, r - 3)
        if same or p is n:
            term = None if pm is None else _mm(xm, pm)
        else:
            nm = None if n is None else _drop_unit(n, r - 3)
            if isinstance(xm, torch.Tensor) and _is_row_diag(pm) and _is_row_diag(nm):
                # x+ diag(p) + x- diag(n), column by column: x * (x >= 0 ? p : n) for small x, else
                # x * n + x+ * (p - n) (torch's broadcasting where is slow on big tensors)
                dp, dn = _block_row(pm), _block_row(nm)
                if xm.numel() <= SMALL_PRODUCT:
                    sign = (xm >= 0) if sign is None else sign
                    term = xm * torch.where(sign, dp, dn)
                else:
                    xplus = _pos(xm) if xplus is None else xplus
                    term = xm * dn + xplus * (dp - dn)
            else:
                term = None
                if pm is not None:
                    xplus = _pos(xm) if xplus is None else xplus
                    term = _mm(xplus, pm)
                if nm is not None:
                    xminus = _neg(xm) if xminus is None else xminus
                    t2 = _mm(xminus, nm)
                    term = t2 if term is None else _add(term, t2)
        if term is not None:
            parts[s] = term
    lead = _bshape(tuple(x.shape[:r - 3]), tuple(ref.shape[:r - 3]))
    shape = lead + (x.shape[r - 3], ref.shape[-1])
    out = {}
    for s, t in parts.items():
        extent = shape[:-1] + (t.shape[-1],)
        out[s] = t if isinstance(t, torch.Tensor) else _fit(t, extent)
    return Segmented(shape, len(shape) - 1, out, _promote(x.dtype, ref.dtype), ref.device)


def split_inner_plain(x: torch.Tensor, pos: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
    """:func:`split_inner` over the last dimension of plain tensors ``x [..., m, k]`` against
    ``pos``/``neg`` ``[..., 1, k]`` (bounds of a box)."""
    return _contract_last(x, pos, neg)


def _abs(p):
    return p.abs() if isinstance(p, torch.Tensor) else p.map_values(torch.abs)


def _magnitude(p):
    """``|p|`` whose gradient at 0 is 1 (the positive side's, as :func:`_pos`/:func:`_neg` give a 0)."""
    return magnitude(p) if isinstance(p, torch.Tensor) else p.map_values(magnitude)


def _memo(t, key, make):
    """A value derived from ``t`` (a tensor or a block), made once and kept on it.  Only for views of
    ``t`` (they follow its data) or for tensors marked constant (:func:`mark_constant`): a graph's
    input buffers are written in place between replays, and a computed value kept on one would go
    stale.  A view kept on the tensor it views must be made from ``t.detach()`` (:func:`kept_view`)."""
    space = getattr(t, "__dict__", None)
    if space is None:  # a tensor kind that keeps no attributes (the general g-BSCR tensor)
        return make()
    cache = space.setdefault("_cf_memo", {})
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = make()
    return hit


def mark_constant(t):
    """Declare that ``t`` (a network parameter as the engine keeps it) never changes."""
    space = getattr(t, "__dict__", None)
    if space is not None:
        space["_cf_constant"] = True
    return t


def kept_view(t: torch.Tensor, key, make):
    """``make(t)``, a view of ``t``, made once and kept on it (a layer's weights are read by both
    traverses and every batch: the view costs a dispatcher operation each time); made afresh when ``t``
    requires gradients (a view kept from a ``no_grad`` run would not carry them).

    The kept view is made from ``t.detach()`` (the same data, no reference to ``t``): a view of ``t``
    itself holds ``t`` from C++ as its base, and kept in ``t.__dict__`` it made a cycle that Python's
    collector cannot see -- neither was ever freed (DeepPoly leaked 31 MB a batch on a 3 x 1000 MLP,
    2026-12-03; :mod:`test_kept_views`)."""
    return make(t) if t.requires_grad else _memo(t, key, lambda: make(t.detach()))


def _block_row(block) -> torch.Tensor:
    """A row-diagonal block's core ``[.., k]`` as the row ``[.., 1, k]``, made once per block and kept on the
    block, not on the core: the block holds the core, the core not the block, so the view's hold on its
    core makes no cycle and needs no ``detach`` (one operation fewer per core than :func:`kept_view`)."""
    core = block.core
    return core.unsqueeze(-2) if core.requires_grad else _memo(block, "row", lambda: core.unsqueeze(-2))


def is_constant(t) -> bool:
    return getattr(t, "__dict__", {}).get("_cf_constant", False)


def _column(v: torch.Tensor) -> torch.Tensor:
    """``v [B, 1, k]`` as the column ``[B, k, 1]`` (a view, made once per tensor; afresh when ``v``
    requires gradients, see :func:`kept_view`)."""
    return kept_view(v, "column", lambda s: s.transpose(1, 2))


def _batch_column(v: torch.Tensor, b: int) -> torch.Tensor:
    """``v [1, 1, k]`` as the column ``[b, k, 1]`` of every sample (a view, made once per tensor and
    batch size: a ``bmm`` against it is one operation where the stacked-rows product takes four)."""
    # the expansion of the kept column holds that column (made from a detached alias), not ``v``: no cycle
    return _column(v).expand(b, -1, -1) if v.requires_grad else _memo(v, ("column", b), lambda: _column(v).expand(b, -1, -1))


def _rows_times_shared(f: torch.Tensor, xx: torch.Tensor) -> torch.Tensor:
    """``f [B, k] . xx[0]^T``: rows against one shared weight matrix ``xx [1, m, k]`` (its transpose
    kept on ``xx``, made once)."""
    return torch.mm(f, kept_view(xx, "t0", lambda s: s[0].t()))


def _dot_last(xx, v):
    """``sum_k xx[..., m, k] v[..., 0, k]`` -> ``[..., m]`` for a part ``xx`` and a tensor ``v``."""
    if isinstance(xx, DiagonalBlock) and xx.delta == len(xx.shape) - 2:
        return xx.core * v.squeeze(-2)
    if isinstance(xx, ConvBlock) and isinstance(v, torch.Tensor) and v.dim() == len(xx.shape) \
            and torch.broadcast_shapes(xx.shape[:-2], v.shape[:-2]) == v.shape[:-2]:
        # a convolution of the one vector per sample: conv2d on its images (3 operations; the generic
        # product's column layout takes 9 per call, IBP makes two per convolution layer)
        return _conv_vectors(xx, v, v.shape[:-2])
    if isinstance(xx, torch.Tensor):
        if xx.dim() == 3 and v.dim() == 3:
            if _product_numel(xx, v) <= SMALL_PRODUCT:
                return (xx * v).sum(-1)
            if xx.shape[0] == 1 and v.shape[0] != 1:  # shared weights against a batch: one matrix product
                return _rows_times_shared(v.reshape(v.shape[0], v.shape[2]), xx)
            if v.shape[0] == 1 and xx.shape[0] != 1:  # one vector for the batch (a bias): its kept column
                return torch.bmm(xx, _batch_column(v, xx.shape[0])).squeeze(-1)
            return _bmm(xx, v.transpose(1, 2)).squeeze(-1)
        return (xx * v).sum(-1)
    out = _mm(xx, v.transpose(-1, -2))
    return (out if isinstance(out, torch.Tensor) else part_dense(out)).squeeze(-1)


def _conv_vectors(xx: ConvBlock, v: torch.Tensor, lead: tuple) -> torch.Tensor:
    """``[*lead, m]``: the convolution ``xx`` of the vectors ``v`` (``lead`` of them; any layout of
    ``prod(lead)`` images' entries), by ``conv2d`` on their images."""
    y = torch.nn.functional.conv2d(v.reshape((-1,) + xx.in_chw), xx.weight, stride=xx.stride, padding=xx.padding)
    return y.reshape(tuple(lead) + (xx.shape[-2],))


def _dot_flat(xx, f: torch.Tensor):
    """:func:`_dot_last` of ``v = f`` with its unit row dimension added (``f [..., k]``, ``v [..., 1, k]``):
    the kernels that would take that dimension away read ``f`` itself (a diagonal's product, a
    convolution's images, the rows of a product against shared weights); the others get ``v``."""
    if isinstance(xx, DiagonalBlock) and xx.delta == len(xx.shape) - 2:
        return xx.core * f
    if isinstance(xx, ConvBlock) and f.dim() + 1 == len(xx.shape) \
            and torch.broadcast_shapes(xx.shape[:-2], f.shape[:-1]) == f.shape[:-1]:
        return _conv_vectors(xx, f, f.shape[:-1])
    if isinstance(xx, torch.Tensor) and xx.dim() == 3 and f.dim() == 2 \
            and f.shape[0] * xx.shape[1] * xx.shape[2] > SMALL_PRODUCT:
        if xx.shape[0] == 1 != f.shape[0]:  # shared weights, as in _dot_last
            return _rows_times_shared(f, xx)
        if xx.shape[0] == f.shape[0]:  # a sample's own rows (the margin layer): f as its column
            return torch.bmm(xx, f.unsqueeze(2)).squeeze(2)
    return _dot_last(xx, unsqueezed(f, f.dim() - 1))


def _flat_part(v, start: int, width: int, sdim: int):
    """The part of ``v`` at ``start`` without its unit row dimension, where it is at hand without an
    operation (:meth:`~cfruntime.tensor.lazy_parts.LazyParts.flat`: the stored values); else None."""
    if is_segmented(v) and v.sdim == sdim and isinstance(v.parts, LazyParts):
        p = v.parts.flat(start)
        if isinstance(p, torch.Tensor) and p.dim() == sdim and p.shape[-1] == width:
            return p
    return None


def interval_inner(x, lo, hi, dim: int, offset: torch.Tensor | None = None):
    """``(split_inner(x, lo, hi), split_inner(x, hi, lo))`` over the last dimension, for ``lo``/``hi``
    ``[..., 1, W]`` (plain or segmented like ``x``): ``A -/+ R`` with ``A = x . (lo + hi)/2`` and
    ``R = |x| . (hi - lo)/2`` (``A + offset -/+ R`` with an ``offset`` tensor of the results' shape);
    NotImplemented for other layouts."""
    if not all(isinstance(v, (torch.Tensor, Segmented)) for v in (x, lo, hi)):
        return NotImplemented
    r = len(x.shape)
    if _filled(x, lo, hi) or dim % r != r - 1 or any(len(v.shape) != r or v.shape[r - 2] != 1 for v in (lo, hi)):
        return NotImplemented
    if is_segmented(x):
        if x.sdim != r - 1:
            return NotImplemented
        pieces = list(x.parts.items())
    elif isinstance(x, torch.Tensor):
        pieces = [(0, x)]
    else:
        return NotImplemented
    a = rad = None
    for s, xp in pieces:
        w = xp.shape[r - 1]
        l, u = _flat_part(lo, s, w, r - 1), _flat_part(hi, s, w, r - 1)
        dot = _dot_flat  # the stored bounds themselves, [..., w]: no unit dimension to add and take away
        if l is None or u is None:
            dot = _dot_last
            l, u = _segment_of(lo, s, w, r - 1), _segment_of(hi, s, w, r - 1)
            if l is NotImplemented or u is NotImplemented:
                return NotImplemented
            if l is None and u is None:
                continue
            l = torch.zeros_like(u) if l is None else l
            u = torch.zeros_like(l) if u is None else u
        width = u - l
        ta = dot(xp, torch.add(l, width, alpha=0.5))  # the centre
        tr = dot(_abs_of(xp), width)  # twice the radius
        a = ta if a is None else a + ta
        rad = tr if rad is None else rad + tr
    if a is None:
        shape = _bshape(tuple(x.shape[:-1]), tuple(lo.shape[:-1]), tuple(hi.shape[:-1]))
        zero = torch.zeros(shape, dtype=x.dtype, device=x.device)
        if offset is not None:
            zero = zero + offset
        return zero, zero
    if offset is not None:
        a = a + offset
    return torch.add(a, rad, alpha=-0.5), torch.add(a, rad, alpha=0.5)


def _abs_of(p):
    """``|p|`` for a part; made once for a constant one (a layer's weights, kept by the engine)."""
    return _memo(p, "abs", lambda: _abs(p)) if is_constant(p) else _abs(p)


def substitute(c, lower, upper, lc, lk, uc, uk, scales=None):
    """Back-substitution through one layer in matrix layout: ``c [*, m, k]`` (a tensor, or a
    one-segment segmented tensor whose part is a block) against the layer's polyhedra, coefficients
    ``lc``/``uc`` ``[*, 1, k, W]`` segmented along ``W`` and constants ``lk``/``uk`` ``[*, 1, k]``:
    ``(sum_k c+ lc + c- uc, sum_k c+ lk + c- uk)``, splitting ``c`` by sign once for both.  ``lower is
    upper`` (one polyhedron) needs no split.  ``scales = (a, b)`` (numbers or ``[*, m, k]`` tensors)
    multiply the parts after the split, ``c+ a`` and ``c- b`` (alpha-CROWN's slopes; a scale may be
    :class:`~cfruntime.tensor.kept_columns.KeptColumns`).  NotImplemented for other layouts."""
    r = len(c.shape)
    xm = None if is_segmented(c) and c.fill else _sole_block(c, r - 1)
    if xm is None:
        return NotImplemented
    sp, sn = (1.0, 1.0) if scales is None else scales
    for v in (sp, sn):
        if isinstance(v, bool) or not (isinstance(v, (int, float)) or isinstance(v, (torch.Tensor, KeptColumns))
                                       and v.dim() == r):
            return NotImplemented
    scaled = not (_is_one(sp) and _is_one(sn))
    for v in (lc, uc):
        if not is_segmented(v) or v.fill or v.ndim != r + 1 or v.sdim != r or v.shape[r - 2] != 1:
            return NotImplemented
    for v in (lk, uk):
        if isinstance(v, bool) or not (isinstance(v, (int, float)) or isinstance(v, torch.Tensor) and v.dim() == r
                                       and v.shape[r - 2] == 1):
            return NotImplemented
    same = not scaled and (lower is upper or (lc is uc and lk is uk))
    plus = {}  # c+ and c- (times their scales), made at most once

    def pos():
        if "p" not in plus:
            plus["p"] = _scaled(_pos(xm), sp)
        return plus["p"]

    def neg():
        if "n" not in plus:
            plus["n"] = _scaled(_neg(xm), sn)
        return plus["n"]

    lparts, uparts = lc.without_unit_dim(r - 2), uc.without_unit_dim(r - 2)
    keys = sorted(set(lparts) | set(uparts))

    def constant():
        scalar = not isinstance(lk, torch.Tensor) or not isinstance(uk, torch.Tensor)
        if scaled:  # the forms below read c itself
            return _sum_terms(_dot_number(pos, lk), _dot_number(neg, uk), xm)
        if same or lk is uk:
            return _sum_terms(_dot_number(xm, lk), None, xm)
        if isinstance(xm, torch.Tensor) and "p" in plus and "n" not in plus and isinstance(uk, torch.Tensor):
            # sum x+ lk + x- uk == sum x uk + x+ (lk - uk): the x+ the coefficients made, no clamp for x-
            return _dot_last(xm, uk) + _dot_last(plus["p"], lk - uk)
        if scalar:  # a constant that is one number (ReLU's lower polyhedron: 0)
            return _sum_terms(_dot_number(pos, lk), _dot_number(neg, uk), xm)  # a 0 needs no clamp
        if isinstance(xm, torch.Tensor) and _product_numel(xm, lk) <= SMALL_PRODUCT:
            return (xm * torch.where(xm >= 0, lk, uk)).sum(-1)
        if _box_form_pays(xm) and (isinstance(xm, torch.Tensor) or not plus):
            return _contract_last(xm, lk, uk)  # centre/radius (a block's: unless its clamps are made)
        return _dot_last(pos(), lk) + _dot_last(neg(), uk)

    one_diagonal = _one_big_diagonal(xm, lparts, uparts, keys) if not (same or scaled) else None
    if one_diagonal is not None:
        # a ReLU-like layer (one diagonal part), big x: the constant first, then x+ becomes the
        # coefficient term in place, x+ (p - n) + x n: one temporary the size of x, not three
        dp, dn = one_diagonal
        pos()
        const = _diagonal_constant(xm, plus["p"], lk, uk)
        if const is NotImplemented:
            const = constant()
        p = plus.pop("p")
        if records(p, xm, dp, dn):  # autograd needs the operands: out of place
            parts = {keys[0]: torch.addcmul(p * (dp - dn), xm, dn)}  # a new tensor
        else:
            parts = {keys[0]: p.mul_(dp - dn).addcmul_(xm, dn)}
    else:
        parts = {}
        for s in keys:
            p, n = lparts.get(s), uparts.get(s)
            if same or (p is n and not scaled):  # scaled sides of one polyhedron still differ
                term = None if p is None else _mm(xm, p)
            elif not scaled and isinstance(xm, torch.Tensor) and _is_row_diag(p) and _is_row_diag(n):
                dp, dn = _block_row(p), _block_row(n)  # x+ diag(p) + x- diag(n), column by column
                if xm.numel() <= SMALL_PRODUCT:
                    term = xm * torch.where(xm >= 0, dp, dn)
                else:  # x * n + x+ * (p - n), in place on the fresh temporaries
                    term = xm * dn
                    if records(term, dp, dn):  # autograd needs the operands: out of place
                        term = term + pos() * (dp - dn)
                    else:
                        term.addcmul_(pos(), dp - dn)
            else:
                term = None if p is None else _mm(pos(), p)
                if n is not None:
                    t2 = _mm(neg(), n)
                    term = t2 if term is None else _add(term, t2)
            if term is not None:
                parts[s] = term
        const = constant()
    lead = _bshape(tuple(c.shape[:r - 2]), tuple(lc.shape[:r - 2]),
                   *(tuple(v.shape[:r - 2]) for v in (sp, sn) if isinstance(v, (torch.Tensor, KeptColumns))))
    shape = lead + (c.shape[r - 2], lc.shape[-1])
    out = {s: (t if isinstance(t, torch.Tensor) else _fit(t, shape[:-1] + (t.shape[-1],))) for s, t in parts.items()}
    coeff = Segmented(shape, len(shape) - 1, out, _promote(c.dtype, lc.dtype), lc.device)
    return coeff, const


def _is_one(v) -> bool:
    return not isinstance(v, torch.Tensor) and v == 1


def _scaled(p, s):
    """A sign part ``p`` (a tensor or a block) times a scale: a number, or a tensor or
    :class:`KeptColumns` of ``p``'s shape (a convolution's part stays patches: the scale is read at its
    kernels' entries only)."""
    if isinstance(s, KeptColumns):
        return s.times(p) if isinstance(p, torch.Tensor) else p.times_dense(s)
    if not isinstance(s, torch.Tensor):
        return p if s == 1 else p * s if isinstance(p, torch.Tensor) else p.map_values(lambda v: v * s)
    return p * s if isinstance(p, torch.Tensor) else p.times_dense(s)


def _diagonal_constant(xm, xp, lk, uk):
    """``sum_k x+ lk + x- uk`` for a step through a diagonal layer, as matrix-vector products
    ``x . uk + x+ . (lk - uk)`` (``x- = x - x+`` exactly; a zero constant's product left out): no
    temporary of ``x``'s size, where the element-wise form makes two (twice the time on the CPU's
    back-substitution shapes, most of it the fresh pages of the big temporaries).  NotImplemented
    for constants that are non-zero numbers and for other layouts (:func:`_constant_columns`)."""
    lz = not isinstance(lk, torch.Tensor) and lk == 0
    uz = not isinstance(uk, torch.Tensor) and uk == 0
    if lz and uz:
        return 0.0
    if (not lz and not isinstance(lk, torch.Tensor)) or (not uz and not isinstance(uk, torch.Tensor)):
        return NotImplemented
    if not all(_constant_columns(xm, v) for v in (lk, uk) if isinstance(v, torch.Tensor)):
        return NotImplemented
    # the constants are this step's own (a view each, made here: kept views would cost a detach more)
    if lz:  # x . uk - x+ . uk
        cu = uk.transpose(1, 2)
        return torch.baddbmm(torch.bmm(xm, cu), xp, cu, alpha=-1).squeeze(-1)
    if uz:  # x+ . lk
        return torch.bmm(xp, lk.transpose(1, 2)).squeeze(-1)
    return torch.baddbmm(torch.bmm(xm, uk.transpose(1, 2)), xp, (lk - uk).transpose(1, 2)).squeeze(-1)


def _constant_columns(xm: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether ``v [B, 1, k]`` is a column operand of a ``bmm`` with ``xm [B, m, k]`` as it is (same
    batch and dtype)."""
    return xm.dim() == 3 and v.dim() == 3 and v.shape[0] == xm.shape[0] and v.shape[1] == 1 \
        and v.shape[2] == xm.shape[2] and v.dtype == xm.dtype


def _one_big_diagonal(xm, lparts, uparts, keys):
    """``(p, n)`` row-diagonal cores ``[..., 1, k]`` when the layer's polyhedra are one diagonal part
    each (not one value), ``x`` is a big tensor and ``x+ (p - n) + x n`` can be made in place in a
    tensor of ``x``'s shape and dtype; else None."""
    if len(keys) != 1 or not isinstance(xm, torch.Tensor) or xm.numel() <= SMALL_PRODUCT:
        return None
    p, n = lparts.get(keys[0]), uparts.get(keys[0])
    if p is n or not (_is_row_diag(p) and _is_row_diag(n)):
        return None
    dp, dn = _block_row(p), _block_row(n)
    if dp.dtype != xm.dtype or dn.dtype != xm.dtype or _bshape(tuple(xm.shape), tuple(dp.shape), tuple(dn.shape)) != tuple(xm.shape):
        return None
    return dp, dn


def _dot_number(x, v):
    """``sum_k x[..., k] v[..., k]`` for a tensor ``v`` or a number (0 gives None: nothing); ``x`` may
    be a function that makes it (not called for a 0)."""
    if not isinstance(v, torch.Tensor) and v == 0:
        return None
    x = x() if callable(x) else x
    if isinstance(v, torch.Tensor):
        return _dot_last(x, v)
    return part_dense(x).sum(-1) * v


def _sum_terms(a, b, x):
    if a is None and b is None:
        return 0.0
    return b if a is None else a if b is None else a + b
