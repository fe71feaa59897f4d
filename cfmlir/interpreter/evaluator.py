"""Expression evaluation: the typed AST compiled to Python closures.

Every expression node becomes a closure ``f(a) -> value`` where ``a`` is the tuple of local values
(the parameters of the enclosing function, or the operator bindings ``curr, prev, prev_0, prev_1,
curr_list`` of a transformer rule).  Compiling once instead of walking the tree per evaluation makes
the reference interpreter fast enough for networks of a few hundred neurons; the semantics are those
of a direct tree walk:

* **call by value**; a call with fewer arguments than parameters makes a :class:`FuncVal` (curried
  partial application), calling a :class:`FuncVal` appends arguments;
* arguments, conditional branches, list elements and rule results are converted to the static type
  the checker gave them (``Int -> Float``, ``Float/Neuron -> PolyExp``, ``Float/Noise -> SymExp``);
* arithmetic follows the values (``Float * PolyExp`` scales, ``PolyExp + PolyExp`` adds the maps;
  see :mod:`cfmlir.interpreter.values`); float division by zero gives ``inf``/``nan`` (IEEE);
* comparisons of two numbers are Bool; comparisons of polynomial values and ``In`` build an
  unevaluated :class:`~cfmlir.interpreter.values.Ct`;
* ``sym``/``eps`` makes a fresh noise symbol each time it is evaluated;
* ``n[m]`` reads the stored shape member ``m`` of neuron ``n`` (an error if the flow has not computed
  it yet); ``n[a]`` for a parameter ``a`` its value for the neuron whose rule runs
  (:meth:`cfmlir.interpreter.flow.Runtime.param`); metadata ``weight`` (the neuron's affine row aligned with ``prev``), ``bias``, ``layer``,
  ``last_layer`` come from the network (:class:`~cfmlir.interpreter.netview.NetView`);
* ``e.map(f)`` is ``const + sum_i f(x_i, c_i)`` over the summands (neurons of a PolyExp, noise symbols
  of a SymExp) -- see :mod:`cfmlir.interpreter.traverse` for ``map`` and ``traverse``;
* ``lp`` is not supported by the interpreter (an error when evaluated).

Memoisation (an optimisation that cannot change results): inside one transformer rule, a *pure*
subexpression (no ``sym`` anywhere in it or in the functions it names) that occurs several times, such
as DeepPoly's ``prev.dot(curr[weight]) + curr[bias]``, is evaluated once per neuron.

Builtins: ``max``/``min`` of two numbers or of a list, ``sum``/``avg``/``len`` of a list (sum of
polynomials adds the maps), ``argmax``/``argmin`` of a Float List (the first index of the extreme
value), ``argmax(list, cmp)``/``argmin(list, cmp)`` (``compare``: the elements ``x`` with ``cmp(x, y)``
true for every ``y`` in the list), ``concat``, ``map_list``, ``sigmoid``, ``tanh``, ``exp``, ``log``, ``abs``.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, Callable

from cfmlir.diagnostics import Loc
from cfmlir.dialects import cf_type_lattice as T
from cfmlir.interpreter import values as V
from cfmlir.interpreter.errors import InterpreterError
from cfmlir.interpreter.traverse import map_expr, traverse
from cfmlir.syntax import ast
from cfruntime.scalar import exp as fexp, log as flog, sigmoid

Fn = Callable[[tuple], Any]

#: Slots of the operator bindings in a transformer rule's locals tuple.
RULE_SLOTS = {"curr": 0, "prev": 1, "prev_0": 2, "prev_1": 3, "curr_list": 4}


# ------------------------------------------------------------------------------------------------
# Type-directed conversion
# ------------------------------------------------------------------------------------------------


def converter(ty: T.Type | None) -> Callable[[Any], Any] | None:
    """The function converting a value of any subtype to the representation of ``ty`` (None: id)."""
    if isinstance(ty, T.BaseType):
        if ty == T.POLYEXP:
            return V.to_poly
        if ty == T.SYMEXP:
            return V.to_sym
        if ty == T.FLOAT:
            return _to_float
        return None
    if isinstance(ty, T.ListType):
        inner = converter(ty.elem)
        if inner is None:
            return None
        return lambda xs: [inner(x) for x in xs]
    return None


def _to_float(v):
    return float(v) if type(v) is int else v


def conv_between(src: T.Type | None, dst: T.Type | None):
    """Conversion from static type ``src`` to ``dst``; None when no conversion is needed."""
    if src == dst:
        return None
    return converter(dst)


def _wrap(f: Fn, conv) -> Fn:
    if conv is None:
        return f
    return lambda a: conv(f(a))


# ------------------------------------------------------------------------------------------------
# Functions
# ------------------------------------------------------------------------------------------------


class CompiledFunc:
    """A user function: ``body`` evaluated on the tuple of (converted) arguments."""

    __slots__ = ("name", "arity", "param_types", "param_convs", "ret", "body", "pure", "decl", "used", "rt")

    def __init__(self, decl: ast.FuncDecl, ftype: T.FuncType):
        self.decl = decl
        self.name = decl.name
        self.arity = len(decl.params)
        self.param_types = ftype.params
        self.param_convs = [converter(t) for t in ftype.params]
        self.ret = ftype.ret
        self.body: Fn | None = None
        self.pure = True
        #: indices of the parameters the body mentions (a pure function ignoring its coefficient
        #: parameter is memoised per neuron by :func:`cfmlir.interpreter.callers.binary_caller`)
        self.used: set[int] = set(range(self.arity))
        self.rt = None

    def __repr__(self) -> str:
        return f"<func {self.name}/{self.arity}>"


def apply_funcval(fv: V.FuncVal, args: list, want: T.Type | None = None):
    """Apply a function value to more arguments (values of any subtype of the parameter types)."""
    f = fv.func
    allargs = fv.args + tuple(
        (c(x) if c is not None else x) for c, x in zip(f.param_convs[len(fv.args):], args)
    )
    if len(allargs) < f.arity:
        return V.FuncVal(f, allargs)
    if len(allargs) > f.arity:
        raise InterpreterError(f"function '{f.name}' takes {f.arity} argument(s), got {len(allargs)}")
    v = f.body(allargs)
    if want is not None and want != f.ret:
        c = converter(want)
        if c is not None:
            v = c(v)
    return v


# ------------------------------------------------------------------------------------------------
# Structural keys and purity (for memoisation of repeated pure subexpressions)
# ------------------------------------------------------------------------------------------------


def structural_key(e: ast.Expr):
    """A hashable key equal for structurally identical expressions (locations and types ignored), from the
    node's dataclass fields; a ``sym`` is never equal to another occurrence (each makes a fresh symbol)."""
    if isinstance(e, ast.SymLit):
        return ("sym", id(e))
    return (type(e).__name__, *(_field_key(getattr(e, f.name)) for f in fields(e) if f.name != "ty"))


