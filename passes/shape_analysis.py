"""``--shape-analysis``: lift a ``cf`` module to the tensor-level ``cftensor`` dialect.

Algorithm (paper section 4.2, "Converting ConstraintFlow Specification to IR"):

For the transformer named by the module's ``cf.flow``, every operator rule becomes one
``cftensor.rule`` that computes all shape members of *all* neurons of a layer, for a whole batch of
properties, at once.  The rule body is produced by a visitor over the rule's ``cf`` ops that returns,
for each ``cf`` value, a lifted value: a ``cftensor`` SSA value whose type carries the metadata stack
(type, is-const, intrinsic shape, broadcast factor; see ``cftensor_metadata``).  Values start at the
layer level, one stack element whose dimensions are ``[batch, curr]`` (plus list dimensions):

* base cases: a literal is a compile-time scalar ``<const R, [1], [1]>``; the rule bindings are
  ``cftensor.input`` values (``curr``/``prev`` of a unary operator ``<N, [1, curr], [batch, 1]>``, the
  ``prev`` list of ``Affine`` ``<N, [1, 1, prev], [batch, curr, 1]>``); ``sym`` is a fresh noise symbol
  per (sample, neuron).
* ``visitBinaryFloat``: both operands are aligned with ``alignShapes`` (the Unequal-rank rule, then
  the LCM of the stacks, then ``add_dim``/``repeat`` only where an operand's intrinsic size is 1 and the
  LCM's is not; compile-time scalars broadcast and are never materialised), then one
  ``binary``/``mult``/``ternary`` op.
* ``visitBinaryPolyexp``/``Symexp``: operands are promoted (Neuron -> ``neuron_to_poly``, Float ->
  ``const_to_poly``, Noise -> ``noise_to_sym``), split into coefficients (one more ``poly``/``sym``
  dimension) and constant, each part aligned and combined, and re-packed with ``combine_poly``/``sym``.
  A scalar times a PolyExp scales both parts; a conditional of PolyExps selects each part.
* ``visitMap``: ``map_neuron``/``map_coeff`` push a stack element ``[poly]`` (``[sym]`` for SymExps);
  the neurons are compressed (intrinsic 1, the old total shape as broadcast).  The function body is
  inlined with the parameters bound to them; values from outside the map are lifted by pushing an
  element of intrinsic size 1.  If the function is not zero-preserving in its coefficient (``f(n, 0) ==
  0``), its result is masked by ``coeff != 0`` so that only the summands of the expression count.  The
  result is reduced along the top element's first dimension (the stack element is popped and its other
  dimensions are appended to the element below), and the original constant term is added back.
* ``visitTraverse``: a ``cftensor.while`` whose loop-carried PolyExp has the expanded layer shape
  ``[batch, curr]`` (so its metadata does not change between iterations).  Each iteration computes,
  per expression, the neurons with a non-zero coefficient whose stop function is false, the minimum
  of their priority function, and replaces exactly the neurons attaining it (``sum sel * f(n, c)``),
  keeping the others; the loop ends when no expression has such a neuron.  Priority and stop are
  evaluated per neuron and coefficient, not per layer.  The invariant is not executed.
* calls are inlined at every call site (a function's shapes depend on its caller); curried partial
  applications are closures of the analysis.
* a rule's result (a tuple, possibly conditional) is merged per member: ``c ? (a1, a2) : (b1, b2)``
  becomes ``(c ? a1 : b1, c ? a2 : b2)`` evaluated per neuron; each member is expanded to its stored
  shape ``[batch, curr]`` before ``cftensor.return``.
* parameters: a read ``n[a]`` (``cf.param``) is a ``cftensor.param`` whose metadata is the neurons'
  with the batch and ``curr`` dimensions of the bottom element materialised (a value per sample and
  per reading neuron): ``curr[a]`` is ``<R, [batch, curr], [1, 1]>``, ``n[a]`` in a traverse of
  ``curr``'s bounds ``<R, [lay], [1] :: R, [batch, curr], [1, 1]>``.  Each ``cf.parameter`` becomes
  one ``cftensor.param_domain`` per operator, lifted like a rule from that operator's inputs and
  returning ``lo``, ``hi`` and the initial value ``[batch, curr]``.
* metadata: ``curr[weight]`` is ``<R, [1, curr, prev], [batch, 1, 1]>``, ``curr[bias]``
  ``<R, [1, curr], [batch, 1]>`` (weights do not depend on the sample); ``n[layer]`` keeps the shape of
  the neurons; a shape member of neurons takes their shape with the batch dimension materialised.

* lists: ``sum``/``max``/``min`` reduce the list dimension; ``map_list`` applies an element-by-element
  function to the whole list tensor.  A ``Maxpool`` rule's ``prev`` is each neuron's own window
  ``<N, [1, curr, prev], [batch, 1, 1]>`` (``prev`` = the window length); windows cut by the pooling's
  padding are laid out at full length and the padding entries are masked out (``prev_mask``) in every
  list reduction and ``dot``, so a rule sees the neurons of its window only, as in the interpreter.

Constructs the compiled engine does not support (``lp``, ``avg``/``len``/``argmax``/``concat`` of
lists, ``map_list`` of a function with list operations inside, ``sym`` inside a map,
``weight``/``bias`` of neurons other than ``curr``) are reported as one-line errors at the source
position of the ``cf`` op concerned (``error: file:line:col: ...``; the op inside a called function
when it is there); every ``cftensor`` op emitted carries the location of the ``cf`` op it lifts.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import singledispatchmethod

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import Pure

from cfmlir.diagnostics import CfError, Loc, loc_of
from cfmlir.dialects import cf
from cfmlir.dialects import cftensor as ct
from cfmlir.dialects.cf_types import to_semantic
from cfmlir.dialects.cftensor_metadata import (
    ONE, Element, Metadata, Size, align_shapes, extend_rank, is_uniform,
)
from cfmlir.dialects import cf_type_lattice as sem
from cfmlir.dialects.cf_typing_rules import operator_bindings
from cfruntime import contract

BATCH, CURR, PREV, POLY, SYM, LAY = (Size.of(s) for s in ("batch", "curr", "prev", "poly", "sym", "lay"))
_LETTER = contract.LETTER_OF_TYPE
_BINARY = {
    cf.AddOp: "add", cf.SubOp: "sub", cf.MulOp: "mul", cf.DivOp: "div", cf.AndOp: "and", cf.OrOp: "or",
    cf.LtOp: "lt", cf.LeOp: "le", cf.GtOp: "gt", cf.GeOp: "ge", cf.EqOp: "eq", cf.NeOp: "ne",
}
_UNARY_BUILTINS = {cf.SigmoidOp: "sigmoid", cf.TanhOp: "tanh", cf.ExpOp: "exp", cf.LogOp: "log", cf.AbsOp: "abs",
                   cf.SinOp: "sin", cf.CosOp: "cos", cf.FloorOp: "floor"}


class ShapeAnalysisError(CfError):
    """A construct the tensor compiler cannot lift, at the source position of the ``cf`` op (or rule)
    it is about: ``ShapeAnalysisError(loc, message)``, ``str()`` ``error: file:line:col: message``."""


def result_type(op: Operation) -> sem.Type:
    """The ConstraintFlow type of a ``cf`` op's result."""
    return to_semantic(op.results[0].type)


