"""VNN-LIB parser, writer (round trip), verdicts and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cfruntime.errors import VnnlibError
from cfruntime.network import network_from_model
from cfruntime.network.builders import mlp_model, random_mlp_weights
from cfruntime.properties import (
    InputRegion,
    VnnlibProperty,
    interval_row_lower_bounds,
    output_in_disjunct,
    parse_vnnlib,
    to_vnnlib,
    verdict,
)
from cfruntime.soundness import interval_bounds, vnnlib_counterexample

MNIST_STYLE = """; VNN-COMP style local robustness property (label 0)
; input box
(declare-const X_0 Real)
(declare-const X_1 Real)
(declare-const X_2 Real)

(declare-const Y_0 Real)
(declare-const Y_1 Real)
(declare-const Y_2 Real)

(assert (<= X_0 0.6))
(assert (>= X_0 0.4))
(assert (<= X_1 1.0e-1))   ; scientific
(assert (>= X_1 (- 0.1)))
(assert (>= 0.9 X_2))      ; number first
(assert (<= 0.7 X_2))

(assert (or
    (and (>= Y_1 Y_0))
    (and (>= Y_2 Y_0) (<= Y_2 3.5))
))
"""


def test_parse_vnncomp_style(tmp_path):
    p = tmp_path / "prop.vnnlib"
    p.write_text(MNIST_STYLE)
    prop = parse_vnnlib(p)
    assert (prop.num_inputs, prop.num_outputs) == (3, 3)
    assert prop.input_lb.tolist() == [0.4, -0.1, 0.7]
    assert prop.input_ub.tolist() == [0.6, 0.1, 0.9]
    assert len(prop.disjuncts) == 2
    A0, b0 = prop.disjuncts[0]
    assert A0.tolist() == [[1.0, -1.0, 0.0]] and b0.tolist() == [0.0]  # y0 - y1 <= 0
    A1, b1 = prop.disjuncts[1]
    assert A1.tolist() == [[1.0, 0.0, -1.0], [0.0, 0.0, 1.0]] and b1.tolist() == [0.0, 3.5]
    assert prop.source == str(p)


def test_nested_and_or_distributes_to_dnf():
    text = "\n".join(["(declare-const X_0 Real)", "(declare-const Y_0 Real)", "(declare-const Y_1 Real)",
                      "(assert (and (<= X_0 1) (>= X_0 0)))",
                      "(assert (and (or (<= Y_0 1) (<= Y_1 2)) (or (>= Y_0 5) (and (>= Y_1 -1)))))"])
    prop = parse_vnnlib(text=text)
    got = [(A.tolist(), b.tolist()) for A, b in prop.disjuncts]
    assert got == [
        ([[1, 0], [-1, 0]], [1, -5]), ([[1, 0], [0, -1]], [1, 1]),
        ([[0, 1], [-1, 0]], [2, -5]), ([[0, 1], [0, -1]], [2, 1]),
    ]


def test_several_input_boxes():
    text = "\n".join(["(declare-const X_0 Real)", "(declare-const Y_0 Real)",
                      "(assert (or (and (>= X_0 0) (<= X_0 1) (<= Y_0 0)) (and (>= X_0 2) (<= X_0 3) (<= Y_0 -1))",
                      "            (and (>= X_0 0) (<= X_0 1) (>= Y_0 9))))"])
    prop = parse_vnnlib(text=text)
    assert len(prop.regions) == 2
    assert prop.regions[0].lb.tolist() == [0] and len(prop.regions[0].disjuncts) == 2
    assert prop.regions[1].ub.tolist() == [3]
    with pytest.raises(VnnlibError, match="2 input boxes"):
        prop.input_lb
    assert parse_vnnlib(text=to_vnnlib(prop)) == prop


def test_round_trip_handwritten():
    prop = parse_vnnlib(text=MNIST_STYLE)
    text = to_vnnlib(prop)
    again = parse_vnnlib(text=text)
    assert again == prop
    assert to_vnnlib(again) == text
    # equality is by value: a changed bound breaks it
    other = parse_vnnlib(text=MNIST_STYLE.replace("3.5", "3.25"))
    assert other != prop


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def properties(draw):
    n_in = draw(st.integers(1, 4))
    n_out = draw(st.integers(1, 4))
    lo = np.array([draw(finite) for _ in range(n_in)])
    width = np.array([abs(draw(finite)) for _ in range(n_in)])
    disj = []
    for _ in range(draw(st.integers(1, 3))):
        rows, bs = [], []
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, n_out - 1))
            row = np.zeros(n_out)
            form = draw(st.sampled_from(["le", "ge", "yy"] if n_out > 1 else ["le", "ge"]))
            if form == "yy":
                j = draw(st.integers(0, n_out - 1).filter(lambda j: j != i))
                row[i], row[j] = 1.0, -1.0
                bs.append(0.0)
            else:
                row[i] = 1.0 if form == "le" else -1.0
                bs.append(draw(finite))
            rows.append(row)
        disj.append((np.array(rows), np.array(bs)))
    return VnnlibProperty(n_in, n_out, [InputRegion(lo, lo + width, disj)])


@settings(max_examples=60, deadline=None)
@given(properties())
def test_round_trip_generated(prop):
    assert parse_vnnlib(text=to_vnnlib(prop)) == prop


BASE = ["(declare-const X_0 Real)", "(declare-const Y_0 Real)", "(declare-const Y_1 Real)",
        "(assert (<= X_0 1))", "(assert (>= X_0 0))"]


@pytest.mark.parametrize("lines,line,what", [
    (BASE + ["(assert (<= Y_7 0))"], 6, "unknown variable 'Y_7'"),
    (BASE + ["(assert (<= Z 0))"], 6, "unknown variable or malformed number 'Z'"),
    (BASE + ["(assert (or (<= Y_0 0)"], 6, "unbalanced parentheses: missing ')'"),
    (BASE + ["(assert (<= Y_0 0)))"], 6, "unbalanced parentheses: unexpected ')'"),
    (BASE[:3] + ["(assert (<= X_0 1))"], 1, "no lower bound for X_0"),
    (BASE[:3] + ["(assert (>= X_0 1))"], 1, "no upper bound for X_0"),
    (BASE + ["(assert (<= X_0 -1))"], 6, "empty input box: X_0 >= 0 (line 5) and X_0 <= -1 (line 6)"),  # the asserts, not the declaration
    (BASE + ["(assert (= Y_0 1))"], 6, "unsupported operator '='"),
    (BASE + ["(assert (<= (+ Y_0 Y_1) 1))"], 6, "no arithmetic"),
    (BASE + ["(assert (<= X_0 Y_0))"], 6, "input variables may only be compared with numbers"),
    (BASE + ["(assert (<= 1 2))"], 6, "comparison between two numbers"),
    (BASE + ["(declare-const Y_0 Real)"], 6, "declared twice"),
    (BASE + ["(declare-const Y_5 Real)"], 6, "Y_2 missing"),
    (["(declare-const X_0 Int)"], 1, "only Real"),
    (["(declare-const foo Real)"], 1, "must be named X_<i>"),
    (BASE + ["(check-sat)"], 6, "unsupported command 'check-sat'"),
    (BASE + ["(assert (<= Y_0 1e400))"], 6, "malformed number"),
    (BASE + ["X_0"], 6, "outside parentheses"),
])
def test_errors(tmp_path, lines, line, what):
    p = tmp_path / "bad.vnnlib"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(VnnlibError) as ei:
        parse_vnnlib(p)
    s = str(ei.value)
    assert "\n" not in s and s.startswith(f"error: {p}:{line}: ") and what in s, s
    with pytest.raises(VnnlibError, match="no such VNN-LIB file"):
        parse_vnnlib(tmp_path / "missing.vnnlib")


def test_verdicts_on_a_network():
    ws, bs = random_mlp_weights([3, 8, 3], seed=11)
    net = network_from_model(mlp_model(ws, bs, "relu"))
    x0 = torch.tensor([[0.5, 0.0, 0.8]], dtype=torch.float64)
    y0 = net.forward(x0)[0]
    top = int(y0.argmax())
    others = [j for j in range(3) if j != top]
    tiny = "\n".join([f"(declare-const X_{i} Real)" for i in range(3)] + [f"(declare-const Y_{j} Real)" for j in range(3)]
                     + [f"(assert (<= X_{i} {float(x0[0, i]) + 1e-3}))\n(assert (>= X_{i} {float(x0[0, i]) - 1e-3}))" for i in range(3)]
                     + ["(assert (or " + " ".join(f"(and (>= Y_{j} Y_{top}))" for j in others) + "))"])
    prop = parse_vnnlib(text=tiny)
    reg = prop.regions[0]
    b = interval_bounds(net, torch.from_numpy(reg.lb), torch.from_numpy(reg.ub))[len(net) - 1]
    lbs = interval_row_lower_bounds(reg, b[0][0].numpy(), b[1][0].numpy())
    assert verdict(prop, [lbs]) == "unsat"  # tiny box around a clear prediction: robust
    assert vnnlib_counterexample(net, prop, n_samples=32, steps=5, restarts=1) is None
    assert verdict(prop) == "unknown"
    # the whole input space of the negated top class: a counterexample exists and is found
    wide = tiny.replace("(assert (or", f"(assert (or (and (<= Y_{top} {float(y0[top]) + 100}))", 1)
    wide_prop = parse_vnnlib(text=wide)
    ce = vnnlib_counterexample(net, wide_prop)
    assert ce is not None
    ri, x, y = ce
    r = wide_prop.regions[ri]
    assert np.all(x.numpy() >= r.lb) and np.all(x.numpy() <= r.ub)
    assert torch.allclose(net.forward(x.reshape(1, -1))[0], y)
    assert output_in_disjunct(r, y.numpy()) is not None
    assert verdict(wide_prop, counterexample_found=True) == "sat"


def test_the_attack_runs_every_disjunct_and_restart_in_one_pgd(monkeypatch):
    """20 inputs in [0, 1], Y_0 = x_0 - x_1 + x_2 - ..., Y_1 = x_0: the disjunct ``Y_0 >= 1000 and Y_1 >= 1000``
    (two constraints) is impossible, ``Y_0 >= 9.9`` holds only within 0.1 of the corner (1, 0, 1, 0, ...),
    which no sample reaches (one vertex in 2^20; the box's own corners are lb and ub) and PGD does.  One PGD call carries both disjuncts' restarts (rows padded
    to two constraints), and the answer is the second disjunct's; before it, by default, the rows on the nearest
    disjunct's violation find it alone."""
    import cfruntime.soundness as soundness
    from cfruntime.network.graph import Layer, Network

    n = 20
    w = torch.zeros(2, n, dtype=torch.float64)
    w[0], w[1, 0] = torch.tensor([(-1.0) ** i for i in range(n)]), 1.0
    net = Network([Layer(index=0, kind="input", shape=(n,)),
                   Layer(index=1, kind="affine", shape=(2,), preds=[0], linear_kind="dense", weight=w,
                         bias=torch.zeros(2, dtype=torch.float64))], source="sum.handbuilt")
    text = "\n".join([f"(declare-const X_{i} Real)" for i in range(n)] + ["(declare-const Y_0 Real)", "(declare-const Y_1 Real)"]
                     + [f"(assert (>= X_{i} 0))\n(assert (<= X_{i} 1))" for i in range(n)]
                     + ["(assert (or (and (>= Y_0 1000) (>= Y_1 1000)) (and (>= Y_0 9.9))))"])
    prop = parse_vnnlib(text=text)
    calls = []
    real = soundness.pgd
    monkeypatch.setattr(soundness, "pgd", lambda *a, **k: calls.append(a[3].shape[0]) or real(*a, **k))
    ri, x, y = vnnlib_counterexample(net, prop, restarts=3, nearest_rows=0)
    assert calls == [6]  # 2 disjuncts x 3 restarts, one call
    assert float(y[0]) >= 9.9 and bool((x >= 0).all() and (x <= 1).all())
    assert output_in_disjunct(prop.regions[ri], y.numpy()) == 1
    # first (by default) 10 rows on the nearest disjunct's violation: the second disjunct's, found by them alone
    calls.clear()
    ri, x, y = vnnlib_counterexample(net, prop, restarts=3)
    assert calls == [soundness.NEAREST_DISJUNCT_ROWS] == [10]
    assert float(y[0]) >= 9.9 and output_in_disjunct(prop.regions[ri], y.numpy()) == 1
    # without PGD (no restarts, no nearest rows) nothing is found: the samples do not reach the corner
    assert vnnlib_counterexample(net, prop, restarts=0, nearest_rows=0) is None


def test_the_attack_passes_the_gradient_straight_through_sign_layers(monkeypatch):
    """Y_0 = sum_i (-1)^i sign(x_i - 0.5) over x in [0, 1]^20: ``Y_0 >= 19.5`` needs every one of the 20 signs
    right (one corner region in 2^20; no sample gets there).  Sign's derivative is 0, so PGD would never move;
    differentiated as the identity (``box_search.STEP_KINDS``) it walks to the corner, and the point found is
    the network's own (the values are exact).  Without the straight-through gradient nothing is found."""
    import cfruntime.box_search as box_search
    import cfruntime.soundness as soundness
    from cfruntime.network.graph import Layer, Network

    n = 20
    eye = torch.eye(n, dtype=torch.float64)
    w = torch.tensor([[(-1.0) ** i for i in range(n)]], dtype=torch.float64)
    net = Network([Layer(index=0, kind="input", shape=(n,)),
                   Layer(index=1, kind="affine", shape=(n,), preds=[0], linear_kind="dense", weight=eye,
                         bias=torch.full((n,), -0.5, dtype=torch.float64)),
                   Layer(index=2, kind="sign", shape=(n,), preds=[1]),
                   Layer(index=3, kind="affine", shape=(1,), preds=[2], linear_kind="dense", weight=w,
                         bias=torch.zeros(1, dtype=torch.float64))], source="signs.handbuilt")
    text = "\n".join([f"(declare-const X_{i} Real)" for i in range(n)] + ["(declare-const Y_0 Real)"]
                     + [f"(assert (>= X_{i} 0))\n(assert (<= X_{i} 1))" for i in range(n)] + ["(assert (>= Y_0 19.5))"])
    prop = parse_vnnlib(text=text)
    ri, x, y = vnnlib_counterexample(net, prop)
    assert float(y[0]) == 20.0 and float(net.forward(x.reshape(1, -1))[0, 0]) == 20.0
    monkeypatch.setattr(box_search, "STEP_KINDS", frozenset())
    assert vnnlib_counterexample(net, prop) is None


def test_comments_and_tokens_next_to_parentheses():
    text = "\n".join(["(declare-const X_0 Real);x", "(declare-const Y_0 Real) ; y (", "; (assert (<= X_0 5))",
                      "(assert (<= X_0 1.5));(", "(assert(>= X_0 -1)) (assert (or (<= Y_0 0;)", ")))"])
    prop = parse_vnnlib(text=text)
    assert prop.input_lb.tolist() == [-1.0] and prop.input_ub.tolist() == [1.5]
    assert [(A.tolist(), b.tolist()) for A, b in prop.disjuncts] == [([[1.0]], [0.0])]


def test_a_long_flat_or_parses_and_a_product_past_the_limit_does_not(monkeypatch):
    """The limit guards the disjunctive normal form's products (an ``and`` of ``or``s); a flat ``or`` of many
    input boxes (nn4sys_2023's ``lindex_60000``: 120,000) is within it, beyond the limit it is an error."""
    import cfruntime.properties.vnnlib as vnnlib

    head = ["(declare-const X_0 Real)", "(declare-const Y_0 Real)"]
    flat = head + ["(assert (or " + " ".join(f"(and (>= X_0 {i}) (<= X_0 {i}.5) (<= Y_0 {i}))" for i in range(300)) + "))"]
    prop = parse_vnnlib(text="\n".join(flat))
    assert len(prop.regions) == 300 and prop.regions[299].ub.tolist() == [299.5]
    monkeypatch.setattr(vnnlib, "_MAX_DISJUNCTS", 299)
    with pytest.raises(VnnlibError, match="more than 299 disjuncts"):
        parse_vnnlib(text="\n".join(flat))
    monkeypatch.setattr(vnnlib, "_MAX_DISJUNCTS", 20)
    ors = " ".join("(or (<= Y_0 1) (<= Y_0 2) (<= Y_0 3))" for _ in range(3))  # 27 conjunctions
    with pytest.raises(VnnlibError, match="more than 20 disjuncts in disjunctive normal form"):
        parse_vnnlib(text="\n".join(head + ["(assert (and (<= X_0 1) (>= X_0 0)))", f"(assert (and {ors}))"]))


@settings(max_examples=40, deadline=None)
@given(st.lists(properties(), min_size=1, max_size=3))
def test_the_fast_reader_reads_what_the_exact_one_reads(props):
    """``parse_vnnlib`` reads with ``_read_fast`` (no line numbers) and falls back to ``_read`` only on an
    error: on valid text both give the same property (several input boxes included)."""
    from cfruntime.properties.vnnlib import _Parser, _read, _read_fast

    n_in, n_out = props[0].num_inputs, props[0].num_outputs
    same = [p for p in props if (p.num_inputs, p.num_outputs) == (n_in, n_out)]
    prop = VnnlibProperty(n_in, n_out, [reg for p in same for reg in p.regions])
    text = to_vnnlib(prop)
    fast = _Parser("t").parse(_read_fast(text))
    assert fast == _Parser("t").parse(_read(text, "t"))
    # boxes that coincide are one region of their disjuncts together
    assert sum(len(r.disjuncts) for r in fast.regions) == sum(len(r.disjuncts) for r in prop.regions)


@pytest.mark.parametrize("text", ["(assert (<= X_0 1)", "(assert (<= X_0 1)))", "X_0 (assert (<= X_0 1))"])
def test_the_fast_reader_refuses_what_the_exact_one_refuses(text):
    from cfruntime.properties.vnnlib import _read, _read_fast

    with pytest.raises(VnnlibError):
        _read_fast(text)
    with pytest.raises(VnnlibError):
        _read(text, "t")
