"""Constant folding and algebraic identities on compile-time scalars.

    # unary(op, const a) -> const op(a)          binary(op, const a, const b) -> const (a op b)
    # and(x, true) -> x     or(x, false) -> x     add(x, 0) -> x     sub(x, 0) -> x     mult(x, 1) -> x
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import const_value, is_scalar_const
from cfruntime import scalar

# the scalar semantics shared with the engine and the interpreter (cfruntime.scalar), as float constants
_UNARY = {op: (lambda a, f=scalar.UNARY[op]: float(f(a)))
          for op in ("neg", "not", "abs", "exp", "log", "sigmoid", "tanh", "sin", "cos", "floor")}
_BINARY = {op: (lambda a, b, f=scalar.BINARY[op]: float(f(a, b)))
           for op in ("add", "sub", "min", "max", "lt", "le", "gt", "ge", "eq", "ne", "and", "or")}
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
                fn = scalar.BINARY["mul"] if name == "mult" else scalar.BINARY["div"] if name == "div" else _BINARY.get(name)
                # a division by a constant 0 is left to the runtime (same value, scalar.BINARY["div"])
                if fn is not None and not (name == "div" and const_value(b) == 0):
                    self._fold(op, float(fn(const_value(a), const_value(b))), rewriter)
                return
            for x, k in ((a, b), (b, a)) if name in ("and", "or", "add", "mult") else ((a, b),):
                if _known(k) and (name, const_value(k)) in _IDENTITY and x.type == op.results[0].type:
                    rewriter.replace(op, [], [x])
                    return

    @staticmethod
    def _fold(op: Operation, value: float, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, [ct.ConstOp(float(value), ct.meta(op.results[0]).top.type)])
