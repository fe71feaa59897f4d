"""Runtime values of the reference interpreter.

Every ConstraintFlow value has one Python representation, chosen so that the value says what it is
(the interpreter never needs the static type to know how to add two values):

=============  ==================================================================================
Int            ``int``
Float          ``float`` (IEEE float64; ``x / 0`` gives ``inf``/``nan`` as in the tensor engine)
Bool           ``bool``
Neuron         :class:`Neuron` (an ``int`` subclass: the *global* neuron index of the network)
Noise          :class:`Noise` (an ``int`` subclass: the id of a noise symbol)
PolyExp        :class:`Poly`: ``const + sum_n coeffs[n] * n`` -- a sparse map neuron -> coefficient
SymExp         :class:`Sym`: ``const + sum_e coeffs[e] * e`` -- a sparse map noise id -> coefficient
Ct             :class:`Ct`: an unevaluated constraint (operator and operands).  Constraints only
               appear in shape declarations and traverse invariants; computing bounds never needs
               their truth value, so they are kept symbolic.
T List         ``list``
tuple          ``tuple`` (what a transformer rule returns)
function       :class:`FuncVal`: a user function and the arguments already applied (currying)
=============  ==================================================================================

Polynomial values are immutable once built: every operation returns a new :class:`Poly`/:class:`Sym`
(values stored in neuron shapes are shared freely, e.g. between memoised subexpressions).

A summand whose coefficient is exactly ``0.0`` is the same as an absent summand: ``dot`` and scaling
drop zeros, and ``map``/``traverse`` skip zero coefficients (dense tensors cannot tell the two apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


class Neuron(int):
    """A neuron, by global index (layer offset + position in the flattened layer)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Neuron({int(self)})"


class Noise(int):
    """A noise symbol (``eps_i`` in a zonotope); ``sym``/``eps`` make fresh ones."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Noise({int(self)})"


class _Linear:
    """``const + sum coeffs[k] * x_k``: the shared body of :class:`Poly` and :class:`Sym` (``VAR``: the
    letter of their terms in ``repr``); a Poly never equals a Sym."""

    __slots__ = ("const", "coeffs")
    VAR = "x"

    def __init__(self, const: float = 0.0, coeffs: dict[int, float] | None = None):
        self.const = const
        self.coeffs = {} if coeffs is None else coeffs

    def __repr__(self) -> str:
        terms = " + ".join(f"{c!r}*{self.VAR}{n}" for n, c in sorted(self.coeffs.items()))
        return f"{type(self).__name__}({self.const!r}{' + ' + terms if terms else ''})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.const == other.const and _same_terms(self.coeffs, other.coeffs)

    __hash__ = None  # type: ignore[assignment]


class Poly(_Linear):
    """A polyhedral expression ``const + sum coeffs[n] * n`` over neurons (global indices)."""

    __slots__ = ()
    VAR = "n"


class Sym(_Linear):
    """A symbolic (zonotope) expression ``const + sum coeffs[e] * e`` over noise symbols."""

    __slots__ = ()
    VAR = "e"

    def radius(self) -> float:
        return math.fsum(abs(c) for c in self.coeffs.values())


def _same_terms(a: dict, b: dict) -> bool:
    keys = set(a) | set(b)
    return all(a.get(k, 0.0) == b.get(k, 0.0) for k in keys)


@dataclass(frozen=True)
class Ct:
    """An unevaluated constraint ``lhs op rhs`` (``op`` also ``and``/``or``/``!``/``In``)."""

    op: str
    lhs: Any
    rhs: Any = None


@dataclass(frozen=True)
class FuncVal:
    """A user function value with ``args`` already applied (curried partial application)."""

    func: Any  # interpreter-side compiled function (see evaluator.CompiledFunc)
    args: tuple = ()

    @property
    def arity_left(self) -> int:
        return self.func.arity - len(self.args)


# ------------------------------------------------------------------------------------------------
# Conversions (subtyping: Int <: Float <: PolyExp/SymExp, Neuron <: PolyExp, Noise <: SymExp)
# ------------------------------------------------------------------------------------------------


def _to_linear(v: Any, cls: type, var: type, what: str):
    """``v`` as a ``cls`` (:class:`Poly`/:class:`Sym`): itself, one term for a ``var`` (a neuron / noise
    symbol), a constant for a number."""
    t = type(v)
    if t is cls:
        return v
    if t is var:
        return cls(0.0, {int(v): 1.0})
    if t is float or t is int:
        return cls(float(v), {})
    raise TypeError(f"cannot use {v!r} as a {what}")


def to_poly(v: Any) -> Poly:
    return _to_linear(v, Poly, Neuron, "PolyExp")


def to_sym(v: Any) -> Sym:
    return _to_linear(v, Sym, Noise, "SymExp")


def is_scalar(v: Any) -> bool:
    t = type(v)
    return t is float or t is int


# ------------------------------------------------------------------------------------------------
# Arithmetic.  ``add``/``sub``/``mul``/``div``/``neg`` accept any mix the type checker allows.
# ------------------------------------------------------------------------------------------------


def fdiv(a: float, b: float) -> float:
    """IEEE float division (``1/0 = inf``, ``0/0 = nan``), like the tensor engine."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _lin_add(cls, a, b, sign: float):
    """``a + sign*b`` for two Poly or two Sym values."""
    ca, cb = a.coeffs, b.coeffs
    if len(cb) > len(ca) and sign == 1.0:
        ca, cb = cb, ca
    out = dict(ca)
    get = out.get
    if sign == 1.0:
        for k, v in cb.items():
            out[k] = get(k, 0.0) + v
    else:
        for k, v in cb.items():
            out[k] = get(k, 0.0) - v
    return cls(a.const + sign * b.const, out)


