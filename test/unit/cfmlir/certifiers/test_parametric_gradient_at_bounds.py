"""The slopes' gradient where optimisation starts: at the ends of their domains.

alpha_deeppoly starts every slope at DeepPoly's choice, 0 or 1 -- an end of its domain ``[0, 1]`` --
and the first Adam step moves each slope by the learning rate in the direction of its gradient, so
that gradient must be the derivative of the bounds in the direction that stays in the domain (the
one-sided derivative: up from 0, down from 1), as alpha-CROWN's is.  A spec that scales the
coefficient before its sign test (``subst_lower(n, max(c, 0) * al + min(c, 0))``) has the same
bounds but, at ``al = 0``, a scaled coefficient of exactly 0 whose sign split gave the slope a
gradient that is neither side's (on mnist 6x100 the first step then lowered the summed margins
445 -> 378 where alpha-CROWN's raised them to 461); that form (:data:`SCALED_FIRST`) failed this test
until every split gave a 0 the positive side's gradient (below); the mutants here still fail it.

Checked: the sign (what decides the first step) and the size (what Adam's later steps divide by).
At a slope of exactly 0 autograd gave twice the one-sided derivative (2.0000000 here; at 1 they agreed
to 1e-9): the product ``c * al`` is 0 there, and the next affine layer's split ``t+ L + t- U`` of that
0 passed ``L + U`` (clamp's gradient 1 at 0 on both halves) where ``L`` and ``U`` are one map; the
negative part's gradient is 0 at 0 now (``cfruntime.tensor.clamps.negative_part``), and the
centre/radius form's ``|x|`` has gradient 1 at 0 (``clamps.magnitude``): every split gives a 0 the
positive side's gradient."""

from __future__ import annotations

import pytest
import torch

import cfmlir
from cfmlir.certifiers import certifier_source
from cfruntime.flow.engine import run_certifier
from cfruntime.flow.param_store import ParamStore
from cftest.nets import boxes, mlp

#: the shipped replacement functions rewritten in the scaled-coefficient form (for the failing case)
SCALED_FIRST = (
    ("func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? ((coeff * n[al]) * n[L]) : (coeff * n[U]);",
     "func replace_lower(Neuron n, Float coeff) = ((max(coeff, 0.0) * n[al] + min(coeff, 0.0)) >= 0.0) ? "
     "((max(coeff, 0.0) * n[al] + min(coeff, 0.0)) * n[L]) : ((max(coeff, 0.0) * n[al] + min(coeff, 0.0)) * n[U]);"),
)
H = 1e-7


def _one_sided_errors(cert, net, lb, ub, sparse: bool = True, limit: int = 60) -> tuple[int, list]:
    """``(entries checked, mismatches)``: for slopes of the margins' lower bounds (``al``) at an end of
    a domain wider than a point, autograd's derivative of the summed lower bounds against the one-sided
    finite difference into the domain (sign, and size to 1e-5)."""
    ps = ParamStore(requires_grad=True)
    with torch.enable_grad():
        res = run_certifier(cert, net, lb, ub, dtype=torch.float64, widen=False, params=ps, graph=False, sparse=sparse)
        res.lower.sum().backward()
    base = float(res.lower.detach().sum())
    last = net.layers[-1].index
    checked, bad = 0, []
    for key, raw in ps.raw.items():
        t, grad = raw.detach(), raw.grad
        if key[0] != "al" or key[1] != last:
            continue
        lo, hi = ps.last_domains[(key[0], key[2])]
        lo, hi = lo.unsqueeze(1).expand(t.shape), hi.unsqueeze(1).expand(t.shape)
        at_end = (lo < hi) & ((t == lo) | (t == hi))
        for idx in at_end.nonzero().tolist()[:limit]:
            idx = tuple(idx)
            step = H if float(t[idx]) == float(lo[idx]) else -H
            values = {k: v.detach().clone() for k, v in ps.raw.items()}
            values[key][idx] += step
            store = ParamStore()
            store.raw = values
            moved = float(run_certifier(cert, net, lb, ub, dtype=torch.float64, widen=False, params=store,
                                        graph=False, sparse=sparse).lower.sum())
            fd, ad = (moved - base) / step, float(grad[idx])
            if abs(fd) < 1e-6:  # the slope does not matter here (a dead path): nothing to compare
                continue
            checked += 1
            # the first Adam step moves the slope by the learning rate in the direction of the sign of
            # its gradient: that sign must be the one-sided derivative's, and its size too (Adam's
            # later steps are scaled by the first gradients' squares)
            if (fd > 0) != (ad > 0) or abs(ad - fd) > 1e-5 * max(1.0, abs(fd)):
                bad.append((key, idx, ad, fd))
    return checked, bad


