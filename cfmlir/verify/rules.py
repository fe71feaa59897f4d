"""Verifying one transformer rule: build the world, evaluate the rule, discharge its obligations.

Algorithm (for rule ``op -> body`` of a transformer, bounds ``K``, ``M``):

1. :func:`cfmlir.verify.operators.bind` makes ``curr`` and its ``prev`` neurons and the concrete
   output ``y`` (e.g. ``y = sum w_i x_i + b``);
2. the body is evaluated symbolically (:class:`~cfmlir.verify.evaluator.SymbolicEvaluator`); reading
   a member of a neuron makes its shape and adds the premise that the shape's constraints hold for it;
   reading a parameter gives a value quantified over its domain (:mod:`cfmlir.verify.params`);
3. the new shape (the body's values, converted to the member types) is ``curr``'s, and every shape
   constraint becomes an obligation: ``premises => constraint(curr)`` with ``curr``'s value ``y``;
   traverses add their own obligations (invariant initially true, preserved by one step);
4. each conjunct of each obligation is refuted: ``premises and assumptions and guard and not goal``
   is ``unsat`` (the obligation is valid), ``sat`` (a point: replayed through the reference
   interpreter, :mod:`cfmlir.verify.replay`, and shown only if the interpreter confirms it) or
   ``unknown``.  A conjunct that applies sigmoid, tanh, exp or log goes to the delta-complete
   procedure (:mod:`cfmlir.verify.delta`); the others to z3's nlsat (:mod:`cfmlir.verify.solve`).

The rule is ``verified`` when every obligation is valid.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import z3

from cfmlir.syntax import ast
from cfmlir.syntax.unparse import unparse
from cfmlir.verify import errors
from cfmlir.verify import values as S
from cfmlir.verify.errors import Deadline, FragmentError, RuleTimeout
from cfmlir.verify.evaluator import Obligation, SymbolicEvaluator
from cfmlir.verify.infinity import NotExtendedReal, settle
from cfmlir.verify.nonlinear import Nonlinear
from cfmlir.verify.operators import OPERATORS, bind
from cfmlir.verify.params import Params
from cfmlir.verify.semantics import holds
from cfmlir.verify.solve import refute
from cfmlir.verify.world import World

VERIFIED, COUNTEREXAMPLE, UNKNOWN = "verified", "counterexample", "unknown"


@dataclass
class RuleResult:
    transformer: str
    op: str
    status: str
    detail: str = ""
    seconds: float = 0.0
    K: int = 0
    M: int = 0
    obligations: int = 0
    loc: object = None
    extra: dict = field(default_factory=dict)

    def line(self) -> str:
        if self.status == VERIFIED:
            s = f"verified (K={self.K}, M={self.M})"
        elif self.status == COUNTEREXAMPLE:
            s = f"counterexample: {self.detail}"
        else:
            s = f"unknown ({self.detail})"
        return f"{self.transformer}.{self.op}: {s}  [{self.seconds:.2f} s]"


class RuleProblem:
    """Everything about one rule: its world, evaluator, obligations (kept for replay)."""

    def __init__(self, checked, tname: str, rule: ast.Rule, K: int, M: int, deadline: Deadline | None = None):
        self.checked = checked
        self.tname = tname
        self.rule = rule
        self.shape_decl = next(d for d in checked.program.decls if isinstance(d, ast.ShapeDecl))
        self.world = World(checked.members, K, M, deadline)
        self.nl = Nonlinear()
        self.ev = SymbolicEvaluator(checked, self.world, self.nl, holds)
        self.world.constraints_of = self._constraints_of
        if rule.op not in OPERATORS:
            raise FragmentError(rule.loc, f"the operator '{rule.op}'",
                                f"cf-verify knows the concrete semantics of {', '.join(OPERATORS)}")
        self.env, self.curr, self.y = bind(rule.op, self.world, self.nl)
        if checked.params:
            self.ev.params = Params(self.ev, checked.params, rule.op, self.env)
        # curr stands for its concrete output y (in traverse invariants and the new shape's constraints).
        self.curr.value = self.y
        out = self.ev.eval(rule.body, self.env)
        if not isinstance(out, tuple):
            out = (out,)
        order = checked.member_order
        if len(out) != len(order):
            raise FragmentError(rule.loc, f"a rule with {len(out)} values for {len(order)} members")
        self.outputs = {m: self.ev.conv(v, checked.members[m]) for m, v in zip(order, out)}
        self.world.outputs[self.curr] = self.outputs
        self.obligations: list[Obligation] = list(self.ev.obligations)
        for c in self.shape_decl.constraints:
            self.obligations.append(Obligation(f"'{unparse(c)}'", self.ev.eval(c, {"curr": self.curr}), z3.BoolVal(True), c.loc))

    def _constraints_of(self, n: S.SNeuron):
        return z3.And([holds(self.ev.eval(c, {"curr": n})) for c in self.shape_decl.constraints])

    def background(self) -> list:
        return list(self.world.premises) + list(self.nl.facts) + list(self.ev.assumptions)


def conjuncts(f) -> list:
    if z3.is_and(f):
        return [c for a in f.children() for c in conjuncts(a)]
    return [f]


def verify_rule(checked, tname: str, rule: ast.Rule, K: int = 2, M: int = 2, timeout: float = 60.0) -> RuleResult:
    """The verdict on one rule within ``timeout`` seconds, building the problem included (a rule
    whose world is too large to build in time is ``unknown (timeout ...)``)."""
    t0 = time.perf_counter()
    res = RuleResult(tname, rule.op, UNKNOWN, K=K, M=M, loc=rule.loc)
    outer = errors.ACTIVE
    errors.ACTIVE = Deadline(t0 + timeout)
    try:
        return _verify_rule(checked, tname, rule, K, M, timeout, t0, res)
    except RuleTimeout:
        res.status = UNKNOWN
        res.detail = f"timeout after {timeout:g} s" + ("" if res.obligations else " (building the problem)")
        res.seconds = time.perf_counter() - t0
        return res
    finally:
        errors.ACTIVE = outer


def _verify_rule(checked, tname, rule, K, M, timeout, t0, res) -> RuleResult:
    deadline = t0 + timeout
    prob = RuleProblem(checked, tname, rule, K, M, errors.ACTIVE)
    res.obligations = len(prob.obligations)
    background = prob.background()
    premises = list(prob.world.premises) + list(prob.ev.assumptions)
    apps = [(v, z3.Real(f"__app_{i}")) for i, (_, _, v) in enumerate(prob.nl.order)]
    unknown = []
    for ob in prob.obligations:
        if time.perf_counter() >= deadline:
            unknown.append(f"timeout after {timeout:g} s")
            break
        try:  # comparisons with an infinite constant (1.0 / 0.0) decided in the extended reals
            goal = settle(holds(ob.goal))
            ob.guard, ob.assume = settle(ob.guard), [settle(a) for a in ob.assume]
        except NotExtendedReal as exc:
            raise FragmentError(ob.loc, str(exc)) from None
        # A conjunction is valid when each conjunct is (each is a smaller problem).
        for part in conjuncts(goal):
            if _nonlinear(part, ob, apps):
                verdict, found = discharge_nonlinear(prob, ob, premises, part, deadline)
                if verdict == UNKNOWN and str(found).startswith(OUTSIDE):  # z3 with the facts instead
                    verdict, found = discharge_polynomial(prob, ob, background, part, deadline)
            else:
                verdict, found = discharge_polynomial(prob, ob, background, part, deadline)
            if verdict == COUNTEREXAMPLE:
                res.status, res.detail = COUNTEREXAMPLE, found.text
                res.extra = found.data
                res.seconds = time.perf_counter() - t0
                return res
            if verdict == UNKNOWN:
                unknown.append(f"{ob.what}: {found}")
                break
    res.seconds = time.perf_counter() - t0
    if unknown:
        res.detail = "; ".join(unknown)
    else:
        res.status = VERIFIED
    return res


def _nonlinear(part, ob, apps) -> bool:
    """Does the claim (its goal, guard or assumptions) apply sigmoid/tanh/exp/log?  (Substituting
    the applications' reals changes a formula iff it mentions one; z3 does it in C.)"""
    if not apps:
        return False
    return any(not z3.substitute(f, *apps).eq(f) for f in [part, ob.guard, *ob.assume])


def discharge_polynomial(prob, ob, background, part, deadline):
    """z3's nlsat with case splits (:mod:`cfmlir.verify.solve`); a model is replayed."""
    from cfmlir.verify.replay import confirm

    r, model = refute(background + list(ob.assume) + [ob.guard], z3.Not(part), deadline,
                      integer=prob.ev.takes_floor or prob.rule.op == "Floor")
    if r == "unsat":
        return VERIFIED, None
    if r == "unknown":
        return UNKNOWN, model
    found = confirm(prob, ob, background, part, model, deadline=deadline)
    if found.confirmed:
        return COUNTEREXAMPLE, found
    return UNKNOWN, found.text


#: the start of a delta procedure verdict on a claim it cannot express (z3 alone is tried instead)
OUTSIDE = "outside the procedure"


def discharge_nonlinear(prob, ob, premises, part, deadline):
    """The delta-complete procedure (:mod:`cfmlir.verify.delta`) on the slice of the world the claim
    needs, widened when a candidate point does not extend to a real counterexample."""
    from cfmlir.verify import delta
    from cfmlir.verify.replay import at_point

    why = "no decision"
    for level in (0, 1, 2):
        d = delta.decide(premises + list(ob.assume) + [ob.guard], z3.Not(part), prob.nl.order, deadline, level=level)
        if d.status == delta.UNSAT:
            return VERIFIED, None
        if d.status == delta.UNKNOWN:
            return UNKNOWN, d.detail
        for point in d.points:
            found = at_point(prob, ob, premises, part, point, deadline)
            if found is not None and found.confirmed:
                return COUNTEREXAMPLE, found
            if found is not None:
                why = f"candidate {_fmt_point(point)} not confirmed: {found.text}"
            else:
                why = f"candidate {_fmt_point(point)} does not extend to the whole world"
    return UNKNOWN, why


def _fmt_point(p: dict) -> str:
    return "{" + ", ".join(f"{k}={v:.6g}" for k, v in sorted(p.items())) + "}"
