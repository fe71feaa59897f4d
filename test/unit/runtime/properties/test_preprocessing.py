"""How dataset images become network inputs (``cfruntime.properties.preprocessing``): every manifest
convention is one (mean, std, layout, flatten order) setting with the same numbers; values are parsed
and checked; each field comes from the user, else the network's manifest entry (by content, else by name),
else the default, with a warning line for what was guessed."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import cfruntime.properties.manifest as manifest_mod
from cfruntime.default_data import default_network_path
from cfruntime.errors import DataError, PropertyError
from cfruntime.properties import find_entry, load_manifest, resolve_preprocessing, to_network_input
from cfruntime.properties.manifest import file_sha256
from cfruntime.properties.preprocessing import Preprocessing, from_convention, parse_values


@pytest.fixture()
def no_source_manifest(monkeypatch, tmp_path):
    """The source tree's ../shared/nets/MANIFEST.json is not found (as in an installed package)."""
    monkeypatch.setattr(manifest_mod, "REPO_ROOT", tmp_path / "no" / "repo")


def images(n=3, c=3, h=4, w=5, seed=0):
    return torch.rand(n, c, h, w, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("convention,shape", [("std", (3, 4, 5)), ("nln_raw255", (1, 1, 60)), ("raw_hwc_buffer", (3, 4, 5))])
def test_every_convention_is_one_setting_with_the_same_numbers(convention, shape):
    x = images()
    got = from_convention(convention).apply(x, shape)
    assert torch.equal(got, to_network_input(x, convention, shape))  # bit for bit


def test_mean_std_per_channel_and_layout():
    x = images()
    p = Preprocessing(mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0), layout="NHWC")
    got = p.apply(x, (4, 5, 3))
    m = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64).reshape(1, 3, 1, 1)
    s = torch.tensor([0.5, 0.25, 2.0], dtype=torch.float64).reshape(1, 3, 1, 1)
    want = ((x - m) / s).permute(0, 2, 3, 1)
    assert torch.allclose(got, want, rtol=1e-15, atol=0)
    assert Preprocessing().apply(x, (60,)).shape == (3, 60)
    assert Preprocessing(flatten_order="HWC").load_kwargs() == {"hwc_flatten": True}
    assert Preprocessing().load_kwargs() == {}


def test_values_parsed_and_checked():
    assert parse_values("0.4914,0.4822, 0.4465", "--mean") == (0.4914, 0.4822, 0.4465)
    assert parse_values("1/255", "--std", positive=True) == (1.0 / 255.0,)
    for bad in ("x", "", "nan", "inf", "1/0", "0.1,,0.2"):
        with pytest.raises(PropertyError, match="--mean"):
            parse_values(bad, "--mean")
    for bad in ("0", "-1", "1,0,1"):
        with pytest.raises(PropertyError, match="must be positive"):
            parse_values(bad, "--std", positive=True)
    with pytest.raises(PropertyError, match="--mean has 2 values but the images have 3 channels"):
        Preprocessing(mean=(0.1, 0.2)).check_channels(3)
    with pytest.raises(PropertyError, match="--std has 3 values but the images have 1 channel "):
        Preprocessing(std=(1.0, 1.0, 1.0)).apply(images(c=1), (20,))
    Preprocessing(mean=(0.5,), std=(1.0, 2.0, 3.0)).check_channels(3)


def write_manifest(path, entries):
    path.write_text(json.dumps({"nets": entries}))
    return path


def test_flags_win_over_the_manifest_field_by_field():
    r = resolve_preprocessing(default_network_path(), std=(0.5,), layout="NHWC")
    assert r.value == Preprocessing(mean=(0.0,), std=(0.5,), layout="NHWC", flatten_order="CHW")
    assert r.source == {"mean": "manifest", "std": "flags", "layout": "flags", "flatten_order": "manifest"}
    assert r.manifest is not None and r.warning("net.onnx", 1) is None


