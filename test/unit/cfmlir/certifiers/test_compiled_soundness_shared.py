"""Compiled certifiers are sound on real networks (issue 5, acceptance 4): for IBP, CROWN-IBP, DeepPoly
and DeepZ, on every fully-connected and every ConvSmall network in ``../shared/nets`` at the paper's
epsilon for it, the bounds of every layer and of the robustness margins on the first 10 images contain
every concrete value the soundness checker finds (uniform samples, box vertices, PGD).  Skips cleanly
when ../shared is absent.  (ConvMed/ConvBig are benchmarked by bench/certify.py, not tested in CI.)"""

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


def test_the_set_is_the_evaluations():
    assert len(NETS) == 24 and "mnist_convSmallRELU__DiffAI" in NETS and "cifar_relu_7_1024" in NETS
    assert not any("convMed" in n or "convBig" in n for n in NETS)


# one network at a time (``problem`` caches only the last one loaded)
@pytest.mark.parametrize(("net_name", "certifier"), list(product(NETS, CERTIFIERS)))
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
