"""Compiled certifiers are sound on the VNN-COMP 2024 networks that make the new layer kinds (issue 27,
acceptance 2): on one instance of each -- lsnc (sin, cos, products), ml4acopf_2024 (floor, products),
traffic_signs_recognition_2023 (sign), vit_2023 (attention: products, exp, reciprocal), cgan_2023
(ConvTranspose) -- the bounds of every layer and of the output rows contain every concrete value the
soundness checker finds (uniform samples, box vertices, PGD on the most threatened neurons).  On the wide
nets only a prefix is analysed (the layers up to the first that makes each new kind), so that each case
takes seconds, not minutes: a prefix of a network is a network, and its bounds are those the whole
analysis computes for those layers.  Skips cleanly when the benchmark checkout (``../vnncomp2024`` beside
the repository, or ``$VNNCOMP2024``) is absent."""

from __future__ import annotations

import csv
import os
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import torch

from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.gzio import existing
from cfruntime.network import load_onnx
from cfruntime.network.graph import Network
from cfruntime.properties.vnnlib import parse_vnnlib
from cfruntime.soundness import check_bounds

ROOT = Path(os.environ.get("VNNCOMP2024", Path(__file__).resolve().parents[4].parent / "vnncomp2024")) / "benchmarks"
#: benchmark -> (network, the layer kinds its analysed prefix must make, the last layer kept or None: all)
NETS = {
    "lsnc": ("onnx/quadrotor2d_state.onnx", {"sin", "cos", "mul"}, None),
    "ml4acopf_2024": ("onnx/14_ieee_ml4acopf-linear-residual.onnx", {"floor", "mul"}, 41),
    "traffic_signs_recognition_2023": ("onnx/3_30_30_QConv_16_3_QConv_32_2_Dense_43_ep_30.onnx", {"sign"}, 6),
    "vit_2023": ("onnx/pgd_2_3_16.onnx", {"mul", "exp", "reciprocal"}, 12),
    # its Softmax's differences are a gather of the 867 scores (not a 14739 x 13872 dense map: 1.6 GB each,
    # > 8 GB to load the net before 2026-11-29; 3.6 GB now)
    "vit_2023:ibp_3_3_8": ("onnx/ibp_3_3_8.onnx", {"mul", "exp", "reciprocal"}, 12),
    # layers 1-3: the ConvTranspose (a convolution of its phases, their interleaving) and its bias/BN
    "cgan_2023": ("onnx/cGAN_imgSz32_nCh_1.onnx", {"affine", "relu"}, 4),
}
#: margin rows checked on a prefix's last layer (its whole width would make a C of size^2)
ROWS = 10
CERTIFIERS = ("ibp", "deepz", "deeppoly")


@lru_cache(maxsize=1)
def instance(benchmark: str):
    folder = ROOT / benchmark.split(":")[0]
    onnx_name, kinds, last = NETS[benchmark]
    if not (folder / "instances.csv").is_file() or not existing(folder / onnx_name).is_file():
        pytest.skip(f"{folder}: the VNN-COMP 2024 benchmark files are not here")
    rows = [r for r in csv.reader((folder / "instances.csv").read_text().splitlines()) if r]
    vnnlib = next(r[1].strip() for r in rows if Path(r[0].strip()).name == Path(onnx_name).name)
    net = load_onnx(existing(folder / onnx_name))
    if last is not None:
        net = Network(net.layers[: last + 1], source=f"{net.source} (layers 0-{last})")
    assert kinds <= {layer.kind for layer in net.layers}, sorted({layer.kind for layer in net.layers})
    prop = parse_vnnlib(existing(folder / vnnlib))
    return net, prop


@pytest.mark.parametrize("certifier", CERTIFIERS)
@pytest.mark.parametrize("benchmark", sorted(NETS))
def test_compiled_bounds_are_sound_on_the_benchmark_net(benchmark, certifier):
    net, prop = instance(benchmark)
    region = prop.regions[0]
    lb = torch.from_numpy(np.asarray(region.lb, dtype=np.float64)).reshape(1, -1)
    ub = torch.from_numpy(np.asarray(region.ub, dtype=np.float64)).reshape(1, -1)
    rows = torch.linspace(0, net.output_size - 1, min(ROWS, net.output_size)).round().long().unique()
    C = torch.eye(net.output_size, dtype=torch.float64)[rows].unsqueeze(0)
    cert = compile_certifier(*load_certifier_source(certifier), pipeline_for(True))
    mnet = net.with_margin_layer(C)
    res = run_certifier(cert, mnet, lb, ub)
    layers = {}
    for layer in mnet.layers[1:-1]:
        lo = gb.to_dense(res.store.get(layer.index, "l"))
        hi = gb.to_dense(res.store.get(layer.index, "u"))
        assert not torch.isnan(lo).any() and not torch.isnan(hi).any() and (lo <= hi + 1e-9).all()
        layers[layer.index] = (lo, hi)
    violations = check_bounds(net, lb, ub, layers, margin_bounds=(res.lower, res.upper), C=C,
                              n_samples=32, n_vertices=16, pgd_steps=10, pgd_neurons=8)
    assert violations == [], [str(v) for v in violations[:5]]
