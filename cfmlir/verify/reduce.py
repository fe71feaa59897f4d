"""Exact arguments for tight obligations: monotonicity, convexity and splitting along one variable.

A relaxation line that touches the function (a tangent, a chord's end point) makes the difference
``T`` exactly 0 somewhere in the region, so no enclosure of ``T`` on a box around that point is
below 0 and branch and prune alone never ends.  ``Prover.nonpos(T, strict, atoms)`` proves
``T <= 0`` (``T < 0`` when ``strict``) at every point satisfying ``atoms`` by, in order:

1. the enclosure of ``T`` on the atoms' contracted box (:mod:`cfmlir.verify.boxes`);
2. z3 on the abstraction (:mod:`cfmlir.verify.abstraction`): exact for algebraic identities such
   as ``T(x := l) = 0`` or a chord slope times the width being the rise;
3. *monotonicity* (only where ``T`` is continuous along ``v``: no ``inv``/``log`` argument depending
   on ``v`` reaches 0): for a variable ``v``, on the atoms that bound it affinely (``v >= w_i``,
   ``v <= W_j``, so each fibre along ``v`` is an interval) and those without ``v`` (the others are
   dropped: a weaker region), if ``dT/dv <= 0`` on the region (proved recursively,
   along ``v`` only) then ``T`` is largest at the lower end: prove ``T(v := w_i)`` on the region with
   ``v := w_i`` and ``w_i >= w_k`` (one case per lower bound, the end of the fibre; a strict bound
   contributes its closure, where ``T`` is continuous: every ``inv`` and ``log`` argument of
   ``T(v := w_i)`` is checked to stay away from 0); ``dT/dv >= 0``: the upper end;
4. *convexity*: ``d2T/dv2 >= 0`` on the region: ``T`` is largest at an end of the fibre, prove both;
5. *splitting* along ``v`` at the points where ``T``'s pieces change shape: where an argument of
   ``EXP``/``LOG`` that is affine in ``v`` is 0 (the sigmoid's and tanh's inflection) or equals
   another application's argument (a tangent point ``x = (l + u)/2``); both halves must be proved;
6. branch and prune on the region and ``T > 0`` (a small budget, when ``T``'s variables are bounded):
   every box pruned is a proof.

Every step is sound; none assumes a bounded variable (ends come from the atoms, never from a box).
The procedure is incomplete: a failure is not a counterexample (the caller searches for one).

Example: ``sigma(l) + sigma'(l) (x - l) - sigma(x) <= 0`` for ``l <= x <= u`` with ``sigma'(l) <=
sigma'(u)``: step 3 along ``x`` needs ``sigma'(l) - sigma'(x) <= 0``, which step 5 splits at ``x = 0``
into ``x <= 0`` (its derivative ``-sigma''(x) <= 0`` by step 2, so ``x := l`` gives 0) and ``x >= 0``
(increasing, so ``x := u`` gives ``sigma'(l) - sigma'(u) <= 0``, an atom); then ``x := l`` gives 0.
"""

from __future__ import annotations

import math
import random
import time

from cfmlir.verify import abstraction
from cfmlir.verify import expr as E
from cfmlir.verify import interval as I
from cfmlir.verify import scurve
from cfmlir.verify import trig_extrema
from cfmlir.verify.boxes import Outcome, Region, sample, search
from cfmlir.verify.calculus import NotDifferentiable, affine_in, derivative
from cfmlir.verify.tape import tape_of


class Timeout(Exception):
    pass


def _key(atoms) -> frozenset:
    return frozenset(a.id for a in atoms)


