"""The table of supported ONNX ops: ``python -m cfmlir.tools.onnx_support`` prints it as Markdown
(the *Supported ONNX ops* section of ``docs/vnncomp.md`` is this output; ``--write`` puts it there).

One row per (op, layer kind): the ONNX op, the layer kind the loader makes of it
(``cfruntime.network.onnx_loader.OP_LAYER_KINDS``) and when, the transformer rule that handles the
kind (``cfruntime.contract.OPERATOR_OF_KIND``), and, per shipped certifier, whether its ``.cf`` file
has that rule (read with the parser: ``deeppoly_p`` stands for the ``deeppoly_<p>`` family).
"""

from __future__ import annotations

import sys

from cfmlir.certifiers import BASE_CERTIFIERS, CERTIFIER_DIR, PARAMETRIC_CERTIFIERS
from cfmlir.syntax import ast
from cfmlir.syntax.parser import parse
from cfruntime.contract import OPERATOR_OF_KIND
from cfruntime.network.onnx_loader import OP_LAYER_KINDS

#: The certifier columns: the shipped ``.cf`` files.
CERTIFIER_FILES = tuple(BASE_CERTIFIERS) + ("deeppoly_p",) + tuple(PARAMETRIC_CERTIFIERS)


def certifier_rules(name: str) -> frozenset[str]:
    """The operators the transformer of ``<name>.cf`` has rules for."""
    path = CERTIFIER_DIR / f"{name}.cf"
    program = parse(path.read_text(encoding="utf-8"), str(path))
    return frozenset(rule.op for decl in program.decls if isinstance(decl, ast.TransformerDecl) for rule in decl.rules)


def support_rows() -> list[tuple[tuple[str, ...], str, str, str, tuple[bool, ...]]]:
    """``(ops, kind, when, operator, has rule per certifier of CERTIFIER_FILES)``: the ops that make one
    kind in one situation share a row; rows in the order of the kinds (``affine`` first, then
    ``LAYER_KINDS``' order), an op that makes no layer last (kind ``""``)."""
    from cfruntime.network.graph import LAYER_KINDS

    rules = [certifier_rules(c) for c in CERTIFIER_FILES]
    groups: dict[tuple[str, str], list[str]] = {}
    for op in sorted(OP_LAYER_KINDS):
        for kind, when in OP_LAYER_KINDS[op] or (("", ""),):
            groups.setdefault((kind, when), []).append(op)
    order = ["affine"] + [k for k in LAYER_KINDS if k not in ("input", "affine")] + [""]
    rows = []
    for (kind, when), ops in sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
        operator = OPERATOR_OF_KIND.get(kind, "")
        rows.append((tuple(ops), kind, when, operator, tuple(bool(operator) and operator in r for r in rules)))
    return rows


def markdown_table() -> str:
    """The table as Markdown (``✓`` a rule, ``–`` none; ops that make no layer have no marks)."""
    head = ["ONNX ops", "layer kind", "when", "rule"] + list(CERTIFIER_FILES)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ops, kind, when, operator, has in support_rows():
        marks = ["✓" if h else "–" for h in has] if kind else [""] * len(has)
        cells = [", ".join(f"`{op}`" for op in ops), f"`{kind}`" if kind else "(no layer)", when,
                 f"`{operator}`" if operator else ""] + marks
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: The markers around the generated table in a Markdown file.
BEGIN, END = "<!-- onnx-support-table: begin", "<!-- onnx-support-table: end -->"


def write_table(path) -> None:
    """Replace the table between the markers of ``path`` (a Markdown file) by the generated one."""
    from pathlib import Path

    text = Path(path).read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    marker, _old = rest.split("\n", 1)
    tail = rest.split(END, 1)[1]
    Path(path).write_text(f"{head}{BEGIN}{marker}\n{markdown_table()}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--write"] and len(argv) == 2:
        write_table(argv[1])
        return 0
    if argv:
        sys.stderr.write("usage: python -m cfmlir.tools.onnx_support [--write FILE.md]\n")
        return 2
    sys.stdout.write(markdown_table() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