def base_type(t: sem.Type) -> sem.BaseType:
    while isinstance(t, sem.ListType):
        t = t.elem
    assert isinstance(t, sem.BaseType), t
    return t


def letter(t: sem.Type) -> str:
    return _LETTER[base_type(t).name]


@dataclass
class Val:
    """A lifted value: a cftensor SSA value and its ConstraintFlow type."""

    v: SSAValue
    ty: sem.Type

    @property
    def m(self) -> Metadata:
        return ct.meta(self.v)

    @property
    def letter(self) -> str:
        return letter(self.ty)


@dataclass
class Closure:
    """A function value: a ``cf.func`` and the arguments applied so far (currying)."""

    func: cf.FuncOp
    args: tuple


class RuleLifter:
    """Lifts one transformer rule; see the module docstring for the algorithm."""

    def __init__(self, module: ModuleOp, members: list[tuple[str, sem.Type]]):
        self.funcs = {o.properties["sym_name"].data: o for o in module.ops if isinstance(o, cf.FuncOp)}
        self.members = members
        self.block = Block()
        self.map_dims: list[Size] = []  # the dimension each enclosing map pushed (poly or sym)
        self.inputs: dict[str, Val] = {}
        self.curr_value: SSAValue | None = None
        #: a Maxpool rule's ``prev`` windows have padding entries (absent neurons): every list
        #: operation over their ``prev`` dimension masks them out with this input (see list_masked)
        self.window_mask: bool = False
        #: the ``cf`` op being lifted (set by :meth:`visit`; the rule's terminator outside any op): the
        #: ``cftensor`` ops emitted meanwhile get its location, and errors point at it
        self.at: Operation | None = None

    # -- emission helpers ------------------------------------------------------------------------
    def emit(self, op: Operation) -> SSAValue | None:
        self.locate(op)
        self.block.add_op(op)
        return op.results[0] if op.results else None

    def locate(self, op: Operation) -> None:
        """Give a ``cftensor`` op the source location of the ``cf`` op it is lifted from."""
        if self.at is not None:
            op.location = self.at.location

    def error(self, message: str) -> ShapeAnalysisError:
        """An error about the ``cf`` op being lifted (its location, else its function's or rule's)."""
        return ShapeAnalysisError(loc_of(self.at, Loc("", 0, 0)), message)

    def const(self, value: float, t: sem.Type = sem.FLOAT) -> Val:
        return Val(self.emit(ct.ConstOp(float(value), letter(t))), t)

    def input(self, name: str, m: Metadata, t: sem.Type) -> Val:
        """A rule input (its type is the binding's: an input declares it, as a function argument does)."""
        if name not in self.inputs:
            self.inputs[name] = Val(self.emit(ct.InputOp(name, ct.TensorType(m))), t)
        return self.inputs[name]

    # -- alignment ---------------------------------------------------------------------------------
    def lift_height(self, x: Val, height: int) -> Val:
        """Use an outer value inside ``height - 1`` nested maps: push one element of intrinsic size 1
        (broadcast over the map's dimension) per missing level."""
        while x.m.height < height:
            dim = self.map_dims[x.m.height - 1]
            x = Val(self.emit(ct.AddDimOp(x.v, len(x.m.shape), dim, new_element=True)), x.ty)
        return x

    def coerce(self, x: Val, target: Metadata, keep_scalar: bool = True) -> Val:
        """Bring ``x`` to ``target``'s intrinsic shape with add_dim/repeat (scalars stay scalars when
        ``keep_scalar``)."""
        if keep_scalar and ct.is_scalar_const(x.m):
            return x
        x = self.lift_height(x, target.height)
        m = x.m
        if m.top.rank < target.top.rank:
            ext = m.with_top(extend_rank(m.top, target.top))
            v = x.v
            for d in range(len(m.shape), len(ext.shape)):
                v = self.emit(ct.AddDimOp(v, d, ext.broadcast[d]))
            x, m = Val(v, x.ty), ext
        v = x.v
        for i, (s, t) in enumerate(zip(m.shape, target.shape)):
            if s != t:
                if not s.is_one:
                    raise self.error(f"cannot align a dimension of size {s} with {t}")
                v = self.emit(ct.RepeatOp(v, i, t))
        return Val(v, x.ty)

    def align(self, *xs: Val) -> list[Val]:
        """alignShapes over any number of operands (scalar constants broadcast untouched)."""
        real = [x for x in xs if not ct.is_scalar_const(x.m)]
        if not real:
            return list(xs)
        height = max(x.m.height for x in real)
        real = [self.lift_height(x, height) for x in real]
        target = real[0].m
        for x in real[1:]:
            _, _, target = align_shapes(target, x.m)
        out, it = [], iter(real)
        for x in xs:
            out.append(x if ct.is_scalar_const(x.m) else self.coerce(next(it), target))
        return out

    # -- PolyExp / SymExp parts --------------------------------------------------------------------
    def promote(self, x: Val, kind: str) -> Val:
        """Promote a value to a PolyExp (``kind == 'P'``) or SymExp (``'S'``)."""
        t = sem.POLYEXP if kind == "P" else sem.SYMEXP
        if x.letter == kind:
            return x
        if x.letter == "N" and kind == "P":
            return Val(self.emit(ct.NeuronToPolyOp(x.v)), t)
        if x.letter == "E" and kind == "S":
            return Val(self.emit(ct.NoiseToSymOp(x.v)), t)
        if x.letter in "IRB":
            op = ct.ConstToPolyOp if kind == "P" else ct.ConstToSymOp
            return Val(self.emit(op(x.v)), t)
        raise self.error(f"cannot use a {x.ty} as a {t}")

    def parts(self, x: Val) -> tuple[Val | None, Val]:
        """(coefficients, constant) of a PolyExp/SymExp; ``None`` stands for all-zero coefficients
        (a promoted constant), which the part-wise arithmetic below folds away.  The coefficients
        have one more trailing dimension in the top element (``poly`` or ``sym``)."""
        if x.letter in "IRB":
            return None, x
        if isinstance(x.v.owner, (ct.ConstToPolyOp, ct.ConstToSymOp)):
            src = x.v.owner.operands[0]
            return None, Val(src, sem.FLOAT)
        if x.letter == "N":
            x = self.promote(x, "P")
        if x.letter == "E":
            x = self.promote(x, "S")
        if x.letter == "P":
            c, k = ct.ExtractPolyCoeffOp(x.v), ct.ExtractPolyConstOp(x.v)
        else:
            c, k = ct.ExtractSymCoeffOp(x.v), ct.ExtractSymConstOp(x.v)
        return Val(self.emit(c), sem.FLOAT), Val(self.emit(k), sem.FLOAT)

    def combine(self, coeff: Val | None, const: Val, kind: str) -> Val:
        """Re-pack parts; the constant is brought to the coefficients' shape (minus the trailing
        dimension) so both parts agree."""
        t = sem.POLYEXP if kind == "P" else sem.SYMEXP
        if coeff is None:
            op = ct.ConstToPolyOp if kind == "P" else ct.ConstToSymOp
            return Val(self.emit(op(const.v)), t)
        cm = coeff.m
        top = cm.top
        km = cm.with_top(Element("R", top.shape[:-1], top.broadcast[:-1], False))
        if not ct.is_scalar_const(const.m):
            const = self.lift_height(const, km.height)
            _, _, km = align_shapes(km, const.m)
            t_top = km.top
            target_c = km.with_top(Element("R", t_top.shape + (top.shape[-1],), t_top.broadcast + (top.broadcast[-1],), False))
            coeff = self.coerce(coeff, target_c, keep_scalar=False)
        const = self.coerce(const, km, keep_scalar=False)
        op = ct.CombineToPolyOp if kind == "P" else ct.CombineToSymOp
        return Val(self.emit(op(coeff.v, const.v)), t)

    def cbinary(self, op: str, a: Val | None, b: Val | None) -> Val | None:
        """Binary arithmetic on coefficient parts where ``None`` is zero."""
        if a is None and b is None:
            return None
        if op == "add":
            return b if a is None else a if b is None else self.binary("add", a, b, sem.FLOAT)
        if op == "sub":
            if b is None:
                return a
            return self.unary("neg", b, sem.FLOAT) if a is None else self.binary("sub", a, b, sem.FLOAT)
        if op in ("mul", "div"):
            return None if (a is None or (op == "mul" and b is None)) else self.binary(op, a, b, sem.FLOAT)
        raise AssertionError(op)  # pragma: no cover

    def cternary(self, c: Val, a: Val | None, b: Val | None) -> Val | None:
        if a is None and b is None:
            return None
        zero = self.const(0.0)
        return self.ternary(c, a if a is not None else zero, b if b is not None else zero, sem.FLOAT)

    # -- tensor arithmetic -----------------------------------------------------------------------
    def binary(self, op: str, a: Val, b: Val, t: sem.Type) -> Val:
        a, b = self.align(a, b)
        if op == "mul":
            return Val(self.emit(ct.MultOp(a.v, b.v)), t)
        return Val(self.emit(ct.BinaryOp(op, a.v, b.v)), t)

    def unary(self, op: str, a: Val, t: sem.Type) -> Val:
        return Val(self.emit(ct.UnaryOp(op, a.v)), t)

    def ternary(self, c: Val, a: Val, b: Val, t: sem.Type) -> Val:
        kind = letter(t)
        if kind in "PS":
            (ac, ak), (bc, bk) = self.parts(a), self.parts(b)
            return self.combine(self.cternary(c, ac, bc), self.ternary(c, ak, bk, sem.FLOAT), kind)
        c, a, b = self.align(c, a, b)
        return Val(self.emit(ct.TernaryOp(c.v, a.v, b.v)), t)

    def arith(self, op: str, a: Val, b: Val, t: sem.Type) -> Val:
        """``a op b`` for any ConstraintFlow operand types (visitBinaryFloat / visitBinaryPolyexp)."""
        kind = letter(t)
        if kind not in "PS":
            return self.binary(op, a, b, t)
        if op in ("add", "sub"):
            (ac, ak), (bc, bk) = self.parts(a), self.parts(b)
            return self.combine(self.cbinary(op, ac, bc), self.binary(op, ak, bk, sem.FLOAT), kind)
        if op == "mul":
            scalar, e = (a, b) if a.letter in "IRB" else (b, a)
        elif op == "div":
            e, scalar = a, b
        else:
            raise self.error(f"operation '{op}' on a {t}")
        ec, ek = self.parts(e)
        if op == "mul":
            return self.combine(self.cbinary("mul", scalar, ec), self.binary("mul", scalar, ek, sem.FLOAT), kind)
        return self.combine(self.cbinary("div", ec, scalar), self.binary("div", ek, scalar, sem.FLOAT), kind)

    def reduce_top(self, x: Val, kind: str = "sum") -> Val:
        """Reduce along the first dimension of the top stack element (the map dimension) and pop it."""
        return Val(self.emit(ct.ReduceOp(x.v, sum(e.rank for e in x.m.rest), kind)), x.ty)

    # -- expressions -------------------------------------------------------------------------------
    def visit_region(self, region: Region, env: dict) -> Operation:
        """Lift every op of a single-block region; returns its terminator."""
        for op in region.block.ops:
            if isinstance(op, (cf.YieldOp, cf.ReturnOp)):
                return op
            env[op.results[0]] = self.visit(op, env)
        raise self.error("region without terminator")  # pragma: no cover - the verifier checks

    def visit(self, op: Operation, env: dict):
        """The lifted value of ``op`` (its operands' lifted values are in ``env``): :meth:`lift`
        dispatches on the op's type.  While ``op`` is lifted (the functions it calls included, down to
        their own ops) the ``cftensor`` ops emitted get its location, and errors point at it."""
        outer, self.at = self.at, op
        try:
            return self.lift(op, env)
        finally:
            self.at = outer

    # One ``lift`` method per ``cf`` op class (the op's type picks it, as in xDSL's printers); an op
    # class without one is not supported by the tensor compiler.
    @singledispatchmethod
    def lift(self, op: Operation, env: dict):
        raise self.error(f"the tensor compiler does not support '{op.name}' yet")

    @lift.register
    def _(self, op: cf.ConstOp, env: dict) -> Val:
        v = op.value
        if isinstance(v, IntegerAttr) and isinstance(op.results[0].type, cf.T.BoolType):
            return self.const(1.0 if v.value.data else 0.0, sem.BOOL)
        value = v.value.data if isinstance(v, (IntegerAttr, FloatAttr)) else v
        return self.const(float(value), result_type(op))

    def lift_binary(self, op: Operation, env: dict) -> Val:
        """The arithmetic, logic and comparison ops of :data:`_BINARY`."""
        return self.arith(_BINARY[type(op)], env[op.operands[0]], env[op.operands[1]], result_type(op))

    def lift_unary_builtin(self, op: Operation, env: dict) -> Val:
        """The element-wise builtins of :data:`_UNARY_BUILTINS` (``sigma``, ``exp``...)."""
        return self.unary(_UNARY_BUILTINS[type(op)], env[op.operands[0]], result_type(op))

    for _table, _method in ((_BINARY, lift_binary), (_UNARY_BUILTINS, lift_unary_builtin)):
        for _cls in _table:
            lift.register(_cls, _method)
    del _table, _method, _cls

    @lift.register
    def _(self, op: cf.InOp, env: dict) -> None:
        return None  # a constraint: only used in invariants, never executed

    @lift.register
    def _(self, op: cf.NegOp, env: dict) -> Val:
        a, t = env[op.operands[0]], result_type(op)
        if letter(t) in "PS":
            c, k = self.parts(a)
            return self.combine(self.cbinary("sub", None, c), self.unary("neg", k, sem.FLOAT), letter(t))
        return self.unary("neg", a, t)

    @lift.register
    def _(self, op: cf.NotOp, env: dict) -> Val:
        return self.unary("not", env[op.operands[0]], result_type(op))

    @lift.register
    def _(self, op: cf.SelectOp, env: dict) -> Val | list:
        c, a, b = (env[o] for o in op.operands)
        t = result_type(op)
        if isinstance(t, sem.TupleType):
            return [self.ternary(c, x, y, ft) for x, y, ft in zip(a, b, t.elems)]
        return self.ternary(c, a, b, t)

    @lift.register
    def _(self, op: cf.TupleOp, env: dict) -> list:
        return [env[o] for o in op.operands]

    @lift.register
    def _(self, op: cf.FuncRefOp, env: dict) -> Closure:
        return Closure(self.funcs[op.callee.root_reference.data], ())

    @lift.register
    def _(self, op: cf.CallOp, env: dict) -> object:
        return self.apply(Closure(self.funcs[op.callee.root_reference.data], ()), [env[o] for o in op.operands])

    @lift.register
    def _(self, op: cf.ApplyOp, env: dict) -> object:
        return self.apply(env[op.operands[0]], [env[o] for o in op.operands[1:]])

    @lift.register
    def _(self, op: cf.MaxOp, env: dict) -> Val:
        return self.extremum("max", op, env)

    @lift.register
    def _(self, op: cf.MinOp, env: dict) -> Val:
        return self.extremum("min", op, env)

    def extremum(self, kind: str, op: Operation, env: dict) -> Val:
        """``max``/``min`` of two values, or of a list (one operand)."""
        if len(op.operands) == 2:
            return self.binary(kind, env[op.operands[0]], env[op.operands[1]], result_type(op))
        return self.reduce_list(env[op.operands[0]], kind, result_type(op))

    @lift.register
    def _(self, op: cf.SumOp, env: dict) -> Val:
        return self.sum_list(env[op.operands[0]], result_type(op))

    @lift.register
    def _(self, op: cf.MapListOp, env: dict) -> Val:
        return self.map_list(env[op.operands[0]], env[op.operands[1]], result_type(op))

    @lift.register
    def _(self, op: cf.AccessOp, env: dict) -> Val:
        return self.access(env[op.operands[0]], op.member.data, result_type(op), op.operands[0])

    @lift.register
    def _(self, op: cf.ParamOp, env: dict) -> Val:
        return self.param(env[op.operands[0]], op.param.data, result_type(op))

    @lift.register
    def _(self, op: cf.DotOp, env: dict) -> Val:
        return self.dot(env[op.operands[0]], env[op.operands[1]], result_type(op))

    @lift.register
    def _(self, op: cf.MapOp, env: dict) -> Val:
        return self.map(env[op.operands[0]], env[op.operands[1]], result_type(op))

    @lift.register
    def _(self, op: cf.TraverseOp, env: dict) -> Val:
        return self.traverse(*(env[o] for o in op.operands[:4]))

    @lift.register
    def _(self, op: cf.SymOp, env: dict) -> Val:
        return self.sym()

    def apply(self, f: Closure, args: list) -> object:
        args = list(f.args) + list(args)
        body = f.func.body.block
        if len(args) < len(body.args):
            return Closure(f.func, tuple(args))
        env = dict(zip(body.args, args))
        term = self.visit_region(f.func.body, env)
        return env[term.operands[0]]

    def sum_list(self, x: Val, t: sem.Type) -> Val:
        """``sum(list)``: reduce the last (list) dimension of the top element."""
        return self.reduce_list(x, "sum", t)

    def reduce_list(self, x: Val, kind: str, t: sem.Type) -> Val:
        """``sum``/``max``/``min`` of a list: reduce the last (list) dimension of the top element
        (absent entries of a max-pool window count as the reduction's identity)."""
        if x.letter not in contract.NUMBER_LETTERS:
            raise self.error(f"the tensor compiler supports '{kind}' of Float lists only, not of a {x.ty} "
                                     f"(write a dot product with weights instead)")
        x = self.list_masked(x, {"sum": 0.0, "max": float("-inf"), "min": float("inf")}[kind])
        return Val(self.emit(ct.ReduceOp(x.v, len(x.m.shape) - 1, kind)), t)

    def list_masked(self, x: Val, identity: float) -> Val:
        """A list over a max-pool window with its padding entries replaced by ``identity`` (the
        reduction's neutral value), so a rule sees each window as the interpreter does: only the
        neurons in it.  Lists over other dimensions, and every list of other operators, are as
        they are."""
        if not self.window_mask or ct.is_scalar_const(x.m) or not x.m.top.shape or x.m.top.shape[-1] != PREV:
            return x
        if x.m.height != 1:
            raise self.error("the tensor compiler does not support list operations on a max-pool window "
                                     "inside a map or traverse")
        mask = self.input("prev_mask", Metadata.single("B", [ONE, CURR, PREV], [BATCH, ONE, ONE]), sem.BOOL)
        return self.ternary(mask, x, self.const(identity), x.ty)

    def map_list(self, x: Val, f: Closure, t: sem.Type) -> Val:
        """``l.mapList(f)`` for a function ``f`` that works element by element (no list operation in
        its body or the functions it calls): ``f`` applied to the whole list tensor is the list of
        its results, aligned with the list (a result that does not depend on the element is
        repeated along it)."""
        if not isinstance(f, Closure):  # pragma: no cover - the type checker makes it a function
            raise self.error("map_list needs a function")
        bad = _list_op_in(f.func, self.funcs, set())
        if bad is not None:
            raise self.error(f"the tensor compiler supports map_list only with a function that works element "
                                     f"by element (its body uses '{bad}')")
        r = self.apply(f, [x])
        kind = letter(t)
        if ct.is_scalar_const(r.m):
            target = x.m.with_type(kind)
        else:
            if r.m.height != x.m.height:  # pragma: no cover - no map is open around the element
                raise self.error("map_list result at another map level")
            _, _, target = align_shapes(x.m, r.m)
            target = target.with_type(kind)
        out = self.coerce(r, target, keep_scalar=False)
        return Val(out.v, t)

    def access(self, x: Val, member: str, t: sem.Type, cf_base: SSAValue) -> Val:
        if member in ("weight", "bias", "alpha"):
            if self.curr_value is None or x.v is not self.curr_value:
                raise self.error(f"the tensor compiler supports '{member}' only on curr")
            if member == "weight":
                return self.input("weight", Metadata.single("R", [ONE, CURR, PREV], [BATCH, ONE, ONE]), t)
            # bias, alpha: one number per neuron of the layer, the same for every sample
            return self.input(member, Metadata.single("R", [ONE, CURR], [BATCH, ONE]), t)
        # a per-layer member is uniform along layer-local dims; a shape member is one value per sample
        return Val(self.emit(ct.AccessOp(x.v, member, letter(t))), t)

    def param(self, x: Val, name: str, t: sem.Type) -> Val:
        """``x[name]`` for a parameter: one value per sample and per reading neuron (``curr``), so the
        bottom element's batch and ``curr`` dimensions are materialised."""
        if x.letter != "N":  # pragma: no cover - the type checker makes it a neuron (list)
            raise self.error("a parameter is read on neurons")
        if x.m.elements[-1].rank < 2:  # pragma: no cover - every rule value has the batch and curr dimensions
            raise self.error("a parameter read outside a rule's layer")
        return Val(self.emit(ct.ParamOp(x.v, name)), t)

    def dot(self, base: Val, w: Val, t: sem.Type) -> Val:
        kind = letter(t)
        w = self.list_masked(w, 0.0)  # absent entries of a max-pool window weigh nothing
        if base.letter == "N":
            base, w = self.align(base, w)
            return Val(self.emit(ct.DotOp(base.v, w.v)), t)
        if kind == "R":  # Float List . Float List
            return self.sum_list(self.binary("mul", base, w, sem.FLOAT), t)
        # a list of PolyExps/SymExps: sum_i w_i * e_i, with the list dimension reduced
        e = self.promote(base, kind) if base.letter != kind else base
        ec, ek = self.parts(e)
        if ec is None:
            return self.combine(None, self.sum_list(self.binary("mul", w, ek, sem.FLOAT), sem.FLOAT), kind)
        wc = self.coerce_add_trailing(w, ec)
        coeff = self.binary("mul", wc, ec, sem.FLOAT)
        coeff = self.reduce_dim(coeff, len(coeff.m.shape) - 2)
        const = self.sum_list(self.binary("mul", w, ek, sem.FLOAT), sem.FLOAT)
        return self.combine(coeff, const, kind)

    def coerce_add_trailing(self, w: Val, like: Val) -> Val:
        """``w`` with one trailing dimension broadcast over ``like``'s last dimension."""
        return Val(self.emit(ct.AddDimOp(w.v, len(w.m.shape), like.m.top.total[-1])), w.ty)

    def reduce_dim(self, x: Val, dim: int) -> Val:
        return Val(self.emit(ct.ReduceOp(x.v, dim, "sum")), x.ty)

    def sym(self) -> Val:
        if self.map_dims:
            raise self.error("the tensor compiler does not support 'sym' inside map or traverse")
        return Val(self.emit(ct.SymOp()), sem.NOISE)

    # -- map -----------------------------------------------------------------------------------------
    def map_inputs(self, e: Val) -> tuple[Val, Val, Val, Size]:
        """(neurons or noise symbols, coefficients, constant, map dimension) of ``e``."""
        kind = e.letter
        dim = POLY if kind == "P" else SYM
        if kind == "P":
            n, k = ct.MapNeuronOp(e.v), ct.ExtractPolyConstOp(e.v)
        else:
            n, k = ct.MapNoiseOp(e.v), ct.ExtractSymConstOp(e.v)
        c = ct.MapCoeffOp(e.v)
        nty = sem.NEURON if kind == "P" else sem.NOISE
        return Val(self.emit(n), nty), Val(self.emit(c), sem.FLOAT), Val(self.emit(k), sem.FLOAT), dim

    def as_map_base(self, e: Val, t: sem.Type | None = None) -> Val:
        if e.letter in "PS":
            return e
        return self.promote(e, "S" if e.letter == "E" else "P")

    def call_in_map(self, f: Closure, n: Val, c: Val, dim: Size) -> object:
        """Apply ``f`` to the summands; the caller has entered the map level (:meth:`in_map`)."""
        assert self.map_dims and self.map_dims[-1] == dim
        return self.apply(f, [n, c])

    @contextmanager
    def in_map(self, dim: Size):
        """Values of the next stack height may be made (outer values get lifted along ``dim``)."""
        self.map_dims.append(dim)
        try:
            yield
        finally:
            self.map_dims.pop()

    def sum_summands(self, r: Val, c: Val) -> Val:
        """Reduce a PolyExp/SymExp ``r`` made per summand of a map (coefficients ``c``) over the map
        dimension, part by part."""
        rc, rk = self.parts(r)
        if ct.is_scalar_const(rk.m):  # a constant summand still counts once per summand
            rk = self.coerce(rk, c.m.with_type("R"), keep_scalar=False)
        else:
            rk = self.lift_height(rk, c.m.height)
        return self.combine(self.reduce_top(rc) if rc is not None else None, self.reduce_top(rk), r.letter)

    def masked(self, r: Val, mask: Val) -> Val:
        """``mask * r`` for a scalar or PolyExp/SymExp ``r`` (``mask`` is 0/1)."""
        kind = r.letter
        if kind in "PS":
            rc, rk = self.parts(r)
            return self.combine(self.cbinary("mul", mask, rc), self.binary("mul", mask, rk, sem.FLOAT), kind)
        return self.binary("mul", mask, r, r.ty)

    def map(self, e: Val, f: Closure, t: sem.Type) -> Val:
        e = self.as_map_base(e)
        n, c, k, dim = self.map_inputs(e)
        with self.in_map(dim):
            r = self.call_in_map(f, n, c, dim)
            height = c.m.height
            r = self.lift_height(r, height) if not ct.is_scalar_const(r.m) else self.coerce(r, c.m, keep_scalar=False)
            if not zero_preserving(f):
                nonzero = self.binary("ne", c, self.const(0.0), sem.BOOL)
                r = self.masked(r, nonzero)
        kind = letter(t)
        if r.letter in "PS":
            total = self.sum_summands(r, c)
            if kind != r.letter:  # pragma: no cover - the type checker makes them agree
                total = self.promote(total, kind)
            return self.arith("add", total, k, t)
        s = self.reduce_top(r)
        return self.arith("add", s, k, t)

    # -- traverse ------------------------------------------------------------------------------------
    def traverse(self, e: Val, prio: Closure, stop: Closure, replace: Closure) -> Val:
        e = self.as_map_base(e)
        if e.letter != "P":
            raise self.error("traverse needs a PolyExp")
        base = e.m
        expanded = Metadata((Element("P", base.top.total, (ONE,) * base.top.rank, False),) + base.rest)
        e = self.coerce(e, expanded, keep_scalar=False)
        loop_t = ct.TensorType(expanded)
        layered = self.layer_traverse(e, loop_t, prio, stop, replace)
        if layered is not None:
            return layered
        outer = self.block

        # before: [any(active), e, active, min priority]
        before, cur = self.open_loop_block(loop_t)
        n, c, _k, dim = self.map_inputs(cur)
        with self.in_map(dim):
            active, _p = self.active_and_priority(n, c, prio, stop, dim)
            cond = Val(self.emit(ct.AnyOp(active.v)), sem.BOOL)
        self.emit(ct.ReturnOp([cond.v, cur.v]))

        # after: replace the selected neurons
        after, cur = self.open_loop_block(loop_t)
        n, c, k, dim = self.map_inputs(cur)
        with self.in_map(dim):
            active, p = self.active_and_priority(n, c, prio, stop, dim)
            pmasked = self.ternary(active, p, self.const(float("inf")), sem.FLOAT)
            pmin = self.reduce_top(pmasked, "min")
            sel = self.binary("and", active, self.binary("eq", pmasked, pmin, sem.BOOL), sem.BOOL)
            keep = self.unary("not", sel, sem.BOOL)
            kept_coeff = self.binary("mul", keep, c, sem.FLOAT)
            kept_coeff = Val(self.emit(ct.MergeTopOp(kept_coeff.v)), sem.FLOAT)
            if zero_preserving(replace):  # f(n, sel * c) == sel * f(n, c): mask the small operand
                r = self.call_in_map(replace, n, self.binary("mul", sel, c, sem.FLOAT), dim)
                r = self.promote(self.lift_height(r, c.m.height), "P")
            else:
                r = self.call_in_map(replace, n, c, dim)
                r = self.masked(self.promote(self.lift_height(r, c.m.height), "P"), sel)
            replaced = self.sum_summands(r, c)
        kept = self.combine(kept_coeff, k, "P")
        new = self.arith("add", kept, replaced, sem.POLYEXP)
        new = self.coerce(new, expanded, keep_scalar=False)
        self.emit(ct.ReturnOp([new.v]))

        self.block = outer
        loop = ct.WhileOp([e.v], Region(before), Region(after))
        return Val(self.emit(loop), sem.POLYEXP)

    def layer_traverse(self, e: Val, loop_t, prio: Closure, stop: Closure, replace: Closure) -> Val | None:
        """The traverse as a ``cftensor.layer_traverse`` when its priority and stop are uniform over a
        layer (lifted on the neurons of one layer, their metadata has intrinsic size 1 everywhere and
        they do not read the coefficient); None otherwise (the general, per-neuron loop)."""
        outer = self.block
        m = e.m
        rows = Element("N", (ONE,) * m.top.rank, m.top.total, False)
        n_t = ct.TensorType(Metadata((Element("N", (LAY,), (ONE,)), rows)))
        c_t = ct.TensorType(Metadata((Element("R", (LAY,), (ONE,)), Element("R", m.top.shape, m.top.broadcast, False))))

        prio_block = Block(arg_types=[n_t, c_t])
        self.block = prio_block
        n, c = Val(prio_block.args[0], sem.NEURON), Val(prio_block.args[1], sem.FLOAT)
        with self.in_map(LAY):
            p = self.call_in_map(prio, n, c, LAY)
            s = self.call_in_map(stop, n, c, LAY)
        self.block = outer
        uniform = all(isinstance(x, Val) and (is_uniform(x.m) or ct.is_scalar_const(x.m)) for x in (p, s))
        if uniform:
            self.emit_into(prio_block, ct.ReturnOp([p.v, s.v]))
            _drop_dead(prio_block)
        if not uniform or prio_block.args[1].uses:
            return None  # per-neuron (or per-coefficient) priorities: the general loop
        prio_block.erase_arg(prio_block.args[1])

        body = Block(arg_types=[n_t, c_t])
        self.block = body
        n, c = Val(body.args[0], sem.NEURON), Val(body.args[1], sem.FLOAT)
        with self.in_map(LAY):
            r = self.call_in_map(replace, n, c, LAY)
            r = self.promote(self.lift_height(r, c.m.height), "P")
            if not zero_preserving(replace):  # only the summands of the expression are replaced
                r = self.masked(r, self.binary("ne", c, self.const(0.0), sem.BOOL))
            replaced = self.sum_summands(r, c)
        replaced = self.coerce(replaced, loop_t.metadata, keep_scalar=False)
        self.emit(ct.ReturnOp([replaced.v]))
        self.block = outer
        return Val(self.emit(ct.LayerTraverseOp(e.v, Region(prio_block), Region(body))), sem.POLYEXP)

    def emit_into(self, block: Block, op: Operation) -> None:
        self.locate(op)
        block.add_op(op)

    def open_loop_block(self, loop_t) -> tuple[Block, Val]:
        """A new loop region block with the loop-carried PolyExp as its argument; emission goes there."""
        block = Block(arg_types=[loop_t])
        self.block = block
        return block, Val(block.args[0], sem.POLYEXP)

    def active_and_priority(self, n: Val, c: Val, prio: Closure, stop: Closure, dim: Size) -> tuple[Val, Val]:
        stopped = self.call_in_map(stop, n, c, dim)
        p = self.call_in_map(prio, n, c, dim)
        present = self.binary("ne", c, self.const(0.0), sem.BOOL)
        go = self.unary("not", stopped, sem.BOOL)
        active = self.binary("and", present, go, sem.BOOL)
        return active, p

    # -- rules -----------------------------------------------------------------------------------------
    def bind(self, rule: str, block: Block) -> dict:
        env: dict = {}
        base_op = rule[4:] if rule.startswith("rev_") else rule
        for (name, ty), arg in zip(operator_bindings(rule).items(), block.args):
            if name in ("curr", "prev_0", "prev_1") or (name == "prev" and ty == sem.NEURON):
                val = self.input(name, Metadata.single("N", [ONE, CURR], [BATCH, ONE]), ty)
            elif name == "prev" and base_op == "Maxpool":
                # each neuron's own window of the previous layer (size ``prev``: the window length)
                val = self.input(name, Metadata.single("N", [ONE, CURR, PREV], [BATCH, ONE, ONE]), ty)
                self.window_mask = True
            elif name == "prev":
                size = PREV if base_op in ("Affine", "Minpool", "Avgpool") else Size(2)
                val = self.input(name, Metadata.single("N", [ONE, ONE, size], [BATCH, CURR, ONE]), ty)
            else:  # curr_list
                val = self.input(name, Metadata.single("N", [ONE, ONE, CURR], [BATCH, CURR, ONE]), ty)
            env[arg] = val
            if name == "curr":
                self.curr_value = val.v
        return env

    def lift_rule(self, transformer: str, rule: str, region: Region) -> ct.RuleOp:
        # outside the rule's ops (its inputs, its stored results) the rule's result is what is lifted
        self.at = region.block.last_op
        env = self.bind(rule, region.block)
        term = self.visit_region(region, env)
        result = env[term.operands[0]] if len(term.operands) == 1 else [env[o] for o in term.operands]
        fields = result if isinstance(result, list) else [result]
        outs = []
        for (name, mt), x in zip(self.members, fields):
            outs.append(self.store_form(x, mt).v)
        self.emit(ct.ReturnOp(outs))
        out = ct.RuleOp(transformer, rule, Region(self.block))
        self.locate(out)
        return out

    def lift_param_domain(self, name: str, op: str, region: Region, default: float | None) -> ct.ParamDomainOp:
        """A parameter's ``(lo, hi, init)`` on the neurons of ``op``, lifted like a rule of ``op``."""
        self.at = region.block.last_op
        env = self.bind(op, region.block)
        term = self.visit_region(region, env)
        outs = [self.store_form(env[v], sem.FLOAT).v for v in term.operands]
        self.emit(ct.ReturnOp(outs))
        out = ct.ParamDomainOp(name, op, Region(self.block), default)
        self.locate(out)
        return out

    def store_form(self, x: Val, t: sem.Type) -> Val:
        """Expand a member's value to its stored shape ``[batch, curr]``."""
        kind = letter(t)
        if kind in "PS" and x.letter != kind:
            x = self.promote(x, kind)
        if x.m.height != 1:
            raise self.error("a rule result depends on a map dimension")  # pragma: no cover
        target = Metadata.single(kind if kind in "PS" else x.letter, [BATCH, CURR], [ONE, ONE])
        if x.m.top.rank > 2:
            raise self.error(f"shape member of type {t} cannot hold a list")
        return self.coerce(x, target, keep_scalar=False)


