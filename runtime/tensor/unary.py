"""Unary, ternary (``where``) and ``clamp`` on g-BSCR tensors.

Unary ops map every core and the background (holes follow the background, so
the block kinds are preserved: ``relu`` of a diagonal block is a diagonal
block).  ``where`` runs the elementwise engine with three operands.  ``clamp``
is ``min(max(a, lo), hi)`` (torch.clamp semantics, NaN propagates).
"""

from __future__ import annotations

import torch

from .elementwise import elementwise
from .ops_table import UNARY, compute_dtype
from .sparse_tensor import SparseTensor


def unary_sparse(a: SparseTensor, op: str) -> SparseTensor:
    if op not in UNARY:
        raise ValueError(f"unknown unary op {op!r}; known: {sorted(UNARY)}")
    fn = UNARY[op]
    bg_t = fn(torch.tensor(a.background, dtype=a.dtype, device=a.device))
    blocks = [(s, b.map_values(fn)) for s, b in a.blocks]
    return SparseTensor(a.shape, bg_t.item(), blocks, dtype=bg_t.dtype, device=a.device)


def where_sparse(c: SparseTensor, a: SparseTensor, b: SparseTensor) -> SparseTensor:
    cdt = compute_dtype("where", a.dtype, b.dtype)
    return elementwise([c, a, b], torch.where, [torch.bool, cdt, cdt])
