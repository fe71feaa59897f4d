"""The decision procedure for obligations with ``sigmoid``, ``tanh``, ``exp`` or ``log`` (delta-complete).

z3 alone, given only facts about these functions, times out on the S-shaped and exponential
relaxations.  ``decide(formulas, order, deadline)`` decides the satisfiability of the conjunction
``formulas`` (an obligation's premises, guard and negated goal) for the *real* functions.

Algorithm:

1. *Translate* the formulas into the procedure's expressions (:mod:`cfmlir.verify.expr`), the
   applications' fresh reals into terms over ``exp``/``log`` (:mod:`cfmlir.verify.terms`), and drop
   the facts about them (the true functions replace them).
2. *Slice*: keep the conjuncts whose variables are among the negated goal's (level 0; level ``k``
   adds the conjuncts sharing a variable with the kept ones, ``k`` times).  Dropping conjuncts
   weakens the problem: unsat still proves the obligation; a point must be replayed on the whole
   world (:mod:`cfmlir.verify.replay`), and the caller retries with a higher level when it is not.
3. With ``sin``/``cos`` in the claim: the *whole* conjunction, conditionals and all, in linear z3
   with the chord and extremum lemmas (:mod:`cfmlir.verify.trig_chord`); ``unsat`` ends here (a
   proof), anything else goes on to the cases.
4. The whole conjunction, conditionals as z3 ``If``, in the nonlinear abstraction
   (:mod:`cfmlir.verify.abstraction`) for at most :data:`WHOLE_S` seconds: z3 splits the
   conditionals lazily where the cases would enumerate them (zid's Elu zonotope claim: 271 cases).
5. *Cases* (:mod:`cfmlir.verify.cases`): every ``If`` (``min``, ``abs``, a rule's conditional)
   split away, infeasible partial cases pruned by box contraction; every case is a conjunction of
   smooth atoms ``g >= 0`` / ``g > 0``.
6. Each case is *refuted* exactly, by z3 on its abstraction (:mod:`cfmlir.verify.abstraction`), with
   the sigmoid's tangent and chord lemmas (:mod:`cfmlir.verify.scurve`: CROWN's lifted tangents) or,
   for one atom with a function in it, by proving its negation on the others
   (:mod:`cfmlir.verify.reduce`: monotonicity, convexity, splitting, branch and prune).
7. The cases left are *searched* by branch and prune (:mod:`cfmlir.verify.boxes`) for a point where
   every atom holds in float64 (a candidate counterexample, replayed by the caller), down to boxes of
   relative width ``delta``; a box that narrow on which no atom is refuted is a delta-witness.

Verdicts: ``unsat`` (a proof: exact arithmetic in z3, outward-rounded interval arithmetic, symbolic
derivatives; no tolerance), ``sat`` with candidate points (not yet a counterexample), ``unknown``
(the deadline, or a delta-witness box: the problem weakened by the box's enclosure width is
satisfiable, which the float64 replay could not confirm -- a violation below the replay's tolerance).

Example: DeepPoly's sigmoid lower line, negated goal ``sig_lower(x) > sigma(x)``, gives 12 cases,
each refuted (``unsat``) in well under a second.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from cfmlir.verify import expr as E
from cfmlir.verify import trig_chord
from cfmlir.verify.boxes import Outcome, Region, search
from cfmlir.verify.cases import TooManyCases, cases
from cfmlir.verify.reduce import Prover, Timeout
from cfmlir.verify.terms import Translator, Unsupported

UNSAT, SAT, UNKNOWN = "unsat", "sat", "unknown"
#: seconds for z3 on the whole conjunction before the cases (step 4)
WHOLE_S = 3.0


@dataclass
class Decision:
    status: str
    points: list = field(default_factory=list)  # candidate points {variable name: float}
    detail: str = ""
    cases: int = 0
    open_cases: int = 0


def conjuncts(fs) -> list:
    out = []
    for f in fs:
        for g in (f.parts if isinstance(f, E.And) else (f,)):
            if g is not E.TRUE:
                out.append(g)
    return out


def sliced(formulas, goal, level: int) -> list:
    """The conjuncts of ``formulas`` relevant to ``goal`` (see step 2)."""
    parts = conjuncts(formulas)
    keep = set(goal.vars)
    for _ in range(level):
        grown = set(keep)
        for f in parts:
            if f.vars & keep:
                grown |= f.vars
        keep = grown
    return [f for f in parts if f.vars <= keep] + [goal]


def _feasible(atoms) -> bool:
    return Region(atoms).contract({}) is not None


def _components(atoms) -> list[list]:
    """The atoms grouped by shared variables (a case is unsat iff some group is)."""
    groups: list[tuple[set, list]] = []
    for a in atoms:
        ns = set(a.p.vars)
        hit = [g for g in groups if g[0] & ns]
        merged = (ns, [a])
        for g in hit:
            merged[0].update(g[0])
            merged[1][:0] = g[1]
            groups.remove(g)
        groups.append(merged)
    return [g[1] for g in groups]


def decide(premises, goal, order, deadline: float, *, level: int = 0, delta: float = 1e-9,
           z3_timeout: float = 0.2) -> Decision:
    """Is ``premises and goal`` (z3 formulas of a rule's encoding) satisfiable for the real
    functions?  (see the module docstring)"""
    try:
        tr = Translator(order)
        goal_f = tr.formula(goal)
        prem_f = [tr.formula(f) for f in premises]
    except Unsupported as exc:
        return Decision(UNKNOWN, detail=f"outside the procedure: {exc}")  # (rules.OUTSIDE)
    kept = sliced(prem_f, goal_f, level)
    left = deadline - time.perf_counter()
    if left > 0 and trig_chord.unsat(kept, timeout=0.8 * left):
        return Decision(UNSAT, detail="the chord and extremum lemmas")
    prover = Prover(deadline, z3_timeout=z3_timeout)
    left = deadline - time.perf_counter()
    if left > 0 and WHOLE_S > 0 and prover.abstraction.unsat(kept, timeout=min(WHOLE_S, left / 4), full=True):
        return Decision(UNSAT, detail="the whole conjunction in the abstraction")
    open_cases = []
    n = 0
    try:
        for atoms, _weak in cases(kept, _feasible):
            n += 1
            prover.check_time()
            if prover.extrema_unsat(tuple(atoms)) or prover.z3_unsat(tuple(atoms), full=True):
                continue
            point = witness(prover, atoms)
            if point is not None:  # a clear float64 point of the case: replay it first
                return Decision(SAT, points=[point], cases=n, open_cases=1)
            if not _refuted(prover, atoms):
                open_cases.append(atoms)
    except Timeout:
        return Decision(UNKNOWN, detail="timed out", cases=n, open_cases=len(open_cases))
    except TooManyCases as exc:
        return Decision(UNKNOWN, detail=str(exc), cases=n)
    if not open_cases:
        return Decision(UNSAT, cases=n)
    points, deltas, undecided = [], [], 0
    per_case = max(0.05, (deadline - time.perf_counter()) / (2 * len(open_cases)))
    for atoms in open_cases:
        if time.perf_counter() > deadline:
            undecided += 1
            continue
        out = search(Region(atoms), deadline=min(deadline, time.perf_counter() + per_case), delta=delta)
        if out.kind == Outcome.POINT:
            points.append(out.point)
        elif out.kind == Outcome.DELTA:
            deltas.append(out.box)
        elif out.kind == Outcome.UNKNOWN:
            undecided += 1
    if points:
        return Decision(SAT, points=points, cases=n, open_cases=len(open_cases))
    if deltas:
        box = ", ".join(f"{k} in [{lo:.6g}, {hi:.6g}]" for k, (lo, hi) in sorted(deltas[0].items()))
        return Decision(UNKNOWN, detail=f"delta-sat (relative delta {delta:g}) at {box}", cases=n,
                        open_cases=len(open_cases))
    if not undecided:  # branch and prune emptied every case the prover left
        return Decision(UNSAT, cases=n)
    return Decision(UNKNOWN, detail=f"{undecided} of {n} cases not decided before the limit", cases=n,
                    open_cases=len(open_cases))


def witness(prover: Prover, atoms, margin: float = 1e-7, n: int = 4):
    """A sample point of the case where every atom holds with a clear margin (relative to the
    point's magnitude), else ``None``."""
    region = prover.region(atoms)
    best, best_m = None, 0.0
    for p in prover.points(atoms, n=n):
        scale = 1.0 + max((abs(x) for x in p.values()), default=0.0)
        m = region.margin_at(p) / scale
        if m > margin and m > best_m:
            best, best_m = p, m
    return best


def _refuted(prover: Prover, atoms) -> bool:
    """Is this case unsatisfiable (proved)?"""
    if prover.z3_unsat(tuple(atoms), full=True):
        return True
    if prover.extrema_unsat(tuple(atoms)):
        return True
    if prover.scurve_unsat(tuple(atoms)):
        return True
    for comp in _components(atoms):
        targets = [a for a in reversed(comp) if a.p.fns]  # the negated goal's atoms come last
        for a in targets:
            rest = tuple(b for b in comp if b is not a)
            # a: p > 0 (p >= 0) is refuted by p <= 0 (p < 0) on the rest
            if prover.nonpos(a.p, not a.strict, rest):
                return True
    return False
