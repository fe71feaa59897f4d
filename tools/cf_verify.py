"""``cf-verify SPEC [--nprev K] [--nsym M] [--timeout S] [--rule OP] [--json OUT]``: prove a certifier's rules sound.

Prints one line per rule (``verified (K=2, M=2)``, ``counterexample: ...`` or ``unknown (...)``),
then a summary line.  SPEC is a shipped certifier name (``deeppoly``) or a ``.cf`` file.

Exit status (each meaning its own code; every error is one ``error:`` line on stderr, never a
traceback):

  0  every rule verified
  1  some rule has a counterexample (replayed through the reference interpreter)
  2  usage error: a bad command line, an option value out of range (``--timeout nan``), a ``--rule``
     the spec has no rule for, a ``--json`` file that cannot be written
  3  no counterexample, but some rule unknown (its time limit, or undecided)
  4  the spec is outside the verifier's fragment (``lp``, nesting too deep for the verifier, ...)
  5  the spec cannot be read or parsed, or defines no rule to verify
  6  internal error of the verifier (a bug: please report the line)

``--timeout`` bounds every rule, building its problem included.  See ``docs/proving.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Sequence

from cfmlir.tools.arg_errors import one_line_errors

EXIT_VERIFIED, EXIT_COUNTEREXAMPLE, EXIT_USAGE, EXIT_UNKNOWN, EXIT_FRAGMENT, EXIT_SPEC, EXIT_INTERNAL = range(7)
MAX_TIMEOUT_S = 1e6

_EPILOG = """exit status: 0 every rule verified; 1 some counterexample; 2 usage error; 3 some rule unknown;
4 the spec is outside the verifier's fragment; 5 the spec cannot be read or parsed (or has no rule);
6 internal error.  Details: docs/proving.md"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cf-verify", description="Bounded soundness proofs of a ConstraintFlow certifier's rules",
                                epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", help="shipped certifier name or path to a .cf file")
    p.add_argument("--nprev", type=int, default=2, metavar="K", help="previous neurons / polyhedral summands (default 2)")
    p.add_argument("--nsym", type=int, default=2, metavar="M", help="shared noise symbols of zonotopes (default 2)")
    p.add_argument("--timeout", type=float, default=20.0, metavar="S",
                   help="seconds per rule, building its problem included (default 20)")
    p.add_argument("--rule", action="append", default=None, metavar="OP", help="verify only this operator's rule (repeatable)")
    p.add_argument("--json", default=None, metavar="OUT", help="write the results as JSON to OUT")
    return one_line_errors(p)


