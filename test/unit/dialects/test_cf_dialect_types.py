"""The ``cf`` types: conversion to/from the checker's semantic types, subtyping, assembly."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import ParseError

from cfmlir.dialects import cf_type_lattice as sem
from cfmlir.dialects import cf_types as T
from cfmlir.frontend import parse_module, print_module

SEM_TYPES = [
    sem.INT, sem.FLOAT, sem.BOOL, sem.NEURON, sem.NOISE, sem.POLYEXP, sem.SYMEXP, sem.CT,
    sem.ListType(sem.NEURON), sem.ListType(sem.ListType(sem.FLOAT)),
    sem.FuncType((sem.NEURON, sem.FLOAT), sem.POLYEXP), sem.FuncType((), sem.INT),
    sem.TupleType((sem.FLOAT, sem.SYMEXP)),
]


@pytest.mark.parametrize("t", SEM_TYPES, ids=str)
def test_semantic_round_trip(t):
    assert T.to_semantic(T.to_cf(t)) == t


def test_spellings():
    assert str(T.to_cf(sem.ListType(sem.NEURON))) == "!cf.list<!cf.neuron>"
    assert str(T.to_cf(sem.FuncType((sem.NEURON, sem.FLOAT), sem.BOOL))) == "!cf.func<(!cf.neuron, !cf.float) -> !cf.bool>"
    assert str(T.to_cf(sem.TupleType((sem.FLOAT, sem.CT)))) == "!cf.tuple<!cf.float, !cf.ct>"
    assert str(T.PolyExpType()) == "!cf.polyexp"


@pytest.mark.parametrize("a", SEM_TYPES, ids=str)
@pytest.mark.parametrize("b", SEM_TYPES, ids=str)
def test_subtyping_and_lub_agree_with_the_checker(a, b):
    ca, cb = T.to_cf(a), T.to_cf(b)
    assert T.cf_is_subtype(ca, cb) == sem.is_subtype(a, b)
    j = sem.lub(a, b)
    assert T.cf_lub(ca, cb) == (None if j is None else T.to_cf(j))


@pytest.mark.parametrize("t", [t for t in SEM_TYPES if not isinstance(t, sem.FuncType)], ids=str)
def test_types_print_and_parse(t):
    ty = T.to_cf(t)
    text = (
        "builtin.module {\n"
        f"  cf.func @f(%x: {ty}) -> {ty} {{\n"
        f"    cf.yield %x : {ty}\n"
        "  }\n"
        "}\n"
    )
    if isinstance(ty, T.TupleType):
        with pytest.raises(Exception, match="cannot return a tuple|parameter 0 of @f has type"):
            parse_module(text)
        return
    assert print_module(parse_module(text)) == text


def test_bad_list_element_is_rejected():
    from cfmlir.diagnostics import CfError

    with pytest.raises((CfError, ParseError)):
        parse_module("builtin.module {\n  cf.func @f(%x: !cf.list<i32>) -> !cf.float {\n  }\n}\n")


def test_function_types_print_and_parse():
    text = (
        "builtin.module {\n"
        "  cf.func @g(%n: !cf.neuron, %c: !cf.float) -> !cf.float {\n"
        "    cf.yield %c : !cf.float\n"
        "  }\n"
        "  cf.func @f() -> !cf.int {\n"
        "    %0 = cf.func_ref @g : !cf.func<(!cf.neuron, !cf.float) -> !cf.float>\n"
        "    %1 = cf.const 0 : !cf.int\n"
        "    cf.yield %1 : !cf.int\n"
        "  }\n"
        "}\n"
    )
    assert print_module(parse_module(text)) == text
