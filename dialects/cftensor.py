"""The ``cftensor`` dialect: ConstraintFlow lifted to tensor operations (paper appendix "IR Grammar").

Every value has the type ``!cftensor.t<metadata stack>`` (see :mod:`cfmlir.dialects.cftensor_metadata`),
e.g. the neuron tensor of a map over per-neuron PolyExps::

    %n = cftensor.map_neuron %e : (!cftensor.t<P, [curr], [1]>) -> !cftensor.t<N, [poly], [1] :: N, [1], [curr]>

The ops follow the paper's IR grammar: base expressions (``const``, ``sym``, rule inputs), tensor
expressions (``binary``, ``unary``, ``ternary``, ``clamp``, ``mult``, ``inner``, ``add_dim``,
``remove_dim``, ``repeat``, ``reduce``), domain expressions (extracting and combining the coefficient and
constant parts of PolyExps and SymExps, promotions, the map components, ``access``) and statements
(``rule``/``return``, ``while``).  Shapes are symbolic; sizes are resolved by the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, BoolAttr, FloatAttr, IntAttr, IntegerAttr, StringAttr, f64
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from cfmlir.dialects.cftensor_metadata import (
    ONE, TYPE_LETTERS, Element, Metadata, Size, compress, drop_dim, elementwise, insert_dim, is_scalar_const, is_uniform,
    merge_top, number_letter, parse_element_from, parse_metadata, parse_metadata_from, parse_size, parse_size_from,
    per_layer, reduce_dim, with_flat_dim,
)

# ----------------------------------------------------------------------------------------------
# The type
# ----------------------------------------------------------------------------------------------


def _cached(attr: Attribute, key: str, build):
    """``build()``, computed once per attribute: attributes are immutable, so the plain-Python view
    of their parameters is kept beside them (outside the dataclass fields: not compared or hashed)."""
    value = attr.__dict__.get(key)
    if value is None:
        value = build()
        object.__setattr__(attr, key, value)
    return value


@irdl_attr_definition
class SizeAttr(ParametrizedAttribute):
    """A symbolic size (:class:`~cfmlir.dialects.cftensor_metadata.Size`): a positive coefficient
    times a product of size symbols, ``#cftensor.size<2*curr>``.  It appears inside
    ``!cftensor.t<...>``, written without its name."""

    name = "cftensor.size"
    coeff: IntAttr
    symbols: ArrayAttr[StringAttr]

    def __init__(self, size: Size):
        super().__init__(IntAttr(size.coeff), ArrayAttr([StringAttr(s) for s in size.symbols]))

    @property
    def size(self) -> Size:
        return _cached(self, "_size", lambda: Size(self.coeff.data, tuple(s.data for s in self.symbols.data)))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.size}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return list(_size_attr(parse_size_from(parser)).parameters)

    def verify(self) -> None:
        if self.coeff.data < 1:
            raise VerifyException(f"sizes are positive, got {self.coeff.data}")


@irdl_attr_definition
class ElementAttr(ParametrizedAttribute):
    """One metadata stack element (:class:`~cfmlir.dialects.cftensor_metadata.Element`): its type
    letter, whether it is a compile-time constant, and its intrinsic shape and broadcast factor as
    :class:`SizeAttr` lists, ``#cftensor.element<const R, [1], [1]>``.  It appears inside
    ``!cftensor.t<...>``, written without its name."""

    name = "cftensor.element"
    letter: StringAttr
    is_const: BoolAttr
    shape: ArrayAttr[SizeAttr]
    broadcast: ArrayAttr[SizeAttr]

    def __init__(self, element: Element):
        super().__init__(StringAttr(element.type), IntegerAttr.from_bool(element.is_const),
                         ArrayAttr([_size_attr(s) for s in element.shape]),
                         ArrayAttr([_size_attr(b) for b in element.broadcast]))

    @property
    def element(self) -> Element:
        return _cached(self, "_element", lambda: Element(
            self.letter.data, tuple(s.size for s in self.shape.data), tuple(b.size for b in self.broadcast.data),
            bool(self.is_const.value.data)))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.element}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return list(_element_attr(parse_element_from(parser)).parameters)

    def verify(self) -> None:
        if self.letter.data not in TYPE_LETTERS:
            raise VerifyException(f"unknown type letter '{self.letter.data}', expected one of {''.join(TYPE_LETTERS)}")
        if len(self.shape.data) != len(self.broadcast.data):
            raise VerifyException("shape and broadcast factor must have the same rank")


@lru_cache(maxsize=4096)
def _size_attr(size: Size) -> SizeAttr:
    return SizeAttr(size)


@lru_cache(maxsize=4096)
def _element_attr(element: Element) -> ElementAttr:
    return ElementAttr(element)


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A tensor value with its metadata stack: ``!cftensor.t<R, [batch, curr], [1, 1]>``.

    Elements are written top first and separated by ``::``; ``const`` marks compile-time constants::

        !cftensor.t<const R, [1], [1]>
        !cftensor.t<R, [poly], [1] :: R, [curr], [1]>       // physically a [curr, poly] tensor

    The stack is held structurally, one :class:`ElementAttr` per element (top first), and
    :attr:`metadata` is the :class:`~cfmlir.dialects.cftensor_metadata.Metadata` they describe (built
    once per type).  The text form is printed by ``str(Metadata)`` and parsed by
    :func:`~cfmlir.dialects.cftensor_metadata.parse_metadata_from`.
    """

    name = "cftensor.t"
    elements: ArrayAttr[ElementAttr]

    def __init__(self, metadata: Metadata | str):
        if not isinstance(metadata, Metadata):
            metadata = parse_metadata(metadata)
        super().__init__(ArrayAttr([_element_attr(e) for e in metadata.elements]))

    @property
    def metadata(self) -> Metadata:
        return _cached(self, "_metadata", lambda: Metadata(tuple(e.element for e in self.elements.data)))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.metadata}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            metadata = parse_metadata_from(parser)
        return [ArrayAttr([_element_attr(e) for e in metadata.elements])]

    def verify(self) -> None:
        if not self.elements.data:
            raise VerifyException("a metadata stack has at least one element")


def meta(v: SSAValue) -> Metadata:
    """The metadata stack of a cftensor value."""
    t = v.type
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a !cftensor.t value, got {t}")
    return t.metadata


# ----------------------------------------------------------------------------------------------
# Result types are the ops' (as MLIR's InferTypeOpInterface): every op below whose result type
# follows from its operands and properties has a static ``infer_type`` giving that type's metadata;
# its builder calls it (callers pass no result type) and its verifier requires the result to be it,
# so a parsed or rewritten op whose type disagrees is refused.  Where the type holds one choice
# that no operand or property records (an ``add_dim``'s broadcast factor, the type letter of a
# shape member read by ``access``, a ``const``'s letter), the builder takes that choice as an
# argument and the verifier reads it back from the result type and checks the rest.
# ----------------------------------------------------------------------------------------------


