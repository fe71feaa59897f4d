"""``--nonzero-mask``: an "is non-zero" test of the value that is then masked or tested is redundant.

    # mult(and(ne(c, 0), y), c) -> mult(y, c)                (either operand order of and/mult)
    # mult(not(and(ne(c, 0), y)), c) -> mult(not(y), c)
    # any(ne(c, 0)) -> any(c)

Where ``c`` is 0 both sides are 0; elsewhere ``ne(c, 0)`` holds and drops out of the conjunction.
This is the traverse's split of an expression into the summands it replaces (``selected * c``) and
those it keeps (``!selected * c``), with ``selected = active and prio == min``: the remaining mask
``prio == min`` is a per-layer value broadcast along the coefficients, so the products take whole
blocks of ``c`` as they are (and keep a convolution block a convolution block) instead of reading a
mask as large as ``c``.  The traverse's loop test ``any(ne(c, 0))`` likewise reads ``c`` once
(``any`` of numbers is "any non-zero"; NaN counts as non-zero on both sides).
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import nonzero_tested


def _rest_of_conjunction(mask: SSAValue, c: SSAValue) -> SSAValue | None:
    """``y`` if ``mask`` is ``and(ne(c, 0), y)`` (either order)."""
    op = mask.owner
    if not isinstance(op, ct.BinaryOp) or op.op.data != "and":
        return None
    if nonzero_tested(op.lhs) is c:
        return op.rhs
    if nonzero_tested(op.rhs) is c:
        return op.lhs
    return None


class NonzeroMask(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.MultOp, rewriter: PatternRewriter) -> None:
        for mask, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            negated = isinstance(mask.owner, ct.UnaryOp) and mask.owner.op.data == "not"
            y = _rest_of_conjunction(mask.owner.input if negated else mask, c)
            if y is None:
                continue
            if ct.meta(y).rest != ct.meta(mask).rest and mask is op.lhs:
                # the result's stack below the top is the first operand's, and ``y``'s may differ
                # from the mask's (a user priority that reads a bound): the uses are typed by the old
                # result, so the rewrite would not preserve the type
                continue
            new_ops = []
            if negated:
                new_ops.append(ct.UnaryOp("not", y))
                y = new_ops[-1].result
            operands = (y, c) if mask is op.lhs else (c, y)
            rewriter.replace(op, new_ops + [ct.MultOp(*operands)])
            return


class NonzeroAny(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.AnyOp, rewriter: PatternRewriter) -> None:
        c = nonzero_tested(op.operands[0])
        if c is not None:
            rewriter.replace(op, [ct.AnyOp(c)])
