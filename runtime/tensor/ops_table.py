"""Operator tables: torch kernels, identities and annihilators.

``identity(op, v, side)``: ``op(x, v) == x`` (side='right') or
``op(v, x) == x`` (side='left') for every ``x`` of the result dtype.
``annihilator(op, v, side)``: ``op(x, v) == v`` for every ``x`` *satisfying the
returned condition* ('any', 'finite' or 'not_nan'); None if ``v`` is not one.
"""

from __future__ import annotations

import math

import torch

from .clamps import magnitude
from .masked_grad import divide, multiply

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": multiply,  # torch.mul; a finite gradient where the product is not selected (masked_grad)
    "div": divide,  # torch.true_divide; the same for the quotient
    "min": torch.minimum,
    "max": torch.maximum,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "eq": torch.eq,
    "ne": torch.ne,
    "and": torch.logical_and,
    "or": torch.logical_or,
    "xor": torch.logical_xor,
    "pow": torch.pow,
}

UNARY = {
    "neg": torch.neg,
    "not": torch.logical_not,
    "abs": torch.abs,
    "magnitude": magnitude,  # |x| with gradient 1 at 0 (clamps.magnitude): a split's centre/radius form
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "square": torch.square,
    "sign": torch.sign,
    "floor": torch.floor,
    "sin": torch.sin,
    "cos": torch.cos,
    "ceil": torch.ceil,
    "reciprocal": torch.reciprocal,
    "isnan": torch.isnan,
    "isinf": torch.isinf,
}

COMMUTATIVE = {"add", "mul", "min", "max", "eq", "ne", "and", "or", "xor"}


def _is(v, target) -> bool:
    if isinstance(target, float) and math.isinf(target):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v == target
    if isinstance(target, bool):
        return v is target or (not isinstance(v, float) and v == target and isinstance(v, bool))
    return not isinstance(v, bool) and v == target


def identity(op: str, v, side: str = "right") -> bool:
    if op in ("sub", "div") and side == "left":
        return False
    if op in ("add", "sub"):
        return _is(v, 0)
    if op in ("mul", "div"):
        return _is(v, 1)
    if op == "min":
        return _is(v, math.inf)
    if op == "max":
        return _is(v, -math.inf)
    if op == "and":
        return _is(v, True)
    if op in ("or", "xor"):
        return _is(v, False)
    return False


def annihilator(op: str, v, side: str = "right") -> str | None:
    if op == "mul" and _is(v, 0):
        return "finite"
    if op == "min" and _is(v, -math.inf):
        return "not_nan"
    if op == "max" and _is(v, math.inf):
        return "not_nan"
    if op == "and" and _is(v, False):
        return "any"
    if op == "or" and _is(v, True):
        return "any"
    return None


def condition_holds(cond: str, block) -> bool:
    if cond == "any":
        return True
    if cond == "finite":
        return block.all_finite()
    return block.no_nan()


def compute_dtype(op: str, *dtypes: torch.dtype) -> torch.dtype:
    """dtype the operands are cast to before the kernel runs."""
    dt = dtypes[0]
    for d in dtypes[1:]:
        dt = torch.promote_types(dt, d)
    if op == "div" and not dt.is_floating_point:
        dt = torch.get_default_dtype()
    return dt
