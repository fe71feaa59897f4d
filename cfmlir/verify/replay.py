"""Replaying a z3 model through the reference interpreter: a counterexample is shown only if real.

Algorithm (``confirm``): the model of ``premises and not goal`` is made *robust* first (re-solved
asking for a violation of at least 1, 1e-3 or 1e-6 with every variable in [-100, 100], when possible),
then turned into a concrete world for :mod:`cfmlir.interpreter`: one interpreter neuron per world
neuron, its shape members (float64), ``layer``/``last_layer``/``weight``/``bias`` metadata and the
noise witness.  The rule body is evaluated by the interpreter's own compiled closures; a traverse
returns the value the model gave it (a value satisfying the invariant, which is checked too) -- a
traverse is verified through its invariant, so the counterexample says: *a traverse may return this*.
Then, in exact rational arithmetic on the interpreter's float64 values: every premise must hold (up to
1e-9 relative) and the violated constraint must be violated by more than 1e-9 relative.  A traverse
step obligation is replayed by calling the replacement function in the interpreter.

For rules with ``sigmoid``/``tanh``/``exp`` the model's function values are not the real ones; a
solver-guided search then fixes the applications' arguments (the model's values, then random
points) and their results to the true function values, re-solves and replays (``search``).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from fractions import Fraction

import z3
from z3.z3util import get_vars

from cfmlir.interpreter import values as V
from cfmlir.interpreter.evaluator import CompiledFunc, ExprCompiler, apply_funcval
from cfmlir.interpreter.flow import Runtime
from cfmlir.syntax import ast
from cfmlir.syntax.unparse import unparse
from cfmlir.verify import values as S
from cfmlir.verify.nonlinear import true_value
from cfmlir.verify.operators import BINARY, PIECEWISE_LINEAR, concrete_value
from cfmlir.verify.semantics import holds

TOL = 1e-9


@dataclass
class Found:
    confirmed: bool
    text: str
    data: dict = field(default_factory=dict)


class _Mismatch(Exception):
    pass


# ------------------------------------------------------------------------------------------------
def _q(model, t) -> Fraction:
    v = model.eval(t, model_completion=True)
    if z3.is_algebraic_value(v):
        v = v.approx(30)
    if z3.is_rational_value(v):
        return Fraction(v.numerator_as_long(), v.denominator_as_long())
    raise _Mismatch(f"model value {v}")


def _f(model, t) -> float:
    return float(_q(model, t))


class _Concrete:
    """A model's world as interpreter values."""

    def __init__(self, prob, model):
        self.prob, self.model = prob, model
        self.M = prob.world.M

    def val(self, v):
        m = self.model
        if isinstance(v, z3.BoolRef):
            return z3.is_true(m.eval(v, model_completion=True))
        if S.is_num(v):
            return _f(m, v)
        if isinstance(v, S.SNeuron):
            return V.Neuron(v.id)
        if isinstance(v, S.SNoise):
            return V.Noise(v.index)
        if isinstance(v, S.SPoly):
            return V.Poly(_f(m, v.const), {k.id: _f(m, c) for k, c in v.coeffs.items()})
        if isinstance(v, S.SSym):
            return V.Sym(_f(m, v.const), {k.index: _f(m, c) for k, c in v.coeffs.items()})
        if isinstance(v, (list, tuple)):
            return type(v)(self.val(x) for x in v)
        if isinstance(v, S.SFunc):
            return V.FuncVal(self.funcs[v.name], tuple(self.val(a) for a in v.args))
        if v is None:
            return None
        raise _Mismatch(f"value {v!r}")


class _View:
    def __init__(self, weights, biases, alphas=None):
        self.w, self.b, self.a = weights, biases, alphas or {}

    def weight_of(self, n):
        return self.w[n]

    def bias_of(self, n):
        return self.b.get(n, 0.0)

    def alpha_of(self, n):
        return self.a.get(n, 0.0)


