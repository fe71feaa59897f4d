"""The project's module import graph has no cycles in the runtime, and no new ones anywhere.

Every ``.py`` file under ``cfmlir/``, ``dialects/``, ``passes/``, ``runtime/`` and ``tools/`` is parsed
with :mod:`ast` (nothing is imported) and named by the import package its folder maps to in
``pyproject.toml`` (``runtime/`` is ``cfruntime``, ``dialects/`` is ``cfmlir.dialects``, ...).  An edge
``A -> B`` means module ``A`` has an import statement naming project module ``B``:

* ``import X.Y`` and ``from X import Y`` count as an edge to the module ``X.Y`` when that is a project
  module, else to ``X`` (so ``from cfruntime.tensor import RepeatBlock`` is an edge to the package
  ``cfruntime.tensor``, whose ``__init__`` runs; relative imports are resolved the same way).  The
  parent packages that Python initialises on the way are not edges: every submodule would otherwise be
  in a cycle with the ``__init__`` that re-exports it.
* Imports anywhere in the module count, **function-level ones included**: a deferred import is still a
  dependency when the function runs, and deferring the import is exactly how a cycle is hidden from
  the import machinery rather than removed.  Dependencies point one way only if these count too.
* Imports inside an ``if TYPE_CHECKING:`` block do not count: they exist for annotations and never run.
* Dynamic imports (``importlib.import_module``, ``__import__``) are not seen.

The cycles are the graph's strongly connected components of more than one module.  There must be none
among the ``cfruntime`` modules; every other one must be in :data:`EXPECTED_CYCLES`, so a new cycle
anywhere fails here, and removing one fails here until it is removed from that set as well.

To list the cycles by hand: ``python test/unit/test_import_graph.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from cftest import REPO

ROOT = REPO

#: Source folder -> import package (``[tool.setuptools] package-dir`` of ``pyproject.toml``).
PACKAGE_DIRS = {
    "cfmlir": "cfmlir",
    "dialects": "cfmlir.dialects",
    "passes": "cfmlir.passes",
    "runtime": "cfruntime",
    "tools": "cfmlir.tools",
}

#: The cycles allowed to remain outside ``cfruntime`` (each one a set of modules that import each
#: other).  Remove an entry when its cycle is broken.
EXPECTED_CYCLES: set[frozenset[str]] = set()  # none: keep it that way


def module_files() -> dict[str, Path]:
    """Every project module name and its file."""
    out = {}
    for folder, package in PACKAGE_DIRS.items():
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package] + parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Every ``import`` / ``from ... import`` node, at any depth, outside ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imports_of(name: str, path: Path, modules) -> dict[str, int]:
    """The project modules that module ``name`` (file ``path``) imports, each with one line that does."""
    is_package = path.name == "__init__.py"
    out: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target in modules and target != name:
            out.setdefault(target, line)

    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
            continue
        if node.level:
            package = name.split(".") if is_package else name.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([node.module] if node.module else []))
        else:
            base = node.module
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            add(sub if sub in modules else base, node.lineno)
    return out


def import_graph() -> tuple[dict[str, dict[str, int]], dict[str, Path]]:
    """``{module: {imported module: line}}`` over the whole project, and the module files."""
    files = module_files()
    return {name: imports_of(name, path, files) for name, path in files.items()}, files


def cycles(graph: dict[str, dict[str, int]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: set[frozenset[str]] = set()
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def describe(component: frozenset[str], graph, files) -> str:
    """The imports inside one cycle, as ``file:line: A -> B`` lines."""
    lines = []
    for a in sorted(component):
        for b, line in sorted(graph[a].items()):
            if b in component:
                lines.append(f"  {files[a].relative_to(ROOT)}:{line}: {a} -> {b}")
    return "\n".join(lines)


def _report(components, graph, files) -> str:
    return "\n".join(describe(c, graph, files) for c in sorted(components, key=sorted))


def test_graph_sees_the_project():
    """The parser finds the modules and resolves imports of every form (absolute, relative, package)."""
    graph, _ = import_graph()
    assert "cfruntime.tensor.api" in graph and "cfmlir.dialects.cf" in graph
    assert "cfruntime.tensor.sparse_tensor" in graph["cfruntime.tensor.api"]  # from .sparse_tensor import
    assert "cfruntime.tensor.shape_ops" in graph["cfruntime.tensor.api"]  # from . import shape_ops
    assert "cfruntime.tensor" in graph["cfruntime.flow.ops"]  # from cfruntime import tensor


def test_cycle_finder():
    graph = {"a": {"b": 1}, "b": {"c": 1, "a": 1}, "c": {}, "d": {"e": 1}, "e": {"d": 1}, "f": {"f": 1}}
    assert cycles(graph) == {frozenset("ab"), frozenset("de")}


def test_no_import_cycles_in_the_runtime():
    graph, files = import_graph()
    runtime = {c for c in cycles(graph) if any(m.split(".")[0] == "cfruntime" for m in c)}
    assert not runtime, "import cycles in cfruntime:\n" + _report(runtime, graph, files)


def test_no_new_import_cycles_elsewhere():
    graph, files = import_graph()
    others = {c for c in cycles(graph) if not any(m.split(".")[0] == "cfruntime" for m in c)}
    new, gone = others - EXPECTED_CYCLES, EXPECTED_CYCLES - others
    assert not new, "new import cycles:\n" + _report(new, graph, files)
    assert not gone, f"cycles no longer there (remove them from EXPECTED_CYCLES): {sorted(map(sorted, gone))}"


if __name__ == "__main__":
    _graph, _files = import_graph()
    print(_report(cycles(_graph), _graph, _files) or "no import cycles")
