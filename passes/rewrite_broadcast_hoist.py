"""Broadcast hoisting: an element-wise op of identically broadcast operands is the broadcast of the
op on the small operands (so masks and clamps run at the size of a map's coefficients, not at the
size of the product they multiply).

    # op(repeat(add_dim(a)), repeat(add_dim(b))) -> repeat(add_dim(op(a, b)))   (same chain, any element-wise op)
    # unary(repeat(a)) -> repeat(unary(a))
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import broadcast_chain, chain_key, is_scalar_const, rebuild_chain

ELEMENTWISE = (ct.BinaryOp, ct.MultOp, ct.UnaryOp, ct.TernaryOp, ct.ClampOp)


class HoistBroadcast(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ELEMENTWISE):
            return
        operands = list(op.operands)
        real = [i for i, v in enumerate(operands) if not is_scalar_const(v)]
        if not real:
            return
        chains = [broadcast_chain(operands[i]) for i in real]
        key = chain_key(chains[0][1])
        if not key or any(chain_key(ops) != key for _, ops in chains[1:]):
            return
        sources = list(operands)
        for i, (src, _) in zip(real, chains):
            sources[i] = src
        inner = op.on(sources)
        new_ops, result = rebuild_chain(inner.results[0], chains[0][1])
        rewriter.replace(op, [inner, *new_ops], [result])
