"""Type checker: the typed AST it produces and the one-line errors it gives."""

import pytest

from cfmlir.diagnostics import CfError
from cfmlir.dialects.cf_type_lattice import BOOL, CT, FLOAT, INT, POLYEXP, SYMEXP, FuncType, NEURON
from cfmlir.syntax import ast
from cfmlir.typing.checker import check_source

SHAPE = "def Shape as (Float l, Float u, PolyExp L, PolyExp U, SymExp Z){[curr[l]<=curr, curr[u]>=curr, curr[L]<=curr, curr[U]>=curr, curr In curr[Z]]};\n"


def ty_of_func(src: str, name: str):
    return check_source(SHAPE + src, "t.cf").funcs[name][1]


@pytest.mark.parametrize(
    "body, params, ret",
    [
        ("x + 1", "Float x", FLOAT),
        ("k + 1", "Int k", INT),
        ("n + 1", "Neuron n", POLYEXP),
        ("2 * n", "Neuron n", POLYEXP),
        ("n / 2", "Neuron n", POLYEXP),
        ("z * 0.5 + sym", "SymExp z", SYMEXP),
        ("x >= 0 ? x : 0", "Float x", FLOAT),
        ("x >= 0 ? n : 0", "Float x, Neuron n", POLYEXP),
        ("n <= n[U]", "Neuron n", CT),
        ("n[l] <= 0.0", "Neuron n", BOOL),
        ("n In n[Z]", "Neuron n", CT),
        ("ns.dot(ws)", "Neuron List ns, Float List ws", POLYEXP),
        ("ns[Z].dot(ws)", "Neuron List ns, Float List ws", SYMEXP),
        ("n[layer] - 1", "Neuron n", INT),
        ("n[weight]", "Neuron n", None),
    ],
)
def test_expression_types(body, params, ret):
    ft = ty_of_func(f"func f({params}) = {body};", "f")
    if ret is not None:
        assert ft.ret == ret


def test_map_result_is_lub_of_function_result_and_float():
    src = (
        "func lo(Neuron n, Float c) = c * n[l];\n"
        "func rep(Neuron n, Float c) = c * n[L];\n"
        "func a(PolyExp e) = e.map(lo);\n"
        "func b(PolyExp e) = e.map(rep);\n"
    )
    cp = check_source(SHAPE + src)
    assert cp.funcs["a"][1].ret == FLOAT
    assert cp.funcs["b"][1].ret == POLYEXP


def test_currying():
    src = "func g(Int k, Neuron n, Float c) = c * n[l] + k;\nfunc h(PolyExp e) = e.map(g(3));\n"
    cp = check_source(SHAPE + src)
    call = cp.funcs["h"][0].body.func
    assert isinstance(call, ast.Call) and call.ty == FuncType((NEURON, FLOAT), FLOAT)


@pytest.mark.parametrize(
    "src, line, col, message",
    [
        ("func f(Float x) = y;", 2, 19, "unknown name 'y'"),
        ("func f(Float x) = x + curr;", 2, 23, "'curr' is not available here"),
        ("func f(Neuron n) = n * n;", 2, 20, "needs a scalar operand"),
        ("func f(PolyExp p, SymExp s) = p + s;", 2, 31, "cannot be applied to PolyExp and SymExp"),
        ("func f(Float x) = x[l];", 2, 19, "'[l]' needs a Neuron or Neuron List, got Float"),
        ("func f(Neuron n) = n[q];", 2, 22, "unknown shape member or metadata 'q'"),
        ("func f(Float x) = x ? 1 : 2;", 2, 19, "condition of a conditional must be Bool, got Float"),
        ("func f(Neuron n) = n <= 1 ? 1 : 2;", 2, 20, "condition of a conditional must be Bool, got Ct"),
        ("func g(Float x) = x;\nfunc f(Float x) = g(x, x);", 3, 19, "takes 1 argument(s), got 2"),
        ("func g(Neuron x) = x;\nfunc f(Float x) = g(x);", 3, 21, "argument 1 has type Float, expected Neuron"),
        ("func g(Float x) = x;\nfunc f(PolyExp e) = e.map(g);", 3, 27, "map over a PolyExp needs a function (Neuron, Float) -> T"),
        ("func g(Neuron n, Float c) = c;\nfunc f(SymExp e) = e.map(g);", 3, 26, "map over a SymExp needs a function (Noise, Float) -> T"),
        ("func f(Float x) = x;\nfunc f(Float y) = y;", 3, 1, "function 'f' is defined twice"),
        ("func f(Float x, Int x) = x;", 2, 21, "parameter 'x' is declared twice"),
        ("func f(Float x) = !x;", 2, 19, "'!' needs a Bool"),
        ("func f(Bool List w, Float List v) = w.dot(v);", 2, 37, "dot needs a Neuron List"),
        ("func f(Neuron List w, Neuron List v) = w.dot(v);", 2, 46, "dot needs a Float List of coefficients"),
        ("func f(PolyExp e) = e / e;", 2, 25, "the divisor must be a scalar"),
        ("transformer t{ Relu -> (prev[l], prev[u]); }", 2, 24, "returns 2 values but the shape has 5 members"),
        ("transformer t{ Relu -> (prev, prev[u], prev, prev, prev[Z]); }", 2, 24, "returns Neuron for shape member 'l' of type Float"),
        ("transformer t{ Relu -> (prev_0[l], 0, 0, 0, 0); }", 2, 25, "'prev_0' is not available here"),
        ("transformer t{ Relu -> (0,0,0,0,0); Relu -> (0,0,0,0,0); }", 2, 37, "two rules for 'Relu'"),
        ("func p(Neuron n) = n[layer];\nflow(forward, p, p, t);", 3, 1, "unknown transformer 't'"),
    ],
)
def test_errors_are_one_line_with_location(src, line, col, message):
    with pytest.raises(CfError) as info:
        check_source(SHAPE + src, "bad.cf")
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"error: bad.cf:{line}:{col}: "), text
    assert message in text


def test_shipped_certifiers_check():
    from cfmlir.certifiers import certifier_names, certifier_source

    for name in certifier_names():
        cp = check_source(*certifier_source(name))
        assert cp.transformers and cp.program.flows
