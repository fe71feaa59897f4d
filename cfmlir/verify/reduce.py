"""Exact arguments for tight obligations: monotonicity, convexity and splitting along one variable.

A relaxation line that touches the function (a tangent, a chord's end point) makes the difference
``T`` exactly 0 somewhere in the region, so no enclosure of ``T`` on a box around that point is
below 0 and branch and prune alone never ends.  ``Prover.nonpos(T, strict, atoms)`` proves
``T <= 0`` (``T < 0`` when ``strict``) at every point satisfying ``atoms`` by, in order:

1. the enclosure of ``T`` on the atoms' contracted box (:mod:`cfmlir.verify.boxes`);
2. z3 on the abstraction (:mod:`cfmlir.verify.abstraction`): exact for algebraic identities such
   as ``T(x := l) = 0`` or a chord slope times the width being the rise;
3. *monotonicity*: for a variable ``v`` that every atom bounds affinely (``v >= w_i``, ``v <= W_j``,
   so each fibre along ``v`` is an interval), if ``dT/dv <= 0`` on the region (proved recursively,
   along ``v`` only) then ``T`` is largest at the lower end: prove ``T(v := w_i)`` on the region with
   ``v := w_i`` and ``w_i >= w_k`` (one case per lower bound, the end of the fibre; a strict bound
   contributes its closure, where ``T`` is continuous: every denominator and log argument of
   ``T(v := w_i)`` is checked to stay away from 0); ``dT/dv >= 0``: the upper end;
4. *convexity*: ``d2T/dv2 >= 0`` on the region: ``T`` is largest at an end of the fibre, prove both;
5. *splitting* along ``v`` at the points where ``T``'s pieces change shape: where an argument of
   ``EXP``/``LOG`` that is affine in ``v`` is 0 (the sigmoid's and tanh's inflection) or equals
   another application's argument (a tangent point ``x = (l + u)/2``); both halves must be proved;
6. branch and prune on the region and ``T > 0`` (a small budget): every box pruned is a proof.

Every step is sound; none assumes a bounded variable (ends come from the atoms, never from a box).
The procedure is incomplete: a failure is not a counterexample (the caller searches for one).

Example: ``sigma(l) + sigma'(l) (x - l) - sigma(x) <= 0`` for ``l <= x <= u`` with ``sigma'(l) <=
sigma'(u)``: step 3 along ``x`` needs ``sigma'(l) - sigma'(x) <= 0``, which step 5 splits at ``x = 0``
into ``x <= 0`` (its derivative ``-sigma''(x) <= 0`` by step 2, so ``x := l`` gives 0) and ``x >= 0``
(increasing, so ``x := u`` gives ``sigma'(l) - sigma'(u) <= 0``, an atom); then ``x := l`` gives 0.
"""

from __future__ import annotations

import random
import time

import z3

from cfmlir.verify import abstraction
from cfmlir.verify import interval as I
from cfmlir.verify.boxes import Outcome, Region, sample, search
from cfmlir.verify.calculus import NotDifferentiable, derivative
from cfmlir.verify.cases import Atom, make_atom
from cfmlir.verify.tape import tape_of
from cfmlir.verify.terms import affine_in, functions, mentions, rational, simp, subst, variables, walk


