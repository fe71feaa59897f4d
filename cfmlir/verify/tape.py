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

    # -- intervals ------------------------------------------------------------------------------
    def enclose(self, box: dict) -> list:
        atoms: list = [None] * len(self.code)
        sums: list = [None] * len(self._sum_code)
        done = [False] * len(self._sum_code)

        def poly(i):
            if done[i]:
                return sums[i]
            acc = (0.0, 0.0)
            for civ, _cf, fac in self._sum_code[i]:
                t = civ
                for s, k in fac:
                    av = atom(s)
                    t = I.mul(t, av if k == 1 else I.power(av, k))
                acc = I.add(acc, t)
            sums[i], done[i] = acc, True
            return acc

        def atom(s):
            r = atoms[s]
            if r is not None:
                return r
            op, d = self.code[s]
            if op == "var":
                r = box.get(d, I.WHOLE)
            else:
                enc = _ENCLOSE.get(op)
                r = I.WHOLE if enc is None else enc(poly(d))
            atoms[s] = r
            return r

        return [poly(i) for i in self.sums]

    # -- points ---------------------------------------------------------------------------------
    def value(self, point: dict) -> list[float]:
        atoms: list = [None] * len(self.code)
        sums: dict = {}

        def poly(i):
            r = sums.get(i)
            if r is not None:
                return r
            try:
                acc = []
                for _civ, cf, fac in self._sum_code[i]:
                    t = cf
                    for s, k in fac:
                        t *= atom(s) ** k if k != 1 else atom(s)
                    acc.append(t)
                r = math.fsum(acc)
            except (OverflowError, ValueError, ZeroDivisionError):
                r = math.nan
            sums[i] = r
            return r

        def atom(s):
            r = atoms[s]
            if r is not None:
                return r
            op, d = self.code[s]
            try:
                if op == "var":
                    r = point[d]
                else:
                    val = _VALUE.get(op)
                    r = math.nan if val is None else val(poly(d))
            except (OverflowError, ValueError):
                r = math.nan
            atoms[s] = r
            return r

        return [poly(i) for i in self.sums]


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
