"""The verifier's errors: a spec outside the fragment ``cf-verify`` can encode (exit status 4), and
the deadline of one rule passing while its problem is built or solved (the rule is then unknown)."""

from __future__ import annotations

import time

from cfmlir.diagnostics import CfError, Loc


class FragmentError(CfError):
    """A construct the bounded verifier cannot encode (``lp``, an unsupported builtin, ...).

    ``str()`` is one line naming the construct and its location, e.g.
    ``error: my.cf:7:12: cf-verify cannot encode 'lp' (outside the verifier's fragment)``.
    """

    def __init__(self, loc: Loc, construct: str, why: str = "outside the verifier's fragment"):
        self.construct = construct
        super().__init__(loc, f"cf-verify cannot encode {construct} ({why})")


class RuleTimeout(Exception):
    """The rule's time limit passed (raised by :meth:`cfmlir.verify.world.World.check`)."""


class Deadline:
    """A rule's deadline (``time.perf_counter()`` seconds); ``check()`` raises :class:`RuleTimeout` after it."""

    def __init__(self, at: float = float("inf")):
        self.at = at

    def check(self) -> None:
        if time.perf_counter() > self.at:
            raise RuleTimeout()


#: The deadline of the rule being built (set by :func:`cfmlir.verify.rules.verify_rule`), checked
#: by loops that do not see the world (:func:`cfmlir.verify.values.lin` over ``K`` summands).
ACTIVE = Deadline()


def check_active() -> None:
    ACTIVE.check()
