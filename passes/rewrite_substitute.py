"""``--substitute``: replacing a layer's summands by their PolyExps is one op.

    # combine_poly(split_inner(add_dim(c), coeff(L), coeff(U), d), split_inner(c, const(L), const(U), d'))
    #   -> substitute(c, L, U, d')
    # combine_poly(inner(add_dim(P), coeff(L), d) + inner(add_dim(N), coeff(U), d), inner(P, const(L), d')
    #   + inner(N, const(U), d')) -> substitute_scaled(c, a, b, L, U, d')
    #   (P = clamp(c, min=0) * a, N = clamp(c, max=0) * b; a side without a scale has 1)

Both parts of ``sum c+ L + c- U`` split the same coefficients ``c`` by sign: as one op the runtime
splits them once, multiplies in matrix layout (no added and removed dimensions), and where ``L`` and
``U`` are one value (an affine layer's polyhedra) computes ``c . L`` without a split.  This is the
step of every layer-granular back-substitution (DeepPoly, CROWN-IBP, ...).  Its scaled form is
alpha-CROWN's (``alpha_deeppoly``): a parameter scales one side's coefficients after their sign split
(:class:`~cfmlir.passes.rewrite_clamp.ScaledClamp` makes that product), and the runtime still splits
``c`` once and multiplies in matrix layout, instead of elementwise ops on the coefficient blocks.
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


def _scaled_side(v: SSAValue) -> tuple[SSAValue, str, SSAValue | None] | None:
    """``(c, 'pos'|'neg', a)`` if ``v`` is ``clamp(c, min=0) * a`` (``pos``) or ``clamp(c, max=0) * a``
    (``neg``), in either operand order; ``a`` is None for the bare clamp."""
    op, scale = v.owner, None
    if isinstance(op, ct.MultOp):
        for part, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            if isinstance(part.owner, ct.ClampOp):
                op, scale = part.owner, other
                break
        else:
            return None
    if not isinstance(op, ct.ClampOp):
        return None
    lo = op.min.value.data if op.min is not None else None
    hi = op.max.value.data if op.max is not None else None
    sign = "pos" if (lo, hi) == (0.0, None) else "neg" if (lo, hi) == (None, 0.0) else None
    return None if sign is None else (op.input, sign, scale)


def _terms(v: SSAValue, part, widened: bool) -> dict | None:
    """The two summands of ``v = inner(s_1, part(E_1), d) + inner(s_2, part(E_2), d)`` by side:
    ``{'pos'|'neg': (side value, c, scale, E)}`` plus ``'dim'``; ``s_i`` is ``add_dim(side)`` at the
    last dimension when ``widened``.  (The coefficient and constant parts may read two copies of a
    side, before CSE: the sides are compared by ``c`` and the scale.)"""
    op = v.owner
    if not isinstance(op, ct.BinaryOp) or op.op.data != "add":
        return None
    out: dict = {}
    for t in (op.lhs.owner, op.rhs.owner):
        if not isinstance(t, ct.InnerOp) or out.setdefault("dim", t.dim.data) != t.dim.data:
            return None
        side = t.lhs
        if widened:
            a = side.owner
            if not isinstance(a, ct.AddDimOp) or a.dim.data != len(ct.meta(a.input).shape):
                return None
            side = a.input
        found, e = _scaled_side(side), _part_of(t.rhs, part)
        if found is None or e is None or found[1] in out:
            return None
        out[found[1]] = (side, found[0], found[2], e)
    return out


class ScaledSubstitute(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.CombineToPolyOp, rewriter: PatternRewriter) -> None:
        # sum (c+ a) L + (c- b) U: both parts read the same scaled sides P, N of one c
        cs = _terms(op.operands[0], ct.ExtractPolyCoeffOp, True)
        ks = _terms(op.operands[1], ct.ExtractPolyConstOp, False)
        if cs is None or ks is None or not {"pos", "neg"} <= cs.keys() or not {"pos", "neg"} <= ks.keys():
            return
        (_, c, a, lower), (_, c2, b, upper) = ks["pos"], ks["neg"]
        if c is not c2 or (a is None and b is None) or cs["dim"] != ks["dim"] \
                or any(x is not y for x, y in zip(cs["pos"][1:], (c, a, lower))) \
                or any(x is not y for x, y in zip(cs["neg"][1:], (c, b, upper))):
            return
        ones = []
        if a is None or b is None:
            ones = [ct.ConstOp(1.0)]
            a = ones[0].result if a is None else a
            b = ones[0].result if b is None else b
        rewriter.replace(op, ones + [ct.SubstituteScaledOp(c, a, b, lower, upper, ks["dim"], op.result.type)])
