"""Fuzz test of cf-run's inputs (issue 24, acceptance 3): damaged ``.cf`` sources, VNN-LIB files, ERAN CSV
files and ONNX models (:mod:`cftest.bad_inputs`) go through the entry points cf-run uses, in this process;
each ends normally or with a user error (:class:`cfruntime.errors.UserError`: one ``error:`` line), never
with an internal error (what cf-run would print as ``internal error``).  Deterministic (derandomized, no
example database); the budget per kind is ``CFMLIR_BAD_INPUT_EXAMPLES`` (default: about two minutes in
all on a CI machine).  A few seeded cases of each kind also run through the cf-run process."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cfmlir.tools.run_setup import error_line, is_internal_error
from cftest import REPO
from cftest.bad_inputs import cf_source, csv_bytes, onnx_bytes, vnnlib_text
from cftest.nets import mlp, mlp_file

SCALE = float(os.environ.get("CFMLIR_BAD_INPUT_EXAMPLES", "1"))
FUZZ = dict(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


def _examples(n: int) -> int:
    return max(1, int(n * SCALE))


def user_error_or_result(fn):
    """Run ``fn()``: a result, or an exception that cf-run reports as one user error line."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # guessed preprocessing, numpy overflow: warnings, not errors
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - what cf-run's main() catches
            assert not is_internal_error(e), f"internal error {type(e).__name__}: {e}"
            line = error_line(e)
            assert "\n" not in line and "error:" in line and "internal error" not in line, line
            return None


@pytest.fixture(scope="module")
def tiny():
    """A 3-input, 2-output ReLU net (the VNN-LIB generator's sizes) and a 784-input one (the CSV's)."""
    return mlp([3, 4, 2], seed=3), mlp([784, 4, 10], seed=4)


@pytest.fixture(scope="module")
def ibp():
    import cfmlir

    return cfmlir.compile("ibp")


# -- .cf -------------------------------------------------------------------------------------------------
def _run_cf(name: str, text: str, net) -> None:
    """What cf-run does with a .cf file: compile it (frontend, passes, emission, loading) and run it on
    a box; the interpreter too."""
    from cfmlir.compiler import compile_certifier
    from cfmlir.interpreter.run import analyze, compile_source
    from cfruntime.flow.engine import run_certifier

    lb = torch.full((1, 3), -0.1, dtype=torch.float64)
    ub = lb + 0.2
    compiled = user_error_or_result(lambda: compile_certifier(text, name, use_cache=False))
    if compiled is not None:
        user_error_or_result(lambda: run_certifier(compiled, net, lb, ub))
    prog = user_error_or_result(lambda: compile_source(text, name, "mutant"))
    if prog is not None:
        user_error_or_result(lambda: analyze(prog, net, lb[0], ub[0]))


@settings(max_examples=_examples(60), **FUZZ)
@given(st.randoms(use_true_random=False))
def test_damaged_certifiers(tiny, rng):
    _run_cf(*cf_source(rng), tiny[0])


# -- VNN-LIB ---------------------------------------------------------------------------------------------
@settings(max_examples=_examples(300), **FUZZ)
@given(st.randoms(use_true_random=False))
def test_damaged_vnnlib(tiny, ibp, tmp_path_factory, rng):
    import cfmlir
    from cfruntime.network import Network

    assert isinstance(tiny[0], Network)
    path = tmp_path_factory.mktemp("v") / "p.vnnlib"
    path.write_bytes(vnnlib_text(rng).encode("latin-1"))
    prop = user_error_or_result(lambda: cfmlir.load_vnnlib(path, tiny[0]))
    if prop is not None:
        user_error_or_result(lambda: cfmlir.certify(ibp, tiny[0], prop))


