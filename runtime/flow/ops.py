"""The tensor API that emitted rules call as ``rt.<op>`` (one function per ``cftensor`` op).

Every function accepts Python scalars, torch tensors and g-BSCR tensors (the g-BSCR functional API
in :mod:`cfruntime.tensor` takes both), and :class:`~cfruntime.flow.values.Affine` values where the
op applies to PolyExps/SymExps (shape ops act on both parts; the coefficient dimension is trailing).

Broadcasting contract: a dimension the compiler calls broadcast may be realised at run time with size
1 (the ops broadcast); ``repeat`` is a broadcast view (``expand``/a repeat block), never a copy.
"""

from __future__ import annotations

import builtins
import itertools
import math

import torch

from cfruntime import tensor as gb
from cfruntime.errors import RuleError
from cfruntime.flow import host
from cfruntime.flow.values import Affine, Neurons, Window, WindowRows
from cfruntime.tensor import RepeatBlock
from cfruntime.tensor import segmented_ops as seg_ops
from cfruntime.tensor.block_base import same_value

#: Safety net for traverse loops: no certifier should need more iterations than this.
MAX_LOOP_ITERATIONS = 100_000


class LoopLimitError(RuleError):
    """A traverse of the certifier did not finish (a user error, as the interpreter's runaway traverse)."""


def loop_guard(cap: int = MAX_LOOP_ITERATIONS):
    """The iteration source of an emitted while loop (a traverse's steps): at most ``cap`` iterations
    (:func:`cfruntime.contract.traverse_step_cap` of the network, as the interpreter's traverse)."""
    for i in itertools.count():
        if i >= cap:
            raise LoopLimitError(f"traverse did not terminate after {cap} steps (does the replacement function "
                                 "re-introduce the neurons it replaces?)")
        yield i


def _is_scalar(x) -> bool:
    return isinstance(x, (int, float, bool))


def _rank(x) -> int:
    return 0 if _is_scalar(x) else len(x.shape)


def _align_ranks(a, b):
    """Give two operands the same rank by appending size-1 dimensions (the compiler aligns shapes;
    run-time values may still be scalars or keep size-1 dimensions)."""
    if _is_scalar(a) or _is_scalar(b):
        return a, b
    while _rank(a) < _rank(b):
        a = gb.add_dim(a, _rank(a))
    while _rank(b) < _rank(a):
        b = gb.add_dim(b, _rank(b))
    return a, b


def _real(x):
    """A lazily gathered :class:`WindowRows` operand as its tensor (every op but a weighted sum
    over the window needs the entries)."""
    return x.materialize() if isinstance(x, WindowRows) else x


def binary(op: str, a, b):
    a, b = _real(a), _real(b)
    if _is_scalar(a) and _is_scalar(b):
        return host.binary(op, a, b)
    # x + 0 and x - 0 are x (a PolyExp's constant 0 plus a bias): the value itself, no operation
    if op in ("add", "sub") and _is_scalar(b) and b == 0 and _is_float(a):
        return a
    if op == "add" and _is_scalar(a) and a == 0 and _is_float(b):
        return b
    a, b = _align_ranks(a, b)
    return gb.binary(a, b, op)


def mult(a, b):
    """Products are where masks (a traverse's selected neurons) zero whole blocks: those blocks are
    dropped, so later inner products skip them.  A Bool operand is a mask: ``mask * x`` runs as
    ``where(mask, x, 0)`` (no conversion of the mask to numbers; an unselected infinite ``x`` gives
    0, the value of an absent summand)."""
    a, b = _real(a), _real(b)
    for m, x in ((a, b), (b, a)):
        if _is_bool(m) and not _is_bool(x) and not _is_scalar(x):
            return prune(where(m, x, 0.0), unchanged=x)
        if _is_bool(m) and _is_scalar(x) and not isinstance(x, bool) and x == 0:
            return 0.0  # a mask times zero is zero everywhere: a number, not a tensor of zeros
    return prune(binary("mul", a, b))


def _is_float(x) -> bool:
    return not _is_scalar(x) and getattr(x, "dtype", torch.bool).is_floating_point


def _is_bool(x) -> bool:
    return isinstance(x, bool) or (not _is_scalar(x) and getattr(x, "dtype", None) == torch.bool)


