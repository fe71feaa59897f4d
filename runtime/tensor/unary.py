"""Unary, ternary (``where``) and ``clamp`` on g-BSCR tensors.

Unary ops map every core and the background (holes follow the background, so
the block kinds are preserved: ``relu`` of a diagonal block is a diagonal
block).  ``where`` runs the elementwise engine with three operands (with a kernel that
skips regions where both branches hold one background and keeps diagonals).  ``clamp``
is ``min(max(a, lo), hi)`` (torch.clamp semantics, NaN propagates).
"""

from __future__ import annotations

import torch

from .block_base import same_value
from .block_diagonal import DiagonalBlock, diagonal_of
from .block_repeat import RepeatBlock
from .elementwise import SKIP, elementwise
from .ops_table import UNARY, compute_dtype
from .sparse_tensor import SparseTensor


def unary_sparse(a: SparseTensor, op: str) -> SparseTensor:
    if op not in UNARY:
        raise ValueError(f"unknown unary op {op!r}; known: {sorted(UNARY)}")
    fn = UNARY[op]
    bg_t = fn(torch.tensor(a.background, dtype=a.dtype, device=a.device))
    blocks = [(s, b.map_values(fn)) for s, b in a.blocks]
    return SparseTensor(a.shape, bg_t.item(), blocks, dtype=bg_t.dtype, device=a.device)


def _where_kernel(parts, bgs, out_bg, shape):
    """Regions where the condition holds one value (its background, or a block that is all true or
    all false) take one branch as it is; regions where both branches hold the same background need
    not read the condition:

    * no block of either branch -> ``where(c, v, v) = v`` (skipped when ``v`` is the result
      background);
    * each branch is its background ``v`` or a diagonal block (one geometry; holes hold ``v``)
      -> the off-diagonal result is ``v`` whatever ``c`` is, so the result stays diagonal:
      ``where(c, D1, D2) -> diag(where(diag(c), core(D1), core(D2)))`` in O(n).
    """
    c, a, b = parts
    va, vb = bgs[1], bgs[2]
    uniform = _uniform_condition(c) if c is not None else bool(bgs[0])
    if uniform is not None:  # the condition is one value here: one branch, as it is
        taken, v = (a, va) if uniform else (b, vb)
        if taken is None:
            return SKIP if same_value(v.item(), out_bg) else None
        if getattr(taken, "has_holes", False) and not same_value(v.item(), out_bg):
            return None  # its holes hold v, but the result's hold out_bg
        return taken
    if not same_value(va.item(), vb.item()):
        return None
    if a is None and b is None:
        return SKIP if same_value(va.item(), out_bg) else None
    diags = [p for p in (a, b) if p is not None]
    if not same_value(va.item(), out_bg) or not isinstance(c, RepeatBlock) or \
            not all(isinstance(p, DiagonalBlock) and p.delta == diags[0].delta and p.shape == diags[0].shape for p in diags):
        return None
    cond = diagonal_of(c.expanded(), diags[0].delta)
    core = torch.where(cond, va if a is None else a.core, vb if b is None else b.core)
    return DiagonalBlock(core, diags[0].delta)


def _uniform_condition(c) -> bool | None:
    """``True``/``False`` when a (repeat-like) condition block holds one value, else ``None``
    (two reductions over booleans are cheap next to a ``where`` over the numbers)."""
    if not isinstance(c, RepeatBlock) or c.core.dtype != torch.bool:
        return None
    if not bool(c.core.any()):
        return False
    return True if bool(c.core.all()) else None


def where_sparse(c: SparseTensor, a: SparseTensor, b: SparseTensor) -> SparseTensor:
    cdt = compute_dtype("where", a.dtype, b.dtype)
    return elementwise([c, a, b], torch.where, [torch.bool, cdt, cdt], _where_kernel)
