"""Subtyping and least upper bounds of ConstraintFlow types."""

import pytest

from cfmlir.dialects.cf_type_lattice import (
    BOOL, CT, FLOAT, INT, NEURON, NOISE, POLYEXP, SYMEXP, FuncType, ListType, TupleType, is_subtype, lub,
)


@pytest.mark.parametrize(
    "a, b",
    [(INT, FLOAT), (FLOAT, POLYEXP), (FLOAT, SYMEXP), (NEURON, POLYEXP), (NOISE, SYMEXP), (BOOL, CT),
     (INT, POLYEXP), (INT, SYMEXP), (ListType(INT), ListType(FLOAT)), (TupleType((INT, NEURON)), TupleType((FLOAT, POLYEXP)))],
)
def test_subtypes(a, b):
    assert is_subtype(a, b)
    assert not is_subtype(b, a)


@pytest.mark.parametrize("a, b", [(POLYEXP, SYMEXP), (NEURON, NOISE), (BOOL, FLOAT), (CT, POLYEXP), (NEURON, FLOAT)])
def test_unrelated(a, b):
    assert not is_subtype(a, b) and not is_subtype(b, a)


@pytest.mark.parametrize(
    "a, b, expected",
    [(INT, FLOAT, FLOAT), (NEURON, FLOAT, POLYEXP), (NEURON, INT, POLYEXP), (NOISE, FLOAT, SYMEXP),
     (NEURON, NEURON, NEURON), (SYMEXP, INT, SYMEXP), (POLYEXP, SYMEXP, None), (BOOL, FLOAT, None),
     (NEURON, NOISE, None), (ListType(INT), ListType(NEURON), ListType(POLYEXP)),
     (TupleType((INT, NEURON)), TupleType((FLOAT, INT)), TupleType((FLOAT, POLYEXP)))],
)
def test_lub(a, b, expected):
    assert lub(a, b) == expected
    assert lub(b, a) == expected


def test_function_subtyping_is_contravariant_in_parameters():
    f = FuncType((POLYEXP, FLOAT), FLOAT)
    g = FuncType((NEURON, FLOAT), POLYEXP)
    assert is_subtype(f, g)  # accepts more, returns less
    assert not is_subtype(g, f)
