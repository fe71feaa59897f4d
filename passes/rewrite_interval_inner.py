"""``--interval-inner``: the lower and upper bound of one product over a box share their products.

    # split_inner(x, l, u, d), split_inner(x, u, l, d) -> interval_inner(x, l, u, d)   (lo, hi)

``split_inner(x, l, u) = x (l + u)/2 - |x| (u - l)/2`` and ``split_inner(x, u, l) = x (l + u)/2 + |x|
(u - l)/2`` (since ``x+ = (x + |x|)/2`` and ``x- = (x - |x|)/2``), so the pair costs two inner products
(centre and radius) instead of four: IBP and CROWN-IBP's interval bounds of every affine layer.
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
