"""The exact part of the decision procedure: atoms with ``exp``/``log`` replaced by reals, decided by z3.

``Abstraction.unsat(atoms)`` writes the atoms for z3 (:func:`cfmlir.verify.terms.to_z3`) with every
``exp(a)`` / ``log(a)`` a real (one per application, the same in every query of one abstraction, so
z3 terms are built once) constrained by true facts:

* each application: ``exp``: ``e > 0``, ``e >= 1 + a``, ``e < 1`` iff ``a < 0`` (``= 1`` iff ``a = 0``);
  ``log`` (for ``a > 0``): ``g <= a - 1``, ``g a >= a - 1``, the sign of ``a - 1``; a constant argument:
  the float64 enclosure of the value;
* every two applications of one function: equal arguments give equal values, a smaller argument a
  smaller value; with ``full``, the mean-value bounds of :mod:`cfmlir.verify.nonlinear`
  (``e_a (b-a) <= e_b - e_a <= e_b (b-a)``, the log's likewise: products, slower for nlsat);
* ``sin``/``cos``: the range ``[-1, 1]``, ``|sin t| <= |t|``, ``cos t >= 1 - t^2/2``, 1-Lipschitz
  between two applications, ``sin^2 + cos^2 = 1`` at one argument; ``floor``: ``t - 1 < floor t <= t``,
  monotone;
* the exponential's functional equation where the arguments line up: ``exp(a) exp(b) = 1`` when
  ``a + b = 0``, ``= exp(c)`` when ``a + b = c`` for another argument ``c``, within the float64
  enclosure of ``e^(a+b)`` when ``a + b`` is another constant.

z3's nlsat then decides the polynomial remainder: ``unsat`` is a proof (every fact holds for the
real functions); ``sat`` or a timeout prove nothing.  With sigmoid and tanh written through ``exp``
(:mod:`cfmlir.verify.terms`), identities such as ``sigma' = sigma (1 - sigma)`` are decided here.

Example: ``[inv(1 + exp(-x)) - 1/2 > 0, -x >= 0]`` is unsat (``x <= 0`` gives ``exp(-x) >= 1``).
"""

from __future__ import annotations

import math

import z3

from cfmlir.verify import expr as E
from cfmlir.verify import interval as I
from cfmlir.verify.tape import const_interval
from cfmlir.verify.terms import to_z3


class Abstraction:
    def __init__(self):
        self._memo: dict = {}  # node id -> z3 term (shared by every query)
        self._vars: dict[int, object] = {}  # application atom id -> its real
        self._z3arg: dict[int, object] = {}
        self._unary: dict[int, list] = {}
        self._pairs: dict[tuple, list] = {}

    # -- terms ----------------------------------------------------------------------------------
    def _fn_atom(self, a, conv):
        v = self._vars.get(a.id)
        if v is None:
            v = self._vars[a.id] = z3.Real(f"__{a.f}{a.id}")
            self._z3arg[a.id] = conv(a.arg)
        return v

    def term(self, node):
        return to_z3(node, self._fn_atom, self._memo)

    def name_atom(self, a, real) -> None:
        """Write the atom ``a`` (an ``inv`` one: a sigmoid, :mod:`cfmlir.verify.scurve`) as ``real`` in
        every term written after this; the caller states what ``real`` is."""
        self._memo[("atom", a.id)] = real

    def real(self, a):
        """The z3 real of the application atom ``a`` (once a term holding it was written)."""
        return self._vars[a.id]

    def argument(self, a):
        """The z3 term of the application atom ``a``'s argument (likewise)."""
        return self._z3arg[a.id]

    # -- facts ----------------------------------------------------------------------------------
    def _unary_facts(self, a) -> list:
        out = self._unary.get(a.id)
        if out is not None:
            return out
        v, t = self._vars[a.id], self._z3arg[a.id]
        out = []
        q = a.arg.constant()
        if q is not None:
            x = const_interval(q)  # (a rational argument: the floats around it)
            lo, hi = _ENCLOSE[a.f](x)
            if math.isfinite(lo):
                out.append(v >= z3.RealVal(lo))
            if math.isfinite(hi):
                out.append(v <= z3.RealVal(hi))
        out += _UNARY[a.f](v, t)
        self._unary[a.id] = out
        return out

    def _pair_facts(self, a, b, full: bool) -> list:
        key = (a.id, b.id, full)
        out = self._pairs.get(key)
        if out is not None:
            return out
        va, vb, ta, tb = self._vars[a.id], self._vars[b.id], self._z3arg[a.id], self._z3arg[b.id]
        if a.f in _LIPSCHITZ:  # 1-Lipschitz (sin, cos) or monotone (floor), equal at equal arguments
            out = [z3.Implies(ta == tb, va == vb), _LIPSCHITZ[a.f](ta, va, tb, vb)]
            self._pairs[key] = out
            return out
        if a.f == "exp":
            lt = lambda x, y: x < y  # noqa: E731
        else:
            lt = lambda x, y: z3.And(x > 0, x < y)  # noqa: E731
        out = [z3.Implies(ta == tb, va == vb), z3.Implies(lt(ta, tb), va < vb), z3.Implies(lt(tb, ta), vb < va)]
        if full:
            for (x, fx, y, fy) in ((ta, va, tb, vb), (tb, vb, ta, va)):
                w = y - x
                if a.f == "exp":
                    out.append(z3.Implies(x < y, z3.And(fy - fx >= fx * w, fy - fx <= fy * w)))
                else:
                    out.append(z3.Implies(z3.And(x > 0, x < y), z3.And((fy - fx) * y >= w, (fy - fx) * x <= w)))
        if a.f == "exp":
            s = E.add(a.arg, b.arg)
            q = s.constant()
            if q is not None:
                if q == 0:
                    out.append(va * vb == 1)
                else:
                    lo, hi = I.exp(const_interval(q))
                    if math.isfinite(lo) and math.isfinite(hi):
                        out += [va * vb >= z3.RealVal(lo), va * vb <= z3.RealVal(hi)]
        self._pairs[key] = out
        return out

    def facts(self, apps, full: bool) -> list:
        exp_of = {a.arg.id: self._vars[a.id] for a in apps if a.f == "exp"}
        out = []
        for a in apps:
            out += self._unary_facts(a)
        sin_of = {a.arg.id: self._vars[a.id] for a in apps if a.f == "sin"}
        for a in apps:  # sin^2 + cos^2 = 1 at one argument
            if a.f == "cos" and a.arg.id in sin_of:
                out.append(sin_of[a.arg.id] ** 2 + self._vars[a.id] ** 2 == 1)
        for i, a in enumerate(apps):
            for b in apps[i:]:
                if a.f != b.f:
                    continue
                out += self._pair_facts(a, b, full)
                if a.f == "exp":  # exp(a) exp(b) = exp(a + b) when a + b is another argument
                    c = exp_of.get(E.add(a.arg, b.arg).id)
                    if c is not None:
                        out.append(self._vars[a.id] * self._vars[b.id] == c)
        return out

    # -- queries --------------------------------------------------------------------------------
    def unsat(self, atoms, timeout: float = 0.5, full: bool = True) -> bool:
        """Are ``atoms`` (formulas) unsatisfiable for the real ``exp``/``log``?"""
        fs = [self.term(a) for a in atoms]
        apps = applications(atoms)
        s = z3.SolverFor("QF_NRA")
        s.set("timeout", max(1, int(timeout * 1000)))
        s.add(*self.facts(apps, full))
        s.add(*fs)
        return s.check() == z3.unsat


