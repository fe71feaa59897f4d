"""A conjunction of formulas as a disjunction of *cases*, each a conjunction of atoms ``p >= 0`` / ``p > 0``.

Algorithm (``cases(formulas, feasible)``, on :mod:`cfmlir.verify.expr` formulas), depth first over
a list of pending formulas:

* ``And`` adds its parts; ``Or`` branches into disjoint cases (``a``, ``not a and b``, ...);
* a comparison ``Cmp(p)`` without conditionals is an atom (an equation ``p = 0`` two atoms);
* a comparison with a conditional ``Ite(c, a, b)`` in it loses every condition ``c`` whose two
  replacements (true, false) give the same formulas: the two pieces of ``max(x, 0) + log(1 +
  exp(-|x|))`` are one term (:mod:`cfmlir.verify.expr`), so a softplus is never split;
* then it is tried as a *min/max*: when ``c``
  compares the two branches (``Ite(a >= b, a, b)`` is ``max(a, b)``) and the conditional enters the
  comparison affinely with a constant coefficient, ``g(min(a, b)) > 0`` is ``g(a) > 0 and g(b) > 0``
  for an increasing ``g`` (``or`` for max; swapped for a decreasing ``g``) -- no case split and no
  atom comparing ``a`` with ``b``.  Otherwise the case splits on ``c`` (the outermost conditional
  whose condition has no conditional in it): ``c`` is replaced by true (false) in every pending formula and added itself;
* a constraint the atoms cannot express (a Boolean variable, ``IsInt``) is dropped: the case is then
  *weaker* than the formula (an unsatisfiable case still proves the formula unsatisfiable; a point of
  a case must be checked against the formula itself -- :mod:`cfmlir.verify.replay` does).

``feasible(atoms)`` prunes a partial case as soon as it is cheaply seen to be empty.

Example: ``[x <= Ite(l > 0, l, 0)]`` gives two cases ``[l > 0, l - x >= 0]`` and ``[-l >= 0, -x >= 0]``.
"""

from __future__ import annotations

from cfmlir.verify import expr as E
from cfmlir.verify.calculus import affine_in


class TooManyCases(Exception):
    pass


def atoms_of(f) -> list | None:
    """The atoms of a comparison without conditionals, or ``None`` when ``f`` is not one."""
    if isinstance(f, E.Cmp):
        return [f]
    if isinstance(f, E.Eq):
        return [E.cmp(f.p, False), E.cmp(E.neg(f.p), False)]
    return None


def _minmax(t) -> str | None:
    """``'min'`` / ``'max'`` when the ``Ite`` atom ``t`` picks the smaller / larger of its branches."""
    c = t.cond
    if not isinstance(c, E.Cmp):
        return None
    ab = E.sub(t.a, t.b)
    if c.p is ab:  # a - b >= 0 picks a: the larger
        return "max"
    if c.p is E.neg(ab):
        return "min"
    return None


_Z = "__minmax__"


def _conditions(nodes) -> set[int]:
    return {t.cond.id for n in nodes for t in E.ites(n)}


def minmax_rewrite(f, rest=()):
    """``f`` without one min/max conditional (see the module docstring), or ``None``.  Only a
    conditional whose condition occurs nowhere else (else splitting on it resolves every occurrence
    at once, where rewriting one occurrence would leave the others to multiply the cases)."""
    if not isinstance(f, E.Cmp) or not f.p.has_ite:
        return None
    z = E.var(_Z)
    zatom = z.terms[0][0][0][0]
    elsewhere = None
    for t in E.ites(f.p):
        kind = _minmax(t)
        if kind is None:
            continue
        g = E.substitute(f.p, {t.id: z})
        if elsewhere is None:
            elsewhere = _conditions(rest)
        if t.cond.id in elsewhere or t.cond.id in _conditions([g]):
            continue
        r = affine_in(g, _Z)
        if r is None:
            continue
        c, _rest = r
        ga = E.substitute(g, {zatom.id: t.a})
        gb = E.substitute(g, {zatom.id: t.b})
        both = (kind == "min") == (c > 0)  # g increasing and m = min (or decreasing and max): both
        ca, cb = E.cmp(ga, f.strict), E.cmp(gb, f.strict)
        return E.and_(ca, cb) if both else E.or_(ca, cb)
    return None


