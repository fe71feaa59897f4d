"""Symbolic evaluation of ConstraintFlow expressions in a bounded world (one method per AST node).

``SymbolicEvaluator.eval(e, env)`` gives the value of ``e`` as z3 terms over the world's free
variables (see :mod:`cfmlir.verify.values`).  Semantics follow the reference interpreter
(:mod:`cfmlir.interpreter.evaluator`) except where a value is unknown and is represented by what is
known of it:

* ``c ? a : b`` with a symbolic ``c`` evaluates both branches, each under its *guard*, and merges them;
* ``e.map(f)`` is ``const + sum_i (c_i != 0 ? f(x_i, c_i) : 0)`` over the (bounded) summands;
* ``e.traverse(d, p, s, f){inv}`` (``e`` a variable) is replaced by its invariant: the verifier
  records two obligations -- ``inv`` holds for the expression the traverse starts from, and one
  replacement ``e - c*n + f(n, c)`` of any neuron ``n`` with any coefficient ``c != 0`` preserves
  ``inv`` -- and returns a fresh PolyExp over ``K`` fresh neurons that satisfies ``inv``.  Priority
  and stop functions are not needed: the result holds whichever neurons are replaced, in any order.
  Evaluations of one traverse with equal arguments return the same value (a traverse is a function);
* ``sigmoid``/``tanh``/``exp`` are fresh reals with the facts of :mod:`cfmlir.verify.nonlinear`;
* ``n[a]`` for a parameter ``a`` is a universally quantified value in its domain
  (:mod:`cfmlir.verify.params`).

Example: DeepPoly's ``Relu -> (relu(prev[l]), ...)`` gives the tuple
``(If(l_p >= 0, l_p, 0), If(u_p >= 0, u_p, 0), If(l_p + u_p >= 0, 1*p, 0), ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import Any

import z3

from cfmlir.dialects import cf_type_lattice as T
from cfmlir.syntax import ast
from cfmlir.verify import values as S
from cfmlir.verify.errors import FragmentError
from cfmlir.verify.infinity import NotExtendedReal, check_arith, infinite, mentions
from cfmlir.verify.nonlinear import Nonlinear
from cfmlir.verify.world import World

_MAX_CALL_DEPTH = 64


def _const(v):
    """The rational value of a constant number (a Python number or a z3 rational), else ``None``."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, z3.ArithRef):
        v = z3.simplify(v)
        if z3.is_rational_value(v):
            return v.as_fraction()
    return None


def _is_const(v, value=None) -> bool:
    c = _const(v)
    return c is not None and (value is None or c == value)


@dataclass
class Obligation:
    """``premises and assume and guard => goal`` must be valid; ``what`` says which claim it is."""

    what: str
    goal: Any  # a symbolic constraint value (see semantics.holds)
    guard: Any
    loc: Any
    assume: list = field(default_factory=list)
    #: for a traverse step: (replaced neuron, its coefficient, state before, state after, function,
    #: the traverse node, the values of the invariant's other names)
    step: tuple | None = None


@dataclass
class TraverseRecord:
    """One symbolic traverse evaluation (for replay: its start value and the value it returned)."""

    node: ast.Traverse
    start: S.SPoly
    result: S.SPoly
    guard: Any


