"""``cf-opt``: the cfmlir optimizer driver (an ``xDSLOptMain``).

Usage::

    cf-opt certifier.cf                      # frontend: parse + check + lower + verify, print cf IR
    cf-opt module.mlir                       # parse and verify cf IR, print it again
    cf-opt --certifier deeppoly_3            # a shipped certifier from the registry
    cf-opt - < module.mlir                   # stdin (cf IR; use -f cf for ConstraintFlow source)
    cf-opt x.cf -p pass-a,pass-b -o out.mlir # run passes
    cf-opt x.cf --shape-analysis             # pass flags append to the -p pipeline

The ``builtin``, ``cf`` and ``cftensor`` dialects are registered; note that our ``cf`` is
ConstraintFlow, not xDSL's control-flow dialect.  Passes come from the compiler's registry
(:data:`cfmlir.passes.pipeline.PASSES`), and every registered pass also has a ``--NAME`` flag.

Every error -- ConstraintFlow frontend errors, IR parse errors, verifier errors, failing passes --
prints as exactly one line ``error: file:line:col: message`` (or ``error: file: message`` when no
position is known) on stderr and exits with status 1; never a traceback (set ``CF_OPT_TRACEBACK=1``
to see one for internal errors).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Sequence
from typing import IO

from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from cfmlir.diagnostics import CfError, Loc
from cfmlir.tools.arg_errors import one_line_errors
from cfruntime.errors import UserError, diagnostic_line

def _compiler_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from cfmlir.passes.pipeline import PASSES as COMPILER_PASSES

    return {name: (lambda cls=cls: cls) for name, cls in COMPILER_PASSES.items()}


#: Passes ``cf-opt -p`` knows, by name -> factory of the pass class: the compiler's registry
#: (:data:`cfmlir.passes.pipeline.PASSES`: shape-analysis, the domain rewrites, cse, dce, ...).
PASSES: dict[str, Callable[[], type[ModulePass]]] = _compiler_passes()

#: Command-line flags that append a pass to the pipeline: ``--NAME`` for every registered pass.
PASS_FLAGS: dict[str, str] = {name: name for name in PASSES}


class CfOptMain(xDSLOptMain):
    """``xDSLOptMain`` with the ``cf`` dialect, a ``.cf`` frontend, pass flags and one-line errors."""

    version_format = "cf-opt (cfmlir) built from xdsl version {xdsl_version}"

    def register_all_dialects(self) -> None:
        from cfmlir.dialects.cf import CF

        self.ctx.register_dialect("builtin", lambda: Builtin)
        from cfmlir.dialects.cftensor import CFTensor

        self.ctx.register_dialect("cf", lambda: CF)
        self.ctx.register_dialect("cftensor", lambda: CFTensor)

    def register_all_passes(self) -> None:
        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        from xdsl.targets.mlir import MLIRTarget

        from cfmlir.passes.python_target import PythonTarget

        self.available_targets["mlir"] = lambda: MLIRTarget
        self.available_targets["python"] = lambda: PythonTarget

    def register_all_frontends(self) -> None:
        from cfmlir.frontend import LocatingParser, compile_to_cf, verify_module

        def parse_mlir(f: IO[bytes]) -> ModuleOp:
            name = self.get_input_name()
            module = LocatingParser(self.ctx, f.read(), name).parse_module(not self.args.no_implicit_module)
            if not self.args.disable_verify:
                verify_module(module, name)
            return module

        def parse_cf(f: IO[bytes]) -> ModuleOp:
            name = self.get_input_name()
            data = f.read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                from cfmlir.diagnostics import Loc

                raise CfError(Loc(name, 0, 0), f"cannot read file: {exc}") from None
            return compile_to_cf(text, name)

        self.available_frontends["mlir"] = parse_mlir
        self.available_frontends["cf"] = parse_cf

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        one_line_errors(arg_parser, "cf-opt")
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--certifier", metavar="NAME", default=None,
            help="compile the shipped certifier NAME (ibp, deeppoly, deeppoly_3, ...) instead of an input file",
        )
        for flag, pass_name in PASS_FLAGS.items():
            arg_parser.add_argument(
                f"--{flag}", dest="flag_passes", action="append_const", const=pass_name,
                help=f"run the '{pass_name}' pass (appended to the -p pipeline)",
            )

    def setup_pipeline(self) -> None:
        extra = list(getattr(self.args, "flag_passes", None) or [])
        for name in extra:
            if name not in self.available_passes:
                raise _UsageError(f"the pass '{name}' is not available in this build of cf-opt")
        if extra:
            self.args.passes = ",".join([p for p in [self.args.passes] if p] + extra)
        for spec in (self.args.passes or "").split(","):
            name = spec.split("{")[0].strip()
            if name and name not in self.available_passes:
                raise _UsageError(f"unknown pass '{name}' (cf-opt --help lists the passes)")
        super().setup_pipeline()

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.certifier is not None:
            from cfmlir.certifiers import certifier_source

            if self.args.input_file is not None:
                raise _UsageError("give either an input file or --certifier, not both")
            try:
                text, _ = certifier_source(self.args.certifier)
            except (KeyError, ValueError):
                from cfmlir.certifiers import certifier_names

                raise _UsageError(
                    f"unknown certifier '{self.args.certifier}' (known: {', '.join(certifier_names())})"
                ) from None
            return io.BytesIO(text.encode("utf-8")), "cf"
        if self.args.input_file == "-":
            return sys.stdin.buffer, "mlir"
        if self.args.input_file is not None and not os.path.isfile(self.args.input_file):
            raise _UsageError(diagnostic_line("cannot open input file", self.args.input_file), bare=True)
        return super().get_input_stream()

    def prepare_output(self) -> IO[str]:
        """The ``-o`` file, opened before any work; a file that cannot be written is one line."""
        try:
            return super().prepare_output()
        except OSError as exc:
            raise _UsageError(diagnostic_line(f"cannot write the output file ({exc.strerror or exc})",
                                              self.args.output_file), bare=True) from None

    def get_input_name(self) -> str:
        if self.args.certifier is not None:
            from cfmlir.certifiers import certifier_source

            try:
                return certifier_source(self.args.certifier)[1]
            except (KeyError, ValueError):
                return f"{self.args.certifier}.cf"
        if self.args.input_file in (None, "-"):
            return "<stdin>"
        return self.args.input_file

    #: the number of lines before the chunk being processed (``--split-input-file``)
    _line_offset: int = 0

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        self._line_offset = start_offset
        try:
            return super().parse_chunk(chunk, file_extension, start_offset)
        except CfError as err:
            raise self._diagnostic(err) from None

    def apply_passes(self, prog: ModuleOp) -> None:
        from cfmlir.frontend import locate_verify_error

        try:
            super().apply_passes(prog)
        except VerifyException as err:
            raise self._diagnostic(locate_verify_error(prog, err, self.get_input_name())) from None
        except CfError as err:
            raise self._diagnostic(err) from None

    def _diagnostic(self, err: CfError) -> Exception:
        """``err`` with its line counted from the start of the file (not of the ``--split-input-file`` chunk);
        under ``--verify-diagnostics`` as xDSL's ``DiagnosticException``, which xDSL prints on the output and
        goes on with the next chunk, as it does for its own diagnostics."""
        if self._line_offset and err.loc.line > 0:
            err.loc = Loc(err.loc.file, err.loc.line + self._line_offset, err.loc.col)
            err.args = (str(err),)
        if self.args.verify_diagnostics:
            return DiagnosticException(err.diagnostic)
        return err


class _UsageError(UserError):
    """A bad command line: ``error: ...`` (or the message as is, when ``bare``)."""

    def __init__(self, message: str, bare: bool = False):
        super().__init__(message)
        self.bare = bare

    def line(self) -> str:
        return str(self) if self.bare else diagnostic_line(str(self))

    @property
    def diagnostic(self) -> str:
        return self.line()


def _error_line(err: BaseException, file: str) -> str:
    from cfmlir.frontend import parse_error_to_cf

    if isinstance(err, UserError):  # CfError (located), _UsageError
        return err.diagnostic
    if isinstance(err, ParseError):
        return str(parse_error_to_cf(err, file))
    msg = " ".join(str(err.args[0] if err.args else err).split())
    if isinstance(err, DiagnosticException):
        return diagnostic_line(msg, file)
    if isinstance(err, ValueError) and msg.startswith("Unrecognized file extension"):
        return diagnostic_line(f"{msg} (cf-opt reads .cf and .mlir; use -f cf or -f mlir)", file)
    return diagnostic_line(f"internal error: {type(err).__name__}: {msg}", file)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cf-opt`` console script; returns (and exits with) the status."""
    file = "<input>"
    try:
        opt = CfOptMain(description="cfmlir optimizer driver for the cf (ConstraintFlow) dialect", args=argv)
        file = opt.get_input_name()
        opt.run()
    except SystemExit as exc:  # argparse and --version
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if argv is None:
            sys.exit(code)
        return code
    except BrokenPipeError:  # e.g. cf-opt x.cf | head
        return 0
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        if os.environ.get("CF_OPT_TRACEBACK") and not isinstance(err, (UserError, ParseError)):
            raise
        print(_error_line(err, file), file=sys.stderr)
        if argv is None:
            sys.exit(1)
        return 1
    if argv is None:
        sys.exit(0)
    return 0


if __name__ == "__main__":  # pragma: no cover
    main()
