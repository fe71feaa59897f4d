"""One-line diagnostics for everything the frontend reports to a user.

Every error the compiler reports about a user's input is a :class:`CfError`.  Its ``str()`` is the
complete one-line message in the conventional compiler format::

    error: certifiers/bad.cf:3:14: unknown name 'prevv'

(``error: file: ...`` when the problem has no position, ``error: ...`` when it has no file: the one
format of every user error, ``cfruntime.errors.diagnostic_line``.)

A :class:`CfError` is a :class:`cfruntime.errors.UserError`, the root of every user-facing error:
tools catch that root, print its ``diagnostic`` (here ``str(err)``) to stderr and exit with status 1;
they never show a Python traceback for bad input.
"""

from __future__ import annotations

from dataclasses import dataclass

from cfruntime.errors import UserError, diagnostic_line


@dataclass(frozen=True)
class Loc:
    """A source position: file name, 1-based line and 1-based column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


def loc_of(op, fallback: Loc = UNKNOWN_LOC) -> Loc:
    """The source position of an xDSL op: its own ``FileLineColLoc``, else that of its nearest
    enclosing op that has one (a rule, a function), else ``fallback``."""
    from xdsl.dialects.builtin import FileLineColLoc

    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return Loc(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return fallback


class CfError(UserError):
    """A user-facing error with a source location; ``str()`` is the one-line diagnostic."""

    def __init__(self, loc: Loc, message: str):
        # Keep the message on one line whatever the caller passed.
        self.loc = loc
        self.message = " ".join(message.split())
        super().__init__(str(self))

    @property
    def diagnostic(self) -> str:
        return str(self)

    def __str__(self) -> str:
        # no file: ``error: msg``; line 0, a whole-file problem (unreadable file, ...): ``error: file: msg``
        return diagnostic_line(self.message, self.loc.file or None, self.loc.line, self.loc.col)
