"""``--interval-inner``: the lower and upper bound of one product over a box share their products.

    # split_inner(x, l, u, d), split_inner(x, u, l, d) -> interval_inner(x, l, u, d)   (lo, hi)
    # lo + b, hi + b of interval_inner(x, l, u, d) -> interval_inner(x, l, u, b, d)

``split_inner(x, l, u) = x (l + u)/2 - |x| (u - l)/2`` and ``split_inner(x, u, l) = x (l + u)/2 + |x|
(u - l)/2`` (since ``x+ = (x + |x|)/2`` and ``x- = (x - |x|)/2``), so the pair costs two inner products
(centre and radius) instead of four: IBP and CROWN-IBP's interval bounds of every affine layer.  When
both bounds then get the same addend (the layer's bias) and nothing else reads them, the addend goes onto
the centre before the split, ``(A - R) + b = (A + b) - R``: one addition instead of two.
"""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from cfmlir.dialects import cftensor as ct


class IntervalInner(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.SplitInnerOp, rewriter: PatternRewriter) -> None:
        x, p, n = op.input, op.pos, op.neg
        if p is n:
            return
        block = op.parent_block()
        partner = next((u.operation for u in x.uses
                        if isinstance(u.operation, ct.SplitInnerOp) and u.operation is not op
                        and u.operation.input is x and u.operation.pos is n and u.operation.neg is p
                        and u.operation.dim.data == op.dim.data and u.operation.result.type == op.result.type
                        and u.operation.parent_block() is block), None)
        if partner is None:
            return
        order = {o: i for i, o in enumerate(block.ops)}
        first, second = (op, partner) if order[op] < order[partner] else (partner, op)
        new = ct.IntervalInnerOp(x, first.pos, first.neg, op.dim.data, op.result.type)
        rewriter.insert(new, InsertPoint.before(first))
        rewriter.replace(first, [], [new.lo])
        rewriter.replace(second, [], [new.hi])


class IntervalInnerOffset(RewritePattern):
    # add(lo, b), add(hi, b) of (lo, hi) = interval_inner(x, l, u) -> interval_inner(x, l, u, b)   ((A -/+ R) + b = (A + b) -/+ R)
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.IntervalInnerOp, rewriter: PatternRewriter) -> None:
        if op.offset is not None:
            return
        adds = [_sole_add(r) for r in (op.lo, op.hi)]
        if None in adds:
            return
        (add_lo, b), (add_hi, b_hi) = adds
        if b is not b_hi or b.type != op.lo.type or add_lo.result.type != op.lo.type or add_hi.result.type != op.hi.type:
            return
        block = op.parent_block()
        if add_lo.parent_block() is not block or add_hi.parent_block() is not block:
            return
        order = {o: i for i, o in enumerate(block.ops)}
        first = add_lo if order[add_lo] < order[add_hi] else add_hi  # after x, l, u (the op) and b (an add's operand)
        new = ct.IntervalInnerOp(op.input, op.lower, op.upper, op.dim.data, op.lo.type, offset=b)
        rewriter.insert(new, InsertPoint.before(first))
        rewriter.replace(add_lo, [], [new.lo])
        rewriter.replace(add_hi, [], [new.hi])
        rewriter.erase(op)


def _sole_add(v):
    """``(add, other operand)`` when ``v``'s only use is a ``binary "add"``; else None."""
    uses = list(v.uses)
    if len(uses) != 1:
        return None
    add = uses[0].operation
    if not isinstance(add, ct.BinaryOp) or add.op.data != "add" or add.lhs is add.rhs:
        return None
    return add, add.rhs if add.lhs is v else add.lhs
