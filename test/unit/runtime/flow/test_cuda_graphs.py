"""On CUDA the planned engine replays a captured CUDA graph per batch: its bounds equal the eager
engine's (the same kernels, up to the algorithms cuDNN picks) and the CPU's in float64, for every certifier whose traverses are
layer-granular; a new batch of a new margin matrix is copied into the graph, not re-captured.
Skipped without a GPU (CI has none)."""

import pytest
import torch

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfruntime.flow import graphs
from cfruntime.flow.engine import run_certifier

from cftest.nets import boxes, mlp, small_conv

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@pytest.mark.parametrize("name", BASE_CERTIFIERS)
@pytest.mark.parametrize("net_kind", ["mlp", "conv"])
def test_graph_replay_equals_eager_and_cpu(name, net_kind):
    net = mlp([6, 8, 7, 5], seed=3) if net_kind == "mlp" else small_conv(seed=4)
    cert = compile_certifier(*certifier_source(name), pipeline_for(True))
    graphs.clear()
    for seed in (1, 2):  # the second batch replays the graph captured for the first
        lb, ub = boxes(net.input_size, batch=4, seed=seed, radius=0.2)
        C = torch.randn(4, 3, net.output_size, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        mnet = net.with_margin_layer(C)
        replayed = run_certifier(cert, mnet, lb, ub, dtype=torch.float64, device="cuda")
        assert replayed.store is None  # the graph's result
        eager = run_certifier(cert, mnet, lb, ub, dtype=torch.float64, device="cuda", graph=False)
        cpu = run_certifier(cert, mnet, lb, ub, dtype=torch.float64)
        torch.testing.assert_close(replayed.lower, eager.lower, rtol=1e-12, atol=1e-12)  # cuDNN may pick other algorithms
        torch.testing.assert_close(replayed.upper, eager.upper, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(replayed.lower.cpu(), cpu.lower, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(replayed.upper.cpu(), cpu.upper, rtol=1e-9, atol=1e-9)
    assert len(graphs._GRAPHS) == 1 and None not in graphs._GRAPHS.values()


@pytest.mark.parametrize("name", ["ibp", "crown_ibp", "deeppoly"])
@pytest.mark.parametrize("net_kind", ["mlp", "conv"])
def test_widened_float32_is_captured(name, net_kind):
    """The widened float32 run (what users get on a GPU) is captured too: its set-up (the input centred
    into the first layer's float64 bias) copies nothing from the host inside the capture.  Before the
    bias was kept on the device, every conv net ran eagerly ('Cannot copy between CPU and CUDA tensors
    during CUDA graph capture'), 4-12x slower on an H200."""
    import warnings

    net = mlp([6, 8, 7, 5], seed=3) if net_kind == "mlp" else small_conv(seed=4)
    cert = compile_certifier(*certifier_source(name), pipeline_for(True))
    graphs.clear()
    lb, ub = boxes(net.input_size, batch=4, seed=1, radius=0.2)
    C = torch.randn(4, 3, net.output_size, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mnet = net.with_margin_layer(C)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a failed capture warns and runs eagerly
        replayed = run_certifier(cert, mnet, lb, ub, dtype=torch.float32, device="cuda", widen=True)
    assert replayed.store is None and None not in graphs._GRAPHS.values()
    eager = run_certifier(cert, mnet, lb, ub, dtype=torch.float32, device="cuda", widen=True, graph=False)
    torch.testing.assert_close(replayed.lower, eager.lower, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(replayed.upper, eager.upper, rtol=1e-6, atol=1e-6)
