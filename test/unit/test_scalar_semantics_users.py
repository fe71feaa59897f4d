"""One scalar semantics (issue 28): the engine's host arithmetic, the reference interpreter, the prover
and the constant folder all take their elementwise functions from ``cfruntime.scalar``; none defines its
own sigmoid, exp, log, division or min/max.  An import-graph check over the source (Python's ``ast``)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from cfruntime import scalar

ROOT = Path(__file__).resolve().parents[2]
USERS = ["runtime/flow/host.py", "cfmlir/interpreter/evaluator.py", "cfmlir/verify/nonlinear.py",
         "cfmlir/verify/operators.py", "passes/rewrite_fold_constants.py"]
OWN_NAMES = {"sigmoid", "_sigmoid", "exp", "_exp", "fexp", "log", "_log", "flog", "_div", "_minmax"}


def _tree(rel: str) -> ast.Module:
    return ast.parse((ROOT / rel).read_text())


@pytest.mark.parametrize("rel", USERS)
def test_user_imports_the_scalar_module(rel: str) -> None:
    imported = {n.module for n in ast.walk(_tree(rel)) if isinstance(n, ast.ImportFrom)}
    assert "cfruntime.scalar" in imported or "cfruntime" in imported and any(
        a.name == "scalar" for n in ast.walk(_tree(rel)) if isinstance(n, ast.ImportFrom) and n.module == "cfruntime"
        for a in n.names), f"{rel} does not import cfruntime.scalar"


@pytest.mark.parametrize("rel", USERS)
def test_user_defines_no_scalar_function_of_its_own(rel: str) -> None:
    own = {n.name for n in _tree(rel).body if isinstance(n, ast.FunctionDef)} & OWN_NAMES
    assert not own, f"{rel} defines {own}: use cfruntime.scalar"


def test_the_rules() -> None:
    assert scalar.BINARY["div"](1.0, 0.0) == math.inf and scalar.BINARY["div"](-1.0, 0.0) == -math.inf
    assert math.isnan(scalar.BINARY["div"](0.0, 0.0))
    assert math.isnan(scalar.BINARY["max"](math.nan, 1.0)) and math.isnan(scalar.BINARY["min"](1.0, math.nan))
    assert scalar.UNARY["exp"](1000.0) == math.inf
    assert scalar.UNARY["log"](0.0) == -math.inf and math.isnan(scalar.UNARY["log"](-1.0))
    assert scalar.sigmoid(-1000.0) == 0.0 and scalar.sigmoid(1000.0) == 1.0


def test_the_folder_and_the_interpreter_agree_with_the_engine() -> None:
    from cfmlir.interpreter import evaluator
    from cfmlir.passes import rewrite_fold_constants as fold
    from cfruntime.flow import host

    assert fold._UNARY["exp"](1000.0) == math.inf  # was an OverflowError in the folder
    assert math.isnan(fold._BINARY["max"](math.nan, 1.0))  # was Python's max: 1.0
    assert evaluator.fexp(1000.0) == host.unary("exp", 1000.0) == math.inf