def _drop_dead(block: Block) -> None:
    """Erase the pure ops of ``block`` whose results are unused (last first)."""
    for op in reversed(list(block.ops)):
        if op.results and not any(r.uses for r in op.results) and op.has_trait(Pure):
            op.detach()
            op.erase()


_LIST_OPS = (cf.SumOp, cf.AvgOp, cf.LenOp, cf.ArgmaxOp, cf.ArgminOp, cf.ConcatOp, cf.MapListOp, cf.DotOp)


def _list_op_in(func: cf.FuncOp, funcs: dict, seen: set) -> str | None:
    """The name of a list operation in ``func``'s body or a function it names, or None."""
    if func in seen:
        return None
    seen.add(func)
    for op in func.body.walk():
        if isinstance(op, _LIST_OPS) or (isinstance(op, (cf.MaxOp, cf.MinOp)) and len(op.operands) == 1):
            return op.name
        if isinstance(op, (cf.CallOp, cf.FuncRefOp)):
            bad = _list_op_in(funcs[op.callee.root_reference.data], funcs, seen)
            if bad is not None:
                return bad
    return None


def zero_preserving(f: Closure) -> bool:
    """Whether ``f(n, 0) == 0`` follows syntactically from the body (products with the coefficient,
    sums and conditionals of such terms, and calls of functions that are zero-preserving in the
    arguments given such terms), so a map need not mask absent summands."""
    body = f.func.body.block
    coeff = body.args[len(f.args) + 1] if len(body.args) == len(f.args) + 2 else None
    if coeff is None:
        return False
    return _yields_zero(f.func, {coeff}, 0)