class _ReplayCompiler(ExprCompiler):
    """The interpreter's compiler, except that a traverse returns the model's value for it."""

    def __init__(self, rt, funcs, members, records, conc, events, params=()):
        super().__init__(rt, funcs, members, params)
        self.records, self.conc, self.events = records, conc, events

    def _compile(self, e, slots, memo):
        if not isinstance(e, ast.Traverse):
            return super()._compile(e, slots, memo)
        base = self.compile(e.base, slots, None)
        inv = self.compile(e.invariant, slots, None)
        recs = [(self.conc.val(r.start), self.conc.val(r.result)) for r in self.records if r.node is e]

        def replay_traverse(a):
            s = V.to_poly(base(a))
            self.events.append(("init", e, inv(a)))
            for start, result in recs:
                if _close(start, s):
                    return result
            raise _Mismatch("a traverse started from a value the model does not know")

        return replay_traverse


def _close(p, q) -> bool:
    keys = set(p.coeffs) | set(q.coeffs)
    scale = 1.0 + abs(p.const) + sum(abs(c) for c in p.coeffs.values())
    return abs(p.const - q.const) <= 1e-9 * scale and all(
        abs(p.coeffs.get(k, 0.0) - q.coeffs.get(k, 0.0)) <= 1e-9 * scale for k in keys)


# ------------------------------------------------------------------------------------------------
def _x(c):
    """A float as an exact rational, an infinite one kept as float ``+-inf`` (a rule's ``1.0 / 0.0``:
    comparisons with it are those of the extended reals; ``inf - inf`` is NaN, never a violation)."""
    return c if isinstance(c, float) and math.isinf(c) else Fraction(c)


def _truth(ct, vals, eps, M):
    """``(holds, excess, text)`` of an interpreter constraint in exact arithmetic."""
    if isinstance(ct, bool):
        return ct, Fraction(0 if ct else 1), str(ct)
    if not isinstance(ct, V.Ct):
        raise _Mismatch(f"constraint {ct!r}")
    op = ct.op
    if op in ("and", "or"):
        a, b = _truth(ct.lhs, vals, eps, M), _truth(ct.rhs, vals, eps, M)
        if op == "and":
            return (a[0] and b[0], max(a[1], b[1]), a[2] if not a[0] else b[2])
        return (a[0] or b[0], min(a[1], b[1]), a[2])
    if op == "!":
        h, x, t = _truth(ct.lhs, vals, eps, M)
        return (not h, -x, f"not ({t})")

    def conc(v):
        if isinstance(v, bool):
            raise _Mismatch("bool in a comparison")
        if isinstance(v, V.Neuron):
            return vals[int(v)]
        if isinstance(v, (int, float)):
            return _x(v)
        if isinstance(v, V.Poly):
            return _x(v.const) + sum((_x(c) * vals[k] for k, c in v.coeffs.items()), Fraction(0))
        raise _Mismatch(f"value {v!r} in a comparison")

    if op == "In":
        x = conc(ct.lhs)
        z = V.to_sym(ct.rhs)
        old = _x(z.const) + sum((_x(c) * eps[k] for k, c in z.coeffs.items() if k < M), Fraction(0))
        r = sum((abs(_x(c)) for k, c in z.coeffs.items() if k >= M), Fraction(0))
        excess = abs(x - old) - r
        return excess <= 0, excess, f"|value {float(x):.9g} - Z {float(old):.9g}| > radius {float(r):.9g}"
    a, b = conc(ct.lhs), conc(ct.rhs)
    excess = {"<=": a - b, "<": a - b, ">=": b - a, ">": b - a, "==": abs(a - b), "!=": -abs(a - b)}[op]
    ok = excess < 0 if op in ("<", ">") else excess <= 0
    return ok, excess, f"{float(a):.9g} {op} {float(b):.9g} is false"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _fmt_val(v, names) -> str:
    if isinstance(v, float):
        return _fmt(v)
    if isinstance(v, V.Poly):
        terms = [_fmt(v.const)] + [f"{_fmt(c)}*{names[k]}" for k, c in v.coeffs.items() if c != 0.0]
        return " + ".join(terms)
    if isinstance(v, V.Sym):
        terms = [_fmt(v.const)] + [f"{_fmt(c)}*eps{k}" for k, c in v.coeffs.items() if c != 0.0]
        return " + ".join(terms)
    return repr(v)


