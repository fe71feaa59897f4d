"""Compiled certifiers are sound on real networks (issue 5, acceptance 4): for IBP, CROWN-IBP, DeepPoly
and DeepZ, on every fully-connected and every ConvSmall network in ``../shared/nets`` at the paper's
epsilon for it, the bounds of every layer and of the robustness margins on the first 10 images contain
every concrete value the soundness checker finds (uniform samples, box vertices, PGD).  Skips cleanly
when ../shared is absent.  (ConvMed/ConvBig are benchmarked by bench/certify.py, not tested in CI.)

The two biggest CIFAR MLPs are checked with two certifiers each, not four (on a 2-core CI machine each
certifier took 64-103 s on cifar_relu_7_1024 and 26-76 s on cifar_relu_6_500, mostly in the check):
ibp and crown_ibp (whose back-substitution multiplies the widest matrices through all 7 layers) on
7x1024, deeppoly and deepz (the polyhedral and the zonotope domain) on 6x500.  Every certifier is
still checked on a wide CIFAR MLP (500 or 1024 neurons a layer) and on every smaller net, CIFAR's
4x100 and 6x100 included; the point of the test is compiled bounds against concrete executions, which
the other certifier of the same kind on a net of the same kind already exercises."""

from functools import lru_cache
from itertools import product

import pytest
import torch

from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.properties import PAPER_EPSILON, load_paper_problem, shared_dir
from cfruntime.soundness import check_bounds

SHARED = shared_dir()
CERTIFIERS = ("ibp", "crown_ibp", "deeppoly", "deepz")
#: every MLP and ConvSmall net of the evaluation (the conv nets other than ConvSmall are left out)
NETS = sorted(n for n in PAPER_EPSILON if "conv" not in n or "convSmall" in n)


@lru_cache(maxsize=1)
def problem(net_name: str):
    if SHARED is None:
        pytest.skip("../shared (networks and data) not available")
    return load_paper_problem(net_name, 10, SHARED)


#: the nets checked with some of the certifiers only (see the module docstring)
BIG = {"cifar_relu_7_1024": ("ibp", "crown_ibp"), "cifar_relu_6_500": ("deeppoly", "deepz")}
CASES = [(n, c) for n, c in product(NETS, CERTIFIERS) if c in BIG.get(n, CERTIFIERS)]


def test_the_set_is_the_evaluations():
    assert len(NETS) == 24 and "mnist_convSmallRELU__DiffAI" in NETS and "cifar_relu_7_1024" in NETS
    assert not any("convMed" in n or "convBig" in n for n in NETS)
    # every net is checked, every certifier on some big CIFAR MLP and on every other net
    assert {n for n, _ in CASES} == set(NETS) and set(BIG) <= set(NETS)
    assert sorted(c for cs in BIG.values() for c in cs) == sorted(CERTIFIERS)
    assert len(CASES) == 4 * len(NETS) - 4


# one network at a time (``problem`` caches only the last one loaded)
@pytest.mark.parametrize(("net_name", "certifier"), CASES)
def test_compiled_bounds_are_sound(net_name, certifier):
    net, prop = problem(net_name)
    cert = compile_certifier(*load_certifier_source(certifier), pipeline_for(True))
    mnet = net.with_margin_layer(prop.C)
    res = run_certifier(cert, mnet, prop.lb, prop.ub)
    layers = {}
    for layer in mnet.layers[1:-1]:
        lo = gb.to_dense(res.store.get(layer.index, "l"))
        hi = gb.to_dense(res.store.get(layer.index, "u"))
        assert torch.isfinite(lo).all() and torch.isfinite(hi).all() and (lo <= hi + 1e-9).all()
        layers[layer.index] = (lo, hi)
    violations = check_bounds(net, prop.lb, prop.ub, layers, margin_bounds=(res.lower, res.upper), C=prop.C,
                              n_samples=64, n_vertices=16, pgd_steps=10)
    assert violations == [], [str(v) for v in violations[:5]]
