"""``--matmul-rewrite`` (paper section 4.3): a sum of a product of broadcast operands is an inner
product, run as a batched matrix multiplication without materialising the broadcasts.

    # reduce(mult(repeat(a), repeat(b)), d) -> inner(a, b, d)

Generalised as in the paper: operands in either order, any rank, any number of repeats on either side
(at least one in all), and a reduced dimension anywhere.  ``inner`` broadcasts size-1 dimensions.
"""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import BROADCAST_OPS, is_scalar_const, strip_repeats


class MatmulRewrite(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.ReduceOp, rewriter: PatternRewriter) -> None:
        if op.kind.data != "sum":
            return
        m = op.input.owner
        if not isinstance(m, ct.MultOp) or is_scalar_const(m.lhs) or is_scalar_const(m.rhs):
            return
        a, b = strip_repeats(m.lhs), strip_repeats(m.rhs)
        if a is m.lhs and b is m.rhs:
            return
        if any(isinstance(x.owner, ct.MultOp) and any(isinstance(o.owner, BROADCAST_OPS) for o in x.owner.operands) for x in (a, b)):
            return  # a nested product of broadcasts: let its factors be re-associated (and clamped) first
        rewriter.replace(op, [ct.InnerOp(a, b, op.dim.data, op.result.type)])
