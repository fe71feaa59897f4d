"""Max pooling and the VNN-COMP network shapes (issue 16) through every shipped certifier: on small nets
built here (MaxPool with and without its own padding, a zero Pad before MaxPool and before
AveragePool, a rank-1 input without a batch dimension), the compiled engine gives the reference
interpreter's bounds on every layer in every mode, and those bounds contain every concrete value the
soundness checker finds (samples, box vertices, PGD).  The Maxpool rules take both of their branches
here (a window neuron dominating the others, and not)."""

from functools import lru_cache

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from cfmlir.certifiers import certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfmlir.interpreter.run import analyze, compile_source
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.network import network_from_model
from cftest.activation_nets import CERTIFIERS, assert_matches_interpreter_on
from cftest.nets import boxes


def _net(nodes, inits, in_dims, out_dims):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(in_dims))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(out_dims))],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return network_from_model(model)


def _conv_pool_net(seed, pool_nodes, n_flat, hw=5):
    """Conv(1->2, k2) - Relu - <pool_nodes on 'r', ending in 'pool'> - Flatten - Gemm(->3)."""
    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.6).astype(np.float32)  # noqa: E731
    inits = {"K": f(2, 1, 2, 2), "B": f(2) + 0.3, "W": f(3, n_flat), "b": f(3)}
    extra = {}
    for node in pool_nodes:
        if node.op_type == "Pad":
            extra[node.input[1]] = np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)
    nodes = [helper.make_node("Conv", ["X", "K", "B"], ["c"], kernel_shape=[2, 2]), helper.make_node("Relu", ["c"], ["r"]),
             *pool_nodes, helper.make_node("Flatten", ["pool"], ["fl"]), helper.make_node("Gemm", ["fl", "W", "b"], ["Y"], transB=1)]
    return _net(nodes, {**inits, **extra}, [1, 1, hw, hw], [1, 3])


@lru_cache(maxsize=None)
def network(name):
    if name == "maxpool":  # 4x4 -> k2 s2: windows of 4, no padding
        return _conv_pool_net(1, [helper.make_node("MaxPool", ["r"], ["pool"], kernel_shape=[2, 2], strides=[2, 2])], 8)
    if name == "maxpool_padded":  # 4x4 -> k3 s2 with its own (-inf) padding: cut windows
        return _conv_pool_net(2, [helper.make_node("MaxPool", ["r"], ["pool"], kernel_shape=[3, 3], strides=[2, 2],
                                                   pads=[1, 1, 0, 1])], 2 * 2 * 2)
    if name == "pad_maxpool":  # verivital-like: a zero Pad, then MaxPool
        return _conv_pool_net(3, [helper.make_node("Pad", ["r", "pads"], ["p"]),
                                  helper.make_node("MaxPool", ["p"], ["pool"], kernel_shape=[2, 2], strides=[2, 2])], 2 * 3 * 3)
    if name == "pad_avgpool":
        return _conv_pool_net(4, [helper.make_node("Pad", ["r", "pads"], ["p"]),
                                  helper.make_node("AveragePool", ["p"], ["pool"], kernel_shape=[2, 2], strides=[2, 2])], 2 * 3 * 3)
    if name == "vector":  # VNN-COMP test benchmark: rank-1 input, no batch dimension
        rng = np.random.default_rng(5)
        inits = {"W1": rng.standard_normal((3, 4)).astype(np.float32), "b1": rng.standard_normal(4).astype(np.float32),
                 "W2": rng.standard_normal((4, 2)).astype(np.float32)}
        nodes = [helper.make_node("MatMul", ["X", "W1"], ["m"]), helper.make_node("Add", ["m", "b1"], ["a"]),
                 helper.make_node("Relu", ["a"], ["r"]), helper.make_node("MatMul", ["r", "W2"], ["Y"])]
        return _net(nodes, inits, [3], [2])
    raise KeyError(name)


NETS = ["maxpool", "maxpool_padded", "pad_maxpool", "pad_avgpool", "vector"]


