"""Terms compiled once into a straight-line program, evaluated on boxes (intervals) or points (floats).

The decision procedure evaluates the same few terms on thousands of boxes; walking z3 ASTs each
time would dominate.  :class:`Tape` lists the distinct subterms of its terms children-first as
``(op, argument slots, datum)`` and runs them in order:

* :meth:`Tape.enclose` with a box ``{variable name: (lo, hi)}`` gives an interval per term that
  contains every value the term takes on the box (:mod:`cfmlir.verify.interval`, outward rounded);
* :meth:`Tape.value` with a point ``{variable name: float}`` gives float64 values (``nan`` where a
  division by zero or the log of a number <= 0 happens).

Example: ``Tape([x*x - 1]).enclose({"x": (-1.0, 2.0)})`` is ``[(-1.0..., 3.0...)]``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import z3

from cfmlir.verify import interval as I
from cfmlir.verify.terms import is_fun, is_var, walk


def const_interval(q: Fraction):
    f = float(q)
    if Fraction(f) == q:
        return (f, f)
    return (f, I.up(f)) if Fraction(f) < q else (I.down(f), f)


_TAPES: dict = {}


def tape_of(terms) -> "Tape":
    """The tape of ``terms`` (cached: the prover evaluates the same terms many times)."""
    key = tuple(t.get_id() for t in terms)
    hit = _TAPES.get(key)
    if hit is None or any(not a.eq(b) for a, b in zip(hit.terms, terms)):
        if len(_TAPES) > 20000:
            _TAPES.clear()
        hit = _TAPES[key] = Tape(terms)
    return hit


class Tape:
    def __init__(self, terms):
        self.terms = list(terms)
        slot: dict[int, int] = {}
        self.code: list[tuple] = []
        self.names: set[str] = set()
        for t in self.terms:
            for s in walk(t):
                if s.get_id() in slot:
                    continue
                slot[s.get_id()] = len(self.code)
                self.code.append(self._op(s, slot))
        self.out = [slot[t.get_id()] for t in self.terms]

    def _op(self, s, slot):
        args = tuple(slot[c.get_id()] for c in s.children())
        if is_var(s):
            self.names.add(s.decl().name())
            return ("var", (), s.decl().name())
        if z3.is_rational_value(s):
            q = Fraction(s.numerator_as_long(), s.denominator_as_long())
            return ("const", (), (const_interval(q), float(q)))
        if is_fun(s):
            return ("exp" if s.decl().name() == "EXP" else "log", args, None)
        k = s.decl().kind()
        if k == z3.Z3_OP_ADD:
            return ("add", args, None)
        if k == z3.Z3_OP_SUB:
            return ("sub", args, None)
        if k == z3.Z3_OP_UMINUS:
            return ("neg", args, None)
        if k == z3.Z3_OP_MUL:
            return ("mul", args, None)
        if k == z3.Z3_OP_DIV:
            return ("div", args, None)
        if k == z3.Z3_OP_TO_REAL:
            return ("id", args, None)
        if k == z3.Z3_OP_POWER:
            n = s.arg(1)
            if z3.is_rational_value(n) and n.as_fraction().denominator == 1 and n.as_fraction() >= 0:
                return ("pow", args[:1], int(n.as_fraction()))
        raise ValueError(f"cannot evaluate {s.decl().name()} ({s})")

    # -- intervals ------------------------------------------------------------------------------
    def enclose(self, box: dict) -> list:
        v: list = [None] * len(self.code)
        for i, (op, a, d) in enumerate(self.code):
            if op == "var":
                r = box.get(d, I.WHOLE)
            elif op == "const":
                r = d[0]
            elif op == "add":
                r = v[a[0]]
                for j in a[1:]:
                    r = I.add(r, v[j])
            elif op == "sub":
                r = v[a[0]]
                for j in a[1:]:
                    r = I.sub(r, v[j])
            elif op == "neg":
                r = I.neg(v[a[0]])
            elif op == "mul":
                if len(a) == 2 and a[0] == a[1]:
                    r = I.sqr(v[a[0]])
                else:
                    r = v[a[0]]
                    for j in a[1:]:
                        r = I.mul(r, v[j])
            elif op == "div":
                r = I.div(v[a[0]], v[a[1]])
            elif op == "pow":
                r = I.power(v[a[0]], d)
            elif op == "exp":
                r = I.exp(v[a[0]])
            elif op == "log":
                r = I.log(v[a[0]])
            else:  # id
                r = v[a[0]]
            v[i] = r
        return [v[o] for o in self.out]

    # -- points ---------------------------------------------------------------------------------
    def value(self, point: dict) -> list[float]:
        v: list = [0.0] * len(self.code)
        for i, (op, a, d) in enumerate(self.code):
            try:
                if op == "var":
                    r = point[d]
                elif op == "const":
                    r = d[1]
                elif op == "add":
                    r = math.fsum(v[j] for j in a)
                elif op == "sub":
                    r = v[a[0]]
                    for j in a[1:]:
                        r -= v[j]
                elif op == "neg":
                    r = -v[a[0]]
                elif op == "mul":
                    r = 1.0
                    for j in a:
                        r *= v[j]
                elif op == "div":
                    r = v[a[0]] / v[a[1]] if v[a[1]] != 0 else math.nan
                elif op == "pow":
                    r = v[a[0]] ** d
                elif op == "exp":
                    r = math.exp(v[a[0]]) if v[a[0]] < 709.0 else math.inf
                elif op == "log":
                    r = math.log(v[a[0]]) if v[a[0]] > 0 else math.nan
                else:
                    r = v[a[0]]
            except (OverflowError, ValueError):
                r = math.nan
            v[i] = r
        return [v[o] for o in self.out]
