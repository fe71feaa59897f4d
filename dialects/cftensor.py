"""The ``cftensor`` dialect: ConstraintFlow lifted to tensor operations (paper appendix "IR Grammar").

Every value has the type ``!cftensor.t<metadata stack>`` (see :mod:`cfmlir.dialects.cftensor_metadata`),
e.g. the neuron tensor of a map over per-neuron PolyExps::

    %n = cftensor.map_neuron %e : (!cftensor.t<P, [curr], [1]>) -> !cftensor.t<N, [poly], [1] :: P, [1], [curr]>

The ops follow the paper's IR grammar: base expressions (``const``, ``sym``, rule inputs), tensor
expressions (``binary``, ``unary``, ``ternary``, ``clamp``, ``mult``, ``inner``, ``add_dim``,
``remove_dim``, ``repeat``, ``reduce``), domain expressions (extracting and combining the coefficient and
constant parts of PolyExps and SymExps, promotions, the map components, ``access``) and statements
(``rule``/``return``, ``while``).  Shapes are symbolic; sizes are resolved by the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntAttr, StringAttr, f64
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    param_def,
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
    TYPE_LETTERS, Element, Metadata, Size, is_uniform, parse_metadata,
)

# ----------------------------------------------------------------------------------------------
# The type
# ----------------------------------------------------------------------------------------------


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A tensor value with its metadata stack: ``!cftensor.t<R, [batch, curr], [1, 1]>``.

    Elements are written top first and separated by ``::``; ``const`` marks compile-time constants::

        !cftensor.t<const R, [1], [1]>
        !cftensor.t<R, [poly], [1] :: R, [curr], [1]>       // physically a [curr, poly] tensor
    """

    name = "cftensor.t"
    text: StringAttr = param_def(StringAttr)

    def __init__(self, metadata: Metadata | str):
        text = str(metadata if isinstance(metadata, Metadata) else parse_metadata(metadata))
        super().__init__(StringAttr(text))

    @property
    def metadata(self) -> Metadata:
        return parse_metadata(self.text.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.text.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            elements = [_parse_element(parser)]
            while parser.parse_optional_punctuation(":") is not None:
                parser.parse_punctuation(":")
                elements.append(_parse_element(parser))
        return [StringAttr(str(Metadata(tuple(elements))))]

    def verify(self) -> None:
        try:
            parse_metadata(self.text.data)
        except ValueError as exc:
            raise VerifyException(f"malformed metadata: {exc}") from None


def _parse_size(parser: AttrParser) -> Size:
    size = Size.one()
    while True:
        n = parser.parse_optional_integer(allow_boolean=False, allow_negative=False)
        if n is not None:
            if n < 1:
                parser.raise_error("sizes are positive integers or symbols")
            size = size * Size(n)
        else:
            size = size * Size.of(parser.parse_identifier(" (a size symbol)"))
        if parser.parse_optional_punctuation("*") is None:
            return size


def _parse_dims(parser: AttrParser) -> tuple[Size, ...]:
    return tuple(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_size(parser)))


def _parse_element(parser: AttrParser) -> Element:
    is_const = parser.parse_optional_keyword("const") is not None
    letter = parser.parse_identifier(" (a type letter)")
    if letter not in TYPE_LETTERS:
        parser.raise_error(f"unknown type letter '{letter}', expected one of {''.join(TYPE_LETTERS)}")
    parser.parse_punctuation(",")
    shape = _parse_dims(parser)
    parser.parse_punctuation(",")
    bcast = _parse_dims(parser)
    if len(shape) != len(bcast):
        parser.raise_error("shape and broadcast factor must have the same rank")
    return Element(letter, shape, bcast, is_const)


