"""Fixtures shared by the ``cf-run`` tests: a tiny 784-input network and a two-row MNIST-shaped CSV."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from cfruntime.network.builders import mlp_model


@pytest.fixture()
def tiny_net(tmp_path):
    """A 784-input MLP (so MNIST CSV rows fit): 784 -> 4 -> relu -> 10."""
    rng = np.random.default_rng(0)
    w = [rng.standard_normal((4, 784)).astype(np.float32) * 0.05, rng.standard_normal((10, 4)).astype(np.float32)]
    p = tmp_path / "tiny.onnx"
    onnx.save(mlp_model(w, activations="relu", input_shape=(1, 28, 28)), str(p))
    return p


@pytest.fixture()
def csv(tmp_path):
    """Two ERAN CSV rows (labels 3 and 7, random pixels)."""
    rng = np.random.default_rng(1)
    rows = [[3] + rng.integers(0, 256, 784).tolist(), [7] + rng.integers(0, 256, 784).tolist()]
    p = tmp_path / "data.csv"
    p.write_text("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return p


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """A generated benchmark folder (:func:`cftest.instances_folder.make_instances_folder`): its ``"dir"`` and
    what the results are checked against."""
    from cftest.instances_folder import make_instances_folder

    return make_instances_folder(tmp_path_factory.mktemp("bench"))
