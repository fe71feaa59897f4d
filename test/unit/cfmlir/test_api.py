"""The public Python API (cfmlir.api): the README example, agreement with cf-run's JSON, layer bounds,
batching, errors, and a cheap ``import cfmlir``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import cfmlir
from cfmlir.diagnostics import CfError
from cfmlir.tools.cf_run import main as cf_run_main
from cfruntime.default_data import default_data_path, default_network_path
from cftest import REPO



@pytest.fixture(scope="module")
def net():
    return cfmlir.load_network(default_network_path())


@pytest.fixture(scope="module")
def certifiers():
    return {name: cfmlir.compile(name) for name in ("deeppoly", "ibp")}


def readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "cfmlir.certify(" in b]
    assert blocks, "no python block of the README calls cfmlir.certify"
    return blocks[0]


def test_readme_example_runs(capsys):
    code = readme_example()
    assert "cfmlir.compile(\"deeppoly\")" in code and "0.005" in code
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert re.search(r"certified \d+/10", out), out
    assert "layer 2 bounds: (10, 50)" in out, out


def _cf_run_json(tmp_path, *args) -> dict:
    out = tmp_path / "out.json"
    rc = cf_run_main(["--quiet", "--json", str(out), *map(str, args)])
    assert rc == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("certifier,engine", [("deeppoly", "compiled"), ("ibp", "compiled"),
                                               ("deeppoly", "interpreter"), ("ibp", "interpreter")])
def test_api_equals_cf_run(tmp_path, net, certifiers, certifier, engine):
    n = 10 if engine == "compiled" else 3  # the interpreter is slow
    js = _cf_run_json(tmp_path, "--certifier", certifier, "--engine", engine, "--n", n, "--layer-bounds",
                      "--net", default_network_path(), "--data", default_data_path(), "--eps", 0.005)
    prop = cfmlir.robustness_property(net, default_data_path(), 0.005, n=n)
    res = cfmlir.certify(certifiers[certifier], net, prop, engine=engine, layer_bounds=True)
    # the compiled engine runs the same code; the interpreter analyses a batched margin network here
    # (one margin matrix per sample), cf-run one per-label network: the same weights
    tol = 0.0 if engine == "compiled" else 1e-9
    for key in ("margin_lb", "margin_ub"):
        ref = torch.tensor(js[key], dtype=torch.float64)
        assert getattr(res, key).shape == ref.shape
        torch.testing.assert_close(getattr(res, key), ref, rtol=0, atol=tol)
    assert res.certified.tolist() == js["certified"]
    assert res.correct.tolist() == js["correct"]
    assert sorted(js["layer_bounds"], key=int) == [str(k) for k in sorted(res.layer_bounds)]
    for k, (lo, hi) in res.layer_bounds.items():
        torch.testing.assert_close(lo, torch.tensor(js["layer_bounds"][str(k)]["lower"], dtype=torch.float64),
                                   rtol=0, atol=tol)
        torch.testing.assert_close(hi, torch.tensor(js["layer_bounds"][str(k)]["upper"], dtype=torch.float64),
                                   rtol=0, atol=tol)


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_layer_bounds_contain_the_centre(net, certifiers, engine):
    n = 10 if engine == "compiled" else 2
    prop = cfmlir.robustness_property(net, default_data_path(), 0.005, n=n)
    res = cfmlir.certify(certifiers["deeppoly"], net, prop, engine=engine, layer_bounds=True)
    mnet = net.with_margin_layer(prop.C)
    with torch.no_grad():
        values = mnet.forward_all(prop.x.to(torch.float64))
    assert sorted(res.layer_bounds) == [layer.index for layer in mnet.layers[1:]]
    for k, (lo, hi) in res.layer_bounds.items():
        assert lo.shape == hi.shape == (n, mnet.layers[k].size)
        v = values[k]
        assert bool((lo <= v + 1e-9).all()) and bool((v <= hi + 1e-9).all()), f"layer {k}"
    assert res.margin_lb.shape == (n, 10) and res.certified.dtype == torch.bool
    assert cfmlir.certify(certifiers["deeppoly"], net, prop, engine=engine).layer_bounds is None


def test_batch_size_does_not_change_the_result(net, certifiers):
    prop = cfmlir.robustness_property(net, default_data_path(), 0.005)
    small = cfmlir.certify(certifiers["deeppoly"], net, prop, batch_size=3, layer_bounds=True)
    big = cfmlir.certify(certifiers["deeppoly"], net, prop, batch_size=100, layer_bounds=True)
    assert small.batch_size == 3 and big.batch_size == 100
    torch.testing.assert_close(small.margin_lb, big.margin_lb, rtol=0, atol=1e-12)
    torch.testing.assert_close(small.margin_ub, big.margin_ub, rtol=0, atol=1e-12)
    assert torch.equal(small.certified, big.certified)
    for k in big.layer_bounds:
        torch.testing.assert_close(small.layer_bounds[k], big.layer_bounds[k], rtol=0, atol=1e-12)


def test_source_text_and_no_rewrite(net, certifiers):
    from cfmlir.compiler import load_certifier_source

    text, _ = load_certifier_source("ibp")
    prop = cfmlir.robustness_property(net, default_data_path(), 0.005, n=4)
    ref = cfmlir.certify(certifiers["ibp"], net, prop)
    for cert in (cfmlir.compile(text), cfmlir.compile("ibp", rewrite=False)):
        res = cfmlir.certify(cert, net, prop)
        torch.testing.assert_close(res.margin_lb, ref.margin_lb, rtol=0, atol=1e-9)


def test_bad_spec_is_a_one_line_cf_error():
    with pytest.raises(CfError) as e:
        cfmlir.compile("no_such_certifier")
    assert "unknown certifier 'no_such_certifier'" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(CfError):
        cfmlir.compile("Def shape as (Real l, Real u){[(curr[l]<=curr),(curr[u]>=curr)]};\nbogus\n")


def test_bad_engine_and_batch_size(net, certifiers):
    prop = cfmlir.robustness_property(net, default_data_path(), 0.005, n=1)
    with pytest.raises(ValueError, match="engine must be one of compiled, interpreter"):
        cfmlir.certify(certifiers["ibp"], net, prop, engine="nope")
    with pytest.raises(ValueError, match="batch_size"):
        cfmlir.certify(certifiers["ibp"], net, prop, batch_size=0)


def test_import_cfmlir_is_cheap():
    code = ("import sys, cfmlir; "
            "heavy = [m for m in ('torch', 'xdsl', 'onnx', 'numpy') if m in sys.modules]; print(heavy)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]", p.stdout
    # touching the API's names does not import torch either
    code = "import sys, cfmlir; cfmlir.compile; cfmlir.certify; print('torch' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "False", (p.stdout, p.stderr)


def _vnnlib(tmp_path, net, assertion: str) -> Path:
    n_in, n_out = net.input_size, net.output_size
    lines = [f"(declare-const X_{i} Real)" for i in range(n_in)] + [f"(declare-const Y_{j} Real)" for j in range(n_out)]
    lines += [a for i in range(n_in) for a in (f"(assert (>= X_{i} 0.0))", f"(assert (<= X_{i} 0.01))")]
    p = tmp_path / "p.vnnlib"
    p.write_text("\n".join(lines + [assertion]) + "\n")
    return p


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_vnnlib_property_verdicts(tmp_path, net, certifiers, engine):
    """An unreachable output region is ``unsat``; one every point reaches cannot be refuted (``unknown``:
    the API does no counterexample search)."""
    cert = certifiers["ibp"]
    never = cfmlir.load_vnnlib(_vnnlib(tmp_path, net, "(assert (>= Y_0 1000000.0))"), net)
    res = cfmlir.certify(cert, net, never, engine=engine)
    assert res.verdict == "unsat"
    always = cfmlir.load_vnnlib(_vnnlib(tmp_path, net, "(assert (<= Y_0 1000000.0))"), net)
    assert cfmlir.certify(cert, net, always, engine=engine).verdict == "unknown"
