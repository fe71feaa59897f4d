"""Infinite constants in a rule: ``1.0 / 0.0`` is ``+inf``, ``-1.0 / 0.0`` is ``-inf`` (as in float64).

A rule may state that a bound does not exist (DeepPoly's Reciprocal over an interval containing 0:
``l = -1.0 / 0.0``).  z3 knows no infinity (its ``x / 0`` is an arbitrary real), so the evaluator
writes a nonzero constant divided by the constant 0 as ``+-INF``, one reserved z3 real, and before a
formula reaches a solver :func:`settle` replaces every comparison that mentions ``INF`` by its truth
value in the extended reals, where ``INF`` is larger than every real.

Algorithm (``settle(f)``), bottom-up over the formula with a memo:

1. Boolean connectives and conditions are rebuilt from their settled parts; an arithmetic ``If``
   whose condition settles to true or false collapses to one branch (``abs(INF)`` is ``INF``);
2. a comparison ``a op b`` whose sides hold an ``If`` with ``INF`` in a branch is split on that
   condition: ``If(c, a[t := x] op b, a[t := y] op b)``;
3. a comparison without such an ``If`` is ``p op 0`` for ``p = a - b = c1 * INF + c0``: with ``c1``
   a nonzero rational constant the comparison's truth is that of ``sign(c1) * inf op 0`` (``-INF <=
   x`` is true for every real ``x``).  Anything else -- ``INF`` times a variable, ``INF`` squared,
   ``INF - INF``, ``INF`` inside ``exp`` -- has no value in the extended reals that float64 agrees
   with (``0 * inf`` and ``inf - inf`` are NaN): :class:`NotExtendedReal` (the rule is outside the
   fragment).

Example: ``settle(If(l > 0, 1/u, -INF) <= x)`` is ``If(l > 0, 1/u <= x, True)``.
"""

from __future__ import annotations

import z3

INF = z3.Real("__inf__")
_ZERO = z3.RealVal(0)


class NotExtendedReal(ValueError):
    """``INF`` used where it has no extended-real value (``0 * inf``, ``inf - inf``, ``inf^2``, ...)."""


def infinite(sign: int):
    """``+inf`` or ``-inf`` as a z3 term."""
    return INF if sign > 0 else -INF


def mentions(t) -> bool:
    """Does the z3 term ``t`` contain ``INF``?  (Substituting it changes the term iff it does; z3
    does this in C, once per shared subterm: every rule's every formula is asked.)"""
    if not isinstance(t, z3.ExprRef):
        return False
    return not z3.substitute(t, (INF, _ZERO)).eq(t)


def check_arith(op: str, a, b, r) -> None:
    """Refuse (:class:`NotExtendedReal`) an operation on an infinite value that float64 makes NaN or
    that is not a constant multiple of ``INF`` plus a real: ``inf - inf``, ``inf * x``, ``x / inf``."""
    if not mentions(z3.simplify(r) if isinstance(r, z3.ExprRef) else r):
        raise NotExtendedReal(f"'{a} {op} {b}' has no value (inf - inf or 0 * inf is NaN)")
    if op == "/" and mentions(b):
        raise NotExtendedReal(f"a division by an infinite value '{b}'")
    if op == "*":
        other = b if mentions(a) else a
        if mentions(a) and mentions(b):
            raise NotExtendedReal(f"a product of infinite values '{a} * {b}'")
        o = z3.simplify(other) if isinstance(other, z3.ExprRef) else other
        if isinstance(o, z3.ExprRef) and not (z3.is_rational_value(o) and o.as_fraction() != 0):
            raise NotExtendedReal(f"an infinite value times '{other}' (0 * inf is NaN)")
        if not isinstance(o, z3.ExprRef) and o == 0:
            raise NotExtendedReal("0 * inf is NaN")


_CMP = {z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT}