def _problem():
    net = mlp([4, 14, 14, 14, 3], seed=7)
    lb, ub = boxes(net.input_size, batch=2, seed=2, radius=0.8)
    return net, lb, ub


@pytest.mark.parametrize("sparse", [True, False])
def test_alpha_deeppoly_slopes_get_the_one_sided_derivative_at_their_ends(shipped, sparse):
    net, lb, ub = _problem()
    checked, bad = _one_sided_errors(shipped.compiled("alpha_deeppoly"), net, lb, ub, sparse)
    assert checked >= 20, f"only {checked} slopes at an end of their domain: the test would check little"
    assert not bad, f"{len(bad)} of {checked} slopes: autograd differs from the one-sided derivative, e.g. {bad[:3]}"


def _scaled_first():
    src = certifier_source("alpha_deeppoly")[0]
    for old, new in SCALED_FIRST:
        assert old in src
        src = src.replace(old, new)
    return cfmlir.compile(src).compiled


@pytest.mark.parametrize("sparse", [True, False])
def test_the_scaled_coefficient_form_gets_them_too(sparse):
    """The same bounds written with the coefficient scaled before its sign test: at ``al = 0`` the scaled
    coefficient is 0 and its split at the ReLU a kink.  Every split gives a 0 the positive side's
    gradient (``positive_part`` 1, ``negative_part`` 0, the centre/radius form's ``magnitude`` 1), the
    side a slope at 0 moves into, so this form's gradients are the one-sided derivatives too (it had a
    wrong sign once, with clamp's gradient on both halves, and the mean of both sides' with abs's)."""
    net, lb, ub = _problem()
    checked, bad = _one_sided_errors(_scaled_first(), net, lb, ub, sparse)
    assert checked >= 20 and not bad, f"{len(bad)} of {checked}: {bad[:3]}"


def test_abs_gradient_in_the_box_split_fails_this_test(monkeypatch):
    """The centre/radius split ``x (p + n)/2 + |x| (p - n)/2`` with abs's gradient (0 at 0): a 0 met at
    a ReLU (the scaled-first form's) passes ``(p + n)/2``, and the size check fails."""
    from cfruntime.tensor import ops_table

    monkeypatch.setitem(ops_table.UNARY, "magnitude", torch.abs)
    net, lb, ub = _problem()
    checked, bad = _one_sided_errors(_scaled_first(), net, lb, ub, sparse=False)
    assert checked >= 20 and bad


def test_clamps_gradient_on_both_halves_fails_this_test(shipped, monkeypatch):
    """The runtime before: ``min(c, 0)`` with clamp's gradient (1 at 0, as ``max(c, 0)``'s): the split of
    a 0 passes ``L + U``, twice the slope's derivative at 0 -- this test's size check fails."""
    from cfruntime.tensor import clamps, segmented_ops

    def clamp_gradient(t):
        return t.clamp(max=0)

    monkeypatch.setattr(clamps, "negative_part", clamp_gradient)
    monkeypatch.setattr(segmented_ops, "negative_part", clamp_gradient)
    net, lb, ub = _problem()
    checked, bad = _one_sided_errors(shipped.compiled("alpha_deeppoly"), net, lb, ub, sparse=False)
    assert checked >= 20 and bad
    assert all(abs(ad / fd - 2.0) < 1e-4 for _, _, ad, fd in bad), bad[:3]  # exactly doubled
