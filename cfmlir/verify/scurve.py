"""The tangent and chord lemmas of the sigmoid, for one case of an obligation, decided in z3.

A relaxation of an S-curve whose line is a tangent at a free point ``d`` (CROWN's and alpha-CROWN's
lines: ``d`` a parameter) and that is *lifted* to pass an end of the interval is valid by an argument
the cases cannot see: the lifted line lies above the tangent, the tangent above the sigmoid on its
concave side (``x >= 0``), and on the convex side the sigmoid lies below its chord between the
interval's end and 0, which lies below the lifted line.  Each step is a fact about two or three
points of the sigmoid; this module states those facts for every pair and triple of the case's
sigmoid applications and the point 0, and gives them with the case's atoms to z3's nlsat.

The sigmoid applications.  The canonical terms (:mod:`cfmlir.verify.terms`) write ``sigmoid(t)`` as
``inv(1 + exp(-t))`` and ``tanh(t)`` as ``1 - 2 inv(1 + exp(2 t))``: every atom ``inv(1 + exp(a))``
is ``sigma(p)`` at ``p = -a`` (tanh's lines meet the sigmoid at ``-2 t``; ``tanh(t) = 2 sigma(2 t) - 1``
makes tanh's lemmas the sigmoid's).  ``s = sigma(p)`` has ``sigma'(p) = s (1 - s)``; the point 0 has
``s = 1/2``, ``sigma'(0) = 1/4``.

The lemmas (``sigma`` is convex on ``(-inf, 0]``, concave on ``[0, inf)``):

    (T)  p, q <= 0  ==>  sigma(p) >= sigma(q) + sigma'(q) (p - q)      (a tangent lies below, convex side)
         p, q >= 0  ==>  sigma(p) <= sigma(q) + sigma'(q) (p - q)      (above, concave side)
    (C)  a <= t <= b <= 0  ==>  sigma(t) (b - a) <= sigma(a) (b - t) + sigma(b) (t - a)   (below the chord)
         0 <= a <= t <= b  ==>  sigma(t) (b - a) >= sigma(a) (b - t) + sigma(b) (t - a)   (above the chord)

*Proof.*  A differentiable convex function lies above its tangents and below its chords on an
interval where it is convex; mirrored for concave.  ``sigma'' = sigma' (1 - 2 sigma)`` has the sign of
``-p``.  QED.  Every fact holds for the real sigmoid, so ``unsat`` is a proof; ``sat`` or a timeout
prove nothing (the caller goes on).

Example: the lifted tangent ``sigma(l) + sigma'(d) (x - l)`` (its case ``sigma(l) >= T_d(l)``) against
``sigma(x)`` for ``l <= x <= u``, ``0 <= d <= u``: (T) at ``(x, d)`` for ``x >= 0``; for ``x <= 0``,
(C) at ``(l, x, 0)`` and (T) at ``(0, d)``.  The cases alone left it ``unknown``; alpha_deeppoly's
Sigmoid and Tanh rules (CROWN's lines at every tangent point) are verified with it.
"""

from __future__ import annotations

import itertools
import time
from fractions import Fraction

import z3

from cfmlir.verify import expr as E
from cfmlir.verify.abstraction import Abstraction, applications, fn_atoms

HALF = z3.RealVal(Fraction(1, 2))


def sigmoid_points(atoms) -> list[tuple[E.Poly, E.Atom]]:
    """``(p, atom)`` for every ``inv(1 + exp(a))`` atom of ``atoms`` (``sigma(p)``, ``p = -a``), inner
    ones too, in id order."""
    out = []
    for a in fn_atoms(atoms):
        e = _exp_of_one_plus(a.arg) if a.f == "inv" else None
        if e is not None:
            out.append((E.neg(e.arg), a))
    return out


def _exp_of_one_plus(p: E.Poly):
    """``e`` when ``p`` is ``1 + e`` with ``e`` an ``exp`` atom, else ``None``."""
    if len(p.terms) != 2:
        return None
    (m0, c0), (m1, c1) = p.terms
    if m0 == () and c0 == 1 and c1 == 1 and len(m1) == 1 and m1[0][1] == 1:
        a = m1[0][0]
        if isinstance(a, E.Fn) and a.f == "exp":
            return a
    return None


def lemmas(points, signs) -> list:
    """(T) and (C) for the z3 pairs ``(p, sigma(p))`` of ``points`` and the point 0, on the side
    ``signs[i]`` (-1: ``p <= 0``, +1: ``p >= 0``) of each point: the instances whose points all lie
    on one side, unconditional but for the chord's order."""
    pts = list(zip(points, signs)) + [((z3.RealVal(0), HALF), 0)]
    out = []
    for side in (-1, 1):
        on = [pt for pt, sg in pts if sg in (0, side)]
        below = side < 0  # convex side: the function lies above tangents, below chords
        for i, (p, sp) in enumerate(on):
            for j, (q, sq) in enumerate(on):
                if i != j:
                    tangent = sq + sq * (1 - sq) * (p - q)
                    out.append(sp >= tangent if below else sp <= tangent)
        for i, (a, sa) in enumerate(on):
            for j, (t, st) in enumerate(on):
                for k, (b, sb) in enumerate(on):
                    if len({i, j, k}) == 3:
                        chord = sa * (b - t) + sb * (t - a)
                        fact = st * (b - a) <= chord if below else st * (b - a) >= chord
                        out.append(z3.Implies(z3.And(a <= t, t <= b), fact))
    return out


def unsat(atoms, timeout: float) -> bool:
    """Are ``atoms`` unsatisfiable with the exp facts of :mod:`cfmlir.verify.abstraction` and the
    lemmas above?  Each sigmoid is a real ``s`` with ``s (1 + exp(a)) = 1`` (nlsat decides the lemmas
    over plain reals much faster than over the division the canonical term writes), in an abstraction
    of its own; one query per side of each sigmoid point (the lemmas of a side are unconditional,
    which nlsat decides much faster than implications).  ``False`` without a sigmoid, or when one
    side is not refuted in time."""
    pts = sigmoid_points(atoms)
    if not pts:
        return False
    deadline = time.perf_counter() + timeout
    ab = Abstraction()
    sig = {a.id: z3.Real(f"__sigma{a.id}") for _p, a in pts}
    for _p, a in pts:
        ab.name_atom(a, sig[a.id])
    fs = [ab.term(a) for a in atoms]
    points = [(ab.term(p), sig[a.id]) for p, a in pts]
    links = []
    for _p, a in pts:
        v = sig[a.id]
        links += [v > 0, v < 1, v * ab.term(a.arg) == 1]
    base = ab.facts(applications(atoms), True) + links + fs
    for signs in itertools.product((-1, 1), repeat=len(points)):
        left = deadline - time.perf_counter()
        if left <= 0:
            return False
        s = z3.SolverFor("QF_NRA")
        s.set("timeout", max(1, int(left * 1000)))
        s.add(*base)
        s.add(*(p <= 0 if sg < 0 else p >= 0 for (p, _), sg in zip(points, signs)))
        s.add(*lemmas(points, signs))
        if s.check() != z3.unsat:
            return False
    return True