def _yields_zero(func: cf.FuncOp, zero: set, depth: int) -> bool:
    """Whether ``func``'s result is 0 whenever its arguments in ``zero`` are."""
    term = func.body.block.last_op
    if not isinstance(term, cf.YieldOp) or depth > 16:
        return False

    def zp(v: SSAValue) -> bool:
        if v in zero:
            return True
        op = v.owner
        if isinstance(op, cf.CallOp):
            callee = cf.lookup_symbol(op, op.callee.root_reference.data)
            if not isinstance(callee, cf.FuncOp):
                return False
            args = callee.body.block.args
            return _yields_zero(callee, {a for a, x in zip(args, op.operands) if zp(x)}, depth + 1)
        rule = _ZERO_PRESERVING.get(type(op))
        return rule is not None and rule(op, zp)

    return zp(term.operands[0])


#: per ``cf`` op class: whether its result is 0 when the coefficient is, given ``zp`` (the same for
#: an operand); other ops are not known to be
_ZERO_PRESERVING = {
    cf.ConstOp: lambda op, zp: float(op.value.value.data) == 0.0,
    cf.MulOp: lambda op, zp: zp(op.operands[0]) or zp(op.operands[1]),
    cf.DivOp: lambda op, zp: zp(op.operands[0]),
    cf.AddOp: lambda op, zp: zp(op.operands[0]) and zp(op.operands[1]),
    cf.SubOp: lambda op, zp: zp(op.operands[0]) and zp(op.operands[1]),
    cf.NegOp: lambda op, zp: zp(op.operands[0]),
    cf.SelectOp: lambda op, zp: zp(op.operands[1]) and zp(op.operands[2]),
    cf.MaxOp: lambda op, zp: len(op.operands) == 2 and zp(op.operands[0]) and zp(op.operands[1]),
    cf.MinOp: lambda op, zp: len(op.operands) == 2 and zp(op.operands[0]) and zp(op.operands[1]),
}