def test_the_networks_have_the_intended_layers():
    kinds = {n: [l.kind for l in network(n).layers] for n in NETS}
    assert kinds["maxpool"] == ["input", "affine", "relu", "maxpool", "affine"]
    assert kinds["pad_maxpool"] == ["input", "affine", "relu", "affine", "maxpool", "affine"]  # the zero neurons
    assert kinds["pad_avgpool"] == ["input", "affine", "relu", "affine"]  # pad + pool folded into the Gemm
    assert kinds["vector"] == ["input", "affine", "relu", "affine"] and network("vector").input_shape == (3,)
    mp = network("maxpool_padded")[3].maxpool
    assert not bool((mp.index_map >= 0).all())  # some windows are cut by the padding


def _boxes(net):
    return boxes(net.input_size, batch=3, seed=11, radius=0.5)


@pytest.mark.parametrize("name", CERTIFIERS)
def test_compiled_equals_interpreter_and_is_sound(name, compiled_matches_interpreter, shipped):
    assert_matches_interpreter_on(NETS, network, _boxes, name, shipped, compiled_matches_interpreter,
                                  {"n_samples": 256, "n_vertices": 64, "pgd_steps": 20})


@pytest.mark.parametrize("net_name", ["maxpool", "maxpool_padded", "pad_maxpool"])
def test_deeppoly_maxpool_takes_both_branches(net_name, shipped):
    """Some window neurons dominate their window (L = U = that neuron), others do not (U is a number)."""
    net = network(net_name)
    mp = next(l for l in net.layers if l.kind == "maxpool")
    lb, ub = _boxes(net)
    dominated = undecided = 0
    for i in range(lb.shape[0]):
        r = analyze(shipped.interpreted("deeppoly"), net, lb[i], ub[i])
        for L, U in zip(r.member("L", mp.index), r.member("U", mp.index)):
            if L == U and L.coeffs:
                dominated += 1
            elif not U.coeffs:
                undecided += 1
    assert dominated > 0 and undecided > 0


def test_interval_maxpool_is_exact_on_a_point(shipped):
    """On a box that is one point, every certifier's maxpool bounds are the max itself."""
    net = network("maxpool_padded")
    x = torch.rand(1, net.input_size, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    values = net.forward_all(x)
    mp = next(l for l in net.layers if l.kind == "maxpool")
    for name in ("ibp", "deeppoly", "deepz"):
        res = run_certifier(shipped.compiled(name, True), net, x, x)
        for m in ("l", "u"):
            torch.testing.assert_close(gb.to_dense(res.store.get(mp.index, m)), values[mp.index], rtol=0, atol=1e-12)


def test_map_list_of_a_function_with_list_operations_is_a_one_line_error():
    """map_list runs its function on the whole list tensor at once, which is right only for a function
    that works element by element: one that reduces a list inside is refused (the interpreter runs it)."""
    from cfmlir.diagnostics import CfError

    text, file = certifier_source("ibp")
    bad = text.replace("    Maxpool -> (max(prev[l]), max(prev[u]));",
                       "    Maxpool -> (max(prev[l]), max(prev.mapList(above(prev))));").replace(
        "transformer ibp{", "func above(Neuron List ps, Neuron n) = sum(ps[u]) + n[u];\n\ntransformer ibp{")
    assert bad != text
    compile_source(bad, file, "bad")  # the language accepts it
    with pytest.raises(CfError) as ei:
        compile_certifier(bad, file, pipeline_for(True), use_cache=False)
    assert "\n" not in str(ei.value) and "map_list only with a function that works element by element" in str(ei.value)


@pytest.mark.parametrize("name", ["deeppoly", "deepz", "polyzono"])
def test_maxpool_rules_make_no_host_syncs(name, shipped):
    """The windows, their masks and the window weights (one patches block) are laid out from the
    pooling's geometry, never from values: a planned certification reads nothing back to the host."""
    from cfruntime.op_count import OpCounter

    for net_name in ("maxpool_padded", "pad_maxpool"):
        net = network(net_name)
        lb, ub = _boxes(net)
        run_certifier(shipped.compiled(name, True), net, lb, ub)  # the windows are laid out on the first run
        with OpCounter() as c:  # without the run's one finite-bounds check (its host sync: runtime/flow/finite.py)
            run_certifier(shipped.compiled(name, True), net, lb, ub, check_finite=False)
        assert c.syncs == 0, (net_name, c.syncs)
