"""The ``cf`` dialect: ConstraintFlow programs as xDSL IR.

A ConstraintFlow program becomes one ``builtin.module`` holding, in source order,

* ``cf.shape``: the abstract shape's members and constraints,
* ``cf.func @f``: user functions (symbols; one region whose block arguments are the parameters),
* ``cf.parameter @a``: optimisable parameters (per operator, a region computing the domain and the
  initial value from the rule bindings; read with ``cf.param``),
* ``cf.transformer @t``: one region per operator rule (block arguments = the rule's bindings
  ``curr``, ``curr_list``, ``prev``...), each ending in ``cf.return``,
* ``cf.flow``: the analysis direction and the priority/stop/transformer symbols,

and one op per expression form in the region bodies.  Example (the IBP certifier, abridged)::

    builtin.module {
      cf.shape (l : !cf.float, u : !cf.float) constraints(%curr: !cf.neuron) {
        %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
        %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
        ...
        cf.yield %1, %3 : !cf.ct, !cf.ct
      }
      cf.func @priority(%n: !cf.neuron) -> !cf.int {
        %0 = cf.access %n["layer"] : (!cf.neuron) -> !cf.int
        cf.yield %0 : !cf.int
      }
      cf.transformer @ibp {
        Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
          ...
          cf.return %4, %9 : !cf.float, !cf.float
        }
      }
      cf.flow forward @priority, @stop, @ibp
    }

Expression ops share one assembly format, ``cf.<op> [keyword] %a, %b : (T1, T2) -> R``.  Types
are in :mod:`cfmlir.dialects.cf_types`.

Verification re-checks everything the type checker guarantees, with the type checker's own rules:
an expression op applies the typing rule of its form (:mod:`cfmlir.dialects.cf_typing_rules`, which
the frontend's type checker calls too) to its operands' types (:func:`_typed`), and its result type
must be exactly the type the rule gives.  Structure ops check their regions' argument and terminator
types, symbols and the shape member count.  The dialect imports nothing from the frontend (its
parser and type checker): the frontend depends on the dialect, never the reverse.

Names: xDSL drops a ``_<digits>`` suffix from SSA name hints, so the rule bindings ``prev_0`` and
``prev_1`` print as ``%prev0`` and ``%prev1``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, IsTerminator, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from cfmlir.dialects import cf_type_lattice as sem
from cfmlir.dialects import cf_types as T
from cfmlir.dialects import cf_typing_rules as rules
from cfmlir.dialects.cf_types import to_cf, to_semantic, type_str


# ----------------------------------------------------------------------------------------------
# Helpers shared by the verifiers
# ----------------------------------------------------------------------------------------------


def module_of(op: Operation) -> ModuleOp | None:
    """The outermost ``builtin.module`` containing ``op`` (``None`` when detached)."""
    found = None
    cur: Operation | None = op
    while cur is not None:
        if isinstance(cur, ModuleOp):
            found = cur
        cur = cur.parent_op()
    return found


def shape_of(op: Operation) -> "ShapeOp | None":
    """The ``cf.shape`` op of the module containing ``op``."""
    mod = module_of(op)
    if mod is None:
        return None
    return next((o for o in mod.ops if isinstance(o, ShapeOp)), None)


def lookup_symbol(op: Operation, name: str) -> Operation | None:
    """The top-level op of ``op``'s module whose ``sym_name`` is ``name``."""
    mod = module_of(op)
    if mod is None:
        return None
    for o in mod.ops:
        sym = o.properties.get("sym_name")
        if isinstance(sym, StringAttr) and sym.data == name:
            return o
    return None


def _sem(t: Attribute, what: str) -> sem.Type:
    try:
        return to_semantic(t)
    except TypeError:
        raise VerifyException(f"{what} has type {t}, which is not a cf type") from None


def _members(op: Operation) -> dict[str, sem.Type]:
    """The shape members of ``op``'s module and their semantic types (none without a shape)."""
    shape = shape_of(op)
    if shape is None:
        return {}
    return {n: _sem(t, f"shape member '{n}'") for n, t in shape.members()}


def _operand_types(op: Operation) -> list[sem.Type]:
    """The semantic types of ``op``'s operands (a :class:`VerifyException` for a non-``cf`` type)."""
    return [_sem(v.type, f"operand {i}") for i, v in enumerate(op.operands)]


def _typed(rule: Callable[..., sem.Type], *args) -> sem.Type:
    """``rule(*args)``, a typing rule of :mod:`cfmlir.dialects.cf_typing_rules`; its
    :class:`~cfmlir.dialects.cf_typing_rules.TypingError` becomes a :class:`VerifyException` with the
    same message (the one the type checker reports for the same expression)."""
    try:
        return rule(*args)
    except rules.TypingError as err:
        raise VerifyException(err.message) from None


def _check_result(op: Operation, expected: sem.Type) -> None:
    got = op.results[0].type
    if to_cf(expected) != got:
        raise VerifyException(f"result type must be {to_cf(expected)} ({expected}), got {got}")


def _terminator(region: Region, cls: type[Operation], owner: str) -> Operation:
    if len(region.blocks) != 1:
        raise VerifyException(f"the region of '{owner}' must have exactly one block")
    last = region.block.last_op
    if not isinstance(last, cls):
        raise VerifyException(f"the region of '{owner}' must end with '{cls.name}'")
    return last


# ----------------------------------------------------------------------------------------------
# Shared custom assembly of expression ops:  cf.<op> [prefix] %a, %b : (T1, T2) -> R [suffix]
# ----------------------------------------------------------------------------------------------


class ExprOp(IRDLOperation):
    """Base class of the expression ops: variadic operands, one result, the format
    ``cf.<op> [prefix] %a, %b {attrs} : (T1, T2) -> R``."""

    args = var_operand_def()
    res = result_def()

    #: the ConstraintFlow operator of a binary/unary op (``"+"``, ``"<="``, ...)
    SYMBOL: ClassVar[str] = ""
    #: properties printed/parsed by the prefix hooks (not in the attribute dictionary)
    PREFIX_PROPS: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        operands: Sequence[SSAValue],
        result_type: Attribute,
        properties: dict[str, Attribute] | None = None,
        regions: Sequence[Region] = (),
    ):
        super().__init__(operands=[list(operands)], result_types=[result_type], properties=properties or {}, regions=list(regions))

    @property
    def result(self) -> SSAValue:
        return self.results[0]

    # -- hooks ----------------------------------------------------------------------------------
    def print_prefix(self, printer: Printer) -> None:
        pass

    @classmethod
    def parse_prefix(cls, parser: Parser) -> dict[str, Attribute]:
        return {}

    def print_suffix(self, printer: Printer) -> None:
        pass

    @classmethod
    def parse_suffix(cls, parser: Parser) -> list[Region]:
        return []

    # -- format ---------------------------------------------------------------------------------
    def print(self, printer: Printer) -> None:
        self.print_prefix(printer)
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        with printer.in_parens():
            printer.print_list(self.operand_types, printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_attribute(self.results[0].type)
        self.print_suffix(printer)

    @classmethod
    def parse(cls, parser: Parser):
        props = cls.parse_prefix(parser)
        unresolved = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
        ) or []
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":", f" before the type of '{cls.name}'")
        pos = parser.pos
        ft = parser.parse_function_type()
        if len(ft.inputs.data) != len(unresolved):
            parser.raise_error(
                f"'{cls.name}' has {len(unresolved)} operand(s) but its type lists {len(ft.inputs.data)}",
                at_position=pos, end_position=parser.pos,
            )
        if len(ft.outputs.data) != 1:
            parser.raise_error(f"'{cls.name}' has exactly one result type", at_position=pos, end_position=parser.pos)
        operands = [parser.resolve_operand(u, t) for u, t in zip(unresolved, ft.inputs.data)]
        regions = cls.parse_suffix(parser)
        op = cls.create(
            operands=operands, result_types=[ft.outputs.data[0]], properties=props, attributes=attrs, regions=regions
        )
        return op

    # -- verification ---------------------------------------------------------------------------
    def expected_type(self) -> sem.Type:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def verify_(self) -> None:
        _check_result(self, self.expected_type())