def _verify_inferred(op: IRDLOperation, expected: Metadata, index: int = 0) -> None:
    got = meta(op.results[index])
    if got != expected:
        raise VerifyException(f"gives <{expected}> from its operands, not <{got}>")


def _tensor(m: Metadata) -> "TensorType":
    return TensorType(m)


def _keep_attributes(old: IRDLOperation, new: IRDLOperation) -> IRDLOperation:
    new.attributes.update(old.attributes)
    return new


# ----------------------------------------------------------------------------------------------
# Base expressions
# ----------------------------------------------------------------------------------------------

_UNARY_FORMAT = "$input attr-dict `:` functional-type(operands, results)"


@irdl_op_definition
class ConstOp(IRDLOperation):
    """IrConst: a compile-time constant; its shape follows whatever it is combined with.

    ``%c = cftensor.const(0.5 : f64) : !cftensor.t<const R, [1], [1]>``
    """

    name = "cftensor.const"
    value = prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "`(` $value `)` attr-dict `:` type($result)"

    def __init__(self, value: float, letter: str = "R"):
        super().__init__(properties={"value": FloatAttr(value, f64)}, result_types=[_tensor(self.infer_type(letter))])

    @staticmethod
    def infer_type(letter: str) -> Metadata:
        """A compile-time scalar of type letter ``letter`` (R, I or B)."""
        return Metadata.single(letter, [ONE], [ONE], True)

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(meta(self.result).top.type)

    def verify_(self) -> None:
        _verify_inferred(self, self.inferred_type())


@irdl_op_definition
class InputOp(IRDLOperation):
    """IrVar for a rule's inputs: the neurons ``curr``/``prev``/``prev_0``/``prev_1`` and the layer
    metadata, resolved by the runtime from the layer being analysed.

    ``%prev = cftensor.input "prev" : !cftensor.t<N, [1, prev], [batch, 1]>``
    """

    name = "cftensor.input"
    input_name = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input_name attr-dict `:` type($result)"

    def __init__(self, input_name: str, type: TensorType):
        super().__init__(properties={"input_name": StringAttr(input_name)}, result_types=[type])


@irdl_op_definition
class SymOp(IRDLOperation):
    """IrSym: one fresh noise symbol per (sample, current neuron).

    ``%e = cftensor.sym : !cftensor.t<E, [1, curr], [batch, 1]>``
    """

    name = "cftensor.sym"
    result = result_def(TensorType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[_tensor(self.infer_type())])

    @staticmethod
    def infer_type() -> Metadata:
        return Metadata.single("E", [ONE, Size.of("curr")], [Size.of("batch"), ONE])

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type()

    def verify_(self) -> None:
        _verify_inferred(self, self.inferred_type())


# ----------------------------------------------------------------------------------------------
# Tensor expressions
# ----------------------------------------------------------------------------------------------

BINARY_OPS = ("add", "sub", "div", "min", "max", "lt", "le", "gt", "ge", "eq", "ne", "and", "or")
UNARY_OPS = ("neg", "not", "sigmoid", "tanh", "exp", "log", "abs", "sin", "cos", "floor")
#: the binary and unary operations whose result is a truth value (type letter B)
BOOL_RESULT_OPS = ("lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not")
#: the unary operations whose result is a Float (R) whatever the operand
FLOAT_RESULT_OPS = ("sigmoid", "tanh", "exp", "log", "sin", "cos")
#: the reductions of ``cftensor.reduce`` (``kind``)
REDUCE_KINDS = ("sum", "min", "max")


def _verify_same_shape(op: IRDLOperation, values: Sequence[SSAValue]) -> None:
    shapes = {(meta(v).shape, meta(v).broadcast) for v in values if not is_scalar_const(meta(v))}
    if not shapes:
        return
    rshape = (meta(op.results[0]).shape, meta(op.results[0]).broadcast)
    if len(shapes) != 1 or rshape not in shapes:
        raise VerifyException("needs operands and result of one intrinsic shape (align them first)")


def result_letter(kind: str, letters: Sequence[str]) -> str:
    """The type letter of an element-wise op's result from the operation and its operands' letters:
    comparisons, connectives and ``not`` give B, division and sigmoid/tanh/exp/log/sin/cos give R, and
    the other arithmetic ones (add, sub, mult, min, max, neg, abs, floor) give the operands' least
    upper bound (R over I over B)."""
    if kind in BOOL_RESULT_OPS:
        return "B"
    if kind in FLOAT_RESULT_OPS or kind == "div":
        return "R"
    return number_letter(letters)


def _letters(values: Sequence[SSAValue]) -> list[str]:
    return [meta(v).top.type for v in values]


@irdl_op_definition
class BinaryOp(IRDLOperation):
    """IrBinary: an element-wise binary operation on aligned operands (``op`` in add, sub, div, min,
    max, lt, le, gt, ge, eq, ne, and, or; products are :class:`MultOp`).

    ``%s = cftensor.binary "add" %a, %b : (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.binary"
    op = prop_def(StringAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$op $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, op: str, lhs: SSAValue, rhs: SSAValue):
        super().__init__(properties={"op": StringAttr(op)}, operands=[lhs, rhs],
                         result_types=[_tensor(self.infer_type(op, lhs, rhs))])

    def on(self, operands: Sequence[SSAValue]) -> "BinaryOp":
        """The same operation on other operands (its type inferred from them)."""
        return _keep_attributes(self, BinaryOp(self.op.data, *operands))

    @staticmethod
    def infer_type(op: str, lhs: SSAValue, rhs: SSAValue) -> Metadata:
        """The operands' common shape with the letter :func:`result_letter` gives."""
        return elementwise(result_letter(op, _letters([lhs, rhs])), [meta(lhs), meta(rhs)])

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(self.op.data, self.lhs, self.rhs)

    def verify_(self) -> None:
        if self.op.data not in BINARY_OPS:
            raise VerifyException(f"unknown binary operation '{self.op.data}'")
        _verify_same_shape(self, [self.lhs, self.rhs])
        _verify_inferred(self, self.inferred_type())


@irdl_op_definition
class MultOp(IRDLOperation):
    """IrMult: the element-wise product of two aligned tensors.

    ``%p = cftensor.mult %c, %l : (!cftensor.t<R, [curr, poly, poly], [1, 1, 1]>, !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly, poly], [1, 1, 1]>``
    """

    name = "cftensor.mult"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[_tensor(self.infer_type(lhs, rhs))])

    def on(self, operands: Sequence[SSAValue]) -> "MultOp":
        return _keep_attributes(self, MultOp(*operands))

    @staticmethod
    def infer_type(lhs: SSAValue, rhs: SSAValue) -> Metadata:
        return BinaryOp.infer_type("mul", lhs, rhs)

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(self.lhs, self.rhs)

    def verify_(self) -> None:
        _verify_same_shape(self, [self.lhs, self.rhs])
        _verify_inferred(self, self.inferred_type())


