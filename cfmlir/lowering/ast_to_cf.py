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
            if isinstance(decl, ast.ShapeDecl):
                ops.append(self.shape(decl))
            elif isinstance(decl, ast.FuncDecl):
                ops.append(self.func(decl))
            elif isinstance(decl, ast.ParamDecl):
                ops.append(self.parameter(decl))
            elif isinstance(decl, ast.TransformerDecl):
                ops.append(self.transformer(decl))
            else:
                op = cf.FlowOp(decl.direction, decl.priority, decl.stop, decl.transformer)
                op.location = _loc(decl.loc)
                ops.append(op)
        module = ModuleOp(ops)
        # the file, without a position: whole-module errors (an empty file, no flow) name it
        module.location = _loc(Loc(self.checked.program.file, 0, 0))
        return module

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

    def parameter(self, decl: ast.ParamDecl) -> cf.ParameterOp:
        """``cf.parameter @a``: per operator, a region over its rule bindings yielding (lo, hi, init)."""
        domains: list[tuple[str, Region]] = []
        for op in decl.ops:
            bindings = operator_bindings(op)
            block = Block(arg_types=[to_cf(t) for t in bindings.values()])
            env: dict[str, SSAValue] = {}
            for name, arg in zip(bindings, block.args):
                _hint(arg, cf.binding_hint(name))
                env[name] = arg
            self.block = block
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
            bindings = operator_bindings(rule.op)
            block = Block(arg_types=[to_cf(t) for t in bindings.values()])
            env: dict[str, SSAValue] = {}
            for name, arg in zip(bindings, block.args):
                _hint(arg, cf.binding_hint(name))
                env[name] = arg
            self.block = block
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
        if isinstance(e, (ast.IntLit, ast.FloatLit, ast.BoolLit)):
            if isinstance(e, ast.IntLit) and not -(2**63) <= e.value < 2**63:
                raise CfError(e.loc, f"integer literal {e.value} does not fit in 64 bits")
            if isinstance(e, ast.FloatLit) and not math.isfinite(e.value):
                raise CfError(e.loc, f"float literal {e.value} is not finite")
            return self.value(cf.ConstOp(e.value, ty), e.loc)
        if isinstance(e, ast.SymLit):
            return self.value(cf.SymOp(), e.loc)
        if isinstance(e, ast.Var):
            if e.name in env:
                return env[e.name]
            return self.value(cf.FuncRefOp(e.name, ty), e.loc)
        if isinstance(e, ast.Binary):
            lhs = self.expr(e.lhs, env)
            rhs = self.expr(e.rhs, env)
            return self.value(cf.BINARY_OPS[e.op](lhs, rhs, ty), e.loc)
        if isinstance(e, ast.Unary):
            x = self.expr(e.operand, env)
            return self.value((cf.NegOp if e.op == "-" else cf.NotOp)(x, ty), e.loc)
        if isinstance(e, ast.Ternary):
            c = self.expr(e.cond, env)
            a = self.expr(e.then, env)
            b = self.expr(e.otherwise, env)
            return self.value(cf.SelectOp(c, a, b, ty), e.loc)
        if isinstance(e, ast.Call):
            if isinstance(e.callee, ast.Var) and e.callee.name not in env and e.callee.name in self.checked.funcs:
                args = [self.expr(a, env) for a in e.args]
                return self.value(cf.CallOp(e.callee.name, args, ty), e.loc)
            f = self.expr(e.callee, env)
            args = [self.expr(a, env) for a in e.args]
            return self.value(cf.ApplyOp(f, args, ty), e.loc)
        if isinstance(e, ast.Builtin):
            args = [self.expr(a, env) for a in e.args]
            return self.value(cf.BUILTIN_OPS[e.name](args, ty), e.loc)
        if isinstance(e, ast.Lp):
            o = self.expr(e.objective, env)
            c = self.expr(e.constraints, env)
            return self.value(cf.LpOp(e.sense, o, c, ty), e.loc)
        if isinstance(e, ast.Access):
            b = self.expr(e.base, env)
            if e.member in self.checked.params and e.member not in self.checked.members:
                return self.value(cf.ParamOp(b, e.member, ty), e.loc)
            return self.value(cf.AccessOp(b, e.member, ty), e.loc)
        if isinstance(e, ast.Map):
            b = self.expr(e.base, env)
            f = self.expr(e.func, env)
            return self.value(cf.MapOp(b, f, ty), e.loc)
        if isinstance(e, ast.Dot):
            b = self.expr(e.base, env)
            w = self.expr(e.arg, env)
            return self.value(cf.DotOp(b, w, ty), e.loc)
        if isinstance(e, ast.Traverse):
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
        if isinstance(e, ast.TupleExpr):
            vals = [self.expr(x, env) for x in e.elems]
            return self.value(cf.TupleOp(vals, ty), e.loc)
        if isinstance(e, ast.ListLit):
            vals = [self.expr(x, env) for x in e.elems]
            return self.value(cf.ListOp(vals, ty), e.loc)
        raise AssertionError(f"unhandled expression {type(e).__name__}")  # pragma: no cover


def lower_program(checked: CheckedProgram) -> ModuleOp:
    """The (unverified) ``cf`` module of a type-checked program."""
    return Lowering(checked).lower()
