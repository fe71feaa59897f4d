"""The exact part of the decision procedure: atoms with ``exp``/``log`` replaced by reals, decided by z3.

``unsat(atoms)`` writes the atoms for z3 (:func:`cfmlir.verify.terms.to_z3`) with every ``exp(a)``
/ ``log(a)`` (innermost first) a fresh real constrained by true facts -- those of
:mod:`cfmlir.verify.nonlinear` (positivity, ``e^a >= 1 + a``, the sign of ``a``, monotonicity and
mean-value bounds between every two applications, the log's bounds) and the exponential's
functional equation where the arguments line up (``exp(a) * exp(b) = 1`` when ``a + b = 0``,
``= exp(c)`` when ``a + b = c`` for another argument ``c``, within the float64 enclosure of
``e^(a+b)`` when ``a + b`` is another constant) -- and asks z3's nlsat whether the result is
satisfiable.  ``unsat`` is a proof (every fact holds for the real functions); ``sat`` or a timeout
prove nothing.  With sigmoid and tanh written through ``exp`` (:mod:`cfmlir.verify.terms`), what
remains is polynomial arithmetic in the values ``exp(a)``: identities such as
``sigma' = sigma (1 - sigma)`` are decided exactly here.

Example: ``[inv(1 + exp(-x)) - 1/2 > 0, -x >= 0]`` is unsat (``x <= 0`` gives ``exp(-x) >= 1``).
"""

from __future__ import annotations

import itertools

import z3

from cfmlir.verify import expr as E
from cfmlir.verify import interval as I
from cfmlir.verify.nonlinear import Nonlinear
from cfmlir.verify.terms import to_z3

_counter = itertools.count()


def abstract(nodes):
    """``(z3 terms of nodes with exp/log replaced by reals, facts about those reals)``."""
    nl = Nonlinear(prefix=f"abs{next(_counter)}_")
    exps: list[tuple] = []  # (native argument, z3 real)

    def fn_atom(a, conv):
        v = nl.apply(a.f, conv(a.arg))
        if a.f == "exp":
            exps.append((a.arg, v))
        return v

    memo: dict = {}
    out = [to_z3(n, fn_atom, memo) for n in nodes]
    return out, list(nl.facts) + _exp_identities(exps)


def _exp_identities(exps) -> list:
    facts = []
    by_arg = {a.id: v for a, v in exps}
    for (a, va), (b, vb) in itertools.combinations_with_replacement(exps, 2):
        s = E.add(a, b)
        q = s.constant()
        if q is not None:
            if q == 0:
                facts.append(va * vb == 1)
            else:
                lo, hi = I.exp((float(q), float(q)))
                lo, hi = I.down(lo), I.up(hi)  # the float of q is within an ulp of q
                facts += [va * vb >= z3.RealVal(lo), va * vb <= z3.RealVal(hi)]
        elif s.id in by_arg:
            facts.append(va * vb == by_arg[s.id])
    return facts


def unsat(atoms, timeout: float = 0.5) -> bool:
    """Are ``atoms`` (formulas) unsatisfiable for the real ``exp``/``log``?"""
    fs, facts = abstract(atoms)
    s = z3.SolverFor("QF_NRA")
    s.set("timeout", max(1, int(timeout * 1000)))
    s.add(*facts)
    s.add(*fs)
    return s.check() == z3.unsat
