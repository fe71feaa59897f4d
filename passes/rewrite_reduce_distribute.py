"""Sums distribute over additions, exposing one product per reduction to the matmul rewrite.

    # reduce_sum(add(a, b), d) -> add(reduce_sum(a, d), reduce_sum(b, d))   (and sub)
"""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct


class DistributeReduce(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.ReduceOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != "sum":
            return
        src = op.input.owner
        if not isinstance(src, ct.BinaryOp) or src.op.data not in ("add", "sub") or not op.input.has_one_use():
            return
        d = op.dim.data
        ra = ct.ReduceOp(src.lhs, d, "sum")
        rb = ct.ReduceOp(src.rhs, d, "sum")
        rewriter.replace(op, [ra, rb, ct.BinaryOp(src.op.data, ra.result, rb.result)])
