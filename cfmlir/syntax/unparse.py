"""ConstraintFlow source text of an expression (for messages): ``unparse(e)``.

Example: the shape constraint parsed from ``(curr[L]<=curr)`` unparses to ``curr[L] <= curr``.
Parentheses are added around every nested binary or conditional expression, so the text re-parses to
the same tree.
"""

from __future__ import annotations

from functools import singledispatch

from cfmlir.syntax import ast

_BUILTIN_SPELLING = {"sigmoid": "sigma", "map_list": "mapList"}


@singledispatch
def unparse(e) -> str:
    return f"<{type(e).__name__}>"


def _nested(e) -> str:
    s = unparse(e)
    return f"({s})" if isinstance(e, (ast.Binary, ast.Ternary, ast.Traverse)) else s


@unparse.register
def _(e: ast.IntLit) -> str:
    return str(e.value)


@unparse.register
def _(e: ast.FloatLit) -> str:
    return repr(float(e.value))


@unparse.register
def _(e: ast.BoolLit) -> str:
    return "true" if e.value else "false"


@unparse.register
def _(e: ast.SymLit) -> str:
    return "sym"


@unparse.register
def _(e: ast.Var) -> str:
    return e.name


@unparse.register
def _(e: ast.Binary) -> str:
    return f"{_nested(e.lhs)} {e.op} {_nested(e.rhs)}"


@unparse.register
def _(e: ast.Unary) -> str:
    return f"{e.op}{_nested(e.operand)}"


@unparse.register
def _(e: ast.Ternary) -> str:
    return f"{_nested(e.cond)} ? {_nested(e.then)} : {_nested(e.otherwise)}"


@unparse.register
def _(e: ast.Call) -> str:
    return f"{_nested(e.callee)}({', '.join(unparse(a) for a in e.args)})"


@unparse.register
def _(e: ast.Builtin) -> str:
    return f"{_BUILTIN_SPELLING.get(e.name, e.name)}({', '.join(unparse(a) for a in e.args)})"


@unparse.register
def _(e: ast.Lp) -> str:
    return f"lp({e.sense}, {unparse(e.objective)}, {unparse(e.constraints)})"


@unparse.register
def _(e: ast.Access) -> str:
    return f"{_nested(e.base)}[{e.member}]"


@unparse.register
def _(e: ast.Map) -> str:
    return f"{_nested(e.base)}.map({unparse(e.func)})"


@unparse.register
def _(e: ast.Dot) -> str:
    return f"{_nested(e.base)}.dot({unparse(e.arg)})"


@unparse.register
def _(e: ast.Traverse) -> str:
    return (f"{_nested(e.base)}.traverse({e.direction}, {unparse(e.priority)}, {unparse(e.stop)}, "
            f"{unparse(e.replace)}){{{unparse(e.invariant)}}}")


@unparse.register
def _(e: ast.TupleExpr) -> str:
    return f"({', '.join(unparse(x) for x in e.elems)})"


@unparse.register
def _(e: ast.ListLit) -> str:
    return f"[{', '.join(unparse(x) for x in e.elems)}]"


def unparse_param(d: ast.ParamDecl) -> str:
    """The source text of a parameter declaration (``init`` only when it was written)."""
    s = f"param {d.name} for {', '.join(d.ops)} in [{unparse(d.lo)}, {unparse(d.hi)}]"
    if d.init_given:
        s += f" init {unparse(d.init)}"
    if d.default is not None:
        s += f" else {d.default!r}"
    return s + ";"
