"""``--substitute``: replacing a layer's summands by their PolyExps is one op.

    # combine_poly(split_inner(add_dim(c), coeff(L), coeff(U), d), split_inner(c, const(L), const(U), d'))
    #   -> substitute(c, L, U, d')

Both parts of ``sum c+ L + c- U`` split the same coefficients ``c`` by sign: as one op the runtime
splits them once, multiplies in matrix layout (no added and removed dimensions), and where ``L`` and
``U`` are one value (an affine layer's polyhedra) computes ``c . L`` without a split.  This is the
step of every layer-granular back-substitution (DeepPoly, CROWN-IBP, ...).
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct


def _part_of(v: SSAValue, cls) -> SSAValue | None:
    """The PolyExp ``e`` if ``v`` is ``cls(e)`` (its coefficient or constant part)."""
    return v.owner.operands[0] if isinstance(v.owner, cls) else None


class Substitute(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.CombineToPolyOp, rewriter: PatternRewriter) -> None:
        coeff, const = op.operands
        cs, ks = coeff.owner, const.owner
        if not (isinstance(cs, ct.SplitInnerOp) and isinstance(ks, ct.SplitInnerOp)):
            return
        widened = cs.input.owner
        if not isinstance(widened, ct.AddDimOp) or widened.input is not ks.input \
                or widened.dim.data != len(ct.meta(ks.input).shape):
            return
        lower, upper = _part_of(cs.pos, ct.ExtractPolyCoeffOp), _part_of(cs.neg, ct.ExtractPolyCoeffOp)
        if lower is None or upper is None or _part_of(ks.pos, ct.ExtractPolyConstOp) is not lower \
                or _part_of(ks.neg, ct.ExtractPolyConstOp) is not upper or cs.dim.data != ks.dim.data:
            return
        rewriter.replace(op, [ct.SubstituteOp(ks.input, lower, upper, ks.dim.data, op.result.type)])
