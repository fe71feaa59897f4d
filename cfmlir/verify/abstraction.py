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
import math

import z3

from cfmlir.verify import expr as E
from cfmlir.verify import interval as I
from cfmlir.verify.nonlinear import Nonlinear
from cfmlir.verify.terms import to_z3

_counter = itertools.count()


def abstract(nodes, full: bool = True):
    """``(z3 terms of nodes with exp/log replaced by reals, facts about those reals)``; ``full``
    adds the mean-value facts (products of values and argument differences: slower for nlsat)."""
    if full:
        nl = Nonlinear(prefix=f"abs{next(_counter)}_")
    else:
        nl = _Light(prefix=f"abl{next(_counter)}_")
    exps: list[tuple] = []  # (native argument, z3 real)

    def fn_atom(a, conv):
        v = nl.apply(a.f, conv(a.arg))
        if a.f == "exp":
            exps.append((a.arg, v))
        return v

    memo: dict = {}
    out = [to_z3(n, fn_atom, memo) for n in nodes]
    return out, list(nl.facts) + _exp_identities(exps)


class _Light:
    """The cheap facts only: range, sign of the argument, monotonicity between two applications,
    ``e^a >= 1 + a`` and the log's bounds (no mean-value products)."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.facts: list = []
        self.apps: dict[str, list] = {"exp": [], "log": []}
        self._by_id: dict = {}

    def apply(self, name: str, t):
        t = z3.simplify(t)
        key = (name, t.get_id())
        v = self._by_id.get(key)
        if v is not None:
            return v
        v = self._by_id[key] = z3.Real(f"{self.prefix}{name}_{len(self._by_id)}")
        if z3.is_rational_value(t):
            x = float(t.as_fraction())
            iv = I.exp((x, x)) if name == "exp" else I.log((x, x))
            lo, hi = I.down(iv[0]), I.up(iv[1])  # (the float of t is within an ulp of t)
            if math.isfinite(lo):
                self.facts.append(v >= z3.RealVal(lo))
            if math.isfinite(hi):
                self.facts.append(v <= z3.RealVal(hi))
        if name == "exp":
            self.facts += [v > 0, v >= 1 + t, z3.If(t < 0, v < 1, z3.If(t > 0, v > 1, v == 1))]
        else:
            self.facts.append(z3.Implies(t > 0, z3.And(v <= t - 1, v * t >= t - 1,
                                                       z3.If(t < 1, v < 0, z3.If(t > 1, v > 0, v == 0)))))
        for a, va in self.apps[name]:
            guard = (lambda x, y: x < y) if name == "exp" else (lambda x, y: z3.And(x > 0, x < y))
            self.facts += [z3.Implies(a == t, va == v), z3.Implies(guard(a, t), va < v), z3.Implies(guard(t, a), v < va)]
        self.apps[name].append((t, v))
        return v


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


def unsat(atoms, timeout: float = 0.5, full: bool = True) -> bool:
    """Are ``atoms`` (formulas) unsatisfiable for the real ``exp``/``log``?"""
    fs, facts = abstract(atoms, full)
    s = z3.SolverFor("QF_NRA")
    s.set("timeout", max(1, int(timeout * 1000)))
    s.add(*facts)
    s.add(*fs)
    return s.check() == z3.unsat
