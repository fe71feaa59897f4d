"""``cf-verify SPEC [--nprev K] [--nsym M] [--timeout S] [--json OUT]``: prove a certifier's rules sound.

Prints one line per rule (``verified (K=2, M=2)``, ``counterexample: ...`` or ``unknown (...)``).
Exit status: 0 every rule verified, 1 some rule has a counterexample, 3 none has but some rule is
unknown, 2 the spec is outside the verifier's fragment or cannot be read/parsed (one error line).
SPEC is a shipped certifier name (``deeppoly``) or a ``.cf`` file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from cfmlir.tools.arg_errors import one_line_errors


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cf-verify", description="Bounded soundness proofs of a ConstraintFlow certifier's rules (z3)")
    p.add_argument("spec", help="shipped certifier name or path to a .cf file")
    p.add_argument("--nprev", type=int, default=2, metavar="K", help="previous neurons / polyhedral summands (default 2)")
    p.add_argument("--nsym", type=int, default=2, metavar="M", help="shared noise symbols of zonotopes (default 2)")
    p.add_argument("--timeout", type=float, default=20.0, metavar="S", help="seconds per rule (default 20)")
    p.add_argument("--rule", action="append", default=None, metavar="OP", help="verify only this operator's rule (repeatable)")
    p.add_argument("--json", default=None, metavar="OUT", help="write the results as JSON to OUT")
    return one_line_errors(p)


def main(argv: Sequence[str] | None = None) -> int:
    code = _main(argv)
    if argv is None:
        sys.exit(code)
    return code


def _main(argv) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    if args.nprev < 1 or args.nsym < 0 or args.timeout <= 0:
        print("error: cf-verify: --nprev must be >= 1, --nsym >= 0 and --timeout > 0", file=sys.stderr)
        return 2
    from cfmlir.certifiers import certifier_names, certifier_source
    from cfmlir.diagnostics import CfError
    from cfmlir.verify import exit_status, verify_source

    if args.spec in certifier_names():
        text, file = certifier_source(args.spec)
    else:
        p = Path(args.spec)
        try:
            text, file = p.read_text(encoding="utf-8"), str(p)
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{args.spec}: error: cannot read the spec ({exc.__class__.__name__}: {exc}); "
                  f"shipped certifiers: {', '.join(certifier_names())}", file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    try:
        results = verify_source(text, file, K=args.nprev, M=args.nsym, timeout=args.timeout,
                                ops=set(args.rule) if args.rule else None,
                                progress=lambda r: print(r.line(), flush=True))
    except CfError as err:
        print(str(err), file=sys.stderr)
        return 2
    code = exit_status(results)
    print(f"{sum(r.status == 'verified' for r in results)} verified, "
          f"{sum(r.status == 'counterexample' for r in results)} counterexample(s), "
          f"{sum(r.status == 'unknown' for r in results)} unknown in {time.perf_counter() - t0:.1f} s "
          f"(K={args.nprev}, M={args.nsym})")
    if args.json:
        data = {"spec": file, "K": args.nprev, "M": args.nsym, "timeout_s": args.timeout, "exit_status": code,
                "rules": [{"transformer": r.transformer, "op": r.op, "status": r.status, "detail": r.detail,
                           "seconds": round(r.seconds, 3), "obligations": r.obligations} for r in results]}
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