def prune(x, unchanged=None):
    """A g-BSCR tensor without the blocks that hold only zeros when zero is its background (dense,
    repeat and constant blocks -- all repeat-like -- are checked; other kinds are kept).  Blocks
    taken over as they are from the operand ``unchanged`` are not scanned again."""
    if not gb.is_sparse(x) or not x.blocks:
        return x
    old = {id(b) for _, b in unchanged.blocks} if gb.is_sparse(unchanged) else set()
    keep = []
    for start, block in x.blocks:
        if isinstance(block, RepeatBlock) and x.background == 0 and id(block) not in old \
                and not bool(block.core.any()):
            continue
        keep.append((start, block))
    return x if len(keep) == len(x.blocks) else x.with_blocks(keep)


def unary(op: str, a):
    a = _real(a)
    if _is_scalar(a):
        return host.unary(op, a)
    return gb.unary(a, op)


def where(c, a, b):
    c, a, b = _real(c), _real(a), _real(b)
    if _is_scalar(c):
        return a if c else b
    ranks = [_rank(x) for x in (c, a, b)]
    r = max(ranks)
    c, a, b = (x if _is_scalar(x) else _pad_rank(x, r) for x in (c, a, b))
    return gb.where(c, a, b)


def _pad_rank(x, r):
    while _rank(x) < r:
        x = gb.add_dim(x, _rank(x))
    return x


def clamp(a, lo=None, hi=None):
    return gb.clamp(_real(a), lo, hi)


def add_dim(a, dim: int):
    a = _real(a)
    if _is_scalar(a):
        return a
    if isinstance(a, Affine):
        return Affine(None if a.coeff is None else gb.add_dim(a.coeff, dim), add_dim(a.const, dim))
    if isinstance(a, Neurons):
        return Neurons(a.start, a.count, a.dim + (1 if dim <= a.dim else 0), a.rank + 1, a.noise)
    if isinstance(a, Window):
        return Window(a.index.unsqueeze(dim), a.start, a.count)
    return gb.add_dim(a, dim)


def remove_dim(a, dim: int):
    a = _real(a)
    if isinstance(a, Affine):
        return Affine(None if a.coeff is None else gb.remove_dim(a.coeff, dim), remove_dim(a.const, dim))
    if isinstance(a, Window):
        return Window(a.index.squeeze(dim), a.start, a.count)
    return a if _is_scalar(a) else gb.remove_dim(a, dim)


def repeat(a, dim: int, size: int):
    """Broadcast a size-1 dimension to ``size``.  A plain torch tensor keeps its size 1 there (the
    broadcasting contract: every op broadcasts, so no view is made); a segmented tensor records the
    size in its shape (no op); a general g-BSCR tensor becomes a repeat view."""
    a = _real(a)
    if _is_scalar(a) or isinstance(a, (Neurons, Window)):
        return a
    if isinstance(a, Affine):
        return Affine(None if a.coeff is None else repeat(a.coeff, dim, size), repeat(a.const, dim, size))
    if isinstance(a, torch.Tensor) or _rank(a) <= dim or a.shape[dim] == size:
        return a
    return gb.expand_dim(a, dim, size)


def reduce(a, dim: int, kind: str = "sum", size: int | None = None):
    """Sum/min/max over ``dim``, whose logical size is ``size``: a uniform operand (a host number, or
    a tensor of size 1 there) stands for ``size`` equal entries."""
    a = _real(a)
    if _is_scalar(a) or (size is not None and size != 1 and a.shape[dim] == 1):
        if kind == "sum":
            return a * size if _is_scalar(a) else binary("mul", remove_dim(a, dim), float(size))
        return a if _is_scalar(a) else remove_dim(a, dim)
    if kind == "sum":
        return gb.reduce_sum(a, dim)
    identity = math.inf if kind == "min" else -math.inf
    if gb.is_sparse(a) and a.background == identity:
        return _reduce_extremum_sparse(a, dim % len(a.shape), kind)
    dense = gb.to_dense(a)
    return dense.amin(dim) if kind == "min" else dense.amax(dim)


def _unseg(x):
    return x.to_sparse() if gb.is_segmented(x) else x