def _ensure_arity(op: Operation, counts: tuple[int, ...]) -> None:
    if len(op.operands) not in counts:
        want = " or ".join(map(str, counts))
        raise VerifyException(f"'{op.name}' takes {want} operand(s), got {len(op.operands)}")


# ----------------------------------------------------------------------------------------------
# Constants and noise
# ----------------------------------------------------------------------------------------------


def _format_float(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        raise VerifyException("cf.const cannot hold a NaN or infinite value")
    s = repr(float(v))
    if "e" in s and "." not in s.split("e")[0]:
        mant, exp = s.split("e")
        s = f"{mant}.0e{exp}"
    return s


@irdl_op_definition
class ConstOp(IRDLOperation):
    """A literal: ``Int``, ``Float`` or ``Bool``.

    Example::

        %0 = cf.const 1.0 : !cf.float
        %1 = cf.const 2 : !cf.int
        %2 = cf.const true : !cf.bool
    """

    name = "cf.const"
    value = prop_def(IntegerAttr | FloatAttr)
    res = result_def()
    traits = traits_def(Pure())

    def __init__(self, value: int | float | bool, result_type: Attribute | None = None):
        if isinstance(value, bool):
            attr: Attribute = IntegerAttr(int(value), i1)
            rt = result_type or T.BoolType()
        elif isinstance(value, int):
            attr = IntegerAttr(value, i64)
            rt = result_type or T.IntType()
        else:
            attr = FloatAttr(float(value), f64)
            rt = result_type or T.FloatType()
        super().__init__(properties={"value": attr}, result_types=[rt])

    @property
    def result(self) -> SSAValue:
        return self.results[0]

    @property
    def py_value(self) -> int | float | bool:
        v = self.value
        if isinstance(v, FloatAttr):
            return v.value.data
        if v.type == i1:
            return bool(v.value.data)
        return v.value.data

    def print(self, printer: Printer) -> None:
        v = self.py_value
        printer.print_string(" ")
        if isinstance(v, bool):
            printer.print_string("true" if v else "false")
        elif isinstance(v, float):
            printer.print_string(_format_float(v))
        else:
            printer.print_string(str(v))
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> "ConstOp":
        pos = parser.pos
        b = parser.parse_optional_boolean()
        num: int | float | bool
        if b is not None:
            num = b
        else:
            num = parser.parse_number(context_msg=" in cf.const")
        end = parser.pos
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        if isinstance(ty, T.FloatType) and isinstance(num, int) and not isinstance(num, bool):
            num = float(num)
        if isinstance(num, float) and not isinstance(ty, T.FloatType):
            parser.raise_error(f"a float literal needs type !cf.float, got {ty}", at_position=pos, end_position=end)
        op = ConstOp(num, ty)
        op.attributes.update(attrs)
        return op

    def verify_(self) -> None:
        v, t = self.value, self.results[0].type
        if isinstance(v, FloatAttr):
            want: Attribute = T.FloatType()
        elif v.type == i1:
            want = T.BoolType()
        else:
            want = T.IntType()
        if t != want:
            raise VerifyException(f"a {type_str(want)} literal must have type {want}, got {t}")


@irdl_op_definition
class SymOp(IRDLOperation):
    """A fresh noise symbol (``sym``/``eps``); every evaluation makes a new one per neuron, so this op
    is deliberately not ``Pure`` (never CSE it).

    Example::

        %0 = cf.sym
    """

    name = "cf.sym"
    res = result_def(T.NoiseType)
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[T.NoiseType()])

    @property
    def result(self) -> SSAValue:
        return self.results[0]


# ----------------------------------------------------------------------------------------------
# Binary and unary operators
# ----------------------------------------------------------------------------------------------


class BinaryOp(ExprOp):
    """Base class of the binary operators (exactly two operands)."""

    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__([lhs, rhs], result_type)

    @property
    def lhs(self) -> SSAValue:
        return self.operands[0]

    @property
    def rhs(self) -> SSAValue:
        return self.operands[1]

    def expected_type(self) -> sem.Type:
        _ensure_arity(self, (2,))
        a, b = _operand_types(self)
        return _typed(rules.binary, self.SYMBOL, a, b)


@irdl_op_definition
class AddOp(BinaryOp):
    """``a + b``: numbers, or PolyExp/SymExp sums.

    Example::

        %2 = cf.add %0, %1 : (!cf.polyexp, !cf.float) -> !cf.polyexp
    """

    name = "cf.add"
    SYMBOL: ClassVar[str] = "+"


@irdl_op_definition
class SubOp(BinaryOp):
    """``a - b``.

    Example::

        %2 = cf.sub %u, %l : (!cf.float, !cf.float) -> !cf.float
    """

    name = "cf.sub"
    SYMBOL: ClassVar[str] = "-"


@irdl_op_definition
class MulOp(BinaryOp):
    """``a * b``; one operand must be a scalar (Int/Float) so the product stays linear.

    Example::

        %2 = cf.mul %coeff, %l : (!cf.float, !cf.polyexp) -> !cf.polyexp
    """

    name = "cf.mul"
    SYMBOL: ClassVar[str] = "*"


@irdl_op_definition
class DivOp(BinaryOp):
    """``a / b``; the divisor must be a scalar.

    Example::

        %2 = cf.div %e, %d : (!cf.polyexp, !cf.float) -> !cf.polyexp
    """

    name = "cf.div"
    SYMBOL: ClassVar[str] = "/"


@irdl_op_definition
class AndOp(BinaryOp):
    """``a and b`` on Bools (-> Bool) or constraints (-> Ct).

    Example::

        %2 = cf.and %0, %1 : (!cf.bool, !cf.bool) -> !cf.bool
    """

    name = "cf.and"
    SYMBOL: ClassVar[str] = "and"


@irdl_op_definition
class OrOp(BinaryOp):
    """``a or b`` on Bools (-> Bool) or constraints (-> Ct).

    Example::

        %2 = cf.or %0, %1 : (!cf.bool, !cf.bool) -> !cf.bool
    """

    name = "cf.or"
    SYMBOL: ClassVar[str] = "or"


@irdl_op_definition
class LtOp(BinaryOp):
    """``a < b``: Float x Float -> Bool, PolyExp x PolyExp -> Ct.

    Example::

        %2 = cf.lt %0, %1 : (!cf.float, !cf.float) -> !cf.bool
    """

    name = "cf.lt"
    SYMBOL: ClassVar[str] = "<"


@irdl_op_definition
class LeOp(BinaryOp):
    """``a <= b``.

    Example::

        %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
    """

    name = "cf.le"
    SYMBOL: ClassVar[str] = "<="


@irdl_op_definition
class GtOp(BinaryOp):
    """``a > b``.

    Example::

        %2 = cf.gt %c, %0 : (!cf.float, !cf.float) -> !cf.bool
    """

    name = "cf.gt"
    SYMBOL: ClassVar[str] = ">"


@irdl_op_definition
class GeOp(BinaryOp):
    """``a >= b``.

    Example::

        %2 = cf.ge %coeff, %0 : (!cf.float, !cf.float) -> !cf.bool
    """

    name = "cf.ge"
    SYMBOL: ClassVar[str] = ">="


