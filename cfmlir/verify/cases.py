"""A conjunction of z3 formulas as a disjunction of *cases*, each a conjunction of atoms ``g >= 0`` / ``g > 0``.

Algorithm (``cases(formulas, feasible)``), depth first over a list of pending formulas:

* ``And`` adds its parts; ``Or`` branches into disjoint cases (``a``, ``not a and b``, ...);
  ``Not`` is pushed inwards; a Boolean ``If(c, a, b)`` branches on ``c``;
* a comparison becomes atoms (``a <= b`` is ``b - a >= 0``, ``a < b`` is ``b - a > 0``, ``a == b`` two
  atoms, ``a != b`` two cases); when it contains an arithmetic ``If(c, ...)`` the case splits on
  ``c``: ``c`` is replaced by true (false) in every pending formula and added as a formula itself, so
  every atom of a case is free of ``If`` (one smooth piece of a piecewise term);
* a constraint the atoms cannot express (a Boolean variable, ``IsInt``) is dropped: the case is then
  *weaker* than the formula (an unsatisfiable case still proves the formula unsatisfiable; a point of
  a case must be checked against the formula itself -- :mod:`cfmlir.verify.replay` does).

``feasible(atoms)`` prunes a partial case as soon as it is cheaply seen to be empty.

Example: ``[x <= If(l > 0, l, 0)]`` gives two cases ``[l > 0, l - x >= 0]`` and
``[-l >= 0, -x >= 0]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from cfmlir.verify.terms import clean, rational, simp, walk


@dataclass(frozen=True, eq=False)
class Atom:
    """``g > 0`` when ``strict`` else ``g >= 0`` (``g`` a simplified term without ``If``)."""

    g: object
    strict: bool

    @property
    def key(self) -> tuple:
        return (self.g.get_id(), self.strict)

    def __str__(self) -> str:
        return f"{self.g} {'>' if self.strict else '>='} 0"


class TooManyCases(Exception):
    pass


def make_atom(g, strict: bool):
    """The atom, or ``True``/``False`` when ``g`` is a constant."""
    g = simp(g)
    q = rational(g)
    if q is not None:
        return q > 0 if strict else q >= 0
    return Atom(g, strict)


def _ite(t):
    """An arithmetic ``If`` of ``t``, outermost first (its condition is split before those inside it)."""
    for s in reversed(walk(t)):
        if z3.is_app_of(s, z3.Z3_OP_ITE) and not z3.is_bool(s):
            return s
    return None


def _negate(f):
    if z3.is_not(f):
        return f.arg(0)
    if z3.is_and(f):
        return z3.Or([_negate(c) for c in f.children()])
    if z3.is_or(f):
        return z3.And([_negate(c) for c in f.children()])
    if z3.is_implies(f):
        return z3.And(f.arg(0), _negate(f.arg(1)))
    if z3.is_true(f):
        return z3.BoolVal(False)
    if z3.is_false(f):
        return z3.BoolVal(True)
    if z3.is_le(f):
        return f.arg(0) > f.arg(1)
    if z3.is_lt(f):
        return f.arg(0) >= f.arg(1)
    if z3.is_ge(f):
        return f.arg(0) < f.arg(1)
    if z3.is_gt(f):
        return f.arg(0) <= f.arg(1)
    if z3.is_eq(f) and not z3.is_bool(f.arg(0)):
        return z3.Or(f.arg(0) < f.arg(1), f.arg(0) > f.arg(1))
    if z3.is_distinct(f) and f.num_args() == 2:
        return f.arg(0) == f.arg(1)
    if z3.is_app_of(f, z3.Z3_OP_ITE):
        return z3.If(f.arg(0), _negate(f.arg(1)), _negate(f.arg(2)))
    if z3.is_eq(f) and z3.is_bool(f.arg(0)):
        return z3.Or(z3.And(f.arg(0), _negate(f.arg(1))), z3.And(_negate(f.arg(0)), f.arg(1)))
    return z3.Not(f)


_Z = z3.Real("__minmax__")


def _minmax(t):
    """``'min'`` / ``'max'`` when the ``If`` term ``t`` picks the smaller / larger of its branches."""
    c, a, b = t.children()
    if not (z3.is_le(c) or z3.is_lt(c) or z3.is_ge(c) or z3.is_gt(c)):
        return None
    d = simp(c.arg(0) - c.arg(1))
    ab = simp(a - b)
    small = z3.is_le(c) or z3.is_lt(c)  # c says lhs <= rhs
    if d.eq(ab):  # c is "a <= b" (min) or "a >= b" (max)
        return "min" if small else "max"
    if d.eq(simp(-ab)):
        return "max" if small else "min"
    return None


def _minmax_rewrite(f):
    """A comparison ``g(m) > 0`` with ``m = min(A, B)`` (or max) entering ``g`` affinely with a
    constant coefficient, without the comparison of ``A`` and ``B``: ``g(min(A, B)) > 0`` iff
    ``g(A) > 0 and g(B) > 0`` for an increasing ``g`` (the others alike).  ``None`` if no such ``m``."""
    from cfmlir.verify.terms import affine_in

    if not (z3.is_le(f) or z3.is_lt(f) or z3.is_ge(f) or z3.is_gt(f)):
        return None
    lhs = simp(f.arg(0) - f.arg(1))  # f is  lhs op 0
    for t in reversed(walk(lhs)):  # outermost first
        if not (z3.is_app_of(t, z3.Z3_OP_ITE) and z3.is_arith(t)):
            continue
        kind = _minmax(t)
        if kind is None:
            continue
        g = simp(z3.substitute(lhs, (t, _Z)))
        r = affine_in(g, _Z)
        if r is None:
            continue
        c, _rest = r
        ga, gb = (simp(z3.substitute(g, (_Z, x))) for x in (t.arg(1), t.arg(2)))
        if z3.is_le(f) or z3.is_lt(f):  # lhs <= 0: the decreasing direction
            c = -c
        op = {"le": lambda x: x <= 0, "lt": lambda x: x < 0, "ge": lambda x: x >= 0, "gt": lambda x: x > 0}[
            "le" if z3.is_le(f) else "lt" if z3.is_lt(f) else "ge" if z3.is_ge(f) else "gt"]
        both = (kind == "min") == (c > 0)  # g increasing in m and m = min (or decreasing and max): both
        return z3.And(op(ga), op(gb)) if both else z3.Or(op(ga), op(gb))
    return None


def _atoms(f):
    """The atoms of an ``If``-free comparison, or ``None`` when ``f`` is not one."""
    if z3.is_le(f):
        return [make_atom(f.arg(1) - f.arg(0), False)]
    if z3.is_lt(f):
        return [make_atom(f.arg(1) - f.arg(0), True)]
    if z3.is_ge(f):
        return [make_atom(f.arg(0) - f.arg(1), False)]
    if z3.is_gt(f):
        return [make_atom(f.arg(0) - f.arg(1), True)]
    if z3.is_eq(f) and z3.is_arith(f.arg(0)):
        return [make_atom(f.arg(0) - f.arg(1), False), make_atom(f.arg(1) - f.arg(0), False)]
    return None


def _norm(f):
    """One syntax per comparison (``0 <= x`` and ``x >= 0`` are the same condition to split on)."""
    return z3.simplify(f, som=True, arith_lhs=True)


def cases(formulas, feasible=lambda atoms: True, limit: int = 4096):
    """Yield ``(atoms, weakened)`` for the cases of the conjunction ``formulas``."""
    stack = [((), tuple(_norm(f) for f in formulas), False)]
    made = 0
    while stack:
        atoms, todo, weak = stack.pop()
        if not todo:
            made += 1
            if made > limit:
                raise TooManyCases(f"more than {limit} cases")
            yield list(atoms), weak
            continue
        f, rest = todo[0], todo[1:]
        if z3.is_true(f):
            stack.append((atoms, rest, weak))
            continue
        if z3.is_false(f):
            continue
        if z3.is_and(f):
            stack.append((atoms, tuple(f.children()) + rest, weak))
            continue
        if z3.is_or(f):
            ch = f.children()
            for i in reversed(range(len(ch))):
                stack.append((atoms, tuple(_negate(c) for c in ch[:i]) + (ch[i],) + rest, weak))
            continue
        if z3.is_implies(f):
            stack.append((atoms, (z3.Or(_negate(f.arg(0)), f.arg(1)),) + rest, weak))
            continue
        if z3.is_not(f):
            g = _negate(f.arg(0))
            if z3.is_not(g):  # nothing to push into (a Boolean variable, IsInt, ...)
                stack.append((atoms, rest, True))
            else:
                stack.append((atoms, (g,) + rest, weak))
            continue
        if z3.is_app_of(f, z3.Z3_OP_ITE):
            c, a, b = f.children()
            stack.append((atoms, (_negate(c), b) + rest, weak))
            stack.append((atoms, (c, a) + rest, weak))
            continue
        if z3.is_eq(f) and z3.is_bool(f.arg(0)):
            a, b = f.children()
            stack.append((atoms, (z3.Or(z3.And(a, b), z3.And(_negate(a), _negate(b))),) + rest, weak))
            continue
        if z3.is_distinct(f) and f.num_args() == 2:
            stack.append((atoms, (_negate(f.arg(0) == f.arg(1)),) + rest, weak))
            continue
        t = _ite(f)
        if t is not None:
            mm = _minmax_rewrite(f)
            if mm is not None:
                stack.append((atoms, (_norm(mm),) + rest, weak))
                continue
            c = t.arg(0)
            both = [tuple(_norm(clean(simp(z3.substitute(g, (c, z3.BoolVal(val)))))) for g in (f,) + rest)
                    for val in (False, True)]
            if all(a.eq(b) for a, b in zip(*both)):
                # the same formulas either way (e.g. the two pieces of a softplus): no split
                stack.append((atoms, both[1], weak))
                continue
            for sub, cond in zip(both, (_negate(c), c)):
                stack.append((atoms, (cond,) + sub, weak))
            continue
        new = _atoms(f)
        if new is None:  # a Boolean variable, IsInt, ...: dropped (the case is weaker)
            stack.append((atoms, rest, True))
            continue
        if any(a is False for a in new):
            continue
        new = tuple(a for a in new if a is not True)
        keys = {a.key for a in atoms}
        new = tuple(a for a in new if a.key not in keys)
        if new and not feasible(atoms + new):
            continue
        stack.append((atoms + new, rest, weak))
