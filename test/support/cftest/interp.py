"""Shared helpers of the interpreter tests: hand-built layer graphs and the shared corpus."""

from __future__ import annotations


import torch

from cfruntime.network.graph import Layer, Network
from cftest import REPO

REPO_ROOT = REPO
SHARED = REPO_ROOT.parent / "shared"


def mlp(weights, biases, activation: str = "relu") -> Network:
    """input -> (affine -> activation)* -> affine, from nested lists ``weights[i]`` ``[out, in]``."""
    n_in = len(weights[0][0])
    layers = [Layer(index=0, kind="input", shape=(n_in,))]
    for i, (w, b) in enumerate(zip(weights, biases)):
        wt = torch.tensor(w, dtype=torch.float64)
        bt = torch.tensor(b, dtype=torch.float64)
        idx = len(layers)
        layers.append(Layer(index=idx, kind="affine", shape=(wt.shape[0],), preds=[idx - 1], linear_kind="dense",
                            weight=wt, bias=bt))
        if i < len(weights) - 1:
            layers.append(Layer(index=idx + 1, kind=activation, shape=(wt.shape[0],), preds=[idx]))
    return Network(layers, source="handbuilt.onnx")


def random_mlp(sizes, seed: int, activation: str = "relu", scale: float = 1.0) -> Network:
    g = torch.Generator().manual_seed(seed)
    ws, bs = [], []
    for a, b in zip(sizes[:-1], sizes[1:]):
        ws.append((torch.randn(b, a, generator=g, dtype=torch.float64) * scale / a ** 0.5).tolist())
        bs.append((torch.randn(b, generator=g, dtype=torch.float64) * 0.3).tolist())
    return mlp(ws, bs, activation)


def shared_mnist_3x50():
    """(network, property with 10 images at eps 0.005); the calling test is skipped when ../shared is absent."""
    net_path = SHARED / "nets" / "mnist_relu_3_50.onnx"
    data_path = SHARED / "data" / "mnist_test.csv"
    if not (net_path.is_file() and data_path.is_file()):
        import pytest

        pytest.skip("../shared (mnist_relu_3_50.onnx, mnist_test.csv) not available")
    from cfruntime.network import load_onnx
    from cfruntime.properties import load_eran_csv, robustness_property

    net = load_onnx(net_path)
    imgs = load_eran_csv(data_path, "mnist", stop=10)
    return net, robustness_property(imgs, 0.005, "std", net.input_shape)


#: the hand-built 2-3-3-2 ReLU net of test_hand_bounds.py (always active, always inactive and crossing neurons;
#: its bounds derived by hand there)
NET_B = dict(
    weights=[[[1, 1], [1, -1], [1, 1]], [[1, 0, -2], [0, 1, 1], [-1, 0, 2]], [[1, 1, -1], [-1, 0, 1]]],
    biases=[[3, -3, -1], [-2, 0, 2], [0, 1]],
)


def assert_close(got, want, tol: float = 1e-9) -> None:
    """``got`` and ``want``, two sequences of numbers, have the same length and agree within ``tol``."""
    import pytest

    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == pytest.approx(w, abs=tol), (got, want)


def hand_analysis(certifier: str, net: dict, want):
    """The interpreter's analysis by ``certifier`` of a hand-built net (``net``: :func:`mlp`'s keyword
    arguments, two inputs) on the box [-1, 1]^2, its output bounds asserted to be ``want`` = (lower, upper)."""
    from cfmlir.interpreter.run import analyze, load_certifier

    res = analyze(load_certifier(certifier), mlp(**net), [-1.0, -1.0], [1.0, 1.0])
    lo, hi = want
    assert_close(res.lower, lo)
    assert_close(res.upper, hi)
    return res