class Timeout(Exception):
    pass


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
        self._z3: dict = {}
        self._points: dict = {}
        self._regions: dict = {}
        self._keep: list = []  # keeps memo keys' terms alive (z3 ids are reused after collection)

    # -- helpers --------------------------------------------------------------------------------
    def check_time(self) -> None:
        if time.perf_counter() > self.deadline:
            raise Timeout()

    def region(self, atoms) -> Region:
        key = frozenset(a.key for a in atoms)
        r = self._regions.get(key)
        if r is None:
            r = self._regions[key] = Region(atoms)
            self._keep.append(atoms)
        return r

    def box(self, atoms):
        return self.region(atoms).contract({})

    def z3_unsat(self, atoms) -> bool:
        key = frozenset(a.key for a in atoms)
        hit = self._z3.get(key)
        if hit is not None:
            return hit
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise Timeout()
        r = self._z3[key] = abstraction.unsat(atoms, timeout=min(self.z3_timeout, left))
        self._keep.append(atoms)
        return r

    # -- the prover -----------------------------------------------------------------------------
    def nonpos(self, T, strict: bool, atoms: tuple, depth: int = 0, along=None, order: int = 0) -> bool:
        """``T <= 0`` (``< 0``) on every point of ``atoms`` (see the module docstring)."""
        self.check_time()
        self.calls += 1
        T = simp(T)
        q = rational(T)
        if q is not None:
            return q < 0 if strict else q <= 0
        key = (T.get_id(), strict, frozenset(a.key for a in atoms), None if along is None else along.get_id(), depth, order)
        if key in self._memo:
            return self._memo[key]
        self._keep.append(T)
        self._memo[key] = False  # (a recursive call on the same problem fails)
        ok = self._nonpos(T, strict, atoms, depth, along, order)
        self._memo[key] = ok
        return ok

    def _nonpos(self, T, strict, atoms, depth, along, order) -> bool:
        box = self.box(atoms)
        if box is None:
            return True
        (iv,) = tape_of([T]).enclose(box)
        if iv[1] < 0 or (iv[1] <= 0 and not strict):
            return True
        viol = Atom(T, not strict)  # T > 0 (T >= 0): the negation of the claim
        if self.falsified(T, atoms):
            return False
        if self.z3_unsat(tuple(atoms) + (viol,)):
            return True
        if depth >= self.max_depth:
            return False
        for v in self._candidates(T, atoms, along):
            if self._along(T, strict, atoms, depth, v, box, along, order):
                return True
        if depth <= 1 and self.box_budget:
            out = search(self.region(tuple(atoms) + (viol,)), box, deadline=self.deadline,
                         max_boxes=self.box_budget)
            if out.kind == Outcome.EMPTY:
                return True
        return False

    def points(self, atoms, n: int = 16) -> list:
        """Random points of ``atoms`` (made once per region)."""
        key = frozenset(a.key for a in atoms)
        pts = self._points.get(key)
        if pts is None:
            region = self.region(atoms)
            pts = []
            for _ in range(n):
                p = sample(region, self.rng, tries=2)
                if p is not None:
                    pts.append(p)
            self._points[key] = pts
        return pts

    def falsified(self, T, atoms) -> bool:
        """A point of ``atoms`` where ``T`` is clearly positive in float64 (the claim is false)."""
        tape = tape_of([T])
        free = [n for n in tape.names if n not in self.region(atoms).names]
        for p in self.points(atoms):
            if free:
                p = {**p, **{n: self.rng.gauss(0.0, 3.0) for n in free}}
            (t,) = tape.value(p)
            if t == t and t > 1e-7 * (1 + max(abs(x) for x in p.values())):
                return True
        return False

    def _candidates(self, T, atoms, along):
        if along is not None:
            return [along] if mentions(T, along) else []
        vs = variables(T)
        inner = {s.get_id() for f in functions(T) for s in variables(f.arg(0))}
        return sorted(vs, key=lambda v: (v.get_id() not in inner, v.decl().name()))

    def bounds(self, atoms, v):
        """``(lower, upper)`` lists of ``(w, atom)`` when every atom mentioning ``v`` is affine in it."""
        lo, hi = [], []
        for a in atoms:
            if not mentions(a.g, v):
                continue
            r = affine_in(a.g, v)
            if r is None:
                return None
            c, rest = r
            w = simp(-rest / z3.RealVal(c))
            (lo if c > 0 else hi).append((w, a))
        return lo, hi

    def _along(self, T, strict, atoms, depth, v, box, along, order) -> bool:
        b = self.bounds(atoms, v)
        if b is None:
            return False
        lo, hi = b
        d = depth + 1
        o = order + 1 if along is not None else 1
        if o <= self.max_order:
            try:
                D = derivative(T, v)
            except NotDifferentiable:
                return False
            # 3. monotone
            if self.nonpos(D, False, atoms, d, along=v, order=o):
                return self.at_ends(T, strict, atoms, d, v, lo, lower=True)
            if self.nonpos(-D, False, atoms, d, along=v, order=o):
                return self.at_ends(T, strict, atoms, d, v, hi, lower=False)
        # 4. convex
        if lo and hi and o + 1 <= self.max_order:
            try:
                D2 = derivative(D, v)
            except NotDifferentiable:
                D2 = None
            if D2 is not None and self.nonpos(-D2, False, atoms, d, along=v, order=o + 1):
                if self.at_ends(T, strict, atoms, d, v, lo, lower=True) and \
                        self.at_ends(T, strict, atoms, d, v, hi, lower=False):
                    return True
        # 5. split along v
        for w in self.split_points(T, v, atoms, box):
            left = make_atom(w - v, False)
            right = make_atom(v - w, False)
            if left is True or right is True or left is False or right is False:
                continue
            if all(self.nonpos(T, strict, tuple(atoms) + (half,), d, along=along, order=order) for half in (left, right)):
                return True
        return False

    def split_points(self, T, v, atoms, box) -> list:
        have = {a.g.get_id() for a in atoms}
        vbox = box.get(v.decl().name(), I.WHOLE)
        out, seen = [], set()
        fs = functions(T)
        for f in fs:
            r = affine_in(f.arg(0), v)
            if r is None:
                continue
            c, rest = r
            targets = [z3.RealVal(0)] + [g.arg(0) for g in fs if g.decl().name() == f.decl().name() and not mentions(g.arg(0), v)]
            for t in targets:
                w = simp((t - rest) / z3.RealVal(c))
                if w.get_id() in seen or mentions(w, v):
                    continue
                seen.add(w.get_id())
                if simp(w - v).get_id() in have or simp(v - w).get_id() in have:
                    continue
                (wi,) = tape_of([w]).enclose(box)
                if wi[1] <= vbox[0] or wi[0] >= vbox[1]:
                    continue  # not inside v's range
                out.append(w)
        return out

    def at_ends(self, T, strict, atoms, depth, v, ends, lower: bool) -> bool:
        """``T(v := w) <= 0`` for every candidate end ``w`` of the fibre (the largest lower / smallest upper bound)."""
        if not ends:
            return False  # unbounded on that side: no end to reduce to
        others = tuple(a for a in atoms if not mentions(a.g, v))
        vatoms = [a for a in atoms if mentions(a.g, v)]
        for i, (w, _a) in enumerate(ends):
            new = list(others)
            empty = False
            for j, (w2, _b) in enumerate(ends):
                if j != i:
                    at = make_atom(w - w2 if lower else w2 - w, False)
                    if at is False:
                        empty = True
                    elif at is not True:
                        new.append(at)
            for a in vatoms:  # the closure of the fibre's atoms at v = w
                at = make_atom(subst(a.g, v, w), False)
                if at is False:
                    empty = True
                elif at is not True:
                    new.append(at)
            if empty:
                continue
            new = tuple(_dedupe(new))
            Tw = subst(T, v, w)
            if not self.continuous(Tw, new):
                return False
            if not self.nonpos(Tw, strict, new, depth):
                return False
        return True

    def continuous(self, T, atoms) -> bool:
        """Every denominator of ``T`` is nonzero and every log argument positive on ``atoms``."""
        risky = []
        for s in walk(T):
            if z3.is_app_of(s, z3.Z3_OP_DIV):
                risky.append((s.arg(1), False))
            elif z3.is_app(s) and s.num_args() == 1 and s.decl().name() == "LOG":
                risky.append((s.arg(0), True))
        if not risky:
            return True
        box = self.box(atoms)
        if box is None:
            return True
        ivs = tape_of([t for t, _ in risky]).enclose(box)
        for (t, positive), iv in zip(risky, ivs):
            if iv[0] > 0 or (not positive and iv[1] < 0):
                continue
            if rational(t) is not None:
                continue
            if self.z3_unsat(tuple(atoms) + (Atom(simp(-t), False),)):
                continue  # t > 0
            if not positive and self.z3_unsat(tuple(atoms) + (Atom(t, False),)):
                continue  # t < 0
            return False
        return True


def _dedupe(atoms):
    seen, out = set(), []
    for a in atoms:
        if a.key not in seen:
            seen.add(a.key)
            out.append(a)
    return out
