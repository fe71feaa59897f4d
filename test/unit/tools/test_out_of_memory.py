"""A run that does not fit in memory at the requested batch size goes on with smaller batches (and
says so); an input that does not fit on its own is a one-line error naming the layer and the size
(issue 13, acceptance 9).  Memory is capped with ``resource.setrlimit(RLIMIT_AS)`` in a child process,
above what the process already maps: a dense-tensor DeepPoly of an MLP built here needs a few MiB per
input per layer, and a convolution of 32 channels on 28x28 maps unrolls to a 150 MiB matrix."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")

CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np, onnx
    from cfruntime.network.builders import mlp_model
    import torch
    from cfmlir.tools.cf_run import main
    torch.set_num_threads(1)

    out_dir, extra_mib, hidden = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(0)

    def net(width, name):
        sizes = [784, width, width, 10]
        weights = [rng.normal(size=(o, i)).astype(np.float32) * 0.05 for i, o in zip(sizes[:-1], sizes[1:])]
        biases = [np.zeros(o, np.float32) for o in sizes[1:]]
        onnx.save(mlp_model(weights, biases, ["relu", "relu", None], input_shape=(784,)), f"{out_dir}/{name}")
        return ["--net", f"{out_dir}/{name}", "--data", f"{out_dir}/data.csv", "--eps", "0.01", "--no-sparse", "--quiet"]

    with open(f"{out_dir}/data.csv", "w") as f:
        for i in range(16):
            f.write(",".join([str(i % 10)] + [str(int(v)) for v in rng.integers(0, 256, 784)]) + "\\n")
    args = net(300, "net.onnx")
    assert main(args + ["--batch-size", "1", "--json", f"{out_dir}/ref.json"]) == 0  # unconstrained, warm
    if hidden != 300:  # a convolution unrolled (dense tensors): one matrix bigger than what the process holds
        from onnx import TensorProto, helper, numpy_helper
        k = numpy_helper.from_array(rng.normal(size=(hidden, 1, 3, 3)).astype(np.float32), "K")
        w = numpy_helper.from_array(rng.normal(size=(10, hidden * 784)).astype(np.float32) * 1e-3, "W")
        nodes = [helper.make_node("Conv", ["input", "K"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                 helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Flatten", ["r"], ["f"], axis=1),
                 helper.make_node("Gemm", ["f", "W"], ["out"], transB=1)]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 28, 28])],
                                  [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 10])], [k, w])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), f"{out_dir}/conv.onnx")
        args[1] = f"{out_dir}/conv.onnx"
    size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
    cap = size + int(extra_mib * 2 ** 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    sys.exit(main(args + ["--batch-size", "16", "--json", f"{out_dir}/out.json"]))
""")


def run_child(tmp_path, extra_mib: float, hidden: int = 300):
    # one malloc arena and one thread: the address space then grows with the allocations, not with
    # per-thread arenas that come and go
    env = {**os.environ, "MALLOC_ARENA_MAX": "1", "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), str(extra_mib), str(hidden)],
                          capture_output=True, text=True, timeout=600, env=env)


def test_a_batch_that_does_not_fit_is_split(tmp_path):
    p = run_child(tmp_path, 400)
    assert p.returncode == 0, p.stderr
    out, ref = (json.loads((tmp_path / f).read_text()) for f in ("out.json", "ref.json"))
    assert out["batch_size"]["requested"] == 16 and out["batch_size"]["used"] < 16
    notes = [l for l in p.stderr.splitlines() if l.startswith("note: a batch of")]
    assert notes and all("did not fit in memory" in l and "at layer" in l for l in notes)
    assert out["certified"] == ref["certified"]
    for a, b in zip(out["margin_lb"], ref["margin_lb"]):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-9)


def test_one_input_that_does_not_fit_is_a_one_line_error(tmp_path):
    p = run_child(tmp_path, 64, hidden=32)
    assert p.returncode == 1, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("error: out of cpu memory at layer ") and "for a batch of 1" in last, p.stderr
    assert "Traceback" not in p.stderr