def _field_key(v):
    if isinstance(v, ast.ExprBase):
        return structural_key(v)
    if isinstance(v, list):
        return tuple(_field_key(x) for x in v)
    return None if isinstance(v, Loc) else v


def children(e: ast.Expr) -> list[ast.Expr]:
    """The sub-expressions the interpreter evaluates: the node's (:func:`cfmlir.syntax.ast.children`) but a
    traverse's invariant, which is never evaluated."""
    kids = ast.children(e)
    return [k for k in kids if k is not e.invariant] if isinstance(e, ast.Traverse) else kids


def walk(e: ast.Expr):
    yield e
    for c in children(e):
        yield from walk(c)


# ------------------------------------------------------------------------------------------------
# The compiler
# ------------------------------------------------------------------------------------------------


class ExprCompiler:
    """Compiles expressions of one program against a runtime context ``rt`` (a
    :class:`cfmlir.interpreter.flow.Runtime`: shape store, network metadata, noise counter)."""

    def __init__(self, rt, funcs: dict[str, CompiledFunc], members: dict[str, T.Type], params=()):
        self.rt = rt
        self.funcs = funcs
        self.members = members
        self.params = set(params)

    # -- purity ------------------------------------------------------------------------------------
    def expr_is_pure(self, e: ast.Expr, slots: dict[str, int]) -> bool:
        for x in walk(e):
            if isinstance(x, ast.SymLit):
                return False
            if isinstance(x, ast.Lp):
                return False
            if isinstance(x, ast.Var) and x.name not in slots and x.name in self.funcs:
                if not self.funcs[x.name].pure:
                    return False
        return True

    # -- entry points ------------------------------------------------------------------------------
    def compile_function(self, f: CompiledFunc) -> None:
        slots = {p.name: i for i, p in enumerate(f.decl.params)}
        f.pure = self.expr_is_pure(f.decl.body, slots)
        names = {x.name for x in walk(f.decl.body) if isinstance(x, ast.Var)}
        f.used = {i for n, i in slots.items() if n in names}
        f.rt = self.rt
        f.body = self.compile(f.decl.body, slots, None)

    def compile_rule(self, body: ast.Expr) -> Fn:
        """A rule body; repeated pure subexpressions are memoised per neuron in ``rt.cse``."""
        counts: dict = {}
        for x in walk(body):
            if isinstance(x, (ast.Dot, ast.Binary, ast.Call, ast.Map, ast.Traverse, ast.Builtin, ast.Access)):
                k = structural_key(x)
                counts[k] = counts.get(k, 0) + 1
        memo = {k for k, n in counts.items() if n > 1}
        return self.compile(body, dict(RULE_SLOTS), memo)

    # -- expressions -------------------------------------------------------------------------------
    def compile(self, e: ast.Expr, slots: dict[str, int], memo: set | None) -> Fn:
        f = self._compile(e, slots, memo)
        if memo and not isinstance(e, (ast.Var, ast.IntLit, ast.FloatLit, ast.BoolLit)):
            key = structural_key(e)
            if key in memo and self.expr_is_pure(e, slots):
                rt = self.rt

                def cached(a, _f=f, _k=key):
                    c = rt.cse
                    v = c.get(_k, _MISSING)
                    if v is _MISSING:
                        v = c[_k] = _f(a)
                    return v

                return cached
        return f

    def _compile(self, e: ast.Expr, slots: dict[str, int], memo) -> Fn:
        """One closure per node, by the node's class (:data:`_COMPILERS`)."""
        sub = lambda x: self.compile(x, slots, memo)  # noqa: E731
        return _COMPILERS[type(e)](self, e, sub, slots)

    def _literal(self, e, sub, slots) -> Fn:
        val = e.value
        return lambda a: val

    def _sym(self, e: ast.SymLit, sub, slots) -> Fn:
        rt = self.rt
        return lambda a: rt.fresh_noise()

    def _var(self, e: ast.Var, sub, slots) -> Fn:
        if e.name in slots:
            i = slots[e.name]
            return lambda a: a[i]
        if e.name in self.funcs:
            fv = V.FuncVal(self.funcs[e.name], ())
            return lambda a: fv
        raise InterpreterError(f"{e.loc}: unknown name '{e.name}'")  # pragma: no cover - checked

    def _unary(self, e: ast.Unary, sub, slots) -> Fn:
        x = sub(e.operand)
        if e.op == "!":
            if e.ty == T.BOOL:
                return lambda a: not x(a)
            return lambda a: V.Ct("!", x(a))
        if T.is_numeric(e.ty):
            return lambda a: -x(a)
        return lambda a: V.neg(x(a))

    def _ternary(self, e: ast.Ternary, sub, slots) -> Fn:
        c = sub(e.cond)
        t = _wrap(sub(e.then), conv_between(e.then.ty, e.ty))
        o = _wrap(sub(e.otherwise), conv_between(e.otherwise.ty, e.ty))
        return lambda a: t(a) if c(a) else o(a)

    def _lp(self, e: ast.Lp, sub, slots) -> Fn:
        loc = e.loc

        def lp(a):
            raise InterpreterError(f"{loc}: 'lp' is not supported by the reference interpreter")

        return lp

    def _map(self, e: ast.Map, sub, slots) -> Fn:
        base, fn = sub(e.base), sub(e.func)
        poly = T.is_poly_like(e.base.ty)
        result = "num" if T.is_numeric(e.ty) else ("poly" if T.is_poly_like(e.ty) else "sym")
        return lambda a: map_expr(base(a), fn(a), poly, result)

    def _traverse(self, e: ast.Traverse, sub, slots) -> Fn:
        rt = self.rt
        base, pr, st, rp = sub(e.base), sub(e.priority), sub(e.stop), sub(e.replace)
        loc = e.loc
        return lambda a: traverse(rt, V.to_poly(base(a)), pr(a), st(a), rp(a), loc)

    def _tuple(self, e: ast.TupleExpr, sub, slots) -> Fn:
        fs = [sub(x) for x in e.elems]
        return lambda a: tuple(f(a) for f in fs)

    def _list(self, e: ast.ListLit, sub, slots) -> Fn:
        elem_ty = e.ty.elem if isinstance(e.ty, T.ListType) else None
        fs = [_wrap(sub(x), conv_between(x.ty, elem_ty)) for x in e.elems]
        return lambda a: [f(a) for f in fs]

    def _binary(self, e: ast.Binary, sub) -> Fn:
        op = e.op
        l, r = sub(e.lhs), sub(e.rhs)
        lt, rt_ = e.lhs.ty, e.rhs.ty
        numeric = T.is_numeric(lt) and T.is_numeric(rt_)
        if op in ("+", "-", "*", "/"):
            if numeric:
                if op == "+":
                    return lambda a: l(a) + r(a)
                if op == "-":
                    return lambda a: l(a) - r(a)
                if op == "*":
                    return lambda a: l(a) * r(a)
                return lambda a: V.fdiv(float(l(a)), float(r(a)))
            if op == "*" and T.is_numeric(lt) and rt_ in (T.POLYEXP, T.SYMEXP):
                scale = V.scale
                return lambda a: scale(r(a), float(l(a)))
            if op == "*" and T.is_numeric(rt_) and lt in (T.POLYEXP, T.SYMEXP):
                scale = V.scale
                return lambda a: scale(l(a), float(r(a)))
            g = {"+": V.add, "-": V.sub, "*": V.mul, "/": V.div}[op]
            return lambda a: g(l(a), r(a))
        if op in ("and", "or"):
            if e.ty == T.BOOL:
                if op == "and":
                    return lambda a: bool(l(a)) and bool(r(a))
                return lambda a: bool(l(a)) or bool(r(a))
            return lambda a: V.Ct(op, l(a), r(a))
        if op == "In":
            return lambda a: V.Ct("In", l(a), r(a))
        if e.ty == T.BOOL:
            if op == "<":
                return lambda a: l(a) < r(a)
            if op == "<=":
                return lambda a: l(a) <= r(a)
            if op == ">":
                return lambda a: l(a) > r(a)
            if op == ">=":
                return lambda a: l(a) >= r(a)
            if op == "==":
                return lambda a: l(a) == r(a)
            return lambda a: l(a) != r(a)
        return lambda a: V.Ct(op, l(a), r(a))

    def _call(self, e: ast.Call, sub, slots) -> Fn:
        args = [sub(x) for x in e.args]
        callee = e.callee
        want = e.ty if isinstance(e.ty, T.BaseType) else None
        if isinstance(callee, ast.Var) and callee.name in self.funcs and callee.name not in slots:
            f = self.funcs[callee.name]
            if len(args) == f.arity:
                convs = [conv_between(x.ty, p) for x, p in zip(e.args, f.param_types)]
                argfs = [_wrap(af, c) for af, c in zip(args, convs)]
                fobj = f  # its body is compiled later (functions may be compiled in any order)
                if len(argfs) == 0:
                    return lambda a: fobj.body(())
                if len(argfs) == 1:
                    a0 = argfs[0]
                    return lambda a: fobj.body((a0(a),))
                if len(argfs) == 2:
                    a0, a1 = argfs
                    return lambda a: fobj.body((a0(a), a1(a)))
                if len(argfs) == 3:
                    a0, a1, a2 = argfs
                    return lambda a: fobj.body((a0(a), a1(a), a2(a)))
                return lambda a: fobj.body(tuple(x(a) for x in argfs))
        cf = sub(callee)
        return lambda a: apply_funcval(cf(a), [x(a) for x in args], want)

    def _builtin(self, e: ast.Builtin, sub) -> Fn:
        n = e.name
        args = [sub(x) for x in e.args]
        if n == "sigmoid":
            x = args[0]
            return lambda a: sigmoid(float(x(a)))
        if n == "tanh":
            x = args[0]
            return lambda a: math.tanh(float(x(a)))
        if n == "exp":
            x = args[0]
            return lambda a: fexp(float(x(a)))
        if n == "log":
            x = args[0]
            return lambda a: flog(float(x(a)))
        if n in ("sin", "cos"):
            x, f = args[0], getattr(math, n)
            return lambda a: f(float(x(a)))
        if n == "floor":
            x = args[0]
            conv = (lambda v: v) if e.ty == T.INT else float
            return lambda a: conv(math.floor(x(a)))
        if n == "abs":
            x = args[0]
            return lambda a: abs(x(a))
        if n in ("max", "min") and len(args) == 2:
            x, y = args
            conv = _to_float if e.ty == T.FLOAT else (lambda v: v)
            if n == "max":
                return lambda a: conv(_fmax(x(a), y(a)))
            return lambda a: conv(_fmin(x(a), y(a)))
        x = args[0]
        lst_ty = e.args[0].ty
        if n in ("max", "min"):
            g = _fmax if n == "max" else _fmin

            def red(a):
                xs = x(a)
                if not xs:
                    raise InterpreterError(f"{e.loc}: '{n}' of an empty list")
                m = xs[0]
                for v in xs[1:]:
                    m = g(m, v)
                return m

            return red
        if n == "len":
            return lambda a: len(x(a))
        if n in ("sum", "avg"):
            el = lst_ty.elem if isinstance(lst_ty, T.ListType) else None
            if T.is_numeric(el):
                if n == "sum":
                    return lambda a: sum(x(a))

                def favg(a):
                    xs = x(a)
                    return V.fdiv(float(sum(xs)), float(len(xs)))

                return favg
            cls = V.Poly if T.is_poly_like(el) else V.Sym
            lift = V.to_poly if cls is V.Poly else V.to_sym
            if n == "sum":
                return lambda a: V.lin_sum(cls, [lift(v) for v in x(a)])

            def avg(a):
                xs = x(a)
                return V.div(V.lin_sum(cls, [lift(v) for v in xs]), float(len(xs)))

            return avg
        if n in ("argmax", "argmin"):
            if len(args) == 1:
                if n == "argmax":
                    return lambda a: _arg_extreme(x(a), lambda p, q: p > q)
                return lambda a: _arg_extreme(x(a), lambda p, q: p < q)
            cmpf = args[1]

            def compare(a):
                xs = x(a)
                c = cmpf(a)
                return [p for p in xs if all(apply_funcval(c, [p, q]) for q in xs)]

            return compare
        if n == "concat":
            y = args[1]
            conv = converter(e.ty)
            if conv is None:
                return lambda a: list(x(a)) + list(y(a))
            return lambda a: conv(list(x(a)) + list(y(a)))
        if n == "map_list":
            fn = args[1]
            return lambda a: [apply_funcval(fn(a), [v]) for v in x(a)]
        raise AssertionError(n)  # pragma: no cover

    def _access(self, e: ast.Access, sub) -> Fn:
        rt = self.rt
        base = sub(e.base)
        m = e.member
        is_list = isinstance(e.base.ty, T.ListType)
        if m in self.params and m not in self.members:
            loc = e.loc

            def get(n, _m=m):
                return rt.param(_m, int(n), loc)

        elif m in self.members:
            loc = e.loc

            def get(n, _m=m):
                v = rt.store[_m][n]
                if v is None:
                    rt.unset_member(n, _m, loc)
                return v

        elif m == "layer":
            def get(n):
                return rt.layer_of[n]
        elif m == "last_layer":
            def get(n):
                return rt.last_layer[n]
        elif m == "bias":
            def get(n):
                return rt.bias_of(n)
        elif m == "weight":
            def get(n):
                return rt.weight_of(n)
        elif m == "alpha":
            def get(n):
                return rt.alpha_of(n)
        else:  # pragma: no cover - checked
            raise InterpreterError(f"{e.loc}: unknown member '{m}'")
        if is_list:
            return lambda a: [get(n) for n in base(a)]
        return lambda a: get(base(a))

    def _dot(self, e: ast.Dot, sub) -> Fn:
        base, w = sub(e.base), sub(e.arg)
        el = e.base.ty.elem if isinstance(e.base.ty, T.ListType) else None
        loc = e.loc

        def check(xs, ws):
            if len(xs) != len(ws):
                raise InterpreterError(f"{loc}: dot of a list of {len(xs)} values with {len(ws)} coefficients")

        if el == T.NEURON:
            def dot_neurons(a):
                xs, ws = base(a), w(a)
                check(xs, ws)
                return V.Poly(0.0, {int(n): float(c) for n, c in zip(xs, ws) if c != 0.0})

            return dot_neurons
        if el == T.NOISE:
            def dot_noise(a):
                xs, ws = base(a), w(a)
                check(xs, ws)
                out: dict = {}
                for n, c in zip(xs, ws):
                    if c != 0.0:
                        out[int(n)] = out.get(int(n), 0.0) + float(c)
                return V.Sym(0.0, out)

            return dot_noise
        cls = V.Poly if T.is_poly_like(e.ty) else V.Sym
        lift = V.to_poly if cls is V.Poly else V.to_sym

        def dot_exprs(a):
            xs, ws = base(a), w(a)
            check(xs, ws)
            out: dict = {}
            get = out.get
            const = 0.0
            for x, c in zip(xs, ws):
                if c == 0.0:
                    continue
                p = lift(x)
                c = float(c)
                const += c * p.const
                for k, v in p.coeffs.items():
                    out[k] = get(k, 0.0) + c * v
            return cls(const, out)

        return dot_exprs


