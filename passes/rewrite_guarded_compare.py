"""``--guarded-compare``: a comparison that is only read where a mask holds need not look through a
``where`` on that same mask.

    # and(a, cmp(where(a, p, q), m)) -> and(a, cmp(p, m))    (cmp in eq ne lt le gt ge; either operand order)

Where ``a`` holds, ``where(a, p, q)`` is ``p``; where it does not, the conjunction is false whatever
the comparison gives.  This is the traverse's priority selection (``active and prio == min prio``):
``where(active, prio, inf)`` has the mask's block structure with ``inf`` in its holes, so comparing it
with the broadcast minimum reads every hole, while ``prio`` is a per-layer constant and ``cmp(p, m)``
stays a repeat; the conjunction then runs only over the mask's blocks (and keeps the
shape of a convolution or patches block).
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct

COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def _guarded_branch(v: SSAValue, mask: SSAValue) -> SSAValue | None:
    """``p`` if ``v`` is ``where(mask, p, q)``."""
    op = v.owner
    if isinstance(op, ct.TernaryOp) and op.cond is mask:
        return op.then
    return None


class GuardedCompare(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.BinaryOp, rewriter: PatternRewriter) -> None:
        if op.op.data != "and":
            return
        for mask, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            cmp = other.owner
            if not isinstance(cmp, ct.BinaryOp) or cmp.op.data not in COMPARISONS:
                continue
            lhs, rhs = _guarded_branch(cmp.lhs, mask), _guarded_branch(cmp.rhs, mask)
            if lhs is None and rhs is None:
                continue
            new_cmp = ct.BinaryOp(cmp.op.data, lhs or cmp.lhs, rhs or cmp.rhs)
            operands = (mask, new_cmp.result) if mask is op.lhs else (new_cmp.result, mask)
            rewriter.replace(op, [new_cmp, ct.BinaryOp("and", *operands)])
            return
