"""Every net of ../shared/nets/MANIFEST.json: forward == onnxruntime, accuracy == manifest.

Skipped cleanly when ../shared (relative to the repository root) is absent.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import torch

from cfruntime.network import load_onnx
from cfruntime.properties import load_eran_csv, load_manifest, to_network_input
from cftest.onnx_reference import SHARED, ort_run, reference_forward, softmax_np, to_double_model

pytestmark = pytest.mark.skipif(not (SHARED / "nets" / "MANIFEST.json").is_file(), reason="../shared not available")

ENTRIES = load_manifest(SHARED / "nets" / "MANIFEST.json") if (SHARED / "nets" / "MANIFEST.json").is_file() else []
REPORT: dict = {}


@functools.lru_cache(maxsize=None)
def csv_rows(path, start, stop, dataset):
    return load_eran_csv(path, dataset, start=start, stop=stop)


@functools.lru_cache(maxsize=None)
def network(path, hwc_flatten=False):
    return load_onnx(path, hwc_flatten=hwc_flatten)


def net_input(entry, data, semantics="standard"):
    return to_network_input(data.images_01(), entry.convention(semantics), entry.input_shape)


def test_manifest_lists_all_nets():
    files = sorted(p.name for p in (SHARED / "nets").glob("*.onnx"))
    assert sorted(e.file for e in ENTRIES) == files
    for e in ENTRIES:
        assert e.dataset in ("mnist", "cifar10")
        assert e.preprocessing in ("std", "nln_raw255", "cifar_fc_hwc_quirk")
        assert e.accuracy_checks, e.file


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_forward_matches_onnxruntime(entry):
    small = entry.accuracy_checks[0].data_file.parent / ("mnist_test.csv" if entry.dataset == "mnist" else "cifar10_test.csv")
    data = csv_rows(str(small), 0, 100, entry.dataset)
    net = network(str(entry.path))
    x = net_input(entry, data)
    assert tuple(x.shape[1:]) == net.input_shape == entry.input_shape
    ort = ort_run(entry.path, x.numpy()).reshape(len(data), -1)
    y64 = net.forward(x).numpy()
    y32 = net.forward(x.float()).numpy()
    softmax_out = entry.preprocessing == "nln_raw255"
    if softmax_out:  # Softmax dropped: compare probabilities with onnxruntime, logits with the reference
        assert any("Softmax" in n for n in net.notices)
        d64, d32 = np.abs(softmax_np(y64) - ort).max(), np.abs(softmax_np(y32.astype(np.float64)) - ort).max()
    else:
        d64, d32 = np.abs(y64 - ort).max(), np.abs(y32 - ort).max()
    scale = float(np.abs(ort).max())
    # float64 reference of the same graph: onnxruntime in double where it has the kernels, else a naive torch evaluator
    import onnx

    model = onnx.load(str(entry.path))
    try:
        ref = ort_run(to_double_model(model), x.numpy(), dtype=np.float64).reshape(len(data), -1)
        ref_kind = "onnxruntime-float64"
        if softmax_out:
            ref = np.log(ref)  # compare up to the constant log-sum-exp shift below
    except Exception:
        ref = reference_forward(model, x.numpy())
        ref_kind = "torch-float64-reference"
    if softmax_out and ref_kind == "onnxruntime-float64":
        dref = np.abs((y64 - y64.max(1, keepdims=True)) - (ref - ref.max(1, keepdims=True))).max()
    else:
        dref = np.abs(y64 - ref).max()
    REPORT[entry.file] = {"max_abs_diff_float64_vs_ort32": float(d64), "max_abs_diff_float32_vs_ort32": float(d32),
                          "max_abs_output": scale, f"max_abs_diff_vs_{ref_kind}": float(dref), "layers": len(net)}
    # our float64 forward is exact (to float64 round-off) w.r.t. a float64 evaluation of the graph
    assert dref <= 1e-9 * max(1.0, scale)
    # onnxruntime runs float32: 1e-5 absolute, relaxed to float32 round-off (2e-6 relative) for large logits
    assert d64 <= max(1e-5, 2e-6 * scale), (d64, scale)
    assert d32 <= max(2e-5, 4e-6 * scale), (d32, scale)
    assert (y64.argmax(1) == ort.argmax(1)).all()


CHECKS = [(e, c) for e in ENTRIES for c in e.accuracy_checks]


@pytest.mark.parametrize("entry,check", CHECKS, ids=[f"{e.name}-{c.key}" for e, c in CHECKS])
def test_accuracy_matches_manifest(entry, check):
    data = csv_rows(str(check.data_file), check.start, check.stop, entry.dataset)
    assert len(data) == check.rows
    net = network(str(entry.path), **entry.load_kwargs(check.semantics))
    y = net.forward(net_input(entry, data, check.semantics))
    acc = float((y.argmax(1) == data.labels).double().mean())
    top2 = torch.topk(y, 2, dim=1).values
    ties = int((top2[:, 0] == top2[:, 1]).sum())
    REPORT.setdefault(entry.file, {})[f"accuracy_{check.key}"] = [acc, check.expected]
    assert round(acc, 6) == round(check.expected, 6)
    if check.ties is not None:
        assert ties == check.ties


@pytest.mark.parametrize("name", ["cifar_relu_4_100", "cifar_relu_6_100"])
def test_hwc_quirk_intended_semantics_equals_nchwfix(name):
    quirk = SHARED / "nets" / f"{name}.onnx"
    fixed = SHARED / "nets" / f"{name}.nchwfix.onnx"
    data = csv_rows(str(SHARED / "data" / "cifar10_test.csv"), 0, 100, "cifar10")
    x = data.images_01()
    ours = network(str(quirk), hwc_flatten=True).forward(x).numpy()
    ort = ort_run(fixed, x.numpy())
    assert np.abs(ours - ort).max() <= 2e-6 * float(np.abs(ort).max())
    assert np.abs(ours - network(str(fixed)).forward(x).numpy()).max() <= 1e-9 * float(np.abs(ort).max())


def test_zz_write_report(tmp_path_factory):
    """Leaves the per-net numbers in the pytest temp dir (printed with -s)."""
    out = tmp_path_factory.mktemp("report") / "shared_nets_report.json"
    out.write_text(json.dumps(REPORT, indent=1, sort_keys=True))
    print(f"\nshared-net report: {out}")
