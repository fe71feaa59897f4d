"""Symbolic partial derivatives of the prover's terms (:mod:`cfmlir.verify.terms`).

``derivative(t, v)`` is ``dt/dv`` as a simplified z3 term, by the usual rules over the term DAG
(memoised per subterm): sums, products (n-ary), quotients, integer powers, ``EXP' = EXP``,
``LOG'(a) = 1/a``.  An ``If`` is differentiated branch-wise only when its condition does not mention ``v`` (else
:class:`NotDifferentiable`: the derivative of a piecewise term is only meaningful inside one piece,
which is why the prover works on the ``If``-free cases of :mod:`cfmlir.verify.cases`).

Example: ``derivative(1/(1 + EXP(-1*x)), x)`` is ``EXP(-1*x) / (1 + EXP(-1*x))**2`` (in z3's
simplified form), the sigmoid's derivative.
"""

from __future__ import annotations

import z3

from cfmlir.verify.terms import EXP, is_fun, is_var, mentions, simp

_ZERO = z3.RealVal(0)
_ONE = z3.RealVal(1)


class NotDifferentiable(ValueError):
    """A construct the derivative rules do not cover (an ``If``, an integer operation, ...)."""


def _zero(t) -> bool:
    return z3.is_rational_value(t) and t.as_fraction() == 0


def derivative(t, v):
    memo: dict[int, object] = {}
    vid = v.get_id()

    def d(s):
        i = s.get_id()
        r = memo.get(i)
        if r is not None:
            return r
        r = _rule(s)
        memo[i] = r
        return r

    def _rule(s):
        if s.get_id() == vid:
            return _ONE
        if z3.is_rational_value(s) or z3.is_algebraic_value(s) or is_var(s):
            return _ZERO
        if is_fun(s):
            a = s.arg(0)
            da = d(a)
            if _zero(da):
                return _ZERO
            if s.decl().name() == "EXP":
                return EXP(a) * da
            return da / a  # LOG
        k = s.decl().kind()
        ch = s.children()
        if k == z3.Z3_OP_ADD:
            return z3.Sum([d(c) for c in ch])
        if k == z3.Z3_OP_SUB:
            out = d(ch[0])
            for c in ch[1:]:
                out = out - d(c)
            return out
        if k == z3.Z3_OP_UMINUS:
            return -d(ch[0])
        if k == z3.Z3_OP_MUL:
            terms = []
            for j, c in enumerate(ch):
                dc = d(c)
                if _zero(dc):
                    continue
                others = [o for m, o in enumerate(ch) if m != j]
                terms.append(z3.Product(others + [dc]) if others else dc)
            return z3.Sum(terms) if terms else _ZERO
        if k == z3.Z3_OP_DIV:
            a, b = ch
            da, db = d(a), d(b)
            if _zero(db):
                return _ZERO if _zero(da) else da / b
            return (da * b - a * db) / (b * b)
        if k == z3.Z3_OP_POWER:
            a, n = ch
            if not z3.is_rational_value(n) or n.as_fraction().denominator != 1:
                raise NotDifferentiable(f"power {s}")
            m = n.as_fraction().numerator
            if m == 0:
                return _ZERO
            return z3.RealVal(m) * (a ** (m - 1)) * d(a)
        if k == z3.Z3_OP_TO_REAL:
            return d(ch[0])
        if k == z3.Z3_OP_ITE and not mentions(ch[0], v):
            return z3.If(ch[0], d(ch[1]), d(ch[2]))
        raise NotDifferentiable(f"{s.decl().name()} in {s}")

    return simp(d(t))