def applications(nodes) -> list:
    """The function applications (``exp``, ``log``, ``sin``, ``cos``, ``floor``) of ``nodes``, inner
    ones too, in id order."""
    return [a for a in fn_atoms(nodes) if a.f in _UNARY]


def fn_atoms(nodes) -> list:
    """Every function atom (``inv`` too) of ``nodes``, inner ones and those inside conditionals, in
    id order."""
    seen: dict[int, object] = {}
    stack = []
    for n in nodes:
        stack.extend(n.p.atoms if isinstance(n, E.Cmp) else n.atoms if isinstance(n, E.Poly) else ())
    while stack:
        a = stack.pop()
        if a.id in seen or not isinstance(a, (E.Fn, E.Ite)):
            continue
        seen[a.id] = a
        if isinstance(a, E.Fn):
            stack.extend(a.arg.atoms)
        else:
            stack.extend(a.a.atoms)
            stack.extend(a.b.atoms)
    return sorted((a for a in seen.values() if isinstance(a, E.Fn)), key=lambda a: a.id)


def _exp_facts(v, t) -> list:
    return [v > 0, v >= 1 + t, z3.If(t < 0, v < 1, z3.If(t > 0, v > 1, v == 1))]


def _log_facts(v, t) -> list:
    return [z3.Implies(t > 0, z3.And(v <= t - 1, v * t >= t - 1, z3.If(t < 1, v < 0, z3.If(t > 1, v > 0, v == 0))))]


def _abs(x):
    return z3.If(x >= 0, x, -x)


#: the facts of one application ``v = f(t)`` (true of the real function)
_UNARY = {
    "exp": _exp_facts,
    "log": _log_facts,
    "sin": lambda v, t: [v >= -1, v <= 1, v <= _abs(t), -v <= _abs(t)],
    "cos": lambda v, t: [v >= -1, v <= 1, v >= 1 - t * t / 2],
    "floor": lambda v, t: [v <= t, v > t - 1],  # (integrality is not used: weaker, still true)
}
#: the facts of two applications of sin, cos (``|f(a) - f(b)| <= |a - b|``) or floor (monotone)
_LIPSCHITZ = {
    "sin": lambda ta, va, tb, vb: z3.And(va - vb <= _abs(ta - tb), vb - va <= _abs(ta - tb)),
    "cos": lambda ta, va, tb, vb: z3.And(va - vb <= _abs(ta - tb), vb - va <= _abs(ta - tb)),
    "floor": lambda ta, va, tb, vb: z3.And(z3.Implies(ta <= tb, va <= vb), z3.Implies(tb <= ta, vb <= va)),
}
_ENCLOSE = {"exp": I.exp, "log": I.log, "sin": I.sin, "cos": I.cos, "floor": I.floor}


def unsat(atoms, timeout: float = 0.5, full: bool = True) -> bool:
    """:meth:`Abstraction.unsat` with a fresh abstraction."""
    return Abstraction().unsat(atoms, timeout, full)
