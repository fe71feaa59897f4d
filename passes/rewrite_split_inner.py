"""``--split-inner``: back-substitution's sign split of one coefficient tensor is one op.

    # add(inner(f(clamp(x, min=0)), p), inner(f(clamp(x, max=0)), n)) -> split_inner(f(x), p, n)
    #   (f: the same chain of add_dim/repeat ops on both sides, possibly none; either order of add)

``clamp`` commutes with the broadcast chain, so the two sides read the positive and the negative part
of one tensor ``f(x)``.  At run time, where ``p`` and ``n`` are the same blocks (an affine layer's
lower and upper polyhedra are one expression, so DeepPoly's ``L`` and ``U`` share them) the split
costs one inner product and no clamps instead of two of each.
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import broadcast_chain, chain_key, rebuild_chain


def _signed_part(v: SSAValue) -> tuple[SSAValue, str, list] | None:
    """``(x, 'pos'|'neg', chain)`` if ``v`` is ``chain(clamp(x, min=0))`` or ``chain(clamp(x, max=0))``."""
    src, chain = broadcast_chain(v)
    op = src.owner
    if not isinstance(op, ct.ClampOp):
        return None
    lo = op.min.value.data if op.min is not None else None
    hi = op.max.value.data if op.max is not None else None
    if lo == 0.0 and hi is None:
        return op.input, "pos", chain
    if hi == 0.0 and lo is None:
        return op.input, "neg", chain
    return None


class SplitInner(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.BinaryOp, rewriter: PatternRewriter) -> None:
        if op.op.data != "add":
            return
        a, b = op.lhs.owner, op.rhs.owner
        if not (isinstance(a, ct.InnerOp) and isinstance(b, ct.InnerOp)) or a.dim.data != b.dim.data:
            return
        pa, pb = _signed_part(a.lhs), _signed_part(b.lhs)
        if pa is None or pb is None or pa[0] is not pb[0] or {pa[1], pb[1]} != {"pos", "neg"} \
                or chain_key(pa[2]) != chain_key(pb[2]):
            return
        pos, neg = (a, b) if pa[1] == "pos" else (b, a)
        chain_ops, x = rebuild_chain(pa[0], pa[2])
        split = ct.SplitInnerOp(x, pos.rhs, neg.rhs, a.dim.data, op.result.type)
        rewriter.replace(op, chain_ops + [split])