def meta(v: SSAValue) -> Metadata:
    """The metadata stack of a cftensor value."""
    t = v.type
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a !cftensor.t value, got {t}")
    return t.metadata


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

    def __init__(self, value: float, type: TensorType):
        super().__init__(properties={"value": FloatAttr(value, f64)}, result_types=[type])


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

    ``%e = cftensor.sym : !cftensor.t<S, [batch, curr], [1, 1]>``
    """

    name = "cftensor.sym"
    result = result_def(TensorType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, type: TensorType):
        super().__init__(result_types=[type])


# ----------------------------------------------------------------------------------------------
# Tensor expressions
# ----------------------------------------------------------------------------------------------

BINARY_OPS = ("add", "sub", "div", "min", "max", "lt", "le", "gt", "ge", "eq", "ne", "and", "or")
UNARY_OPS = ("neg", "not", "sigmoid", "tanh", "exp", "log", "abs")


def is_scalar_const(m: Metadata) -> bool:
    """A compile-time scalar: it broadcasts against anything and is never materialised."""
    return m.height == 1 and m.top.is_const and all(s.is_one for s in m.top.shape)


def _verify_same_shape(op: IRDLOperation, values: Sequence[SSAValue]) -> None:
    shapes = {(meta(v).shape, meta(v).broadcast) for v in values if not is_scalar_const(meta(v))}
    if not shapes:
        return
    rshape = (meta(op.results[0]).shape, meta(op.results[0]).broadcast)
    if len(shapes) != 1 or rshape not in shapes:
        raise VerifyException(f"'{op.name}' needs operands and result of one intrinsic shape (align them first)")


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

    def __init__(self, op: str, lhs: SSAValue, rhs: SSAValue, type: TensorType):
        super().__init__(properties={"op": StringAttr(op)}, operands=[lhs, rhs], result_types=[type])

    def verify_(self) -> None:
        if self.op.data not in BINARY_OPS:
            raise VerifyException(f"unknown binary operation '{self.op.data}'")
        _verify_same_shape(self, [self.lhs, self.rhs])


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

    def __init__(self, lhs: SSAValue, rhs: SSAValue, type: TensorType):
        super().__init__(operands=[lhs, rhs], result_types=[type])

    def verify_(self) -> None:
        _verify_same_shape(self, [self.lhs, self.rhs])


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

    def __init__(self, op: str, input: SSAValue, type: TensorType):
        super().__init__(properties={"op": StringAttr(op)}, operands=[input], result_types=[type])

    def verify_(self) -> None:
        if self.op.data not in UNARY_OPS:
            raise VerifyException(f"unknown unary operation '{self.op.data}'")


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

    def __init__(self, cond: SSAValue, then: SSAValue, otherwise: SSAValue, type: TensorType):
        super().__init__(operands=[cond, then, otherwise], result_types=[type])

    def verify_(self) -> None:
        _verify_same_shape(self, [self.cond, self.then, self.otherwise])


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

    def __init__(self, input: SSAValue, type: TensorType, min: float | None = None, max: float | None = None):
        props = {}
        if min is not None:
            props["min"] = FloatAttr(min, f64)
        if max is not None:
            props["max"] = FloatAttr(max, f64)
        super().__init__(operands=[input], result_types=[type], properties=props)

    def verify_(self) -> None:
        if self.min is None and self.max is None:
            raise VerifyException("'cftensor.clamp' needs a min or a max bound")


class _DimSyntax:
    """Custom syntax shared by the ops with a dimension index: ``%x[dim]`` (and ``size "s"``)::

        cftensor.reduce %p[1] : (!cftensor.t<...>) -> !cftensor.t<...>
        cftensor.inner %a, %b[1] : (!cftensor.t<...>, !cftensor.t<...>) -> !cftensor.t<...>
    """

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_ssa_value)
        printer.print_string(f"[{self.dim.data}]")
        if "size" in self.properties:
            printer.print_string(" size ")
            printer.print_attribute(self.properties["size"])
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
        if parser.parse_optional_keyword("size") is not None:
            props["size"] = StringAttr(parser.parse_str_literal())
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
    """

    name = "cftensor.interval_inner"
    N_RESULTS: ClassVar[int] = 2
    input = operand_def(TensorType)
    lower = operand_def(TensorType)
    upper = operand_def(TensorType)
    dim = prop_def(IntAttr)
    lo = result_def(TensorType)
    hi = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, input: SSAValue, lower: SSAValue, upper: SSAValue, dim: int, type: TensorType):
        super().__init__(operands=[input, lower, upper], properties={"dim": IntAttr(dim)}, result_types=[type, type])


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
            raise VerifyException("'cftensor.substitute' replaces summands by PolyExps and gives a PolyExp")