def masked_reduce(c, p, dim: int, kind: str):
    """``reduce(where(c != 0, p, identity), dim, kind)`` for ``kind`` min (identity ``inf``) or max
    (``-inf``), without the mask or the masked copy (see :mod:`cfruntime.tensor.masked_reduce`)."""
    c, p = _real(c), _real(p)
    if _is_scalar(c) or _is_scalar(p):
        return reduce(where(binary("ne", c, 0.0), p, math.inf if kind == "min" else -math.inf), dim, kind)
    c, p = _align_ranks(_unseg(c), _unseg(p))
    return gb.masked_extremum(c, p, dim, kind)


def _reduce_extremum_sparse(a, dim: int, kind: str) -> torch.Tensor:
    """min/max over ``dim`` of a g-BSCR tensor whose background is the operation's identity
    (a traverse's priorities: +inf outside the active neurons): only the blocks are read."""
    shape = list(a.shape)
    del shape[dim]
    out = torch.full(shape, a.background, dtype=a.dtype, device=a.device)
    pick = torch.minimum if kind == "min" else torch.maximum
    for start, block in a.blocks:
        if isinstance(block, RepeatBlock) and block.core.shape[dim] == 1:  # repeated along dim
            red = block.core.squeeze(dim).expand(block.shape[:dim] + block.shape[dim + 1:])
        elif dim == len(shape) and hasattr(block, "row_extremum"):  # conv/patches: mapped entries only
            red = block.row_extremum(kind)
        else:
            dense = block.to_dense(a.background)
            red = dense.amin(dim) if kind == "min" else dense.amax(dim)
        idx = tuple(slice(s, s + n) for d, (s, n) in enumerate(zip(start, block.shape)) if d != dim)
        out[idx] = pick(out[idx], red)
    return out


def split_inner(x, pos, neg, dim: int):
    """``inner(clamp(x, min=0), pos, dim) + inner(clamp(x, max=0), neg, dim)`` (back-substitution's
    sign split).  When ``pos`` and ``neg`` hold the same blocks wherever ``x`` reaches along ``dim``
    (an affine layer's lower and upper polyhedra are one expression) it is ``inner(x, pos, dim)``:
    one product, no clamps."""
    x, pos, neg = _real(x), _real(pos), _real(neg)
    if gb.is_segmented(x) or gb.is_segmented(pos) or gb.is_segmented(neg):
        out = seg_ops.split_inner(x, pos, neg, dim, same=pos is neg)
        if out is not NotImplemented:
            return out
    if isinstance(x, torch.Tensor) and _is_box(x, pos, neg) and dim % x.dim() == x.dim() - 1 \
            and pos.dim() == neg.dim() == x.dim() and pos.shape[-2] == neg.shape[-2] == 1:
        # plain tensors: concretisation against a box, no look at the values (see segmented_ops)
        return seg_ops.split_inner_plain(x, pos, neg)
    if pos is neg or _same_blocks_within_reach(x, pos, neg, dim):
        return inner(x, pos, dim)
    if _is_box(x, pos, neg):
        # x+ * pos + x- * neg == x * (pos + neg)/2 + |x| * (pos - neg)/2: one pass over x fewer than
        # the two clamps (concretisation against a box, as auto_LiRPA does it).  Every summand is the
        # same in both forms or NaN in this one (an inf in x, pos or neg meeting the other sign), and
        # NaN propagates: a NaN result means "take the clamped form"
        half_pos, half_neg = pos / 2, neg / 2  # halves first: pos + neg may overflow
        # |x| with gradient 1 at 0: the split's gradient at x = 0 is pos's, as the clamped form's
        ax = unary("magnitude", x)
        out = binary("add", inner(x, half_pos + half_neg, dim), inner(ax, half_pos - half_neg, dim))
        if not bool(torch.isnan(gb.to_dense(out) if gb.is_sparse(out) else out).any()):
            return out
    return binary("add", inner(clamp(x, 0.0, None), pos, dim), inner(clamp(x, None, 0.0), neg, dim))


def substitute(c, lower: Affine, upper: Affine, dim: int) -> Affine:
    """``sum over dim of c+ * lower + c- * upper`` for PolyExps ``lower``/``upper`` of the summands'
    neurons: ``affine(split_inner(add_dim(c), coeff(lower), coeff(upper), dim), split_inner(c,
    constant(lower), constant(upper), dim))`` -- back-substitution through one layer."""
    lower, upper = (Affine(_real(e.coeff), e.const) if isinstance(e.coeff, WindowRows) else e for e in (lower, upper))
    r = _rank(c)
    if lower.coeff is not None and upper.coeff is not None and dim % r == r - 1:
        out = seg_ops.substitute(c, lower, upper, lower.coeff, lower.const, upper.coeff, upper.const)
        if out is not NotImplemented:
            return Affine(*out)
    x = add_dim(c, r)
    return Affine(split_inner(x, coeff(lower), coeff(upper), dim), split_inner(c, lower.const, upper.const, dim))