# ------------------------------------------------------------------------------------------------
def replay(prob, ob, model) -> Found:
    """Replay one model; ``Found.confirmed`` iff the interpreter shows the violation."""
    checked = prob.checked
    w = prob.world
    conc = _Concrete(prob, model)
    N = len(w.neurons)
    rt = Runtime(checked.member_order)
    rt.num_neurons = N
    rt.store = {m: [None] * N for m in checked.member_order}
    rt.layer_of = [int(round(_f(model, n.meta["layer"]))) if "layer" in n.meta else 0 for n in w.neurons]
    rt.last_layer = [int(round(_f(model, n.meta["last_layer"]))) if "last_layer" in n.meta else 0 for n in w.neurons]
    curr = prob.curr
    weights = {curr.id: [conc.val(x) for x in curr.meta["weight"]]} if "weight" in curr.meta else {}
    rt.view = _View(weights, {curr.id: _f(model, curr.meta["bias"])} if "bias" in curr.meta else {},
                    {curr.id: _f(model, curr.meta["alpha"])} if "alpha" in curr.meta else {})
    rt._noise = w.M + 100
    funcs = {n: CompiledFunc(d, ft) for n, (d, ft) in checked.funcs.items()}
    conc.funcs = funcs
    events: list = []
    comp = _ReplayCompiler(rt, funcs, checked.members, prob.ev.traverses, conc, events, checked.params)
    for n in checked.funcs:
        comp.compile_function(funcs[n])
    reads = prob.ev.params.reads if prob.ev.params is not None else {}
    param_values = {key: _f(model, r.value) for key, r in reads.items()}

    def model_param(name, n, loc):
        return param_values[(name, int(n))]

    rt.param = model_param
    for n in w.shaped:
        for m in checked.member_order:
            rt.store[m][n.id] = conc.val(n._shape[m])
    eps = [_q(model, e) for e in w.eps]
    vals = {n.id: _q(model, n.value) for n in w.neurons if n is not curr}
    names = {n.id: n.name for n in w.neurons}
    constraints = [(c, comp.compile(c, {"curr": 0}, None)) for c in prob.shape_decl.constraints]

    def check_premises():
        for n in w.shaped:
            for c, fn in constraints:
                ok, excess, _ = _truth(fn((V.Neuron(n.id),)), vals, eps, w.M)
                if not ok and excess > Fraction(TOL) * (1 + abs(vals[n.id])):
                    raise _Mismatch(f"the model's premise '{unparse(c)}' of {n.name} does not survive float64 rounding")
        _check_params(prob, model, comp, reads, param_values, vals, conc)

    def world_text():
        parts = []
        for n in w.shaped:
            mem = ", ".join(f"{m}={_fmt_val(rt.store[m][n.id], names)}" for m in checked.member_order)
            parts.append(f"{n.name}: value {_fmt(float(vals[n.id]))}, {mem}")
        meta = []
        if weights:
            meta.append(f"weight {[_fmt(x) for x in weights[curr.id]]}")
        if "bias" in curr.meta:
            meta.append(f"bias {_fmt(rt.view.b[curr.id])}")
        if "alpha" in curr.meta:
            meta.append(f"alpha {_fmt(rt.view.a[curr.id])}")
        for k in ("layer", "last_layer"):
            if k in curr.meta:
                meta.append(f"{k} {rt.__dict__['layer_of' if k == 'layer' else 'last_layer'][curr.id]}")
        if w.M and any(e != 0 for e in eps):
            meta.append(f"eps {[_fmt(float(e)) for e in eps]}")
        pars = []
        for (name, nid), r in reads.items():
            on = [f"{op} of {case[1].name}" for op, case in r.cases.items()
                  if case[1] is not None and z3.is_true(model.eval(case[0], model_completion=True))]
            pars.append(f"{name}({r.neuron.name})={_fmt(param_values[(name, nid)])}" + (f" ({r.neuron.name} = {on[0]})" if on else ""))
        return "; ".join(parts + (["curr: " + ", ".join(meta)] if meta else []) + (["parameters: " + ", ".join(pars)] if pars else []))

    try:
        if ob.step is not None:
            n, c, cur, nxt, f, node, inv_env = ob.step
            check_premises()
            cv = conc.val(c)
            r = apply_funcval(conc.val(f), [V.Neuron(n.id), cv])
            state = conc.val(cur)
            nxt_v = V.add(V.Poly(state.const, {k: v for k, v in state.coeffs.items() if k != n.id}), V.to_poly(r) if not isinstance(r, (int, float)) else float(r))
            slots = {node.base.name: 0}
            env_vals = [V.Neuron(0)]
            for i, (k, v) in enumerate(inv_env.items()):
                slots[k] = i + 1
                env_vals.append(conc.val(v))
            fn = comp.compile(node.invariant, slots, None)
            if "curr" in [v.name for v in inv_env.values() if isinstance(v, S.SNeuron)]:
                vals[curr.id] = _y(prob, model, vals)
            before = _truth(fn(tuple([state] + env_vals[1:])), vals, eps, w.M)
            after = _truth(fn(tuple([V.to_poly(nxt_v)] + env_vals[1:])), vals, eps, w.M)
            if not before[0]:
                raise _Mismatch("the model's traverse state does not satisfy the invariant")
            scale = 1 + abs(Fraction(state.const)) + sum(abs(Fraction(x)) for x in state.coeffs.values())
            if after[0] or after[1] <= Fraction(TOL) * scale:
                return Found(False, "the interpreter does not confirm the solver's model")
            text = (f"traverse invariant '{unparse(node.invariant)}' not preserved by {f.name}({n.name}, {_fmt(cv)}): "
                    f"state {_fmt_val(state, names)} -> {_fmt_val(V.to_poly(nxt_v), names)}: {after[2]}; {world_text()}")
            return Found(True, text)
        check_premises()
        a = (V.Neuron(curr.id), conc.val(prob.env["prev"]), conc.val(prob.env["prev_0"]),
             conc.val(prob.env["prev_1"]), None)
        rule = comp.compile_rule(prob.rule.body)
        out = rule(a)
        if not isinstance(out, tuple):
            out = (out,)
        for m, v in zip(checked.member_order, out):
            rt.store[m][curr.id] = V.coerce(v, str(checked.members[m]))
        vals[curr.id] = _y(prob, model, vals)
        for kind, node, ct in events:
            ok, excess, why = _truth(ct, vals, eps, w.M)
            if not ok and excess > Fraction(TOL):
                return Found(True, f"traverse invariant '{unparse(node.invariant)}' false initially: {why}; {world_text()}")
        y = vals[curr.id]
        outs = ", ".join(f"{m}={_fmt_val(rt.store[m][curr.id], names)}" for m in checked.member_order)
        for c, fn in constraints:
            ok, excess, why = _truth(fn((V.Neuron(curr.id),)), vals, eps, w.M)
            if not ok and excess > Fraction(TOL) * (1 + abs(y)):
                text = (f"violates '{unparse(c)}' ({c.loc.line}:{c.loc.col}): {why} (by {float(excess):.3g}); "
                        f"output value {_fmt(float(y))}, new shape {outs}; {world_text()}")
                return Found(True, text, {"excess": float(excess)})
        return Found(False, "the interpreter does not confirm the solver's model")
    except _Mismatch as exc:
        return Found(False, f"model not replayable: {exc}")
    except (ArithmeticError, ValueError, TypeError, KeyError, IndexError) as exc:
        return Found(False, f"model not replayable ({type(exc).__name__}: {exc})")


