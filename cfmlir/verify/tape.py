"""Polynomials compiled once into a straight-line program, evaluated on boxes (intervals) or points.

The decision procedure evaluates the same terms on thousands of boxes.  :class:`Tape` lists the
atoms of its polynomials children-first (``exp``/``log``/``inv`` arguments before the atom), then
each polynomial as a sum of monomials over atom slots:

* :meth:`Tape.enclose` with a box ``{variable name: (lo, hi)}`` gives an interval per polynomial
  containing every value it takes on the box (:mod:`cfmlir.verify.interval`, outward rounded;
  a square is evaluated as a square, not as a product of two independent factors);
* :meth:`Tape.value` with a point ``{variable name: float}`` gives float64 values (``nan`` where a
  division by zero or the log of a number <= 0 happens).

``Ite`` atoms are not evaluated (the cases of :mod:`cfmlir.verify.cases` have none): their
enclosure is the whole line.

Example: ``tape_of([x*x - 1]).enclose({"x": (-1.0, 2.0)})`` is ``[(-1.0..., 3.0...)]``.
"""

from __future__ import annotations

import math
from fractions import Fraction

from cfmlir.verify import expr as E
from cfmlir.verify import interval as I


def const_interval(q: Fraction):
    f = float(q)
    if Fraction(f) == q:
        return (f, f)
    return (f, I.up(f)) if Fraction(f) < q else (I.down(f), f)


_TAPES: dict = {}


def tape_of(polys) -> "Tape":
    """The tape of ``polys`` (cached: the prover evaluates the same terms many times)."""
    key = tuple(p.id for p in polys)
    hit = _TAPES.get(key)
    if hit is None:
        if len(_TAPES) > 50000:
            _TAPES.clear()
        hit = _TAPES[key] = Tape(polys)
    return hit


class Tape:
    def __init__(self, polys):
        self.polys = list(polys)
        self.slot: dict[int, int] = {}
        self.code: list[tuple] = []  # (kind, datum) per atom slot
        self.names: set[str] = set()
        self.sums: list[int] = []
        self._sum_code: list[tuple] = []  # per compiled polynomial: ((coeff interval, coeff float, ((slot, power), ...)), ...)
        self._poly_slot: dict[int, int] = {}
        for p in self.polys:
            self.sums.append(self._poly(p))

    def _poly(self, p: E.Poly) -> int:
        hit = self._poly_slot.get(p.id)
        if hit is not None:
            return hit
        monos = []
        for m, c in p.terms:
            monos.append((const_interval(c), float(c), tuple((self._atom(a), k) for a, k in m)))
        self._sum_code.append(tuple(monos))
        i = self._poly_slot[p.id] = len(self._sum_code) - 1
        return i

    def _atom(self, a) -> int:
        hit = self.slot.get(a.id)
        if hit is not None:
            return hit
        if isinstance(a, E.Var):
            self.names.add(a.name)
            op = ("var", a.name)
        elif isinstance(a, E.Fn):
            op = (a.f, self._poly(a.arg))
        else:
            op = ("ite", None)
        self.code.append(op)
        i = self.slot[a.id] = len(self.code) - 1
        return i

    def _run(self, total, atom_value) -> list:
        """The values of the tape's polynomials, each atom and polynomial evaluated once:
        ``total(monomials, atom)`` values a polynomial from :meth:`_poly`'s monomials (``atom(slot)``
        gives an atom's value), ``atom_value(op, datum, poly)`` an atom from its code (``poly(i)``
        gives the value of the compiled polynomial ``i``)."""
        atoms: list = [None] * len(self.code)
        sums: list = [None] * len(self._sum_code)

        def poly(i):
            r = sums[i]
            if r is None:
                r = sums[i] = total(self._sum_code[i], atom)
            return r

        def atom(s):
            r = atoms[s]
            if r is None:
                op, d = self.code[s]
                r = atoms[s] = atom_value(op, d, poly)
            return r

        return [poly(i) for i in self.sums]

    # -- intervals ------------------------------------------------------------------------------
    def enclose(self, box: dict) -> list:
        def total(monos, atom):
            acc = (0.0, 0.0)
            for civ, _cf, fac in monos:
                t = civ
                for s, k in fac:
                    av = atom(s)
                    t = I.mul(t, av if k == 1 else I.power(av, k))
                acc = I.add(acc, t)
            return acc

        def atom_value(op, d, poly):
            if op == "var":
                return box.get(d, I.WHOLE)
            enc = _ENCLOSE.get(op)
            return I.WHOLE if enc is None else enc(poly(d))

        return self._run(total, atom_value)

    # -- points ---------------------------------------------------------------------------------
    def value(self, point: dict) -> list[float]:
        def total(monos, atom):
            try:
                acc = []
                for _civ, cf, fac in monos:
                    t = cf
                    for s, k in fac:
                        t *= atom(s) ** k if k != 1 else atom(s)
                    acc.append(t)
                return math.fsum(acc)
            except (OverflowError, ValueError, ZeroDivisionError):
                return math.nan

        def atom_value(op, d, poly):
            try:
                if op == "var":
                    return point[d]
                val = _VALUE.get(op)
                return math.nan if val is None else val(poly(d))
            except (OverflowError, ValueError):
                return math.nan

        return self._run(total, atom_value)


#: an atom's function -> its interval enclosure (:mod:`cfmlir.verify.interval`, rounded outward)
_ENCLOSE = {"exp": I.exp, "log": I.log, "inv": I.recip, "sin": I.sin, "cos": I.cos, "floor": I.floor}
#: an atom's function -> its float64 value (NaN where the real function has none)
_VALUE = {
    "exp": lambda x: math.exp(x) if x < 709.0 else math.inf,
    "log": lambda x: math.log(x) if x > 0 else math.nan,
    "inv": lambda x: 1.0 / x if x != 0 else math.nan,
    "sin": lambda x: math.sin(x) if math.isfinite(x) else math.nan,
    "cos": lambda x: math.cos(x) if math.isfinite(x) else math.nan,
    "floor": lambda x: float(math.floor(x)) if math.isfinite(x) else math.nan,
}
