"""No dead functions: every module-level function of the packages is referenced somewhere.

A module-level ``def NAME`` in ``cfmlir/``, ``dialects/``, ``passes/``, ``runtime/`` or ``tools/`` must
appear as a word somewhere else: in any Python file of the repository (source, tests, bench, examples),
``pyproject.toml`` (entry points) or the docs.  A function only its own definition names is dead code:
remove it.  (References inside the function's own body, i.e. recursion only, do not count.)
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cfmlir", "dialects", "passes", "runtime", "tools")
SEARCHED = ("cfmlir", "dialects", "passes", "runtime", "tools", "test", "bench", "examples", "vnncomp", "docs")


def _texts() -> list[str]:
    files = [ROOT / "pyproject.toml", ROOT / "README.md", ROOT / "Makefile"]
    for folder in SEARCHED:
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".sh", ".cf", ".toml", ".cfg")]
    return [p.read_text(errors="replace") for p in files if p.is_file()]


def dead_functions() -> list[str]:
    words = Counter()
    for text in _texts():
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    dead = []
    for folder in PACKAGES:
        for f in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(f.read_text())
            for node in tree.body:
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("__"):
                    continue
                own = sum(1 for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == node.name)
                if words[node.name] - own <= 1:
                    dead.append(f"{f.relative_to(ROOT)}:{node.lineno}: {node.name}")
    return dead


def test_every_module_level_function_is_referenced() -> None:
    dead = dead_functions()
    assert not dead, "functions nothing references (remove them):\n" + "\n".join(dead)