_COMPARISON = {cf.LeOp: "<=", cf.LtOp: "<", cf.GeOp: ">=", cf.GtOp: ">", cf.InOp: "In"}


def member_roles(shape: cf.ShapeOp) -> dict[str, str]:
    """Each member's role from the shape constraints (:func:`cfruntime.contract.constraint_role`:
    ``curr[m] <= curr`` -> ``lower``, the mirror image -> ``upper``, ``curr In curr[m]`` ->
    ``zonotope``; ``and``-joined constraints count separately, the first on a member wins).  The
    engine initialises the input layer and reads the final bounds by role."""
    curr = shape.body.block.args[0]

    def member(v: SSAValue) -> str | None:
        op = v.owner
        if isinstance(op, cf.AccessOp) and op.operands[0] is curr:
            return op.member.data
        return None

    def determined(v: SSAValue):
        op = v.owner
        if isinstance(op, cf.AndOp):
            yield from determined(op.operands[0])
            yield from determined(op.operands[1])
        elif type(op) in _COMPARISON:
            a, b = op.operands
            yield contract.constraint_role(_COMPARISON[type(op)], member(a), a is curr, member(b), b is curr)

    term = shape.body.block.last_op
    return contract.roles_from(r for c in (term.operands if term is not None else ()) for r in determined(c))