def substitute_scaled(c, a, b, lower: Affine, upper: Affine, dim: int) -> Affine:
    """``sum over dim of (c+ * a) * lower + (c- * b) * upper``: :func:`substitute` with each side's
    coefficients scaled after their sign split (alpha-CROWN's slopes; ``cftensor.substitute_scaled``).
    A scale may be a :class:`~cfruntime.tensor.KeptColumns` (a parameter read only as a scale)."""
    lower, upper = (Affine(_real(e.coeff), e.const) if isinstance(e.coeff, WindowRows) else e for e in (lower, upper))
    r = _rank(c)
    if lower.coeff is not None and upper.coeff is not None and dim % r == r - 1:
        out = seg_ops.substitute(c, lower, upper, lower.coeff, lower.const, upper.coeff, upper.const, scales=(a, b))
        if out is not NotImplemented:
            return Affine(*out)
    a, b = (v.dense() if isinstance(v, gb.KeptColumns) else v for v in (a, b))
    p, n = mult(clamp(c, 0.0, None), a), mult(clamp(c, None, 0.0), b)
    return Affine(binary("add", inner(add_dim(p, r), coeff(lower), dim), inner(add_dim(n, r), coeff(upper), dim)),
                  binary("add", inner(p, lower.const, dim), inner(n, upper.const, dim)))


def interval_inner(x, lo, hi, dim: int, offset=None):
    """``(split_inner(x, lo, hi, dim), split_inner(x, hi, lo, dim))``: the lower and upper bound of
    ``sum x * v`` over the box ``lo <= v <= hi``, from one centre and one radius product; ``offset``
    (a value of the results' shape) added to both, onto the centre before the split where it can."""
    x, lo, hi, offset = _real(x), _real(lo), _real(hi), _real(offset)
    if not (gb.is_sparse(x) or gb.is_sparse(lo) or gb.is_sparse(hi)):
        plain = offset is None or isinstance(offset, torch.Tensor)
        out = seg_ops.interval_inner(x, lo, hi, dim, offset if plain else None)
        if out is not NotImplemented:
            return out if plain else tuple(binary("add", v, offset) for v in out)
    pair = split_inner(x, lo, hi, dim), split_inner(x, hi, lo, dim)
    return pair if offset is None else tuple(binary("add", v, offset) for v in pair)


def _is_box(x, pos, neg) -> bool:
    """Plain floating-point bounds (a box: the input region, or concrete bounds) for numbers ``x``."""
    return (not _is_scalar(x) and x.dtype.is_floating_point
            and isinstance(pos, torch.Tensor) and isinstance(neg, torch.Tensor)
            and pos.dtype.is_floating_point and neg.dtype.is_floating_point)


def _same_blocks_within_reach(x, pos, neg, dim: int) -> bool:
    """Whether ``pos`` and ``neg`` hold the same values wherever ``x`` is non-zero along ``dim``:
    the same blocks (one stored value seen through the same structural ops: equal geometry over the
    same storage), or equal plain tensors there."""
    if not gb.is_sparse(x) or _is_scalar(pos) or _is_scalar(neg) or len(x.shape) != len(pos.shape) \
            or tuple(pos.shape) != tuple(neg.shape):
        return False
    d = dim % len(x.shape)
    reach = [(s[d], s[d] + b.shape[d]) for s, b in x.blocks] if same_value(x.background, 0) else [(0, x.shape[d])]
    if isinstance(pos, torch.Tensor) and isinstance(neg, torch.Tensor):
        return builtins.all(torch.equal(pos.narrow(d, lo, hi - lo), neg.narrow(d, lo, hi - lo)) for lo, hi in reach)
    if not (gb.is_sparse(pos) and gb.is_sparse(neg)) or not same_value(pos.background, neg.background):
        return False

    def within(t):
        return [(tuple(s), b) for s, b in t.blocks if builtins.any(s[d] < hi and lo < s[d] + b.shape[d] for lo, hi in reach)]

    wp, wn = within(pos), within(neg)
    return len(wp) == len(wn) and builtins.all(sp == sn and bp.same_structure(bn) for (sp, bp), (sn, bn) in zip(wp, wn))


