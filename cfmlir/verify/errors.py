"""The one error of the verifier: a spec outside the fragment ``cf-verify`` can encode (exit status 2)."""

from __future__ import annotations

from cfmlir.diagnostics import CfError, Loc


class FragmentError(CfError):
    """A construct the bounded verifier cannot encode (``lp``, an unsupported builtin, ...).

    ``str()`` is one line naming the construct and its location, e.g.
    ``my.cf:7:12: error: cf-verify cannot encode 'lp' (outside the verifier's fragment)``.
    """

    def __init__(self, loc: Loc, construct: str, why: str = "outside the verifier's fragment"):
        self.construct = construct
        super().__init__(loc, f"cf-verify cannot encode {construct} ({why})")
