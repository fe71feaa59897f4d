"""Type checker for ConstraintFlow programs.

Algorithm: one pass over the declarations in source order.  The shape declaration fixes the member
names and types; each function is checked in an environment of its parameters plus the functions
declared before it, and gets the function type ``(params) -> type(body)``; each transformer rule is
checked in an environment that binds the names its operator provides (``curr``, ``prev``...); each
flow must name a transformer and functions of the right types.  Every expression node gets its type
in ``node.ty`` so later stages read types off the tree.  The first error stops checking and is raised
as a one-line :class:`~cfmlir.diagnostics.CfError`.

The typing rules of the expression forms (what type an operator, builtin, member access... gives
its operands' types, and the message when it is ill-typed) are not here: they live in
:mod:`cfmlir.dialects.cf_typing_rules`, which the ``cf`` dialect's verifiers apply too.  This module
resolves names, walks the AST, hands each node's operand types to its rule and reports a rule's
:class:`~cfmlir.dialects.cf_typing_rules.TypingError` as a :class:`CfError` at the node (or at the
operand the rule blames).  The declaration-level checks are here:

* a shape's constraints are Ct, and its members do not reuse metadata names;
* a function does not return a tuple;
* a rule returns a tuple with one value per shape member, each a subtype of the member's type;
* a flow's priority and stop functions have types ``(Neuron) -> Float`` and ``(Neuron) -> Bool``;
* a program has at most one flow (a second one is an error at its position, not ignored);
* no expression nests deeper than :data:`~cfmlir.syntax.nesting.MAX_EXPANDED_NESTING` levels once the
  functions it names are expanded (the compiler inlines them; see :mod:`cfmlir.syntax.nesting`).
* a parameter (``param a for Op, ... in [lo, hi] init e else d;``) has a fresh name (no member,
  metadata or other parameter has it); ``lo``, ``hi`` and ``init`` are Floats in the bindings of each of
  its operators (``curr``, ``prev``...), read no shape member of ``curr`` (that is what the rule
  computes) and no parameter; a rule of an operator it is not declared for reads ``curr[a]`` only when
  it has an ``else`` value.  Parameters are known in the whole program (declared anywhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cfmlir.diagnostics import CfError, Loc
from cfmlir.dialects import cf_typing_rules as rules
from cfmlir.dialects.cf_type_lattice import (
    BASE_TYPES, BOOL, CT, FLOAT, INT, NEURON, NOISE,
    BaseType, FuncType, ListType, TupleType, Type,
    is_subtype,
)
from cfmlir.dialects.cf_typing_rules import METADATA_TYPES, TypingError, operator_bindings
from cfmlir.syntax import ast
from cfmlir.syntax.nesting import MAX_EXPANDED_NESTING, deepest, too_deep


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
    params: dict[str, ast.ParamDecl] = field(default_factory=dict)


class Checker:
    def __init__(self, program: ast.Program):
        self.program = program
        self.members: dict[str, Type] = {}
        self.member_order: list[str] = []
        self.funcs: dict[str, tuple[ast.FuncDecl, FuncType]] = {}
        self.transformers: dict[str, ast.TransformerDecl] = {}
        #: function -> the depth of its body with the functions it names expanded (cfmlir.syntax.nesting)
        self.expanded_depth: dict[str, int] = {}
        self.params: dict[str, ast.ParamDecl] = {}
        #: the operator of the rule being checked (None outside rules)
        self.rule_op: str | None = None

    # -- declarations ----------------------------------------------------------------------------
    def check(self) -> CheckedProgram:
        shapes = [d for d in self.program.decls if isinstance(d, ast.ShapeDecl)]
        if len(shapes) > 1:
            raise CfError(shapes[1].loc, "the shape is declared twice; a program has one 'def Shape'")
        if not shapes and self.program.transformers:
            raise CfError(self.program.transformers[0].loc, "transformer declared without a 'def Shape' declaration")
        flows = self.program.flows
        if len(flows) > 1:
            first = flows[0].loc
            raise CfError(flows[1].loc, f"a second 'flow' declaration (the first is at line {first.line}, column "
                                        f"{first.col}); a certifier has one flow")
        for p in self.program.params:
            if p.name in self.params:
                raise CfError(p.loc, f"parameter '{p.name}' is declared twice")
            if rules.is_metadata_name(p.name):
                raise CfError(p.loc, f"parameter '{p.name}' clashes with the metadata name '{p.name}'")
            self.params[p.name] = p
        for decl in self.program.decls:
            _DECL_CHECKERS[type(decl)](self, decl)
        for p in self.params.values():
            if p.name in self.members:
                raise CfError(p.loc, f"parameter '{p.name}' has the name of a shape member")
        return CheckedProgram(self.program, self.members, self.member_order, self.funcs, self.transformers, self.params)

    def check_shape(self, decl: ast.ShapeDecl) -> None:
        for p in decl.members:
            if p.name in self.members:
                raise CfError(p.loc, f"shape member '{p.name}' is declared twice")
            if rules.is_metadata_name(p.name):
                raise CfError(p.loc, f"shape member '{p.name}' clashes with the metadata name '{p.name}'")
            self.members[p.name] = type_of_ref(p.type)
            self.member_order.append(p.name)
        env = {"curr": NEURON}
        for c in decl.constraints:
            t = self.expr(c, env)
            self.check_expanded_depth(c, env)
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
        depth = self.check_expanded_depth(decl.body, env)
        if isinstance(ret, TupleType):
            raise CfError(decl.body.loc, "a function cannot return a tuple; only transformer rules do")
        decl.ret = ret
        self.funcs[decl.name] = (decl, FuncType(tuple(env[p.name] for p in decl.params), ret))
        self.expanded_depth[decl.name] = depth

    def check_expanded_depth(self, body: ast.Expr, env: dict) -> int:
        """The depth of ``body`` with the functions it names expanded in place; a located error beyond
        :data:`~cfmlir.syntax.nesting.MAX_EXPANDED_NESTING` (at the name whose expansion is too deep)."""
        def extra(n: ast.ExprBase) -> int:
            if isinstance(n, ast.Var) and n.name not in env:
                return self.expanded_depth.get(n.name, 0)
            return 0

        depth, node = deepest(body, extra)
        if depth > MAX_EXPANDED_NESTING:
            raise CfError(node.loc, too_deep(MAX_EXPANDED_NESTING, expanded=True))
        return depth

    def check_param(self, decl: ast.ParamDecl) -> None:
        for op, loc in zip(decl.ops, decl.ops_loc or [decl.loc] * len(decl.ops)):
            env = operator_bindings(op)
            for what, e in (("lower bound", decl.lo), ("upper bound", decl.hi), ("initial value", decl.init)):
                t = self.expr(e, env)
                try:
                    rules.parameter_bound(what, t)
                except TypingError as err:
                    raise CfError(e.loc, err.message) from None
                self._param_expr_reads(decl, what, e)

    def _param_expr_reads(self, decl: ast.ParamDecl, what: str, e: ast.Expr) -> None:
        """A parameter's domain and initial value are evaluated per neuron before its rule runs: no
        shape member of ``curr``, no parameter, no fresh noise symbol."""
        for x in ast.walk(e):
            if isinstance(x, ast.Access) and x.member in self.params:
                raise CfError(x.member_loc, f"the {what} of parameter '{decl.name}' reads the parameter '{x.member}'")
            if (isinstance(x, ast.Access) and x.member in self.members and isinstance(x.base, ast.Var)
                    and x.base.name == "curr"):
                raise CfError(x.member_loc, f"the {what} of parameter '{decl.name}' reads 'curr[{x.member}]', "
                                            f"which the rule computes; use the operator's inputs (prev)")
            if isinstance(x, ast.SymLit):
                raise CfError(x.loc, f"the {what} of parameter '{decl.name}' makes a noise symbol")

    def check_transformer(self, decl: ast.TransformerDecl) -> None:
        if decl.name in self.transformers:
            raise CfError(decl.loc, f"transformer '{decl.name}' is defined twice")
        seen: set[str] = set()
        for rule in decl.rules:
            if rule.op in seen:
                raise CfError(rule.loc, f"transformer '{decl.name}' has two rules for '{rule.op}'")
            seen.add(rule.op)
            bindings = operator_bindings(rule.op)
            self.rule_op = rule.op
            try:
                t = self.expr(rule.body, bindings)
            finally:
                self.rule_op = None
            self.check_expanded_depth(rule.body, bindings)
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

    def _rule(self, e: ast.Expr, operands: Sequence[ast.Expr], rule: Callable[..., Type], *args) -> Type:
        """``rule(*args)``, a typing rule of :mod:`~cfmlir.dialects.cf_typing_rules`; its
        :class:`TypingError` becomes a :class:`CfError` at the blamed operand (``operands[i]``) or at ``e``."""
        try:
            return rule(*args)
        except TypingError as err:
            loc = e.loc if err.operand is None else operands[err.operand].loc
            raise CfError(loc, err.message) from None

    def _expr(self, e: ast.Expr, env: dict[str, Type]) -> Type:
        """The type of ``e`` by its node class (:data:`_EXPR_TYPERS`)."""
        return _EXPR_TYPERS[type(e)](self, e, env)

    def _t_int_lit(self, e: ast.IntLit, env: dict[str, Type]) -> Type:
        return INT

    def _t_float_lit(self, e: ast.FloatLit, env: dict[str, Type]) -> Type:
        return FLOAT

    def _t_bool_lit(self, e: ast.BoolLit, env: dict[str, Type]) -> Type:
        return BOOL

    def _t_sym_lit(self, e: ast.SymLit, env: dict[str, Type]) -> Type:
        return NOISE

    def _t_var(self, e: ast.Var, env: dict[str, Type]) -> Type:
        if e.name in env:
            return env[e.name]
        if e.name in self.funcs:
            return self.funcs[e.name][1]
        if e.name in ("curr", "prev", "prev_0", "prev_1", "curr_list"):
            raise CfError(e.loc, f"'{e.name}' is not available here")
        raise CfError(e.loc, f"unknown name '{e.name}'")

    def _t_binary(self, e: ast.Binary, env: dict[str, Type]) -> Type:
        a, b = self.expr(e.lhs, env), self.expr(e.rhs, env)
        return self._rule(e, (e.lhs, e.rhs), rules.binary, e.op, a, b)

    def _t_unary(self, e: ast.Unary, env: dict[str, Type]) -> Type:
        t = self.expr(e.operand, env)
        return self._rule(e, (e.operand,), rules.unary, e.op, t)

    def _t_ternary(self, e: ast.Ternary, env: dict[str, Type]) -> Type:
        parts = (e.cond, e.then, e.otherwise)
        return self._rule(e, parts, rules.select, _OperandTypes(self, parts, env))

    def _t_call(self, e: ast.Call, env: dict[str, Type]) -> Type:
        ft = self.expr(e.callee, env)
        return self._rule(e, e.args, rules.call, ft, _OperandTypes(self, e.args, env))

    def _t_builtin(self, e: ast.Builtin, env: dict[str, Type]) -> Type:
        return self._rule(e, e.args, rules.builtin, e.name, _OperandTypes(self, e.args, env))

    def _t_lp(self, e: ast.Lp, env: dict[str, Type]) -> Type:
        parts = (e.objective, e.constraints)
        return self._rule(e, parts, rules.lp, _OperandTypes(self, parts, env))

    def _t_access(self, e: ast.Access, env: dict[str, Type]) -> Type:
        if e.member in self.params and e.member not in self.members:
            b = self.expr(e.base, env)
            p = self.params[e.member]
            if (self.rule_op is not None and isinstance(e.base, ast.Var) and e.base.name == "curr"
                    and self.rule_op not in p.ops and p.default is None):
                raise CfError(e.member_loc, f"parameter '{p.name}' has no value on '{self.rule_op}' neurons (it is "
                                            f"declared for {', '.join(p.ops)}); give it an 'else' value")
            return self._rule(e, (e.base,), rules.parameter, b, e.member)
        b = self.expr(e.base, env)
        try:
            mt = rules.member_type(e.member, self.members)
        except TypingError as err:
            raise CfError(e.member_loc, err.message) from None
        return self._rule(e, (e.base,), rules.access, b, e.member, mt)

    def _t_map(self, e: ast.Map, env: dict[str, Type]) -> Type:
        b, f = self.expr(e.base, env), self.expr(e.func, env)
        return self._rule(e, (e.base, e.func), rules.map_, b, f)

    def _t_dot(self, e: ast.Dot, env: dict[str, Type]) -> Type:
        b, w = self.expr(e.base, env), self.expr(e.arg, env)
        return self._rule(e, (e.base, e.arg), rules.dot, b, w)

    def _t_traverse(self, e: ast.Traverse, env: dict[str, Type]) -> Type:
        parts = (e.base, e.priority, e.stop, e.replace, e.invariant)
        return self._rule(e, parts, rules.traverse, _OperandTypes(self, parts, env))

    def _t_tuple_expr(self, e: ast.TupleExpr, env: dict[str, Type]) -> Type:
        return self._rule(e, e.elems, rules.tuple_, _OperandTypes(self, e.elems, env))

    def _t_list_lit(self, e: ast.ListLit, env: dict[str, Type]) -> Type:
        return self._rule(e, e.elems, rules.list_literal, _OperandTypes(self, e.elems, env))


#: The check of each declaration class.
_DECL_CHECKERS = {
    ast.ShapeDecl: Checker.check_shape,
    ast.FuncDecl: Checker.check_func,
    ast.ParamDecl: Checker.check_param,
    ast.TransformerDecl: Checker.check_transformer,
    ast.FlowDecl: Checker.check_flow,
}

#: The typing of each expression node class (one entry per class of :data:`cfmlir.syntax.ast.Expr`).
_EXPR_TYPERS = {
    ast.IntLit: Checker._t_int_lit,
    ast.FloatLit: Checker._t_float_lit,
    ast.BoolLit: Checker._t_bool_lit,
    ast.SymLit: Checker._t_sym_lit,
    ast.Var: Checker._t_var,
    ast.Binary: Checker._t_binary,
    ast.Unary: Checker._t_unary,
    ast.Ternary: Checker._t_ternary,
    ast.Call: Checker._t_call,
    ast.Builtin: Checker._t_builtin,
    ast.Lp: Checker._t_lp,
    ast.Access: Checker._t_access,
    ast.Map: Checker._t_map,
    ast.Dot: Checker._t_dot,
    ast.Traverse: Checker._t_traverse,
    ast.TupleExpr: Checker._t_tuple_expr,
    ast.ListLit: Checker._t_list_lit,
}


class _OperandTypes(Sequence[Type]):
    """The types of an expression's operands for a typing rule, each sub-expression type-checked
    (and its ``ty`` filled) when the rule first reads it: a rule reads its operands in the order its
    checks need them, so of several errors the checker reports the one that rule order puts first."""

    def __init__(self, checker: Checker, exprs: Sequence[ast.Expr], env: dict[str, Type]):
        self._checker, self._exprs, self._env = checker, exprs, env
        self._types: dict[int, Type] = {}

    def __len__(self) -> int:
        return len(self._exprs)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if i not in self._types:
            self._types[i] = self._checker.expr(self._exprs[i], self._env)
        return self._types[i]


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
