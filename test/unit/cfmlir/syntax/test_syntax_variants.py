"""The syntax variants people write for the same language are all accepted and normalised."""

from cfmlir.dialects.cf_type_lattice import FLOAT, NOISE, ListType, FuncType
from cfmlir.syntax import ast
from cfmlir.syntax.parser import parse
from cfmlir.typing.checker import check

VARIANTS = """
def Shape as (Real l, Real u, PolyExp L, PolyExp U, SymExp Z){[curr[l]<=curr, curr[u]>=curr, curr[L]<=curr, curr[U]>=curr, curr In curr[Z]]};
Func scale(Real k, Neuron n, Real c) = k * c * n[l];   // curried below
Func pick(Real x) = if x >= 0.0 then x else -x fi;
func sq(Real x) = x * x;
func noise_fn(Sym s, Real c) = c;
func total(Real List xs) = sum(xs) + avg(xs) + len(xs) + max(xs) - min(xs);
func lst(Real a) = concat([a, a], [a]);
func big(Real a, Real b) = argmax([a, b]);
func ml(Real List xs) = map_list(xs, sq);
func ineq(Neuron n) = lp(maximize, n, n <= 1.0);
func s(Neuron n) = sigma(n[l]) * (1 - sigma(n[l])) + tanh(n[u]);
func prio(Neuron n) = n[layer];
func stp(Neuron n) = !(n[layer] >= 0) or false;
transformer t{
    ReLU -> (pick(prev[l]), pick(prev[u]), prev, prev, prev[Z] + eps);
    Affine -> (prev.dot(curr[w]) + curr[b]).map(scale(2.0)) >= 0.0 ? (0, 1, prev.dot(curr[w]), prev.dot(curr[weight]) + curr[bias], prev[Z].dot(curr[w])) : (1, 2, 0, 0, 0);
    Sigmoid -> (s(prev), 1, prev, prev, prev[Z].map(noise_fn));
    Neuron_add -> (prev_0[l] + prev_1[l], prev_0[u] + prev_1[u], prev_0 + prev_1, prev_0 + prev_1, prev_0[Z] + prev_1[Z]);
    rev_relu -> (curr[l], curr[u], curr, curr, curr[Z]);
    Maxpool -> (max(prev[l]), max(prev[u]), sum(prev), sum(prev), 0);
}
flow(forward, prio, stp, t);
"""


def test_variants_parse_and_check():
    prog = parse(VARIANTS, "variants.cf")
    cp = check(prog)
    assert cp.member_order == ["l", "u", "L", "U", "Z"]
    assert cp.members["l"] == FLOAT  # Real -> Float
    rules = [r.op for r in prog.transformers[0].rules]
    assert rules == ["Relu", "Affine", "Sigmoid", "Neuron_add", "rev_Relu", "Maxpool"]
    # Func, curried function values, Sym -> Noise
    assert cp.funcs["scale"][1] == FuncType((FLOAT, ast_neuron(), FLOAT), FLOAT)
    assert cp.funcs["noise_fn"][1].params[0] == NOISE
    assert cp.funcs["ml"][1].ret == ListType(FLOAT)
    # curr[w]/curr[b] normalised to weight/bias
    affine = prog.transformers[0].rules[1].body
    assert isinstance(affine, ast.Ternary)
    accesses = [n.member for n in walk(affine) if isinstance(n, ast.Access)]
    assert "w" not in accesses and "b" not in accesses and "weight" in accesses and "bias" in accesses
    # eps is the fresh symbol, if/then/else/fi is a ternary
    relu = prog.transformers[0].rules[0].body
    assert any(isinstance(n, ast.SymLit) for n in walk(relu))
    assert isinstance(cp.funcs["pick"][0].body, ast.Ternary)


def ast_neuron():
    from cfmlir.dialects.cf_type_lattice import NEURON

    return NEURON


def walk(e):
    yield e
    for v in vars(e).values():
        if isinstance(v, ast.ExprBase):
            yield from walk(v)
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, ast.ExprBase):
                    yield from walk(x)


def test_comments_of_all_styles():
    src = "/* block\n comment */ func f(Float x) = x; (* ml style *) // line\nfunc g(Float x) = f(x);"
    prog = parse(src)
    assert [f.name for f in prog.funcs] == ["f", "g"]
