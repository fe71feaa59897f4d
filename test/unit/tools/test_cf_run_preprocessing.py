"""``cf-run`` preprocessing that is explicit and never silent (issue 15).

With ``../shared``: run from another folder on a copy of the network, where no manifest can be found
(the source tree's lookup disabled, as after ``pip install .``), ``--manifest`` or ``--mean/--std/
--layout`` (and ``--flatten-order`` for the CIFAR HWC nets) reproduce the normal run's accuracy,
certified flags and margins, bit for bit, on ``mnist_nln_logsig_200_50`` and ``cifar_relu_4_100``;
without them one ``warning:`` line says the defaults are guessed.  Without ``../shared``: the warning on
a network of no manifest, a manifest of one's own, and bad values (one ``error:`` line, exit status 1).
Runs call ``main`` in this process."""

from __future__ import annotations

import json
import shutil

import numpy as np
import onnx
import pytest

import cfruntime.properties.manifest as manifest_mod
from cfmlir.tools import cf_run
from cfruntime.network.builders import mlp_model
from cfruntime.properties import shared_dir

SHARED = shared_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="needs ../shared (networks and data)")


def run_main(capsys, *args):
    """``cf-run ARGS`` in this process: (exit status, stdout, stderr); argparse's errors exit."""
    try:
        rc = cf_run.main([str(a) for a in args])
    except SystemExit as e:
        rc = e.code
    got = capsys.readouterr()
    return rc, got.out, got.err


def one_error(rc, err) -> str:
    assert rc == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def warnings_of(err: str) -> list[str]:
    return [l for l in err.splitlines() if l.startswith("warning: ")]


# (net, data, eps, the flags that give its manifest convention)
CASES = {
    "mnist_nln_logsig_200_50": ("mnist_test.csv", "0.005", ["--mean", "0", "--std", "1/255", "--layout", "NCHW"]),
    "cifar_relu_4_100": ("cifar10_test.csv", "0.0005", ["--mean", "0", "--std", "1", "--layout", "NCHW",
                                                        "--flatten-order", "HWC"]),
}


@needs_shared
@pytest.mark.parametrize("name", list(CASES))
def test_flags_or_manifest_reproduce_the_normal_run_where_no_manifest_is_found(name, tmp_path, capsys, monkeypatch):
    data_name, eps, flags = CASES[name]
    net, data = SHARED / "nets" / f"{name}.onnx", SHARED / "data" / data_name
    common = ["--certifier", "deeppoly", "--data", data, "--eps", eps, "--n", 20, "--quiet"]

    def result(tag, net_arg, *extra):
        out = tmp_path / f"{tag}.json"
        rc, _, err = run_main(capsys, "--net", net_arg, *common, "--json", out, *extra)
        assert rc == 0, err
        return json.loads(out.read_text()), err

    normal, err = result("normal", net)  # the source tree's ../shared/nets/MANIFEST.json
    assert not warnings_of(err)
    assert normal["provenance"]["preprocessing"]["from"]["mean"] == "manifest"

    # elsewhere: a copy of the network, another working directory, no source tree to search
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(net, work / net.name)
    monkeypatch.chdir(work)
    monkeypatch.setattr(manifest_mod, "REPO_ROOT", tmp_path / "installed" / "site-packages")
    assert manifest_mod.shared_dir() is None

    guessed, err = result("guessed", net.name)
    (w,) = warnings_of(err)
    assert w.startswith(f"warning: {net.name}: --mean/--std") and "no manifest found" in w
    assert guessed["provenance"]["preprocessing"]["from"] == {f: "default" for f in ("mean", "std", "layout", "flatten_order")}
    assert sum(guessed["correct"]) < sum(normal["correct"])  # the defaults are wrong for these nets

    for tag, extra in (("manifest", ["--manifest", SHARED / "nets" / "MANIFEST.json"]), ("flags", flags)):
        got, err = result(tag, net.name, *extra)
        assert not warnings_of(err), (tag, err)
        for key in ("labels", "correct", "certified", "margin_lb", "margin_ub"):
            assert got[key] == normal[key], (tag, key)
        prep = got["provenance"]["preprocessing"]
        assert {prep["from"][k] for k in ("mean", "std", "layout")} == {"manifest" if tag == "manifest" else "flags"}
        assert {k: prep[k] for k in ("mean", "std", "layout", "flatten_order")} == \
            {k: normal["provenance"]["preprocessing"][k] for k in ("mean", "std", "layout", "flatten_order")}
    assert 0 < sum(normal["certified"]) <= sum(normal["correct"])