class Prover:
    def __init__(self, deadline: float, *, max_depth: int = 7, max_order: int = 2, z3_timeout: float = 0.2,
                 box_budget: int = 300):
        self.deadline = deadline
        self.max_depth = max_depth
        self.max_order = max_order
        self.z3_timeout = z3_timeout
        self.box_budget = box_budget
        self.calls = 0
        self.rng = random.Random(0)
        self._memo: dict = {}
        self.abstraction = abstraction.Abstraction()
        self._z3: dict = {}
        self._points: dict = {}
        self._boxes: dict = {}
        self._regions: dict = {}

    # -- helpers --------------------------------------------------------------------------------
    def check_time(self) -> None:
        if time.perf_counter() > self.deadline:
            raise Timeout()

    def region(self, atoms) -> Region:
        key = _key(atoms)
        r = self._regions.get(key)
        if r is None:
            r = self._regions[key] = Region(atoms)
        return r

    def box(self, atoms):
        key = _key(atoms)
        if key not in self._boxes:
            self._boxes[key] = self.region(atoms).contract({})
        return self._boxes[key]

    def z3_unsat(self, atoms, full: bool = False) -> bool:
        """z3 on the abstraction (:mod:`cfmlir.verify.abstraction`): the cheap facts inside the
        recursion, all of them (``full``) for a whole case."""
        return self._cached((_key(atoms), full), lambda left: self.abstraction.unsat(
            list(atoms), timeout=min(self.z3_timeout, left), full=full))

    def scurve_unsat(self, atoms) -> bool:
        """The sigmoid's tangent and chord lemmas (:mod:`cfmlir.verify.scurve`), for a whole case."""
        return self._cached((_key(atoms), "scurve"), lambda left: scurve.unsat(list(atoms), timeout=min(1.0, left)))

    def extrema_unsat(self, atoms) -> bool:
        """The ``sin``/``cos`` extremum lemma in linear z3
        (:mod:`cfmlir.verify.trig_extrema`), for a whole case."""
        return self._cached((_key(atoms), "extrema"), lambda left: trig_extrema.unsat(
            list(atoms), timeout=min(1.0, left), abstraction=self.abstraction))

    def _cached(self, key, query) -> bool:
        """``query(seconds left)``, once per ``key``; :class:`Timeout` past the deadline."""
        hit = self._z3.get(key)
        if hit is not None:
            return hit
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise Timeout()
        r = self._z3[key] = query(left)
        return r

    # -- the prover -----------------------------------------------------------------------------
    def nonpos(self, T, strict: bool, atoms: tuple, depth: int = 0, along=None, order: int = 0) -> bool:
        """``T <= 0`` (``< 0``) on every point of ``atoms`` (see the module docstring)."""
        self.check_time()
        self.calls += 1
        q = T.constant()
        if q is not None:
            return q < 0 if strict else q <= 0
        key = (T.id, strict, _key(atoms), along, depth, order)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # (a recursive call on the same problem fails)
        ok = self._nonpos(T, strict, tuple(atoms), depth, along, order)
        self._memo[key] = ok
        return ok

    def _nonpos(self, T, strict, atoms, depth, along, order) -> bool:
        box = self.box(atoms)
        if box is None:
            return True
        (iv,) = tape_of([T]).enclose(box)
        if iv[1] < 0 or (iv[1] <= 0 and not strict):
            return True
        viol = E.cmp(T, not strict)  # T > 0 (T >= 0): the negation of the claim
        if self.falsified(T, atoms):
            return False
        if self.z3_unsat(atoms + (viol,)):
            return True
        if depth >= self.max_depth:
            return False
        for v in self._candidates(T, along, atoms):
            if self._along(T, strict, atoms, depth, v, box, along, order):
                return True
        if depth <= 1 and self.box_budget and all(
                not (math.isinf(box.get(v, I.WHOLE)[0]) or math.isinf(box.get(v, I.WHOLE)[1])) for v in T.vars):
            out = search(self.region(atoms + (viol,)), box, deadline=self.deadline, max_boxes=self.box_budget)
            if out.kind == Outcome.EMPTY:
                return True
        return False

    def points(self, atoms, n: int = 12) -> list:
        """Random points of ``atoms`` (``n`` tries, made once per region and extended on demand)."""
        key = _key(atoms)
        pts, tries = self._points.get(key, ([], 0))
        if tries < n:
            region = self.region(atoms)
            box = self.box(atoms)
            for _ in range(n - tries if box is not None else 0):
                p = sample(region, self.rng, box, tries=2)
                if p is not None:
                    pts.append(p)
            self._points[key] = (pts, n)
        return pts

    def falsified(self, T, atoms) -> bool:
        """A point of ``atoms`` where ``T`` is clearly positive in float64 (the claim is false)."""
        tape = tape_of([T])
        free = [n for n in tape.names if n not in self.region(atoms).names]
        for p in self.points(atoms):
            if free:
                p = {**p, **{n: self.rng.gauss(0.0, 3.0) for n in free}}
            (t,) = tape.value(p)
            if t == t and t > 1e-7 * (1 + max((abs(x) for x in p.values()), default=0.0)):
                return True
        return False

    def _candidates(self, T, along, atoms):
        if along is not None:
            return [along] if along in T.vars else []
        inner = set()
        for f in T.fns:
            inner |= f.arg.vars

        def sides(v):
            _kept, lo, hi = self.bounds(atoms, v)
            return bool(lo) + bool(hi)

        # first the variables T is affine in (eliminated in one step, Fourier-Motzkin-like), then
        # those bounded on both sides (their fibre is an interval with two ends), then those inside
        # the functions' arguments
        return sorted(T.vars, key=lambda v: (affine_in(T, v) is None, -sides(v), v not in inner, v))

    def bounds(self, atoms, v):
        """``(atoms kept, lower, upper)``: the atoms without those that mention ``v`` other than
        affinely (dropping atoms weakens the region: a proof on it is a proof), and the bounds
        ``(w, atom)`` on ``v`` of the others (``v >= w`` / ``v <= w``)."""
        lo, hi, kept = [], [], []
        for a in atoms:
            if v not in a.p.vars:
                kept.append(a)
                continue
            r = affine_in(a.p, v)
            if r is None:
                continue
            kept.append(a)
            c, rest = r
            w = E.scale(rest, -1 / c)
            (lo if c > 0 else hi).append((w, a))
        return tuple(kept), lo, hi

    def _along(self, T, strict, atoms, depth, v, box, along, order) -> bool:
        atoms, lo, hi = self.bounds(atoms, v)
        if not self.continuous(T, atoms, v):
            return False  # a pole or a log of a non-positive number on some fibre: no argument along v
        d = depth + 1
        o = order + 1 if along is not None else 1
        D = None
        if o <= self.max_order:
            try:
                D = derivative(T, v)
            except NotDifferentiable:
                return False
            # 3. monotone
            if self.nonpos(D, False, atoms, d, along=v, order=o):
                return self.at_ends(T, strict, atoms, d, v, lo, lower=True)
            if self.nonpos(E.neg(D), False, atoms, d, along=v, order=o):
                return self.at_ends(T, strict, atoms, d, v, hi, lower=False)
        # 4. convex
        if D is not None and lo and hi and o + 1 <= self.max_order:
            try:
                D2 = derivative(D, v)
            except NotDifferentiable:
                D2 = None
            if D2 is not None and self.nonpos(E.neg(D2), False, atoms, d, along=v, order=o + 1):
                if self.at_ends(T, strict, atoms, d, v, lo, lower=True) and \
                        self.at_ends(T, strict, atoms, d, v, hi, lower=False):
                    return True
        # 5. split along v
        for w in self.split_points(T, v, atoms, box):
            left = E.cmp(E.sub(w, E.var(v)), False)
            right = E.cmp(E.sub(E.var(v), w), False)
            if not (isinstance(left, E.Cmp) and isinstance(right, E.Cmp)):
                continue
            if all(self.nonpos(T, strict, atoms + (half,), d, along=along, order=order) for half in (left, right)):
                return True
        return False

    def split_points(self, T, v, atoms, box) -> list:
        """Where to split along ``v``: where an ``exp``/``log`` argument affine in ``v`` equals another
        application's argument or 0, inside ``v``'s range; best first -- where ``dT/dv`` or
        ``d2T/dv2`` vanishes at the sample points (a tangent point, an inflection)."""
        have = {a.id for a in atoms}
        vbox = box.get(v, I.WHOLE)
        out, seen = [], set()
        fs = sorted((f for f in T.fns if f.f in ("exp", "log")), key=lambda f: f.id)
        for f in fs:
            r = affine_in(f.arg, v)
            if r is None:
                continue
            c, rest = r
            targets = [g.arg for g in fs if g.f == f.f and v not in g.arg.vars] + [E.ZERO]
            for t in targets:
                w = E.scale(E.sub(t, rest), 1 / c)
                if w.id in seen or v in w.vars:
                    continue
                seen.add(w.id)
                half = E.cmp(E.sub(w, E.var(v)), False)
                if isinstance(half, E.Cmp) and (half.id in have or E.not_(half).id in have):
                    continue
                (wi,) = tape_of([w]).enclose(box)
                if wi[1] <= vbox[0] or wi[0] >= vbox[1]:
                    continue  # not inside v's range
                out.append(w)
        if len(out) > 1:
            out.sort(key=lambda w: self._flatness(T, v, w, atoms))
        return out

    def _flatness(self, T, v, w, atoms) -> float:
        """How far ``dT/dv`` and ``d2T/dv2`` at ``v = w`` are from 0 on the sample points (smaller: a better split)."""
        try:
            D = derivative(T, v)
            D2 = derivative(D, v)
        except NotDifferentiable:
            return float("inf")
        best = float("inf")
        for Dk in (D, D2):
            tape = tape_of([E.subst_var(Dk, v, w)])
            worst = 0.0
            for p in self.points(atoms)[:6]:
                (x,) = tape.value(p)
                worst = max(worst, abs(x) if x == x else float("inf"))
            best = min(best, worst)
        return best

    def at_ends(self, T, strict, atoms, depth, v, ends, lower: bool) -> bool:
        """``T(v := w) <= 0`` for every candidate end ``w`` of the fibre (the largest lower / smallest upper bound)."""
        if not ends:
            return False  # unbounded on that side: no end to reduce to
        others = tuple(a for a in atoms if v not in a.p.vars)
        vatoms = [a for a in atoms if v in a.p.vars]
        for i, (w, _a) in enumerate(ends):
            new = list(others)
            empty = False
            for j, (w2, _b) in enumerate(ends):
                if j != i:
                    at = E.cmp(E.sub(w, w2) if lower else E.sub(w2, w), False)
                    if at is E.FALSE:
                        empty = True
                    elif at is not E.TRUE:
                        new.append(at)
            for a in vatoms:  # the closure of the fibre's atoms at v = w
                at = E.cmp(E.subst_var(a.p, v, w), False)
                if at is E.FALSE:
                    empty = True
                elif at is not E.TRUE:
                    new.append(at)
            if empty:
                continue
            new = tuple(_dedupe(new))
            Tw = E.subst_var(T, v, w)
            if not self.continuous(Tw, new):
                return False
            if not self.nonpos(Tw, strict, new, depth):
                return False
        return True

    def continuous(self, T, atoms, v: str | None = None) -> bool:
        """Every ``inv`` argument of ``T`` is nonzero, every ``log`` argument positive and every ``floor``
        argument inside one integer step on ``atoms`` (only those that depend on ``v``, when given: ``T``
        is then continuous along ``v``)."""
        risky, steps = [], []
        seen = set()
        stack = list(T.atoms)
        while stack:
            a = stack.pop()
            if a.id in seen or not isinstance(a, E.Fn):
                continue
            seen.add(a.id)
            if a.f in ("inv", "log") and (v is None or v in a.arg.vars):
                risky.append((a.arg, a.f == "log"))
            if a.f == "floor" and (v is None or v in a.arg.vars):
                steps.append(a.arg)
            stack.extend(a.arg.atoms)
        if not risky and not steps:
            return True
        box = self.box(atoms)
        if box is None:
            return True
        for t in steps:  # an integer part is continuous only where it is constant (one step)
            (iv,) = tape_of([t]).enclose(box)
            if not (math.isfinite(iv[0]) and math.isfinite(iv[1]) and math.floor(iv[0]) == math.floor(iv[1])
                    and iv[1] != math.floor(iv[1])):
                return False
        for t, positive in risky:
            (iv,) = tape_of([t]).enclose(box)
            if iv[0] > 0 or (not positive and iv[1] < 0):
                continue
            if self.z3_unsat(atoms + (E.cmp(E.neg(t), False),)):
                continue  # t > 0
            if not positive and self.z3_unsat(atoms + (E.cmp(t, False),)):
                continue  # t < 0
            return False
        return True


def _dedupe(atoms):
    seen, out = set(), []
    for a in atoms:
        if a.id not in seen:
            seen.add(a.id)
            out.append(a)
    return out
