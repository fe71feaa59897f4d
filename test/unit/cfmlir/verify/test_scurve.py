"""The sigmoid's tangent and chord lemmas (cfmlir/verify/scurve.py): true of the real sigmoid (mpmath),
a satisfiable case is never refuted (the obvious counterexample of an unlifted tangent), the lifted
tangent's hard case is refuted, the prover needs the lemmas for CROWN's lines (verified with them, not
without), and alpha_deeppoly's CROWN lines are proved while their mutants are not."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import z3

from cfmlir.certifiers import certifier_source
from cfmlir.verify import VERIFIED, scurve, verify_source
from cfmlir.verify import expr as E

mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 40


def _q(v) -> z3.ArithRef:
    return z3.RealVal(Fraction(mpmath.nstr(v, 35, min_fixed=-50, max_fixed=50)))


@pytest.mark.parametrize("seed", range(4))
def test_lemmas_hold_for_the_real_sigmoid(seed):
    """Every instance of (T) and (C) that :func:`scurve.lemmas` states for points on their sides is
    true at 40 digits (points far apart, near 0 and on 0)."""
    rng = random.Random(seed)
    for _ in range(25):
        ps = [mpmath.mpf(rng.choice([rng.uniform(-8, 8), rng.uniform(-0.01, 0.01), 0.0])) for _ in range(4)]
        points = [(_q(p), _q(1 / (1 + mpmath.exp(-p)))) for p in ps]
        signs = [(-1 if p < 0 else 1) if p != 0 else rng.choice([-1, 1]) for p in ps]
        facts = scurve.lemmas(points, signs)
        assert len(facts) > 10
        for f in facts:
            assert z3.is_true(z3.simplify(f)), (ps, f)


def _sig(p):
    return E.inv(E.add(E.ONE, E.exp(E.neg(p))))


def _tangent(d, x):
    s = _sig(d)
    return E.add(s, E.mul(s, E.sub(E.ONE, s), E.sub(x, d)))


def _straddling(d_upper: bool = True):
    l, u, x, d = (E.var(n) for n in ("l", "u", "x", "d"))
    return l, u, x, d, [E.cmp(E.sub(x, l), False), E.cmp(E.sub(u, x), False), E.cmp(E.neg(l), True),
                        E.cmp(u, True), E.cmp(d, False), E.cmp(E.sub(u, d), False)]


def test_a_satisfiable_case_is_not_refuted():
    """The tangent at d in [0, u] without its lift is below the sigmoid at x = l (l = -4, u = 4, d = 0:
    T_0(-4) = -1/2): the case is satisfiable and the lemmas must not refute it (a wrong link between a
    sigmoid's real and its exp did)."""
    l, u, x, d, atoms = _straddling()
    atoms += [E.cmp(E.sub(_tangent(u, l), _sig(l)), False),  # CROWN's test: T_u(l) >= sigma(l)
              E.cmp(E.sub(_sig(x), _tangent(d, x)), True)]  # the negated claim sigma(x) <= T_d(x)
    assert not scurve.unsat(atoms, timeout=5.0)


def test_the_lifted_tangent_is_refuted():
    """Where the tangent at d passes below (l, sigma(l)), the lifted line sigma(l) + sigma'(d) (x - l) is
    above the sigmoid on [l, u]: its negation is refuted by the lemmas."""
    l, u, x, d, atoms = _straddling()
    s = _sig(d)
    lifted = E.add(_sig(l), E.mul(s, E.sub(E.ONE, s), E.sub(x, l)))
    atoms += [E.cmp(E.sub(_sig(l), _tangent(d, l)), False), E.cmp(E.sub(_sig(x), lifted), True)]
    assert scurve.unsat(atoms, timeout=5.0)
    assert not scurve.unsat(atoms[:-2] + atoms[-1:], timeout=5.0)  # (needs its case)


LIFTED = """
def Shape as (Float l, Float u, PolyExp L, PolyExp U){[(curr[l]<=curr),(curr[u]>=curr),(curr[L]<=curr),(curr[U]>=curr)]};
func priority(Neuron n) = n[layer];
func stop(Neuron n) = false;
func ds(Float x) = sigma(x) * (1.0 - sigma(x));
func at(Float d, Float x) = sigma(d) + ds(d) * (x - d);
param d for Sigmoid in [0.0, max(prev[u], 0.0)] init max(prev[u], 0.0);
transformer t{
    Sigmoid -> (sigma(prev[l]), sigma(prev[u]), sigma(prev[l]), sigma(curr[d]) + ds(curr[d]) * (prev - curr[d]) + max(0.0, sigma(prev[l]) - at(curr[d], prev[l])));
}
flow(forward, priority, stop, t);
"""


def test_the_prover_needs_the_lemmas(monkeypatch):
    """CROWN's lifted tangent at any point of [0, u] is verified with the lemmas and not without."""
    (r,) = verify_source(LIFTED, "lifted.cf", K=2, M=2, timeout=60, ops={"Sigmoid"})
    assert r.status == VERIFIED, r.line()
    monkeypatch.setattr(scurve, "unsat", lambda *a, **k: False)
    (r,) = verify_source(LIFTED, "lifted.cf", K=2, M=2, timeout=20, ops={"Sigmoid"})
    assert r.status != VERIFIED


#: alpha_deeppoly's Sigmoid rule changed into an unsound one: the tangent not lifted; a tangent point
#: allowed below 0 (its tangent is below the sigmoid right of the convex part)
MUTANTS = [
    ("sig_tangent(n, d) + max(0.0, sigma(n[l]) - sig_at(d, n[l]))", "sig_tangent(n, d)"),
    ("param sdu for Sigmoid in [0.0, max(prev[u], 0.0)]", "param sdu for Sigmoid in [min(prev[l], 0.0), max(prev[u], 0.0)]"),
]


@pytest.mark.parametrize("old, new", MUTANTS, ids=["unlifted", "wide_domain"])
def test_unsound_crown_lines_are_not_verified(old, new):
    text, file = certifier_source("alpha_deeppoly")
    assert text.count(old) == 1
    (r,) = verify_source(text.replace(old, new), "mutant.cf", K=2, M=2, timeout=30, ops={"Sigmoid"})
    assert r.status != VERIFIED, r.line()


@pytest.mark.parametrize("op", ["Sigmoid", "Tanh"])
def test_the_shipped_crown_lines_are_verified(op):
    """alpha_deeppoly's Sigmoid and Tanh rules -- every case, the tangent points (one-sided intervals
    included, since 2026-12-03) anywhere in their domains -- are verified."""
    text, file = certifier_source("alpha_deeppoly")
    (r,) = verify_source(text, file, K=2, M=2, timeout=120, ops={op})
    assert r.status == VERIFIED, r.line()