class _Exit(Exception):
    def __init__(self, code: int, line: str):
        self.code, self.line = code, line


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
    except _Exit as e:
        if e.line:
            print(e.line, file=sys.stderr)
        code = e.code
    except KeyboardInterrupt:
        print("error: cf-verify: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:  # e.g. cf-verify deeppoly | head
        code = 0
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        msg = " ".join(str(err).split())[:300]
        print(f"error: cf-verify: internal error: {type(err).__name__}: {msg}", file=sys.stderr)
        code = EXIT_INTERNAL
    if argv is None:
        sys.exit(code)
    return code


def _options(argv):
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (one line already printed)
        if exc.code in (0, None):
            raise _Exit(0, "") from None
        raise _Exit(EXIT_USAGE, "") from None
    t = args.timeout
    if not (math.isfinite(t) and 0 < t <= MAX_TIMEOUT_S):
        raise _Exit(EXIT_USAGE, f"error: cf-verify: --timeout must be a number of seconds in (0, {MAX_TIMEOUT_S:g}], got {t!r}")
    if args.nprev < 1 or args.nsym < 0:
        raise _Exit(EXIT_USAGE, "error: cf-verify: --nprev must be >= 1 and --nsym >= 0")
    if args.json:
        out = Path(args.json)
        if out.is_dir():
            raise _Exit(EXIT_USAGE, f"error: cf-verify: --json {args.json}: is a folder (give a file name)")
        if not out.parent.is_dir():
            raise _Exit(EXIT_USAGE, f"error: cf-verify: --json {args.json}: the folder {str(out.parent)!r} does not exist")
    return args


def _load(spec: str):
    """``(text, file, checked program)``; exit 5 with one line when it cannot be read or parsed."""
    from cfmlir.certifiers import certifier_names, certifier_source
    from cfmlir.diagnostics import CfError
    from cfmlir.syntax.parser import parse
    from cfmlir.typing.checker import check

    if spec in certifier_names():
        text, file = certifier_source(spec)
    else:
        p = Path(spec)
        try:
            text, file = p.read_text(encoding="utf-8"), str(p)
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise _Exit(EXIT_SPEC, f"error: {spec}: cannot read the spec ({why}); shipped certifiers: "
                                   f"{', '.join(certifier_names())}") from None
    try:
        checked = check(parse(text, file))
    except CfError as err:
        raise _Exit(EXIT_SPEC, str(err)) from None
    except RecursionError:
        raise _Exit(EXIT_SPEC, f"error: {file}: the spec is nested too deeply to read") from None
    return text, file, checked


def _rules_of(checked) -> list[str]:
    return [r.op for t in checked.transformers.values() for r in t.rules]


def _check_selection(args, file: str, checked) -> set[str] | None:
    from cfmlir.verify.operators import OPERATORS

    have = _rules_of(checked)
    if not have:
        raise _Exit(EXIT_SPEC, f"error: {file}: the spec defines no transformer rule to verify")
    if not args.rule:
        return None
    for op in args.rule:
        if op in have:
            continue
        if op not in OPERATORS:
            raise _Exit(EXIT_USAGE, f"error: cf-verify: --rule {op}: no such operator (operators: {', '.join(OPERATORS)})")
        if op not in have:
            raise _Exit(EXIT_USAGE, f"error: {file}: --rule {op}: the spec has no {op} rule (its rules: {', '.join(have)})")
    return set(args.rule)


def _json_safe(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def _main(argv) -> int:
    args = _options(argv)
    from cfmlir.verify import PROVER_VERSION, exit_status, verify_checked
    from cfmlir.verify.errors import FragmentError

    _text, file, checked = _load(args.spec)
    ops = _check_selection(args, file, checked)
    t0 = time.perf_counter()
    try:
        results = verify_checked(checked, K=args.nprev, M=args.nsym, timeout=args.timeout, ops=ops,
                                 progress=lambda r: print(r.line(), flush=True))
    except FragmentError as err:
        raise _Exit(EXIT_FRAGMENT, str(err)) from None
    except RecursionError:
        raise _Exit(EXIT_FRAGMENT, f"error: {file}: cf-verify cannot encode the spec (nested too deeply for the verifier)") from None
    code = exit_status(results)
    print(f"{sum(r.status == 'verified' for r in results)} verified, "
          f"{sum(r.status == 'counterexample' for r in results)} counterexample(s), "
          f"{sum(r.status == 'unknown' for r in results)} unknown in {time.perf_counter() - t0:.1f} s "
          f"(K={args.nprev}, M={args.nsym})")
    if args.json:
        data = {"spec": file, "K": args.nprev, "M": args.nsym, "timeout_s": args.timeout, "exit_status": code,
                "prover_version": PROVER_VERSION,
                "rules": [{"transformer": r.transformer, "op": r.op, "status": r.status, "detail": r.detail,
                           "seconds": round(r.seconds, 3), "obligations": r.obligations} for r in results]}
        try:
            Path(args.json).write_text(json.dumps(_json_safe(data), indent=2, allow_nan=False) + "\n", encoding="utf-8")
        except OSError as exc:
            raise _Exit(EXIT_USAGE, f"error: cf-verify: --json {args.json}: cannot write ({exc.strerror or exc})") from None
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