def test_shipped_default_net_has_its_manifest_beside_it(no_source_manifest):
    r = resolve_preprocessing(default_network_path())
    assert r.manifest == default_network_path().parent / "MANIFEST.json"
    assert r.convention == "std" and r.value == Preprocessing() and r.warning("x", 1) is None


def test_manifest_beside_the_network_and_given_by_path(tmp_path, no_source_manifest):
    net = tmp_path / "nets" / "renamed.onnx"
    net.parent.mkdir()
    shutil.copy(default_network_path(), net)
    r = resolve_preprocessing(net)
    assert r.manifest is None and set(r.source.values()) == {"default"}
    w = r.warning(net, 1)
    assert w.startswith("warning: renamed.onnx: --mean/--std not given and no manifest found") and "\n" not in w
    assert "layout NCHW" not in w  # one channel: the layout cannot matter
    assert "--layout" in r.warning(net, 3).split(" not given")[0]
    # an entry recorded by content is found whatever the file is called; one by name without a hash too
    other = write_manifest(tmp_path / "elsewhere.json", [
        {"file": "x.onnx", "dataset": "MNIST", "input": {"preprocessing": "nln_raw255"}, "sha256": file_sha256(net)}])
    r = resolve_preprocessing(net, manifest=other)
    assert r.value.std == (1.0 / 255.0,) and r.convention == "nln_raw255" and r.manifest == other
    write_manifest(net.parent / "MANIFEST.json", [{"file": "renamed.onnx", "input": {"preprocessing": "nln_raw255"}}])
    r = resolve_preprocessing(net)
    assert r.source["std"] == "manifest" and r.value.std == (1.0 / 255.0,)
    # a file that has an entry's name but other content is not that network
    write_manifest(net.parent / "MANIFEST.json", [{"file": "renamed.onnx", "sha256": "0" * 64,
                                                   "input": {"preprocessing": "nln_raw255"}}])
    r = resolve_preprocessing(net)
    assert r.manifest is None and r.value == Preprocessing()
    assert "sha256 differs" in r.warning(net, 1) and "not listed in" in r.warning(net, 1)


def test_cifar_quirk_entry_reads_the_net_hwc(tmp_path, no_source_manifest):
    net = tmp_path / "cifar_relu_4_100.onnx"
    shutil.copy(default_network_path(), net)  # the content does not matter for the lookup by name
    m = write_manifest(tmp_path / "m.json", [{"file": "cifar_relu_4_100.onnx", "dataset": "CIFAR10",
                                             "input": {"preprocessing": "cifar_fc_hwc_quirk"}}])
    r = resolve_preprocessing(net, manifest=m)
    assert r.value == Preprocessing(flatten_order="HWC") and r.convention == "cifar_fc_hwc_quirk"
    j = r.to_json()
    assert j["flatten_order"] == "HWC" and j["from"]["flatten_order"] == "manifest" and j["manifest"] == str(m.resolve())
    assert set(r.to_json(dataset=False)) == {"flatten_order", "from", "manifest", "manifest_convention"}
    write_manifest(m, [{"file": "cifar_relu_4_100.onnx", "input": {"preprocessing": "imagenet"}}])
    with pytest.raises(DataError, match="unknown preprocessing convention 'imagenet'"):
        resolve_preprocessing(net, manifest=m)


@pytest.mark.parametrize("text,what", [("not json", "cannot read manifest"), ("[1, 2]", "not a network manifest"),
                                       ('{"nets": [{"x": 1}]}', "entry 0"), ('{"nets": [3]}', "entry 0")])
def test_bad_manifest_is_a_data_error(tmp_path, text, what):
    m = tmp_path / "MANIFEST.json"
    m.write_text(text)
    with pytest.raises(DataError, match=what):
        load_manifest(m)
    with pytest.raises(DataError):
        find_entry(default_network_path(), m)  # given by path: an error
    net = tmp_path / "net.onnx"
    shutil.copy(default_network_path(), net)
    assert find_entry(net).manifest != m  # found beside the network: skipped
    with pytest.raises(DataError, match="cannot read manifest"):
        load_manifest(tmp_path / "missing.json")
