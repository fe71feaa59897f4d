"""The exact part of the decision procedure: atoms with ``EXP``/``LOG`` replaced by reals, decided by z3.

``unsat(atoms)`` replaces every application ``EXP(a)`` / ``LOG(a)`` (innermost first) by a fresh real
constrained by true facts -- those of :mod:`cfmlir.verify.nonlinear` (positivity, ``e^a >= 1 + a``,
the sign of ``a``, monotonicity and mean-value bounds between every two applications, the log's
bounds) and the exponential's functional equation where the arguments line up
(``EXP(a) * EXP(b) = 1`` when ``a + b = 0``, ``= EXP(c)`` when ``a + b = c`` for another argument
``c``, within the float64 enclosure of ``e^(a+b)`` when ``a + b`` is another constant) -- and asks
z3's nlsat whether the result is satisfiable.  ``unsat`` is a proof (every fact holds for the real
functions); ``sat`` or a timeout prove nothing.  With sigmoid and tanh written through ``EXP``
(:mod:`cfmlir.verify.terms`), what remains after the abstraction is polynomial arithmetic in the
values ``EXP(a)``: identities such as ``sigma' = sigma (1 - sigma)`` are decided exactly here.

Example: ``[1/(1 + EXP(-1*x)) - 1/2 > 0, -x >= 0]`` is unsat (``x <= 0`` gives ``EXP(-x) >= 1``).
"""

from __future__ import annotations

import itertools

import z3

from cfmlir.verify import interval as I
from cfmlir.verify.nonlinear import Nonlinear
from cfmlir.verify.terms import functions, rational, simp

_counter = itertools.count()


def abstract(terms):
    """``(terms with functions replaced, facts)``."""
    nl = Nonlinear(prefix=f"abs{next(_counter)}_")
    pairs: list[tuple] = []
    seen: set[int] = set()
    for t in terms:
        for app in functions(t):  # children first: inner applications are replaced first
            if app.get_id() in seen:
                continue
            seen.add(app.get_id())
            arg = z3.substitute(app.arg(0), *pairs) if pairs else app.arg(0)
            v = nl.apply("exp" if app.decl().name() == "EXP" else "log", simp(arg))
            pairs.append((app, v))
    out = [z3.substitute(t, *pairs) if pairs else t for t in terms]
    facts = list(nl.facts) + _exp_identities(nl.apps["exp"])
    return out, facts


def _exp_identities(apps) -> list:
    facts = []
    by_arg = {a.get_id(): v for a, v in apps}
    for (a, va), (b, vb) in itertools.combinations_with_replacement(apps, 2):
        s = simp(a + b)
        q = rational(s)
        if q is not None:
            if q == 0:
                facts.append(va * vb == 1)
            else:
                lo, hi = I.exp((float(q), float(q)))
                lo, hi = I.down(lo), I.up(hi)  # the float of q is within an ulp of q
                facts += [va * vb >= z3.RealVal(lo), va * vb <= z3.RealVal(hi)]
        elif s.get_id() in by_arg:
            facts.append(va * vb == by_arg[s.get_id()])
    return facts


def unsat(atoms, timeout: float = 0.5, extra=()) -> bool:
    """Are ``atoms`` (and the z3 formulas ``extra``) unsatisfiable for the real ``exp``/``log``?"""
    terms = [a.g for a in atoms]
    abs_terms, facts = abstract(terms)
    s = z3.SolverFor("QF_NRA")
    s.set("timeout", max(1, int(timeout * 1000)))
    s.add(*facts)
    for a, t in zip(atoms, abs_terms):
        s.add(t > 0 if a.strict else t >= 0)
    s.add(*extra)
    return s.check() == z3.unsat
