"""Boxes: contracting a box by a case's atoms, and branch and prune over boxes (dReal-style).

A *box* maps variable names to intervals (absent: the whole line).  :class:`Region` holds a case's
atoms compiled once (:mod:`cfmlir.verify.tape`) with, for every atom affine in a variable
(``c*v + rest >= 0``), the bound it puts on ``v``.

Algorithm (``Region.contract``): a few rounds of (1) evaluate every atom on the box -- an atom
whose enclosure is below 0 (``<= 0`` for ``> 0``) empties the box; (2) for every affine atom, meet
``v``'s interval with ``-rest/c``'s enclosure on one side.  The result contains every point of the box
that satisfies the atoms (a *contraction*; it may keep points that do not).

Algorithm (``search``, branch and prune): a stack of boxes, starting with the contracted start box.
Pop a box; contract it (empty: pruned); evaluate the atoms at its midpoint in float64 -- all hold:
a *point* (returned); else, if every side is narrower than ``delta`` (relative to the magnitude) it
is a *delta box* (every atom holds on it up to the box's enclosure width: the delta-weakened
problem is satisfiable there), else split it at the widest side (an unbounded side at a finite point
growing geometrically, so tails stay one box) and push both halves, the half nearer 0 on top.
Every box pruned: the atoms are unsatisfiable (a proof, with outward-rounded arithmetic: not
approximate).  The search stops at ``max_boxes`` or the deadline (``unknown``).

Example: the atoms ``x - 1 >= 0, -x*x + 0.5 >= 0`` are pruned at once (``x >= 1`` makes ``x*x >= 1``).
"""

from __future__ import annotations

import math
import time

from cfmlir.verify import interval as I
from cfmlir.verify.tape import const_interval, tape_of
from cfmlir.verify.calculus import affine_in


_AFFINE: dict[int, list] = {}


def _affine_parts(p) -> list:
    """``[(variable name, c, rest)]`` for every variable of ``p`` (``c`` None when ``p`` is not affine in it)."""
    hit = _AFFINE.get(p.id)
    if hit is None:
        hit = []
        for v in sorted(p.vars):
            r = affine_in(p, v)
            hit.append((v, None if r is None else r[0], None if r is None else r[1]))
        if len(_AFFINE) > 50000:
            _AFFINE.clear()
        _AFFINE[p.id] = hit
    return hit


class Region:
    """The atoms of one case, compiled for contraction and point evaluation (tapes cached per atom)."""

    def __init__(self, atoms):
        self.atoms = list(atoms)
        self.tapes = [tape_of([a.p]) for a in self.atoms]
        self.strict = [a.strict for a in self.atoms]
        self.bounds = []
        names: set[str] = set()
        for a in self.atoms:
            for name, c, rest in _affine_parts(a.p):
                names.add(name)
                if c is not None:
                    self.bounds.append((name, const_interval(c), tape_of([rest])))
        self.names = sorted(names)

    def enclose(self, box: dict) -> list:
        return [t.enclose(box)[0] for t in self.tapes]

    def contract(self, box: dict, rounds: int = 4):
        box = dict(box)
        for _ in range(rounds):
            for t, strict in zip(self.tapes, self.strict):
                iv = t.enclose(box)[0]
                if iv[1] < 0 or (strict and iv[1] <= 0):
                    return None
            changed = False
            for name, c, rest in self.bounds:
                # c*v + rest >= 0:  v >= -rest/c (c > 0),  v <= -rest/c (c < 0)
                b = I.div(I.neg(rest.enclose(box)[0]), c)
                old = box.get(name, I.WHOLE)
                new = (max(old[0], b[0]), old[1]) if c[0] > 0 else (old[0], min(old[1], b[1]))
                if new[0] > new[1]:
                    return None
                if new != old:
                    if abs(new[0] - old[0]) + abs(new[1] - old[1]) > 1e-12 * (1 + abs(new[0]) + abs(new[1])) \
                            or math.isinf(old[0]) or math.isinf(old[1]):
                        changed = True
                    box[name] = new
            if not changed:
                break
        return box

    def values(self, point: dict) -> list:
        return [t.value(point)[0] for t in self.tapes]

    def holds_at(self, point: dict) -> bool:
        vals = self.values(point)
        for v, strict in zip(vals, self.strict):
            if math.isnan(v) or v < 0 or (strict and v <= 0):
                return False
        return True

    def margin_at(self, point: dict) -> float:
        """The smallest atom value at ``point`` (``-inf`` when one is not a number)."""
        vals = self.values(point)
        return min((-math.inf if math.isnan(v) else v) for v in vals) if vals else math.inf


