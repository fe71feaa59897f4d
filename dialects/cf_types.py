"""Types of the ``cf`` dialect: one xDSL type per ConstraintFlow type.

=====================  ==============================================  ============================
ConstraintFlow         ``cf`` type                                     semantic type
=====================  ==============================================  ============================
``Int``                ``!cf.int``                                     ``INT``
``Float`` (``Real``)   ``!cf.float``                                   ``FLOAT``
``Bool``               ``!cf.bool``                                    ``BOOL``
``Neuron``             ``!cf.neuron``                                  ``NEURON``
``Noise`` (``Sym``)    ``!cf.noise``                                   ``NOISE``
``PolyExp``            ``!cf.polyexp``                                 ``POLYEXP``
``SymExp``             ``!cf.symexp``                                  ``SYMEXP``
``Ct``                 ``!cf.ct``                                      ``CT``
``T List``             ``!cf.list<T>``                                 ``ListType(T)``
function values        ``!cf.func<(T1, ..., Tn) -> R>``                ``FuncType((T1..Tn), R)``
rule results           ``!cf.tuple<T1, ..., Tn>``                      ``TupleType((T1..Tn))``
=====================  ==============================================  ============================

Subtyping and least upper bounds are *not* re-implemented here: :func:`cf_is_subtype` and
:func:`cf_lub` convert to the semantic type lattice :mod:`cfmlir.dialects.cf_type_lattice` (with
:func:`to_semantic`) and use its ``is_subtype``/``lub``; :func:`to_cf` converts back.  The typing
rules over that lattice are in :mod:`cfmlir.dialects.cf_typing_rules`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from cfmlir.dialects import cf_type_lattice as sem


# ----------------------------------------------------------------------------------------------
# Base types (no parameters)
# ----------------------------------------------------------------------------------------------


class CfBaseType(ParametrizedAttribute, TypeAttribute):
    """Common base of the eight parameterless ``cf`` types."""

    #: the ConstraintFlow name of the type (``Int``, ``Float``...)
    SEM_NAME: ClassVar[str] = ""


@irdl_attr_definition
class IntType(CfBaseType):
    """``!cf.int``: ConstraintFlow ``Int`` (metadata ``layer``, integer literals)."""

    name = "cf.int"
    SEM_NAME: ClassVar[str] = "Int"


@irdl_attr_definition
class FloatType(CfBaseType):
    """``!cf.float``: ConstraintFlow ``Float`` (a.k.a. ``Real``)."""

    name = "cf.float"
    SEM_NAME: ClassVar[str] = "Float"


@irdl_attr_definition
class BoolType(CfBaseType):
    """``!cf.bool``: ConstraintFlow ``Bool`` (result of comparing two Floats)."""

    name = "cf.bool"
    SEM_NAME: ClassVar[str] = "Bool"


@irdl_attr_definition
class NeuronType(CfBaseType):
    """``!cf.neuron``: a network neuron (``curr``, ``prev``)."""

    name = "cf.neuron"
    SEM_NAME: ClassVar[str] = "Neuron"


@irdl_attr_definition
class NoiseType(CfBaseType):
    """``!cf.noise``: a zonotope noise symbol (``sym``/``eps``; ConstraintFlow ``Sym``)."""

    name = "cf.noise"
    SEM_NAME: ClassVar[str] = "Noise"


@irdl_attr_definition
class PolyExpType(CfBaseType):
    """``!cf.polyexp``: an affine expression over neurons."""

    name = "cf.polyexp"
    SEM_NAME: ClassVar[str] = "PolyExp"


@irdl_attr_definition
class SymExpType(CfBaseType):
    """``!cf.symexp``: an affine expression over noise symbols."""

    name = "cf.symexp"
    SEM_NAME: ClassVar[str] = "SymExp"


@irdl_attr_definition
class CtType(CfBaseType):
    """``!cf.ct``: a symbolic constraint (``curr[l] <= curr``)."""

    name = "cf.ct"
    SEM_NAME: ClassVar[str] = "Ct"


BASE_TYPE_CLASSES: tuple[type[CfBaseType], ...] = (
    IntType, FloatType, BoolType, NeuronType, NoiseType, PolyExpType, SymExpType, CtType,
)
_BY_SEM_NAME = {cls.SEM_NAME: cls for cls in BASE_TYPE_CLASSES}


# ----------------------------------------------------------------------------------------------
# Parametrised types
# ----------------------------------------------------------------------------------------------


@irdl_attr_definition
class ListType(ParametrizedAttribute, TypeAttribute):
    """``!cf.list<T>``: ConstraintFlow ``T List`` (e.g. ``!cf.list<!cf.neuron>`` for ``prev``)."""

    name = "cf.list"
    elem: Attribute

    def __init__(self, elem: Attribute):
        super().__init__(elem)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.elem)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        elem = parser.parse_type()
        parser.parse_punctuation(">")
        return (elem,)

    def verify(self) -> None:
        _check_cf_type(self.elem, "!cf.list element")


@irdl_attr_definition
class FuncType(ParametrizedAttribute, TypeAttribute):
    """``!cf.func<(T1, ..., Tn) -> R>``: a user function or a curried partial application of one."""

    name = "cf.func"
    inputs: ArrayAttr[Attribute]
    output: Attribute

    def __init__(self, inputs: Sequence[Attribute], output: Attribute):
        super().__init__(ArrayAttr(inputs), output)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            with printer.in_parens():
                printer.print_list(self.inputs.data, printer.print_attribute)
            printer.print_string(" -> ")
            printer.print_attribute(self.output)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        inputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        output = parser.parse_type()
        parser.parse_punctuation(">")
        return (ArrayAttr(inputs), output)

    def verify(self) -> None:
        for t in self.inputs.data:
            _check_cf_type(t, "!cf.func parameter")
        _check_cf_type(self.output, "!cf.func result")
        if isinstance(self.output, TupleType):
            from xdsl.utils.exceptions import VerifyException

            raise VerifyException("a !cf.func cannot return a tuple")


@irdl_attr_definition
class TupleType(ParametrizedAttribute, TypeAttribute):
    """``!cf.tuple<T1, ..., Tn>``: the values of all shape members, as a transformer rule returns them."""

    name = "cf.tuple"
    elems: ArrayAttr[Attribute]

    def __init__(self, elems: Sequence[Attribute]):
        super().__init__(ArrayAttr(elems))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_list(self.elems.data, printer.print_attribute)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        elems = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parser.parse_type)
        return (ArrayAttr(elems),)

    def verify(self) -> None:
        for t in self.elems.data:
            _check_cf_type(t, "!cf.tuple element")


CF_TYPES: tuple[type[Attribute], ...] = BASE_TYPE_CLASSES + (ListType, FuncType, TupleType)


def _check_cf_type(t: Attribute, what: str) -> None:
    if not isinstance(t, CF_TYPES):
        from xdsl.utils.exceptions import VerifyException

        raise VerifyException(f"{what} must be a cf type, got {t}")


# ----------------------------------------------------------------------------------------------
# Conversion to and from the semantic type lattice
# ----------------------------------------------------------------------------------------------


def to_cf(t: sem.Type) -> Attribute:
    """The ``cf`` type of a semantic type."""
    if isinstance(t, sem.BaseType):
        return _BY_SEM_NAME[t.name]()
    if isinstance(t, sem.ListType):
        return ListType(to_cf(t.elem))
    if isinstance(t, sem.FuncType):
        return FuncType([to_cf(p) for p in t.params], to_cf(t.ret))
    if isinstance(t, sem.TupleType):
        return TupleType([to_cf(e) for e in t.elems])
    raise TypeError(f"no cf type for {t!r}")


def to_semantic(t: Attribute) -> sem.Type:
    """The semantic type of a ``cf`` type; raises ``TypeError`` for a non-``cf`` type."""
    if isinstance(t, CfBaseType):
        return sem.BASE_TYPES[t.SEM_NAME]
    if isinstance(t, ListType):
        return sem.ListType(to_semantic(t.elem))
    if isinstance(t, FuncType):
        return sem.FuncType(tuple(to_semantic(p) for p in t.inputs.data), to_semantic(t.output))
    if isinstance(t, TupleType):
        return sem.TupleType(tuple(to_semantic(e) for e in t.elems.data))
    raise TypeError(f"{t} is not a cf type")


def cf_is_subtype(a: Attribute, b: Attribute) -> bool:
    """``a <: b`` for two ``cf`` types (ConstraintFlow subtyping)."""
    return sem.is_subtype(to_semantic(a), to_semantic(b))


def cf_lub(a: Attribute, b: Attribute) -> Attribute | None:
    """The least upper bound of two ``cf`` types, or ``None``."""
    j = sem.lub(to_semantic(a), to_semantic(b))
    return None if j is None else to_cf(j)


def type_str(t: Attribute) -> str:
    """The ConstraintFlow spelling of a ``cf`` type, for messages (``Neuron List``)."""
    try:
        return str(to_semantic(t))
    except TypeError:
        return str(t)


__all__ = [
    "CfBaseType", "IntType", "FloatType", "BoolType", "NeuronType", "NoiseType", "PolyExpType",
    "SymExpType", "CtType", "ListType", "FuncType", "TupleType", "CF_TYPES", "BASE_TYPE_CLASSES",
    "to_cf", "to_semantic", "cf_is_subtype", "cf_lub", "type_str",
]
