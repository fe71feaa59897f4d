"""Compiled certifiers are sound on real networks (issue 5, acceptance 4, in part): for IBP,
CROWN-IBP, DeepPoly and DeepZ, the bounds of every layer and of the robustness margins on the first 10
images contain every concrete value the soundness checker finds (uniform samples, box vertices, PGD).
Skips cleanly when ../shared is absent.  The networks are the tractable part of the paper's set
(the larger MLPs and conv nets are covered by bench/certify.py, not by CI)."""

import pytest
import torch

from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.network import load_onnx
from cfruntime.properties import load_eran_csv, load_manifest, robustness_property, shared_dir
from cfruntime.soundness import check_bounds

SHARED = shared_dir()
# network -> (dataset CSV, the paper's epsilon for it)
NETS = {
    "mnist_relu_3_50": ("mnist_test.csv", 0.005),
    "mnist_relu_3_100": ("mnist_test.csv", 0.004),
    "mnist_convSmallRELU__DiffAI": ("mnist_test.csv", 0.1),
    "cifar_relu_4_100.nchwfix": ("cifar10_test.csv", 4e-5),
}
CERTIFIERS = ("ibp", "crown_ibp", "deeppoly", "deepz")


@pytest.fixture(scope="module")
def problems():
    if SHARED is None:
        pytest.skip("../shared (networks and data) not available")
    entries = {e.path.stem: e for e in load_manifest()}
    out = {}
    for name, (csv, eps) in NETS.items():
        entry = entries[name]
        sem = entry.default_semantics()
        net = load_onnx(entry.path, **entry.load_kwargs(sem))
        prop = robustness_property(load_eran_csv(SHARED / "data" / csv, stop=10), eps, entry.convention(sem),
                                   net.input_shape, num_classes=net.output_size)
        out[name] = (net, prop)
    return out


@pytest.mark.parametrize("certifier", CERTIFIERS)
@pytest.mark.parametrize("net_name", sorted(NETS))
def test_compiled_bounds_are_sound(problems, net_name, certifier):
    net, prop = problems[net_name]
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
