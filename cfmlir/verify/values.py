"""Symbolic values of the verifier: ConstraintFlow values whose numbers are z3 terms.

=============  ==================================================================================
Int, Float     a z3 ``Real`` term (Ints are Reals that the world constrains to be integral)
Bool           a z3 ``Bool`` term
Neuron         :class:`SNeuron` (a neuron of the bounded world, :mod:`cfmlir.verify.world`)
Noise          :class:`SNoise` (a noise symbol: one of the world's ``M`` shared ones, or fresh)
PolyExp        :class:`SPoly`: ``const + sum coeffs[n] * n`` with z3 coefficients
SymExp         :class:`SSym`: ``const + sum coeffs[e] * e``
Ct             :class:`SCt`: an unevaluated constraint (its truth is :func:`cfmlir.verify.semantics.holds`)
T List, tuple  ``list``, ``tuple``;  functions: :class:`SFunc`
=============  ==================================================================================

A conditional whose condition is symbolic evaluates both branches and *merges* them
(:func:`merge`): numbers become ``If(c, a, b)``, polynomials merge coefficient-wise (an absent
summand has coefficient 0), tuples and lists element-wise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import z3

from cfmlir.dialects import cf_type_lattice as T
from cfmlir.verify import errors


class SNeuron:
    """A neuron of the world; compared by identity.  ``value`` is its concrete value (a z3 Real)."""

    __slots__ = ("id", "name", "value", "world", "depth", "pool", "_shape", "meta")

    def __init__(self, world, nid: int, name: str, depth: int):
        self.world = world
        self.id = nid
        self.name = name
        self.value = z3.Real(f"x_{name}")
        self.depth = depth
        self.pool = None  # the neurons its PolyExp members range over (made when its shape is)
        self._shape: dict[str, Any] | None = None
        self.meta: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"SNeuron({self.name})"


@dataclass(frozen=True)
class SNoise:
    """Noise symbol ``index``; ``fresh`` ones were made by ``sym`` in the rule being verified."""

    index: int
    fresh: bool = False


@dataclass
class SPoly:
    const: Any
    coeffs: dict = field(default_factory=dict)  # SNeuron -> z3 term


@dataclass
class SSym:
    const: Any
    coeffs: dict = field(default_factory=dict)  # SNoise -> z3 term


@dataclass(frozen=True)
class SCt:
    """``lhs op rhs``; ``op`` also ``and``/``or``/``!``/``In`` and ``ite`` (``lhs`` = condition,
    ``rhs`` = the pair of branches) for merged constraints."""

    op: str
    lhs: Any
    rhs: Any = None


@dataclass(frozen=True)
class SFunc:
    """A user function with ``args`` already applied (curried partial application)."""

    name: str
    args: tuple = ()


ZERO = z3.RealVal(0)


def num(v) -> Any:
    """A Python number or z3 term as a z3 arithmetic term."""
    if isinstance(v, bool):
        raise TypeError("a Bool is not a number")
    if isinstance(v, (int, float)):
        return z3.RealVal(v)
    return v


def is_num(v) -> bool:
    return isinstance(v, z3.ArithRef)


def _to_linear(v, cls: type, var: type, what: str):
    """``v`` as a ``cls`` (:class:`SPoly`/:class:`SSym`): itself, one term for a ``var`` (a symbolic
    neuron / noise symbol), a constant for a number."""
    if isinstance(v, cls):
        return v
    if isinstance(v, var):
        return cls(ZERO, {v: z3.RealVal(1)})
    if is_num(v):
        return cls(v, {})
    raise TypeError(f"cannot use {v!r} as a {what}")


def to_poly(v) -> SPoly:
    return _to_linear(v, SPoly, SNeuron, "PolyExp")


def to_sym(v) -> SSym:
    return _to_linear(v, SSym, SNoise, "SymExp")


def lin(cls, a, b, sa=1, sb=1):
    """``sa*a + sb*b`` for two SPoly or two SSym values."""
    errors.check_active()
    out = {}
    for i, (k, c) in enumerate(a.coeffs.items()):
        if i % 64 == 63:
            errors.check_active()
        out[k] = sa * c
    for i, (k, c) in enumerate(b.coeffs.items()):
        if i % 64 == 63:
            errors.check_active()
        out[k] = out[k] + sb * c if k in out else sb * c
    return cls(sa * a.const + sb * b.const, out)


def scale(p, c):
    errors.check_active()
    return type(p)(c * p.const, {k: c * v for k, v in p.coeffs.items()})


def lift_pair(a, b):
    if isinstance(a, (SPoly, SNeuron)) or isinstance(b, (SPoly, SNeuron)):
        return SPoly, to_poly(a), to_poly(b)
    return SSym, to_sym(a), to_sym(b)


def convert(v, ty):
    """``v`` in the representation of static type ``ty`` (subtyping conversions only)."""
    if ty == T.POLYEXP:
        return to_poly(v)
    if ty == T.SYMEXP:
        return to_sym(v)
    if isinstance(ty, T.ListType) and isinstance(v, list):
        return [convert(x, ty.elem) for x in v]
    if isinstance(ty, T.TupleType) and isinstance(v, tuple) and len(v) == len(ty.elems):
        return tuple(convert(x, t) for x, t in zip(v, ty.elems))  # a rule's conditional result
    return v


def merge(c, a, b):
    """The value ``c ? a : b`` for a symbolic condition ``c`` (both values of one static type)."""
    if a is b:
        return a
    if isinstance(a, z3.BoolRef) or isinstance(b, z3.BoolRef):
        return z3.If(c, _bool(a), _bool(b))
    if is_num(a) and is_num(b):
        return z3.If(c, a, b)
    if isinstance(a, (SPoly, SSym)) and isinstance(b, (SPoly, SSym)) and type(a) is type(b):
        keys = list(a.coeffs) + [k for k in b.coeffs if k not in a.coeffs]
        return type(a)(z3.If(c, a.const, b.const),
                        {k: z3.If(c, a.coeffs.get(k, ZERO), b.coeffs.get(k, ZERO)) for k in keys})
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(merge(c, x, y) for x, y in zip(a, b))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [merge(c, x, y) for x, y in zip(a, b)]
    if isinstance(a, SCt) or isinstance(b, SCt):
        return SCt("ite", c, (a, b))
    if type(a) is type(b) and not isinstance(a, z3.ExprRef) and a == b:
        return a
    raise TypeError(f"cannot merge {type(a).__name__} and {type(b).__name__} under a symbolic condition")


def _bool(v):
    if isinstance(v, bool):
        return z3.BoolVal(v)
    return v
