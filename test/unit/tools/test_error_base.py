"""One root for user errors: :class:`cfruntime.errors.UserError`.  The compiler's located diagnostics, the
runtime's and the interpreter's errors, the compiled engine's and the tools' option errors all derive
from it; ``err.diagnostic`` is the one line a tool prints (the messages are unchanged), and ``cf-run``
reports any of them as that line, never as an internal error.  The runtime package imports no
compiler code for it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cfmlir.diagnostics import CfError, Loc
from cfmlir.distributed import RayError, RemoteFailure, failure_line
from cfmlir.frontend import IRError
from cfmlir.interpreter.errors import InterpreterError
from cfmlir.passes.emit_python import EmitError
from cfmlir.passes.shape_analysis import ShapeAnalysisError
from cfmlir.tools import cf_opt, cf_plot, run_args, run_setup
from cfmlir.api_args import ArgumentError
from cfruntime.errors import CfRuntimeError, DataError, NetworkError, RuleError, UnsupportedOpError, UserError, VnnlibError
from cfruntime.flow.engine import EngineError, EngineOutOfMemory
from cfruntime.flow.ops import LoopLimitError
from cfruntime.flow.widening import WideningError

USER_ERRORS = [CfError, IRError, ShapeAnalysisError, EmitError, CfRuntimeError, NetworkError, UnsupportedOpError,
               DataError, VnnlibError, InterpreterError, RayError, RemoteFailure, EngineError, EngineOutOfMemory,
               WideningError, LoopLimitError, RuleError, ArgumentError, cf_plot.PlotError, run_args.UsageError,
               run_setup.ReportedError, cf_opt._UsageError]


@pytest.mark.parametrize("cls", USER_ERRORS, ids=lambda c: c.__name__)
def test_every_user_error_has_the_one_root(cls):
    assert issubclass(cls, UserError)


@pytest.mark.parametrize("cls", [EngineError, WideningError, LoopLimitError, RuleError], ids=lambda c: c.__name__)
def test_engine_errors_stay_runtime_errors(cls):
    assert issubclass(cls, RuntimeError)  # code that caught them as RuntimeError still does


#: (error, str(), the line cf-run prints)
LINES = [
    (CfError(Loc("a.cf", 3, 14), "unknown name 'prevv'"), "error: a.cf:3:14: unknown name 'prevv'",
     "error: a.cf:3:14: unknown name 'prevv'"),
    (ShapeAnalysisError(Loc("a.cf", 6, 17), "the tensor compiler does not support 'cf.avg' yet"),
     "error: a.cf:6:17: the tensor compiler does not support 'cf.avg' yet",
     "error: a.cf:6:17: the tensor compiler does not support 'cf.avg' yet"),
    (DataError("bad row", file="d.csv", line=2), "error: d.csv:2: bad row", "error: d.csv:2: bad row"),
    (InterpreterError("certifier 't' has no rule for 'Relu'"), "error: certifier 't' has no rule for 'Relu'",
     "error: certifier 't' has no rule for 'Relu'"),
    (RemoteFailure("error: boom  on a worker"), "error: boom on a worker", "error: boom on a worker"),
    (EngineError("certifier 'c' has no rule for 'Relu' (layer 2)"), "certifier 'c' has no rule for 'Relu' (layer 2)",
     "error: certifier 'c' has no rule for 'Relu' (layer 2)"),
    (WideningError("sums of 9 terms: no useful error bound"), "sums of 9 terms: no useful error bound",
     "error: sums of 9 terms: no useful error bound"),
    (LoopLimitError("a traverse loop ran more than 100000 iterations"),
     "a traverse loop ran more than 100000 iterations", "error: a traverse loop ran more than 100000 iterations"),
    (RuleError("shape member 'u' of layer 2 is read before it is computed").located("s.cf:9:13: rule 'Relu' (layer 2, relu)"),
     "s.cf:9:13: rule 'Relu' (layer 2, relu): shape member 'u' of layer 2 is read before it is computed",
     "error: s.cf:9:13: rule 'Relu' (layer 2, relu): shape member 'u' of layer 2 is read before it is computed"),
    (ArgumentError("eps must be in [0, 1] (pixel units), got 2"), "eps must be in [0, 1] (pixel units), got 2",
     "error: eps must be in [0, 1] (pixel units), got 2"),
    (run_args.UsageError("--n must be positive, got 0"), "--n must be positive, got 0", "error: --n must be positive, got 0"),
    (run_setup.ReportedError("error: x.cf:1:1: error: y"), "error: x.cf:1:1: error: y", "error: x.cf:1:1: error: y"),
    (cf_plot.PlotError("--dpi must be positive, got 0"), "--dpi must be positive, got 0",
     "error: --dpi must be positive, got 0"),
]


@pytest.mark.parametrize("err, text, line", LINES, ids=lambda x: type(x).__name__ if isinstance(x, Exception) else "")
def test_messages_and_reported_lines(err, text, line):
    assert str(err) == text
    assert err.diagnostic == line
    assert run_setup.error_line(err) == line
    assert not run_setup.is_internal_error(err)


def test_out_of_memory_message_is_unchanged():
    e = EngineOutOfMemory(4, "margins", 16, 3 * 2 ** 30, "cpu")
    assert str(e) == "out of cpu memory at layer 4 (margins): it needed 3.00 GiB more for a batch of 16"
    assert run_setup.error_line(e) == "error: " + str(e)


def test_other_exceptions_are_internal_errors():
    e = ValueError("bug")
    assert run_setup.is_internal_error(e)
    assert run_setup.error_line(e) == "error: internal error (ValueError): bug (set CF_RUN_TRACEBACK=1 for details)"
    assert not run_setup.is_internal_error(OSError(2, "No such file", "x.onnx"))


def test_a_ray_task_carries_the_line_back():
    assert str(failure_line(EngineError("no rule"))) == "error: no rule"
    assert str(failure_line(CfError(Loc("a.cf", 1, 2), "bad"))) == "error: a.cf:1:2: bad"
    assert str(failure_line(KeyError("k"))).startswith("error: internal error on a Ray worker (KeyError)")


def test_cf_opt_reports_user_errors_as_their_line():
    assert cf_opt._error_line(ShapeAnalysisError(Loc("a.cf", 2, 3), "m"), "a.cf") == "error: a.cf:2:3: m"
    assert cf_opt._error_line(cf_opt._UsageError("unknown pass 'x'"), "a.cf") == "error: unknown pass 'x'"


def test_runtime_errors_import_no_compiler_code():
    code = ("import sys, cfruntime.errors; bad = [m for m in sys.modules if m.split('.')[0] in ('cfmlir', 'xdsl')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
