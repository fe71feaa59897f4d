"""``cf-verify``: bounded proofs that a certifier's transformer rules are sound.

::

    from cfmlir.verify import verify_source, verify_certifier
    results = verify_certifier("deeppoly", K=2, M=2, timeout=60)   # shipped name or .cf path
    for r in results: print(r.line())      # 'deeppoly.Relu: verified (K=2, M=2)  [0.02 s]'

A rule is *verified* when, for every world of at most ``K`` previous neurons / polyhedral summands and
``M`` noise symbols in which the previous neurons' shapes satisfy the shape constraints, the new
shape satisfies them for the value the network computes (:mod:`cfmlir.verify.rules`).  Polynomial
claims are decided by z3 (:mod:`cfmlir.verify.solve`); claims that apply sigmoid, tanh, exp or log
by a delta-complete procedure (:mod:`cfmlir.verify.delta`).  A *counterexample* has been replayed
through the reference interpreter (:mod:`cfmlir.verify.replay`).  A spec outside the fragment raises
:class:`~cfmlir.verify.errors.FragmentError`.  See ``docs/proving.md``.
"""

from __future__ import annotations

from pathlib import Path

from cfmlir.verify.errors import FragmentError
from cfmlir.verify.rules import COUNTEREXAMPLE, UNKNOWN, VERIFIED, RuleResult, verify_rule

#: Changes whenever the prover's answers may change (a cached proof from another version is stale).
PROVER_VERSION = "2025.11-delta-6"

__all__ = ["verify_source", "verify_checked", "verify_certifier", "exit_status", "FragmentError", "RuleResult",
           "VERIFIED", "COUNTEREXAMPLE", "UNKNOWN", "PROVER_VERSION"]


def verify_source(text: str, file: str = "<input>", *, K: int = 2, M: int = 2, timeout: float = 60.0,
                  ops: set[str] | None = None, progress=None) -> list[RuleResult]:
    """Verify every rule of every transformer of a ConstraintFlow source (``timeout`` per rule,
    building the rule's problem included).  Raises the parser's/checker's ``CfError`` for a bad
    spec and :class:`FragmentError` for a rule the verifier cannot encode (also for one nested too
    deeply for it)."""
    from cfmlir.syntax.parser import parse
    from cfmlir.typing.checker import check

    return verify_checked(check(parse(text, file)), K=K, M=M, timeout=timeout, ops=ops, progress=progress)


def verify_checked(checked, *, K: int = 2, M: int = 2, timeout: float = 60.0, ops: set[str] | None = None,
                   progress=None) -> list[RuleResult]:
    """:func:`verify_source` on an already type-checked program."""
    out = []
    for tname, tdecl in checked.transformers.items():
        for rule in tdecl.rules:
            if ops is not None and rule.op not in ops:
                continue
            try:
                r = verify_rule(checked, tname, rule, K, M, timeout)
            except RecursionError:
                raise FragmentError(rule.loc, f"the {rule.op} rule of '{tname}'",
                                    "its expressions are nested too deeply for the verifier") from None
            out.append(r)
            if progress is not None:
                progress(r)
    return out


def verify_certifier(name_or_path: str, **kw) -> list[RuleResult]:
    from cfmlir.certifiers import certifier_names, certifier_source

    s = str(name_or_path)
    if s in certifier_names():
        text, file = certifier_source(s)
    else:
        p = Path(s)
        text, file = p.read_text(encoding="utf-8"), str(p)
    return verify_source(text, file, **kw)


def exit_status(results: list[RuleResult]) -> int:
    """0: all verified; 1: some counterexample; 3: none, but some rule unknown."""
    if any(r.status == COUNTEREXAMPLE for r in results):
        return 1
    if any(r.status == UNKNOWN for r in results):
        return 3
    return 0
