"""The ConstraintFlow frontend: source text -> verified ``cf`` module.

:func:`compile_to_cf` parses, type-checks, lowers to the ``cf`` dialect and verifies.  Every user
error is a :class:`~cfmlir.diagnostics.CfError` whose ``str()`` is one line
``error: file:line:col: message``.  :func:`verify_module` is the verifier entry point shared with
``cf-opt``: it turns an xDSL ``VerifyException`` into a one-line :class:`IRError` located at the
failing op (``error: file:line:col: 'cf.add' op ...``, or ``error: file: ...`` when the op has no
location).
"""

from __future__ import annotations

import re

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.mlir_lexer import MLIRLexer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from cfmlir.diagnostics import CfError, Loc
from cfruntime.errors import diagnostic_line


class IRError(CfError):
    """A one-line error about ``cf`` IR (a verifier failure); the location may be unknown."""

    def __init__(self, loc: Loc | None, message: str, file: str = "<input>"):
        self.file = file
        self.has_loc = loc is not None
        super().__init__(loc if loc is not None else Loc(file, 0, 0), message)

    def __str__(self) -> str:
        if self.has_loc:
            return super().__str__()
        return diagnostic_line(self.message, self.file)


_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class LocatingParser(Parser):
    """An xDSL parser that gives every op without an explicit ``loc(...)`` the location where its
    text starts, so verifier errors on parsed IR can say ``file:line:col``."""

    def __init__(self, ctx: Context, input: str | bytes, name: str = "<unknown>"):
        # Work around catastrophic backtracking in xDSL 0.74's string-literal regex: an unterminated
        # string literal makes ``"(?:[^"...]+|...)*"`` exponential in the rest of the line (cf-opt hangs
        # on ``cf.access %n["l] : ...``).  The same language without the nested quantifier is linear.
        # Installed on the class only while the first token is lexed, then on this lexer instance.
        original = MLIRLexer._unescaped_characters_regex  # noqa: SLF001
        MLIRLexer._unescaped_characters_regex = _STRING_LITERAL  # noqa: SLF001
        try:
            super().__init__(ctx, input, name)
        finally:
            MLIRLexer._unescaped_characters_regex = original  # noqa: SLF001
        self.lexer._unescaped_characters_regex = _STRING_LITERAL  # noqa: SLF001

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            where = start.get_location()
            op.location = FileLineColLoc(StringAttr(where.file), IntAttr(where.line), IntAttr(where.col))
        return op


def parse_error_to_cf(err: ParseError, file: str) -> CfError:
    """The one-line form of an xDSL parse error."""
    try:
        where = err.span.get_location()
        loc = Loc(where.file or file, where.line, where.col)
    except Exception:  # pragma: no cover - defensive
        return IRError(None, _one_line(err.msg), file)
    return CfError(loc, _one_line(err.msg))


def op_loc(op: Operation) -> Loc | None:
    """The source location of ``op`` when it has a ``FileLineColLoc``."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return Loc(loc.filename.data, loc.line.data, loc.column.data)
    return None


def _one_line(msg: str) -> str:
    # xDSL appends the whole printed module as a note; keep only the message itself.
    return " ".join(str(msg).split())


def locate_verify_error(module: ModuleOp, err: Exception, file: str) -> IRError:
    """The one-line error for a verifier failure ``err`` of ``module``: re-verify op by op (nested
    ops first, like xDSL) to find the failing op and its location."""
    for op in module.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as e:
            return IRError(op_loc(op), f"'{op.name}' op {_one_line(e.args[0] if e.args else e)}", file)
        except Exception:  # pragma: no cover - malformed IR that xDSL itself cannot check
            continue
    return IRError(None, _one_line(err.args[0] if err.args else err), file)


def verify_module(module: ModuleOp, file: str = "<input>") -> None:
    """Verify ``module``; raise a one-line :class:`IRError` on failure."""
    try:
        module.verify()
    except DiagnosticException as err:
        raise locate_verify_error(module, err, file) from None


def cf_context() -> Context:
    """An xDSL context with exactly the dialects ``cf`` IR uses (``builtin`` and ``cf``)."""
    from cfmlir.dialects.cf import CF

    ctx = Context()
    ctx.register_dialect("builtin", lambda: Builtin)
    ctx.register_dialect("cf", lambda: CF)
    return ctx


def compile_to_cf(text: str, file: str = "<input>") -> ModuleOp:
    """Parse, type-check, lower and verify ConstraintFlow source.  Raises :class:`CfError`."""
    from cfmlir.lowering.ast_to_cf import lower_program
    from cfmlir.syntax.parser import parse
    from cfmlir.typing.checker import check

    module = lower_program(check(parse(text, file)))
    verify_module(module, file)
    return module


def compile_certifier(name: str) -> ModuleOp:
    """The verified ``cf`` module of a shipped certifier (``ibp``, ``deeppoly_3``...)."""
    from cfmlir.certifiers import certifier_source

    text, file = certifier_source(name)
    return compile_to_cf(text, file)


def print_module(module: ModuleOp, **printer_options) -> str:
    """The custom-format text of a module (what ``cf-opt`` prints)."""
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out, **printer_options).print_op(module)
    out.write("\n")
    return out.getvalue()


def parse_module(text: str, file: str = "<input>", verify: bool = True) -> ModuleOp:
    """Parse ``cf`` IR text (every op gets a ``FileLineColLoc`` of where it starts) and verify it.
    Raises :class:`CfError` (parse errors and verifier errors, one line each)."""
    try:
        module = LocatingParser(cf_context(), text, file).parse_module()
    except ParseError as e:
        raise parse_error_to_cf(e, file) from None
    except VerifyException as e:  # attribute verifiers run while parsing
        raise IRError(None, _one_line(e), file) from None
    if verify:
        verify_module(module, file)
    return module


__all__ = [
    "IRError", "compile_to_cf", "compile_certifier", "verify_module", "locate_verify_error", "op_loc",
    "cf_context", "print_module", "parse_module", "LocatingParser", "parse_error_to_cf",
]
