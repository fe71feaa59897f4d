"""Mutants of shipped certifiers for the verifier's tests: (name, certifier, old text, new text, rule).

UNSOUND ones break a shape constraint for some input; SOUND ones are sound variants (another valid
relaxation, renamed or reordered members)."""

UNSOUND = [
    ("deeppoly ReLU upper bound 0", "deeppoly", "relu(prev[u]), relu_n", "0.0, relu_n", "Relu"),
    ("deeppoly simplify_upper for the lower bound", "deeppoly", "{e <= n}).map(simplify_lower)", "{e <= n}).map(simplify_upper)", "Affine"),
    ("deeppoly replace_lower takes U for a positive coefficient", "deeppoly",
     "func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[L]) : (coeff * n[U]);",
     "func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[U]) : (coeff * n[L]);", "Affine"),
    ("deeppoly chord intercept with the wrong sign", "deeppoly",
     "- (((n[u]) * (n[l])) / ((n[u]) - (n[l]))));", "+ (((n[u]) * (n[l])) / ((n[u]) - (n[l]))));", "Relu"),
    ("deeppoly ReLU lower polyhedron is the upper bound u", "deeppoly",
     "func relu_n(Neuron n) = n[l] + n[u] >= 0.0 ? n : 0.0;", "func relu_n(Neuron n) = n[u];", "Relu"),
    ("deeppoly sigmoid lower line with the larger tangent slope", "deeppoly",
     ": sigma(n[l]) + min(dsigma(n[l]), dsigma(n[u])) * (n - n[l]);", ": sigma(n[l]) + max(dsigma(n[l]), dsigma(n[u])) * (n - n[l]);", "Sigmoid"),
    ("deepz listing: ReLU bounds stored as 0, 0", "deepz",
     "Relu -> (relu_z_lower(prev[l], prev[u]), relu_z_upper(prev[l], prev[u]),", "Relu -> (0.0, 0.0,", "Relu"),
    ("deepz halved zonotope shift", "deepz",
     "(((u * l) * (sym - 1)) / (2 * (u - l)))", "(((u * l) * (sym - 1)) / (4 * (u - l)))", "Relu"),
    ("deepz lower bound adds the radius", "deepz",
     "func deepz_lower(Sym n, Float c) = (c > 0.0) ? c*(0.0 - 1.0) : c*(1.0);",
     "func deepz_lower(Sym n, Float c) = (c > 0.0) ? c*(1.0) : c*(0.0 - 1.0);", "Affine"),
    ("ibp Affine upper bound with the lower simplification", "ibp",
     "(prev.dot(curr[weight]) + curr[bias]).map(simplify_upper)", "(prev.dot(curr[weight]) + curr[bias]).map(simplify_lower)", "Affine"),
    ("ibp Neuron_add upper bound forgets prev_1", "ibp", "prev_0[u] + prev_1[u]", "prev_0[u]", "Neuron_add"),
    ("crown_ibp ReLU lower bound keeps negative l", "crown_ibp", "Relu -> (relu(prev[l]),", "Relu -> (prev[u],", "Relu"),
    ("zid box zonotope with half the radius", "zid",
     "func box_z(Float l, Float u) = (l + u) / 2.0 + ((u - l) / 2.0) * sym;",
     "func box_z(Float l, Float u) = (l + u) / 2.0 + ((u - l) / 4.0) * sym;", "Relu"),
    ("reusecert Relu upper polyhedron uses L", "reusecert",
     "func compute_upper(Float l, Float u, Neuron n) = l >= 0.0 ? n[U]", "func compute_upper(Float l, Float u, Neuron n) = l >= 0.0 ? n[L]", "Relu"),
    ("ibp Sigmoid lower bound at u", "ibp", "Sigmoid -> (sigma(prev[l]), sigma(prev[u]));", "Sigmoid -> (sigma(prev[u]), sigma(prev[u]));", "Sigmoid"),
    ("ibp Tanh upper bound at l", "ibp", "Tanh -> (tanh(prev[l]), tanh(prev[u]));", "Tanh -> (tanh(prev[l]), tanh(prev[l]));", "Tanh"),
]

