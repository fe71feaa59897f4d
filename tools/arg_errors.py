"""Command-line usage errors as the tools' other errors: one ``error:`` line and exit status 1
(argparse's own is a usage block and status 2)."""

from __future__ import annotations

import argparse
import sys
import types


def _one_line_error(parser: argparse.ArgumentParser, message: str):
    sys.stderr.write(f"error: {parser.prog}: {message} (--help lists the options)\n")
    raise SystemExit(1)


def one_line_errors(parser: argparse.ArgumentParser, prog: str | None = None) -> argparse.ArgumentParser:
    """Make ``parser`` report a bad command line in one line with exit status 1 (as ``prog``)."""
    if prog is not None:
        parser.prog = prog
    parser.error = types.MethodType(_one_line_error, parser)
    return parser
