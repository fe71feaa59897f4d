"""Every shipped certifier lowers to verified ``cf`` IR that round-trips through the printer/parser."""

from __future__ import annotations

import pytest
from xdsl.printer import Printer

from cfmlir.certifiers import certifier_names, certifier_source
from cfmlir.dialects import cf
from cfmlir.frontend import compile_certifier, compile_to_cf, parse_module, print_module
from cfmlir.syntax.parser import parse
from cfmlir.typing.checker import check

NAMES = certifier_names()


def test_all_nineteen_certifiers_are_covered():
    assert len(NAMES) == 19  # 17 + alpha_deeppoly, alpha_deepz (issue 25)


@pytest.fixture(scope="module")
def modules():
    return {name: compile_certifier(name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_print_parse_print_is_identity(name, modules):
    module = modules[name]
    module.verify()
    first = print_module(module)
    reparsed = parse_module(first, f"{name}.mlir")
    reparsed.verify()
    assert print_module(reparsed) == first
    assert reparsed.is_structurally_equivalent(module)


@pytest.mark.parametrize("name", NAMES)
def test_generic_format_round_trips(name, modules):
    first = print_module(modules[name])
    generic = print_module(modules[name], print_generic_format=True)
    assert '"cf.shape"' in generic
    assert print_module(parse_module(generic, f"{name}.generic.mlir")) == first


@pytest.mark.parametrize("name", NAMES)
def test_structure_matches_the_source(name, modules):
    text, file = certifier_source(name)
    checked = check(parse(text, file))
    ops = list(modules[name].ops)
    shapes = [o for o in ops if isinstance(o, cf.ShapeOp)]
    assert len(shapes) == 1
    assert shapes[0].member_names() == checked.member_order
    funcs = [o.sym_name.data for o in ops if isinstance(o, cf.FuncOp)]
    assert funcs == list(checked.funcs)
    transformers = [o for o in ops if isinstance(o, cf.TransformerOp)]
    assert [t.sym_name.data for t in transformers] == list(checked.transformers)
    for t in transformers:
        decl = checked.transformers[t.sym_name.data]
        assert t.rule_names() == [r.op for r in decl.rules]
        for _, region in t.rule_regions():
            assert isinstance(region.block.last_op, cf.ReturnOp)
            assert len(region.block.last_op.returned_types()) == len(checked.member_order)
    flows = [o for o in ops if isinstance(o, cf.FlowOp)]
    assert len(flows) == len(checked.program.flows) == 1
    # declaration order is kept
    kinds = [type(o).__name__ for o in ops]
    assert kinds[0] == "ShapeOp" and kinds[-1] == "FlowOp"


def test_ops_carry_source_locations(modules):
    module = compile_to_cf("def Shape as (Float l){[curr[l] <= curr]};\nfunc f(Float x) = x + 1.0;\n", "t.cf")
    func = next(o for o in module.ops if isinstance(o, cf.FuncOp))
    add = next(o for o in func.body.block.ops if isinstance(o, cf.AddOp))
    assert (add.location.filename.data, add.location.line.data, add.location.column.data) == ("t.cf", 2, 19)
    from io import StringIO

    out = StringIO()
    Printer(stream=out, print_debuginfo=True).print_op(module)
    assert 'loc("t.cf":2:19)' in out.getvalue()


def test_sym_is_not_pure_but_arithmetic_is():
    from xdsl.traits import Pure

    assert not cf.SymOp.has_trait(Pure)
    assert not cf.CallOp.has_trait(Pure)
    assert cf.AddOp.has_trait(Pure)