def _check_params(prob, model, comp, reads, param_values, vals, conc) -> None:
    """Every parameter value of the model lies in its domain as the interpreter computes it (with the
    bindings of the neuron's operator), and a neuron the model makes an operator's output is one."""
    from cfmlir.interpreter.evaluator import RULE_SLOTS

    rule_a = (V.Neuron(prob.curr.id), conc.val(prob.env["prev"]), conc.val(prob.env["prev_0"]),
              conc.val(prob.env["prev_1"]), None)
    for (name, nid), r in reads.items():
        decl = prob.checked.params[name]
        v = param_values[(name, nid)]
        active = [(op, case) for op, case in r.cases.items() if z3.is_true(model.eval(case[0], model_completion=True))]
        if not active:
            if r.default is None or abs(v - r.default) > TOL * (1 + abs(r.default)):
                raise _Mismatch(f"the model's value of parameter '{name}' on {r.neuron.name} is no value it can have")
            continue
        op, (_flag, x, _v, _lo, _hi) = active[0]
        if x is None:
            a = rule_a
        else:
            a = (V.Neuron(nid), V.Neuron(x.id), None, None, None)
            y = _op_value(op, prob, model, r.neuron, vals[x.id])
            if abs(vals[nid] - y) > Fraction(TOL) * (1 + abs(y)):
                raise _Mismatch(f"the model's {r.neuron.name} is not the {op} of its input")
        lo, hi = (float(comp.compile(e, dict(RULE_SLOTS), None)(a)) for e in (decl.lo, decl.hi))
        if lo <= hi and not (lo - TOL * (1 + abs(lo)) <= v <= hi + TOL * (1 + abs(hi))):
            raise _Mismatch(f"the model's value {v:.9g} of parameter '{name}' is outside its domain [{lo:.9g}, {hi:.9g}]")


