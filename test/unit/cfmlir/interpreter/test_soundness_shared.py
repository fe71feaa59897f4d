"""Acceptance 3 (second half): every shipped certifier, run by the interpreter on the shared MNIST 3x50
net (eps 0.005, the first 5 images), gives bounds in which the empirical soundness checker
(:func:`cfruntime.soundness.check_bounds`: samples, vertices, PGD) finds no violation -- for every
layer of the margin network, the margins included.  Skipped when ../shared is absent.

All certifiers' bounds are checked in one ``check_bounds`` call (the boxes repeated once per
certifier) to keep the checker's fixed costs down; each certifier is still its own test.

Cost (the interpreter runs neuron by neuron, about 27 s for the 19 certifiers on one image on a CI
core): 5 images, not 10 as before -- every certifier's rules (ReLU crossing, back-substitution through
every layer, the margin layer) are exercised on each of these images, so a wrong rule shows on the
first ones; further images repeated the same rules on other boxes at twice the cost.  And
``deeppoly_5`` ... ``deeppoly_8`` run on the first 2 images only: on this net (input, 3 x (affine,
ReLU), margin layer: 8 layers) the back-substitution of ``deeppoly_p`` stops below layer
``cl - 2p < 0`` for every p >= 4, i.e. never, whatever the image, so these four compute exactly what
``deeppoly_4`` computes; the test asserts that equality (bit for bit) on those images and checks them
for soundness there too."""

from __future__ import annotations

import pytest
import torch

from cfmlir.certifiers import certifier_names
from cfmlir.interpreter.run import certify_sample, load_certifier
from cftest.interp import shared_mnist_3x50

NAMES = certifier_names()
IMAGES = 5
#: the deeppoly_p members whose depth exceeds this net's (the same computation as deeppoly_4 here)
AS_DEEPPOLY_4 = ("deeppoly_5", "deeppoly_6", "deeppoly_7", "deeppoly_8")
AS_DEEPPOLY_4_IMAGES = 2


def images(name: str) -> int:
    return AS_DEEPPOLY_4_IMAGES if name in AS_DEEPPOLY_4 else IMAGES


@pytest.fixture(scope="module")
def mnist():
    net, prop = shared_mnist_3x50()
    assert len(prop) >= IMAGES
    # input, 3 x (affine, ReLU), then the margin layer: the deepest back-substitution start is layer 7
    assert len(net.with_margin_layer(prop.C).layers) == 8
    return net, prop


@pytest.fixture(scope="module")
def results(mnist):
    """name -> list of SampleResult (analysis kept) for its first ``images(name)`` images."""
    net, prop = mnist
    out = {}
    for name in NAMES:
        prog = load_certifier(name)
        out[name] = [certify_sample(prog, net, prop.lb[i], prop.ub[i], int(prop.labels[i]), keep_analysis=True)
                     for i in range(images(name))]
    return out


@pytest.fixture(scope="module")
def violations(mnist, results):
    """name -> violations found in that certifier's bounds (one batched check for all)."""
    from cfruntime.soundness import check_bounds

    net, prop = mnist
    per_layer: dict[int, tuple[list, list]] = {}
    owner, rows = [], []  # per checked box: its certifier and its image
    for name in NAMES:
        for i, r in enumerate(results[name]):
            owner.append(name)
            rows.append(i)
            for layer, (lo, hi) in r.analysis.layer_bounds().items():
                per_layer.setdefault(layer, ([], []))
                per_layer[layer][0].append(lo)
                per_layer[layer][1].append(hi)
    # Each analysis ran on the margin network of its own label; the batched margin network has the
    # same layers (the margin layer is appended after the final ReLU of this net).
    idx = torch.tensor(rows)
    mnet = net.with_margin_layer(prop.C[idx])
    assert len(mnet.layers) == len(per_layer)
    bounds = {layer: (torch.tensor(lo, dtype=torch.float64), torch.tensor(hi, dtype=torch.float64))
              for layer, (lo, hi) in per_layer.items()}
    found = check_bounds(mnet, prop.lb[idx], prop.ub[idx], bounds, n_samples=64, n_vertices=16, pgd_steps=10,
                         pgd_neurons=4)
    out = {name: [] for name in NAMES}
    for v in found:
        out[owner[v.sample]].append(v)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_no_violation_on_mnist_3x50(mnist, results, violations, name):
    net, prop = mnist
    rs = results[name]
    assert len(rs) == images(name)
    for i, r in enumerate(rs):
        lab = int(prop.labels[i])
        # the reported margins are the margin layer's bounds, the own column forced to exactly 0
        assert r.margin_lb[lab] == 0.0 and r.margin_ub[lab] == 0.0
        assert [x for j, x in enumerate(r.margin_lb) if j != lab] == [x for j, x in enumerate(r.analysis.lower) if j != lab]
        assert r.certified == all(x > 0 for j, x in enumerate(r.margin_lb) if j != lab)
        for lo, hi in r.analysis.layer_bounds().values():
            assert all(l <= h + 1e-9 and abs(l) < float("inf") and abs(h) < float("inf") for l, h in zip(lo, hi))
        if name in AS_DEEPPOLY_4:  # the same computation as deeppoly_4 on this net (module docstring)
            assert r.analysis.layer_bounds() == results["deeppoly_4"][i].analysis.layer_bounds()
    assert violations[name] == [], [str(v) for v in violations[name][:5]]
    # The net is robust at this eps: every certifier but the interval-level ones (IBP = deeppoly_0)
    # certifies at least 4 of the 5 images (a sanity check that the bounds are not trivially loose).
    if name not in ("ibp", "deeppoly_0"):
        assert sum(r.certified for r in rs) >= (4 if len(rs) == IMAGES else len(rs) - 1)
