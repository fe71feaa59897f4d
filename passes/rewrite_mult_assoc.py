"""Product re-association: group the factors that share a broadcast so they can be hoisted.

    # mult(p, mult(q, r)) -> mult(mult(p, q), r)   if p and q are broadcast the same way (or not at all) and r is not
    # mult(mult(q, r), p) -> mult(mult(p, q), r)   (likewise, and the commuted forms)
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import broadcast_chain, chain_key


def _key(v: SSAValue):
    return chain_key(broadcast_chain(v)[1])


class AssociateProducts(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.MultOp, rewriter: PatternRewriter) -> None:
        for p, inner in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            m = inner.owner
            if not isinstance(m, ct.MultOp):
                continue
            kp = _key(p)
            for q, r in ((m.lhs, m.rhs), (m.rhs, m.lhs)):
                if _key(q) == kp and _key(r) != kp:
                    pq = ct.MultOp(p, q)
                    rewriter.replace(op, [pq, ct.MultOp(pq.result, r)])
                    return
