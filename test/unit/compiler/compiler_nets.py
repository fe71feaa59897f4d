"""Small networks built in the tests (no ../shared needed)."""

import numpy as np

import torch

from cfruntime.network import network_from_model
from cfruntime.network.builders import mlp_model


def mlp(sizes, activation="relu", seed=0):
    rng = np.random.default_rng(seed)
    weights = [rng.normal(size=(o, i)).astype(np.float32) for i, o in zip(sizes[:-1], sizes[1:])]
    biases = [rng.normal(size=o).astype(np.float32) for o in sizes[1:]]
    acts = [activation] * (len(weights) - 1) + [None]
    return network_from_model(mlp_model(weights, biases, acts, input_shape=(sizes[0],)))


def boxes(n_in, batch=3, seed=1, radius=0.3):
    g = torch.Generator().manual_seed(seed)
    centre = torch.rand(batch, n_in, generator=g, dtype=torch.float64) * 2 - 1
    r = torch.rand(batch, n_in, generator=g, dtype=torch.float64) * radius
    return centre - r, centre + r