# -- CSV -------------------------------------------------------------------------------------------------
@settings(max_examples=_examples(300), **FUZZ)
@given(st.randoms(use_true_random=False))
def test_damaged_csv(tiny, ibp, tmp_path_factory, rng):
    from cfruntime.properties import load_eran_csv, robustness_property

    path = tmp_path_factory.mktemp("c") / "d.csv"
    path.write_bytes(csv_bytes(rng))
    net = tiny[1]
    images = user_error_or_result(lambda: load_eran_csv(path))
    if images is not None:
        prop = user_error_or_result(lambda: robustness_property(images, 0.01, "std", net.input_shape,
                                                                num_classes=net.output_size, network="tiny.onnx"))
        if prop is not None:
            import cfmlir

            user_error_or_result(lambda: cfmlir.certify(ibp, net, prop))


# -- ONNX ------------------------------------------------------------------------------------------------
@settings(max_examples=_examples(300), **FUZZ)
@given(st.randoms(use_true_random=False))
def test_damaged_onnx(ibp, tmp_path_factory, rng):
    import cfmlir
    from cfruntime.network import load_onnx

    path = tmp_path_factory.mktemp("o") / "net.onnx"
    path.write_bytes(onnx_bytes(rng))
    net = user_error_or_result(lambda: load_onnx(path))
    if net is not None and net.input_size == 3:
        lines = [f"(declare-const X_{i} Real)" for i in range(3)]
        lines += [f"(declare-const Y_{j} Real)" for j in range(net.output_size)]
        lines += [a for i in range(3) for a in (f"(assert (>= X_{i} -0.5))", f"(assert (<= X_{i} 0.5))")]
        prop_path = path.with_suffix(".vnnlib")
        prop_path.write_text("\n".join(lines + ["(assert (<= Y_0 -1000.0))"]) + "\n")
        prop = user_error_or_result(lambda: cfmlir.load_vnnlib(prop_path, net))
        if prop is not None:
            user_error_or_result(lambda: cfmlir.certify(ibp, net, prop))


# -- a few through the process ---------------------------------------------------------------------------
def test_seeded_bad_inputs_through_the_cf_run_process(tmp_path):
    """A seeded input of each kind through ``cf-run``: exit status 0 or 1, and on 1 one error line."""
    rng = random.Random(24)
    good = mlp_file(tmp_path / "good.onnx", 784, 10, (1, 28, 28))
    small = mlp_file(tmp_path / "small.onnx", 3, 2)
    data = tmp_path / "good.csv"
    data.write_text("\n".join((REPO / "runtime/default_data/mnist_test_10.csv").read_text().splitlines()[:2]) + "\n")
    runs = []
    for k in range(1):
        spec = tmp_path / f"m{k}.cf"
        spec.write_text(cf_source(rng)[1])
        runs.append(["--certifier", spec, "--net", good, "--data", data, "--eps", "0.01"])
        prop = tmp_path / f"p{k}.vnnlib"
        prop.write_text(vnnlib_text(rng))
        runs.append(["--certifier", "ibp", "--net", small, "--vnnlib", prop])
        csv = tmp_path / f"d{k}.csv"
        csv.write_bytes(csv_bytes(rng))
        runs.append(["--certifier", "ibp", "--net", good, "--data", csv, "--eps", "0.01"])
        net = tmp_path / f"n{k}.onnx"
        net.write_bytes(onnx_bytes(rng))
        runs.append(["--certifier", "ibp", "--net", net, "--vnnlib", tmp_path / "p0.vnnlib"])
    code = "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())"
    for args in runs:
        p = subprocess.run([sys.executable, "-c", code, *map(str, args), "--quiet"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=300, env={**os.environ, "CF_RUN_TRACEBACK": ""})
        assert p.returncode in (0, 1), (args, p.returncode, p.stderr)
        assert "Traceback" not in p.stderr and "internal error" not in p.stderr, (args, p.stderr)
        if p.returncode == 1:
            errors = [line for line in p.stderr.splitlines() if not line.startswith("warning: ")]
            assert len(errors) == 1 and "error: " in errors[0], (args, p.stderr)
