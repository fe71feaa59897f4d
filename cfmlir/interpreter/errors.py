"""Errors of the reference interpreter.

:class:`InterpreterError` is a :class:`cfruntime.errors.CfRuntimeError` (so a user error,
:class:`cfruntime.errors.UserError`): ``str()`` is a one-line ``error: ...`` message that ``cf-run``
prints as is (no traceback).
"""

from __future__ import annotations

from cfruntime.errors import CfRuntimeError


class InterpreterError(CfRuntimeError):
    """A certifier that cannot be run on a network (missing rule, unset member, runaway traverse...)."""
