"""cf-run (real CLI in a subprocess): one-line errors for bad inputs, and the JSON schema."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

from cfruntime.network.builders import make_model, mlp_model
from cftest import REPO

CF_RUN = [sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())"]


def run(*args, cwd=None):
    return subprocess.run(CF_RUN + [str(a) for a in args], capture_output=True, text=True, cwd=cwd or REPO, timeout=300)


def assert_one_line_error(p):
    assert p.returncode != 0, p.stdout
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("error:"), lines[0]
    return lines[0]


def test_bad_onnx(tmp_path, csv):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x00\x01 this is not an onnx model")
    msg = assert_one_line_error(run("--certifier", "ibp", "--net", bad, "--data", csv, "--eps", "0.01"))
    assert "garbage.onnx" in msg


def test_unsupported_op(tmp_path, csv):
    nodes = [helper.make_node("Erf", ["input"], ["output"], name="erf_7")]
    p = tmp_path / "erf.onnx"
    onnx.save(make_model(nodes, {}, (784,)), str(p))
    msg = assert_one_line_error(run("--certifier", "ibp", "--net", p, "--data", csv, "--eps", "0.01"))
    assert "Erf" in msg and "erf_7" in msg


def test_bad_csv_row(tmp_path, tiny_net, csv):
    bad = tmp_path / "bad.csv"
    lines = csv.read_text().splitlines()
    bad.write_text(lines[0] + "\n" + lines[1].replace(",", ",x", 1) + "\n")
    msg = assert_one_line_error(run("--certifier", "ibp", "--net", tiny_net, "--data", bad, "--eps", "0.01"))
    assert "bad.csv:2" in msg


def test_bad_vnnlib(tmp_path, tiny_net):
    bad = tmp_path / "bad.vnnlib"
    bad.write_text("(declare-const X_0 Real)\n(assert (<= X_0 0.5)\n")
    assert_one_line_error(run("--certifier", "ibp", "--net", tiny_net, "--vnnlib", bad))


@pytest.mark.parametrize("eps", ["-0.1", "1.5", "nan"])
def test_eps_outside_unit_interval(tiny_net, csv, eps):
    msg = assert_one_line_error(run("--certifier", "ibp", "--net", tiny_net, "--data", csv, "--eps", eps))
    assert "--eps must be in [0, 1]" in msg


def test_unknown_certifier_missing_file_and_compiled_engine(tiny_net, csv):
    assert "unknown certifier" in assert_one_line_error(
        run("--certifier", "nope", "--net", tiny_net, "--data", csv, "--eps", "0.01"))
    assert_one_line_error(run("--certifier", "ibp", "--net", "/nonexistent/net.onnx", "--data", csv, "--eps", "0.01"))
    assert_one_line_error(run("--certifier", "ibp", "--net", tiny_net, "--data", "/nonexistent.csv", "--eps", "0.01"))
    assert "compiled engine only" in assert_one_line_error(run("--engine", "interpreter", "--no-sparse"))
    assert "not available" in assert_one_line_error(run("--device", "cuda:7"))
    assert "--batch-size" in assert_one_line_error(run("--batch-size", "0"))


def test_bad_certifier_source(tmp_path, tiny_net, csv):
    cf = tmp_path / "bad.cf"
    cf.write_text("def Shape as (Float l, Float u){[(curr[l]<=curr),(curr[u]>=curr)]};\nfunc f(Neuron n) = prevv;\n")
    p = run("--certifier", cf, "--net", tiny_net, "--data", csv, "--eps", "0.01")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "bad.cf:2" in p.stderr and "error:" in p.stderr


def test_happy_path_json_schema(tmp_path, tiny_net, csv):
    out = tmp_path / "out.json"
    p = run("--certifier", "deeppoly", "--net", tiny_net, "--data", csv, "--eps", "0.002", "--json", out)
    assert p.returncode == 0, p.stderr
    assert "accuracy" in p.stdout and "certified" in p.stdout
    d = json.loads(out.read_text())
    assert set(d) == {"certifier", "network", "eps", "n", "labels", "correct", "certified", "margin_lb", "margin_ub", "times",
                      "batch_size", "provenance", "proved"}
    assert d["proved"] == "shipped"  # a shipped certifier by name: proved by the test suite (docs/trust.md)
    assert set(d["times"]) == {"compile_s", "load_s", "analysis_s"}
    assert d["batch_size"] == {"requested": 100, "used": 100}
    assert d["certifier"] == "deeppoly" and d["eps"] == 0.002 and d["n"] == 2 and d["labels"] == [3, 7]
    assert len(d["correct"]) == len(d["certified"]) == 2
    for i in range(2):
        lb, ub = d["margin_lb"][i], d["margin_ub"][i]
        assert len(lb) == len(ub) == 10
        assert lb[d["labels"][i]] == 0.0 == ub[d["labels"][i]]
        assert all(l <= u for l, u in zip(lb, ub))
        assert d["certified"][i] == (d["correct"][i] and all(x > 0 for j, x in enumerate(lb) if j != d["labels"][i]))


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_vnnlib_happy_path(tmp_path, engine):
    # y0 = x0 + x1 + 1, y1 = x0 - x1 on [0, 1]^2: the region y1 >= y0 (i.e. -x1 >= x1 + 1) is empty.
    w = [np.array([[1, 1], [1, -1]], np.float32)]
    b = [np.array([1, 0], np.float32)]
    net = tmp_path / "lin.onnx"
    onnx.save(mlp_model(w, b, activations=None, input_shape=(2,)), str(net))
    prop = tmp_path / "p.vnnlib"
    prop.write_text("(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n"
                    "(assert (>= X_0 0))\n(assert (<= X_0 1))\n(assert (>= X_1 0))\n(assert (<= X_1 1))\n"
                    "(assert (>= Y_1 Y_0))\n")
    out = tmp_path / "v.json"
    p = run("--engine", engine, "--certifier", "deeppoly", "--net", net, "--vnnlib", prop, "--json", out)
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    assert d["verdict"] == "unsat" and "unsat" in p.stdout
    # row: y0 - y1 <= 0  i.e. A = [1, -1], lower(A y) = lower(2 x1 + 1) = 1 > 0
    assert d["regions"][0]["row_lb"] == pytest.approx([1.0])


@pytest.mark.parametrize("flags", [(), ("--no-sparse",), ("--no-rewrite",), ("--no-sparse", "--no-rewrite", "--batch-size", "1")])
def test_compiled_engine_matches_interpreter(tmp_path, tiny_net, csv, flags):
    """Both engines fill the same JSON schema with the same numbers."""
    outs = {}
    for engine, extra in (("interpreter", ()), ("compiled", flags)):
        out = tmp_path / f"{engine}.json"
        p = run("--engine", engine, *extra, "--certifier", "deepz", "--net", tiny_net, "--data", csv, "--eps", "0.01", "--json", out)
        assert p.returncode == 0, p.stderr
        outs[engine] = json.loads(out.read_text())
    a, b = outs["interpreter"], outs["compiled"]
    assert set(a) == set(b) and a["certified"] == b["certified"] and a["labels"] == b["labels"]
    for ra, rb in zip(a["margin_lb"] + a["margin_ub"], b["margin_lb"] + b["margin_ub"]):
        assert rb == pytest.approx(ra, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("tool,args", [
    ("cf_run", ["--bogus"]), ("cf_run", ["--eps"]), ("cf_run", ["--engine", "fast"]), ("cf_opt", ["--bogus"]),
])
def test_bad_command_line_is_one_line_and_status_1(tool, args):
    """argparse's usage block and status 2 become the tools' one error line and status 1."""
    cmd = [sys.executable, "-c", f"import sys; from cfmlir.tools.{tool} import main; sys.exit(main())", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 1
    msg = assert_one_line_error(p)
    assert msg.startswith(f"error: {tool.replace('_', '-')}: ") and "--help lists the options" in msg


def test_version():
    p = run("--version")
    assert p.returncode == 0 and p.stdout.startswith("cf-run (cfmlir ") and "torch " in p.stdout and "xdsl " in p.stdout


def _residual_model(rng):
    """``y = W3 relu(h + W2 h)``, ``h = relu(W1 x + b1)``: a ReLU net with a residual join (2 -> 4 -> 2)."""
    def init(name, shape):
        return onnx.numpy_helper.from_array(rng.normal(size=shape).astype(np.float32), name)

    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["z1"], transB=1), helper.make_node("Relu", ["z1"], ["h"]),
             helper.make_node("Gemm", ["h", "w2"], ["z2"], transB=1), helper.make_node("Add", ["h", "z2"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]), helper.make_node("Gemm", ["r", "w3"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])],
                              [init("w1", (4, 2)), init("b1", (4,)), init("w2", (4, 4)), init("w3", (2, 4))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _product_model(rng):
    """``y = W3 (relu(W1 x) * (W2 x))``: a product of two computed values (VNN-COMP 2024's ``Mul``), no residual join."""
    def init(name, shape):
        return onnx.numpy_helper.from_array(rng.normal(size=shape).astype(np.float32), name)

    nodes = [helper.make_node("Gemm", ["x", "w1"], ["z1"], transB=1), helper.make_node("Relu", ["z1"], ["h"]),
             helper.make_node("Gemm", ["x", "w2"], ["z2"], transB=1), helper.make_node("Mul", ["h", "z2"], ["m"]),
             helper.make_node("Gemm", ["m", "w3"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "product", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])],
                              [init("w1", (4, 2)), init("w2", (4, 2)), init("w3", (2, 4))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("activation, chosen", [("sigmoid", "alpha_deeppoly"), ("tanh", "alpha_deeppoly"),
                                                ("relu", "alpha_deeppoly"), ("residual", "deeppoly"),
                                                ("product", "alpha_deeppoly"), ("wide", "crown_ibp")])
@pytest.mark.parametrize("timeout", [(), ("--timeout", "60")], ids=["in_process", "worker"])
def test_auto_certifier_follows_the_activations(tmp_path, activation, chosen, timeout):
    """``--certifier auto``: alpha_deeppoly (CROWN's S-curve lines, the root's slopes optimised in branch and
    bound) on a sigmoid, tanh or plain ReLU net and on one with a product of two values (alpha_deeppoly has
    that rule too), deeppoly on a ReLU net with a residual join (a bias ``Add`` is no join), crown_ibp on a
    ReLU net of 2 inputs and a layer of ``WIDE_LAYER`` neurons -- in process and in the worker that
    ``--timeout`` starts; named in the JSON."""
    from cfmlir.tools.auto_certifier import WIDE_LAYER

    rng = np.random.default_rng(0)
    net = tmp_path / f"{activation}.onnx"
    if activation in ("residual", "product"):
        onnx.save((_residual_model if activation == "residual" else _product_model)(rng), str(net))
    else:
        width = WIDE_LAYER if activation == "wide" else 4
        w = [rng.normal(size=(width, 2)).astype(np.float32), rng.normal(size=(2, width)).astype(np.float32)]
        onnx.save(mlp_model(w, activations="relu" if activation == "wide" else activation, input_shape=(2,)), str(net))
    prop = tmp_path / "p.vnnlib"
    prop.write_text("(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n"
                    "(assert (>= X_0 0))\n(assert (<= X_0 0.01))\n(assert (>= X_1 0))\n(assert (<= X_1 0.01))\n"
                    "(assert (>= Y_1 1000))\n")
    out = tmp_path / "v.json"
    p = run("--certifier", "auto", "--net", net, "--vnnlib", prop, "--json", out, *timeout)
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    # the shipped certifier, not a user's file named 'auto' (whose every batch would be checked: 50x slower)
    assert d["certifier"] == chosen and d["verdict"] == "unsat" and d["proved"] == "shipped"


def test_auto_chooses_the_same_for_a_gzipped_network(tmp_path):
    """VNN-COMP 2024 ships ``net.onnx.gz`` (its ``instances.csv`` names ``net.onnx``): ``auto`` reads the
    compressed graph, and the name without ``.gz``, as the plain one (it chose deeppoly for every
    compressed network, the choice for an unreadable file)."""
    import gzip

    from cfmlir.tools import auto_certifier

    rng = np.random.default_rng(0)
    for name, model, want in (("product", _product_model(rng), "alpha_deeppoly"), ("residual", _residual_model(rng), "deeppoly")):
        plain = tmp_path / f"{name}.onnx"
        onnx.save(model, str(plain))
        packed = tmp_path / "gz" / f"{name}.onnx.gz"
        packed.parent.mkdir(exist_ok=True)
        packed.write_bytes(gzip.compress(plain.read_bytes()))
        assert auto_certifier.resolve("auto", str(plain)) == want
        assert auto_certifier.resolve("auto", str(packed)) == want
        assert auto_certifier.resolve("auto", str(packed.with_suffix(""))) == want  # net.onnx -> net.onnx.gz

def test_auto_chooses_crown_ibp_for_wide_networks_of_few_inputs(tmp_path):
    """``crown_ibp`` exactly when the network has at most ``FEW_INPUTS`` inputs (branch and bound splits the
    input box) and a layer of at least ``WIDE_LAYER`` neurons, whatever its activation; one neuron narrower or
    one input more: the choice by activations (alpha_deeppoly here), and no root optimisation is set for
    crown_ibp (it has no parameters)."""
    import argparse

    from cfmlir.tools import auto_certifier as ac

    rng = np.random.default_rng(0)
    for inputs, width, activation, want in ((ac.FEW_INPUTS, ac.WIDE_LAYER, "relu", "crown_ibp"),
                                            (2, ac.WIDE_LAYER, "sigmoid", "crown_ibp"),
                                            (ac.FEW_INPUTS + 1, ac.WIDE_LAYER, "relu", "alpha_deeppoly"),
                                            (2, ac.WIDE_LAYER - 1, "relu", "alpha_deeppoly")):
        w = [rng.normal(size=(width, inputs)).astype(np.float32), rng.normal(size=(2, width)).astype(np.float32)]
        path = tmp_path / f"{inputs}_{width}_{activation}.onnx"
        onnx.save(mlp_model(w, activations=activation, input_shape=(inputs,)), str(path))
        assert ac.resolve("auto", str(path)) == want, (inputs, width, activation)
        args = argparse.Namespace(certifier="auto", net=str(path), optimize=None)
        assert ac.apply(args) == want
        assert getattr(args, "bab_optimize", None) == (None if want == "crown_ibp" else ac.BAB_OPTIMIZE)


def test_auto_chooses_alpha_deeppoly_for_products_with_residual_joins(tmp_path):
    """A residual join alone makes ``auto`` choose deeppoly (branch and bound searching with ``RESIDUAL_SEARCH``);
    with a product of two computed values too (an attention block: vit_2023) alpha_deeppoly, whose McCormick
    planes are mixed by parameters, with ``BAB_OPTIMIZE_PRODUCTS`` iterations at the root of branch and bound; a
    product with a weight is no product of two values."""
    import argparse

    from cfmlir.tools import auto_certifier

    rng = np.random.default_rng(0)

    def model(mul_inputs):
        nodes = [helper.make_node("Gemm", ["x", "w1"], ["z1"], transB=1), helper.make_node("Relu", ["z1"], ["h"]),
                 helper.make_node("Gemm", ["h", "w2"], ["z2"], transB=1), helper.make_node("Add", ["h", "z2"], ["s"]),
                 helper.make_node("Mul", mul_inputs, ["m"]), helper.make_node("Gemm", ["m", "w3"], ["y"], transB=1)]
        inits = [onnx.numpy_helper.from_array(rng.normal(size=shape).astype(np.float32), name)
                 for name, shape in (("w1", (4, 2)), ("w2", (4, 4)), ("w3", (2, 4)), ("k", (4,)))]
        graph = helper.make_graph(nodes, "attention_like", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
                                  [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])

    for mul_inputs, want in ((["s", "h"], "alpha_deeppoly"), (["s", "k"], "deeppoly")):
        path = tmp_path / f"{'_'.join(mul_inputs)}.onnx"
        onnx.save(model(mul_inputs), str(path))
        assert auto_certifier.resolve("auto", str(path)) == want, mul_inputs
        args = argparse.Namespace(certifier="auto", net=str(path), optimize=None)
        assert auto_certifier.apply(args) == want
        if want == "alpha_deeppoly":
            assert args.bab_optimize == auto_certifier.BAB_OPTIMIZE_PRODUCTS and not hasattr(args, "bab_certifier")
        else:  # residual joins alone: the search's own certifier, its root's rows optimised from the pass's bounds
            assert (args.bab_certifier, args.bab_optimize, args.bab_root_optimize) == (
                auto_certifier.RESIDUAL_SEARCH, auto_certifier.BAB_OPTIMIZE, "rows")


def test_auto_certifier_chooses_per_network_of_an_instances_csv(tmp_path):
    """``--certifier auto --instances CSV`` (VNN-COMP mode): each line's network gets the certifier ``auto``
    chooses for it (here deeppoly for the residual net, alpha_deeppoly for the product net, the product net
    again after it), one analysis process per certifier; a line whose network is missing is that line's
    error only."""
    rng = np.random.default_rng(0)
    onnx.save(_residual_model(rng), str(tmp_path / "residual.onnx"))
    onnx.save(_product_model(rng), str(tmp_path / "product.onnx"))
    (tmp_path / "p.vnnlib").write_text(
        "(declare-const X_0 Real)\n(declare-const X_1 Real)\n(declare-const Y_0 Real)\n(declare-const Y_1 Real)\n"
        "(assert (>= X_0 0))\n(assert (<= X_0 0.01))\n(assert (>= X_1 0))\n(assert (<= X_1 0.01))\n"
        "(assert (>= Y_1 1000))\n")
    csv_file = tmp_path / "instances.csv"
    csv_file.write_text("residual.onnx,p.vnnlib,60\nproduct.onnx,p.vnnlib,60\nmissing.onnx,p.vnnlib,60\n"
                        "product.onnx,p.vnnlib,60\n")
    out = tmp_path / "v.json"
    p = run("--certifier", "auto", "--instances", csv_file, "--json", out)
    assert p.returncode == 1, p.stderr  # the missing network's line
    rows = json.loads(out.read_text())["instances"]
    assert [r["verdict"] for r in rows] == ["unsat", "unsat", "error", "unsat"]
    assert [r["result"]["certifier"] for r in rows if r["result"]] == ["deeppoly", "alpha_deeppoly", "alpha_deeppoly"]
    assert "missing.onnx" in rows[2]["message"]


@pytest.mark.parametrize("given, chosen, bab_optimize", [
    ("auto", "alpha_deeppoly", 20), ("alpha_deeppoly", "alpha_deeppoly", None), ("deeppoly", "deeppoly", None)])
def test_auto_optimises_the_root_of_branch_and_bound_only(tmp_path, monkeypatch, given, chosen, bab_optimize):
    """``auto`` choosing a certifier with parameters sets ``bab_optimize``: branch and bound optimises the
    root's parameters (``auto_certifier.BAB_OPTIMIZE`` iterations; not when the search splits the input
    box), the first pass does not; a certifier named, or ``--optimize N`` given, is taken as it is."""
    import argparse

    from cfmlir.bab import driver
    from cfmlir.tools import auto_certifier, vnnlib_mode

    rng = np.random.default_rng(0)
    net = tmp_path / "s.onnx"
    onnx.save(mlp_model([rng.normal(size=(4, 2)).astype(np.float32), rng.normal(size=(2, 4)).astype(np.float32)],
                        activations="sigmoid", input_shape=(2,)), str(net))
    args = argparse.Namespace(certifier=given, net=str(net), optimize=None)
    assert auto_certifier.apply(args) == chosen and args.certifier == chosen
    assert getattr(args, "bab_optimize", None) == bab_optimize
    seen = {}
    monkeypatch.setattr(driver, "run_bab", lambda *a, options, **k: seen.setdefault("options", options))
    monkeypatch.setattr(vnnlib_mode, "make_engine",
                        lambda a, p: argparse.Namespace(dtype="float64", sparse=True, widen=False))
    args.__dict__.update(engine="compiled", bab="auto", split_deadline=1e12, max_boxes=None, batch_size=100,
                         bab_branching="auto", bab_beta="on", lr=None, device="cpu")
    prop = argparse.Namespace(regions=[])
    vnnlib_mode._bab(args, None, None, prop, [], None)
    opt = seen["options"]
    assert (opt.optimize is None) == (bab_optimize is None) and opt.optimize_input is False
    if bab_optimize is not None:
        assert opt.optimize.iterations == auto_certifier.BAB_OPTIMIZE
    args.optimize = 5  # --optimize N: the first pass and the root, input splitting included
    seen.clear()
    vnnlib_mode._bab(args, None, None, prop, [], None)
    assert seen["options"].optimize.iterations == 5 and seen["options"].optimize_input is True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA: Linux")
@pytest.mark.parametrize("flag, limited", [((), True), (("--memory-limit", "off"), False)])
def test_cf_run_bounds_its_data_memory_on_the_cpu(flag, limited):
    """On the CPU, cf-run sets a soft data limit below the memory available (cfruntime.memory_limit: an
    allocation past it is an error the engine answers with smaller batches, not the system's OOM kill);
    ``--memory-limit off`` leaves the process's limit as it was, and so does ``main(argv)`` called in a
    process that is not cf-run (a test's, a script's)."""
    code = ("import resource, sys\nfrom cfmlir.tools.cf_run import main\n"
            "before = resource.getrlimit(resource.RLIMIT_DATA)[0]\n"
            f"assert main(['--n', '1', *{list(flag)!r}]) == 0 and resource.getrlimit(resource.RLIMIT_DATA)[0] == before\n"
            f"sys.argv = ['cf-run', '--n', '1', *{list(flag)!r}]\n"
            "rc = main()\n"
            "print(rc, before, resource.getrlimit(resource.RLIMIT_DATA)[0])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    rc, before, after = map(int, p.stdout.split()[-3:])
    assert rc == 0, p.stderr
    if before != resource.RLIM_INFINITY:
        pytest.skip("this process already runs under a data limit")
    assert (after != before) == limited
    if limited:
        with open("/proc/meminfo") as f:
            total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
        assert after < total
