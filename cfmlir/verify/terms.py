"""From the rule encoding (z3) to the procedure's expressions (:mod:`cfmlir.verify.expr`) and back.

The rule encoding (:mod:`cfmlir.verify.nonlinear`) names each application ``sigmoid(t)`` by a fresh
real constrained by facts.  The decision procedure (:mod:`cfmlir.verify.delta`) needs the function
itself, so :func:`from_z3` replaces each such real by a *canonical* term over ``exp`` and ``log``::

    sigmoid(t) -> inv(1 + exp(-t))          tanh(t) -> 1 - 2 inv(1 + exp(2 t))
    exp(t)     -> exp(t)                    log(t)  -> log(t)
    sin(t)     -> sin(t)                    cos(t)  -> cos(t)      ToInt(t) -> floor(t)

One base function makes the identities between them syntactic (``sigmoid(-t) = 1 - sigmoid(t)``,
``sigmoid' = sigmoid (1 - sigmoid)`` are polynomial identities in ``exp(-t)``), which z3 decides
once ``exp(-t)`` is a variable (:mod:`cfmlir.verify.abstraction`).

:func:`to_z3` writes an expression back for z3, with a callback choosing what an ``exp``/``log``
atom becomes (a fresh real in the abstraction).

Example: with ``sigmoid_0`` the application at ``x_p``, ``from_z3(sigmoid_0 - 1/2)`` is
``inv(1 + exp(-x_p)) - 1/2``.
"""

from __future__ import annotations

from fractions import Fraction

import z3

from cfmlir.verify import expr as E


class Unsupported(ValueError):
    """A z3 construct without a counterpart here (the caller falls back to z3 alone)."""


def canonical(name: str, arg: E.Poly) -> E.Poly:
    """The canonical term of ``name(arg)`` (``name`` one of sigmoid, tanh, exp, log, sin, cos)."""
    if name == "sigmoid":
        return E.inv(E.add(E.ONE, E.exp(E.neg(arg))))
    if name == "tanh":
        return E.sub(E.ONE, E.scale(E.inv(E.add(E.ONE, E.exp(E.scale(arg, 2)))), 2))
    if name == "exp":
        return E.exp(arg)
    if name in ("log", "sin", "cos"):
        return E.fn(name, arg)
    raise KeyError(name)


class Translator:
    """z3 terms of one rule's encoding -> expressions (memoised per z3 term)."""

    def __init__(self, order=()):
        self.apps: dict[str, E.Poly] = {}
        self._memo: dict[int, object] = {}
        self._keep: list = []
        for name, t, v in order:  # an argument only uses earlier applications
            self.apps[v.decl().name()] = canonical(name, self.term(t))

    def term(self, t) -> E.Poly:
        r = self.convert(t)
        if not isinstance(r, E.Poly):
            raise Unsupported("a Boolean where a number is expected")
        return r

    def formula(self, f) -> E.Formula:
        r = self.convert(f)
        if not isinstance(r, E.Formula):
            raise Unsupported("a number where a formula is expected")
        return r

    def convert(self, t):
        i = t.get_id()
        r = self._memo.get(i)
        if r is None:
            r = self._convert(t)
            self._memo[i] = r
            self._keep.append(t)
        return r

    def _convert(self, t):
        if z3.is_true(t):
            return E.TRUE
        if z3.is_false(t):
            return E.FALSE
        if z3.is_rational_value(t):
            return E.const(Fraction(t.numerator_as_long(), t.denominator_as_long()))
        if z3.is_int_value(t):
            return E.const(t.as_long())
        k = t.decl().kind() if z3.is_app(t) else None
        ch = t.children()
        if z3.is_const(t) and k == z3.Z3_OP_UNINTERPRETED:
            name = t.decl().name()
            if z3.is_bool(t):
                return E.bvar(name)
            if name in self.apps:
                return self.apps[name]
            return E.var(name)
        if k == z3.Z3_OP_AND:
            return E.and_(*[self.formula(c) for c in ch])
        if k == z3.Z3_OP_OR:
            return E.or_(*[self.formula(c) for c in ch])
        if k == z3.Z3_OP_NOT:
            return E.not_(self.formula(ch[0]))
        if k == z3.Z3_OP_IMPLIES:
            return E.or_(E.not_(self.formula(ch[0])), self.formula(ch[1]))
        if k == z3.Z3_OP_ITE:
            c = self.formula(ch[0])
            if z3.is_bool(t):
                return E.bite(c, self.formula(ch[1]), self.formula(ch[2]))
            return E.ite(c, self.term(ch[1]), self.term(ch[2]))
        if k in (z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT):
            a, b = self.term(ch[0]), self.term(ch[1])
            if k in (z3.Z3_OP_LE, z3.Z3_OP_LT):
                a, b = b, a
            return E.cmp(E.sub(a, b), k in (z3.Z3_OP_LT, z3.Z3_OP_GT))
        if k == z3.Z3_OP_EQ:
            if z3.is_bool(ch[0]):
                a, b = self.formula(ch[0]), self.formula(ch[1])
                return E.or_(E.and_(a, b), E.and_(E.not_(a), E.not_(b)))
            return E.eq(E.sub(self.term(ch[0]), self.term(ch[1])))
        if k == z3.Z3_OP_DISTINCT and len(ch) == 2:
            if z3.is_bool(ch[0]):
                a, b = self.formula(ch[0]), self.formula(ch[1])
                return E.or_(E.and_(a, E.not_(b)), E.and_(E.not_(a), b))
            return E.not_(E.eq(E.sub(self.term(ch[0]), self.term(ch[1]))))
        if k == z3.Z3_OP_ADD:
            return E.add(*[self.term(c) for c in ch])
        if k == z3.Z3_OP_SUB:
            out = self.term(ch[0])
            for c in ch[1:]:
                out = E.sub(out, self.term(c))
            return out
        if k == z3.Z3_OP_UMINUS:
            return E.neg(self.term(ch[0]))
        if k == z3.Z3_OP_MUL:
            return E.mul(*[self.term(c) for c in ch])
        if k == z3.Z3_OP_DIV:
            return E.div(self.term(ch[0]), self.term(ch[1]))
        if k == z3.Z3_OP_POWER:
            n = ch[1]
            if z3.is_rational_value(n) and n.as_fraction().denominator == 1 and 0 <= n.as_fraction() <= 64:
                return E.power(self.term(ch[0]), int(n.as_fraction()))
            raise Unsupported("a power with a non-integer exponent")
        if k == z3.Z3_OP_TO_REAL:
            return self.term(ch[0])
        if k == z3.Z3_OP_TO_INT:  # floor (the rules' integer part)
            return E.fn("floor", self.term(ch[0]))
        if z3.is_bool(t):
            # IsInt, a Boolean function...: a constraint the procedure does not interpret
            return E.bvar(f"?{t.get_id()}")
        return self._opaque_term(t)

    def _opaque_term(self, t):
        raise Unsupported(f"the z3 operation '{t.decl().name()}'")


