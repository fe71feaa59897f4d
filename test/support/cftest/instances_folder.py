"""A generated VNN-COMP benchmark folder (``instances.csv`` with every kind of verdict) for the ``--instances``
tests, and the float64 reference of its networks."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import onnx

from cfruntime.network.builders import mlp_model, random_mlp_weights


def relu_net(sizes, seed):
    ws, bs = random_mlp_weights(sizes, seed=seed)
    return ws, bs, mlp_model(ws, bs, activations="relu", input_shape=(sizes[0],))


def numpy_forward(ws, bs, x):
    """The reference: the float32 weights in float64, ReLU between the layers."""
    h = np.asarray(x, np.float64)
    for i, (w, b) in enumerate(zip(ws, bs)):
        h = w.astype(np.float64) @ h + b.astype(np.float64)
        if i < len(ws) - 1:
            h = np.maximum(h, 0)
    return h


def vnnlib_text(lb, ub, n_out, output_asserts):
    lines = [f"(declare-const X_{i} Real)" for i in range(len(lb))] + [f"(declare-const Y_{j} Real)" for j in range(n_out)]
    for i, (lo, hi) in enumerate(zip(lb, ub)):
        lines += [f"(assert (>= X_{i} {float(lo)!r}))", f"(assert (<= X_{i} {float(hi)!r}))"]
    return "\n".join(lines + output_asserts) + "\n"


def slow_instance(d: Path) -> Path:
    """``d/mid.onnx`` (30 inputs, four 300-wide ReLU layers) and ``d/mid.vnnlib`` (``Y_0 >= 10`` on
    [-1, 1]^30): an instance whose analysis (the interpreter, branch and bound) runs far past a short limit.
    The level sits far below the root bound and far above the reachable maximum (PGD from 4000 starts finds
    ``Y_0 = 1.52``), so branch and bound neither proves nor falsifies it: at ``Y_0 >= 1000`` it came to prove the
    property in 923 subdomains (1.0 s), and a fast CI machine answered ``unsat`` inside the 3 s limit."""
    _ws, _bs, model = relu_net([30, 300, 300, 300, 300, 5], seed=3)
    onnx.save(model, str(d / "mid.onnx"))
    (d / "mid.vnnlib").write_text(vnnlib_text(-np.ones(30), np.ones(30), 5, ["(assert (>= Y_0 10.0))"]))
    return d


def reference_output(onnx_path: Path, x) -> np.ndarray:
    """The network's output at ``x`` as the competition checks it: onnxruntime on float32 inputs
    (numpy in float64 when onnxruntime is not installed)."""
    try:
        import onnxruntime as ort
    except ImportError:  # pragma: no cover - onnxruntime is a pinned test dependency
        return None
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return sess.run(None, {name: np.asarray(x, np.float32).reshape(1, -1)})[0].reshape(-1).astype(np.float64)


def make_instances_folder(d: Path) -> dict:
    """A benchmark folder ``d`` whose instances.csv has: unsat, sat, a .gz pair (unsat), a big net with a tiny timeout, unsat again
    (after the killed worker), a missing file, an unsupported operator; what the tests check the results against."""
    (d / "onnx").mkdir()
    (d / "vnnlib").mkdir()
    ws, bs, model = relu_net([4, 8, 8, 3], seed=1)
    onnx.save(model, str(d / "onnx" / "small.onnx"))
    centre = np.array([0.1, -0.2, 0.3, 0.05])
    lb, ub = centre - 0.01, centre + 0.01
    y0 = numpy_forward(ws, bs, centre)
    # unsat: Y_0 is far above this level on the whole (small) box
    (d / "vnnlib" / "unsat.vnnlib").write_text(vnnlib_text(lb, ub, 3, [f"(assert (<= Y_0 {float(y0[0]) - 50.0!r}))"]))
    # sat: the centre itself reaches Y_0 >= y0(centre) - 0.01 (and more of the box does)
    sat_level = float(y0[0]) - 0.01
    (d / "vnnlib" / "sat.vnnlib").write_text(vnnlib_text(lb, ub, 3, [f"(assert (>= Y_0 {sat_level!r}))"]))
    # the gzip pair, and the CSV naming the uncompressed file as VNN-COMP's do
    with gzip.open(d / "onnx" / "small_gz.onnx.gz", "wb") as f:
        f.write((d / "onnx" / "small.onnx").read_bytes())
    with gzip.open(d / "vnnlib" / "unsat_gz.vnnlib.gz", "wb") as f:
        f.write((d / "vnnlib" / "unsat.vnnlib").read_bytes())
    # a net whose loading alone takes far longer than its timeout (about 3 MB of weights)
    _bw, _bb, big = relu_net([100, 500, 500, 500, 500, 10], seed=2)
    onnx.save(big, str(d / "onnx" / "big.onnx"))
    (d / "vnnlib" / "big.vnnlib").write_text(vnnlib_text(-np.ones(100), np.ones(100), 10, ["(assert (>= Y_0 10.0))"]))
    # an operator the loader does not support (Erf; the file keeps its old name)
    from onnx import helper

    from cfruntime.network.builders import make_model

    onnx.save(make_model([helper.make_node("Erf", ["input"], ["output"], name="erf")], {}, (4,)),
              str(d / "onnx" / "sign.onnx"))
    (d / "instances.csv").write_text(
        "onnx/small.onnx,vnnlib/unsat.vnnlib,60\n"
        "onnx/small.onnx,vnnlib/sat.vnnlib,60\n"
        "onnx/small_gz.onnx,vnnlib/unsat_gz.vnnlib.gz,60\n"  # small_gz.onnx is read from small_gz.onnx.gz
        "onnx/big.onnx,vnnlib/big.vnnlib,0.01\n"
        "onnx/small.onnx.gz,vnnlib/unsat.vnnlib,60\n"  # missing file
        "\n"
        "onnx/sign.onnx,vnnlib/unsat.vnnlib,60\n"
        "onnx/small.onnx,vnnlib/unsat.vnnlib,60\n")
    return {"dir": d, "ws": ws, "bs": bs, "lb": lb, "ub": ub, "sat_level": sat_level}
