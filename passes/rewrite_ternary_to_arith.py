"""``--ternary-to-arith``: branch-free conditionals, so that the matmul rewrite can see products.

    # ternary(c, a, b) -> add(mult(c, a), mult(not(c), b))   if neither a nor b can divide or be +-inf

A branch that is the scalar constant 0 contributes nothing and is dropped:

    # ternary(c, a, 0) -> mult(c, a);   ternary(c, 0, b) -> mult(not(c), b)
"""

from __future__ import annotations

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import const_value, is_scalar_const, may_divide_or_be_infinite


class TernaryToArith(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.TernaryOp, rewriter: PatternRewriter) -> None:
        c, a, b = op.cond, op.then, op.otherwise
        if c.type.metadata.top.type != "B" or is_scalar_const(c):
            return
        if may_divide_or_be_infinite(a) or may_divide_or_be_infinite(b):
            return
        a_zero = is_scalar_const(a) and const_value(a) == 0.0
        b_zero = is_scalar_const(b) and const_value(b) == 0.0
        new = []
        terms = []
        if not a_zero:
            m1 = ct.MultOp(c, a)
            new.append(m1)
            terms.append(m1.result)
        if not b_zero:
            notc = ct.UnaryOp("not", c)
            m2 = ct.MultOp(notc.result, b)
            new += [notc, m2]
            terms.append(m2.result)
        if not terms:
            return
        if len(terms) == 2:
            new.append(ct.BinaryOp("add", terms[0], terms[1]))
        rewriter.replace(op, new, [new[-1].results[0]])
