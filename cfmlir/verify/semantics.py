"""The truth of a constraint in the world: what ``curr[L] <= curr`` or ``curr In curr[Z]`` means.

A comparison compares *concrete values*: a neuron stands for its value ``x_n``, a PolyExp
``c0 + sum c_j n_j`` for ``c0 + sum c_j x_{n_j}``.  ``v In Z`` for a SymExp ``Z`` means: some values
of the noise symbols in ``[-1, 1]`` make ``v = Z``, where the world's ``M`` shared symbols keep the
values of the witness (the same for every neuron: zonotopes are sound *jointly*) and the fresh ones
(made by ``sym`` in this rule) are free: ``|v - Z_shared(eps)| <= sum |a_fresh|``.

``holds(ct, slack)`` relaxes every comparison by ``slack`` (``a <= b`` becomes ``a <= b + slack``),
so ``Not(holds(ct, d))`` says the constraint is violated by more than ``d``.

Example: ``holds(SCt('<=', L, n))`` with ``L = 0.5*p + 1`` is ``0.5*x_p + 1 <= x_n``.
"""

from __future__ import annotations

import z3

from cfmlir.verify import values as S


def concrete(v):
    """The concrete value of a number, neuron or PolyExp (a z3 term)."""
    if S.is_num(v):
        return v
    if isinstance(v, S.SNeuron):
        return v.value
    if isinstance(v, S.SPoly):
        return v.const + z3.Sum([c * n.value for n, c in v.coeffs.items()]) if v.coeffs else v.const
    raise TypeError(f"{type(v).__name__} has no concrete value here (a SymExp compared with '<='?)")


def holds(ct, slack=0):
    """The z3 Bool ``ct`` holds (relaxed by ``slack``)."""
    if isinstance(ct, bool):
        return z3.BoolVal(ct)
    if isinstance(ct, z3.BoolRef):
        return ct
    if not isinstance(ct, S.SCt):
        raise TypeError(f"not a constraint: {ct!r}")
    op = ct.op
    if op == "and":
        return z3.And(holds(ct.lhs, slack), holds(ct.rhs, slack))
    if op == "or":
        return z3.Or(holds(ct.lhs, slack), holds(ct.rhs, slack))
    if op == "!":
        return z3.Not(holds(ct.lhs, -slack))
    if op == "ite":
        a, b = ct.rhs
        return z3.If(ct.lhs, holds(a, slack), holds(b, slack))
    if op == "In":
        return _member_of(ct.lhs, ct.rhs, slack)
    d = _expand(concrete(ct.lhs) - concrete(ct.rhs))
    a, b = d, z3.RealVal(0)
    if op == "<=":
        return a <= b + slack
    if op == "<":
        return a < b + slack
    if op == ">=":
        return a + slack >= b
    if op == ">":
        return a + slack > b
    if op == "==":
        return z3.And(a <= b + slack, b <= a + slack)
    if op == "!=":
        return z3.Or(a > b + slack, b > a + slack) if not isinstance(slack, int) or slack else a != b
    raise TypeError(f"constraint operator '{op}'")


def _member_of(v, z, slack):
    x = concrete(v)
    z = S.to_sym(z)
    shared = z.const
    radius = []
    for e, c in z.coeffs.items():
        if e.fresh:
            radius.append(z3.If(c >= 0, c, -c))
        else:
            shared = shared + c * z3.Real(f"eps_{e.index}")
    d = _expand(x - shared)
    r = z3.Sum(radius) if radius else z3.RealVal(0)
    return z3.And(d <= r + slack, -d <= r + slack)


def _expand(t):
    """``t`` as a sum of monomials (cancels ``m*(x - a*e) + m*a*e`` to ``m*x``: much easier for nlsat)."""
    return z3.simplify(t, som=True)


def value_key(v):
    """A hashable key equal for structurally equal symbolic values (z3 terms are hash-consed)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, z3.ExprRef):
        return ("z", z3.simplify(v).get_id())
    if isinstance(v, S.SNeuron):
        return ("n", v.id)
    if isinstance(v, S.SNoise):
        return ("e", v.index)
    if isinstance(v, (S.SPoly, S.SSym)):
        return (type(v).__name__, value_key(v.const), tuple((value_key(k), value_key(c)) for k, c in v.coeffs.items()))
    if isinstance(v, S.SFunc):
        return ("f", v.name, tuple(value_key(a) for a in v.args))
    if isinstance(v, (list, tuple)):
        return ("l", tuple(value_key(x) for x in v))
    return ("id", id(v))
