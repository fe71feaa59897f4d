"""One dispatch style: no isinstance chain of more than 3 branches over AST node or op classes.

Code that does something per AST node class (``cfmlir.syntax.ast``) or per IR op class (a class named
``...Op``) dispatches through ``functools.singledispatch`` or a table, not through ``if isinstance(e, A):
... elif isinstance(e, B): ...``.  This scan (Python's ``ast``) walks ``cfmlir/``, ``dialects/`` and
``passes/`` and counts, in each block, consecutive ``if``/``elif`` tests ``isinstance(x, C)`` on the same
subject ``x`` with ``C`` an AST node or op class; more than 3 is a chain.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("cfmlir", "dialects", "passes")
MAX_BRANCHES = 3


def _ast_node_classes() -> set[str]:
    tree = ast.parse((ROOT / "cfmlir" / "syntax" / "ast.py").read_text())
    return {n.name for n in tree.body if isinstance(n, ast.ClassDef)}


AST_CLASSES = _ast_node_classes()


def _is_node_or_op_class(node: ast.expr) -> bool:
    if isinstance(node, ast.Tuple):
        return any(_is_node_or_op_class(e) for e in node.elts)
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in AST_CLASSES or (name.endswith("Op") and name[:1].isupper())


def _subject(test: ast.expr) -> str | None:
    """``x`` when ``test`` is (or starts a conjunction with) ``isinstance(x, C)`` for a node or op class C."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return _subject(test.values[0])
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and len(test.args) == 2 and _is_node_or_op_class(test.args[1])):
        return ast.unparse(test.args[0])
    return None


def _branch_subjects(stmt: ast.stmt) -> list[str | None] | None:
    """The subjects of an ``if``/``elif`` chain's tests, or None for any other statement."""
    if not isinstance(stmt, ast.If):
        return None
    subjects = []
    while True:
        subjects.append(_subject(stmt.test))
        if len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If):
            stmt = stmt.orelse[0]
        else:
            return subjects


def _elif_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            out.add(id(node.orelse[0]))
    return out


def chains(source: str) -> list[tuple[int, str, int]]:
    """(line, subject, branches) of every chain of more than MAX_BRANCHES branches in ``source``."""
    tree = ast.parse(source)
    elifs = _elif_nodes(tree)
    found = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or (field == "orelse" and len(block) == 1 and id(block[0]) in elifs):
                continue
            subject, count, line = None, 0, 0
            for stmt in block + [None]:
                subjects = _branch_subjects(stmt) if stmt is not None else None
                for s in subjects if subjects is not None else [None]:
                    if s is not None and s == subject:
                        count += 1
                        continue
                    if count > MAX_BRANCHES:
                        found.append((line, subject, count))
                    subject, count, line = s, (1 if s else 0), getattr(stmt, "lineno", 0)
    return found


def test_the_scan_finds_a_chain() -> None:
    src = "def f(e):\n" + "".join(f"    {'if' if i == 0 else 'elif'} isinstance(e, {c}):\n        return {i}\n"
                                   for i, c in enumerate(["Binary", "Unary", "Call", "Var"]))
    assert chains(src) == [(2, "e", 4)]
    separate = "def f(e):\n" + "".join(f"    if isinstance(e, {c}Op):\n        return 1\n" for c in "ABCD")
    assert chains(separate) == [(2, "e", 4)]
    assert chains(src.replace("Var", "int")) == []  # not a node or op class


def test_no_isinstance_chains_over_nodes_or_ops() -> None:
    bad = [f"{f.relative_to(ROOT)}:{line}: {n} isinstance branches on {subject}"
           for folder in FOLDERS for f in sorted((ROOT / folder).rglob("*.py"))
           for line, subject, n in chains(f.read_text())]
    assert not bad, "dispatch per class with functools.singledispatch or a table:\n" + "\n".join(bad)