@irdl_op_definition
class UnaryOp(IRDLOperation):
    """IrUnary: ``op`` in neg, not, sigmoid, tanh, exp, log, abs.

    ``%n = cftensor.unary "neg" %a : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.unary"
    op = prop_def(StringAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$op $input attr-dict `:` functional-type(operands, results)"

    def __init__(self, op: str, input: SSAValue):
        super().__init__(properties={"op": StringAttr(op)}, operands=[input],
                         result_types=[_tensor(self.infer_type(op, input))])

    def on(self, operands: Sequence[SSAValue]) -> "UnaryOp":
        return _keep_attributes(self, UnaryOp(self.op.data, *operands))

    @staticmethod
    def infer_type(op: str, input: SSAValue) -> Metadata:
        """The operand's metadata with the letter :func:`result_letter` gives (a compile-time
        scalar stays one)."""
        m = meta(input)
        letter = result_letter(op, [m.top.type])
        return Metadata.single(letter, [ONE], [ONE], True) if is_scalar_const(m) else m.with_type(letter)

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(self.op.data, self.input)

    def verify_(self) -> None:
        if self.op.data not in UNARY_OPS:
            raise VerifyException(f"unknown unary operation '{self.op.data}'")
        _verify_inferred(self, self.inferred_type())


@irdl_op_definition
class TernaryOp(IRDLOperation):
    """IrTernary: per-element ``cond ? a : b`` on aligned operands.

    ``%r = cftensor.ternary %c, %a, %b : (!cftensor.t<B, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.ternary"
    cond = operand_def(TensorType)
    then = operand_def(TensorType)
    otherwise = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$cond `,` $then `,` $otherwise attr-dict `:` functional-type(operands, results)"

    def __init__(self, cond: SSAValue, then: SSAValue, otherwise: SSAValue):
        super().__init__(operands=[cond, then, otherwise], result_types=[_tensor(self.infer_type(cond, then, otherwise))])

    def on(self, operands: Sequence[SSAValue]) -> "TernaryOp":
        return _keep_attributes(self, TernaryOp(*operands))

    @staticmethod
    def infer_type(cond: SSAValue, then: SSAValue, otherwise: SSAValue) -> Metadata:
        """The operands' common shape; the branches' letter (their least upper bound where they differ)."""
        return elementwise(number_letter(_letters([then, otherwise])), [meta(cond), meta(then), meta(otherwise)])

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(self.cond, self.then, self.otherwise)

    def verify_(self) -> None:
        _verify_same_shape(self, [self.cond, self.then, self.otherwise])
        _verify_inferred(self, self.inferred_type())


@irdl_op_definition
class ClampOp(IRDLOperation):
    """IrClamp: ``min(max(x, lo), hi)`` with either bound optional.

    ``%p = cftensor.clamp %c min(0.0 : f64) : (!cftensor.t<R, [curr, poly], [1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>``
    """

    name = "cftensor.clamp"
    input = operand_def(TensorType)
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input (`min` `(` $min^ `)`)? (`max` `(` $max^ `)`)? attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, min: float | None = None, max: float | None = None):
        props = {}
        if min is not None:
            props["min"] = FloatAttr(min, f64)
        if max is not None:
            props["max"] = FloatAttr(max, f64)
        super().__init__(operands=[input], result_types=[input.type], properties=props)

    def on(self, operands: Sequence[SSAValue]) -> "ClampOp":
        lo, hi = (None if a is None else a.value.data for a in (self.min, self.max))
        return _keep_attributes(self, ClampOp(*operands, min=lo, max=hi))

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return meta(self.input)

    def verify_(self) -> None:
        if self.min is None and self.max is None:
            raise VerifyException("needs a min or a max bound")
        _verify_inferred(self, self.inferred_type())


class _DimSyntax:
    """Custom syntax shared by the ops with a dimension index: ``%x[dim]``, followed by
    ``<keyword> "value"`` for the string property named by ``PROP_KEYWORD`` (``kind`` of the
    reductions, ``size`` of repeat) where the op has one::

        cftensor.reduce %p[1] kind "sum" : (!cftensor.t<...>) -> !cftensor.t<...>
        cftensor.inner %a, %b[1] : (!cftensor.t<...>, !cftensor.t<...>) -> !cftensor.t<...>
    """

    #: the string property printed after the dimension, by its name
    PROP_KEYWORD: ClassVar[str | None] = None

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_ssa_value)
        printer.print_string(f"[{self.dim.data}]")
        kw = self.PROP_KEYWORD
        if kw is not None and kw in self.properties:
            printer.print_string(f" {kw} ")
            printer.print_attribute(self.properties[kw])
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_operation_type(self)

    @classmethod
    def parse(cls, parser):
        operands = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(",") is not None:
            operands.append(parser.parse_unresolved_operand())
        parser.parse_punctuation("[")
        dim = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_punctuation("]")
        props: dict[str, Attribute] = {"dim": IntAttr(dim)}
        kw = cls.PROP_KEYWORD
        if kw is not None:
            parser.parse_keyword(kw)
            props[kw] = StringAttr(parser.parse_str_literal())
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ft = parser.parse_function_type()
        n_results = getattr(cls, "N_RESULTS", 1)
        if len(ft.inputs.data) != len(operands) or len(ft.outputs.data) != n_results:
            parser.raise_error(f"expected {len(operands)} operand type(s) and {n_results} result type(s)")
        resolved = [parser.resolve_operand(o, t) for o, t in zip(operands, ft.inputs.data)]
        op = cls.create(operands=resolved, result_types=list(ft.outputs.data), properties=props, attributes=attrs)
        return op


@irdl_op_definition
class InnerOp(_DimSyntax, IRDLOperation):
    """IrInnerProduct: ``sum over dim of (lhs * rhs)`` where the operands have equal rank and every
    dimension of size 1 in one operand broadcasts against the other: what ``reduce(mult(repeat(a),
    repeat(b)))`` computes, without materialising the repeats (the runtime runs it as a batched
    matrix product).

    ``%r = cftensor.inner %c, %l[1] : (!cftensor.t<R, [curr, poly, 1], [1, 1, poly]>, !cftensor.t<R, [1, poly, poly], [curr, 1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>``
    """

    name = "cftensor.inner"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    dim = prop_def(IntAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue, dim: int, type: TensorType):
        super().__init__(operands=[lhs, rhs], properties={"dim": IntAttr(dim)}, result_types=[type])


@irdl_op_definition
class SplitInnerOp(_DimSyntax, IRDLOperation):
    """The sign-split inner product of back-substitution: ``inner(clamp(x, min=0), pos, dim) +
    inner(clamp(x, max=0), neg, dim)`` -- positive coefficients meet one bound, negative ones the
    other.  Where ``pos`` and ``neg`` hold the same values (an affine layer's lower and upper
    polyhedra are one expression) the runtime computes ``inner(x, pos)`` once, without the clamps.

    ``%r = cftensor.split_inner %c, %l, %u[2] : (!cftensor.t<R, [batch, curr, poly, 1], [1, 1, 1, 1]>, !cftensor.t<R, [batch, 1, poly, poly], [1, curr, 1, 1]>, !cftensor.t<R, [batch, 1, poly, poly], [1, curr, 1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>``
    """

    name = "cftensor.split_inner"
    input = operand_def(TensorType)
    pos = operand_def(TensorType)
    neg = operand_def(TensorType)
    dim = prop_def(IntAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, pos: SSAValue, neg: SSAValue, dim: int, type: TensorType):
        super().__init__(operands=[input, pos, neg], properties={"dim": IntAttr(dim)}, result_types=[type])


