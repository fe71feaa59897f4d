"""A ReLU's magnitude in the widening is its stored bounds' own, ``max(-l, u)``, not its input's
(:mod:`cfruntime.flow.widening`, section 7, transparent bounds): a neuron that is off has magnitude 0, so
the substitutions through the next affine layer charge nothing for it (``gamma(n) |W| m``).  Checked on
DeepPoly: the widened float32 bounds still hold for concrete executions, and the output layer's widening
shrinks when most ReLUs are off."""

from __future__ import annotations

import numpy as np
import torch

from cfmlir.compiler import compile_certifier, pipeline_for
from cfmlir.certifiers import certifier_source
from cfruntime.flow.engine import run_certifier
from cfruntime.network import network_from_model
from cfruntime.network.builders import mlp_model

N_IN, H, BATCH = 8, 48, 6


def _net(off_bias: float):
    rng = np.random.default_rng(11)
    ws = [rng.normal(size=(H, N_IN)), rng.normal(size=(H, H)), rng.normal(size=(4, H))]
    bs = [np.full(H, off_bias) + rng.normal(size=H), rng.normal(size=H), rng.normal(size=4)]
    model = mlp_model([w.astype(np.float32) for w in ws], [b.astype(np.float32) for b in bs], ["relu", "relu"],
                      input_shape=(N_IN,))
    return network_from_model(model)


def _boxes():
    g = torch.Generator().manual_seed(5)
    c = torch.rand(BATCH, N_IN, generator=g, dtype=torch.float64) * 2 - 1
    return c - 0.05, c + 0.05


def _deeppoly():
    text, file = certifier_source("deeppoly")
    return compile_certifier(text, file, pipeline_for(True), use_cache=False)


def test_widened_bounds_hold_for_concrete_executions():
    net, (lb, ub) = _net(0.0), _boxes()
    res = run_certifier(_deeppoly(), net, lb, ub, dtype=torch.float32, graph=False)
    g = torch.Generator().manual_seed(1)
    x = lb.unsqueeze(1) + (ub - lb).unsqueeze(1) * torch.rand(BATCH, 256, N_IN, generator=g, dtype=torch.float64)
    x = torch.cat([x, lb.unsqueeze(1), ub.unsqueeze(1)], 1)
    out = net.forward(x.reshape(-1, N_IN)).reshape(BATCH, -1, 4)
    lo, hi = res.lower.double().unsqueeze(1), res.upper.double().unsqueeze(1)
    assert bool((out >= lo).all()) and bool((out <= hi).all())


def test_relus_that_are_off_add_no_widening_to_the_next_layers():
    """90% of the first ReLU layer is off: the output layer's widening (DeepPoly's back-substitution
    through both ReLU and affine layers) is 0.028 with the ReLUs' own magnitudes, 0.083 when a ReLU is
    charged its input's magnitude (the rule before this test)."""
    net, (lb, ub) = _net(-3.0), _boxes()
    cert = _deeppoly()
    wide = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False)
    raw = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False, widen=False)
    assert float((raw.store.get(2, "u") == 0).float().mean()) >= 0.85
    last = net.layers[-1].index
    extra = (raw.store.get(last, "l").double() - wide.store.get(last, "l").double()).abs().max()
    assert 0 < float(extra) <= 0.04
