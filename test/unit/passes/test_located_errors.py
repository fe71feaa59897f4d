"""Shape-analysis and Python-emission errors name the source position of the ``cf`` op (or rule) they
are about (``error: file:line:col: ...``, a :class:`~cfmlir.diagnostics.CfError`), not ``<cftensor>``;
the lifting dispatches on the op's type (one ``lift`` method per ``cf`` op class) and gives every
``cftensor`` op it emits the location of the ``cf`` op it comes from."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Region

from cfmlir.compiler import emit_certifier
from cfmlir.diagnostics import CfError, Loc
from cfmlir.dialects import cf
from cfmlir.dialects import cftensor as ct
from cfmlir.frontend import compile_to_cf
from cfmlir.passes.emit_python import EmitError, emit_python
from cfmlir.passes.shape_analysis import RuleLifter, ShapeAnalysisError, ShapeAnalysisPass
from cfmlir.passes.pipeline import NO_REWRITE_PIPELINE
from cfruntime.errors import UserError

HEADER = """def Shape as (Float l, Float u){[(curr[l]<=curr),(curr[u]>=curr)]};
func priority(Neuron n) = n[layer];
func stop(Neuron n) = true;
"""

#: (name, functions, rules, (line, col) of the op the error is about, message)
CASES = [
    ("unsupported_op", "", "Maxpool -> (avg(prev[l]), max(prev[u]));", (5, 17),
     "the tensor compiler does not support 'cf.avg' yet"),
    ("bias_not_on_curr", "", "Neuron_add -> (prev_0[bias], prev_1[u]);", (5, 20),
     "the tensor compiler supports 'bias' only on curr"),
    ("map_list", "func h(Float List xs, Float x) = x + sum(xs);\n", "Affine -> (sum(prev[l].mapList(h(prev[u]))), curr[u]);",
     (6, 20), "the tensor compiler supports map_list only with a function that works element by element "
     "(its body uses 'cf.sum')"),
    # inside an inlined function: the op in the function's body (line 4), not the call
    ("in_function", "func g(Float List xs) = avg(xs);\n", "Maxpool -> (g(prev[l]), max(prev[u]));", (4, 25),
     "the tensor compiler does not support 'cf.avg' yet"),
]


def source(functions: str, rule: str) -> str:
    return f"{HEADER}{functions}transformer t{{\n    {rule}\n}}\nflow(forward, priority, stop, t);\n"


@pytest.mark.parametrize("name, functions, rule, where, message", CASES, ids=[c[0] for c in CASES])
def test_shape_analysis_errors_are_located(name, functions, rule, where, message):
    file = f"{name}.cf"
    with pytest.raises(ShapeAnalysisError) as info:
        emit_certifier(source(functions, rule), file, NO_REWRITE_PIPELINE)
    e = info.value
    assert isinstance(e, CfError) and isinstance(e, UserError)
    assert e.loc == Loc(file, *where)
    assert str(e) == f"error: {file}:{where[0]}:{where[1]}: {message}"
    assert e.diagnostic == str(e)


def test_module_without_flow_is_a_whole_file_error():
    module = compile_to_cf(HEADER + "transformer t{\n    Relu -> (prev[l], prev[u]);\n}\n", "noflow.cf")
    with pytest.raises(ShapeAnalysisError) as info:
        ShapeAnalysisPass().apply(None, module)
    assert str(info.value) == "error: noflow.cf: the certifier has no 'flow' declaration: there is nothing to run"


def test_lifted_ops_carry_the_source_locations():
    """Every cftensor op of a lifted shipped certifier (rules included) has a position in its .cf file."""
    file = "ibp.cf"
    from cfmlir.certifiers import certifier_source

    text, _ = certifier_source("ibp")
    module = compile_to_cf(text, file)
    ShapeAnalysisPass().apply(None, module)
    ops = list(module.walk())[1:]
    assert ops and all(isinstance(o.location, FileLineColLoc) and o.location.filename.data == file for o in ops)
    lines = {o.location.line.data for o in ops if isinstance(o, ct.BinaryOp)}
    assert len(lines) > 1  # the ops of different rules/functions, not one position for all


def test_lift_dispatches_per_op_class():
    registry = RuleLifter.__dict__["lift"].dispatcher.registry
    for cls in (cf.ConstOp, cf.AddOp, cf.LeOp, cf.InOp, cf.NegOp, cf.SelectOp, cf.CallOp, cf.MaxOp, cf.MinOp,
                cf.SigmoidOp, cf.MapOp, cf.TraverseOp, cf.SymOp, cf.DotOp, cf.AccessOp):
        assert cls in registry, cls
    assert cf.AvgOp not in registry and cf.LpOp not in registry  # the fallback reports them


def _loc(line: int, col: int, file: str = "x.mlir") -> FileLineColLoc:
    return FileLineColLoc(StringAttr(file), IntAttr(line), IntAttr(col))


def _module(inner: ct.FlowOp, rule_loc=None) -> ModuleOp:
    body = Block([inner, ct.ReturnOp([])])
    rule = ct.RuleOp("t", "Relu", Region(body))
    if rule_loc is not None:
        rule.location = rule_loc
    return ModuleOp([ct.FlowOp("forward", "t", [("l", "R", "lower")]), rule])


def test_emission_error_is_located_at_the_op():
    bad = ct.FlowOp("forward", "t", [("l", "R", "lower")])
    bad.location = _loc(4, 5)
    with pytest.raises(EmitError) as info:
        emit_python(_module(bad, _loc(3, 3)))
    assert isinstance(info.value, CfError)
    assert str(info.value) == "error: x.mlir:4:5: no Python emission for 'cftensor.flow'"


def test_emission_error_without_a_location_names_the_rule():
    bad = ct.FlowOp("forward", "t", [("l", "R", "lower")])
    with pytest.raises(EmitError) as info:
        emit_python(_module(bad, _loc(3, 3)))
    assert str(info.value) == "error: x.mlir:3:3: no Python emission for 'cftensor.flow'"