def _op_value(op: str, prob, model, n, x: Fraction) -> Fraction:
    alpha = Fraction(_f(model, n.meta["alpha"])) if "alpha" in n.meta else Fraction(0)
    if op in PIECEWISE_LINEAR:
        return PIECEWISE_LINEAR[op](x, alpha)
    return Fraction(concrete_value(op, float(x), float(alpha)))


def _y(prob, model, vals) -> Fraction:
    """The network's output for curr in the replayed world (float64 for sigmoid/tanh)."""
    op = prob.rule.op
    env = prob.env
    if op == "Affine":
        w = [_q(model, x) for x in prob.curr.meta["weight"]]
        w = [Fraction(float(x)) for x in w]
        return sum((wi * vals[p.id] for wi, p in zip(w, env["prev"])), Fraction(0)) + Fraction(_f(model, prob.curr.meta["bias"]))
    if op == "Maxpool":
        return max(vals[p.id] for p in env["prev"])
    if op in BINARY:
        return BINARY[op](vals[env["prev_0"].id], vals[env["prev_1"].id])
    x = vals[env["prev"].id]
    if op in PIECEWISE_LINEAR:  # exact in rationals
        alpha = Fraction(_f(model, prob.curr.meta["alpha"])) if "alpha" in prob.curr.meta else Fraction(0)
        return PIECEWISE_LINEAR[op](x, alpha)
    return Fraction(concrete_value(op, float(x), _f(model, prob.curr.meta["alpha"]) if "alpha" in prob.curr.meta else 0.0))


# ------------------------------------------------------------------------------------------------
def _robust(prob, ob, background, goal_part, model, deadline):
    """Models with a clear violation and moderate values first; the given model last."""
    fml = background + list(ob.assume) + [ob.guard]
    vs = set()
    for f in fml + [goal_part]:
        for v in get_vars(f):
            vs.add(v)
    bounds = [z3.And(v >= -100, v <= 100) for v in vs if v.sort() == z3.RealSort()]
    out = []
    for d in (1, Fraction(1, 1000), Fraction(1, 10 ** 6)):
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        s = z3.SolverFor("QF_NRA")
        s.set("timeout", max(1, int(min(2.0, left) * 1000)))
        s.add(*fml, *bounds, z3.Not(_slack(goal_part, d)))
        if s.check() == z3.sat:
            out.append(s.model())
            break
    out.append(model)
    return out


