"""Host-side arithmetic on uniform values (plain Python numbers), with torch's float semantics.

A uniform value (the compiler's metadata says it is the same for every sample and neuron, such as
``curr[last_layer] == 1``) is held as a Python ``float``/``bool``; operations on two of them never
touch a tensor, so deciding a per-layer branch costs no device work and no host-device sync.
Results equal torch's on 0-dimensional float64 tensors: division by zero gives +-inf or NaN, NaN
compares false, ``min``/``max`` propagate NaN.
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


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log(x: float) -> float:
    """``log`` as torch computes it: ``-inf`` at 0, NaN below."""
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


UNARY = {
    "neg": lambda a: -a,
    "not": lambda a: not a,
    "abs": abs,
    "sigmoid": _sigmoid,
    "tanh": math.tanh,
    "exp": _exp,
    "log": _log,
    "sin": math.sin,
    "cos": math.cos,
    "floor": lambda a: float(math.floor(a)) if math.isfinite(a) else a,
}


def binary(op: str, a, b):
    """``a op b`` for two host numbers (bools count as 0/1 in arithmetic)."""
    return BINARY[op](float(a), float(b))


def unary(op: str, a):
    if op == "not":
        return not a
    return UNARY[op](float(a))
