"""Dataset-mode properties: CSV, HWC->CHW, boxes, conventions, margins, margin-layer folding, default data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cfruntime.default_data import default_data_path, default_network_path
from cfruntime.network import load_onnx, network_from_model
from cfruntime.network.builders import conv_residual_model, mlp_model, random_mlp_weights
from cfruntime.properties import (
    linf_box,
    load_eran_csv,
    robustness_property,
    robustness_spec,
    to_network_input,
)
from cfruntime.soundness import interval_bounds


def test_cifar_rows_are_hwc_interleaved(tmp_path):
    # pixel (h, w) channel c has value (c*7 + h + w) % 256 ; written in HWC order
    img = np.zeros((32, 32, 3), dtype=np.int64)
    for c in range(3):
        img[:, :, c] = (c * 7 + np.arange(32)[:, None] + 2 * np.arange(32)[None, :]) % 256
    p = tmp_path / "c.csv"
    p.write_text("4," + ",".join(map(str, img.reshape(-1))) + "\n")
    d = load_eran_csv(p)  # dataset inferred from the row length
    assert d.dataset == "cifar10" and d.labels.tolist() == [4] and d.lines == [1]
    x = d.images_01()
    assert x.shape == (1, 3, 32, 32)
    for c in range(3):
        assert torch.equal(x[0, c], torch.from_numpy(img[:, :, c] / 255.0))
    # the raw buffer convention reproduces the un-transposed feed
    raw = to_network_input(x, "raw_hwc_buffer", (3, 32, 32))
    assert torch.equal(raw.reshape(-1), torch.from_numpy(img.reshape(-1) / 255.0))


def test_mnist_rows_and_conventions():
    d = load_eran_csv(default_data_path(), "mnist")
    assert len(d) == 10 and d.labels.tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    x = d.images_01()
    assert x.shape == (10, 1, 28, 28) and float(x.min()) >= 0 and float(x.max()) <= 1
    assert torch.equal(to_network_input(x, "std", (1, 28, 28)), x)
    raw = to_network_input(x, "nln_raw255", (1, 1, 784))
    assert raw.shape == (10, 1, 1, 784)
    assert torch.allclose(raw.reshape(10, -1), torch.from_numpy(d.pixels.astype(np.float64)))
    d2 = load_eran_csv(default_data_path(), start=3, stop=5)
    assert d2.labels.tolist() == [0, 4] and d2.lines == [4, 5]


def test_linf_box_clips_and_maps_to_network_space():
    x = torch.tensor([[0.0, 0.02, 0.5, 0.99, 1.0]], dtype=torch.float64)
    lo, hi = linf_box(x, 0.05)
    assert torch.allclose(lo, torch.tensor([[0.0, 0.0, 0.45, 0.94, 0.95]], dtype=torch.float64))
    assert torch.allclose(hi, torch.tensor([[0.05, 0.07, 0.55, 1.0, 1.0]], dtype=torch.float64))
    lo0, hi0 = linf_box(x, 0)
    assert torch.equal(lo0, x) and torch.equal(hi0, x)
    # nln nets: bounds in 0..255 space
    d = load_eran_csv(default_data_path(), "mnist", stop=2)
    prop = robustness_property(d, 2 / 255, "nln_raw255", (1, 1, 784))
    assert prop.lb.shape == (2, 1, 1, 784)
    assert float((prop.ub - prop.lb).max()) == pytest.approx(4.0)
    assert float(prop.lb.min()) >= 0 and float(prop.ub.max()) <= 255
    assert torch.all(prop.lb <= prop.x) and torch.all(prop.x <= prop.ub)


def test_robustness_spec_rows():
    C = robustness_spec(torch.tensor([2, 0]), 4)
    assert C.shape == (2, 4, 4)
    y = torch.tensor([[1.0, 2.0, 5.0, -1.0], [3.0, 4.0, 0.0, 1.0]], dtype=torch.float64)
    m = torch.einsum("bkj,bj->bk", C, y)
    assert m.tolist() == [[4.0, 3.0, 0.0, 6.0], [0.0, -1.0, 3.0, 2.0]]  # y_true - y_j, own column 0


@pytest.mark.parametrize("kind", ["mlp_linear_end", "mlp_relu_end", "conv"])
def test_margin_layer_fold_and_append(kind):
    if kind == "conv":
        net = network_from_model(conv_residual_model(seed=4))
        x = torch.rand(3, 3, 8, 8, dtype=torch.float64)
    else:
        ws, bs = random_mlp_weights([6, 5, 4], seed=7)
        acts = ["relu", "relu"] if kind == "mlp_relu_end" else ["relu"]
        net = network_from_model(mlp_model(ws, bs, acts))
        x = torch.rand(3, 6, dtype=torch.float64)
    labels = torch.tensor([0, 3, 1])
    C = robustness_spec(labels, net.output_size)
    y = net.forward(x)
    expected = torch.einsum("bkj,bj->bk", C, y)
    mnet = net.with_margin_layer(C)
    folded = net[-1].kind == "affine"
    assert mnet.margin_folded == folded
    assert len(mnet) == len(net) + (0 if folded else 1)
    last = mnet[-1]
    assert last.batched and last.weight.shape == (3, 4, mnet[last.preds[0]].size) and last.bias.shape == (3, 4)
    assert torch.allclose(mnet.forward(x), expected, atol=1e-10)
    # per-row sample selection (used by attacks that replicate inputs)
    sid = torch.tensor([2, 2, 0])
    assert torch.allclose(mnet.forward(x[[2, 2, 0]], sample_ids=sid), expected[[2, 2, 0]], atol=1e-10)
    # the original network is untouched; a shared 2-D C is allowed too
    assert net[-1].size == net.output_size and not net[-1].batched
    assert torch.allclose(net.with_margin_layer(C[0]).forward(x), torch.einsum("kj,bj->bk", C[0], y), atol=1e-10)
    # folding makes interval arithmetic exact on the margin of the last affine layer: never looser than appending
    lb = x - 0.01
    ub = x + 0.01
    fold_b = interval_bounds(mnet, lb, ub)[len(mnet) - 1]
    app = net.with_margin_layer(C, fold=False)
    app_b = interval_bounds(app, lb, ub)[len(app) - 1]
    assert torch.all(fold_b[0] >= app_b[0] - 1e-9) and torch.all(fold_b[1] <= app_b[1] + 1e-9)
    own = torch.nn.functional.one_hot(labels, 4).bool()
    assert torch.all(fold_b[0][own] == 0) and torch.all(fold_b[1][own] == 0)


def test_verified_helper():
    d = load_eran_csv(default_data_path(), "mnist", stop=3)
    prop = robustness_property(d, 0.0, "std", (1, 28, 28))
    net = load_onnx(default_network_path())
    mnet = net.with_margin_layer(prop.C)
    b = interval_bounds(mnet, prop.lb, prop.ub)[len(mnet) - 1]
    assert prop.verified(b[0]).tolist() == [True, True, True]  # eps 0, correctly classified
    prop = robustness_property(d, 0.5, "std", (1, 28, 28))
    b = interval_bounds(mnet, prop.lb, prop.ub)[len(mnet) - 1]
    assert prop.verified(b[0]).tolist() == [False, False, False]


def test_default_data():
    p, q = default_network_path(), default_data_path()
    assert p.is_file() and q.is_file() and p.stat().st_size == 170017
    net = load_onnx(p)
    assert [l.kind for l in net.layers] == ["input", "affine", "relu", "affine", "relu", "affine", "relu"]
    assert [l.size for l in net.layers] == [784, 50, 50, 50, 50, 10, 10]
    d = load_eran_csv(q, "mnist")
    pred = net.forward(d.images_01()).argmax(1)
    assert int((pred == d.labels).sum()) == 9  # row 9 (a 5) is classified as 6