class SymbolicEvaluator:
    def __init__(self, checked, world: World, nonlinear: Nonlinear, holds):
        self.checked = checked
        self.funcs = checked.funcs
        self.members = checked.members
        self.world = world
        self.nl = nonlinear
        self.holds = holds  # (symbolic constraint value) -> z3 Bool, see semantics.holds
        self.guard = z3.BoolVal(True)
        self.obligations: list[Obligation] = []
        self.assumptions: list = []
        self.traverses: list[TraverseRecord] = []
        self._traverse_memo: dict = {}
        self._depth = 0
        self.loc = None
        #: the rule's parameter reads (:class:`cfmlir.verify.params.Params`; set by the rule's problem)
        self.params = None
        #: did the rule take an integer part (``floor``)?
        self.takes_floor = False

    # -- helpers ----------------------------------------------------------------------------------
    def conv(self, v, ty):
        try:
            return S.convert(v, ty)
        except TypeError as exc:
            raise FragmentError(self.loc, f"a value of type {ty}", str(exc)) from None

    def apply(self, fv: S.SFunc, args: list, loc):
        decl, ftype = self.funcs[fv.name]
        allargs = list(fv.args) + [self.conv(a, t) for a, t in zip(args, ftype.params[len(fv.args):])]
        if len(allargs) < len(decl.params):
            return S.SFunc(fv.name, tuple(allargs))
        self._depth += 1
        if self._depth > _MAX_CALL_DEPTH:
            raise FragmentError(loc, f"the recursive function '{fv.name}'")
        try:
            env = {p.name: a for p, a in zip(decl.params, allargs)}
            return self.conv(self.eval(decl.body, env), ftype.ret)
        finally:
            self._depth -= 1

    def branch(self, c, then_fn, else_fn):
        """``c ? then : else`` with the guard extended in each branch; concrete ``c`` picks one."""
        cs = z3.simplify(c) if isinstance(c, z3.BoolRef) else z3.BoolVal(bool(c))
        if z3.is_true(cs):
            return then_fn()
        if z3.is_false(cs):
            return else_fn()
        g = self.guard
        try:
            self.guard = z3.And(g, c)
            a = then_fn()
            self.guard = z3.And(g, z3.Not(c))
            b = else_fn()
        finally:
            self.guard = g
        try:
            return S.merge(c, a, b)
        except TypeError as exc:
            raise FragmentError(self.loc, "a conditional", str(exc)) from None

    # -- dispatch ---------------------------------------------------------------------------------
    def eval(self, e: ast.Expr, env: dict[str, Any]):
        self.world.deadline.check()
        self.loc = e.loc
        try:
            return self._eval(e, env)
        except TypeError as exc:  # a value combination the encoding does not cover
            raise FragmentError(e.loc, f"'{type(e).__name__.lower()}' here", str(exc)) from None

    @singledispatchmethod
    def _eval(self, e, env):
        raise FragmentError(e.loc, f"the expression '{type(e).__name__}'")

    @_eval.register
    def _(self, e: ast.IntLit, env):
        return z3.RealVal(e.value)

    @_eval.register
    def _(self, e: ast.FloatLit, env):
        return z3.RealVal(repr(float(e.value)))

    @_eval.register
    def _(self, e: ast.BoolLit, env):
        return z3.BoolVal(e.value)

    @_eval.register
    def _(self, e: ast.SymLit, env):
        return self.world.fresh_noise()

    @_eval.register
    def _(self, e: ast.Var, env):
        if e.name in env:
            v = env[e.name]
            if v is None:
                raise FragmentError(e.loc, f"'{e.name}' (not bound for this operator)")
            return v
        if e.name in self.funcs:
            return S.SFunc(e.name)
        raise FragmentError(e.loc, f"the name '{e.name}'")

    @_eval.register
    def _(self, e: ast.Unary, env):
        x = self.eval(e.operand, env)
        if e.op == "!":
            return z3.Not(x) if isinstance(x, z3.BoolRef) else S.SCt("!", x)
        if S.is_num(x):
            return -x
        return S.scale(S.to_sym(x) if isinstance(x, S.SNoise) else S.to_poly(x) if isinstance(x, S.SNeuron) else x, -1)

    @_eval.register
    def _(self, e: ast.Binary, env):
        op = e.op
        if op in ("and", "or") and e.ty == T.BOOL:
            a, b = self.eval(e.lhs, env), self.eval(e.rhs, env)
            return z3.And(a, b) if op == "and" else z3.Or(a, b)
        a, b = self.eval(e.lhs, env), self.eval(e.rhs, env)
        if op in ("and", "or", "In"):
            return S.SCt(op, a, b)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            if e.ty == T.BOOL:
                return _compare(op, a, b)
            return S.SCt(op, a, b)
        if S.is_num(a) and S.is_num(b):
            if op == "/" and _is_const(b, 0) and _is_const(a) and not _is_const(a, 0):
                return infinite(1 if _const(a) > 0 else -1)  # 1.0 / 0.0 is +inf (cfmlir.verify.infinity)
            r = {"+": a + b, "-": a - b, "*": a * b}[op] if op != "/" else a / b
            if mentions(a) or mentions(b):  # only what float64 gives a value (no inf - inf, 0 * inf)
                try:
                    check_arith(op, a, b, r)
                except NotExtendedReal as exc:
                    raise FragmentError(e.loc, str(exc)) from None
            return r
        if op == "*":
            if S.is_num(a):
                return S.scale(_lin(b), a)
            if S.is_num(b):
                return S.scale(_lin(a), b)
            raise FragmentError(e.loc, "a product of two polynomial values")
        if op == "/":
            if S.is_num(b):
                return S.scale(_lin(a), 1 / b)
            raise FragmentError(e.loc, "a division by a polynomial value")
        cls, pa, pb = S.lift_pair(a, b)
        return S.lin(cls, pa, pb, 1, 1 if op == "+" else -1)

    @_eval.register
    def _(self, e: ast.Ternary, env):
        c = self.eval(e.cond, env)
        if not isinstance(c, z3.BoolRef):
            raise FragmentError(e.cond.loc, "a condition that is not a Bool")
        return self.branch(c, lambda: self.conv(self.eval(e.then, env), e.ty),
                           lambda: self.conv(self.eval(e.otherwise, env), e.ty))

    @_eval.register
    def _(self, e: ast.Call, env):
        f = self.eval(e.callee, env)
        if not isinstance(f, S.SFunc):
            raise FragmentError(e.loc, "a call of a value that is not a function")
        return self.apply(f, [self.eval(a, env) for a in e.args], e.loc)

    @_eval.register
    def _(self, e: ast.Lp, env):
        raise FragmentError(e.loc, "'lp'", "a linear program's optimum has no closed form here; outside the verifier's fragment")

    @_eval.register
    def _(self, e: ast.TupleExpr, env):
        return tuple(self.eval(x, env) for x in e.elems)

    @_eval.register
    def _(self, e: ast.ListLit, env):
        el = e.ty.elem if isinstance(e.ty, T.ListType) else None
        return [self.conv(self.eval(x, env), el) for x in e.elems]

    @_eval.register
    def _(self, e: ast.Access, env):
        base = self.eval(e.base, env)
        if isinstance(base, list):
            return [self.member(n, e.member, e) for n in base]
        return self.member(base, e.member, e)

    def member(self, n, m: str, e):
        if not isinstance(n, S.SNeuron):
            raise FragmentError(e.loc, f"'[{m}]' of a value that is not a neuron")
        w = self.world
        if self.params is not None and m in self.params.decls and m not in self.members:
            return self.params.read(m, n, e.loc)
        if m in self.members:
            if n in w.outputs:
                return w.outputs[n][m]
            if n.meta.get("computing"):
                raise FragmentError(e.loc, f"reading '{m}' of the neuron being computed")
            return w.shape(n)[m]
        if m in ("layer", "last_layer", "bias", "alpha"):
            return w.meta(n, m)
        if m == "weight":
            if "weight" not in n.meta:
                raise FragmentError(e.loc, "'[weight]' of a neuron other than an Affine rule's curr")
            return n.meta["weight"]
        raise FragmentError(e.loc, f"the member '{m}'")

    @_eval.register
    def _(self, e: ast.Dot, env):
        xs, ws = self.eval(e.base, env), self.eval(e.arg, env)
        if not isinstance(xs, list) or not isinstance(ws, list) or len(xs) != len(ws):
            raise FragmentError(e.loc, "a dot product of lists of different lengths")
        cls = S.SPoly if T.is_poly_like(e.ty) else S.SSym
        acc = cls(S.ZERO, {})
        for x, w in zip(xs, ws):
            acc = S.lin(cls, acc, S.to_poly(x) if cls is S.SPoly else S.to_sym(x), 1, w)
        return acc

    @_eval.register
    def _(self, e: ast.Map, env):
        base = self.eval(e.base, env)
        f = self.eval(e.func, env)
        poly = T.is_poly_like(e.base.ty)
        base = S.to_poly(base) if poly else S.to_sym(base)
        result = "num" if T.is_numeric(e.ty) else ("poly" if T.is_poly_like(e.ty) else "sym")
        if result == "num":
            acc = base.const
            zero = S.ZERO
        else:
            cls = S.SPoly if result == "poly" else S.SSym
            acc = cls(base.const, {})
            zero = cls(S.ZERO, {})
        for k, c in base.coeffs.items():
            r = self.branch(c != 0, lambda k=k, c=c: self._map_term(f, k, c, result, e), lambda: zero)
            if result == "num":
                acc = acc + r
            else:
                acc = S.lin(type(acc), acc, r)
        return acc

    def _map_term(self, f, k, c, result, e):
        r = self.apply(f, [k, c], e.loc)
        if result == "num":
            return r
        return S.to_poly(r) if result == "poly" else S.to_sym(r)

    @_eval.register
    def _(self, e: ast.Traverse, env):
        from cfmlir.verify.semantics import value_key

        start = S.to_poly(self.eval(e.base, env))
        f = self.eval(e.replace, env)
        if not isinstance(f, S.SFunc):
            raise FragmentError(e.replace.loc, "a traverse whose replacement is not a function")
        if not isinstance(e.base, ast.Var):
            raise FragmentError(e.loc, "a traverse of an expression that is not a variable",
                                "its invariant could not name the traversed expression")
        state = e.base.name
        inv_names = {x.name for x in _walk(e.invariant) if isinstance(x, ast.Var)}
        key = (id(e), value_key(start), value_key(f), tuple(value_key(env.get(n)) for n in sorted(inv_names)))

        def inv(v):
            return self.eval(e.invariant, {**env, state: v})

        self.obligations.append(Obligation("traverse invariant holds initially", inv(start), self.guard, e.loc))
        result = self._traverse_memo.get(key)
        if result is None:
            result = self._new_traverse(e, start, f, inv, {k: env[k] for k in inv_names if k in env and k != state})
            self._traverse_memo[key] = result
        # what the traverse returns satisfies its invariant (wherever this evaluation happens)
        self.assumptions.append(z3.Implies(self.guard, self.holds(inv(result))))
        self.traverses.append(TraverseRecord(e, start, result, self.guard))
        return result

    def _new_traverse(self, e: ast.Traverse, start: S.SPoly, f: S.SFunc, inv, inv_env: dict):
        """The obligations of a traverse and the fresh value it returns."""
        w = self.world
        # One replacement step: e = e0 + c*n (+ K other neurons), with n's polynomial members over
        # the same neurons as the rest of e (so a replacement may add to existing summands).
        pool = w.fresh_pool("t", 9)
        n = w.neuron(f"r{len(w.neurons)}", 8, pool=pool)
        cur = w.free_poly("st", [n, *pool])
        c = cur.coeffs[n]
        g = self.guard
        r = self.apply(f, [n, c], e.replace.loc)
        nxt = S.lin(S.SPoly, S.SPoly(cur.const, {k: v for k, v in cur.coeffs.items() if k is not n}), S.to_poly(r))
        ob = Obligation(f"traverse invariant preserved by one step of '{f.name}'", inv(nxt), g, e.loc,
                        assume=[c != 0, self.holds(inv(cur))])
        ob.step = (n, c, cur, nxt, f, e, inv_env)
        self.obligations.append(ob)
        return w.free_poly("tr", w.fresh_pool("v", 1))

    @_eval.register
    def _(self, e: ast.Builtin, env):
        n = e.name
        args = [self.eval(a, env) for a in e.args]
        if n in ("sigmoid", "tanh", "exp", "log", "sin", "cos"):
            return self.nl.apply(n, args[0])
        if n == "abs":
            x = args[0]
            return z3.If(x >= 0, x, -x)
        if n == "floor":  # exact: the integer part, in mixed integer-real arithmetic
            self.takes_floor = True  # (the rule's claims go to z3's QF_NIRA: cfmlir.verify.solve)
            return z3.ToReal(z3.ToInt(args[0]))
        if n in ("max", "min"):
            xs = args if len(args) == 2 else args[0]
            if not xs:
                raise FragmentError(e.loc, f"'{n}' of an empty list")
            m = xs[0]
            for v in xs[1:]:
                if not (S.is_num(m) and S.is_num(v)):
                    raise FragmentError(e.loc, f"'{n}' of values that are not numbers")
                # the same term as the facts of nonlinear.py use: If(a <= b, a, b) for min(a, b)
                m = z3.If(m >= v, m, v) if n == "max" else z3.If(m <= v, m, v)
            return m
        if n == "len":
            return z3.RealVal(len(args[0]))
        if n in ("sum", "avg"):
            xs = args[0]
            el = e.args[0].ty.elem if isinstance(e.args[0].ty, T.ListType) else None
            if T.is_numeric(el):
                s = sum(xs, S.ZERO)
            else:
                cls = S.SPoly if T.is_poly_like(el) else S.SSym
                s = cls(S.ZERO, {})
                for v in xs:
                    s = S.lin(cls, s, S.to_poly(v) if cls is S.SPoly else S.to_sym(v))
            if n == "avg":
                return s / len(xs) if S.is_num(s) else S.scale(s, z3.RealVal(1) / len(xs))
            return s
        if n == "concat":
            return self.conv(list(args[0]) + list(args[1]), e.ty)
        if n == "map_list":
            return [self.apply(args[1], [v], e.loc) for v in args[0]]
        raise FragmentError(e.loc, f"the builtin '{n}'" + (" with a comparison function" if n in ("argmax", "argmin") else ""))


def _lin(v):
    if isinstance(v, S.SNoise):
        return S.to_sym(v)
    if isinstance(v, S.SNeuron):
        return S.to_poly(v)
    return v


def _compare(op, a, b):
    if not (S.is_num(a) and S.is_num(b)):
        if op in ("==", "!=") and not (S.is_num(a) or S.is_num(b)):
            same = a is b
            return z3.BoolVal(same if op == "==" else not same)
        raise TypeError(f"comparison of {a!r} and {b!r}")
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b}[op]


def _walk(e):
    from cfmlir.interpreter.evaluator import walk

    yield from walk(e)
    if isinstance(e, ast.Traverse):
        yield from walk(e.invariant)
