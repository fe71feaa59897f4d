"""Parameter declarations (issue 25): parsed, unparsed, typed (reads are Floats, the domain is typed
in each operator's bindings), and every misuse is one located error."""

from __future__ import annotations

import pytest

from cfmlir.diagnostics import CfError
from cfmlir.dialects.cf_type_lattice import FLOAT, ListType
from cfmlir.syntax.parser import parse
from cfmlir.syntax.unparse import unparse_param
from cfmlir.typing.checker import check_source

SHAPE = "def Shape as (Float l, Float u, PolyExp L, PolyExp U){[curr[l]<=curr, curr[u]>=curr, curr[L]<=curr, curr[U]>=curr]};\n"


def test_declaration_parses_and_unparses():
    src = ("param al for Relu, leakyrelu in [prev[l] >= 0.0 ? 1.0 : 0.0, 1.0] init (prev[l] + prev[u] >= 0.0) ? 1.0 : 0.0 else 1;\n"
           "param t for Sigmoid in [prev[l], prev[u]] else -2.5;\n")
    p = parse(src, "p.cf")
    a, t = p.params
    assert (a.name, a.ops, a.default, a.init_given) == ("al", ["Relu", "LeakyRelu"], 1.0, True)
    assert (t.name, t.ops, t.default, t.init_given) == ("t", ["Sigmoid"], -2.5, False)
    assert unparse_param(t) == "param t for Sigmoid in [prev[l], prev[u]] else -2.5;"
    again = parse(unparse_param(a), "q.cf").params[0]
    assert unparse_param(again) == unparse_param(a)


def test_default_initial_value_is_the_midpoint():
    cp = check_source(SHAPE + "param t for Sigmoid in [prev[l], prev[u]];\n", "p.cf")
    assert "0.5 * (prev[l] + prev[u])" in repr(cp.params["t"].init).replace("Binary", "") or cp.params["t"].init.op == "*"


def test_reads_are_floats_anywhere_in_the_program():
    cp = check_source(SHAPE + """
func f(Neuron n, Float c) = c * n[a];
func g(Neuron List ns) = ns[a];
param a for Relu in [0.0, 1.0] else 1.0;
transformer t { Relu -> (curr[a], prev[u], curr[a] * prev, prev); }
""", "p.cf")
    ft = cp.funcs["f"][1]
    assert ft.ret == FLOAT and cp.funcs["g"][1].ret == ListType(FLOAT)


@pytest.mark.parametrize("src, where, message", [
    ("param a for Relu in [0.0, 1.0];\nparam a for Tanh in [0.0, 1.0];", (2, 1), "parameter 'a' is declared twice"),
    ("param weight for Relu in [0.0, 1.0];", (1, 1), "parameter 'weight' clashes with the metadata name 'weight'"),
    ("param L for Relu in [0.0, 1.0];", (1, 1), "parameter 'L' has the name of a shape member"),
    ("param a for Relu in [0.0, prev];", (1, 27), "the upper bound of a parameter must be a Float, got Neuron"),
    ("param a for Relu in [curr[u], 1.0];", (1, 27), "the lower bound of parameter 'a' reads 'curr[u]'"),
    ("param a for Relu in [0.0, 1.0] init prev[a];", (1, 42), "the initial value of parameter 'a' reads the parameter 'a'"),
    ("param a for Relu in [0.0, 1.0];\ntransformer t { Affine -> (curr[a], 0.0, 0.0, 0.0); }", (2, 33),
     "parameter 'a' has no value on 'Affine' neurons (it is declared for Relu); give it an 'else' value"),
    ("param a for Relu in [0.0, 1.0] init sym;", (1, 37), "the initial value of a parameter must be a Float, got Noise"),
    ("param a for Relu, Relu in [0.0, 1.0];", (1, 19), "operator 'Relu' is named twice for parameter 'a'"),
    ("param a for Dense in [0.0, 1.0];", (1, 13), "unknown operator 'Dense'"),
    ("param a Relu in [0.0, 1.0];", (1, 9), "expected 'for' and the operators the parameter belongs to, found 'Relu'"),
    ("param a for Relu [0.0, 1.0];", (1, 18), "expected 'in' and the parameter's domain '[lo, hi]', found '['"),
    ("param a for Relu in [0.0, 1.0] else x;", (1, 37), "expected a number after 'else'"),
])
def test_errors_are_one_line_with_location(src, where, message):
    with pytest.raises(CfError) as exc:
        check_source(SHAPE + src, "p.cf")
    line, col = where
    text = str(exc.value)
    assert text.startswith(f"error: p.cf:{line + 1}:{col}: "), text
    assert message in text and "\n" not in text
