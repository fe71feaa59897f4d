"""Non-finite bounds are errors (:mod:`cfruntime.flow.finite`): NaN weights (also when the NaN never reaches
the last layer's bounds), float32 overflow, a ``0.0/0.0`` in a certifier -- in the compiled engine and the
reference interpreter's, located at the first bad layer; one host sync and one ``isfinite`` per
certification, however many layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import helper

from cfmlir.certifiers import certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfmlir.engines import InterpreterEngine
from cfmlir.interpreter.run import compile_source
from cfruntime.flow.engine import run_certifier
from cfruntime.flow import finite
from cfruntime.flow.finite import NonFiniteBoundsError, is_finite
from cfruntime.network import network_from_model
from cfruntime.network.builders import make_model
from cfruntime.op_count import OpCounter
from cftest.nets import boxes, mlp

IBP_NAN = ("    Relu -> ((prev[l] >= 0 ? prev[l] : 0), (prev[u] >= 0 ? prev[u] : 0));",
           "    Relu -> ((prev[l] >= 0 ? prev[l] : 0) + 0.0/0.0, (prev[u] >= 0 ? prev[u] : 0));")


def compiled(name: str, text: str | None = None):
    t, f = certifier_source(name)
    return compile_certifier(text or t, f, pipeline_for(True), use_cache=False)


def net_with(w1: np.ndarray, name: str = "fc1"):
    """Gemm(w1) - Relu - Gemm(2) on 3 inputs."""
    rng = np.random.default_rng(0)
    inits = {"W1": w1.astype(np.float32), "b1": np.zeros(w1.shape[0], np.float32),
             "W2": rng.standard_normal((2, w1.shape[0])).astype(np.float32), "b2": np.zeros(2, np.float32)}
    nodes = [helper.make_node("Gemm", ["input", "W1", "b1"], ["h"], transB=1, name=name),
             helper.make_node("Relu", ["h"], ["a"], name="relu"),
             helper.make_node("Gemm", ["a", "W2", "b2"], ["output"], transB=1, name="fc2")]
    return network_from_model(make_model(nodes, inits, (3,)))


def nan_weights():
    """The loader refuses NaN initializers; a NaN comes from folding (a BatchNorm of negative variance, see
    the cf-run tests) or, here, is put into the loaded layer."""
    net = net_with(np.random.default_rng(1).standard_normal((4, 3)))
    net.layers[1].weight[2, 1] = float("nan")
    return net


@pytest.mark.parametrize("certifier", ["ibp", "deeppoly", "deepz"])
def test_nan_weights_stop_at_their_layer(certifier):
    net = nan_weights()
    lb, ub = boxes(3, batch=2)
    with pytest.raises(NonFiniteBoundsError) as e:
        run_certifier(compiled(certifier), net, lb, ub)
    msg = str(e.value)
    assert msg.startswith("error: non-finite bound at layer 1 (affine, ONNX node 'fc1'): ") and "\n" not in msg
    assert "of neuron 2 is NaN (sample 0)" in msg and "its parameters" in msg and e.value.layer == 1


#: a sound IBP ReLU whose conditionals drop a NaN (``NaN > 1`` is false: the bounds 0 and 1)
IBP_MASKING = (IBP_NAN[0], "    Relu -> ((prev[l] > 1.0 ? prev[l] : 0), (prev[u] > 1.0 ? prev[u] : 1.0));")


def test_a_nan_that_never_reaches_the_last_layer_is_caught():
    """The ReLU rule's conditionals turn the NaN bounds of layer 1 into 0 and 1: the margins are finite, but
    the analysis is not, and the check reads every layer."""
    cert = compiled("ibp", certifier_source("ibp")[0].replace(*IBP_MASKING))
    net, (lb, ub) = nan_weights(), boxes(3, batch=2)
    res = run_certifier(cert, net, lb, ub, check_finite=False)
    assert bool(torch.isfinite(res.lower).all() and torch.isfinite(res.upper).all()) and not is_finite(res.finite)
    with pytest.raises(NonFiniteBoundsError, match="layer 1"):
        run_certifier(cert, net, lb, ub)


def test_float32_overflow_is_named():
    w = np.sign(np.random.default_rng(2).standard_normal((4, 3))) * 3e38
    net = net_with(w)
    lb, ub = boxes(3, batch=1)
    with pytest.raises(NonFiniteBoundsError, match=r"layer 1 \(affine, ONNX node 'fc1'\).*float32 overflow \(magnitudes up to 3e\+38"):
        run_certifier(compiled("deeppoly"), net, lb + 5, ub + 5, dtype=torch.float32)
    res = run_certifier(compiled("deeppoly"), net, lb + 5, ub + 5, dtype=torch.float64)  # float64 holds them
    assert bool(torch.isfinite(res.lower).all())


def test_a_nan_made_by_the_rule():
    text = certifier_source("ibp")[0]
    assert text.count(IBP_NAN[0]) == 1
    cert = compiled("ibp", text.replace(*IBP_NAN))
    lb, ub = boxes(3, batch=2)
    with pytest.raises(NonFiniteBoundsError, match=r"layer 2 \(relu, ONNX node 'relu'\): 'l' of neuron 0 is NaN .*"
                                                   r"the certifier's rule produced it from finite inputs"):
        run_certifier(cert, net_with(np.random.default_rng(1).standard_normal((4, 3))), lb, ub)


def test_the_interpreter_engine_stops_too():
    lb, ub = boxes(3, batch=2)
    eng = InterpreterEngine(compile_source(*certifier_source("ibp"), "ibp"))
    with pytest.raises(NonFiniteBoundsError, match=r"^error: non-finite bound at layer 1 \(affine, ONNX node 'fc1'\): "
                                                   r"'l' of neuron 2 is NaN \(sample 0\); its parameters"):
        eng.bounds(nan_weights(), lb, ub)
    text = certifier_source("ibp")[0].replace(*IBP_NAN)
    eng = InterpreterEngine(compile_source(text, "ibp_nan.cf", "ibp_nan"))
    with pytest.raises(NonFiniteBoundsError, match=r"layer 2 \(relu, ONNX node 'relu'\).* the certifier's rule"):
        eng.bounds(net_with(np.random.default_rng(1).standard_normal((4, 3))), lb, ub)


@pytest.mark.parametrize("depth", [2, 6])
def test_one_sync_and_three_operations_per_certification(depth, monkeypatch):
    """The check costs three torch operations (cat, mul, sum) and one host sync per call, whatever the
    depth; without it the compiled engine makes no host sync on this net."""
    net = mlp([5] + [6] * depth + [3], seed=3)
    lb, ub = boxes(5, batch=4)
    cert = compiled("deeppoly")
    run_certifier(cert, net, lb, ub)  # parameters and layouts made once, outside the counts

    def count():
        with OpCounter() as c:
            run_certifier(cert, net, lb, ub)
        return c

    with_check = count()
    zero = torch.zeros(())  # (made outside the count)
    monkeypatch.setattr(finite, "finite_flag", lambda *a: zero)
    monkeypatch.setattr(finite, "is_finite", lambda flag: True)
    without = count()
    assert without.syncs == 0 and with_check.syncs == 1
    assert with_check.ops - without.ops == 4  # cat, mul, sum and the sync's _local_scalar_dense
    assert with_check.by_name["_local_scalar_dense"] == 1


# -- the float32 widening never turns finite bounds into infinite ones silently (issue 24 point 4 on the
# widened path): raw float32 bounds finite but within the widening's error terms of float32's largest
# value stop the widened run with the overflow named

TOP = float(np.finfo(np.float32).max)


def near_overflow():
    """Gemm(3 -> 4) whose rows sum to float32's largest value less 2^-20 of it, ReLU, a small Gemm(4 -> 2)."""
    net = net_with(np.full((4, 3), np.float32(TOP / 3 * (1 - 2**-20)), np.float32))
    net.layers[3].weight.mul_(1e-3)
    return net


@pytest.mark.parametrize("certifier", ["ibp", "crown_ibp", "deeppoly"])
def test_widening_past_float32_max_is_an_error_not_a_bound(certifier):
    cert, net = compiled(certifier), near_overflow()
    lb, ub = torch.full((2, 3), 0.5, dtype=torch.float64), torch.full((2, 3), 1.0, dtype=torch.float64)
    raw = run_certifier(cert, net, lb, ub, dtype=torch.float32, widen=False, check_finite=False)
    assert is_finite(raw.finite)  # every layer's raw float32 bounds are finite ...
    widened = run_certifier(cert, net, lb, ub, dtype=torch.float32, widen=True, check_finite=False)
    assert not is_finite(widened.finite)  # ... the widened ones are not (the outward terms overflow) ...
    with pytest.raises(NonFiniteBoundsError) as e:  # ... and the default run says so instead of answering
        run_certifier(cert, net, lb, ub, dtype=torch.float32)
    assert "layer 1 (affine, ONNX node 'fc1')" in str(e.value) and "float32 overflow" in str(e.value)
