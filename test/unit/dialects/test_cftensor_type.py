"""``!cftensor.t``: a structured type (one ElementAttr per stack element, SizeAttrs for the sizes)
whose metadata round-trips through print and parse, and the cftensor ops are plain classes."""

from __future__ import annotations

import ast
import inspect
import re

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, Builtin, IntAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from cfmlir.dialects import cftensor as ct
from cfmlir.dialects import cftensor_metadata as md
from cfmlir.dialects.cftensor import CFTensor, ElementAttr, SizeAttr, TensorType
from cfmlir.dialects.cftensor_metadata import SIZE_SYMBOLS, TYPE_LETTERS, Metadata, parse_metadata

STACKS = [
    "R, [batch, curr], [1, 1]",
    "const R, [1], [1]",
    "R, [lay], [1] :: P, [batch, 1], [1, curr]",
    "N, [poly], [1] :: P, [1, 1], [batch, curr]",
    "B, [poly, 1], [1, sym] :: R, [1], [poly] :: const R, [2*batch, curr*poly], [1, lay]",
    "I, [s0], [1] :: N, [1, 1, prev], [batch, curr, 1]",
]


def context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(CFTensor)
    return ctx


def parse_type(text: str) -> Attribute:
    return Parser(context(), text).parse_type()


def strings_in(attr: Attribute):
    """Every StringAttr among the (nested) parameters of ``attr``."""
    if isinstance(attr, StringAttr):
        yield attr
    elif isinstance(attr, ArrayAttr):
        for a in attr.data:
            yield from strings_in(a)
    elif isinstance(attr, ParametrizedAttribute):
        for p in attr.parameters:
            yield from strings_in(p)


@pytest.mark.parametrize("text", STACKS)
def test_metadata_round_trips_through_print_and_parse(text):
    m = parse_metadata(text)
    t = TensorType(m)
    assert t.metadata == m
    printed = str(t)
    assert printed == f"!cftensor.t<{text}>"  # the text form is unchanged, byte for byte
    again = parse_type(printed)
    assert isinstance(again, TensorType)
    assert again == t and hash(again) == hash(t)
    assert again.metadata == m and str(again) == printed


@pytest.mark.parametrize("text", STACKS)
def test_the_stack_is_held_structurally(text):
    t = TensorType(text)
    assert [type(e) for e in t.elements.data] == [ElementAttr] * t.metadata.height
    for e, elem in zip(t.elements.data, t.metadata.elements):
        assert e.letter.data == elem.type and bool(e.is_const.value.data) == elem.is_const
        assert [s.size for s in e.shape.data] == list(elem.shape)
        assert [b.size for b in e.broadcast.data] == list(elem.broadcast)
    # no StringAttr holds the stack (or an element or a size): only letters and size symbols
    strings = [s.data for s in strings_in(t)]
    assert strings
    for s in strings:
        assert s in TYPE_LETTERS or s in SIZE_SYMBOLS or re.fullmatch(r"s\d+", s), s


def test_metadata_is_built_from_the_attributes_without_parsing(monkeypatch):
    t = parse_type("!cftensor.t<R, [poly], [1] :: R, [batch, curr], [1, 1]>")
    fresh = TensorType.new(t.parameters)  # no cached metadata yet

    def fail(*args, **kwargs):
        raise AssertionError("the metadata was parsed from text")

    for name in ("parse_metadata", "parse_metadata_from", "parse_element_from", "parse_size_from"):
        monkeypatch.setattr(md, name, fail)
        if hasattr(ct, name):
            monkeypatch.setattr(ct, name, fail)
    m = fresh.metadata
    assert str(m) == "R, [poly], [1] :: R, [batch, curr], [1, 1]"
    assert fresh.metadata is m  # built once per type


def test_equal_metadata_gives_equal_types():
    a = TensorType("R, [curr*batch], [1]")
    b = TensorType(Metadata.single("R", [md.Size.of("batch") * md.Size.of("curr")], [md.ONE]))
    assert a == b and str(a) == str(b) == "!cftensor.t<R, [batch*curr], [1]>"
    assert TensorType("R, [curr], [1]") != TensorType("const R, [curr], [1]")


def test_element_and_size_attributes_print_and_parse_alone():
    for text in ("#cftensor.size<2*curr>", "#cftensor.element<const R, [1, poly], [batch, 1]>"):
        attr = Parser(context(), text).parse_attribute()
        assert isinstance(attr, (SizeAttr, ElementAttr)) and str(attr) == text


def test_malformed_parameters_do_not_verify():
    with pytest.raises(VerifyException, match="unknown type letter 'X'"):
        ElementAttr.new([StringAttr("X"), ElementAttr(md.Element("R", (), ())).is_const, ArrayAttr([]), ArrayAttr([])])
    with pytest.raises(VerifyException, match="same rank"):
        ElementAttr.new([StringAttr("R"), ElementAttr(md.Element("R", (), ())).is_const,
                         ArrayAttr([SizeAttr(md.ONE)]), ArrayAttr([])])
    with pytest.raises(VerifyException, match="sizes are positive"):
        SizeAttr.new([IntAttr(0), ArrayAttr([])])
    with pytest.raises(VerifyException, match="at least one element"):
        TensorType.new([ArrayAttr([])])


@pytest.mark.parametrize("bad", ["Q, [1], [1]", "R, [1, 2], [1]", "R, [0], [1]", "R, [1], [1] ::", "R, [1], [1] x"])
def test_malformed_text_is_rejected(bad):
    with pytest.raises(ParseError):
        parse_type(f"!cftensor.t<{bad}>")
    with pytest.raises(ValueError):
        parse_metadata(bad)


def test_every_op_is_a_plain_class():
    """No op class is made with ``type()``: each is written out as ``class XOp(...)`` in the dialect."""
    source = inspect.getsource(ct)
    three_arg_type_calls = [n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                            and isinstance(n.func, ast.Name) and n.func.id == "type" and len(n.args) == 3]
    assert three_arg_type_calls == []
    for op in CFTensor.operations:
        assert re.search(rf"^class {op.__name__}\(", source, re.M), op.name
        assert op.__doc__ and op.name in op.__doc__, op.name


def test_reduce_kind_is_a_property_named_kind():
    t = TensorType("R, [batch, curr, poly], [1, 1, 1]")
    r = TensorType("R, [batch, curr], [1, 1]")
    module = Parser(context(), f"""builtin.module {{
  cftensor.rule "t" "Affine" {{
    %c = cftensor.input "c" : {t}
    %r = cftensor.reduce %c[2] kind "max" : ({t}) -> {r}
    %m = cftensor.masked_reduce %c, %c[2] kind "min" : ({t}, {t}) -> {r}
    %p = cftensor.repeat %r[1] size "curr" : ({r}) -> {r}
    cftensor.return
  }}
}}""").parse_module()
    module.verify()
    reduce, masked, repeat = [op for op in module.walk() if isinstance(op, (ct.ReduceOp, ct.MaskedReduceOp, ct.RepeatOp))]
    assert reduce.kind.data == "max" and masked.kind.data == "min" and repeat.size.data == "curr"
    assert "size" not in reduce.properties and "size" not in masked.properties
    assert ct.ReduceOp(reduce.input, 2, "sum").kind.data == "sum"
    with pytest.raises(VerifyException, match="reduces by sum, min or max, not 'prod'"):
        ct.ReduceOp(reduce.input, 2, "prod").verify()
