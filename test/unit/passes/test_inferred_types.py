"""``cftensor`` result types are inferred by the ops (issue 28, acceptance 3).

Each op whose result type follows from its operands and properties computes it (``infer_type``, used
by its builder; ``inferred_type()``, used by its verifier), as MLIR's InferTypeOpInterface.  Shape
analysis therefore passes no result types: the tests below check that on the source of the pass and
on the builders' signatures, and that on every shipped certifier's IR -- straight out of shape
analysis and after the whole default pipeline -- every op's type is the one it infers.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from cfmlir.dialects import cftensor as ct
from cfmlir.dialects.cftensor_metadata import Metadata, parse_metadata

ROOT = Path(__file__).resolve().parents[3]

#: ops that declare their type rather than infer it: a rule input (like a function argument), a
#: uniform branch (its results are the join of its regions'), and the fused ops only the rewrites
#: build, from the type of the op they replace
DECLARED = {ct.InputOp, ct.IfOp, ct.InnerOp, ct.SplitInnerOp, ct.IntervalInnerOp, ct.SubstituteOp,
            ct.SubstituteScaledOp, ct.MaskedReduceOp}


@pytest.mark.parametrize("op", [o for o in ct.CFTensor.operations if hasattr(o, "inferred_type")], ids=lambda o: o.name)
def test_builders_of_inferring_ops_take_no_result_type(op: type) -> None:
    params = set(inspect.signature(op.__init__).parameters)
    assert not params & {"type", "result_type", "result_types"}, f"{op.name} still takes its result type"


def test_every_op_with_a_result_infers_it_or_is_declared() -> None:
    for op in ct.CFTensor.operations:
        builds_results = any(name in ("result", "res", "lo") for name in vars(op))
        if builds_results and op not in DECLARED and op not in (ct.WhileOp, ct.LayerTraverseOp):
            assert hasattr(op, "inferred_type"), f"{op.name} has a result type it does not infer"


def test_shape_analysis_passes_no_result_types() -> None:
    """In ``passes/shape_analysis.py`` a ``cftensor`` builder gets no type argument: only
    ``cftensor.input`` and block arguments declare a ``TensorType``."""
    tree = ast.parse((ROOT / "passes" / "shape_analysis.py").read_text())
    offenders = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "ct"
                and node.func.attr.endswith("Op")):
            continue
        if node.func.attr == "InputOp":
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            for sub in ast.walk(arg):
                if isinstance(sub, ast.Attribute) and sub.attr in ("TensorType", "type"):
                    offenders.append(f"line {node.lineno}: ct.{node.func.attr}")
        offenders += [f"line {node.lineno}: ct.{node.func.attr}({k.arg}=...)" for k in node.keywords
                      if k.arg in ("type", "result_type", "result_types")]
    assert not offenders, offenders


def _shipped() -> list[str]:
    from cfmlir.certifiers import certifier_names

    return sorted(certifier_names())


def _compiled(name: str, pipeline) -> object:
    from cfmlir.compiler import load_certifier_source
    from cfmlir.frontend import compile_to_cf
    from cfmlir.passes.pipeline import run_pipeline

    text, _ = load_certifier_source(name)
    module = compile_to_cf(text, f"{name}.cf")
    run_pipeline(module, pipeline)
    return module


@pytest.mark.parametrize("name", _shipped())
def test_every_type_is_the_inferred_one_on_shipped_certifiers(name: str) -> None:
    from cfmlir.passes.pipeline import DEFAULT_PIPELINE

    for pipeline in (("shape-analysis",), DEFAULT_PIPELINE):
        checked = 0
        for op in _compiled(name, pipeline).walk():
            if hasattr(op, "inferred_type"):
                assert op.inferred_type() == ct.meta(op.results[0]), f"{name}: {op}"
                checked += 1
            elif isinstance(op, (ct.WhileOp, ct.LayerTraverseOp)):
                assert [r.type for r in op.results] == [v.type for v in op.operands]
        assert checked > 50, f"{name}: only {checked} ops infer their type"


def _rule(body: str) -> str:
    return f'builtin.module {{\n  cftensor.rule "t" "Affine" {{\n{body}\n    cftensor.return\n  }}\n}}'


def test_builders_give_the_types_the_metadata_algebra_gives() -> None:
    """Hand-checked results of the builders (the algebra is :mod:`cftensor_metadata`'s)."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.parser import Parser

    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(ct.CFTensor)
    e_t = "!cftensor.t<P, [batch, curr], [1, 1]>"
    module = Parser(ctx, _rule(f'    %e = cftensor.input "e" : {e_t}')).parse_module()
    e = next(op for op in module.walk() if isinstance(op, ct.InputOp)).result

    def m(text: str) -> Metadata:
        return parse_metadata(text)

    coeff = ct.MapCoeffOp(e)
    assert ct.meta(coeff.result) == m("R, [poly], [1] :: R, [batch, curr], [1, 1]")
    neurons = ct.MapNeuronOp(e)
    assert ct.meta(neurons.result) == m("N, [poly], [1] :: N, [1, 1], [batch, curr]")
    summed = ct.ReduceOp(coeff.result, 2, "sum")  # the map's dimension: the element is popped
    assert ct.meta(summed.result) == m("R, [batch, curr], [1, 1]")
    lifted = ct.AddDimOp(summed.result, 2, parse_metadata("R, [poly], [1]").top.shape[0], new_element=True)
    assert ct.meta(lifted.result) == m("R, [1], [poly] :: R, [batch, curr], [1, 1]")
    repeated = ct.RepeatOp(lifted.result, 2, "poly")
    assert ct.meta(repeated.result) == ct.meta(coeff.result)
    cmp = ct.BinaryOp("gt", repeated.result, ct.ConstOp(0.0).result)
    assert ct.meta(cmp.result) == m("B, [poly], [1] :: R, [batch, curr], [1, 1]")
    assert ct.meta(ct.TernaryOp(cmp.result, coeff.result, ct.ConstOp(1.0, "I").result).result) == ct.meta(coeff.result)
    assert ct.meta(ct.BinaryOp("div", ct.ConstOp(1.0, "I").result, ct.ConstOp(2.0, "I").result).result) == m("const R, [1], [1]")
    access = ct.AccessOp(neurons.result, "L", "P")
    assert ct.meta(access.result) == m("P, [poly], [1] :: P, [batch, 1], [1, curr]")
    assert ct.meta(ct.AccessOp(neurons.result, "layer").result) == m("I, [poly], [1] :: N, [1, 1], [batch, curr]")
    assert ct.meta(ct.ParamOp(neurons.result, "a").result) == m("R, [poly], [1] :: R, [batch, curr], [1, 1]")
    parts = ct.ExtractPolyCoeffOp(e), ct.ExtractPolyConstOp(e)
    assert ct.meta(parts[0].result) == m("R, [batch, curr, poly], [1, 1, 1]")
    assert ct.meta(ct.CombineToPolyOp(parts[0].result, parts[1].result).result) == m(e_t[12:-1])
