"""Lowering of the typed ConstraintFlow AST to the ``cf`` dialect.

A straightforward recursive emitter: every declaration becomes one top-level op of a
``builtin.module`` (in source order) and every expression node becomes one op whose result type is
the node's checked type (``node.ty``) converted with :func:`cfmlir.dialects.cf_types.to_cf`.  Names
resolve to SSA values (parameters, rule bindings) or, for user functions, to ``cf.func_ref`` values;
a call of a named function is a direct ``cf.call @f``, any other call a ``cf.apply``.  User functions
stay ``cf.func`` symbols (inlining is a later pass).  Every op carries the source location of its
AST node as a ``FileLineColLoc`` (printed with ``--print-debuginfo``).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from cfmlir.diagnostics import CfError, Loc
from cfmlir.dialects import cf
from cfmlir.dialects.cf_types import FuncType, NeuronType, to_cf
from cfmlir.syntax import ast
from cfmlir.dialects.cf_typing_rules import operator_bindings
from cfmlir.typing.checker import CheckedProgram, type_of_ref


def _loc(loc: Loc) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))


def _hint(v: SSAValue, name: str) -> None:
    try:
        v.name_hint = name
    except ValueError:  # not a valid SSA name; keep the value anonymous
        pass


class Lowering:
    """Emit the ``cf`` module of a checked program (:func:`lower_program` is the entry point)."""

    def __init__(self, checked: CheckedProgram):
        self.checked = checked
        self.block: Block = Block()

    # -- declarations ----------------------------------------------------------------------------
    def lower(self) -> ModuleOp:
        ops: list[Operation] = []
        for decl in self.checked.program.decls:
            ops.append(_DECL_LOWERINGS[type(decl)](self, decl))
        module = ModuleOp(ops)
        # the file, without a position: whole-module errors (an empty file, no flow) name it
        module.location = _loc(Loc(self.checked.program.file, 0, 0))
        return module

    def flow(self, decl: ast.FlowDecl) -> Operation:
        op = cf.FlowOp(decl.direction, decl.priority, decl.stop, decl.transformer)
        op.location = _loc(decl.loc)
        return op

    def shape(self, decl: ast.ShapeDecl) -> cf.ShapeOp:
        members = [(p.name, to_cf(type_of_ref(p.type))) for p in decl.members]
        block = Block(arg_types=[NeuronType()])
        _hint(block.args[0], "curr")
        env = {"curr": block.args[0]}
        self.block = block
        vals = [self.expr(c, env) for c in decl.constraints]
        self.emit(cf.YieldOp(vals), decl.loc)
        op = cf.ShapeOp(members, Region(block))
        op.location = _loc(decl.loc)
        return op

    def func(self, decl: ast.FuncDecl) -> cf.FuncOp:
        ftype = to_cf(self.checked.funcs[decl.name][1])
        assert isinstance(ftype, FuncType)
        block = Block(arg_types=list(ftype.inputs.data))
        env: dict[str, SSAValue] = {}
        for p, arg in zip(decl.params, block.args):
            _hint(arg, p.name)
            env[p.name] = arg
        self.block = block
        v = self.expr(decl.body, env)
        self.emit(cf.YieldOp([v]), decl.body.loc)
        op = cf.FuncOp(decl.name, ftype, Region(block))
        op.location = _loc(decl.loc)
        return op

    def open_rule_block(self, op: str) -> tuple[Block, dict[str, SSAValue]]:
        """A block whose arguments are the rule bindings of operator ``op`` (named by their hints),
        the environment binding their names, and emission moved into the block."""
        bindings = operator_bindings(op)
        block = Block(arg_types=[to_cf(t) for t in bindings.values()])
        env: dict[str, SSAValue] = {}
        for name, arg in zip(bindings, block.args):
            _hint(arg, cf.binding_hint(name))
            env[name] = arg
        self.block = block
        return block, env

    def parameter(self, decl: ast.ParamDecl) -> cf.ParameterOp:
        """``cf.parameter @a``: per operator, a region over its rule bindings yielding (lo, hi, init)."""
        domains: list[tuple[str, Region]] = []
        for op in decl.ops:
            block, env = self.open_rule_block(op)
            # the three are typed in every operator's bindings by the checker; lowered per operator
            vals = [self.expr(e, env) for e in (decl.lo, decl.hi, decl.init)]
            self.emit(cf.YieldOp(vals), decl.loc)
            domains.append((op, Region(block)))
        out = cf.ParameterOp(decl.name, domains, decl.default)
        out.location = _loc(decl.loc)
        return out

    def transformer(self, decl: ast.TransformerDecl) -> cf.TransformerOp:
        rules: list[tuple[str, Region]] = []
        for rule in decl.rules:
            block, env = self.open_rule_block(rule.op)
            if isinstance(rule.body, ast.TupleExpr):
                vals = [self.expr(e, env) for e in rule.body.elems]
            else:
                vals = [self.expr(rule.body, env)]
            self.emit(cf.ReturnOp(vals), rule.body.loc)
            rules.append((rule.op, Region(block)))
        op = cf.TransformerOp(decl.name, rules)
        op.location = _loc(decl.loc)
        return op

    # -- expressions -----------------------------------------------------------------------------
    def emit(self, op: Operation, loc: Loc) -> Operation:
        op.location = _loc(loc)
        self.block.add_op(op)
        return op

    def value(self, op: Operation, loc: Loc) -> SSAValue:
        self.emit(op, loc)
        return op.results[0]

    def expr(self, e: ast.Expr, env: dict[str, SSAValue]) -> SSAValue:
        assert e.ty is not None, "lowering needs a type-checked AST"
        ty = to_cf(e.ty)
        return _LOWERINGS[type(e)](self, e, env, ty)

    def _literal(self, e: ast.IntLit | ast.FloatLit | ast.BoolLit, env: dict[str, SSAValue], ty) -> SSAValue:
        if isinstance(e, ast.IntLit) and not -(2**63) <= e.value < 2**63:
            raise CfError(e.loc, f"integer literal {e.value} does not fit in 64 bits")
        if isinstance(e, ast.FloatLit) and not math.isfinite(e.value):
            raise CfError(e.loc, f"float literal {e.value} is not finite")
        return self.value(cf.ConstOp(e.value, ty), e.loc)

    def _sym_lit(self, e: ast.SymLit, env: dict[str, SSAValue], ty) -> SSAValue:
        return self.value(cf.SymOp(), e.loc)

    def _var(self, e: ast.Var, env: dict[str, SSAValue], ty) -> SSAValue:
        if e.name in env:
            return env[e.name]
        return self.value(cf.FuncRefOp(e.name, ty), e.loc)

    def _binary(self, e: ast.Binary, env: dict[str, SSAValue], ty) -> SSAValue:
        lhs = self.expr(e.lhs, env)
        rhs = self.expr(e.rhs, env)
        return self.value(cf.BINARY_OPS[e.op](lhs, rhs, ty), e.loc)

    def _unary(self, e: ast.Unary, env: dict[str, SSAValue], ty) -> SSAValue:
        x = self.expr(e.operand, env)
        return self.value((cf.NegOp if e.op == "-" else cf.NotOp)(x, ty), e.loc)

    def _ternary(self, e: ast.Ternary, env: dict[str, SSAValue], ty) -> SSAValue:
        c = self.expr(e.cond, env)
        a = self.expr(e.then, env)
        b = self.expr(e.otherwise, env)
        return self.value(cf.SelectOp(c, a, b, ty), e.loc)

    def _call(self, e: ast.Call, env: dict[str, SSAValue], ty) -> SSAValue:
        if isinstance(e.callee, ast.Var) and e.callee.name not in env and e.callee.name in self.checked.funcs:
            args = [self.expr(a, env) for a in e.args]
            return self.value(cf.CallOp(e.callee.name, args, ty), e.loc)
        f = self.expr(e.callee, env)
        args = [self.expr(a, env) for a in e.args]
        return self.value(cf.ApplyOp(f, args, ty), e.loc)

    def _builtin(self, e: ast.Builtin, env: dict[str, SSAValue], ty) -> SSAValue:
        args = [self.expr(a, env) for a in e.args]
        return self.value(cf.BUILTIN_OPS[e.name](args, ty), e.loc)

    def _lp(self, e: ast.Lp, env: dict[str, SSAValue], ty) -> SSAValue:
        o = self.expr(e.objective, env)
        c = self.expr(e.constraints, env)
        return self.value(cf.LpOp(e.sense, o, c, ty), e.loc)

    def _access(self, e: ast.Access, env: dict[str, SSAValue], ty) -> SSAValue:
        b = self.expr(e.base, env)
        if e.member in self.checked.params and e.member not in self.checked.members:
            return self.value(cf.ParamOp(b, e.member, ty), e.loc)
        return self.value(cf.AccessOp(b, e.member, ty), e.loc)

    def _map(self, e: ast.Map, env: dict[str, SSAValue], ty) -> SSAValue:
        b = self.expr(e.base, env)
        f = self.expr(e.func, env)
        return self.value(cf.MapOp(b, f, ty), e.loc)

    def _dot(self, e: ast.Dot, env: dict[str, SSAValue], ty) -> SSAValue:
        b = self.expr(e.base, env)
        w = self.expr(e.arg, env)
        return self.value(cf.DotOp(b, w, ty), e.loc)

    def _traverse(self, e: ast.Traverse, env: dict[str, SSAValue], ty) -> SSAValue:
        b = self.expr(e.base, env)
        p = self.expr(e.priority, env)
        s = self.expr(e.stop, env)
        r = self.expr(e.replace, env)
        outer, inner = self.block, Block()
        self.block = inner
        inv = self.expr(e.invariant, env)
        self.emit(cf.YieldOp([inv]), e.invariant.loc)
        self.block = outer
        return self.value(cf.TraverseOp(e.direction, b, p, s, r, Region(inner), ty), e.loc)

    def _tuple(self, e: ast.TupleExpr, env: dict[str, SSAValue], ty) -> SSAValue:
        vals = [self.expr(x, env) for x in e.elems]
        return self.value(cf.TupleOp(vals, ty), e.loc)

    def _list(self, e: ast.ListLit, env: dict[str, SSAValue], ty) -> SSAValue:
        vals = [self.expr(x, env) for x in e.elems]
        return self.value(cf.ListOp(vals, ty), e.loc)


#: The lowering of each declaration class.
_DECL_LOWERINGS = {
    ast.ShapeDecl: Lowering.shape,
    ast.FuncDecl: Lowering.func,
    ast.ParamDecl: Lowering.parameter,
    ast.TransformerDecl: Lowering.transformer,
    ast.FlowDecl: Lowering.flow,
}

#: The lowering of each expression node class (one entry per class of :data:`cfmlir.syntax.ast.Expr`).
_LOWERINGS = {
    ast.IntLit: Lowering._literal,
    ast.FloatLit: Lowering._literal,
    ast.BoolLit: Lowering._literal,
    ast.SymLit: Lowering._sym_lit,
    ast.Var: Lowering._var,
    ast.Binary: Lowering._binary,
    ast.Unary: Lowering._unary,
    ast.Ternary: Lowering._ternary,
    ast.Call: Lowering._call,
    ast.Builtin: Lowering._builtin,
    ast.Lp: Lowering._lp,
    ast.Access: Lowering._access,
    ast.Map: Lowering._map,
    ast.Dot: Lowering._dot,
    ast.Traverse: Lowering._traverse,
    ast.TupleExpr: Lowering._tuple,
    ast.ListLit: Lowering._list,
}


def lower_program(checked: CheckedProgram) -> ModuleOp:
    """The (unverified) ``cf`` module of a type-checked program."""
    return Lowering(checked).lower()