def settle(f, memo: dict | None = None):
    """``f`` with every comparison that mentions ``INF`` replaced by its truth (see the module docstring)."""
    if not mentions(f):
        return f
    return _settle(f, {} if memo is None else memo)


def _settle(t, memo):
    hit = memo.get(t.get_id())
    if hit is not None:
        return hit
    r = _settle1(t, memo)
    memo[t.get_id()] = r
    return r


def _settle1(t, memo):
    if not mentions(t):
        return t
    if z3.is_bool(t):
        k = t.decl().kind() if z3.is_app(t) else None
        ch = t.children()
        if k in _CMP or (k in (z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT) and len(ch) == 2 and not z3.is_bool(ch[0])):
            return _atom(t, [_term(c, memo) for c in ch], k, memo)
        if z3.is_app(t) and ch:
            return z3.simplify(t.decl()(*[_settle(c, memo) for c in ch]))
        raise NotExtendedReal(f"an infinite value in '{t}'")
    return _term(t, memo)


def _term(t, memo):
    """An arithmetic term with the conditions of its ``If``s settled (decided ones collapsed)."""
    if not mentions(t):
        return t
    key = ("term", t.get_id())
    hit = memo.get(key)
    if hit is not None:
        return hit
    if z3.is_app_of(t, z3.Z3_OP_ITE):
        c = _settle(t.arg(0), memo)
        a, b = _term(t.arg(1), memo), _term(t.arg(2), memo)
        r = a if z3.is_true(c) else b if z3.is_false(c) else z3.If(c, a, b)
    elif z3.is_app(t) and t.num_args():
        r = t.decl()(*[_term(c, memo) for c in t.children()])
    else:
        r = t
    memo[key] = r
    return r


def _inf_ite(t):
    """An ``If`` subterm of ``t`` with ``INF`` in a branch (outermost first), else ``None``."""
    stack, seen = [t], set()
    while stack:
        s = stack.pop()
        if s.get_id() in seen:
            continue
        seen.add(s.get_id())
        if z3.is_app_of(s, z3.Z3_OP_ITE) and (mentions(s.arg(1)) or mentions(s.arg(2))):
            return s
        stack.extend(reversed(s.children()))
    return None


def _atom(t, sides, k, memo):
    for s in sides:
        ite = _inf_ite(s)
        if ite is not None:
            c = ite.arg(0)
            a = _atom(t, [z3.substitute(x, (ite, ite.arg(1))) for x in sides], k, memo)
            b = _atom(t, [z3.substitute(x, (ite, ite.arg(2))) for x in sides], k, memo)
            return z3.simplify(z3.If(c, a, b))
    if not any(mentions(x) for x in sides):
        return t.decl()(*sides)
    p = z3.simplify(sides[0] - sides[1], som=True)
    if not mentions(p):  # inf - inf on a side, or inf compared with inf: NaN or no value in float64
        raise NotExtendedReal(f"'{t}' compares or subtracts infinite values")
    c0 = z3.simplify(z3.substitute(p, (INF, _ZERO)))
    c1 = z3.simplify(z3.substitute(p, (INF, z3.RealVal(1))) - c0)
    twice = z3.simplify(z3.substitute(p, (INF, z3.RealVal(2))) - c0 - 2 * c1)
    if not (z3.is_rational_value(c1) and c1.as_fraction() != 0 and z3.is_rational_value(twice)
            and twice.as_fraction() == 0):
        raise NotExtendedReal(f"an infinite value in '{p}' (only a constant multiple of inf plus a real has a value)")
    positive = c1.as_fraction() > 0  # p is +inf (else -inf)
    truth = {z3.Z3_OP_GT: positive, z3.Z3_OP_GE: positive, z3.Z3_OP_LT: not positive,
             z3.Z3_OP_LE: not positive, z3.Z3_OP_EQ: False, z3.Z3_OP_DISTINCT: True}[k]
    return z3.BoolVal(truth)