def _slack(part, d):
    """``part`` relaxed by ``d`` (``a <= b`` -> ``a <= b + d``) for the comparison atoms of a conjunct."""
    dd = z3.RealVal(str(d))
    if z3.is_le(part) or z3.is_lt(part):
        return part.arg(0) <= part.arg(1) + dd
    if z3.is_ge(part) or z3.is_gt(part):
        return part.arg(0) + dd >= part.arg(1)
    return part


def confirm(prob, ob, background, goal_part, model, deadline) -> Found:
    last = Found(False, "the interpreter does not confirm the solver's model")
    for m in _robust(prob, ob, background, goal_part, model, deadline):
        f = replay(prob, ob, m)
        if f.confirmed:
            return f
        last = f
    if prob.nl.any:
        f = search(prob, ob, background, goal_part, model, deadline)
        if f is not None:
            return f
        last = Found(False, f"{last.text}; no real counterexample found by search (sigmoid/tanh/exp are over-approximated)")
    return last


def at_point(prob, ob, premises, goal_part, point: dict, deadline) -> Found | None:
    """Replay the world around ``point`` (values of some variables, by name): the applications whose
    arguments it fixes take their true float64 values, z3 completes the rest (linear once they are
    fixed), the interpreter confirms.  ``None`` when z3 finds no completion in time."""
    fixed = {name: z3.RealVal(repr(float(x))) for name, x in point.items()}
    sub = [(z3.Real(name), v) for name, v in fixed.items()]
    fix = [z3.Real(name) == v for name, v in fixed.items()]
    for name, t, fv in prob.nl.order:
        tv = z3.simplify(z3.substitute(t, *sub)) if sub else z3.simplify(t)
        if not z3.is_rational_value(tv):
            continue
        value = true_value(name, float(tv.as_fraction()))
        if not math.isfinite(value):
            continue
        val = z3.RealVal(repr(value))
        fix.append(fv == val)
        sub.append((fv, val))
    left = deadline - time.perf_counter()
    if left <= 0:
        return None
    s = z3.SolverFor("QF_NRA")
    s.set("timeout", max(1, int(min(2.0, left) * 1000)))
    s.add(*premises, *ob.assume, ob.guard, z3.Not(goal_part), *fix)
    if s.check() != z3.sat:
        return None
    return replay(prob, ob, s.model())


def search(prob, ob, background, goal_part, model, deadline, trials: int = 40):
    """Solver-guided search: fix the non-linear applications at real points, re-solve, replay."""
    rng = random.Random(0)
    apps = [(name, t, v) for name, lst in prob.nl.apps.items() for (t, v) in lst]
    argvars = sorted({v for _, t, _ in apps for v in get_vars(t)}, key=str)
    base = background + list(ob.assume) + [ob.guard, z3.Not(goal_part)]
    for trial in range(trials):
        if time.perf_counter() > deadline:
            return None
        if trial == 0:
            point = {v: float(_q(model, v)) for v in argvars}
        else:
            scale = rng.choice([0.1, 1.0, 3.0, 10.0])
            point = {v: rng.uniform(-scale, scale) for v in argvars}
        sub = [(v, z3.RealVal(repr(x))) for v, x in point.items()]
        fix = [v == z3.RealVal(repr(x)) for v, x in point.items()]
        for name, t, fv in apps:
            tv = z3.simplify(z3.substitute(t, *sub)) if sub else z3.simplify(t)
            if not z3.is_rational_value(tv):
                break
            value = true_value(name, float(tv.as_fraction()))
            if not math.isfinite(value):  # exp overflowing, log of a number <= 0: not a real point
                break
            fix.append(fv == z3.RealVal(repr(value)))
        else:
            s = z3.SolverFor("QF_NRA")
            s.set("timeout", max(1, int(min(2.0, max(0.0, deadline - time.perf_counter())) * 1000)))
            s.add(*base, *fix)
            if s.check() == z3.sat:
                f = replay(prob, ob, s.model())
                if f.confirmed:
                    return f
    return None