SOUND = [
    ("ibp as shipped", "ibp", "", "", "Affine"),
    ("deeppoly ReLU lower polyhedron n for every neuron (x <= max(x, 0))", "deeppoly",
     "func relu_n(Neuron n) = n[l] + n[u] >= 0.0 ? n : 0.0;", "func relu_n(Neuron n) = n;", "Relu"),
    ("deeppoly ReLU lower slope 0", "deeppoly", "func relu_n(Neuron n) = n[l] + n[u] >= 0.0 ? n : 0.0;", "func relu_n(Neuron n) = 0.0;", "Relu"),
    ("deeppoly ReLU lower slope 1 when crossing", "deeppoly",
     "func relu_n(Neuron n) = n[l] + n[u] >= 0.0 ? n : 0.0;", "func relu_n(Neuron n) = n[u] <= 0.0 ? 0.0 : n;", "Relu"),
    ("deeppoly_p Affine (depth-limited back-substitution)", "deeppoly_2", "", "", "Affine"),
    ("deeppoly renamed members", "deeppoly", "", "", "Affine"),
    ("ibp with reordered shape members (u, l)", "ibp", "", "", "Relu"),
    ("ibp ReLU upper bound widened by 1", "ibp", "(prev[u] >= 0 ? prev[u] : 0))", "(prev[u] >= 0 ? prev[u] + 1.0 : 1.0))", "Relu"),
    ("deepz Affine as shipped", "deepz", "", "", "Affine"),
    ("deepz Affine lower bound twice the radius below", "deepz",
     "func deepz_lower(Sym n, Float c) = (c > 0.0) ? c*(0.0 - 1.0) : c*(1.0);",
     "func deepz_lower(Sym n, Float c) = (c > 0.0) ? c*(0.0 - 2.0) : c*(2.0);", "Affine"),
    ("ibp Neuron_add lower bound lowered by 1", "ibp", "prev_0[l] + prev_1[l]", "prev_0[l] + prev_1[l] - 1.0", "Neuron_add"),
    ("deeppoly Neuron_add as shipped", "deeppoly", "", "", "Neuron_add"),
]


def renamed(text: str) -> str:
    """deeppoly with members l, u, L, U renamed lo, hi, PL, PU."""
    import re
    return re.sub(r"\[(l|u|L|U)\]", lambda m: "[" + {"l": "lo", "u": "hi", "L": "PL", "U": "PU"}[m.group(1)] + "]", text).replace(
        "Float l, Float u, PolyExp L, PolyExp U", "Float lo, Float hi, PolyExp PL, PolyExp PU")


REORDERED = """def Shape as (Float u, Float l){[(curr[u]>=curr),(curr[l]<=curr)]};
func priority(Neuron n) = n[layer];
func stop(Neuron n) = true;
transformer ibp_ul{
    Relu -> ((prev[u] >= 0 ? prev[u] : 0), (prev[l] >= 0 ? prev[l] : 0));
}
flow(forward, priority, stop, ibp_ul);
"""


def source(name, cert, old, new):
    from cfmlir.certifiers import certifier_source

    text, file = certifier_source(cert)
    if name == "deeppoly renamed members":
        return renamed(text), file
    if name == "ibp with reordered shape members (u, l)":
        return REORDERED, "ibp_ul.cf"
    if old:
        assert old in text, (name, old)
        text = text.replace(old, new, 1)
    return text, file


def verdict(case, timeout: int = 30):
    """The prover's one result on a mutant ``(name, certifier, old text, new text, rule)`` of
    :data:`UNSOUND` or :data:`SOUND`: its rule checked in the mutated certifier (:func:`source`)."""
    from cfmlir.verify import verify_source

    name, cert, old, new, op = case
    text, file = source(name, cert, old, new)
    (r,) = verify_source(text, file, ops={op}, timeout=timeout)
    return r


def unsound_file(directory, name: str):
    """The ``.cf`` file of the UNSOUND mutant ``name``, written into ``directory``."""
    from pathlib import Path

    k = [m[0] for m in UNSOUND].index(name)
    text, _ = source(*UNSOUND[k][:4])
    path = Path(directory) / f"mutant_{k}.cf"
    path.write_text(text)
    return path


def assert_refuted(cert: str, old: str, new: str, op: str, timeout: int = 60) -> None:
    """``cf-verify`` refutes rule ``op`` of the shipped certifier ``cert`` with its one ``old`` text
    replaced by ``new``: a counterexample, replayed (its detail says which constraint it violates)."""
    from cfmlir.certifiers import certifier_source
    from cfmlir.verify import COUNTEREXAMPLE, verify_source

    text, file = certifier_source(cert)
    assert text.count(old) == 1, old
    (r,) = verify_source(text.replace(old, new), file, ops={op}, timeout=timeout)
    assert r.status == COUNTEREXAMPLE, r.line()
    assert "violates" in r.detail
