"""One error format for every user error (issue 28).

Every class deriving from :class:`cfruntime.errors.UserError`, in every module of ``cfmlir`` and
``cfruntime``, prints as one line in one of the forms of :func:`cfruntime.errors.diagnostic_line`::

    error: FILE:LINE:COL: what       (a source position: a .cf / .mlir diagnostic)
    error: FILE:LINE: what           (a line of a data file)
    error: FILE: what                (a whole file)
    error: what                      (no file: an option, an API argument)

The classes are found by importing every module and walking ``UserError``'s subclasses, so a new error
class without an example below fails ``test_every_user_error_class_has_an_example``.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import cfmlir
import cfruntime
from cfmlir.diagnostics import CfError, Loc
from cfruntime.errors import UserError, diagnostic_line

#: Optional dependencies whose absence makes a module unimportable (not an error of the format).
OPTIONAL = {"ray", "matplotlib"}

LINE = re.compile(r"^error: (?:[^\s:][^\s]*?(?::\d+(?::\d+)?)?: )?\S[^\n]*$")
LOCATED = re.compile(r"^error: [^\s:]+:\d+:\d+: \S")


def _all_user_error_classes() -> set[type]:
    for pkg in (cfmlir, cfruntime):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            try:
                importlib.import_module(info.name)
            except ImportError as err:  # an optional extra not installed
                if (err.name or "").split(".")[0] not in OPTIONAL:
                    raise
    seen, todo = set(), [UserError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return seen


def _examples() -> dict[str, list]:
    """Class qualified name -> instances, one per kind of location the class can carry."""
    from cfmlir.api_args import ArgumentError
    from cfmlir.bounded import BoundsError
    from cfmlir.distributed import RayError, RemoteFailure
    from cfmlir.frontend import IRError
    from cfmlir.interpreter.errors import InterpreterError
    from cfmlir.optimize import OptimizeError
    from cfmlir.passes.emit_python import EmitError
    from cfmlir.passes.shape_analysis import ShapeAnalysisError
    from cfmlir.proof_gate import Proof, RuleProof, UnprovedCertifierError, UnsoundCertifierError
    from cfmlir.tools import cf_opt, cf_plot, run_args, run_setup
    from cfmlir.verify.errors import FragmentError
    from cfruntime import errors as E
    from cfruntime.flow.engine import EngineError, EngineOutOfMemory, EnginePastDeadline
    from cfruntime.flow.finite import NonFiniteBoundsError
    from cfruntime.flow.ops import LoopLimitError
    from cfruntime.flow.widening import WideningError
    from cfruntime.network.torch_import import UnsupportedModuleError

    unknown = RuleProof("t", "Relu", "unknown", "timed out", 3, 5, 1.0, 20.0)
    refuted = RuleProof("t", "Relu", "counterexample", "violates 'curr[u] >= curr'", 7, 9, 1.0, 20.0)
    ex = {
        CfError: [CfError(Loc("a.cf", 3, 14), "unknown name 'x'"), CfError(Loc("a.cf", 0, 0), "empty file"),
                  CfError(Loc("", 0, 0), "no source")],
        IRError: [IRError(Loc("a.mlir", 2, 3), "'cf.add' op bad"), IRError(None, "bad module", file="a.mlir")],
        ShapeAnalysisError: [ShapeAnalysisError(Loc("a.cf", 6, 17), "not supported")],
        EmitError: [EmitError(None, "no Python emission for 'cftensor.flow'")],  # located: test_located_errors.py
        FragmentError: [FragmentError(Loc("a.cf", 7, 12), "lp")],
        UnsoundCertifierError: [UnsoundCertifierError("my.cf", refuted)],
        UnprovedCertifierError: [UnprovedCertifierError(Proof("my.cf", rules=[unknown]))],
        E.CfRuntimeError: [E.CfRuntimeError("bad", file="f.csv", line=3), E.CfRuntimeError("bad", file="f.csv"),
                           E.CfRuntimeError("bad")],
        E.NetworkError: [E.NetworkError("not an ONNX model", file="n.onnx")],
        E.UnsupportedOpError: [E.UnsupportedOpError("Sign", "s1", file="n.onnx")],
        E.UnsupportedOpsError: [E.UnsupportedOpsError([("Sin", "a", 1, "op"), ("Cos", "b", 2, "op")], file="n.onnx")],
        E.DataError: [E.DataError("bad row", file="d.csv", line=2)],
        E.PropertyError: [E.PropertyError("no box", file="p.vnnlib")],
        E.VnnlibError: [E.VnnlibError("unbalanced parenthesis", file="p.vnnlib", line=4)],
        E.RuleError: [E.RuleError("member read before it is computed"),
                      E.RuleError("member read before it is computed").located("s.cf:9:13: rule 'Relu' (layer 2)")],
        LoopLimitError: [LoopLimitError("a traverse loop ran more than 100000 iterations")],
        NonFiniteBoundsError: [NonFiniteBoundsError("layer 2 (relu): NaN lower bound", file="n.onnx", layer=2)],
        EngineError: [EngineError("certifier 'c' has no rule for 'Relu' (layer 2)")],
        EngineOutOfMemory: [EngineOutOfMemory(4, "margins", 16, 3 * 2 ** 30, "cpu")],
        EnginePastDeadline: [EnginePastDeadline(23, "affine", 2704, 10816, 180.0, 40.0)],
        WideningError: [WideningError("sums of 9 terms: no useful error bound")],
        UnsupportedModuleError: [UnsupportedModuleError("function 'sin'", "sin_1", model="Net")],
        InterpreterError: [InterpreterError("certifier 't' has no rule for 'Relu'")],
        RayError: [RayError("Ray is not installed")],
        RemoteFailure: [RemoteFailure("error: n.onnx: boom on a worker")],
        ArgumentError: [ArgumentError("eps must be in [0, 1], got 2")],
        BoundsError: [BoundsError("eps must be finite")],
        OptimizeError: [OptimizeError("the certifier has no parameters")],
        run_args.UsageError: [run_args.UsageError("--n must be positive, got 0")],
        run_setup.ReportedError: [run_setup.ReportedError("error: d.csv:2: bad row")],
        cf_plot.PlotError: [cf_plot.PlotError("--dpi must be positive, got 0")],
        cf_opt._UsageError: [cf_opt._UsageError("unknown pass 'x'"),
                             cf_opt._UsageError(diagnostic_line("cannot open input file", "x.cf"), bare=True)],
    }
    return {f"{c.__module__}.{c.__qualname__}": v for c, v in ex.items()}


EXAMPLES = _examples()


def test_every_user_error_class_has_an_example() -> None:
    names = {f"{c.__module__}.{c.__qualname__}" for c in _all_user_error_classes()}
    missing = sorted(names - set(EXAMPLES))
    assert not missing, f"user error classes without an example in this test: {missing}"


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_one_line_in_the_one_format(name: str) -> None:
    from cfmlir.tools.run_setup import error_line

    for err in EXAMPLES[name]:
        assert isinstance(err, UserError)
        line = err.diagnostic
        assert LINE.match(line), f"{name}: {line!r}"
        assert line.count("error:") == 1, line
        assert error_line(err) == line  # what cf-run prints is that line


@pytest.mark.parametrize("name", [n for n in sorted(EXAMPLES) if "CfError" in n or "UnsoundCertifier" in n
                                  or n.endswith(("IRError", "ShapeAnalysisError", "FragmentError"))])
def test_errors_with_a_source_position_are_located(name: str) -> None:
    err = EXAMPLES[name][0]
    assert LOCATED.match(err.diagnostic), err.diagnostic


def test_the_formatter() -> None:
    assert diagnostic_line("x  \n y", "a.cf", 3, 4) == "error: a.cf:3:4: x y"
    assert diagnostic_line("x", "d.csv", 2) == "error: d.csv:2: x"
    assert diagnostic_line("x", "d.csv", 0, 0) == "error: d.csv: x"
    assert diagnostic_line("x") == "error: x"