@irdl_op_definition
class EqOp(BinaryOp):
    """``a == b``.

    Example::

        %2 = cf.eq %0, %1 : (!cf.int, !cf.int) -> !cf.bool
    """

    name = "cf.eq"
    SYMBOL: ClassVar[str] = "=="


@irdl_op_definition
class NeOp(BinaryOp):
    """``a != b``.

    Example::

        %2 = cf.ne %0, %1 : (!cf.int, !cf.int) -> !cf.bool
    """

    name = "cf.ne"
    SYMBOL: ClassVar[str] = "!="


@irdl_op_definition
class InOp(BinaryOp):
    """``e In z``: zonotope membership, PolyExp x SymExp -> Ct.

    Example::

        %1 = cf.in %curr, %0 : (!cf.neuron, !cf.symexp) -> !cf.ct
    """

    name = "cf.in"
    SYMBOL: ClassVar[str] = "In"


BINARY_OPS: dict[str, type[BinaryOp]] = {
    c.SYMBOL: c for c in (AddOp, SubOp, MulOp, DivOp, AndOp, OrOp, LtOp, LeOp, GtOp, GeOp, EqOp, NeOp, InOp)
}


class UnaryOp(ExprOp):
    """Base class of the unary operators (exactly one operand)."""

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, result_type: Attribute):
        super().__init__([operand], result_type)

    def expected_type(self) -> sem.Type:
        _ensure_arity(self, (1,))
        return _typed(rules.unary, self.SYMBOL, *_operand_types(self))


@irdl_op_definition
class NegOp(UnaryOp):
    """``-e`` on numbers, PolyExps and SymExps.

    Example::

        %1 = cf.neg %0 : (!cf.int) -> !cf.int
    """

    name = "cf.neg"
    SYMBOL: ClassVar[str] = "-"


@irdl_op_definition
class NotOp(UnaryOp):
    """``!e`` on a Bool or a constraint.

    Example::

        %1 = cf.not %0 : (!cf.bool) -> !cf.bool
    """

    name = "cf.not"
    SYMBOL: ClassVar[str] = "!"


@irdl_op_definition
class SelectOp(ExprOp):
    """``c ? a : b``; the result is the least upper bound of the branch types (tuples included).

    Example::

        %3 = cf.select %0, %1, %2 : (!cf.bool, !cf.neuron, !cf.float) -> !cf.polyexp
    """

    name = "cf.select"
    traits = traits_def(Pure())

    def __init__(self, cond: SSAValue, then: SSAValue, otherwise: SSAValue, result_type: Attribute):
        super().__init__([cond, then, otherwise], result_type)

    def expected_type(self) -> sem.Type:
        _ensure_arity(self, (3,))
        return _typed(rules.select, _operand_types(self))


# ----------------------------------------------------------------------------------------------
# Functions as values
# ----------------------------------------------------------------------------------------------


def _callee_type(op: Operation, name: str) -> T.FuncType:
    callee = lookup_symbol(op, name)
    if callee is None:
        raise VerifyException(f"refers to unknown function @{name}")
    if not isinstance(callee, FuncOp):
        raise VerifyException(f"refers to @{name}, which is not a 'cf.func'")
    return callee.function_type


@irdl_op_definition
class FuncRefOp(IRDLOperation):
    """The value of a user function (passed to ``cf.map``/``cf.traverse``/``cf.apply``); its type is
    exactly the function's type.

    Example::

        %f = cf.func_ref @simplify_lower : !cf.func<(!cf.neuron, !cf.float) -> !cf.float>
    """

    name = "cf.func_ref"
    callee = prop_def(SymbolRefAttr)
    res = result_def(T.FuncType)
    traits = traits_def(Pure())
    assembly_format = "$callee attr-dict `:` type($res)"

    def __init__(self, callee: str, func_type: Attribute):
        super().__init__(properties={"callee": SymbolRefAttr(callee)}, result_types=[func_type])

    @property
    def result(self) -> SSAValue:
        return self.results[0]

    def verify_(self) -> None:
        ft = _callee_type(self, self.callee.root_reference.data)
        if ft != self.results[0].type:
            raise VerifyException(f"@{self.callee.root_reference.data} has type {ft}, but the reference has type {self.results[0].type}")