def inner(a, b, dim: int):
    """``sum over dim of a * b`` for equal-rank operands whose size-1 dimensions broadcast, run as a
    batched matrix product: the last dimension full only in ``a`` is the row dimension, the last full
    only in ``b`` the column dimension, and every other dimension is a (broadcast) batch dimension."""
    for w, rows in ((a, b), (b, a)):  # a weighted sum over a window: the rows are never gathered
        if isinstance(rows, WindowRows) and not isinstance(w, WindowRows) and not _is_scalar(w) \
                and len(w.shape) == 4 and dim % 4 == 2 and w.shape[3] == 1:
            return rows.weighted(gb.remove_dim(w, 3))
    a, b = _real(a), _real(b)
    a, b = _align_ranks(_as_float(a, b), _as_float(b, a))
    for x, y in ((a, b), (b, a)):
        if gb.is_segmented(x) or gb.is_segmented(y):
            out = seg_ops.split_inner(x, y, y, dim, same=True)
            if out is not NotImplemented:
                return out
    if _is_scalar(a) or _is_scalar(b):  # a uniform factor: it multiplies the sum of the other
        s, t = (a, b) if _is_scalar(a) else (b, a)
        return binary("mul", gb.reduce_sum(t, dim), s)
    a, b = _unseg(a), _unseg(b)
    r = _rank(a)
    dim %= r
    sa, sb = a.shape, b.shape
    others = [d for d in range(r) if d != dim]
    a_only = [d for d in others if sa[d] != 1 and sb[d] == 1]
    b_only = [d for d in others if sb[d] != 1 and sa[d] == 1]
    row = a_only[-1] if a_only else None
    col = b_only[-1] if b_only else None
    batch = [d for d in others if d not in (row, col)]
    ta, dims_a = a, list(range(r))
    if col is not None:
        ta, dims_a = gb.remove_dim(ta, col), [d for d in dims_a if d != col]
    order_a = batch + ([row] if row is not None else []) + [dim]
    ta = gb.permute(ta, [dims_a.index(d) for d in order_a])
    if row is None:
        ta = gb.add_dim(ta, len(batch))
    tb, dims_b = b, list(range(r))
    if row is not None:
        tb, dims_b = gb.remove_dim(tb, row), [d for d in dims_b if d != row]
    order_b = batch + [dim] + ([col] if col is not None else [])
    tb = gb.permute(tb, [dims_b.index(d) for d in order_b])
    if col is None:
        tb = gb.add_dim(tb, len(batch) + 1)
    out = gb.inner(ta, tb, -2)  # [batch..., row|1, col|1]
    order = list(batch)
    if row is None:
        out = gb.remove_dim(out, len(batch))
    else:
        order.append(row)
    if col is None:
        out = gb.remove_dim(out, len(order))
    else:
        order.append(col)
    return gb.permute(out, [order.index(d) for d in sorted(order)])


def _as_float(x, other):
    """Bool masks take part in products as 0/1 numbers."""
    if _is_scalar(x) or x.dtype != torch.bool:
        return x
    dtype = other.dtype if not _is_scalar(other) and other.dtype != torch.bool else torch.get_default_dtype()
    return gb.where(x, torch.ones((), dtype=dtype), torch.zeros((), dtype=dtype))


def coeff(e):
    if not isinstance(e, Affine):
        raise TypeError(f"expected a PolyExp/SymExp value, got {type(e).__name__}")
    return 0.0 if e.coeff is None else e.coeff


def constant(e):
    if not isinstance(e, Affine):
        raise TypeError(f"expected a PolyExp/SymExp value, got {type(e).__name__}")
    return e.const


def affine(c, k):
    return Affine(c, k)


def host_bool(c) -> bool:
    """The host value of a uniform condition (``cftensor.if``)."""
    if _is_scalar(c):
        return bool(c)
    raise TypeError(f"a uniform condition must be a host number, got {type(c).__name__}")


def any(a) -> bool:  # noqa: A001 - mirrors cftensor.any
    a = _real(a)
    return bool(a) if _is_scalar(a) else gb.any(a)
