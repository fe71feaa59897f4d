"""Constant folding and algebraic identities on compile-time scalars.

    # unary(op, const a) -> const op(a)          binary(op, const a, const b) -> const (a op b)
    # and(x, true) -> x     or(x, false) -> x     add(x, 0) -> x     sub(x, 0) -> x     mult(x, 1) -> x
"""

from __future__ import annotations

import math
import operator

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import const_value, is_scalar_const

_UNARY = {"neg": operator.neg, "not": lambda a: float(not a), "abs": abs, "exp": math.exp,
          "log": lambda a: math.log(a) if a > 0 else (-math.inf if a == 0 else math.nan),
          "sigmoid": lambda a: 1 / (1 + math.exp(-a)), "tanh": math.tanh, "sin": math.sin, "cos": math.cos,
          "floor": lambda a: float(math.floor(a)) if math.isfinite(a) else a}
_BINARY = {
    "add": operator.add, "sub": operator.sub, "min": min, "max": max,
    "lt": lambda a, b: float(a < b), "le": lambda a, b: float(a <= b), "gt": lambda a, b: float(a > b),
    "ge": lambda a, b: float(a >= b), "eq": lambda a, b: float(a == b), "ne": lambda a, b: float(a != b),
    "and": lambda a, b: float(bool(a) and bool(b)), "or": lambda a, b: float(bool(a) or bool(b)),
}
# (op, neutral element): x op neutral == x
_IDENTITY = {("and", 1.0), ("or", 0.0), ("add", 0.0), ("sub", 0.0), ("mult", 1.0), ("div", 1.0)}


def _known(v) -> bool:
    """A scalar constant whose value is known here (a ``cftensor.const``; a scalar computed by other
    ops, e.g. a ternary of constants, has a constant type but no value yet)."""
    return is_scalar_const(v) and const_value(v) is not None


class FoldConstants(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, ct.UnaryOp) and _known(op.input) and op.op.data in _UNARY:
            self._fold(op, _UNARY[op.op.data](const_value(op.input)), rewriter)
        elif isinstance(op, (ct.BinaryOp, ct.MultOp)):
            name = op.op.data if isinstance(op, ct.BinaryOp) else "mult"
            a, b = op.operands
            if _known(a) and _known(b):
                fn = operator.mul if name == "mult" else operator.truediv if name == "div" else _BINARY.get(name)
                if fn is not None:
                    try:
                        self._fold(op, fn(const_value(a), const_value(b)), rewriter)
                    except ZeroDivisionError:
                        return
                return
            for x, k in ((a, b), (b, a)) if name in ("and", "or", "add", "mult") else ((a, b),):
                if _known(k) and (name, const_value(k)) in _IDENTITY and x.type == op.results[0].type:
                    rewriter.replace(op, [], [x])
                    return

    @staticmethod
    def _fold(op: Operation, value: float, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, [ct.ConstOp(float(value), op.results[0].type)])