def _lift_pair(a: Any, b: Any):
    """Lift two values to a common polynomial class (Poly or Sym)."""
    ta, tb = type(a), type(b)
    if ta is Poly or ta is Neuron or tb is Poly or tb is Neuron:
        return Poly, to_poly(a), to_poly(b)
    return Sym, to_sym(a), to_sym(b)


def add(a: Any, b: Any) -> Any:
    if is_scalar(a) and is_scalar(b):
        return a + b
    cls, pa, pb = _lift_pair(a, b)
    return _lin_add(cls, pa, pb, 1.0)


def sub(a: Any, b: Any) -> Any:
    if is_scalar(a) and is_scalar(b):
        return a - b
    cls, pa, pb = _lift_pair(a, b)
    return _lin_add(cls, pa, pb, -1.0)


def scale(p: Any, c: float) -> Any:
    """``c * p`` for a Poly/Sym ``p`` (zero coefficients are dropped)."""
    if c == 0.0:
        return type(p)(0.0 * p.const, {})
    return type(p)(c * p.const, {k: c * v for k, v in p.coeffs.items()})


def mul(a: Any, b: Any) -> Any:
    if is_scalar(a):
        if is_scalar(b):
            return a * b
        return scale(_lift_one(b), float(a))
    return scale(_lift_one(a), float(b))


def div(a: Any, b: Any) -> Any:
    if is_scalar(a):
        return fdiv(float(a), float(b))
    p = _lift_one(a)
    return type(p)(fdiv(p.const, float(b)), {k: fdiv(v, float(b)) for k, v in p.coeffs.items()})


def neg(a: Any) -> Any:
    if is_scalar(a):
        return -a
    p = _lift_one(a)
    return type(p)(-p.const, {k: -v for k, v in p.coeffs.items()})


def _lift_one(v: Any):
    t = type(v)
    if t is Poly or t is Sym:
        return v
    if t is Neuron:
        return to_poly(v)
    if t is Noise:
        return to_sym(v)
    raise TypeError(f"not a polynomial value: {v!r}")


def lin_sum(cls, terms: list, const: float = 0.0):
    """Sum of a list of Poly (or Sym) values into one new ``cls`` value."""
    out: dict[int, float] = {}
    get = out.get
    for t in terms:
        const += t.const
        for k, v in t.coeffs.items():
            out[k] = get(k, 0.0) + v
    return cls(const, out)


def coerce(v: Any, type_name: str) -> Any:
    """Convert ``v`` to the representation of base type ``type_name`` (subtyping only)."""
    if type_name == "PolyExp":
        return to_poly(v)
    if type_name == "SymExp":
        return to_sym(v)
    if type_name == "Float":
        return float(v) if type(v) is int else v
    return v
