"""An exact lemma for ``sin`` and ``cos``: a value below (above) both ends needs an extremum between them.

Branch and prune cannot cover the Sin/Cos rules' claim "no extremum in ``[l, u]``, so
``min(sin l, sin u) <= sin x``": it is tight at ``x = l`` and ``l, u`` range over about 3e5
half-periods.  This module refutes such a case in z3 with one lemma per ordered triple of
applications ``f(a), f(t), f(b)`` of one function ``f`` in ``{sin, cos}``:

    a <= t <= b  and  f(t) < f(a)  and  f(t) < f(b)   ==>   a < m < b  for a minimum  m of f,
    a <= t <= b  and  f(t) > f(a)  and  f(t) > f(b)   ==>   a < m < b  for a maximum  m of f,

where the minima are ``m = (2k - 1/2) pi`` (sin), ``(2k + 1) pi`` (cos) and the maxima
``(2k + 1/2) pi`` (sin), ``2k pi`` (cos), ``k`` an integer.

*Proof.*  ``f`` is continuous on ``[a, b]``, so it attains its minimum there at some ``m``.  As
``f(m) <= f(t) < min(f(a), f(b))``, ``m`` is neither ``a`` nor ``b``: ``a < m < b``, and ``m`` is an
interior local minimum of the differentiable ``f``, so ``f'(m) = 0``.  For ``sin``: ``cos m = 0``
gives ``sin m = +-1``; ``sin m = 1`` is the global maximum, and a local minimum there would make
``sin`` constant near ``m`` (it is not: ``sin`` is analytic and not constant), so ``sin m = -1``,
``m = (2k - 1/2) pi``.  For ``cos``: ``sin m = 0`` gives ``cos m = +-1``, likewise ``cos m = -1``,
``m = (2k + 1) pi``.  The maximum case is the same with ``-f``.  QED.

``pi`` enters only through the 50-digit rational bounds ``PI_LO < pi < PI_HI`` of
:mod:`cfmlir.verify.interval`: with ``s = 2k + 1/2`` (etc.), ``m = s pi`` lies in
``[s PI_LO, s PI_HI]`` for ``s >= 0`` and ``[s PI_HI, s PI_LO]`` for ``s < 0`` (linear in ``k``).

The query holds only the case's linear atoms (applications as reals), the range of ``sin``/``cos``,
``floor``'s inequalities ``t - 1 < floor t <= t`` and these lemmas, each with its own witness ``k``.
``k`` is a z3 *real*, not an ``Int`` (mixed-integer branch and bound over ~1e5 periods did not end in
20 s), constrained by facts that hold for the integer witness: the lemma's ``a < m < b`` and, for each
``floor`` application, its maximality ``k <= t  ==>  k <= floor t`` (``floor t`` is the largest
integer ``<= t``).  The true world, with ``k`` the integer of the lemma, satisfies every fact, so
``unsat`` is a proof.  The Sin/Cos rules' ``has_phase`` test is linear in ``l``, ``u`` and a
``floor``, so the query is linear (QF_LRA with a few disjunctions) and z3 decides it in milliseconds
(the lemma in the nonlinear abstraction of :mod:`cfmlir.verify.abstraction`, with its products and
``sin^2 + cos^2 = 1``, was not decided in 20 s).

Example: ``[l <= x, x <= u, sin l > sin x, sin u > sin x, p + c floor((u + e - p)/c) < l - e,
|l|, |u| <= 1e6]`` (the Sin rule's lower bound without a minimum ``p + c K`` in ``[l, u]``) is unsat:
the lemma puts a minimum ``(2k - 1/2) pi`` in ``(l, u)``, so ``k <= (u + e - p)/c`` (``|k| c`` drifts
from ``2 pi |k|`` by < 5e-11 << e), hence ``floor(...) >= k`` and
``p + c floor(...) >= l - e``.
"""

from __future__ import annotations

from fractions import Fraction

import z3

from cfmlir.verify import expr as E
from cfmlir.verify import interval as I
from cfmlir.verify.abstraction import Abstraction, applications

#: the extrema of each function, ``m = (2k + offset) pi``: (offset of the minima, offset of the maxima)
EXTREMA = {
    "sin": (Fraction(-1, 2), Fraction(1, 2)),
    "cos": (Fraction(1), Fraction(0)),
}


