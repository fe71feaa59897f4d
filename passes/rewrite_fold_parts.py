"""Copy propagation through PolyExp/SymExp packing: reading a part of a value that was just packed
is the part itself.

    # extract_poly_coeff(combine_poly(c, k)) -> c      extract_poly_const(combine_poly(c, k)) -> k
    # (and the SymExp forms)
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from cfmlir.dialects import cftensor as ct

_PAIRS = {
    ct.ExtractPolyCoeffOp: (ct.CombineToPolyOp, 0), ct.ExtractPolyConstOp: (ct.CombineToPolyOp, 1),
    ct.ExtractSymCoeffOp: (ct.CombineToSymOp, 0), ct.ExtractSymConstOp: (ct.CombineToSymOp, 1),
}


class FoldParts(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        pair = _PAIRS.get(type(op))
        if pair is None:
            return
        src = op.operands[0].owner
        if isinstance(src, pair[0]) and src.operands[pair[1]].type == op.results[0].type:
            rewriter.replace(op, [], [src.operands[pair[1]]])
