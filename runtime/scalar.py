"""Scalar semantics: the one definition of every elementwise operation on plain Python numbers.

The compiled engine computes with torch; everything that computes the same operations on Python floats
uses this module, so all agree with torch on float64: the engine's host-side decisions
(:mod:`cfruntime.flow.host`), the reference interpreter (:mod:`cfmlir.interpreter.evaluator`), the
prover's replay and numeric checks (:mod:`cfmlir.verify`) and the compiler's constant folding
(:mod:`cfmlir.passes.rewrite_fold_constants`).  The rules: division by zero gives +-inf or NaN, ``exp``
overflows to +inf, ``log`` is -inf at 0 and NaN below, ``min``/``max`` propagate NaN, NaN compares false.

    BINARY["div"](1.0, 0.0) == inf      UNARY["exp"](1000.0) == inf      BINARY["max"](nan, 1.0) is nan
"""

from __future__ import annotations

import math


def _div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _minmax(pick):
    def f(a, b):
        if math.isnan(a) or math.isnan(b):
            return math.nan
        return pick(a, b)
    return f


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _div,
    "min": _minmax(min),
    "max": _minmax(max),
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "and": lambda a, b: bool(a) and bool(b),
    "or": lambda a, b: bool(a) or bool(b),
}


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def log(x: float) -> float:
    """``log`` as torch computes it: ``-inf`` at 0, NaN below."""
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


UNARY = {
    "neg": lambda a: -a,
    "not": lambda a: not a,
    "abs": abs,
    "sigmoid": sigmoid,
    "tanh": math.tanh,
    "exp": exp,
    "log": log,
    "sin": math.sin,
    "cos": math.cos,
    "floor": lambda a: float(math.floor(a)) if math.isfinite(a) else a,
}