def extremum_between(k, offset: Fraction, a, b):
    """z3: some ``m`` in ``[s PI_LO, s PI_HI]`` (ordered by the sign of ``s = 2k + offset``, the
    enclosure of ``s pi``) lies strictly between ``a`` and ``b``."""
    s = 2 * k + z3.RealVal(offset)
    lo, hi = z3.RealVal(I.PI_LO), z3.RealVal(I.PI_HI)
    return z3.If(s >= 0, z3.And(s * hi > a, s * lo < b), z3.And(s * lo > a, s * hi < b))


def lemmas(apps, var, arg, fresh, witness=None) -> list:
    """The lemma of the module docstring for every ordered triple of applications of one function
    (``var``/``arg``: an application's real and its argument's z3 term; ``fresh()``: a new real
    standing for the lemma's integer ``k``), each with ``floor``'s maximality for that ``k``; and
    ``f(a) = f(b)`` where ``a = b`` for every two applications (a case with ``l = u``).
    ``witness(offset, a, b)``, when given, states the extremum between the applications ``a`` and
    ``b`` instead (trig_chord shares one ``k`` per pair)."""
    floors = [(var(a), arg(a)) for a in apps if a.f == "floor"]

    def own(offset, a, b):
        k = fresh()
        maximal = [z3.Implies(k <= t, k <= v) for v, t in floors]
        return z3.And(extremum_between(k, offset, arg(a), arg(b)), *maximal)

    witness = witness or own

    out = []
    for f, (lo_off, hi_off) in EXTREMA.items():
        fs = [a for a in apps if a.f == f]
        for a in fs:
            for b in fs:
                if a.id != b.id:
                    out.append(z3.Implies(arg(a) == arg(b), var(a) == var(b)))
        for a in fs:
            for t in fs:
                for b in fs:
                    if len({a.id, t.id, b.id}) < 3:
                        continue
                    ta, tt, tb = arg(a), arg(t), arg(b)
                    va, vt, vb = var(a), var(t), var(b)
                    inside = z3.And(ta <= tt, tt <= tb)
                    out.append(z3.Implies(z3.And(inside, vt < va, vt < vb), witness(lo_off, a, b)))
                    out.append(z3.Implies(z3.And(inside, vt > va, vt > vb), witness(hi_off, a, b)))
    return out


def _range_facts(apps, var, arg) -> list:
    out = []
    for a in apps:
        v = var(a)
        if a.f in EXTREMA:
            out += [v >= -1, v <= 1]
        elif a.f == "floor":
            t = arg(a)
            out += [v <= t, v > t - 1]
    return out


def linear(p) -> bool:
    """Is the polynomial ``p`` linear in variables and ``sin``/``cos``/``floor`` applications of linear
    arguments (so linear for z3 once the applications are reals)?"""
    for mono, _c in p.terms:
        if len(mono) > 1 or any(k != 1 for _a, k in mono):
            return False
        for a, _k in mono:
            if isinstance(a, E.Fn) and (a.f not in _LINEAR_FNS or not linear(a.arg)):
                return False
            if isinstance(a, E.Ite):
                return False
    return True


_LINEAR_FNS = ("sin", "cos", "floor")


def unsat(atoms, timeout: float = 0.5, abstraction: Abstraction | None = None) -> bool:
    """Are the :func:`linear` ones of ``atoms`` unsatisfiable with the extremum lemma (module
    docstring)?  ``False`` when they have no two ``sin``/``cos`` applications of one function, or z3
    does not answer ``unsat``.  (Dropping the nonlinear atoms weakens the case: ``unsat`` is still a
    proof, and the query stays linear.)"""
    atoms = [a for a in atoms if isinstance(a, E.Cmp) and linear(a.p)]
    apps = applications(atoms)
    if not any(sum(a.f == f for a in apps) >= 2 for f in EXTREMA):
        return False
    ab = abstraction or Abstraction()
    fs = [ab.term(a) for a in atoms]
    counter = iter(range(1 << 30))

    def fresh():
        return z3.Real(f"__k{next(counter)}")

    s = z3.Solver()
    s.set("timeout", max(1, int(timeout * 1000)))
    s.add(*_range_facts(apps, ab.real, ab.argument))
    s.add(*lemmas(apps, ab.real, ab.argument, fresh))
    s.add(*fs)
    return s.check() == z3.unsat