@irdl_op_definition
class MaskedReduceOp(_DimSyntax, IRDLOperation):
    """The minimum (``size "min"``) or maximum (``size "max"``) over dimension ``dim`` of ``values``
    taken only where ``mask_of`` is non-zero, the reduction's identity (``+inf``/``-inf``) where it is
    zero along the whole dimension: ``reduce(where(ne(mask_of, 0), values, +-inf), dim)`` without the
    mask and the masked copy.  A traverse's priority selection: the least priority among the
    neurons a coefficient tensor still refers to.  The runtime reads each block of ``mask_of`` once
    (is a row non-zero?) and, where ``values`` is constant along ``dim`` over that block (a layer's
    priority), takes that value for the row.

    ``%m = cftensor.masked_reduce %c, %prio[2] size "min" : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """

    name = "cftensor.masked_reduce"
    mask_of = operand_def(TensorType)
    values = operand_def(TensorType)
    dim = prop_def(IntAttr)
    size = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(self, mask_of: SSAValue, values: SSAValue, dim: int, kind: str, type: TensorType):
        super().__init__(operands=[mask_of, values], properties={"dim": IntAttr(dim), "size": StringAttr(kind)},
                         result_types=[type])

    def verify_(self) -> None:
        if self.size.data not in ("min", "max"):
            raise VerifyException(f"'cftensor.masked_reduce' reduces by min or max, not {self.size.data!r}")
        ranks = {len(meta(v).shape) for v in self.operands}
        if len(ranks) != 1:
            raise VerifyException("'cftensor.masked_reduce' operands must have the same rank")
        rank = ranks.pop()
        if not 0 <= self.dim.data < rank:
            raise VerifyException(f"'cftensor.masked_reduce' dimension {self.dim.data} is out of range for rank {rank}")


def _dim_op(op_name: str, doc: str, with_size: bool = False):
    """Define a one-operand op with an integer ``dim`` (and optionally a symbolic ``size``)."""

    fields = {
        "name": op_name,
        "__doc__": doc,
        "input": operand_def(TensorType),
        "dim": prop_def(IntAttr),
        "result": result_def(TensorType),
        "traits": traits_def(Pure()),
    }
    if with_size:
        fields["size"] = prop_def(StringAttr)

    def __init__(self, input: SSAValue, dim: int, type: TensorType, size: Size | str | None = None):
        props: dict[str, Attribute] = {"dim": IntAttr(dim)}
        if with_size:
            props["size"] = StringAttr(str(size))
        IRDLOperation.__init__(self, operands=[input], properties=props, result_types=[type])

    def verify_(self) -> None:
        rank = len(meta(self.input).shape)
        limit = rank + 1 if self.name == "cftensor.add_dim" else rank
        if not 0 <= self.dim.data < limit:
            raise VerifyException(f"'{self.name}' dimension {self.dim.data} is out of range for rank {rank}")

    fields["__init__"] = __init__
    fields["verify_"] = verify_
    cls_name = "".join(p.title() for p in op_name.split(".")[1].split("_")) + "Op"
    return irdl_op_definition(type(cls_name, (_DimSyntax, IRDLOperation), fields))


REDUCE_KINDS = ("sum", "min", "max")


AddDimOp = _dim_op(
    "cftensor.add_dim",
    """IrAddDimension: insert a dimension of size 1 at ``dim``.

    ``%r = cftensor.add_dim %c[2] : (!cftensor.t<R, [curr, poly], [1, 1]>) -> !cftensor.t<R, [curr, poly, 1], [1, 1, poly]>``
    """,
)
RemoveDimOp = _dim_op(
    "cftensor.remove_dim",
    """IrRemoveDimension: remove a dimension of size 1.

    ``%r = cftensor.remove_dim %c[2] : (!cftensor.t<R, [curr, poly, 1], [1, 1, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>``
    """,
)
ReduceOp = _dim_op(
    "cftensor.reduce",
    """IrReduce: sum (or, with ``size "min"``/``"max"``, the minimum/maximum) over dimension ``dim``
    (the dimension a map introduced).

    ``%r = cftensor.reduce %p[1] size "sum" : (!cftensor.t<R, [poly], [1] :: R, [curr], [1]>) -> !cftensor.t<R, [curr], [1]>``
    """,
    with_size=True,
)
RepeatOp = _dim_op(
    "cftensor.repeat",
    """IrRepeat: repeat a dimension of intrinsic size 1 to ``size`` (materialising a broadcast).

    ``%r = cftensor.repeat %l[0] size "curr" : (!cftensor.t<R, [1, poly], [curr, 1]>) -> !cftensor.t<R, [curr, poly], [1, 1]>``
    """,
    with_size=True,
)


# ----------------------------------------------------------------------------------------------
# Domain-specific expressions
# ----------------------------------------------------------------------------------------------