@irdl_op_definition
class IntervalInnerOp(_DimSyntax, IRDLOperation):
    """Both sign-split inner products of an interval: ``lo = split_inner(x, l, u, dim)`` and
    ``hi = split_inner(x, u, l, dim)`` -- the lower and upper bound of ``sum x * v`` over the box
    ``l <= v <= u`` -- from one centre/radius pair: ``lo, hi = inner(x, (l + u)/2) -/+ inner(|x|,
    (u - l)/2)``, two inner products instead of four.

    ``%lo, %hi = cftensor.interval_inner %c, %l, %u[2] : (!cftensor.t<R, [1, curr, poly], [batch, 1, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>, !cftensor.t<R, [batch, 1, poly], [1, curr, 1]>) -> (!cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>)``

    An optional fourth operand ``b`` (the results' type) is added to both: ``lo, hi = (inner(x, (l +
    u)/2) + b) -/+ inner(|x|, (u - l)/2)`` (an affine layer's bias, one addition instead of two)::

        %lo, %hi = cftensor.interval_inner %c, %l, %u, %b[2] : (..., !cftensor.t<R, [batch, curr], [1, 1]>) -> (...)
    """

    name = "cftensor.interval_inner"
    N_RESULTS: ClassVar[int] = 2
    input = operand_def(TensorType)
    lower = operand_def(TensorType)
    upper = operand_def(TensorType)
    offset = opt_operand_def(TensorType)
    dim = prop_def(IntAttr)
    lo = result_def(TensorType)
    hi = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, lower: SSAValue, upper: SSAValue, dim: int, type: TensorType,
                 offset: SSAValue | None = None):
        super().__init__(operands=[input, lower, upper, [offset] if offset is not None else []],
                         properties={"dim": IntAttr(dim)}, result_types=[type, type])

    def verify_(self) -> None:
        if self.offset is not None and self.offset.type != self.lo.type:
            raise VerifyException("the offset has the results' type")


@irdl_op_definition
class SubstituteOp(_DimSyntax, IRDLOperation):
    """Back-substitution through one layer: the PolyExp ``sum over dim of c+ * L + c- * U`` for
    coefficients ``c`` on a layer's neurons and their lower/upper PolyExps ``L``/``U`` -- what
    ``combine_poly(split_inner(add_dim(c), coeff(L), coeff(U)), split_inner(c, const(L), const(U)))``
    computes, as one op: the runtime splits ``c`` by sign once for both parts, and where ``L`` and
    ``U`` are one value (an affine layer's) it is ``c . L``.

    ``%r = cftensor.substitute %c, %l, %u[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>, !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<P, [batch, curr], [1, 1]>``
    """

    name = "cftensor.substitute"
    coeffs = operand_def(TensorType)
    lower = operand_def(TensorType)
    upper = operand_def(TensorType)
    dim = prop_def(IntAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, coeffs: SSAValue, lower: SSAValue, upper: SSAValue, dim: int, type: TensorType):
        super().__init__(operands=[coeffs, lower, upper], properties={"dim": IntAttr(dim)}, result_types=[type])

    def verify_(self) -> None:
        if meta(self.lower).top.type != "P" or meta(self.upper).top.type != "P" or meta(self.result).top.type != "P":
            raise VerifyException("replaces summands by PolyExps and gives a PolyExp")


@irdl_op_definition
class SubstituteScaledOp(_DimSyntax, IRDLOperation):
    """Back-substitution through one layer whose sides are scaled: the PolyExp ``sum over dim of
    (c+ * a) * L + (c- * b) * U`` -- what ``combine_poly(inner(add_dim(c+ * a), coeff(L)) +
    inner(add_dim(c- * b), coeff(U)), inner(c+ * a, const(L)) + inner(c- * b, const(U)))`` computes,
    as one op.  alpha-CROWN's optimisable slopes: ``(c >= 0) ? (c * alpha) * L : c * U`` is ``a =
    alpha``, ``b = 1`` (a scale the rule does not have is the constant 1).  The scales multiply the
    sign parts, never ``c`` before its sign test, so a slope of 0 still has the gradient ``c+ * L``.

    ``%r = cftensor.substitute_scaled %c, %a, %b, %l, %u[2] : (!cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>, !cftensor.t<const R, [1], [1]>, !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>, !cftensor.t<P, [lay], [1] :: P, [batch, 1], [1, curr]>) -> !cftensor.t<P, [batch, curr], [1, 1]>``
    """

    name = "cftensor.substitute_scaled"
    coeffs = operand_def(TensorType)
    pos_scale = operand_def(TensorType)
    neg_scale = operand_def(TensorType)
    lower = operand_def(TensorType)
    upper = operand_def(TensorType)
    dim = prop_def(IntAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, coeffs: SSAValue, pos_scale: SSAValue, neg_scale: SSAValue, lower: SSAValue, upper: SSAValue,
                 dim: int, type: TensorType):
        super().__init__(operands=[coeffs, pos_scale, neg_scale, lower, upper], properties={"dim": IntAttr(dim)},
                         result_types=[type])

    def verify_(self) -> None:
        if meta(self.lower).top.type != "P" or meta(self.upper).top.type != "P" or meta(self.result).top.type != "P":
            raise VerifyException("replaces summands by PolyExps and gives a PolyExp")
        if meta(self.pos_scale).top.type != "R" or meta(self.neg_scale).top.type != "R":
            raise VerifyException("scales the coefficients by Floats")


@irdl_op_definition
class MaskedReduceOp(_DimSyntax, IRDLOperation):
    """The minimum (``kind "min"``) or maximum (``kind "max"``) over dimension ``dim`` of ``values``
    taken only where ``mask_of`` is non-zero, the reduction's identity (``+inf``/``-inf``) where it is
    zero along the whole dimension: ``reduce(where(ne(mask_of, 0), values, +-inf), dim)`` without the
    mask and the masked copy.  A traverse's priority selection: the least priority among the
    neurons a coefficient tensor still refers to.  The runtime reads each block of ``mask_of`` once
    (is a row non-zero?) and, where ``values`` is constant along ``dim`` over that block (a layer's
    priority), takes that value for the row.

    ``%m = cftensor.masked_reduce %c, %prio[2] kind "min" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.masked_reduce"
    PROP_KEYWORD: ClassVar[str] = "kind"
    mask_of = operand_def(TensorType)
    values = operand_def(TensorType)
    dim = prop_def(IntAttr)
    kind = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, mask_of: SSAValue, values: SSAValue, dim: int, kind: str, type: TensorType):
        super().__init__(operands=[mask_of, values], properties={"dim": IntAttr(dim), "kind": StringAttr(kind)},
                         result_types=[type])

    def verify_(self) -> None:
        if self.kind.data not in ("min", "max"):
            raise VerifyException(f"reduces by min or max, not {self.kind.data!r}")
        ranks = {len(meta(v).shape) for v in self.operands}
        if len(ranks) != 1:
            raise VerifyException("operands must have the same rank")
        _verify_dim(self.dim.data, ranks.pop())


@lru_cache(maxsize=256)
def _size(text: str) -> Size:
    """A ``repeat``'s size property as a :class:`Size`."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise VerifyException(str(exc)) from None


