"""Elementwise binary operations on g-BSCR tensors (paper's algorithm).

``binary_sparse(a, b, op)`` (operands already broadcast to one shape) runs the
overlap/split-or-merge engine of :mod:`elementwise` with this region kernel:

* block present in one operand only (the other contributes its background
  ``v``): ``v`` is the identity of ``op`` -> reuse the block; ``v`` is the
  annihilator and equals the result background -> skip the block (for ``mul``
  only if the block is finite, for ``min``/``max`` only if it has no NaN, so
  ``0 * inf`` still yields NaN exactly where dense torch does); otherwise lift
  the constant: ``op(block, v)`` on the core, keeping the block kind;
* diagonal (or any block with holes) against a dense/repeat/constant block
  whose holes value annihilates: ``diag (.) dense -> diag`` in O(n) by reading
  only the dense block's diagonal;
* generic kind-aware rules (:func:`elementwise.generic_region`): dense / repeat
  / constant combine by broadcasting their cores (const (.) x -> scaled x,
  repeat (.) repeat stays repeat); two diagonal (or same-geometry conv /
  patches) blocks combine core-wise (diag + diag -> diag); a constant against a
  block with holes is a scalar op on that block; anything else is evaluated
  densely on the region only.
"""

from __future__ import annotations

from .block_base import same_value
from .block_diagonal import DiagonalBlock, diagonal_of
from .block_repeat import RepeatBlock
from .elementwise import SKIP, elementwise
from .ops_table import BINARY, annihilator, compute_dtype, condition_holds, identity
from .sparse_tensor import SparseTensor


def _binary_kernel(op: str, fn):
    def kernel(parts, bgs, out_bg, shape):
        A, B = parts
        if A is None or B is None:
            blk, v_t, side = (A, bgs[1], "right") if B is None else (B, bgs[0], "left")
            v = v_t.item()
            if identity(op, v, side):
                return blk
            cond = annihilator(op, v, side)
            if cond is not None and same_value(v, out_bg) and condition_holds(cond, blk):
                return SKIP
            if B is None:
                return blk.map_values(lambda c: fn(c, v_t))
            return blk.map_values(lambda c: fn(v_t, c))
        for D, X, di in ((A, B, 0), (B, A, 1)):
            if isinstance(D, DiagonalBlock) and isinstance(X, RepeatBlock):
                v = bgs[di].item()
                cond = annihilator(op, v)
                if cond is not None and same_value(v, out_bg) and condition_holds(cond, X):
                    xd = diagonal_of(X.expanded(), D.delta)
                    core = fn(D.core, xd) if di == 0 else fn(xd, D.core)
                    return DiagonalBlock(core, D.delta)
        return None

    return kernel


def binary_sparse(a: SparseTensor, b: SparseTensor, op: str) -> SparseTensor:
    if op not in BINARY:
        raise ValueError(f"unknown binary op {op!r}; known: {sorted(BINARY)}")
    fn = BINARY[op]
    cdt = compute_dtype(op, a.dtype, b.dtype)
    return elementwise([a, b], fn, [cdt, cdt], _binary_kernel(op, fn))