class ShapeAnalysisPass(ModulePass):
    """Lift the flow's transformer to ``cftensor`` rules (see the module docstring)."""

    name = "shape-analysis"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        shape = next((o for o in op.ops if isinstance(o, cf.ShapeOp)), None)
        flow = next((o for o in op.ops if isinstance(o, cf.FlowOp)), None)
        if shape is None or flow is None:  # a whole-module problem: the file, no position
            where = loc_of(op, loc_of(op.ops.first, Loc("", 0, 0)))
            missing = " and no ".join(w for w, o in (("'def Shape'", shape), ("'flow'", flow)) if o is None)
            raise ShapeAnalysisError(Loc(where.file, 0, 0), f"the certifier has no {missing} declaration: "
                                     "there is nothing to run")
        members = [(n, to_semantic(t)) for n, t in zip(shape.member_names(), shape.member_types.data)]
        tname = flow.transformer.root_reference.data if hasattr(flow.transformer, "root_reference") else str(flow.transformer)
        transformer = next(o for o in op.ops if isinstance(o, cf.TransformerOp) and o.properties["sym_name"].data == tname)
        roles = member_roles(shape)
        new_ops: list[Operation] = [ct.FlowOp(flow.direction.data, tname,
                                              [(n, letter(t), roles.get(n, contract.NO_ROLE)) for n, t in members])]
        new_ops[0].location = flow.location
        for rule, region in transformer.rule_regions():
            new_ops.append(RuleLifter(op, members).lift_rule(tname, rule, region))
        for decl in (o for o in op.ops if isinstance(o, cf.ParameterOp)):
            for pop, region in decl.domains():
                new_ops.append(RuleLifter(op, members).lift_param_domain(decl.sym_name.data, pop, region, decl.default_value()))
        for o in list(op.ops):
            o.detach()
            o.erase(safe_erase=False)
        for o in new_ops:
            op.body.block.add_op(o)
