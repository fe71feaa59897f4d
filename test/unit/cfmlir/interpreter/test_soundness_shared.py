"""Acceptance 3 (second half): every shipped certifier, run by the interpreter on the shared MNIST 3x50
net (eps 0.005, the first 10 images), gives bounds in which the empirical soundness checker
(:func:`cfruntime.soundness.check_bounds`: samples, vertices, PGD) finds no violation -- for every
layer of the margin network, the margins included.  Skipped when ../shared is absent.

All certifiers' bounds are checked in one ``check_bounds`` call (the 10 boxes repeated once per
certifier) to keep the checker's fixed costs down; each certifier is still its own test."""

from __future__ import annotations

import pytest
import torch

from cfmlir.certifiers import certifier_names
from cfmlir.interpreter.run import certify_sample, load_certifier
from cftest.interp import shared_mnist_3x50

NAMES = certifier_names()


@pytest.fixture(scope="module")
def mnist():
    return shared_mnist_3x50()


@pytest.fixture(scope="module")
def results(mnist):
    """name -> list of SampleResult (analysis kept) for the 10 images."""
    net, prop = mnist
    out = {}
    for name in NAMES:
        prog = load_certifier(name)
        out[name] = [certify_sample(prog, net, prop.lb[i], prop.ub[i], int(prop.labels[i]), keep_analysis=True)
                     for i in range(len(prop))]
    return out


@pytest.fixture(scope="module")
def violations(mnist, results):
    """name -> violations found in that certifier's bounds (one batched check for all)."""
    from cfruntime.soundness import check_bounds

    net, prop = mnist
    n = len(prop)
    per_layer: dict[int, tuple[list, list]] = {}
    for name in NAMES:
        for r in results[name]:
            for layer, (lo, hi) in r.analysis.layer_bounds().items():
                per_layer.setdefault(layer, ([], []))
                per_layer[layer][0].append(lo)
                per_layer[layer][1].append(hi)
    k = len(NAMES)
    # Each analysis ran on the margin network of its own label; the batched margin network has the
    # same layers (the margin layer is appended after the final ReLU of this net).
    mnet = net.with_margin_layer(prop.C.repeat(k, 1, 1))
    assert len(mnet.layers) == len(per_layer)
    bounds = {layer: (torch.tensor(lo, dtype=torch.float64), torch.tensor(hi, dtype=torch.float64))
              for layer, (lo, hi) in per_layer.items()}
    lb = prop.lb.repeat(k, *([1] * (prop.lb.dim() - 1)))
    ub = prop.ub.repeat(k, *([1] * (prop.ub.dim() - 1)))
    found = check_bounds(mnet, lb, ub, bounds, n_samples=64, n_vertices=16, pgd_steps=10, pgd_neurons=4)
    out = {name: [] for name in NAMES}
    for v in found:
        out[NAMES[v.sample // n]].append(v)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_no_violation_on_mnist_3x50(mnist, results, violations, name):
    net, prop = mnist
    rs = results[name]
    assert len(rs) == 10
    for i, r in enumerate(rs):
        lab = int(prop.labels[i])
        # the reported margins are the margin layer's bounds, the own column forced to exactly 0
        assert r.margin_lb[lab] == 0.0 and r.margin_ub[lab] == 0.0
        assert [x for j, x in enumerate(r.margin_lb) if j != lab] == [x for j, x in enumerate(r.analysis.lower) if j != lab]
        assert r.certified == all(x > 0 for j, x in enumerate(r.margin_lb) if j != lab)
        for lo, hi in r.analysis.layer_bounds().values():
            assert all(l <= h + 1e-9 and abs(l) < float("inf") and abs(h) < float("inf") for l, h in zip(lo, hi))
    assert violations[name] == [], [str(v) for v in violations[name][:5]]
    # The net is robust at this eps: every certifier but the interval-level ones (IBP = deeppoly_0)
    # certifies at least 8 of the 10 images (a sanity check that the bounds are not trivially loose).
    if name not in ("ibp", "deeppoly_0"):
        assert sum(r.certified for r in rs) >= 8
