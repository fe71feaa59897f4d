"""The cftensor dialect: the metadata type and the ops print, parse back identically and verify."""

import re

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from cfmlir.dialects.cftensor import CFTensor, TensorType
from cfmlir.dialects.cftensor_metadata import parse_metadata

IR = """builtin.module {
  cftensor.flow "forward" "t" ["l:R:lower", "L:P:lower"]
  cftensor.rule "t" "Affine" {
    %prev = cftensor.input "prev" : !cftensor.t<N, [1, 1, prev], [batch, curr, 1]>
    %w = cftensor.input "weight" : !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>
    %r = cftensor.repeat %prev[1] size "curr" : (!cftensor.t<N, [1, 1, prev], [batch, curr, 1]>) -> !cftensor.t<N, [1, curr, prev], [batch, 1, 1]>
    %e = cftensor.dot %r, %w : (!cftensor.t<N, [1, curr, prev], [batch, 1, 1]>, !cftensor.t<R, [1, curr, prev], [batch, 1, 1]>) -> !cftensor.t<P, [1, curr], [batch, 1]>
    %c = cftensor.map_coeff %e : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>
    %z = cftensor.const(0.000000e+00 : f64) : !cftensor.t<const R, [1], [1]>
    %m = cftensor.clamp %c min(0.000000e+00 : f64) : (!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>
    %s = cftensor.binary "max" %c, %z : (!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>
    %x = cftensor.reduce %s[2] kind "sum" : (!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
    %k = cftensor.extract_poly_const %e : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>
    cftensor.return %x, %e : !cftensor.t<R, [1, curr], [batch, 1]>, !cftensor.t<P, [1, curr], [batch, 1]>
  }
}"""


def context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(CFTensor)
    return ctx


def test_round_trip_is_identical():
    module = Parser(context(), IR).parse_module()
    module.verify()
    printed = str(module)
    again = Parser(context(), printed).parse_module()
    assert str(again) == printed
    assert "!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>" in printed


def test_type_exposes_its_metadata():
    t = TensorType("N, [poly], [1] :: N, [1, 1], [batch, curr]")
    m = t.metadata
    assert m.height == 2 and [str(s) for s in m.shape] == ["1", "1", "poly"]
    assert t == TensorType(parse_metadata(str(m)))


def test_binary_verifier_rejects_unaligned_operands():
    bad = IR.replace('%s = cftensor.binary "max" %c, %z', '%s = cftensor.binary "max" %c, %k').replace(
        "(!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>, !cftensor.t<const R, [1], [1]>) -> !cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>\n    %x",
        "(!cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>, !cftensor.t<R, [1, curr], [batch, 1]>) -> !cftensor.t<R, [poly], [1] :: R, [1, curr], [batch, 1]>\n    %x",
    )
    # %k is used before its definition in this edit; move it up so only the shape is wrong
    bad = bad.replace("    %k = cftensor.extract_poly_const", "    %k0 = cftensor.extract_poly_const")
    bad = bad.replace("    %c = cftensor.map_coeff", "    %k = cftensor.extract_poly_const %e : (!cftensor.t<P, [1, curr], [batch, 1]>) -> !cftensor.t<R, [1, curr], [batch, 1]>\n    %c = cftensor.map_coeff")
    module = Parser(context(), bad).parse_module()
    with pytest.raises(VerifyException, match="one intrinsic shape"):
        module.verify()


def test_malformed_metadata_is_a_parse_error():
    with pytest.raises(ParseError):
        Parser(context(), 'builtin.module { %a = cftensor.const(1.0 : f64) : !cftensor.t<Q, [1], [1]> }').parse_module()
    with pytest.raises(ParseError):
        Parser(context(), 'builtin.module { %a = cftensor.const(1.0 : f64) : !cftensor.t<R, [1, 2], [1]> }').parse_module()


# ------------------------------------------------------------------ every op's documented example
def _split_top_level(types: str) -> list[str]:
    """``"!a<x, y>, !b"`` -> ``["!a<x, y>", "!b"]`` (commas inside brackets do not split)."""
    out, depth, cur = [], 0, ""
    for ch in types:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def _value_example(op) -> str | None:
    """The one-line ``%r = cftensor.<op> ...`` example in ``op``'s docstring, if it has one."""
    found = re.search(r"``(%\w+(?:, %\w+)* = " + re.escape(op.name) + r"\b.*?)``", op.__doc__ or "", re.S)
    return " ".join(found.group(1).split()) if found else None


@pytest.mark.parametrize("op", list(CFTensor.operations), ids=lambda op: op.name)
def test_every_op_documents_itself_with_valid_ir(op):
    """Ops that define a value show a one-line example, which parses and verifies once its operands
    are defined with the types it states; the structural ops show theirs as a block."""
    example = _value_example(op)
    if example is None:
        assert op.name in (op.__doc__ or "") and op.name in ("cftensor.rule", "cftensor.return", "cftensor.while",
                                                             "cftensor.if", "cftensor.layer_traverse",
                                                             "cftensor.flow", "cftensor.param_domain"), op.name
        return
    head, _, signature = example.rpartition(" : ")
    operands = re.findall(r"%(\w+)", head.split("=", 1)[1])
    operand_types = _split_top_level(signature[1:signature.index(") ->")]) if signature.startswith("(") else []
    assert len(operand_types) == len(operands), example
    types = dict(zip(operands, operand_types))
    inputs = "\n".join(f'    %{n} = cftensor.input "{n}" : {t}' for n, t in types.items())
    text = f'builtin.module {{\n  cftensor.rule "t" "Affine" {{\n{inputs}\n    {example}\n    cftensor.return\n  }}\n}}'
    Parser(context(), text).parse_module().verify()
