"""The pass registry is the one list of passes: every pass class is declared statically (grep finds
it), ``cf-opt`` offers ``-p NAME`` and ``--NAME`` for each, and every pass says what it does."""

from __future__ import annotations

import ast
import inspect

import pytest

from cfmlir.passes.pipeline import ALL_PASSES, DEFAULT_PIPELINE, NO_REWRITE_PIPELINE, PASSES, RewritePass
from cfmlir.tools import cf_opt
from cftest import REPO

ROOT = REPO


def test_registry_names_are_unique_and_pipelines_use_registered_passes():
    assert len(PASSES) == len(ALL_PASSES)
    assert set(DEFAULT_PIPELINE) <= set(PASSES) and set(NO_REWRITE_PIPELINE) <= set(PASSES)


@pytest.mark.parametrize("name", sorted(PASSES))
def test_every_pass_is_a_cf_opt_pass_and_flag(name):
    assert name in cf_opt.PASSES and cf_opt.PASS_FLAGS.get(name) == name
    main = cf_opt.CfOptMain(args=["--certifier", "ibp", f"--{name}"])
    assert name in (main.args.flag_passes or [])


@pytest.mark.parametrize("cls", [p for p in ALL_PASSES if p.__module__.startswith("cfmlir.")], ids=lambda c: c.name)
def test_our_passes_are_statically_declared_and_documented(cls):
    # declared with a class statement in the module it claims (not made by type())
    src = inspect.getsource(inspect.getmodule(cls))
    assert f"class {cls.__name__}(" in src
    assert (cls.__doc__ or "").strip(), f"{cls.__name__} has no docstring"
    if issubclass(cls, RewritePass):
        assert cls.PATTERNS, f"{cls.__name__} applies no pattern"


def test_no_pass_class_is_made_with_type():
    tree = ast.parse((ROOT / "passes" / "pipeline.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "type" and len(n.args) == 3]
    assert not calls


def _lit_run_lines() -> list[str]:
    return [line for path in (ROOT / "test" / "lit").rglob("*") if path.is_file() and path.suffix in (".cf", ".mlir")
            for line in path.read_text().splitlines() if "RUN:" in line and "cf-opt" in line]


@pytest.mark.parametrize("name", sorted(PASSES))
def test_every_registered_pass_has_a_filecheck_test(name):
    """Some lit test runs ``cf-opt`` with the pass by name (``-p ...NAME...`` or ``--NAME``) and checks its output."""
    import re

    flag = re.compile(r"(--" + re.escape(name) + r"\b|-p[ =]\S*\b" + re.escape(name) + r"\b)")
    assert any(flag.search(line) for line in _lit_run_lines()), f"no FileCheck test runs the pass '{name}'"