def test_warning_flags_and_own_manifest(tmp_path, tiny_net, csv, capsys):
    base = ["--certifier", "ibp", "--net", tiny_net, "--data", csv, "--eps", "0.01"]
    rc, out, err = run_main(capsys, *base, "--json", tmp_path / "a.json")
    assert rc == 0 and len(warnings_of(err)) == 1 and err.count("\n") == 1, err
    assert "accuracy" in out
    rc, _, err = run_main(capsys, *base, "--mean", "0", "--std", "1")
    assert rc == 0 and not warnings_of(err), err
    rc, _, err = run_main(capsys, *base, "--mean", "0.5")  # std still guessed
    assert rc == 0 and warnings_of(err) and "--std not given" in err
    m = tmp_path / "my_manifest.json"
    m.write_text(json.dumps({"nets": [{"file": "tiny.onnx", "input": {"preprocessing": "nln_raw255"}}]}))
    rc, _, err = run_main(capsys, *base, "--manifest", m, "--json", tmp_path / "b.json")
    assert rc == 0 and not warnings_of(err), err
    prep = json.loads((tmp_path / "b.json").read_text())["provenance"]["preprocessing"]
    assert prep["std"] == [1 / 255] and prep["manifest"] == str(m.resolve()) and prep["manifest_convention"] == "nln_raw255"
    # a flag wins over the manifest
    rc, _, err = run_main(capsys, *base, "--manifest", m, "--std", "0.5", "--json", tmp_path / "c.json")
    prep = json.loads((tmp_path / "c.json").read_text())["provenance"]["preprocessing"]
    assert prep["std"] == [0.5] and prep["from"]["std"] == "flags" and prep["from"]["mean"] == "manifest"


def test_bad_values_are_one_error_line(tmp_path, tiny_net, csv, capsys):
    base = ["--certifier", "ibp", "--net", tiny_net, "--data", csv, "--eps", "0.01"]
    assert "--mean has 3 values but the images have 1 channel" in one_error(*run_main(capsys, *base, "--mean", "0,0,0")[::2])
    assert "--std: 0 must be positive" in one_error(*run_main(capsys, *base, "--std", "0")[::2])
    assert "--std: 'abc' is not a number" in one_error(*run_main(capsys, *base, "--std", "abc")[::2])
    assert "--mean: 'nan' is not a finite number" in one_error(*run_main(capsys, *base, "--mean", "nan")[::2])
    assert "invalid choice" in one_error(*run_main(capsys, *base, "--layout", "CHWN")[::2])
    assert "invalid choice" in one_error(*run_main(capsys, *base, "--flatten-order", "WHC")[::2])
    missing = one_error(*run_main(capsys, *base, "--manifest", tmp_path / "nope.json")[::2])
    assert "nope.json: cannot read manifest" in missing
    (tmp_path / "bad.json").write_text("{not json")
    assert "bad.json: cannot read manifest" in one_error(*run_main(capsys, *base, "--manifest", tmp_path / "bad.json")[::2])
    (tmp_path / "other.json").write_text('{"nets": {"a": 1}}')
    assert "not a network manifest" in one_error(*run_main(capsys, *base, "--manifest", tmp_path / "other.json")[::2])
    vnn = tmp_path / "p.vnnlib"
    vnn.write_text("(declare-const X_0 Real)\n")
    msg = one_error(*run_main(capsys, "--net", tiny_net, "--vnnlib", vnn, "--mean", "0", "--layout", "NHWC")[::2])
    assert "--mean, --layout apply to dataset mode" in msg


def test_cifar_channels(tmp_path, capsys):
    """Per-channel values on 3-channel images: 3 values are accepted, 2 are not."""
    rng = np.random.default_rng(2)
    w = [rng.standard_normal((10, 3072)).astype(np.float32) * 0.01]
    net = tmp_path / "c.onnx"
    onnx.save(mlp_model(w, activations=None, input_shape=(3, 32, 32)), str(net))
    data = tmp_path / "c.csv"
    data.write_text(",".join(map(str, [1] + rng.integers(0, 256, 3072).tolist())) + "\n")
    base = ["--certifier", "ibp", "--net", net, "--data", data, "--eps", "0.001"]
    rc, _, err = run_main(capsys, *base, "--mean", "0.4914,0.4822,0.4465", "--std", "0.2023,0.1994,0.2010",
                          "--layout", "nhwc", "--json", tmp_path / "o.json")
    assert rc == 0 and not warnings_of(err), err
    prep = json.loads((tmp_path / "o.json").read_text())["provenance"]["preprocessing"]
    assert prep["mean"] == [0.4914, 0.4822, 0.4465] and prep["layout"] == "NHWC"
    assert "--mean has 2 values but the images have 3 channels" in one_error(*run_main(capsys, *base, "--mean", "0.1,0.2")[::2])
    rc, _, err = run_main(capsys, *base, "--mean", "0.5", "--std", "0.25")  # the layout is guessed
    assert rc == 0 and "--layout not given" in err