def to_z3(node, fn_atom=None, memo: dict | None = None):
    """``node`` as a z3 term; ``fn_atom(atom)`` gives the z3 term of an ``exp``/``log`` atom (by
    default ``EXP(arg)``/``LOG(arg)``/``SIN(arg)``/``COS(arg)`` with uninterpreted functions, ``floor`` exact)."""
    if memo is None:
        memo = {}
    return _to_z3(node, fn_atom or _uf_atom, memo)


_R = z3.RealSort()
_UF = {f: z3.Function(f.upper(), _R, _R) for f in ("exp", "log", "sin", "cos")}


def _uf_atom(a, conv):
    if a.f == "floor":  # exact in z3
        return z3.ToReal(z3.ToInt(conv(a.arg)))
    return _UF[a.f](conv(a.arg))


def _to_z3(n, fa, memo):
    r = memo.get(n.id)
    if r is not None:
        return r

    def conv(x):
        return _to_z3(x, fa, memo)

    if isinstance(n, E.Poly):
        terms = []
        for m, c in n.terms:
            fs = [_atom_z3(a, fa, memo, conv) ** k if k != 1 else _atom_z3(a, fa, memo, conv) for a, k in m]
            cz = z3.RealVal(c)
            terms.append(cz if not fs else (z3.Product(fs) if c == 1 else cz * z3.Product(fs)))
        r = z3.Sum(terms) if len(terms) > 1 else terms[0] if terms else z3.RealVal(0)
    elif isinstance(n, E.Cmp):
        p = conv(n.p)
        r = p > 0 if n.strict else p >= 0
    elif isinstance(n, E.Eq):
        r = conv(n.p) == 0
    elif isinstance(n, E.And):
        r = z3.And([conv(g) for g in n.parts])
    elif isinstance(n, E.Or):
        r = z3.Or([conv(g) for g in n.parts])
    elif isinstance(n, E.Not):
        r = z3.Not(conv(n.b))
    elif isinstance(n, E.BConst):
        r = z3.BoolVal(n.value)
    elif isinstance(n, E.BVar):
        r = z3.Bool(n.name)
    else:
        raise TypeError(n)
    memo[n.id] = r
    return r


def _atom_z3(a, fa, memo, conv):
    key = ("atom", a.id)
    r = memo.get(key)
    if r is not None:
        return r
    if isinstance(a, E.Var):
        r = z3.Real(a.name)
    elif isinstance(a, E.Fn) and a.f == "inv":
        r = 1 / conv(a.arg)
    elif isinstance(a, E.Fn):
        r = fa(a, conv)
    else:  # Ite
        r = z3.If(conv(a.cond), conv(a.a), conv(a.b))
    memo[key] = r
    return r