def _split_condition(f):
    """The condition to split on: the outermost conditional's, unless conditionals are nested in
    it (then one of those first, so the outer condition becomes an atom instead of splitting twice)."""
    ts = E.ites(f)
    for t in ts:
        if not t.cond.has_ite:
            return t.cond
    return ts[0].cond


_ASSIGNED: dict = {}


def assign(node, c, value: bool):
    """``node`` with the condition ``c`` (and its negation) replaced by ``value`` (memoised: the
    same formulas are assigned the same conditions in many branches)."""
    key = (node.id, c.id, value)
    hit = _ASSIGNED.get(key)
    if hit is None:
        if len(_ASSIGNED) > 200000:
            _ASSIGNED.clear()
        hit = _ASSIGNED[key] = E.substitute(node, _implied(c, value))
    return hit


def _implied(c, value: bool) -> dict:
    """The conditions decided by ``c`` having ``value``: its negation, and for a comparison the
    comparisons of the same term with the other strictness (``p > 0`` makes ``p >= 0`` true and
    ``-p >= 0`` false; ``p < 0`` makes ``-p >= 0`` true and ``p > 0`` false)."""
    t, f = (E.TRUE, E.FALSE) if value else (E.FALSE, E.TRUE)
    out = {c.id: t, E.not_(c).id: f}
    if isinstance(c, E.Cmp):
        p, minus = c.p, E.neg(c.p)
        if value and c.strict:  # p > 0
            for g, v in ((E.cmp(p, False), E.TRUE), (E.cmp(minus, False), E.FALSE)):
                out.setdefault(g.id, v)
        if not value and not c.strict:  # p < 0
            for g, v in ((E.cmp(minus, False), E.TRUE), (E.cmp(p, True), E.FALSE)):
                out.setdefault(g.id, v)
    return out


def _merge_pieces(f, rest):
    """``(f,) + rest`` without a condition of ``f`` that makes no difference (both replacements give
    the same formulas: the two pieces of a softplus), or ``None``."""
    seen = set()
    for t in E.ites(f):
        c = t.cond
        if c.id in seen:
            continue
        seen.add(c.id)
        fT = assign(f, c, True)
        if assign(f, c, False) is not fT:
            continue
        restT = tuple(assign(g, c, True) for g in rest)
        if all(assign(g, c, False) is r for g, r in zip(rest, restT)):
            return (fT,) + restT
    return None


def cases(formulas, feasible=lambda atoms: True, limit: int = 4096):
    """Yield ``(atoms, weakened)`` for the cases of the conjunction ``formulas``."""
    stack = [((), tuple(formulas), False)]
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
        if f is E.TRUE:
            stack.append((atoms, rest, weak))
            continue
        if f is E.FALSE:
            continue
        if isinstance(f, E.And):
            stack.append((atoms, f.parts + rest, weak))
            continue
        if isinstance(f, E.Or):
            ch = f.parts
            for i in reversed(range(len(ch))):
                stack.append((atoms, tuple(E.not_(c) for c in ch[:i]) + (ch[i],) + rest, weak))
            continue
        if isinstance(f, (E.BVar, E.Not)):  # not interpreted: dropped (the case is weaker)
            stack.append((atoms, rest, True))
            continue
        if f.has_ite:
            merged = _merge_pieces(f, rest)
            if merged is not None:
                stack.append((atoms, merged, weak))
                continue
            mm = minmax_rewrite(f, rest)
            if mm is not None:
                stack.append((atoms, (mm,) + rest, weak))
                continue
            c = _split_condition(f)
            # (the condition may occur negated too: -x >= 0 and x > 0; assign replaces both)
            both = [tuple(assign(g, c, val) for g in (f,) + rest) for val in (False, True)]
            if all(a is b for a, b in zip(*both)):
                # the same formulas either way (e.g. the two pieces of a softplus): no split
                stack.append((atoms, both[1], weak))
                continue
            for sub, cond in zip(both, (E.not_(c), c)):
                stack.append((atoms, (cond,) + sub, weak))
            continue
        new = atoms_of(f)
        if new is None:
            stack.append((atoms, rest, True))
            continue
        have = {a.id for a in atoms}
        new = tuple(a for a in new if a is not E.TRUE and a.id not in have)
        if any(a is E.FALSE for a in new):
            continue
        if new and not feasible(atoms + new):
            continue
        stack.append((atoms + new, rest, weak))
