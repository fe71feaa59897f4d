"""How a term depends on a variable: partial derivatives and affine decompositions.

``derivative(p, v)`` is ``dp/dv`` (:mod:`cfmlir.verify.expr` polynomials, memoised): the product
rule over monomials, ``exp' = exp``, ``log'(a) = a' inv(a)``, ``inv'(a) = -a' inv(a)^2``,
``sin' = cos``, ``cos' = -sin``; ``floor`` of a term that depends on ``v`` is :class:`NotDifferentiable`.  An
``Ite`` is differentiated branch-wise only when its condition does not mention ``v``, else
:class:`NotDifferentiable` (the derivative of a piecewise term is only meaningful inside one
piece, which is why the prover works on the ``If``-free cases of :mod:`cfmlir.verify.cases`).

``affine_in(p, v)`` is ``(c, rest)`` when ``p = c*v + rest`` with a rational ``c != 0`` and ``rest``
free of ``v`` (read off the monomials: no derivative needed).

Example: ``derivative(inv(1 + exp(-x)), x)`` is ``exp(-x) * inv(1 + exp(-x))^2``.
"""

from __future__ import annotations

from cfmlir.verify import expr as E


class NotDifferentiable(ValueError):
    """A piecewise term whose condition depends on the variable."""


_MEMO: dict = {}


def derivative(p: E.Poly, v: str) -> E.Poly:
    key = (p.id, v)
    r = _MEMO.get(key)
    if r is None:
        if len(_MEMO) > 200000:
            _MEMO.clear()
        r = _MEMO[key] = _d(p, v)
    return r


def _d(p: E.Poly, v: str) -> E.Poly:
    if v not in p.vars:
        return E.ZERO
    parts = []
    for m, c in p.terms:
        for i, (a, k) in enumerate(m):
            if v not in a.vars:
                continue
            da = _d_atom(a, v)
            if da is E.ZERO:
                continue
            rest = [(b, j) for n, (b, j) in enumerate(m) if n != i]
            if k > 1:
                rest.append((a, k - 1))
            mono = E.const(c * k)
            for b, j in rest:
                mono = E.mul(mono, E.power(E.atom_poly(b), j))
            parts.append(E.mul(mono, da))
    return E.add(*parts) if parts else E.ZERO


def _d_atom(a, v: str) -> E.Poly:
    if isinstance(a, E.Var):
        return E.ONE if a.name == v else E.ZERO
    if isinstance(a, E.Fn):
        da = derivative(a.arg, v)
        if da is E.ZERO:
            return E.ZERO
        return _D_FN[a.f](a, da)
    if isinstance(a, E.Ite):
        if v in a.cond.vars:
            raise NotDifferentiable("a conditional whose condition depends on the variable")
        return E.ite(a.cond, derivative(a.a, v), derivative(a.b, v))
    raise TypeError(a)


def _d_floor(a, da):
    raise NotDifferentiable("an integer part of a term that depends on the variable")


#: ``f(arg)`` -> ``d f(arg) / dv`` given ``d arg / dv = da`` (chain rule)
_D_FN = {
    "exp": lambda a, da: E.mul(E.atom_poly(a), da),
    "log": lambda a, da: E.mul(da, E.inv(a.arg)),
    "inv": lambda a, da: E.neg(E.mul(da, E.power(E.atom_poly(a), 2))),
    "sin": lambda a, da: E.mul(E.fn("cos", a.arg), da),
    "cos": lambda a, da: E.neg(E.mul(E.fn("sin", a.arg), da)),
    "floor": _d_floor,
}


def affine_in(p: E.Poly, v: str):
    """``(c, rest)`` with ``p = c*v + rest`` (``c`` a nonzero Fraction, ``rest`` free of ``v``), else ``None``."""
    if v not in p.vars:
        return None
    c = None
    keep: dict = {}
    for m, k in p.terms:
        if len(m) == 1 and isinstance(m[0][0], E.Var) and m[0][0].name == v and m[0][1] == 1:
            c = k
            continue
        if any(v in a.vars for a, _j in m):
            return None
        keep[m] = k
    if c is None:
        return None
    return c, E._poly(keep)
