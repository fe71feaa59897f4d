"""One-line diagnostics for everything the frontend reports to a user.

Every error the compiler reports about a user's input is a :class:`CfError`.  Its ``str()`` is the
complete one-line message in the conventional compiler format::

    certifiers/bad.cf:3:14: error: unknown name 'prevv'

(``file: error: ...`` when the problem has no position, ``error: ...`` when it has no file.)

Tools catch :class:`CfError`, print ``str(err)`` to stderr and exit with status 1; they never show a
Python traceback for bad input.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A source position: file name, 1-based line and 1-based column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


class CfError(Exception):
    """A user-facing error with a source location; ``str()`` is the one-line diagnostic."""

    def __init__(self, loc: Loc, message: str):
        # Keep the message on one line whatever the caller passed.
        self.loc = loc
        self.message = " ".join(message.split())
        super().__init__(str(self))

    def __str__(self) -> str:
        if not self.loc.file:
            return f"error: {self.message}"
        if self.loc.line <= 0:  # a whole-file problem (unreadable file, ...): no position to show
            return f"{self.loc.file}: error: {self.message}"
        return f"{self.loc}: error: {self.message}"
