"""``cf-run --json``'s ``"provenance"`` (issue 15): versions, arguments, the sha256 of the certifier,
network and input files (equal to hashlib's), device, dtype, batch size, whether the compile cache was
hit (a miss, then a hit with the same ``CFMLIR_CACHE_DIR``) and the preprocessing, in dataset and
VNN-LIB mode; and ``times.compile_s`` does not count importing torch."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import onnx

from cfmlir.certifiers import CERTIFIER_DIR, certifier_source
from cfmlir.tools import cf_run
from cfruntime.default_data import default_data_path, default_network_path
from cfruntime.network.builders import mlp_model


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run_json(capsys, out: Path, *args) -> dict:
    argv = [str(a) for a in args] + ["--json", str(out)]
    rc = cf_run.main(argv)
    err = capsys.readouterr().err
    assert rc == 0, err
    d = json.loads(out.read_text())
    assert d["provenance"]["argv"] == argv
    return d["provenance"]


def test_dataset_mode(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CFMLIR_CACHE_DIR", str(tmp_path / "cache"))
    cert = tmp_path / "my_ibp.cf"
    cert.write_bytes((CERTIFIER_DIR / "ibp.cf").read_bytes())
    args = ["--certifier", cert, "--no-check", "--net", default_network_path(), "--data", default_data_path(), "--eps", "0.01",
            "--dtype", "float32", "--batch-size", "7", "--quiet"]
    first = run_json(capsys, tmp_path / "1.json", *args)
    second = run_json(capsys, tmp_path / "2.json", *args)
    assert first["compile_cache"]["hit"] is False and second["compile_cache"]["hit"] is True
    cached = Path(second["compile_cache"]["file"])
    assert cached.parent == tmp_path / "cache" and cached.is_file() and first["compile_cache"]["file"] == str(cached)
    p = second
    assert p["versions"] == {**{d: version(d) for d in ("cfmlir", "torch", "onnx", "xdsl")},
                             "python": ".".join(map(str, sys.version_info[:3]))}
    assert p["certifier"] == {"name": str(cert), "file": str(cert.resolve()), "sha256": sha(cert)}
    assert p["network"] == {"file": str(default_network_path().resolve()), "sha256": sha(default_network_path())}
    assert p["data"] == {"file": str(default_data_path().resolve()), "sha256": sha(default_data_path())}
    assert (p["engine"], p["sparse"], p["rewrite"], p["device"], p["dtype"], p["widen"], p["batch_size"]) == \
        ("compiled", True, True, "cpu", "float32", True, 7)
    prep = p["preprocessing"]
    assert prep == {"mean": [0.0], "std": [1.0], "layout": "NCHW", "flatten_order": "CHW",
                    "from": {"mean": "manifest", "std": "manifest", "layout": "manifest", "flatten_order": "manifest"},
                    "manifest": prep["manifest"], "manifest_convention": "std"}
    assert Path(prep["manifest"]).name == "MANIFEST.json"


def test_shipped_certifier_and_interpreter(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CFMLIR_CACHE_DIR", str(tmp_path / "cache"))
    common = ["--net", default_network_path(), "--data", default_data_path(), "--eps", "0.01", "--n", "2", "--quiet"]
    p = run_json(capsys, tmp_path / "a.json", "--certifier", "deepz", *common, "--mean", "0", "--std", "1")
    assert p["certifier"] == {"name": "deepz", "file": str(CERTIFIER_DIR / "deepz.cf"), "sha256": sha(CERTIFIER_DIR / "deepz.cf")}
    assert p["preprocessing"]["from"]["mean"] == "flags" and p["preprocessing"]["from"]["flatten_order"] == "manifest"
    # a certifier generated from a template: the hash of its text
    p = run_json(capsys, tmp_path / "b.json", "--certifier", "deeppoly_1", *common)
    assert p["certifier"]["file"] is None
    assert p["certifier"]["sha256"] == hashlib.sha256(certifier_source("deeppoly_1")[0].encode()).hexdigest()
    p = run_json(capsys, tmp_path / "c.json", "--engine", "interpreter", "--certifier", "ibp", *common)
    assert (p["engine"], p["device"], p["dtype"], p["batch_size"], p["compile_cache"]["hit"], p["sparse"]) == \
        ("interpreter", "cpu", "float64", 1, None, None)


def test_vnnlib_mode(tmp_path, capsys):
    net = tmp_path / "lin.onnx"
    onnx.save(mlp_model([np.array([[1, 1], [1, -1]], np.float32)], [np.array([1, 0], np.float32)], activations=None,
                        input_shape=(2,)), str(net))
    prop = tmp_path / "p.vnnlib"
    prop.write_text("(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n"
                    "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
                    "(assert (>= Y_1 Y_0))\n")
    p = run_json(capsys, tmp_path / "v.json", "--certifier", "deeppoly", "--net", net, "--vnnlib", prop, "--quiet")
    assert p["network"]["sha256"] == sha(net) and p["vnnlib"] == {"file": str(prop.resolve()), "sha256": sha(prop)}
    assert "data" not in p and p["compile_cache"]["hit"] in (True, False)
    assert p["preprocessing"] == {"flatten_order": "CHW", "from": {"flatten_order": "default"}, "manifest": None,
                                  "manifest_convention": None}


def test_compile_time_excludes_importing_torch(tmp_path):
    """In a fresh process, with the certifier in the cache, ``compile_s`` is the cache read alone: far
    below what importing torch takes in a fresh process."""
    env = {**os.environ, "CFMLIR_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())",
           "--certifier", "ibp", "--quiet", "--n", "1", "--json", str(tmp_path / "t.json")]
    for _ in range(2):  # the first fills the cache
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert p.returncode == 0, p.stderr
    d = json.loads((tmp_path / "t.json").read_text())
    assert d["provenance"]["compile_cache"]["hit"] is True
    t = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); import torch; "
                        "print(time.perf_counter() - t)"], capture_output=True, text=True, timeout=300)
    import_torch_s = float(t.stdout.strip())
    assert d["times"]["compile_s"] < import_torch_s / 2, (d["times"]["compile_s"], import_torch_s)
