"""``cfmlir.BoundedNetwork`` against auto_LiRPA 0.7.1 (the peer): ``deeppoly`` = its ``CROWN`` and
``crown_ibp`` = its ``CROWN-IBP`` on the same ``nn.Module``s, for explicit boxes, per-sample ``eps``
and custom ``C``, within ``1e-3 + 1e-4`` relative, on an MLP and a CNN (convolutions, BatchNorm,
ReLU: auto_LiRPA bounds max pooling only with stride = kernel, and relaxes it otherwise), in float32 (auto_LiRPA's convolutions mix in
float32 tensors in float64; ours are widened, as by default).  auto_LiRPA runs in its own environment
(``../peer-venv-grad``, or ``$CF_PEER_PYTHON``; set-up in ``../shared/peers/README.md``), in a
subprocess; without it these tests skip."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch

import cfmlir
from cftest import REPO
from cftest import torch_models as tm

PEERS = REPO.parent / "shared" / "peers"
PEER_PYTHON = Path(os.environ.get("CF_PEER_PYTHON", REPO.parent / "peer-venv-grad" / "bin" / "python"))
SCRIPT = REPO / "test" / "support" / "cftest" / "lirpa_reference.py"

pytestmark = pytest.mark.skipif(not (PEER_PYTHON.is_file() and (PEERS / "auto_LiRPA" / "auto_LiRPA").is_dir()),
                                reason="auto_LiRPA's environment (../peer-venv-grad, ../shared/peers) is not set up")

METHODS = {"deeppoly": "CROWN", "crown_ibp": "CROWN-IBP"}


def _regions(name: str):
    """``{case: (lb, ub, C)}``: a box of random widths, a per-sample eps ball, a custom C."""
    g = torch.Generator().manual_seed(7)
    x = tm.inputs(name, batch=3, dtype=torch.float32)
    width = torch.rand(x.shape, generator=g) * 0.1
    eps = torch.tensor([0.01, 0.03, 0.08]).view(-1, *([1] * (x.dim() - 1)))
    C = torch.randn(3, 4, 3, generator=g)
    eye = torch.eye(3)
    margins = eye[torch.tensor([0, 1, 2])].unsqueeze(1) - eye.unsqueeze(0)
    return {"box": (x - width, x + 2 * width, margins), "per_sample_eps": (x - eps, x + eps, margins),
            "custom_C": (x - 0.02, x + 0.02, C)}


def _peer(tmp_path, model, cases) -> dict:
    src, dst = tmp_path / "problem.pt", tmp_path / "bounds.pt"
    torch.save({"model": model, "cases": cases}, src)
    # the pickled models' classes (cftest.torch_models) import torch only
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PEERS / "auto_LiRPA"), str(REPO / "test" / "support")]),
               OMP_NUM_THREADS="2")
    run = subprocess.run([str(PEER_PYTHON), str(SCRIPT), str(src), str(dst)], env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return torch.load(dst, weights_only=False)


@pytest.mark.parametrize("name", ["mlp", "plain_cnn"])
def test_same_bounds_as_auto_lirpa(tmp_path, name):
    model = tm.model(name, dtype=torch.float32)
    regions = _regions(name)
    cases = {f"{cert}/{case}": {"lb": lb, "ub": ub, "C": C, "method": METHODS[cert]}
             for cert in METHODS for case, (lb, ub, C) in regions.items()}
    peer = _peer(tmp_path, model, cases)
    x = tm.inputs(name, batch=3, dtype=torch.float32)
    for cert in METHODS:
        bounded = cfmlir.BoundedNetwork(model, cert)
        for case, (lb, ub, C) in regions.items():
            if case == "per_sample_eps":
                ours = bounded.bounds(x, eps=(ub - lb)[:, 0, 0, 0] / 2, C=C)
            else:
                ours = bounded.bounds(box=(lb, ub), C=C)
            for got, want in zip(ours, peer[f"{cert}/{case}"]):
                torch.testing.assert_close(got.detach(), want, rtol=1e-4, atol=1e-3, msg=lambda m: f"{cert} {case}: {m}")


@pytest.mark.parametrize("name", ["mlp_sigmoid", "mlp_tanh"])
def test_crown_s_curve_lines_as_auto_lirpa(tmp_path, name):
    """``alpha_deeppoly`` at its initial tangent points has CROWN's sigmoid and tanh lines: its bounds are
    auto_LiRPA's ``CROWN`` on boxes wide enough that most neurons straddle 0 (scaled inputs, up to 3)."""
    model = tm.model(name, dtype=torch.float32)
    x = tm.inputs(name, batch=3, dtype=torch.float32)
    cases = {}
    for w in (0.05, 0.5, 3.0):
        cases[f"w{w}"] = {"lb": x - w, "ub": x + w, "C": None, "method": "CROWN"}
    peer = _peer(tmp_path, model, cases)
    bounded = cfmlir.BoundedNetwork(model, "alpha_deeppoly")
    for case, c in cases.items():
        got = bounded.bounds(box=(c["lb"], c["ub"]))
        for g, want in zip(got, peer[case]):
            torch.testing.assert_close(g.detach(), want, rtol=1e-4, atol=1e-3, msg=lambda m: f"{name} {case}: {m}")