def sample(region: Region, rng, box: dict | None = None, tries: int = 8):
    """A random point of ``region`` or ``None``: variables are fixed one at a time, each inside its
    contracted interval narrowed by the affine atoms whose other variables are already fixed
    (``l <= x <= u`` puts ``x`` between the values drawn for ``l`` and ``u``)."""
    b = region.contract({}) if box is None else box
    if b is None:
        return None
    for _ in range(tries):
        point: dict = {}
        names = list(region.names)
        rng.shuffle(names)
        for k in names:
            lo, hi = b.get(k, I.WHOLE)
            for name, c, rest in region.bounds:
                if name != k or not rest.names <= point.keys():
                    continue
                (r,) = rest.value(point)
                if r != r:
                    continue
                w = -r / c[0]
                if c[0] > 0:
                    lo = max(lo, w)
                else:
                    hi = min(hi, w)
            if lo > hi:
                break
            scale = rng.choice((0.01, 0.1, 1.0, 3.0, 10.0))
            if lo == -math.inf and hi == math.inf:
                x = rng.uniform(-scale, scale)
            elif lo == -math.inf:
                x = hi - rng.expovariate(1.0 / scale) if rng.random() < 0.9 else hi
            elif hi == math.inf:
                x = lo + rng.expovariate(1.0 / scale) if rng.random() < 0.9 else lo
            else:
                r = rng.random()
                x = lo if r < 0.1 else hi if r < 0.2 else rng.uniform(lo, hi)
            point[k] = x
        else:
            if region.holds_at(point):
                return point
    return None


def _split_point(lo: float, hi: float) -> float:
    if lo == -math.inf and hi == math.inf:
        return 0.0
    if lo == -math.inf:
        return hi - max(1.0, abs(hi))
    if hi == math.inf:
        return lo + max(1.0, abs(lo))
    return I.mid((lo, hi))


def _small(iv, delta: float) -> bool:
    lo, hi = iv
    if math.isinf(lo) or math.isinf(hi):
        return False
    return hi - lo <= delta * max(1.0, abs(lo), abs(hi))


class Outcome:
    EMPTY, POINT, DELTA, UNKNOWN = "empty", "point", "delta", "unknown"

    def __init__(self, kind: str, point=None, box=None, boxes: int = 0, why: str = ""):
        self.kind, self.point, self.box, self.boxes, self.why = kind, point, box, boxes, why


def search(region: Region, box: dict | None = None, *, deadline: float, max_boxes: int = 20000,
           delta: float = 1e-9) -> Outcome:
    """Branch and prune for a point of ``region`` (see the module docstring)."""
    names = region.names
    start = {n: (box or {}).get(n, I.WHOLE) for n in names}
    stack = [start]
    n = 0
    last_delta = None
    while stack:
        if n >= max_boxes:
            return Outcome(Outcome.UNKNOWN, box=last_delta, boxes=n, why=f"{max_boxes} boxes")
        if n % 64 == 0 and time.perf_counter() > deadline:
            return Outcome(Outcome.UNKNOWN, box=last_delta, boxes=n, why="deadline")
        b = stack.pop()
        n += 1
        b = region.contract(b)
        if b is None:
            continue
        p = {k: I.mid(v) for k, v in b.items()}
        if region.holds_at(p):
            return Outcome(Outcome.POINT, point=p, box=b, boxes=n)
        wide = [(k, v) for k, v in b.items() if not _small(v, delta)]
        if not wide:
            last_delta = b
            continue
        # the widest side (an unbounded one first)
        k, v = max(wide, key=lambda kv: math.inf if math.isinf(kv[1][0]) or math.isinf(kv[1][1]) else kv[1][1] - kv[1][0])
        s = _split_point(*v)
        lo_half, hi_half = dict(b), dict(b)
        lo_half[k], hi_half[k] = (v[0], s), (s, v[1])
        near, far = (lo_half, hi_half) if abs(_split_point(*lo_half[k])) <= abs(_split_point(*hi_half[k])) else (hi_half, lo_half)
        stack.append(far)
        stack.append(near)
    if last_delta is not None:
        return Outcome(Outcome.DELTA, box=last_delta, boxes=n)
    return Outcome(Outcome.EMPTY, boxes=n)
