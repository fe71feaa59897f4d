"""Op verifiers re-check the type checker's guarantees and report one line at the failing op."""

from __future__ import annotations

import pytest
from xdsl.ir import Region

from cfmlir.diagnostics import CfError
from cfmlir.dialects import cf
from cfmlir.dialects import cf_types as T
from cfmlir.frontend import IRError, compile_certifier, compile_to_cf, parse_module, verify_module

SHAPE = "def Shape as (Float l, Float u){[curr[l] <= curr, curr[u] >= curr]};\n"


def _ops(module, cls):
    return [o for o in module.walk() if isinstance(o, cls)]


def test_changed_result_type_is_reported_at_the_source_location():
    module = compile_to_cf(SHAPE + "func f(Float a, Float b) = a + b;\n", "x.cf")
    add = _ops(module, cf.AddOp)[0]
    add.results[0]._type = T.IntType()  # noqa: SLF001 - corrupt the IR on purpose
    with pytest.raises(IRError) as info:
        verify_module(module, "x.cf")
    assert str(info.value) == "error: x.cf:2:28: 'cf.add' op result type must be !cf.float (Float), got !cf.int"


def test_return_arity_uses_the_shape_member_count():
    module = compile_certifier("ibp")
    ret = _ops(module, cf.ReturnOp)[0]
    ret.operands = ret.operands[:1]
    with pytest.raises(IRError, match="returns 1 value but the shape has 2 members"):
        verify_module(module, "ibp.cf")


def test_map_with_wrong_function_type():
    module = compile_to_cf(SHAPE + "func g(Neuron n, Float c) = c;\nfunc h(Float x) = x;\nfunc f(PolyExp e) = e.map(g);\n", "m.cf")
    ref = [o for o in _ops(module, cf.FuncRefOp)][0]
    ref.callee = cf.SymbolRefAttr("h")
    with pytest.raises(IRError, match=r"'cf.func_ref' op @h has type"):
        verify_module(module, "m.cf")


def test_two_shapes_are_rejected():
    module = compile_certifier("ibp")
    shape = _ops(module, cf.ShapeOp)[0]
    module.body.block.add_op(shape.clone())
    with pytest.raises(IRError, match="more than one 'cf.shape'"):
        verify_module(module, "ibp.cf")


def test_access_checks_members_of_the_module_shape():
    module = compile_to_cf(SHAPE + "func f(Neuron n) = n[u];\n", "a.cf")
    acc = _ops(module, cf.AccessOp)[-1]
    acc.member = cf.StringAttr("Z")
    with pytest.raises(IRError, match="unknown shape member or metadata 'Z'"):
        verify_module(module, "a.cf")


def test_verifier_error_on_parsed_ir_without_location():
    module = compile_to_cf(SHAPE + "func f(Float a) = -a;\n", "n.cf")
    neg = _ops(module, cf.NegOp)[0]
    neg.location = cf.ModuleOp([]).location  # unknown location
    neg.results[0]._type = T.BoolType()  # noqa: SLF001
    with pytest.raises(IRError) as info:
        verify_module(module, "n.cf")
    assert str(info.value) == "error: n.cf: 'cf.neg' op result type must be !cf.float (Float), got !cf.bool"


def test_parse_errors_are_one_line():
    with pytest.raises(CfError) as info:
        parse_module("builtin.module {\n  %0 = cf.const 1.0 : !cf.int\n}\n", "p.mlir")
    assert str(info.value).startswith("error: p.mlir:2:")
    assert "\n" not in str(info.value)


def test_transformer_rule_arguments_are_checked():
    block_types = [T.NeuronType()]
    region = Region(cf.Block(arg_types=block_types))
    region.block.add_op(cf.ReturnOp([]))
    op = cf.TransformerOp("t", [("Relu", region)])
    with pytest.raises(Exception, match="rule 'Relu' must take the arguments"):
        op.verify()


def test_unknown_operator_rule_is_rejected():
    region = Region(cf.Block())
    region.block.add_op(cf.ReturnOp([]))
    op = cf.TransformerOp("t", [("Conv", region)])
    with pytest.raises(Exception, match="unknown operator 'Conv'"):
        op.verify()


def test_unterminated_string_literal_fails_fast():
    import time

    text = 'builtin.module {\n  %0 = "cf.sym' + " x" * 40 + "\n}\n"
    start = time.perf_counter()
    with pytest.raises(CfError, match="closing string literal"):
        parse_module(text, "s.mlir")
    assert time.perf_counter() - start < 5