#: The compiler of each expression node class (one entry per class of :data:`cfmlir.syntax.ast.Expr`).
_COMPILERS = {
    ast.IntLit: ExprCompiler._literal,
    ast.FloatLit: ExprCompiler._literal,
    ast.BoolLit: ExprCompiler._literal,
    ast.SymLit: ExprCompiler._sym,
    ast.Var: ExprCompiler._var,
    ast.Binary: lambda self, e, sub, slots: self._binary(e, sub),
    ast.Unary: ExprCompiler._unary,
    ast.Ternary: ExprCompiler._ternary,
    ast.Call: lambda self, e, sub, slots: self._call(e, sub, slots),
    ast.Builtin: lambda self, e, sub, slots: self._builtin(e, sub),
    ast.Lp: ExprCompiler._lp,
    ast.Access: lambda self, e, sub, slots: self._access(e, sub),
    ast.Map: ExprCompiler._map,
    ast.Dot: lambda self, e, sub, slots: self._dot(e, sub),
    ast.Traverse: ExprCompiler._traverse,
    ast.TupleExpr: ExprCompiler._tuple,
    ast.ListLit: ExprCompiler._list,
}


_MISSING = object()


def _fmax(x, y):
    if x != x or y != y:
        return math.nan
    return x if x >= y else y


def _fmin(x, y):
    if x != x or y != y:
        return math.nan
    return x if x <= y else y


def _arg_extreme(xs, better) -> int:
    if not xs:
        raise InterpreterError("argmax/argmin of an empty list")
    best = 0
    for i in range(1, len(xs)):
        if better(xs[i], xs[best]):
            best = i
    return best