def _simple_op(op_name: str, doc: str, n_operands: int = 1, attr: str | None = None, pure: bool = True):
    """Define an op with ``n_operands`` tensor operands, one tensor result and an optional string property."""
    names = ["input"] if n_operands == 1 else ["lhs", "rhs"][:n_operands]
    fields: dict[str, object] = {"name": op_name, "__doc__": doc, "result": result_def(TensorType)}
    for n in names:
        fields[n] = operand_def(TensorType)
    if pure:
        fields["traits"] = traits_def(Pure())
    operand_fmt = " `,` ".join(f"${n}" for n in names)
    attr_fmt = f"${attr} " if attr else ""
    if attr:
        fields[attr] = prop_def(StringAttr)
    fields["assembly_format"] = f"{attr_fmt}{operand_fmt} attr-dict `:` functional-type(operands, results)"

    def __init__(self, *args, **kwargs):
        *operands, type_ = args[: n_operands + 1]
        props = {attr: StringAttr(kwargs.pop(attr) if attr in kwargs else args[n_operands + 1])} if attr else {}
        IRDLOperation.__init__(self, operands=list(operands), result_types=[type_], properties=props)

    fields["__init__"] = __init__
    cls_name = "".join(p.title() for p in op_name.split(".")[1].split("_")) + "Op"
    return irdl_op_definition(type(cls_name, (IRDLOperation,), fields))


ExtractPolyCoeffOp = _simple_op("cftensor.extract_poly_coeff", """IrExtractPolyCoeff: the coefficient tensor of a PolyExp (one more trailing dimension, of size poly).

    ``%c = cftensor.extract_poly_coeff %e : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>``
    """)
ExtractPolyConstOp = _simple_op("cftensor.extract_poly_const", """IrExtractPolyConst: the constant term of a PolyExp.

    ``%k = cftensor.extract_poly_const %e : (!cftensor.t<P, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """)
ExtractSymCoeffOp = _simple_op("cftensor.extract_sym_coeff", """IrExtractSymCoeff: the coefficient tensor of a SymExp (one more trailing dimension, of size sym).

    ``%c = cftensor.extract_sym_coeff %z : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, sym], [1, 1, 1]>``
    """)
ExtractSymConstOp = _simple_op("cftensor.extract_sym_const", """IrExtractSymConst: the centre of a SymExp.

    ``%k = cftensor.extract_sym_const %z : (!cftensor.t<S, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr], [1, 1]>``
    """)
CombineToPolyOp = _simple_op("cftensor.combine_poly", """IrCombineToPoly: a PolyExp from its coefficients and constant.

    ``%e = cftensor.combine_poly %c, %k : (!cftensor.t<R, [batch, curr, poly], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>``
    """, n_operands=2)
CombineToSymOp = _simple_op("cftensor.combine_sym", """IrCombineToSym: a SymExp from its coefficients and centre.

    ``%z = cftensor.combine_sym %c, %k : (!cftensor.t<R, [batch, curr, sym], [1, 1, 1]>, !cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>``
    """, n_operands=2)
NeuronToPolyOp = _simple_op("cftensor.neuron_to_poly", """IrNeuronToPoly: the PolyExp ``1 * n``.

    ``%e = cftensor.neuron_to_poly %n : (!cftensor.t<N, [1, curr], [batch, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>``
    """)
ConstToPolyOp = _simple_op("cftensor.const_to_poly", """IrConstToPoly: the PolyExp with constant ``c`` and no neurons.

    ``%e = cftensor.const_to_poly %c : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<P, [batch, curr], [1, 1]>``
    """)
NoiseToSymOp = _simple_op("cftensor.noise_to_sym", """IrNoiseToSym: the SymExp ``1 * eps``.

    ``%z = cftensor.noise_to_sym %e : (!cftensor.t<E, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>``
    """)
ConstToSymOp = _simple_op("cftensor.const_to_sym", """IrConstToSym: the SymExp with centre ``c`` and no noise symbols.

    ``%z = cftensor.const_to_sym %c : (!cftensor.t<R, [batch, curr], [1, 1]>) -> !cftensor.t<S, [batch, curr], [1, 1]>``
    """)
MapCoeffOp = _simple_op("cftensor.map_coeff", """IrMapCoeff: the coefficients a map's function receives (a new stack element for the summands).

    ``%c = cftensor.map_coeff %e : (!cftensor.t<P, [curr], [1]>) -> !cftensor.t<R, [poly], [1] :: R, [curr], [1]>``
    """)
