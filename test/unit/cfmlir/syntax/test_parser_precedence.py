"""Precedence and associativity of ConstraintFlow expressions (issue 2, acceptance 3).

Expressions are printed back fully parenthesised with ``show`` so each test states the grouping.
"""

import pytest

from cfmlir.diagnostics import CfError
from cfmlir.syntax import ast
from cfmlir.syntax.parser import parse_expr


def show(e: ast.Expr) -> str:
    """Fully parenthesised rendering of an expression tree."""
    if isinstance(e, (ast.IntLit, ast.FloatLit)):
        return repr(e.value)
    if isinstance(e, ast.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, ast.SymLit):
        return "sym"
    if isinstance(e, ast.Var):
        return e.name
    if isinstance(e, ast.Binary):
        return f"({show(e.lhs)} {e.op} {show(e.rhs)})"
    if isinstance(e, ast.Unary):
        return f"({e.op}{show(e.operand)})"
    if isinstance(e, ast.Ternary):
        return f"({show(e.cond)} ? {show(e.then)} : {show(e.otherwise)})"
    if isinstance(e, ast.Call):
        return f"{show(e.callee)}({', '.join(map(show, e.args))})"
    if isinstance(e, ast.Builtin):
        return f"{e.name}({', '.join(map(show, e.args))})"
    if isinstance(e, ast.Access):
        return f"{show(e.base)}[{e.member}]"
    if isinstance(e, ast.Map):
        return f"{show(e.base)}.map({show(e.func)})"
    if isinstance(e, ast.Dot):
        return f"{show(e.base)}.dot({show(e.arg)})"
    if isinstance(e, ast.Traverse):
        return f"{show(e.base)}.traverse({e.direction}, {show(e.priority)}, {show(e.stop)}, {show(e.replace)}){{{show(e.invariant)}}}"
    if isinstance(e, ast.TupleExpr):
        return f"<{', '.join(map(show, e.elems))}>"
    if isinstance(e, ast.Lp):
        return f"lp({e.sense}, {show(e.objective)}, {show(e.constraints)})"
    if isinstance(e, ast.ListLit):
        return f"[{', '.join(map(show, e.elems))}]"
    raise AssertionError(type(e))


@pytest.mark.parametrize(
    "src, expected",
    [
        # the examples named in the issue
        ("a + b*c", "(a + (b * c))"),
        ("-a + 1", "((-a) + 1)"),
        ("e1.map(g) + e2.map(g)", "(e1.map(g) + e2.map(g))"),
        ("sigma(x) * (1 - sigma(x))", "(sigmoid(x) * (1 - sigmoid(x)))"),
        # left associativity of each binary level
        ("a - b - c", "((a - b) - c)"),
        ("a / b / c", "((a / b) / c)"),
        ("a * b / c * d", "(((a * b) / c) * d)"),
        ("a or b or c", "((a or b) or c)"),
        ("a and b and c", "((a and b) and c)"),
        # the levels relative to each other
        ("a * b + c * d", "((a * b) + (c * d))"),
        ("a + b <= c * d", "((a + b) <= (c * d))"),
        ("a < b and c > d", "((a < b) and (c > d))"),
        ("a and b or c and d", "((a and b) or (c and d))"),
        ("a or b ? x : y", "((a or b) ? x : y)"),
        ("c ? x + 1 : y * 2", "(c ? (x + 1) : (y * 2))"),
        # the ternary is right-associative
        ("a ? b : c ? d : e", "(a ? b : (c ? d : e))"),
        ("a ? b ? c : d : e", "(a ? (b ? c : d) : e)"),
        # unary binds tighter than any binary operator, looser than postfix
        ("-x[l] * 2", "((-x[l]) * 2)"),
        ("!a and b", "((!a) and b)"),
        ("- - a", "(-(-a))"),
        ("-2 * a", "(-2 * a)"),
        ("not a or b", "((!a) or b)"),
        # postfix chains
        ("prev.dot(curr[w]) + curr[b]", "(prev.dot(curr[weight]) + curr[bias])"),
        ("(prev.dot(curr[weight]) + curr[bias]).map(f)", "(prev.dot(curr[weight]) + curr[bias]).map(f)"),
        ("prev[Z].dot(curr[weight])", "prev[Z].dot(curr[weight])"),
        ("f(a)(b)", "f(a)(b)"),
        ("f(a)(b)(c) + 1", "(f(a)(b)(c) + 1)"),
        ("e.map(f(k))", "e.map(f(k))"),
        ("curr In curr[Z]", "(curr In curr[Z])"),
        ("x + y In z", "((x + y) In z)"),
        ("e.traverse(backward, p, s, f){e <= n}.map(g)", "e.traverse(backward, p, s, f){(e <= n)}.map(g)"),
        # syntax variants
        ("if a then b else c + 1 fi * 2", "((a ? b : (c + 1)) * 2)"),
        ("eps * 2", "(sym * 2)"),
        ("max(a, b) + min(c, d)", "(max(a, b) + min(c, d))"),
        ("a && b || c", "((a and b) or c)"),
        ("(a, b + 1, c)", "<a, (b + 1), c>"),
        ("lp(minimize, x + y, c)", "lp(minimize, (x + y), c)"),
        ("l.mapList(f)", "map_list(l, f)"),
    ],
)
def test_grouping(src, expected):
    assert show(parse_expr(src)) == expected


def test_unary_minus_on_postfix_is_not_folded():
    e = parse_expr("-f(x)")
    assert isinstance(e, ast.Unary) and isinstance(e.operand, ast.Call)


def test_comparisons_do_not_chain():
    with pytest.raises(CfError, match="comparisons do not chain"):
        parse_expr("a < b < c")


def test_locations_point_at_operands():
    e = parse_expr("a +\n  b * c", "t.cf")
    assert isinstance(e, ast.Binary)
    assert (e.rhs.loc.line, e.rhs.loc.col) == (2, 3)
    assert str(e.rhs.loc) == "t.cf:2:3"


@pytest.mark.parametrize(
    "src, expected",
    [("1", 1), ("1.5", 1.5), ("2.", 2.0), (".25", 0.25), ("1e-3", 1e-3), ("0.0001", 0.0001), ("3E2", 300.0)],
)
def test_number_literals(src, expected):
    e = parse_expr(src)
    assert e.value == expected and type(e.value) is type(expected)
