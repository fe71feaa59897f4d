"""Discharging one obligation with z3: nlsat with adaptive case splits.

Algorithm: ``refute(background, negated_goal, deadline)`` asks z3's QF_NRA solver (nlsat) whether
``background and negated_goal`` is satisfiable, with a short time limit.  nlsat is complete for
polynomial real arithmetic but handles the ``If`` terms of conditionals (``min``, ``abs``, a rule's
case analysis) poorly, so when it answers ``unknown`` the problem is split on the condition of the
first ``If`` in the negated goal that is not yet decided (``c`` and ``not c``), and each case is
refuted in turn (again splitting on ``unknown``), up to ``max_splits`` levels.  The first ``eager``
conditions are split before any check: nlsat does not always stop at its time limit, and the cases
are usually instant.  A problem that takes an integer part (``floor`` is z3's ``ToInt``: mixed
integer-real arithmetic, on which QF_NRA's nlsat answers ``unknown``) goes to z3's QF_NIRA solver
instead (integer reasoning: ``l <= x => floor(l) <= floor(x)`` at once).  ``unsat`` in every
case: the obligation is valid.  ``sat`` in some case: that model.  Otherwise ``unknown``.
"""

from __future__ import annotations

import time

import z3


def normal(f):
    """Arithmetic as sums of monomials, so that equal polynomials are equal terms."""
    return z3.simplify(f, som=True)


def _ite_conditions(f) -> list:
    seen, out, stack = set(), [], [f]
    while stack:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app_of(t, z3.Z3_OP_ITE):
            c = t.arg(0)
            if not z3.is_true(c) and not z3.is_false(c):
                out.append(c)
        stack.extend(reversed(t.children()))
    # dedupe by term identity, outermost first
    uniq, ids = [], set()
    for c in out:
        if c.get_id() not in ids:
            ids.add(c.get_id())
            uniq.append(c)
    return uniq


def _check(facts, seconds: float, seed: int = 0, logic: str = "QF_NRA"):
    s = z3.SolverFor(logic)
    s.set("timeout", max(1, int(seconds * 1000)))
    s.set("random_seed", seed)
    s.add(*facts)
    r = s.check()
    if r == z3.sat:
        return r, s.model()
    return r, s.reason_unknown() if r == z3.unknown else None


def refute(background: list, negated_goal, deadline: float, *, step: float = 2.0, max_splits: int = 8, eager: int = 4,
           integer: bool = False):
    """``('unsat', None)``, ``('sat', model)`` or ``('unknown', reason)``; ``integer``: the problem
    takes integer parts (``floor``), decided by QF_NIRA."""
    background = [normal(f) for f in background]
    neg = normal(negated_goal)
    conds = _ite_conditions(neg)
    logic = "QF_NIRA" if integer else "QF_NRA"

    def split(cases, depth, c):
        for case in (c, z3.Not(c)):
            r, extra = go(cases + [case], depth + 1)
            if r != "unsat":
                return r, extra
        return "unsat", None

    def go(cases: list, depth: int):
        left = deadline - time.perf_counter()
        if left <= 0:
            return "unknown", "timed out"
        if depth < eager and depth < len(conds):
            return split(cases, depth, conds[depth])
        r, extra = _check(background + cases + [neg], min(step * (1 + depth), left), logic=logic)
        if r == z3.unsat:
            return "unsat", None
        if r == z3.sat:
            return "sat", extra
        decided = {c.get_id() for c in cases} | {c.arg(0).get_id() for c in cases if z3.is_not(c)}
        todo = [c for c in conds if c.get_id() not in decided]
        if depth >= max_splits or not todo:
            # last try with the time that is left for this branch
            left = deadline - time.perf_counter()
            if left > 0 and depth < max_splits:
                r, extra = _check(background + cases + [neg], left, logic=logic)
                if r == z3.unsat:
                    return "unsat", None
                if r == z3.sat:
                    return "sat", extra
            return "unknown", "timed out" if (deadline - time.perf_counter()) <= 0 else f"z3: {extra}"
        return split(cases, depth, todo[0])

    return go([], 0)