@irdl_op_definition
class CallOp(ExprOp):
    """A call of the user function ``@f``: with all arguments it yields ``f``'s result, with fewer
    (curried partial application) a ``!cf.func`` of the remaining parameters.

    Example::

        %1 = cf.call @relu(%0) : (!cf.float) -> !cf.float
        %2 = cf.call @stop_p(%0) : (!cf.int) -> !cf.func<(!cf.neuron, !cf.float) -> !cf.bool>
    """

    name = "cf.call"
    callee = prop_def(SymbolRefAttr)
    PREFIX_PROPS: ClassVar[tuple[str, ...]] = ("callee",)

    def __init__(self, callee: str, args: Sequence[SSAValue], result_type: Attribute):
        super().__init__(args, result_type, {"callee": SymbolRefAttr(callee)})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.callee.root_reference.data)
        with printer.in_parens():
            printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        with printer.in_parens():
            printer.print_list(self.operand_types, printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> "CallOp":
        callee = parser.parse_symbol_name()
        unresolved = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ft = parser.parse_function_type()
        if len(ft.inputs.data) != len(unresolved) or len(ft.outputs.data) != 1:
            parser.raise_error("the type of 'cf.call' must list one type per argument and one result type", at_position=pos, end_position=parser.pos)
        operands = [parser.resolve_operand(u, t) for u, t in zip(unresolved, ft.inputs.data)]
        op = CallOp(callee.data, operands, ft.outputs.data[0])
        op.attributes.update(attrs)
        return op

    def expected_type(self) -> sem.Type:
        name = self.callee.root_reference.data
        ft = _sem(_callee_type(self, name), f"@{name}")
        return _typed(rules.call, ft, _operand_types(self))


@irdl_op_definition
class ApplyOp(ExprOp):
    """A call of a function *value* (operand 0, e.g. a curried partial application).

    Example::

        %3 = cf.apply %f, %n, %c : (!cf.func<(!cf.neuron, !cf.float) -> !cf.bool>, !cf.neuron, !cf.float) -> !cf.bool
    """

    name = "cf.apply"

    def __init__(self, func: SSAValue, args: Sequence[SSAValue], result_type: Attribute):
        super().__init__([func, *args], result_type)

    def expected_type(self) -> sem.Type:
        if not self.operands:
            raise VerifyException("'cf.apply' needs the function value as its first operand")
        types = _operand_types(self)
        return _typed(rules.call, types[0], types[1:])


# ----------------------------------------------------------------------------------------------
# Builtin functions
# ----------------------------------------------------------------------------------------------


class BuiltinOp(ExprOp):
    """Base class of the builtin-function ops (``cf.max`` ... ``cf.abs``)."""

    BUILTIN: ClassVar[str] = ""

    def __init__(self, args: Sequence[SSAValue], result_type: Attribute):
        super().__init__(args, result_type)

    def expected_type(self) -> sem.Type:
        _ensure_arity(self, rules.BUILTIN_ARITIES[self.BUILTIN])
        return _typed(rules.builtin, self.BUILTIN, _operand_types(self))


@irdl_op_definition
class MaxOp(BuiltinOp):
    """``max(a, b)`` of two numbers or ``max(l)`` of a Float List.

    Example::

        %2 = cf.max %0, %1 : (!cf.float, !cf.float) -> !cf.float
    """

    name = "cf.max"
    BUILTIN: ClassVar[str] = "max"
    traits = traits_def(Pure())


@irdl_op_definition
class MinOp(BuiltinOp):
    """``min(a, b)`` or ``min(l)``.

    Example::

        %2 = cf.min %0, %1 : (!cf.float, !cf.float) -> !cf.float
    """

    name = "cf.min"
    BUILTIN: ClassVar[str] = "min"
    traits = traits_def(Pure())


@irdl_op_definition
class SumOp(BuiltinOp):
    """``sum(l)`` of a list of numbers, PolyExps or SymExps.

    Example::

        %1 = cf.sum %0 : (!cf.list<!cf.neuron>) -> !cf.polyexp
    """

    name = "cf.sum"
    BUILTIN: ClassVar[str] = "sum"
    traits = traits_def(Pure())


@irdl_op_definition
class AvgOp(BuiltinOp):
    """``avg(l)``.

    Example::

        %1 = cf.avg %0 : (!cf.list<!cf.float>) -> !cf.float
    """

    name = "cf.avg"
    BUILTIN: ClassVar[str] = "avg"
    traits = traits_def(Pure())


@irdl_op_definition
class LenOp(BuiltinOp):
    """``len(l)``.

    Example::

        %1 = cf.len %prev : (!cf.list<!cf.neuron>) -> !cf.int
    """

    name = "cf.len"
    BUILTIN: ClassVar[str] = "len"
    traits = traits_def(Pure())


@irdl_op_definition
class ArgmaxOp(BuiltinOp):
    """``argmax(l)`` (index of a Float List's maximum) or ``argmax(l, cmp)`` (the maximal elements
    under a comparison function).

    Example::

        %1 = cf.argmax %0 : (!cf.list<!cf.float>) -> !cf.int
    """

    name = "cf.argmax"
    BUILTIN: ClassVar[str] = "argmax"


@irdl_op_definition
class ArgminOp(BuiltinOp):
    """``argmin(l)`` or ``argmin(l, cmp)``.

    Example::

        %1 = cf.argmin %0 : (!cf.list<!cf.float>) -> !cf.int
    """

    name = "cf.argmin"
    BUILTIN: ClassVar[str] = "argmin"


@irdl_op_definition
class ConcatOp(BuiltinOp):
    """``concat(a, b)`` of two lists.

    Example::

        %2 = cf.concat %0, %1 : (!cf.list<!cf.float>, !cf.list<!cf.int>) -> !cf.list<!cf.float>
    """

    name = "cf.concat"
    BUILTIN: ClassVar[str] = "concat"
    traits = traits_def(Pure())


@irdl_op_definition
class MapListOp(BuiltinOp):
    """``l.mapList(f)``: apply a one-argument function to every element.

    Example::

        %2 = cf.map_list %prev, %f : (!cf.list<!cf.neuron>, !cf.func<(!cf.neuron) -> !cf.float>) -> !cf.list<!cf.float>
    """

    name = "cf.map_list"
    BUILTIN: ClassVar[str] = "map_list"


@irdl_op_definition
class SigmoidOp(BuiltinOp):
    """``sigma(x)``, the logistic function of a number.

    Example::

        %1 = cf.sigmoid %0 : (!cf.float) -> !cf.float
    """

    name = "cf.sigmoid"
    BUILTIN: ClassVar[str] = "sigmoid"
    traits = traits_def(Pure())


@irdl_op_definition
class TanhOp(BuiltinOp):
    """``tanh(x)``.

    Example::

        %1 = cf.tanh %0 : (!cf.float) -> !cf.float
    """

    name = "cf.tanh"
    BUILTIN: ClassVar[str] = "tanh"
    traits = traits_def(Pure())


@irdl_op_definition
class ExpOp(BuiltinOp):
    """``exp(x)``.

    Example::

        %1 = cf.exp %0 : (!cf.float) -> !cf.float
    """

    name = "cf.exp"
    BUILTIN: ClassVar[str] = "exp"
    traits = traits_def(Pure())


@irdl_op_definition
class AbsOp(BuiltinOp):
    """``abs(x)`` (Int stays Int).

    Example::

        %1 = cf.abs %0 : (!cf.float) -> !cf.float
    """

    name = "cf.abs"
    BUILTIN: ClassVar[str] = "abs"
    traits = traits_def(Pure())


@irdl_op_definition
class LogOp(BuiltinOp):
    """``log(x)``, the natural logarithm (``-inf`` at 0; certifiers apply it to positive numbers).

    Example::

        %1 = cf.log %0 : (!cf.float) -> !cf.float
    """

    name = "cf.log"
    BUILTIN: ClassVar[str] = "log"
    traits = traits_def(Pure())


@irdl_op_definition
class SinOp(BuiltinOp):
    """``sin(x)`` (radians).

    Example::

        %1 = cf.sin %0 : (!cf.float) -> !cf.float
    """

    name = "cf.sin"
    BUILTIN: ClassVar[str] = "sin"
    traits = traits_def(Pure())


@irdl_op_definition
class CosOp(BuiltinOp):
    """``cos(x)`` (radians).

    Example::

        %1 = cf.cos %0 : (!cf.float) -> !cf.float
    """

    name = "cf.cos"
    BUILTIN: ClassVar[str] = "cos"
    traits = traits_def(Pure())


@irdl_op_definition
class FloorOp(BuiltinOp):
    """``floor(x)``, the largest integer not above ``x`` (Int stays Int).

    Example::

        %1 = cf.floor %0 : (!cf.float) -> !cf.float
    """

    name = "cf.floor"
    BUILTIN: ClassVar[str] = "floor"
    traits = traits_def(Pure())


BUILTIN_OPS: dict[str, type[BuiltinOp]] = {
    c.BUILTIN: c
    for c in (MaxOp, MinOp, SumOp, AvgOp, LenOp, ArgmaxOp, ArgminOp, ConcatOp, MapListOp, SigmoidOp, TanhOp, ExpOp, LogOp,
              AbsOp, SinOp, CosOp, FloorOp)
}


# ----------------------------------------------------------------------------------------------
# Shape-specific expression forms
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class LpOp(ExprOp):
    """``lp(minimize|maximize, objective, constraints)``: the optimum of a linear program.

    Example::

        %2 = cf.lp maximize %0, %1 : (!cf.polyexp, !cf.ct) -> !cf.float
    """

    name = "cf.lp"
    sense = prop_def(StringAttr)
    PREFIX_PROPS: ClassVar[tuple[str, ...]] = ("sense",)

    def __init__(self, sense: str, objective: SSAValue, constraints: SSAValue, result_type: Attribute | None = None):
        super().__init__([objective, constraints], result_type or T.FloatType(), {"sense": StringAttr(sense)})

    def print_prefix(self, printer: Printer) -> None:
        printer.print_string(" " + self.sense.data)

    @classmethod
    def parse_prefix(cls, parser: Parser) -> dict[str, Attribute]:
        return {"sense": StringAttr(parser.parse_keyword_in(("minimize", "maximize"), " in cf.lp"))}

    def expected_type(self) -> sem.Type:
        if self.sense.data not in ("minimize", "maximize"):
            raise VerifyException(f"cf.lp sense must be 'minimize' or 'maximize', got '{self.sense.data}'")
        _ensure_arity(self, (2,))
        return _typed(rules.lp, _operand_types(self))


class _NamedReadOp(ExprOp):
    """The declaration shared by the reads of a named per-neuron value, ``base[name]``
    (``cf.access`` of a member, ``cf.param`` of a parameter): one operand, the name in the
    property ``KEY``, the text form ``%b["name"] : (T) -> R``."""

    #: the property holding the name read
    KEY: ClassVar[str]
    #: what the name is, for the parser's messages
    WHAT: ClassVar[str]

    def __init__(self, base: SSAValue, name: str, result_type: Attribute):
        super().__init__([base], result_type, {self.KEY: StringAttr(name)})

    @property
    def base(self) -> SSAValue:
        return self.operands[0]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string("[")
        printer.print_string_literal(self.properties[self.KEY].data)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        with printer.in_parens():
            printer.print_list(self.operand_types, printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> "_NamedReadOp":
        base = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        name = parser.parse_identifier_or_str_literal(f" ({cls.WHAT})")
        parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ft = parser.parse_function_type()
        if len(ft.inputs.data) != 1 or len(ft.outputs.data) != 1:
            parser.raise_error(f"the type of '{cls.name}' must be (T) -> R", at_position=pos, end_position=parser.pos)
        op = cls(parser.resolve_operand(base, ft.inputs.data[0]), name, ft.outputs.data[0])
        op.attributes.update(attrs)
        return op


@irdl_op_definition
class AccessOp(_NamedReadOp):
    """``base[member]``: a shape member or metadata (``weight``, ``bias``, ``layer``, ``last_layer``)
    of a Neuron, or elementwise of a Neuron List.

    Example::

        %0 = cf.access %curr["weight"] : (!cf.neuron) -> !cf.list<!cf.float>
        %1 = cf.access %prev["l"] : (!cf.list<!cf.neuron>) -> !cf.list<!cf.float>
    """

    name = "cf.access"
    member = prop_def(StringAttr)
    traits = traits_def(Pure())
    KEY: ClassVar[str] = "member"
    WHAT: ClassVar[str] = "the accessed member"

    def expected_type(self) -> sem.Type:
        _ensure_arity(self, (1,))
        (base,) = _operand_types(self)
        mt = _typed(rules.member_type, self.member.data, _members(self))
        return _typed(rules.access, base, self.member.data, mt)


@irdl_op_definition
class ParamOp(_NamedReadOp):
    """``base[a]`` for a parameter ``a`` (declared by ``cf.parameter @a``): its value on a Neuron
    (elementwise on a Neuron List), always a Float.  Read in the rule of neuron ``s`` it is ``a_s(n)``:
    one value per pair (reading neuron, neuron read), projected into the parameter's domain.

    Example::

        %0 = cf.param %n["slope"] : (!cf.neuron) -> !cf.float
        %1 = cf.param %prev["slope"] : (!cf.list<!cf.neuron>) -> !cf.list<!cf.float>
    """

    name = "cf.param"
    param = prop_def(StringAttr)
    traits = traits_def(Pure())
    KEY: ClassVar[str] = "param"
    WHAT: ClassVar[str] = "the parameter read"

    def expected_type(self) -> sem.Type:
        _ensure_arity(self, (1,))
        (base,) = _operand_types(self)
        name = self.param.data
        if module_of(self) is not None and not isinstance(lookup_symbol(self, name), ParameterOp):
            raise VerifyException(f"'{name}' is not a parameter (no 'cf.parameter @{name}' in the module)")
        return _typed(rules.parameter, base, name)


@irdl_op_definition
class MapOp(ExprOp):
    """``e.map(f)``: apply ``f(neuron_or_noise, coeff)`` to every summand of a PolyExp/SymExp and add
    the results (and the constant term).

    Example::

        %2 = cf.map %0, %f : (!cf.polyexp, !cf.func<(!cf.neuron, !cf.float) -> !cf.float>) -> !cf.float
    """

    name = "cf.map"

    def __init__(self, base: SSAValue, func: SSAValue, result_type: Attribute):
        super().__init__([base, func], result_type)

    def expected_type(self) -> sem.Type:
        _ensure_arity(self, (2,))
        base, func = _operand_types(self)
        return _typed(rules.map_, base, func)


@irdl_op_definition
class DotOp(ExprOp):
    """``l.dot(w)``: ``sum_i w[i] * l[i]`` for a Neuron List (-> PolyExp) or SymExp List (-> SymExp).

    Example::

        %1 = cf.dot %prev, %0 : (!cf.list<!cf.neuron>, !cf.list<!cf.float>) -> !cf.polyexp
    """

    name = "cf.dot"
    traits = traits_def(Pure())

    def __init__(self, base: SSAValue, weights: SSAValue, result_type: Attribute):
        super().__init__([base, weights], result_type)

    def expected_type(self) -> sem.Type:
        _ensure_arity(self, (2,))
        base, weights = _operand_types(self)
        return _typed(rules.dot, base, weights)


@irdl_op_definition
class TraverseOp(ExprOp):
    """``e.traverse(direction, priority, stop, replace){invariant}``: repeatedly replace the
    highest-priority neuron of ``e`` (operand 0) until ``stop``; operands 1-3 are the priority, stop
    and replacement functions.  The region computes the invariant (a Ct) from values in scope and
    ends in ``cf.yield``.

    Example::

        %r = cf.traverse backward %e, %p, %s, %f : (!cf.polyexp, !cf.func<(!cf.neuron, !cf.float) -> !cf.int>, !cf.func<(!cf.neuron, !cf.float) -> !cf.bool>, !cf.func<(!cf.neuron, !cf.float) -> !cf.polyexp>) -> !cf.polyexp {
          %0 = cf.le %e, %n : (!cf.polyexp, !cf.neuron) -> !cf.ct
          cf.yield %0 : !cf.ct
        }
    """

    name = "cf.traverse"
    direction = prop_def(StringAttr)
    invariant = region_def("single_block")
    PREFIX_PROPS: ClassVar[tuple[str, ...]] = ("direction",)

    def __init__(
        self, direction: str, base: SSAValue, priority: SSAValue, stop: SSAValue, replace: SSAValue,
        invariant: Region, result_type: Attribute | None = None,
    ):
        super().__init__([base, priority, stop, replace], result_type or T.PolyExpType(), {"direction": StringAttr(direction)}, [invariant])

    def print_prefix(self, printer: Printer) -> None:
        printer.print_string(" " + self.direction.data)

    @classmethod
    def parse_prefix(cls, parser: Parser) -> dict[str, Attribute]:
        return {"direction": StringAttr(parser.parse_keyword_in(("forward", "backward"), " in cf.traverse"))}

    def print_suffix(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_region(self.invariant, print_entry_block_args=False)

    @classmethod
    def parse_suffix(cls, parser: Parser) -> list[Region]:
        return [parser.parse_region()]

    def expected_type(self) -> sem.Type:
        if self.direction.data not in ("forward", "backward"):
            raise VerifyException(f"cf.traverse direction must be 'forward' or 'backward', got '{self.direction.data}'")
        _ensure_arity(self, (4,))
        if self.invariant.blocks and self.invariant.block.args:
            raise VerifyException("the invariant region of 'cf.traverse' takes no block arguments")
        y = _terminator(self.invariant, YieldOp, self.name)
        if len(y.operands) != 1:
            raise VerifyException("the invariant region of 'cf.traverse' must yield exactly one value")
        inv = _sem(y.operands[0].type, "the traverse invariant")
        return _typed(rules.traverse, [*_operand_types(self), inv])


@irdl_op_definition
class TupleOp(ExprOp):
    """``(e1, ..., en)``: one value per shape member.

    Example::

        %2 = cf.tuple %0, %1 : (!cf.float, !cf.float) -> !cf.tuple<!cf.float, !cf.float>
    """

    name = "cf.tuple"
    traits = traits_def(Pure())

    def __init__(self, elems: Sequence[SSAValue], result_type: Attribute | None = None):
        super().__init__(elems, result_type or T.TupleType([e.type for e in elems]))

    def expected_type(self) -> sem.Type:
        return _typed(rules.tuple_, _operand_types(self))


@irdl_op_definition
class ListOp(ExprOp):
    """``[e1, ..., en]``; the element type is the least upper bound of the elements' types.

    Example::

        %2 = cf.list %0, %1 : (!cf.int, !cf.float) -> !cf.list<!cf.float>
    """

    name = "cf.list"
    traits = traits_def(Pure())

    def __init__(self, elems: Sequence[SSAValue], result_type: Attribute):
        super().__init__(elems, result_type)

    def expected_type(self) -> sem.Type:
        return _typed(rules.list_literal, _operand_types(self))


# ----------------------------------------------------------------------------------------------
# Terminators
# ----------------------------------------------------------------------------------------------


def _print_values_with_types(op: Operation, printer: Printer) -> None:
    if op.operands:
        printer.print_string(" ")
        printer.print_list(op.operands, printer.print_operand)
    printer.print_op_attributes(op.attributes)
    if op.operands:
        printer.print_string(" : ")
        printer.print_list(op.operand_types, printer.print_attribute)


def _parse_values_with_types(parser: Parser) -> tuple[list[SSAValue], dict[str, Attribute]]:
    unresolved = parser.parse_optional_undelimited_comma_separated_list(
        parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
    ) or []
    attrs = parser.parse_optional_attr_dict()
    if not unresolved:
        return [], attrs
    parser.parse_punctuation(":")
    pos = parser.pos
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    if len(types) != len(unresolved):
        parser.raise_error(f"expected {len(unresolved)} type(s), got {len(types)}", at_position=pos, end_position=parser.pos)
    return [parser.resolve_operand(u, t) for u, t in zip(unresolved, types)], attrs


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of ``cf.shape`` (the constraints), ``cf.func`` (the body's value) and
    ``cf.traverse`` (the invariant) regions.

    Example::

        cf.yield %0, %1 : !cf.ct, !cf.ct
    """

    name = "cf.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])

    def print(self, printer: Printer) -> None:
        _print_values_with_types(self, printer)

    @classmethod
    def parse(cls, parser: Parser) -> "YieldOp":
        vals, attrs = _parse_values_with_types(parser)
        op = YieldOp(vals)
        op.attributes.update(attrs)
        return op

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is not None and not isinstance(parent, (ShapeOp, FuncOp, TraverseOp, ParameterOp)):
            raise VerifyException("'cf.yield' must be inside 'cf.shape', 'cf.func', 'cf.parameter' or 'cf.traverse'")


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """Terminator of a transformer rule: the new value of every shape member, in member order (or a
    single ``!cf.tuple`` holding them).  The count must equal the shape's member count and each value
    must be a subtype of its member's type.

    Example::

        cf.return %0, %1 : !cf.float, !cf.float
    """

    name = "cf.return"
    values = var_operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])

    def print(self, printer: Printer) -> None:
        _print_values_with_types(self, printer)

    @classmethod
    def parse(cls, parser: Parser) -> "ReturnOp":
        vals, attrs = _parse_values_with_types(parser)
        op = ReturnOp(vals)
        op.attributes.update(attrs)
        return op

    def returned_types(self) -> list[Attribute]:
        types = list(self.operand_types)
        if len(types) == 1 and isinstance(types[0], T.TupleType):
            return list(types[0].elems.data)
        return types

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is None:
            return
        if not isinstance(parent, TransformerOp):
            raise VerifyException("'cf.return' must be inside a rule of 'cf.transformer'")
        rule = parent.rule_name_of(self)
        shape = shape_of(self)
        if shape is None:
            if module_of(self) is None:
                return  # a detached transformer: nothing to compare against yet
            raise VerifyException("the module has no 'cf.shape', so a rule cannot return shape members")
        names = shape.member_names()
        got = self.returned_types()
        if len(got) != len(names):
            s = "s" if len(got) != 1 else ""
            raise VerifyException(f"rule '{rule}' returns {len(got)} value{s} but the shape has {len(names)} members")
        for name, g, want in zip(names, got, shape.member_types.data):
            if not sem.is_subtype(_sem(g, f"the value for member '{name}'"), _sem(want, name)):
                raise VerifyException(f"rule '{rule}' returns {type_str(g)} for shape member '{name}' of type {type_str(want)}")


# ----------------------------------------------------------------------------------------------
# Program structure
# ----------------------------------------------------------------------------------------------


def _print_arg_list(printer: Printer, block: Block) -> None:
    with printer.in_parens():
        printer.print_list(block.args, printer.print_block_argument)


def _parse_arg_list(parser: Parser) -> list[Parser.Argument]:
    return parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)


@irdl_op_definition
class ShapeOp(IRDLOperation):
    """The abstract shape: member names and types, and a region computing the constraints over the
    neuron ``%curr`` that every element must satisfy.  At most one per module.

    Example::

        cf.shape (l : !cf.float, u : !cf.float) constraints(%curr: !cf.neuron) {
          %0 = cf.access %curr["l"] : (!cf.neuron) -> !cf.float
          %1 = cf.le %0, %curr : (!cf.float, !cf.neuron) -> !cf.ct
          %2 = cf.access %curr["u"] : (!cf.neuron) -> !cf.float
          %3 = cf.ge %2, %curr : (!cf.float, !cf.neuron) -> !cf.ct
          cf.yield %1, %3 : !cf.ct, !cf.ct
        }
    """

    name = "cf.shape"
    member_names_attr = prop_def(ArrayAttr[StringAttr], prop_name="member_names")
    member_types = prop_def(ArrayAttr[Attribute])
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())

    def __init__(self, members: Sequence[tuple[str, Attribute]], body: Region):
        super().__init__(
            properties={
                "member_names": ArrayAttr([StringAttr(n) for n, _ in members]),
                "member_types": ArrayAttr([t for _, t in members]),
            },
            regions=[body],
        )

    def member_names(self) -> list[str]:
        return [s.data for s in self.member_names_attr.data]

    def members(self) -> list[tuple[str, Attribute]]:
        return list(zip(self.member_names(), self.member_types.data))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        with printer.in_parens():
            def one(m: tuple[str, Attribute]) -> None:
                printer.print_identifier_or_string_literal(m[0])
                printer.print_string(" : ")
                printer.print_attribute(m[1])

            printer.print_list(self.members(), one)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" constraints")
        _print_arg_list(printer, self.body.block)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> "ShapeOp":
        def one() -> tuple[str, Attribute]:
            n = parser.parse_identifier_or_str_literal(" (a shape member name)")
            parser.parse_punctuation(":")
            return n, parser.parse_type()

        members = parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_keyword("constraints")
        args = _parse_arg_list(parser)
        body = parser.parse_region(args)
        op = ShapeOp(members, body)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def verify_(self) -> None:
        names = self.member_names()
        if len(names) != len(self.member_types.data):
            raise VerifyException("'cf.shape' needs one type per member name")
        if not names:
            raise VerifyException("'cf.shape' needs at least one member")
        seen: set[str] = set()
        for n, t in self.members():
            if n in seen:
                raise VerifyException(f"shape member '{n}' is declared twice")
            seen.add(n)
            if rules.is_metadata_name(n):
                raise VerifyException(f"shape member '{n}' clashes with the metadata name '{n}'")
            if isinstance(t, (T.FuncType, T.TupleType)) or not isinstance(t, T.CF_TYPES):
                raise VerifyException(f"shape member '{n}' has type {t}; members have ConstraintFlow data types")
        block = self.body.block
        if len(block.args) != 1 or block.args[0].type != T.NeuronType():
            raise VerifyException("the constraint region of 'cf.shape' takes one argument %curr : !cf.neuron")
        y = _terminator(self.body, YieldOp, self.name)
        for i, t in enumerate(y.operand_types):
            if not sem.is_subtype(_sem(t, f"constraint {i}"), sem.CT):
                raise VerifyException(f"a shape constraint must be a constraint (Ct), got {type_str(t)} (constraint {i})")
        mod = module_of(self)
        if mod is not None and sum(isinstance(o, ShapeOp) for o in mod.ops) > 1:
            raise VerifyException("the module has more than one 'cf.shape'")


@irdl_op_definition
class FuncOp(IRDLOperation):
    """A user function: a symbol whose region's block arguments are the parameters and whose
    ``cf.yield`` returns the body's value; ``function_type`` is ``(params) -> type(body)``.

    Example::

        cf.func @simplify_lower(%n: !cf.neuron, %coeff: !cf.float) -> !cf.float {
          %0 = cf.const 0.0 : !cf.float
          %1 = cf.ge %coeff, %0 : (!cf.float, !cf.float) -> !cf.bool
          %2 = cf.access %n["l"] : (!cf.neuron) -> !cf.float
          %3 = cf.mul %coeff, %2 : (!cf.float, !cf.float) -> !cf.float
          %4 = cf.access %n["u"] : (!cf.neuron) -> !cf.float
          %5 = cf.mul %coeff, %4 : (!cf.float, !cf.float) -> !cf.float
          %6 = cf.select %1, %3, %5 : (!cf.bool, !cf.float, !cf.float) -> !cf.float
          cf.yield %6 : !cf.float
        }
    """

    name = "cf.func"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(T.FuncType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(self, name: str, function_type: T.FuncType, body: Region):
        super().__init__(properties={"sym_name": StringAttr(name), "function_type": function_type}, regions=[body])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        _print_arg_list(printer, self.body.block)
        printer.print_string(" -> ")
        printer.print_attribute(self.function_type.output)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> "FuncOp":
        name = parser.parse_symbol_name()
        args = _parse_arg_list(parser)
        parser.parse_punctuation("->")
        ret = parser.parse_type()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(args)
        op = FuncOp(name.data, T.FuncType([a.type for a in args], ret), body)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def verify_(self) -> None:
        ft = self.function_type
        block = self.body.block
        if tuple(block.arg_types) != tuple(ft.inputs.data):
            raise VerifyException(f"the arguments of @{self.sym_name.data} do not match its type {ft}")
        for i, t in enumerate(ft.inputs.data):
            if isinstance(t, (T.FuncType, T.TupleType)):
                raise VerifyException(f"parameter {i} of @{self.sym_name.data} has type {t}; parameters have data types")
        y = _terminator(self.body, YieldOp, self.name)
        if len(y.operands) != 1:
            raise VerifyException(f"the body of @{self.sym_name.data} must yield exactly one value")
        if y.operand_types[0] != ft.output:
            raise VerifyException(f"@{self.sym_name.data} yields {y.operand_types[0]} but its result type is {ft.output}")


@irdl_op_definition
class TransformerOp(IRDLOperation):
    """An abstract transformer: one region per operator rule, the operator names in ``rules``.  A
    rule region's block arguments are the names the operator binds (``%curr``, ``%curr_list``,
    ``%prev``, and for binary operators ``%prev0``/``%prev1``), and it ends in ``cf.return``.

    Example::

        cf.transformer @ibp {
          Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
            %0 = cf.access %prev["l"] : (!cf.neuron) -> !cf.float
            %1 = cf.access %prev["u"] : (!cf.neuron) -> !cf.float
            cf.return %0, %1 : !cf.float, !cf.float
          }
        }
    """

    name = "cf.transformer"
    sym_name = prop_def(StringAttr)
    rules = prop_def(ArrayAttr[StringAttr])
    bodies = var_region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(self, name: str, rules: Sequence[tuple[str, Region]]):
        super().__init__(
            properties={"sym_name": StringAttr(name), "rules": ArrayAttr([StringAttr(r) for r, _ in rules])},
            regions=[[r for _, r in rules]],
        )

    def rule_names(self) -> list[str]:
        return [s.data for s in self.rules.data]

    def rule_regions(self) -> list[tuple[str, Region]]:
        return list(zip(self.rule_names(), self.bodies))

    def rule_name_of(self, op: Operation) -> str:
        region = op.parent_region()
        for name, r in self.rule_regions():
            if r is region:
                return name
        return "?"

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" {")
        with printer.indented():
            for rule, region in self.rule_regions():
                printer._print_new_line()  # pyright: ignore[reportPrivateUsage]
                printer.enter_scope()
                printer.print_string(rule)
                _print_arg_list(printer, region.block)
                printer.print_string(" ")
                printer.print_region(region, print_entry_block_args=False)
                printer.exit_scope()
        printer._print_new_line()  # pyright: ignore[reportPrivateUsage]
        printer.print_string("}")

    @classmethod
    def parse(cls, parser: Parser) -> "TransformerOp":
        name = parser.parse_symbol_name()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation("{")
        rules: list[tuple[str, Region]] = []
        while parser.parse_optional_punctuation("}") is None:
            rule = parser.parse_identifier(" (an operator rule name, or '}')")
            args = _parse_arg_list(parser)
            rules.append((rule, parser.parse_region(args)))
        op = TransformerOp(name.data, rules)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def verify_(self) -> None:
        names = self.rule_names()
        if len(names) != len(self.bodies):
            raise VerifyException("'cf.transformer' needs one rule name per region")
        seen: set[str] = set()
        for rule, region in self.rule_regions():
            if rule not in rules.OPERATORS:
                raise VerifyException(f"unknown operator '{rule}' in transformer @{self.sym_name.data}")
            if rule in seen:
                raise VerifyException(f"transformer @{self.sym_name.data} has two rules for '{rule}'")
            seen.add(rule)
            want = [to_cf(t) for t in rules.operator_bindings(rule).values()]
            if list(region.block.arg_types) != want:
                shown = ", ".join(f"%{binding_hint(n)}: {to_cf(t)}" for n, t in rules.operator_bindings(rule).items())
                raise VerifyException(f"rule '{rule}' must take the arguments ({shown})")
            _terminator(region, ReturnOp, f"{self.name} rule {rule}")


@irdl_op_definition
class ParameterOp(IRDLOperation):
    """A parameter declaration (``param slope for Relu in [lo, hi] init e else d;``): the operators whose
    neurons have the parameter, one region per operator computing ``lo``, ``hi`` and the initial value
    from that operator's rule bindings (per neuron), and the value on other neurons (``else``; absent
    when not declared).

    Example::

        cf.parameter @slope for ["Relu"] else 1.0 {
          Relu(%curr: !cf.neuron, %curr_list: !cf.list<!cf.neuron>, %prev: !cf.neuron) {
            %0 = cf.access %prev["l"] : (!cf.neuron) -> !cf.float
            %1 = cf.const 0.0 : !cf.float
            %2 = cf.ge %0, %1 : (!cf.float, !cf.float) -> !cf.bool
            %3 = cf.const 1.0 : !cf.float
            %4 = cf.select %2, %3, %1 : (!cf.bool, !cf.float, !cf.float) -> !cf.float
            cf.yield %4, %3, %3 : !cf.float, !cf.float, !cf.float
          }
        }
    """

    name = "cf.parameter"
    sym_name = prop_def(StringAttr)
    ops = prop_def(ArrayAttr[StringAttr])
    default = opt_prop_def(FloatAttr)
    bodies = var_region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(self, name: str, domains: Sequence[tuple[str, Region]], default: float | None):
        props: dict[str, Attribute] = {"sym_name": StringAttr(name), "ops": ArrayAttr([StringAttr(o) for o, _ in domains])}
        if default is not None:
            props["default"] = FloatAttr(float(default), f64)
        super().__init__(properties=props, regions=[[r for _, r in domains]])

    def op_names(self) -> list[str]:
        return [s.data for s in self.ops.data]

    def domains(self) -> list[tuple[str, Region]]:
        return list(zip(self.op_names(), self.bodies))

    def default_value(self) -> float | None:
        return None if self.default is None else float(self.default.value.data)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" for ")
        printer.print_attribute(self.ops)
        if self.default is not None:
            printer.print_string(" else " + _format_float(self.default_value()))
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" {")
        with printer.indented():
            for op, region in self.domains():
                printer._print_new_line()  # pyright: ignore[reportPrivateUsage]
                printer.enter_scope()
                printer.print_string(op)
                _print_arg_list(printer, region.block)
                printer.print_string(" ")
                printer.print_region(region, print_entry_block_args=False)
                printer.exit_scope()
        printer._print_new_line()  # pyright: ignore[reportPrivateUsage]
        printer.print_string("}")

    @classmethod
    def parse(cls, parser: Parser) -> "ParameterOp":
        name = parser.parse_symbol_name()
        parser.parse_keyword("for")
        ops = parser.parse_attribute()
        if not isinstance(ops, ArrayAttr) or not all(isinstance(o, StringAttr) for o in ops.data):
            parser.raise_error("expected the operators of 'cf.parameter' as an array of strings")
        default = None
        if parser.parse_optional_keyword("else") is not None:
            default = parser.parse_float()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation("{")
        domains: list[tuple[str, Region]] = []
        while parser.parse_optional_punctuation("}") is None:
            rule = parser.parse_identifier(" (an operator name, or '}')")
            args = _parse_arg_list(parser)
            domains.append((rule, parser.parse_region(args)))
        if [o for o, _ in domains] != [o.data for o in ops.data]:
            parser.raise_error("'cf.parameter' needs one region per operator, in the order of its 'for' list")
        op = ParameterOp(name.data, domains, default)
        if attrs is not None:
            op.attributes.update(attrs.data)
        return op

    def verify_(self) -> None:
        names = self.op_names()
        if not names or len(names) != len(self.bodies):
            raise VerifyException("'cf.parameter' needs at least one operator and one region per operator")
        pname = self.sym_name.data
        if rules.is_metadata_name(pname):
            raise VerifyException(f"parameter '{pname}' clashes with the metadata name '{pname}'")
        if pname in _members(self):
            raise VerifyException(f"parameter '{pname}' has the name of a shape member")
        if len(set(names)) != len(names):
            raise VerifyException(f"parameter @{pname} names an operator twice")
        for op, region in self.domains():
            if op not in rules.OPERATORS:
                raise VerifyException(f"unknown operator '{op}' for parameter @{pname}")
            want = [to_cf(t) for t in rules.operator_bindings(op).values()]
            if list(region.block.arg_types) != want:
                shown = ", ".join(f"%{binding_hint(n)}: {to_cf(t)}" for n, t in rules.operator_bindings(op).items())
                raise VerifyException(f"the domain of @{pname} for '{op}' must take the arguments ({shown})")
            y = _terminator(region, YieldOp, f"{self.name} @{pname} {op}")
            if len(y.operands) != 3:
                raise VerifyException(f"the domain of @{pname} for '{op}' yields (lo, hi, init), got {len(y.operands)} value(s)")
            for what, t in zip(("lower bound", "upper bound", "initial value"), y.operand_types):
                _typed(rules.parameter_bound, what, _sem(t, f"the {what} of @{pname}"))


def binding_hint(name: str) -> str:
    """The SSA name hint for a rule binding (``prev_0`` -> ``prev0``; xDSL drops ``_<digits>``)."""
    return name.replace("_", "") if name in ("prev_0", "prev_1") else name


@irdl_op_definition
class FlowOp(IRDLOperation):
    """The analysis: direction, priority function ``(Neuron) -> Float``, stop function
    ``(Neuron) -> Bool`` and transformer, all by symbol.

    Example::

        cf.flow forward @priority, @stop, @deeppoly
    """

    name = "cf.flow"
    direction = prop_def(StringAttr)
    priority = prop_def(SymbolRefAttr)
    stop = prop_def(SymbolRefAttr)
    transformer = prop_def(SymbolRefAttr)

    def __init__(self, direction: str, priority: str, stop: str, transformer: str):
        super().__init__(
            properties={
                "direction": StringAttr(direction),
                "priority": SymbolRefAttr(priority),
                "stop": SymbolRefAttr(stop),
                "transformer": SymbolRefAttr(transformer),
            }
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" " + self.direction.data + " ")
        printer.print_list(
            (self.priority, self.stop, self.transformer), lambda s: printer.print_symbol_name(s.root_reference.data)
        )
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "FlowOp":
        d = parser.parse_keyword_in(("forward", "backward"), " (the flow direction)")
        p = parser.parse_symbol_name()
        parser.parse_punctuation(",")
        s = parser.parse_symbol_name()
        parser.parse_punctuation(",")
        t = parser.parse_symbol_name()
        attrs = parser.parse_optional_attr_dict()
        op = FlowOp(d, p.data, s.data, t.data)
        op.attributes.update(attrs)
        return op

    def verify_(self) -> None:
        if self.direction.data not in ("forward", "backward"):
            raise VerifyException(f"flow direction must be 'forward' or 'backward', got '{self.direction.data}'")
        tname = self.transformer.root_reference.data
        tr = lookup_symbol(self, tname)
        if not isinstance(tr, TransformerOp):
            raise VerifyException(f"flow uses unknown transformer @{tname}")
        for ref, role, want_ret in ((self.priority, "priority", sem.FLOAT), (self.stop, "stop", sem.BOOL)):
            fname = ref.root_reference.data
            f = lookup_symbol(self, fname)
            if not isinstance(f, FuncOp):
                raise VerifyException(f"flow uses unknown {role} function @{fname}")
            ft = _sem(f.function_type, f"@{fname}")
            assert isinstance(ft, sem.FuncType)
            if len(ft.params) != 1 or not sem.is_subtype(sem.NEURON, ft.params[0]) or not sem.is_subtype(ft.ret, want_ret):
                raise VerifyException(f"flow {role} function @{fname} must have type (Neuron) -> {want_ret}, got {ft}")


CF_OPS: list[type[Operation]] = [
    ShapeOp, FuncOp, ParameterOp, TransformerOp, FlowOp, YieldOp, ReturnOp,
    ConstOp, SymOp, *BINARY_OPS.values(), NegOp, NotOp, SelectOp,
    FuncRefOp, CallOp, ApplyOp, *BUILTIN_OPS.values(),
    LpOp, AccessOp, ParamOp, MapOp, DotOp, TraverseOp, TupleOp, ListOp,
]

CF = Dialect("cf", CF_OPS, list(T.CF_TYPES))
"""The ``cf`` dialect (ConstraintFlow).  Not xDSL's control-flow dialect of the same name."""

__all__ = [c.__name__ for c in CF_OPS] + [
    "CF", "CF_OPS", "BINARY_OPS", "BUILTIN_OPS", "ExprOp", "BinaryOp", "BuiltinOp",
    "module_of", "shape_of", "lookup_symbol", "binding_hint",
]
