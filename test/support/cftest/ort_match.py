"""Loaded networks against onnxruntime: :func:`matches_ort` (float32 onnxruntime on random inputs, one
sample at a time in the model's declared input shape), and small helpers for building test models."""

from __future__ import annotations

import numpy as np
import torch

from cfruntime.network import network_from_model
from cftest.onnx_reference import ort_session

RNG = np.random.default_rng(2727)


def f32(*shape, scale=1.0):
    """Random float32 weights."""
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def matches_ort(model, n=6, spread=2.0, tol=2e-5):
    """The loaded network equals onnxruntime (float32) on ``n`` random inputs in ``[-spread, spread]``
    to ``tol`` relative; returns the network."""
    net = network_from_model(model)
    sess = ort_session(model)
    inp = sess.get_inputs()[0]
    shape = [1 if not isinstance(d, int) else d for d in inp.shape]
    xs = RNG.uniform(-spread, spread, (n, net.input_size))
    ours = net(torch.from_numpy(xs)).numpy()
    ref = np.stack([sess.run(None, {inp.name: x.astype(np.float32).reshape(shape)})[0].reshape(-1) for x in xs])
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    err = np.abs(ours - ref).max()
    assert err <= tol * max(1.0, float(np.abs(ref).max())), err
    return net


def kinds(net) -> list[str]:
    """The layer kinds of a network, in order."""
    return [l.kind for l in net.layers]