def _verify_dim(dim: int, rank: int, past_end: int = 0) -> None:
    if not 0 <= dim < rank + past_end:
        raise VerifyException(f"dimension {dim} is out of range for rank {rank}")


class _DimBase(_DimSyntax):
    """The fields and verifier shared by the one-operand ops with a dimension index ``dim``
    (add_dim, remove_dim, reduce, repeat): ``%x[dim]`` must name a dimension of the operand (for
    add_dim, one past its last too: where the new dimension goes)."""

    input = operand_def(TensorType)
    dim = prop_def(IntAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    #: how far past the operand's last dimension ``dim`` may go
    DIM_PAST_END: ClassVar[int] = 0

    def __init__(self, input: SSAValue, dim: int, result: Metadata, **props: Attribute):
        super().__init__(operands=[input], properties={"dim": IntAttr(dim), **props}, result_types=[_tensor(result)])

    def verify_(self) -> None:
        _verify_dim(self.dim.data, len(meta(self.input).shape), self.DIM_PAST_END)
        _verify_inferred(self, self.inferred_type())

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operand and properties."""
        raise NotImplementedError


@irdl_op_definition
class AddDimOp(_DimBase, IRDLOperation):
    """IrAddDimension: insert a dimension of size 1 at ``dim``.

    ``%r = cftensor.add_dim %c[2] : (!cftensor.t<R, [curr, poly], [1, 1]>) -> !cftensor.t<R, [curr, poly, 1], [1, 1, poly]>``
    """

    name = "cftensor.add_dim"
    DIM_PAST_END: ClassVar[int] = 1

    def __init__(self, input: SSAValue, dim: int, broadcast: Size = ONE, new_element: bool = False):
        super().__init__(input, dim, self.infer_type(meta(input), dim, broadcast, new_element))

    @staticmethod
    def infer_type(m: Metadata, dim: int, broadcast: Size, new_element: bool) -> Metadata:
        """:func:`~cfmlir.dialects.cftensor_metadata.insert_dim`: the new dimension's broadcast
        factor and whether it opens a stack element (a value lifted into a map) are the builder's."""
        return insert_dim(m, dim, broadcast, new_element)

    def choice(self) -> tuple[Size, bool]:
        """What this op's result type records beyond its operand: the new dimension's broadcast
        factor and whether it opened a stack element (the builder's ``broadcast, new_element``)."""
        got, m = meta(self.result), meta(self.input)
        if len(got.broadcast) != len(m.broadcast) + 1:
            raise VerifyException("'cftensor.add_dim' adds one dimension")
        return got.broadcast[self.dim.data], got.height > m.height

    def inferred_type(self) -> Metadata:
        return self.infer_type(meta(self.input), self.dim.data, *self.choice())


@irdl_op_definition
class RemoveDimOp(_DimBase, IRDLOperation):
    """IrRemoveDimension: remove a dimension of size 1.

    ``%r = cftensor.remove_dim %c[2] : (!cftensor.t<R, [curr, poly, 1], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>``
    """

    name = "cftensor.remove_dim"

    def __init__(self, input: SSAValue, dim: int):
        super().__init__(input, dim, drop_dim(meta(input), dim))

    def inferred_type(self) -> Metadata:
        return drop_dim(meta(self.input), self.dim.data)


@irdl_op_definition
class ReduceOp(_DimBase, IRDLOperation):
    """IrReduce: the sum (``kind "sum"``), minimum (``"min"``) or maximum (``"max"``) over dimension
    ``dim`` (the dimension a map introduced, or a list's).

    ``%r = cftensor.reduce %p[1] kind "sum" : (!cftensor.t<R, [poly], [1] :: R, [curr], [1]>) -> !cftensor.t<R, [curr], [1]>``
    """

    name = "cftensor.reduce"
    PROP_KEYWORD: ClassVar[str] = "kind"
    kind = prop_def(StringAttr)

    def __init__(self, input: SSAValue, dim: int, kind: str):
        super().__init__(input, dim, reduce_dim(meta(input), dim), kind=StringAttr(kind))

    def inferred_type(self) -> Metadata:
        """:func:`~cfmlir.dialects.cftensor_metadata.reduce_dim` (the first dimension of a map's
        element ends the map)."""
        return reduce_dim(meta(self.input), self.dim.data)

    def verify_(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            raise VerifyException(f"reduces by {', '.join(REDUCE_KINDS[:-1])} or {REDUCE_KINDS[-1]}, not {self.kind.data!r}")
        super().verify_()


@irdl_op_definition
class RepeatOp(_DimBase, IRDLOperation):
    """IrRepeat: repeat a dimension of intrinsic size 1 to ``size`` (materialising a broadcast).

    ``%r = cftensor.repeat %l[0] size "curr" : (!cftensor.t<R, [1, poly], [curr, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>``
    """

    name = "cftensor.repeat"
    PROP_KEYWORD: ClassVar[str] = "size"
    size = prop_def(StringAttr)

    def __init__(self, input: SSAValue, dim: int, size: Size | str):
        size = size if isinstance(size, Size) else _size(size)
        super().__init__(input, dim, with_flat_dim(meta(input), dim, size, ONE), size=StringAttr(str(size)))

    def inferred_type(self) -> Metadata:
        """The operand with dimension ``dim`` materialised: intrinsic size ``size``, broadcast 1."""
        return with_flat_dim(meta(self.input), self.dim.data, _size(self.size.data), ONE)


# ----------------------------------------------------------------------------------------------
# Domain-specific expressions
# ----------------------------------------------------------------------------------------------


class _OneTensorOperand:
    """The fields of the domain ops on one tensor, ``cftensor.<op> %x : (!t) -> !t``, whose result
    type is the subclass's ``infer_type`` of the operand's metadata."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[_tensor(self.infer_type(meta(input)))])

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        raise NotImplementedError

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(meta(self.input))

    def verify_(self) -> None:
        _verify_inferred(self, self.inferred_type())


class _TwoTensorOperands:
    """The fields of the domain ops on two tensors, ``cftensor.<op> %a, %b : (!t, !t) -> !t``, whose
    result type is the subclass's ``infer_type`` of the operands' metadata."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[_tensor(self.infer_type(meta(lhs), meta(rhs)))])

    @staticmethod
    def infer_type(lhs: Metadata, rhs: Metadata) -> Metadata:
        raise NotImplementedError

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(meta(self.lhs), meta(self.rhs))

    def verify_(self) -> None:
        _verify_inferred(self, self.inferred_type())


class _Retyped(_OneTensorOperand):
    """A domain op whose result is its operand with the top element's type letter ``LETTER``
    (the same tensor seen as another kind: a promotion, or a PolyExp/SymExp's constant part)."""

    LETTER: ClassVar[str]

    @classmethod
    def infer_type(cls, m: Metadata) -> Metadata:
        return m.with_type(cls.LETTER)


def _with_trailing(m: Metadata, letter: str, dim: Size | None) -> Metadata:
    """``m`` with its top element's letter set, not a constant, and one more trailing dimension
    ``dim`` (intrinsic, broadcast 1) -- or, with ``dim`` None, its last dimension dropped."""
    top = m.top
    if dim is None:
        return m.with_top(Element(letter, top.shape[:-1], top.broadcast[:-1], False))
    return m.with_top(Element(letter, top.shape + (dim,), top.broadcast + (ONE,), False))


POLY, SYM = Size.of("poly"), Size.of("sym")


@irdl_op_definition
class ExtractPolyCoeffOp(_OneTensorOperand, IRDLOperation):
    """IrExtractPolyCoeff: the coefficient tensor of a PolyExp (one more trailing dimension, of size poly).

    ``%c = cftensor.extract_poly_coeff %e : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>``
    """

    name = "cftensor.extract_poly_coeff"

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        return _with_trailing(m, "R", POLY)


@irdl_op_definition
class ExtractPolyConstOp(_Retyped, IRDLOperation):
    """IrExtractPolyConst: the constant term of a PolyExp.

    ``%k = cftensor.extract_poly_const %e : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.extract_poly_const"
    LETTER: ClassVar[str] = "R"


@irdl_op_definition
class ExtractSymCoeffOp(_OneTensorOperand, IRDLOperation):
    """IrExtractSymCoeff: the coefficient tensor of a SymExp (one more trailing dimension, of size sym).

    ``%c = cftensor.extract_sym_coeff %z : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>``
    """

    name = "cftensor.extract_sym_coeff"

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        return _with_trailing(m, "R", SYM)


@irdl_op_definition
class ExtractSymConstOp(_Retyped, IRDLOperation):
    """IrExtractSymConst: the centre of a SymExp.

    ``%k = cftensor.extract_sym_const %z : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.extract_sym_const"
    LETTER: ClassVar[str] = "R"


@irdl_op_definition
class CombineToPolyOp(_TwoTensorOperands, IRDLOperation):
    """IrCombineToPoly: a PolyExp from its coefficients and constant.

    ``%e = cftensor.combine_poly %c, %k : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>``
    """

    name = "cftensor.combine_poly"

    @staticmethod
    def infer_type(lhs: Metadata, rhs: Metadata) -> Metadata:
        """The coefficients' metadata without their trailing ``poly`` dimension."""
        return _with_trailing(lhs, "P", None)


@irdl_op_definition
class CombineToSymOp(_TwoTensorOperands, IRDLOperation):
    """IrCombineToSym: a SymExp from its coefficients and centre.

    ``%z = cftensor.combine_sym %c, %k : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>``
    """

    name = "cftensor.combine_sym"

    @staticmethod
    def infer_type(lhs: Metadata, rhs: Metadata) -> Metadata:
        return _with_trailing(lhs, "S", None)


@irdl_op_definition
class NeuronToPolyOp(_Retyped, IRDLOperation):
    """IrNeuronToPoly: the PolyExp ``1 * n``.

    ``%e = cftensor.neuron_to_poly %n : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>``
    """

    name = "cftensor.neuron_to_poly"
    LETTER: ClassVar[str] = "P"


@irdl_op_definition
class ConstToPolyOp(_Retyped, IRDLOperation):
    """IrConstToPoly: the PolyExp with constant ``c`` and no neurons.

    ``%e = cftensor.const_to_poly %c : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>``
    """

    name = "cftensor.const_to_poly"
    LETTER: ClassVar[str] = "P"


@irdl_op_definition
class NoiseToSymOp(_Retyped, IRDLOperation):
    """IrNoiseToSym: the SymExp ``1 * eps``.

    ``%z = cftensor.noise_to_sym %e : (!cftensor.t<E, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>``
    """

    name = "cftensor.noise_to_sym"
    LETTER: ClassVar[str] = "S"


@irdl_op_definition
class ConstToSymOp(_Retyped, IRDLOperation):
    """IrConstToSym: the SymExp with centre ``c`` and no noise symbols.

    ``%z = cftensor.const_to_sym %c : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>``
    """

    name = "cftensor.const_to_sym"
    LETTER: ClassVar[str] = "S"


@irdl_op_definition
class MapCoeffOp(_OneTensorOperand, IRDLOperation):
    """IrMapCoeff: the coefficients a map's function receives (a new stack element for the summands).

    ``%c = cftensor.map_coeff %e : (!cftensor.t<P, [curr], [1]>) -> !cftensor.t<R, [poly], [1] :: R, [curr], [1]>``
    """

    name = "cftensor.map_coeff"

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        """One element ``<R, [poly], [1]>`` (``sym`` for a SymExp) pushed on the expression's stack."""
        return m.with_type("R").push(Element("R", (POLY if m.top.type == "P" else SYM,), (ONE,)))


@irdl_op_definition
class MapNeuronOp(_OneTensorOperand, IRDLOperation):
    """IrMapNeuron: the neurons a map's function receives (compressed: the same list for every position).

    ``%n = cftensor.map_neuron %e : (!cftensor.t<P, [curr], [1]>) -> !cftensor.t<N, [poly], [1] :: N, [1], [curr]>``
    """

    name = "cftensor.map_neuron"

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        """The expression's stack compressed, with ``<N, [poly], [1]>`` pushed on it."""
        return compress(m.with_type("N")).push(Element("N", (POLY,), (ONE,)))


@irdl_op_definition
class MapNoiseOp(_OneTensorOperand, IRDLOperation):
    """IrMapNoise: the noise symbols a map over a SymExp receives.

    ``%n = cftensor.map_noise %z : (!cftensor.t<S, [curr], [1]>) -> !cftensor.t<E, [sym], [1] :: E, [1], [curr]>``
    """

    name = "cftensor.map_noise"

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        return compress(m.with_type("E")).push(Element("E", (SYM,), (ONE,)))


@irdl_op_definition
class DotOp(_TwoTensorOperands, IRDLOperation):
    """IrDot: ``neurons.dot(weights)`` — the PolyExp whose coefficients are the weights placed at the neurons' global indices.

    ``%e = cftensor.dot %prev, %w : (!cftensor.t<N, [1, prev], [curr, 1]>, !cftensor.t<R, [curr, prev], [1, 1]>) -> !cftensor.t<P, [curr], [1]>``
    """

    name = "cftensor.dot"

    @staticmethod
    def infer_type(lhs: Metadata, rhs: Metadata) -> Metadata:
        """The weights' metadata without their list dimension, a PolyExp."""
        return _with_trailing(rhs, "P", None)


#: the members ``access`` reads once per layer (Int, uniform along the layer's own dimensions)
PER_LAYER_MEMBERS = ("layer", "last_layer")


def _per_sample(m: Metadata, letter: str, materialise: int) -> Metadata:
    """The stack of neurons ``m`` with every element's letter ``letter`` (not constants) and the
    first ``materialise`` dimensions of the bottom element expanded to their total size."""
    bottom = m.elements[-1]
    k = materialise
    b = Element(letter, bottom.total[:k] + bottom.shape[k:], (ONE,) * k + bottom.broadcast[k:], False)
    return Metadata(tuple(Element(letter, e.shape, e.broadcast, False) for e in m.elements[:-1]) + (b,))


@irdl_op_definition
class AccessOp(IRDLOperation):
    """IrAccess: a shape member or metadata of every neuron in a neuron tensor.

    ``%l = cftensor.access "L" %n : (!cftensor.t<N, [poly], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<P, [poly], [1] :: P, [batch, 1], [1, curr]>``
    """

    name = "cftensor.access"
    member = prop_def(StringAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$member $input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, member: str, letter: str = "I"):
        super().__init__(operands=[input], result_types=[_tensor(self.infer_type(meta(input), member, letter))],
                         properties={"member": StringAttr(member)})

    @staticmethod
    def infer_type(m: Metadata, member: str, letter: str) -> Metadata:
        """A per-layer member (``layer``, ``last_layer``: Int) is uniform along the layer-local
        dimensions (:func:`~cfmlir.dialects.cftensor_metadata.per_layer`); a shape member, of the
        type letter ``letter`` its declaration gives, is one value per sample: the neurons' stack
        with the bottom element's batch dimension materialised."""
        if member in PER_LAYER_MEMBERS:
            return per_layer(m.with_type("I"))
        return _per_sample(m, letter, materialise=1)

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(meta(self.input), self.member.data, meta(self.result).top.type)

    def verify_(self) -> None:
        _verify_inferred(self, self.inferred_type())


@irdl_op_definition
class ParamOp(IRDLOperation):
    """IrParam: the value of a parameter (``cf.param``) on every neuron of a neuron tensor, for every
    sample and every neuron of the layer whose rule reads it (the reader is ``curr``: the result
    materialises the batch and ``curr`` dimensions of the neurons' bottom element), projected into
    its domain by the runtime.  Read on ``curr`` itself (or a unary rule's ``prev``) it is one value
    per neuron; inside a traverse of a layer's bounds, one per (bounded neuron, replaced neuron).

    ``%a = cftensor.param "slope" %n : (!cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>) -> !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.param"
    param = prop_def(StringAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$param $input attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, param: str):
        super().__init__(operands=[input], result_types=[_tensor(self.infer_type(meta(input)))],
                         properties={"param": StringAttr(param)})

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        """The neurons' stack as Floats with the bottom element's batch and ``curr`` dimensions
        materialised (one value per sample and reading neuron)."""
        return _per_sample(m, "R", materialise=2)

    def inferred_type(self) -> Metadata:
        """The result type this op infers from its operands and properties."""
        return self.infer_type(meta(self.input))

    def verify_(self) -> None:
        if meta(self.input).elements[-1].rank < 2:
            raise VerifyException("'cftensor.param' reads neurons with the batch and curr dimensions")
        _verify_inferred(self, self.inferred_type())


@irdl_op_definition
class MergeTopOp(_OneTensorOperand, IRDLOperation):
    """Fold the top stack element into the element below it: a metadata-only change (the tensor
    is unchanged), used where a traverse turns map-shaped coefficients back into a PolyExp's.

    ``%k = cftensor.merge_top %c : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>``
    """

    name = "cftensor.merge_top"

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        return merge_top(m)


@irdl_op_definition
class AnyOp(_OneTensorOperand, IRDLOperation):
    """Whether any element of a tensor is true, or non-zero for numbers (the condition of a while loop).

    ``%b = cftensor.any %active : (!cftensor.t<B, [poly], [1] :: B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [1], [1]>``
    """

    name = "cftensor.any"

    @staticmethod
    def infer_type(m: Metadata) -> Metadata:
        return Metadata.single("B", [ONE], [ONE])


# ----------------------------------------------------------------------------------------------
# Statements
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class RuleOp(IRDLOperation):
    """One transformer rule lifted to a layer: a function from the layer's inputs to one tensor per
    shape member (IrSeq of assignments as SSA, ending in IrReturn).

    ```
    cftensor.rule "deeppoly" "Relu" {
      %prev = cftensor.input "prev" : !cftensor.t<N, [1, curr], [batch, 1]>
      ...
      cftensor.return %l, %u, %L, %U : ...
    }
    ```
    """

    name = "cftensor.rule"
    transformer = prop_def(StringAttr)
    operator = prop_def(StringAttr)
    body = region_def("single_block")
    assembly_format = "$transformer $operator attr-dict-with-keyword $body"

    def __init__(self, transformer: str, operator: str, body: Region):
        super().__init__(properties={"transformer": StringAttr(transformer), "operator": StringAttr(operator)}, regions=[body])


@irdl_op_definition
class ParamDomainOp(IRDLOperation):
    """A parameter's domain on the neurons of one operator, lifted to a layer like a rule: from the
    operator's inputs, the lower bound, the upper bound and the initial value of every neuron
    (``[batch, curr]`` Float tensors).  ``default`` (the value on other operators' neurons) is absent
    when the parameter has none.

    ```
    cftensor.param_domain "slope" "Relu" else(1.0 : f64) {
      %prev = cftensor.input "prev" : !cftensor.t<N, [1, curr], [batch, 1]>
      ...
      cftensor.return %lo, %hi, %init : ...
    }
    ```
    """

    name = "cftensor.param_domain"
    param = prop_def(StringAttr)
    operator = prop_def(StringAttr)
    default = opt_prop_def(FloatAttr)
    body = region_def("single_block")
    assembly_format = "$param $operator (`else` `(` $default^ `)`)? attr-dict-with-keyword $body"

    def __init__(self, param: str, operator: str, body: Region, default: float | None):
        props: dict[str, Attribute] = {"param": StringAttr(param), "operator": StringAttr(operator)}
        if default is not None:
            props["default"] = FloatAttr(float(default), f64)
        super().__init__(properties=props, regions=[body])

    def verify_(self) -> None:
        last = self.body.block.last_op
        if not isinstance(last, ReturnOp) or len(last.operands) != 3:
            raise VerifyException("'cftensor.param_domain' returns (lo, hi, init)")


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """IrReturn: the values of the shape members computed by a rule (or the results of a while body).

    ``cftensor.return %l, %u : !cftensor.t<R, [batch, curr], [1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.return"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class WhileOp(IRDLOperation):
    """IrWhile: a loop over loop-carried tensors whose shapes may change between iterations (their
    metadata uses loop size symbols such as ``s0`` that the runtime resolves).  ``before`` computes the
    continuation condition from the current values and yields ``[cond] + values``; ``after`` computes
    the next values.

    ```
    %r = cftensor.while (%e0) : (!t) -> !t before { ^bb0(%e: !t): ... cftensor.return %cond, %e : ... }
                                          after  { ^bb0(%e: !t): ... cftensor.return %next : !t }
    ```
    """

    name = "cftensor.while"
    inits = var_operand_def(TensorType)
    res = var_result_def(TensorType)
    before = region_def("single_block")
    after = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())
    assembly_format = "`(` $inits `)` attr-dict `:` functional-type($inits, $res) `before` $before `after` $after"

    def __init__(self, inits: Sequence[SSAValue], before: Region, after: Region):
        super().__init__(operands=[list(inits)], result_types=[[v.type for v in inits]], regions=[before, after])

    def verify_(self) -> None:
        if [v.type for v in self.res] != [v.type for v in self.inits]:
            raise VerifyException("the loop's results have the types of its loop-carried values")


@irdl_op_definition
class IfOp(IRDLOperation):
    """A branch on a *uniform* condition (the same for every sample and neuron of the layer, such as
    ``curr[last_layer] == 1``): the runtime decides it once, on the host, and runs only the taken
    region.  Each region ends in ``cftensor.return`` with one value per result; values defined before
    the ``if`` may be used in both regions.

    ```
    %r = cftensor.if %c : (!cftensor.t<B, [1, 1], [batch, curr]>) -> (!t) then {
      ...  cftensor.return %a : !t
    } else {
      ...  cftensor.return %b : !t
    }
    ```
    """

    name = "cftensor.if"
    cond = operand_def(TensorType)
    res = var_result_def(TensorType)
    then = region_def("single_block")
    otherwise = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())
    assembly_format = "$cond attr-dict `:` functional-type($cond, $res) `then` $then `else` $otherwise"

    def __init__(self, cond: SSAValue, result_types: Sequence[Attribute], then: Region, otherwise: Region):
        super().__init__(operands=[cond], result_types=[list(result_types)], regions=[then, otherwise])

    def verify_(self) -> None:
        if not is_uniform(meta(self.cond)):
            raise VerifyException(f"needs a uniform condition (all intrinsic sizes 1), got <{meta(self.cond)}>")
        for region in (self.then, self.otherwise):
            term = region.block.last_op
            if not isinstance(term, ReturnOp) or len(term.operands) != len(self.res):
                raise VerifyException("each region ends in cftensor.return with one value per result")


@irdl_op_definition
class LayerTraverseOp(IRDLOperation):
    """A traverse whose priority and stop functions depend on a neuron's layer only (``-n[layer]``):
    it substitutes whole layers.  ``priority`` maps the neurons of one layer (``<N, [lay], [1]>``) to
    the layer's uniform priority and stop flag; ``body`` maps the neurons of the chosen layer and their
    coefficients in the current expression (``[batch, curr, lay]``) to the sum of the replacements
    ``f(n, c)`` over the layer, a PolyExp ``[batch, curr]``.  The runtime repeats: among the layers
    the expression may still hold and whose stop flag is false, take those of minimal priority, remove
    their summands and add their replacements; decisions are per layer, on the host.

    ```
    %r = cftensor.layer_traverse(%e) : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>
      priority { ^bb0(%n: !cftensor.t<N, [lay], [1] :: N, [1, 1], [batch, curr]>):
                 ... cftensor.return %p, %stop : ... }
      body     { ^bb0(%n: ..., %c: !cftensor.t<R, [lay], [1] :: R, [batch, curr], [1, 1]>):
                 ... cftensor.return %replaced : !cftensor.t<P, [batch, curr], [1, 1]> }
    ```
    """

    name = "cftensor.layer_traverse"
    init = operand_def(TensorType)
    res = result_def(TensorType)
    priority = region_def("single_block")
    body = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())
    assembly_format = "`(` $init `)` attr-dict `:` functional-type($init, $res) `priority` $priority `body` $body"

    def __init__(self, init: SSAValue, priority: Region, body: Region):
        super().__init__(operands=[init], result_types=[init.type], regions=[priority, body])

    def verify_(self) -> None:
        if meta(self.init).top.type != "P" or self.init.type != self.res.type:
            raise VerifyException("maps a PolyExp to a PolyExp of the same type")
        prio_term, body_term = self.priority.block.last_op, self.body.block.last_op
        if len(self.priority.block.args) != 1 or not isinstance(prio_term, ReturnOp) or len(prio_term.operands) != 2:
            raise VerifyException("the priority region takes the neurons and returns priority and stop")
        for v in prio_term.operands:
            m = meta(v)
            if not (is_uniform(m) or is_scalar_const(m)):
                raise VerifyException(f"the priority and stop must be uniform, got <{m}>")
        if len(self.body.block.args) != 2 or not isinstance(body_term, ReturnOp) or len(body_term.operands) != 1:
            raise VerifyException("the body takes neurons and coefficients and returns one PolyExp")


@irdl_op_definition
class FlowOp(IRDLOperation):
    """The certifier's flow: its direction, the transformer whose rules the module holds, and the
    shape members with their type letters and roles (``lower``/``upper``/``zono``, from the shape
    constraints; ``-`` when none), in the order of every rule's results.

    ``cftensor.flow "forward" "deeppoly" ["l:R:lower", "u:R:upper", "L:P:lower", "U:P:upper"]``
    """

    name = "cftensor.flow"
    direction = prop_def(StringAttr)
    transformer = prop_def(StringAttr)
    members = prop_def(ArrayAttr[StringAttr])
    assembly_format = "$direction $transformer $members attr-dict"

    def __init__(self, direction: str, transformer: str, members: Sequence[tuple[str, str, str]]):
        super().__init__(properties={
            "direction": StringAttr(direction), "transformer": StringAttr(transformer),
            "members": ArrayAttr([StringAttr(":".join(m)) for m in members]),
        })

    def member_list(self) -> list[tuple[str, str, str]]:
        return [tuple(m.data.split(":")) for m in self.members.data]  # type: ignore[misc]


CFTensor = Dialect(
    "cftensor",
    [
        ConstOp, InputOp, SymOp, BinaryOp, MultOp, UnaryOp, TernaryOp, ClampOp, InnerOp,
        AddDimOp, RemoveDimOp, ReduceOp, RepeatOp,
        ExtractPolyCoeffOp, ExtractPolyConstOp, ExtractSymCoeffOp, ExtractSymConstOp,
        CombineToPolyOp, CombineToSymOp, NeuronToPolyOp, ConstToPolyOp, NoiseToSymOp, ConstToSymOp,
        MapCoeffOp, MapNeuronOp, MapNoiseOp, DotOp, AccessOp, ParamOp, MergeTopOp, AnyOp, SplitInnerOp, IntervalInnerOp, SubstituteOp, SubstituteScaledOp,
        MaskedReduceOp,
        RuleOp, ParamDomainOp, ReturnOp, WhileOp, IfOp, LayerTraverseOp, FlowOp,
    ],
    [TensorType, ElementAttr, SizeAttr],
)
