"""An affine layer's substitution error left to its ReLU-like successors (:mod:`cfruntime.flow.widening`,
section 7): the successor's constants are moved by ``(1 + 8u) max(|a|, |b|) omega_k``, which needs every
float32 step through the successor's relaxation pair ``(a, b)`` to make coefficients over ``k`` with
``|c_k| <= |x| max(|a|, |b|) (1 + 8u)`` -- whichever form the kernel takes (the select form ``x+ a + x- b``,
the in-place ``x+ (a - b) + x b`` of a big step, the dense fallback).  Each form is checked on values
chosen to make its roundings count, and the factor is shown to be needed (the computed coefficients
exceed ``|x| max(|a|, |b|)`` itself)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cfruntime import tensor as gb
from cfruntime.flow import ops as rt
from cfruntime.flow.values import Affine
from cfruntime.tensor import DiagonalBlock, Segmented
from cfruntime.tensor import segmented_ops as so

U = 2.0 ** -24


def _pair(b: int, k: int, g: torch.Generator, near: bool):
    """Slopes ``a, b`` ``[b, k]`` in float32: a ReLU's (0, 1 and the unstable ``u / (u - l)``) and, with
    ``near``, pairs one ulp apart (``a - b`` rounds nothing, ``x+ (a - b)`` and ``x b`` round)."""
    lo = -torch.rand(b, k, generator=g, dtype=torch.float64)
    hi = torch.rand(b, k, generator=g, dtype=torch.float64)
    up = (hi / (hi - lo)).float()
    low = (torch.rand(b, k, generator=g) > 0.5).float()
    if near:
        low = torch.nextafter(up, torch.full_like(up, 2.0))
    return low, up


def _seg(core: torch.Tensor, b: int, k: int):
    return gb.add_dim(Segmented((b, k, k), 2, {0: DiagonalBlock(core, 1)}, torch.float32, "cpu"), 1)


@pytest.mark.parametrize("form", ["small", "big", "dense"])
def test_a_step_through_a_relaxation_pair_makes_coefficients_within_the_left_terms_factor(form):
    g = torch.Generator().manual_seed(5)
    b, k = 2, 600
    m = 3 if form == "small" else 40  # small: below SMALL_PRODUCT (the select form), big: in place
    assert (b * m * k <= so.SMALL_PRODUCT) == (form == "small")
    worst = 0.0
    for near in (False, True):
        a_core, b_core = _pair(b, k, g, near)
        x = (torch.randn(b, m, k, generator=g) * torch.rand(b, m, k, generator=g) * 10).float()
        zero = torch.zeros(b, 1, k)
        if form == "dense":  # the fallback's dense diagonal matrices
            lower = Affine(torch.diag_embed(a_core).unsqueeze(1), zero)
            upper = Affine(torch.diag_embed(b_core).unsqueeze(1), zero)
        else:
            lower, upper = Affine(_seg(a_core, b, k), zero), Affine(_seg(b_core, b, k), zero)
        ck = gb.to_dense(rt.substitute(x, lower, upper, 2).coeff).double()
        bound = x.double().abs() * torch.maximum(a_core.abs(), b_core.abs()).double().unsqueeze(1)
        assert bool((ck.abs() <= bound * (1 + 8 * U)).all())
        worst = max(worst, float((ck.abs() / bound.clamp(min=1e-30)).max()))
    if form == "big":  # the in-place form rounds above |x| max(|a|, |b|): the (1 + 8u) is needed
        assert worst > 1.0, worst


def test_an_inactive_neuron_carries_no_left_term():
    """DeepPoly on input - affine(2000) - relu - affine: the ReLU's constants move by the affine layer's
    left term (``gamma(2000 + .) |b|``: the substitution's constant sums over 2000 neurons) where its
    slopes are not both 0; an inactive neuron (``a = b = 0``) moves by its own terms only (its
    predecessor's magnitude times ``O(S u)``), a fraction of it."""
    from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
    from cfruntime.flow.engine import run_certifier
    from cfruntime.network import network_from_model
    from cfruntime.network.builders import mlp_model

    rng = np.random.default_rng(4)
    w1 = rng.normal(size=(2000, 4)).astype(np.float32)
    b1 = (rng.normal(size=2000) * 50).astype(np.float32)  # big biases: a big left term, stable neurons
    w2 = rng.normal(size=(3, 2000)).astype(np.float32)
    net = network_from_model(mlp_model([w1, w2], [b1, np.zeros(3, np.float32)], ["relu"], input_shape=(4,)))
    cert = compile_certifier(*load_certifier_source("deeppoly"), pipeline_for(True))
    lb, ub = torch.full((1, 4), -0.1, dtype=torch.float64), torch.full((1, 4), 0.1, dtype=torch.float64)
    wid = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False)
    raw = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False, widen=False)
    move = (wid.store.get(2, "U").const.double() - raw.store.get(2, "U").const.double()).reshape(-1)
    pre_l = raw.store.get(1, "l").reshape(-1)
    pre_u = raw.store.get(1, "u").reshape(-1)
    off, on = pre_u < 0, pre_l > 0
    assert bool(off.any()) and bool(on.any())
    left = 2000 * U * b1.__abs__()  # gamma(2000) |b|
    left = torch.from_numpy(left).double()
    assert bool((move[on] >= left[on]).all())
    assert bool((move[off] < left[off] / 4).all()), (move[off] / left[off]).max()
