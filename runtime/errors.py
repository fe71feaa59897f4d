"""User-facing errors.

:class:`UserError` is the root of every error a tool reports to a user as one line, without a
traceback: the compiler's located diagnostics (``cfmlir.diagnostics.CfError``), the runtime's
:class:`CfRuntimeError`, the compiled engine's errors (``EngineError``, ``WideningError``,
``LoopLimitError``) and the tools' option errors.  ``str(err)`` is its one-line message;
``err.diagnostic`` is the line a tool prints (``error: `` and the message, unless the message is
already a complete diagnostic, as those of :class:`CfRuntimeError` and ``CfError`` are).  Tools catch
:class:`UserError`; anything else is an internal error.

Every error the runtime raises for bad user input (a network file, a CSV
file, a VNN-LIB file, a bad option value) is a :class:`CfRuntimeError`.
``str(err)`` is the complete one-line message that ``cf-run`` prints before
exiting with a non-zero status, in the one format of every user error (:func:`diagnostic_line`)::

    error: <file>:<line>:<col>: <what>  (a compiler diagnostic: line and column known)
    error: <file>:<line>: <what>        (when a line is known)
    error: <file>: <what>               (when only a file is known)
    error: <what>                       (otherwise)

The pieces stay available as attributes (``file``, ``line``, ``what``).
"""

from __future__ import annotations

from pathlib import Path


def diagnostic_line(what: str, file: str | Path | None = None, line: int | None = None,
                    col: int | None = None) -> str:
    """The one line every user error prints: ``error: FILE:LINE:COL: what``, ``error: FILE:LINE: what``,
    ``error: FILE: what`` or ``error: what`` (whatever is known; ``what`` folded onto one line)."""
    loc = ""
    if file is not None:
        loc = str(file)
        if line is not None and line > 0:
            loc += f":{line}" + (f":{col}" if col is not None and col > 0 else "")
        loc += ": "
    elif line is not None and line > 0:
        loc = f"<input>:{line}: "
    return f"error: {loc}{' '.join(str(what).split())}"


class UserError(Exception):
    """The root of the user-facing errors; ``str()`` is the one-line message (see the module docstring):
    raise it with one line."""

    @property
    def diagnostic(self) -> str:
        """The one line a tool prints for this error."""
        return f"error: {self}"


class CfRuntimeError(UserError):
    """Base class of the runtime's input errors; ``str()`` is the one-line user-facing message,
    ``error: ...`` included."""

    def __init__(self, what: str, *, file: str | Path | None = None, line: int | None = None):
        self.what = " ".join(str(what).split())  # force a single line
        self.file = None if file is None else str(file)
        self.line = line
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return diagnostic_line(self.what, self.file, self.line)

    def __str__(self) -> str:
        return self.message

    @property
    def diagnostic(self) -> str:
        return self.message


class RuleError(UserError, RuntimeError):
    """A certifier's rule that cannot run on a network, whatever the input: it reads a shape member before
    computing it, or its traverse never ends.  The compiled engine's runtime raises it without a position;
    the engine adds the rule's (``file:line:col: rule 'Relu' (layer 2, relu)``, :meth:`located`), as the
    reference interpreter names the position of the read or the traverse."""

    def __init__(self, what: str, where: str | None = None):
        self.what = " ".join(str(what).split())
        self.where = where
        super().__init__(f"{where}: {self.what}" if where else self.what)

    def located(self, where: str) -> "RuleError":
        """The same error at ``where`` (the rule that failed)."""
        return type(self)(self.what, where)


class NetworkError(CfRuntimeError):
    """A network file that cannot be read or interpreted."""


class UnsupportedOpError(NetworkError):
    """An ONNX operator (or operator configuration) the loader does not support."""

    def __init__(self, op: str, node: str, *, file: str | Path | None = None, detail: str | None = None):
        self.op = op
        self.node = node
        what = f"unsupported ONNX op '{op}' at node '{node}'"
        if detail:
            what += f" ({detail})"
        super().__init__(what, file=file)


class UnsupportedOpsError(UnsupportedOpError):
    """Every ONNX op type of a model the loader refuses, listed at once: ``refused`` is a list of
    ``(op, first node, node count, why)``; ``op``/``node`` are the first's.  One op on one node reads
    as :class:`UnsupportedOpError`'s line; several: ``unsupported ONNX ops: 'Sin' at node 'a', 'Cos'
    at node 'b' (and 4 more nodes), ...``."""

    def __init__(self, refused: list, *, file: str | Path | None = None):
        self.refused = list(refused)
        op, node = self.refused[0][0], self.refused[0][1]

        def one(op, node, count, why):
            more = f" (and {count - 1} more node{'s' if count > 2 else ''})" if count > 1 else ""
            where = f" ({why})" if why.startswith("domain") or why == "on constants" else ""
            return f"'{op}' at node '{node}'{more}{where}"

        if len(self.refused) == 1:
            UnsupportedOpError.__init__(self, op, node, file=file)
            r = self.refused[0]
            if r[2] > 1 or r[3].startswith("domain") or r[3] == "on constants":
                NetworkError.__init__(self, "unsupported ONNX op " + one(*r), file=file)
        else:
            self.op, self.node = op, node
            NetworkError.__init__(self, "unsupported ONNX ops: " + ", ".join(one(*r) for r in self.refused), file=file)


class DataError(CfRuntimeError):
    """A malformed data file (e.g. an ERAN CSV row)."""


class PropertyError(CfRuntimeError):
    """A bad property specification (negative epsilon, shape mismatch, ...)."""


class VnnlibError(PropertyError):
    """A malformed VNN-LIB file."""
