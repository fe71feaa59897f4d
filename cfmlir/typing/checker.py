"""Type checker for ConstraintFlow programs.

Algorithm: one pass over the declarations in source order.  The shape declaration fixes the member
names and types; each function is checked in an environment of its parameters plus the functions
declared before it, and gets the function type ``(params) -> type(body)``; each transformer rule is
checked in an environment that binds the names its operator provides (``curr``, ``prev``...); each
flow must name a transformer and functions of the right types.  Every expression node gets its type
in ``node.ty`` so later stages read types off the tree.  The first error stops checking and is raised
as a one-line :class:`~cfmlir.diagnostics.CfError`.

Typing highlights (ConstraintFlow semantics):

* ``+``/``-``: numeric -> numeric; otherwise both sides must be PolyExp-like (-> PolyExp) or
  SymExp-like (-> SymExp).  ``*``: one side must be a scalar.  ``/``: the divisor must be a scalar.
* comparisons: Float x Float -> Bool; PolyExp x PolyExp -> Ct.  ``e In z``: PolyExp x SymExp -> Ct.
* ``e.map(f)``: over a PolyExp ``f : (Neuron, Float) -> T``; over a SymExp ``f : (Noise, Float) -> T``;
  the result is ``lub(T, Float)`` (the summands and the constant term are added).
* ``l.dot(w)``: Neuron List . Float List -> PolyExp; SymExp List . Float List -> SymExp;
  Float List . Float List -> Float.
* ``e.traverse(d, p, s, f){c}``: ``p : (Neuron, Float) -> Float``, ``s : (Neuron, Float) -> Bool``,
  ``f : (Neuron, Float) -> PolyExp``, ``c : Ct``; the result is a PolyExp.
* a rule returns a tuple with one value per shape member, each a subtype of the member's type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cfmlir.diagnostics import CfError, Loc
from cfmlir.syntax import ast
from cfmlir.typing.types import (
    BASE_TYPES, BOOL, CT, FLOAT, INT, NEURON, NOISE, POLYEXP, SYMEXP,
    BaseType, FuncType, ListType, TupleType, Type,
    is_numeric, is_poly_like, is_subtype, is_sym_like, lub,
)

#: Types of metadata accessible on every neuron.
METADATA_TYPES: dict[str, Type] = {
    "weight": ListType(FLOAT),
    "bias": FLOAT,
    "layer": INT,
    "last_layer": INT,
    "alpha": FLOAT,
}


def operator_bindings(op: str) -> dict[str, Type]:
    """The names a transformer rule for ``op`` may use, with their types."""
    base = op[4:] if op.startswith("rev_") else op
    env: dict[str, Type] = {"curr": NEURON, "curr_list": ListType(NEURON)}
    if base in ast.LIST_OPERATORS:
        env["prev"] = ListType(NEURON)
    elif base in ast.UNARY_OPERATORS:
        env["prev"] = NEURON
    elif base in ast.BINARY_NEURON_OPERATORS:
        env.update(prev=ListType(NEURON), prev_0=NEURON, prev_1=NEURON)
    else:  # pragma: no cover - the parser only produces known operators
        raise AssertionError(op)
    return env


def type_of_ref(ref: ast.TypeRef) -> Type:
    t: Type = BASE_TYPES[ref.name]
    for _ in range(ref.list_depth):
        t = ListType(t)
    return t


@dataclass
class CheckedProgram:
    """The result of type checking: the typed AST plus the symbol tables later stages need."""

    program: ast.Program
    members: dict[str, Type]
    member_order: list[str]
    funcs: dict[str, tuple[ast.FuncDecl, FuncType]] = field(default_factory=dict)
    transformers: dict[str, ast.TransformerDecl] = field(default_factory=dict)


class Checker:
    def __init__(self, program: ast.Program):
        self.program = program
        self.members: dict[str, Type] = {}
        self.member_order: list[str] = []
        self.funcs: dict[str, tuple[ast.FuncDecl, FuncType]] = {}
        self.transformers: dict[str, ast.TransformerDecl] = {}

    # -- declarations ----------------------------------------------------------------------------
    def check(self) -> CheckedProgram:
        shapes = [d for d in self.program.decls if isinstance(d, ast.ShapeDecl)]
        if len(shapes) > 1:
            raise CfError(shapes[1].loc, "the shape is declared twice; a program has one 'def Shape'")
        if not shapes and self.program.transformers:
            raise CfError(self.program.transformers[0].loc, "transformer declared without a 'def Shape' declaration")
        for decl in self.program.decls:
            if isinstance(decl, ast.ShapeDecl):
                self.check_shape(decl)
            elif isinstance(decl, ast.FuncDecl):
                self.check_func(decl)
            elif isinstance(decl, ast.TransformerDecl):
                self.check_transformer(decl)
            else:
                self.check_flow(decl)
        return CheckedProgram(self.program, self.members, self.member_order, self.funcs, self.transformers)

    def check_shape(self, decl: ast.ShapeDecl) -> None:
        for p in decl.members:
            if p.name in self.members:
                raise CfError(p.loc, f"shape member '{p.name}' is declared twice")
            if p.name in METADATA_TYPES or p.name in ast.METADATA_ALIASES:
                raise CfError(p.loc, f"shape member '{p.name}' clashes with the metadata name '{p.name}'")
            self.members[p.name] = type_of_ref(p.type)
            self.member_order.append(p.name)
        env = {"curr": NEURON}
        for c in decl.constraints:
            t = self.expr(c, env)
            if not is_subtype(t, CT):
                raise CfError(c.loc, f"a shape constraint must be a constraint (Ct), got {t}")

    def check_func(self, decl: ast.FuncDecl) -> None:
        if decl.name in self.funcs:
            raise CfError(decl.loc, f"function '{decl.name}' is defined twice")
        env: dict[str, Type] = {}
        for p in decl.params:
            if p.name in env:
                raise CfError(p.loc, f"parameter '{p.name}' is declared twice")
            env[p.name] = type_of_ref(p.type)
        ret = self.expr(decl.body, env)
        if isinstance(ret, TupleType):
            raise CfError(decl.body.loc, "a function cannot return a tuple; only transformer rules do")
        decl.ret = ret
        self.funcs[decl.name] = (decl, FuncType(tuple(env[p.name] for p in decl.params), ret))

    def check_transformer(self, decl: ast.TransformerDecl) -> None:
        if decl.name in self.transformers:
            raise CfError(decl.loc, f"transformer '{decl.name}' is defined twice")
        seen: set[str] = set()
        for rule in decl.rules:
            if rule.op in seen:
                raise CfError(rule.loc, f"transformer '{decl.name}' has two rules for '{rule.op}'")
            seen.add(rule.op)
            t = self.expr(rule.body, operator_bindings(rule.op))
            got = t.elems if isinstance(t, TupleType) else (t,)
            if len(got) != len(self.member_order):
                raise CfError(
                    rule.body.loc,
                    f"rule '{rule.op}' returns {len(got)} value{'s' if len(got) != 1 else ''} "
                    f"but the shape has {len(self.member_order)} members",
                )
            for name, g in zip(self.member_order, got):
                want = self.members[name]
                if not is_subtype(g, want):
                    raise CfError(rule.body.loc, f"rule '{rule.op}' returns {g} for shape member '{name}' of type {want}")
        self.transformers[decl.name] = decl

    def check_flow(self, decl: ast.FlowDecl) -> None:
        if decl.transformer not in self.transformers:
            raise CfError(decl.loc, f"flow uses unknown transformer '{decl.transformer}'")
        for fname, role, want_ret in ((decl.priority, "priority", FLOAT), (decl.stop, "stop", BOOL)):
            if fname not in self.funcs:
                raise CfError(decl.loc, f"flow uses unknown {role} function '{fname}'")
            ft = self.funcs[fname][1]
            if len(ft.params) != 1 or not is_subtype(NEURON, ft.params[0]) or not is_subtype(ft.ret, want_ret):
                raise CfError(decl.loc, f"flow {role} function '{fname}' must have type (Neuron) -> {want_ret}, got {ft}")

    # -- expressions -----------------------------------------------------------------------------
    def expr(self, e: ast.Expr, env: dict[str, Type]) -> Type:
        t = self._expr(e, env)
        e.ty = t
        return t

    def _expr(self, e: ast.Expr, env: dict[str, Type]) -> Type:
        if isinstance(e, ast.IntLit):
            return INT
        if isinstance(e, ast.FloatLit):
            return FLOAT
        if isinstance(e, ast.BoolLit):
            return BOOL
        if isinstance(e, ast.SymLit):
            return NOISE
        if isinstance(e, ast.Var):
            if e.name in env:
                return env[e.name]
            if e.name in self.funcs:
                return self.funcs[e.name][1]
            if e.name in ("curr", "prev", "prev_0", "prev_1", "curr_list"):
                raise CfError(e.loc, f"'{e.name}' is not available here")
            raise CfError(e.loc, f"unknown name '{e.name}'")
        if isinstance(e, ast.Binary):
            return self.binary(e, env)
        if isinstance(e, ast.Unary):
            t = self.expr(e.operand, env)
            if e.op == "!":
                if t == BOOL or t == CT:
                    return t
                raise CfError(e.loc, f"'!' needs a Bool, got {t}")
            if is_numeric(t):
                return t
            if is_poly_like(t):
                return POLYEXP
            if is_sym_like(t):
                return SYMEXP
            raise CfError(e.loc, f"unary '-' cannot be applied to {t}")
        if isinstance(e, ast.Ternary):
            c = self.expr(e.cond, env)
            if c != BOOL:
                raise CfError(e.cond.loc, f"the condition of a conditional must be Bool, got {c}")
            a, b = self.expr(e.then, env), self.expr(e.otherwise, env)
            t = lub(a, b)
            if t is None:
                raise CfError(e.loc, f"the branches of a conditional have incompatible types {a} and {b}")
            return t
        if isinstance(e, ast.Call):
            return self.call(e, env)
        if isinstance(e, ast.Builtin):
            return self.builtin(e, env)
        if isinstance(e, ast.Lp):
            o = self.expr(e.objective, env)
            if not is_poly_like(o):
                raise CfError(e.objective.loc, f"lp objective must be a PolyExp, got {o}")
            c = self.expr(e.constraints, env)
            if not (is_subtype(c, CT) or is_subtype(c, ListType(CT))):
                raise CfError(e.constraints.loc, f"lp constraints must be Ct or a Ct List, got {c}")
            return FLOAT
        if isinstance(e, ast.Access):
            return self.access(e, env)
        if isinstance(e, ast.Map):
            return self.map(e, env)
        if isinstance(e, ast.Dot):
            b, w = self.expr(e.base, env), self.expr(e.arg, env)
            if not (isinstance(w, ListType) and is_numeric(w.elem)):
                raise CfError(e.arg.loc, f"dot needs a Float List of coefficients, got {w}")
            if isinstance(b, ListType) and is_numeric(b.elem):
                return FLOAT  # an ordinary dot product of two Float Lists
            if isinstance(b, ListType) and is_poly_like(b.elem):
                return POLYEXP
            if isinstance(b, ListType) and is_sym_like(b.elem):
                return SYMEXP
            raise CfError(e.base.loc, f"dot needs a Neuron List, PolyExp List or SymExp List, got {b}")
        if isinstance(e, ast.Traverse):
            return self.traverse(e, env)
        if isinstance(e, ast.TupleExpr):
            return TupleType(tuple(self.expr(x, env) for x in e.elems))
        if isinstance(e, ast.ListLit):
            if not e.elems:
                raise CfError(e.loc, "empty list literals are not supported")
            t = self.expr(e.elems[0], env)
            for x in e.elems[1:]:
                u = self.expr(x, env)
                j = lub(t, u)
                if j is None:
                    raise CfError(x.loc, f"list elements have incompatible types {t} and {u}")
                t = j
            return ListType(t)
        raise AssertionError(type(e))  # pragma: no cover

    def binary(self, e: ast.Binary, env: dict[str, Type]) -> Type:
        a, b = self.expr(e.lhs, env), self.expr(e.rhs, env)
        op = e.op
        if isinstance(a, (TupleType, FuncType)) or isinstance(b, (TupleType, FuncType)):
            bad = a if isinstance(a, (TupleType, FuncType)) else b
            raise CfError(e.loc, f"operator '{op}' cannot be applied to a value of type {bad}")
        if op in ("+", "-"):
            if is_numeric(a) and is_numeric(b):
                return lub(a, b)  # type: ignore[return-value]
            if is_poly_like(a) and is_poly_like(b):
                return POLYEXP
            if is_sym_like(a) and is_sym_like(b):
                return SYMEXP
            raise CfError(e.loc, f"operator '{op}' cannot be applied to {a} and {b}")
        if op == "*":
            if is_numeric(a) and is_numeric(b):
                return lub(a, b)  # type: ignore[return-value]
            scalar, other = (a, b) if is_numeric(a) else (b, a)
            if not is_numeric(scalar):
                raise CfError(e.loc, f"operator '*' needs a scalar operand, got {a} and {b} (the product would not be linear)")
            if is_poly_like(other):
                return POLYEXP
            if is_sym_like(other):
                return SYMEXP
            raise CfError(e.loc, f"operator '*' cannot be applied to {a} and {b}")
        if op == "/":
            if not is_numeric(b):
                raise CfError(e.rhs.loc, f"the divisor must be a scalar, got {b}")
            if is_numeric(a):
                return FLOAT
            if is_poly_like(a):
                return POLYEXP
            if is_sym_like(a):
                return SYMEXP
            raise CfError(e.loc, f"operator '/' cannot be applied to {a} and {b}")
        if op in ("and", "or"):
            if a == BOOL and b == BOOL:
                return BOOL
            if is_subtype(a, CT) and is_subtype(b, CT):
                return CT
            raise CfError(e.loc, f"operator '{op}' needs Bool or Ct operands, got {a} and {b}")
        if op == "In":
            if is_poly_like(a) and is_sym_like(b):
                return CT
            raise CfError(e.loc, f"operator 'In' needs a PolyExp and a SymExp, got {a} and {b}")
        # comparisons
        if is_numeric(a) and is_numeric(b):
            return BOOL
        if op in ("==", "!=") and a == BOOL and b == BOOL:
            return BOOL
        if (is_poly_like(a) and is_poly_like(b)) or (is_sym_like(a) and is_sym_like(b)):
            return CT
        raise CfError(e.loc, f"operator '{op}' cannot compare {a} and {b}")

    def call(self, e: ast.Call, env: dict[str, Type]) -> Type:
        ft = self.expr(e.callee, env)
        if not isinstance(ft, FuncType):
            raise CfError(e.loc, f"called value is not a function (it has type {ft})")
        if len(e.args) > len(ft.params):
            raise CfError(e.loc, f"function takes {len(ft.params)} argument(s), got {len(e.args)}")
        for i, (arg, want) in enumerate(zip(e.args, ft.params)):
            got = self.expr(arg, env)
            if not is_subtype(got, want):
                raise CfError(arg.loc, f"argument {i + 1} has type {got}, expected {want}")
        if len(e.args) < len(ft.params):
            return FuncType(ft.params[len(e.args):], ft.ret)  # curried partial application
        return ft.ret

    def _func_arg(self, e: ast.Expr, env: dict[str, Type], what: str) -> FuncType:
        t = self.expr(e, env)
        if not isinstance(t, FuncType):
            raise CfError(e.loc, f"{what} must be a function, got {t}")
        return t

    def builtin(self, e: ast.Builtin, env: dict[str, Type]) -> Type:
        n = e.name
        if n in ("sigmoid", "tanh", "exp", "log", "abs"):
            t = self.expr(e.args[0], env)
            if not is_numeric(t):
                raise CfError(e.args[0].loc, f"'{n}' needs a Float, got {t}")
            return INT if (n == "abs" and t == INT) else FLOAT
        if n in ("max", "min") and len(e.args) == 2:
            a, b = self.expr(e.args[0], env), self.expr(e.args[1], env)
            if is_numeric(a) and is_numeric(b):
                return lub(a, b)  # type: ignore[return-value]
            raise CfError(e.loc, f"'{n}' of two values needs Floats, got {a} and {b}")
        lst = self.expr(e.args[0], env)
        if not isinstance(lst, ListType):
            raise CfError(e.args[0].loc, f"'{n}' needs a list, got {lst}")
        el = lst.elem
        if n in ("max", "min"):
            if not is_numeric(el):
                raise CfError(e.args[0].loc, f"'{n}' of a list needs a Float List, got {lst}")
            return el
        if n == "len":
            return INT
        if n in ("sum", "avg"):
            if is_numeric(el):
                return FLOAT if n == "avg" else el
            if is_poly_like(el):
                return POLYEXP
            if is_sym_like(el):
                return SYMEXP
            raise CfError(e.args[0].loc, f"'{n}' cannot add up a {lst}")
        if n in ("argmax", "argmin"):
            if len(e.args) == 1:
                if not is_numeric(el):
                    raise CfError(e.args[0].loc, f"'{n}' of one list needs a Float List, got {lst}")
                return INT
            f = self._func_arg(e.args[1], env, f"the comparison of '{n}'")
            if len(f.params) != 2 or not all(is_subtype(el, p) for p in f.params) or f.ret != BOOL:
                raise CfError(e.args[1].loc, f"the comparison of '{n}' must have type ({el}, {el}) -> Bool, got {f}")
            return lst
        if n == "concat":
            other = self.expr(e.args[1], env)
            j = lub(lst, other)
            if j is None:
                raise CfError(e.loc, f"cannot concatenate {lst} and {other}")
            return j
        if n == "map_list":
            f = self._func_arg(e.args[1], env, "the function of 'map_list'")
            if len(f.params) != 1 or not is_subtype(el, f.params[0]):
                raise CfError(e.args[1].loc, f"the function of 'map_list' must take one {el}, got {f}")
            return ListType(f.ret)
        raise AssertionError(n)  # pragma: no cover

    def access(self, e: ast.Access, env: dict[str, Type]) -> Type:
        b = self.expr(e.base, env)
        if e.member in self.members:
            mt = self.members[e.member]
        elif e.member in METADATA_TYPES:
            mt = METADATA_TYPES[e.member]
        else:
            raise CfError(e.member_loc, f"unknown shape member or metadata '{e.member}'")
        if b == NEURON:
            return mt
        if b == ListType(NEURON):
            return ListType(mt)
        raise CfError(e.loc, f"'[{e.member}]' needs a Neuron or Neuron List, got {b}")

    def map(self, e: ast.Map, env: dict[str, Type]) -> Type:
        b = self.expr(e.base, env)
        f = self._func_arg(e.func, env, "the argument of map")
        if is_poly_like(b):
            elem, kind = NEURON, "PolyExp"
        elif is_sym_like(b):
            elem, kind = NOISE, "SymExp"
        else:
            raise CfError(e.base.loc, f"map needs a PolyExp or SymExp, got {b}")
        if len(f.params) != 2 or not is_subtype(elem, f.params[0]) or not is_subtype(FLOAT, f.params[1]):
            raise CfError(e.func.loc, f"map over a {kind} needs a function ({elem}, Float) -> T, got {f}")
        if not (is_poly_like(f.ret) or is_sym_like(f.ret)):
            raise CfError(e.func.loc, f"the mapped function must return a Float, PolyExp or SymExp, got {f.ret}")
        return lub(f.ret, FLOAT)  # type: ignore[return-value]

    def traverse(self, e: ast.Traverse, env: dict[str, Type]) -> Type:
        b = self.expr(e.base, env)
        if not is_poly_like(b):
            raise CfError(e.base.loc, f"traverse needs a PolyExp, got {b}")
        for fe, role, ok in (
            (e.priority, "priority", is_numeric),
            (e.stop, "stop", lambda t: t == BOOL),
            (e.replace, "replacement", is_poly_like),
        ):
            f = self._func_arg(fe, env, f"the traverse {role} function")
            if len(f.params) != 2 or not is_subtype(NEURON, f.params[0]) or not is_subtype(FLOAT, f.params[1]) or not ok(f.ret):
                want = {"priority": "Float", "stop": "Bool", "replacement": "PolyExp"}[role]
                raise CfError(fe.loc, f"the traverse {role} function must have type (Neuron, Float) -> {want}, got {f}")
        inv = self.expr(e.invariant, env)
        if not is_subtype(inv, CT):
            raise CfError(e.invariant.loc, f"the traverse invariant must be a constraint (Ct), got {inv}")
        return POLYEXP


def check(program: ast.Program) -> CheckedProgram:
    """Type-check ``program`` in place (filling ``ty`` slots).  Raises :class:`CfError`."""
    return Checker(program).check()


def check_source(text: str, file: str = "<input>") -> CheckedProgram:
    from cfmlir.syntax.parser import parse

    return check(parse(text, file))


def check_file(path) -> CheckedProgram:
    from cfmlir.syntax.parser import parse_file

    return check(parse_file(path))


__all__ = ["CheckedProgram", "check", "check_source", "check_file", "operator_bindings", "METADATA_TYPES", "Loc", "BaseType"]