MapNeuronOp = _simple_op("cftensor.map_neuron", """IrMapNeuron: the neurons a map's function receives (compressed: the same list for every position).

    ``%n = cftensor.map_neuron %e : (!cftensor.t<P, [curr], [1]>) -> !cftensor.t<N, [poly], [1] :: P, [1], [curr]>``
    """)
MapNoiseOp = _simple_op("cftensor.map_noise", """IrMapNoise: the noise symbols a map over a SymExp receives.

    ``%n = cftensor.map_noise %z : (!cftensor.t<S, [curr], [1]>) -> !cftensor.t<E, [sym], [1] :: S, [1], [curr]>``
    """)
DotOp = _simple_op("cftensor.dot", """IrDot: ``neurons.dot(weights)`` — the PolyExp whose coefficients are the weights placed at the neurons' global indices.

    ``%e = cftensor.dot %prev, %w : (!cftensor.t<N, [1, prev], [curr, 1]>, !cftensor.t<R, [curr, prev], [1, 1]>) -> !cftensor.t<P, [curr], [1]>``
    """, n_operands=2)
AccessOp = _simple_op("cftensor.access", """IrAccess: a shape member or metadata of every neuron in a neuron tensor.

    ``%l = cftensor.access "L" %n : (!cftensor.t<N, [poly], [1] :: P, [1], [curr]>) -> !cftensor.t<P, [poly], [1] :: P, [1], [curr]>``
    """, attr="member")


MergeTopOp = _simple_op("cftensor.merge_top", """Fold the top stack element into the element below it: a metadata-only change (the tensor
    is unchanged), used where a traverse turns map-shaped coefficients back into a PolyExp's.

    ``%k = cftensor.merge_top %c : (!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>) -> !cftensor.t<R, [batch, curr, poly], [1, 1, 1]>``
    """)
AnyOp = _simple_op("cftensor.any", """Whether any element of a tensor is true, or non-zero for numbers (the condition of a while loop).

    ``%b = cftensor.any %active : (!cftensor.t<B, [poly], [1] :: B, [batch, curr], [1, 1]>) -> !cftensor.t<B, [1], [1]>``
    """)


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

    def __init__(self, inits: Sequence[SSAValue], result_types: Sequence[Attribute], before: Region, after: Region):
        super().__init__(operands=[list(inits)], result_types=[list(result_types)], regions=[before, after])


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
            raise VerifyException(f"'cftensor.if' needs a uniform condition (all intrinsic sizes 1), got <{meta(self.cond)}>")
        for region in (self.then, self.otherwise):
            term = region.block.last_op
            if not isinstance(term, ReturnOp) or len(term.operands) != len(self.res):
                raise VerifyException("each region of 'cftensor.if' ends in cftensor.return with one value per result")


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

    def __init__(self, init: SSAValue, result_type: Attribute, priority: Region, body: Region):
        super().__init__(operands=[init], result_types=[result_type], regions=[priority, body])

    def verify_(self) -> None:
        if meta(self.init).top.type != "P" or self.init.type != self.res.type:
            raise VerifyException("'cftensor.layer_traverse' maps a PolyExp to a PolyExp of the same type")
        prio_term, body_term = self.priority.block.last_op, self.body.block.last_op
        if len(self.priority.block.args) != 1 or not isinstance(prio_term, ReturnOp) or len(prio_term.operands) != 2:
            raise VerifyException("the priority region of 'cftensor.layer_traverse' takes the neurons and returns priority and stop")
        for v in prio_term.operands:
            m = meta(v)
            if not (is_uniform(m) or is_scalar_const(m)):
                raise VerifyException(f"the priority and stop of 'cftensor.layer_traverse' must be uniform, got <{m}>")
        if len(self.body.block.args) != 2 or not isinstance(body_term, ReturnOp) or len(body_term.operands) != 1:
            raise VerifyException("the body of 'cftensor.layer_traverse' takes neurons and coefficients and returns one PolyExp")


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
        MapCoeffOp, MapNeuronOp, MapNoiseOp, DotOp, AccessOp, MergeTopOp, AnyOp, SplitInnerOp, IntervalInnerOp, SubstituteOp, MaskedReduceOp,
        RuleOp, ReturnOp, WhileOp, IfOp, LayerTraverseOp, FlowOp,
    ],
    [TensorType],
)
