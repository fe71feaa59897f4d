"""``--clamp-rewrite``: a value masked by its own sign is a clamp, and so is a max/min with a constant.

    # mult(ge(x, 0), x) -> clamp(x, min=0)        (also gt, and either operand order)
    # mult(le(x, 0), x) -> clamp(x, max=0)        (also lt, not(ge(x, 0)), not(gt(x, 0)))
    # binary(max, x, c) -> clamp(x, min=c)        (c a finite compile-time constant; either order)
    # binary(min, x, c) -> clamp(x, max=c)
    # mult(ge(x, 0), mult(x, a)) -> mult(clamp(x, min=0), a)   (a finite; also le/lt/not, either order)

(One op on the tensor instead of a comparison with a number the runtime would make a tensor of.  The
last form is a scaled side of a sign split -- alpha-CROWN's ``(c >= 0) ? (c * alpha) * L : c * U`` --
which :mod:`.rewrite_substitute` then fuses into one substitution.)
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import const_value, may_divide_or_be_infinite


def _sign_test(mask: SSAValue) -> tuple[SSAValue, str] | None:
    """``(x, 'min'|'max')`` if ``mask`` is ``x >= 0`` (min) or ``x <= 0`` (max) or an equivalent."""
    op = mask.owner
    negate = False
    if isinstance(op, ct.UnaryOp) and op.op.data == "not":
        negate, op = True, op.input.owner
    if not isinstance(op, ct.BinaryOp) or const_value(op.rhs) != 0.0:
        return None
    kind = {"ge": "min", "gt": "min", "le": "max", "lt": "max"}.get(op.op.data)
    if kind is None:
        return None
    if negate:
        kind = "max" if kind == "min" else "min"
    return op.lhs, kind


class ClampRewrite(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.MultOp, rewriter: PatternRewriter) -> None:
        for mask, x in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            found = _sign_test(mask)
            if found is not None and found[0] is x:
                lo, hi = (0.0, None) if found[1] == "min" else (None, 0.0)
                rewriter.replace(op, [ct.ClampOp(x, min=lo, max=hi)])
                return


class ExtremumClamp(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.BinaryOp, rewriter: PatternRewriter) -> None:
        # max(x, c) == clamp(x, min=c);  min(x, c) == clamp(x, max=c)
        kind = op.op.data
        if kind not in ("max", "min"):
            return
        for x, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            value = const_value(c)
            if value is None or value != value or abs(value) == float("inf") or const_value(x) is not None:
                continue
            if ct.meta(x).top.type not in ("R", "I") or ct.meta(x) != ct.meta(op.result):
                continue
            lo, hi = (float(value), None) if kind == "max" else (None, float(value))
            rewriter.replace(op, [ct.ClampOp(x, min=lo, max=hi)])
            return


class ScaledClamp(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.MultOp, rewriter: PatternRewriter) -> None:
        # [x >= 0] * (x * a) == clamp(x, min=0) * a: where x < 0 both are 0, as long as a is finite
        # (``0 * inf`` is NaN: a may not be computed by a division, exp/log or an infinite constant)
        for mask, prod in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            found, p = _sign_test(mask), prod.owner
            if found is None or not isinstance(p, ct.MultOp):
                continue
            x, kind = found
            for xs, a in ((p.lhs, p.rhs), (p.rhs, p.lhs)):
                # clamp(x) has x's type, so the new product has x * a's: the mask must not broadcast it
                if xs is not x or p.result.type != op.result.type or may_divide_or_be_infinite(a):
                    continue
                lo, hi = (0.0, None) if kind == "min" else (None, 0.0)
                clamp = ct.ClampOp(x, min=lo, max=hi)
                rewriter.replace(op, [clamp, ct.MultOp(clamp.result, a)])
                return
