"""On the CPU the planned engine records a certification's operations once a batch shape recurs and
replays them (:mod:`cfruntime.flow.tape`, :func:`cfruntime.flow.graphs.graphed_bounds`): every replayed
bound is bit for bit the eager engine's, on other boxes and other margin matrices; a run that reads a
value back is never recorded, and a recording that kept one run's choice is caught by the check of
its first replay."""

import dataclasses

import numpy as np
import pytest
import torch

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfruntime.flow import graphs
from cfruntime.flow.engine import run_certifier
from cfruntime.flow.tape import NotReplayable, Tape, compile_tape
from cfruntime.op_count import OpCounter

from cftest.nets import boxes, mlp, small_conv


def _cert(name):
    return compile_certifier(*certifier_source(name), pipeline_for(True))


def _batch(net, seed, batch=3):
    lb, ub = boxes(net.input_size, batch=batch, seed=seed, radius=0.2)
    C = torch.randn(batch, 3, net.output_size, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return net.with_margin_layer(C), lb, ub


@pytest.mark.parametrize("name", BASE_CERTIFIERS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_replay_equals_eager_bit_for_bit(name, dtype):
    """Eight batches (new boxes, new margin matrices) of one shape: the first ``CPU_RECORD_AFTER - 1`` run
    eagerly, the next records, the next checks its replay, the rest replay -- every result equal to the
    eager engine's, float32 (widened) and float64, on an MLP and a convolutional net."""
    cert = _cert(name)
    for net in (mlp([6, 8, 7, 5], seed=3), small_conv(seed=4)):
        graphs.clear()
        for seed in range(8):
            mnet, lb, ub = _batch(net, seed)
            got = run_certifier(cert, mnet, lb, ub, dtype=dtype, graph=True)
            want = run_certifier(cert, mnet, lb, ub, dtype=dtype, graph=False)
            assert torch.equal(got.lower, want.lower) and torch.equal(got.upper, want.upper), (name, seed)
        if not cert.layer_granular:  # g-BSCR runs are not planned: never recorded
            assert not graphs._GRAPHS
            continue
        (taped,) = graphs._GRAPHS.values()
        assert taped is not None and taped.checked
        assert got.store is None  # the last one was replayed


def test_a_replay_runs_the_recorded_operations_only():
    """A replayed run dispatches the eager run's operations, and none of the Python that chose them."""
    cert = _cert("crown_ibp")
    net = mlp([6, 8, 7, 5], seed=3)
    graphs.clear()
    for seed in range(graphs.CPU_RECORD_AFTER + 1):
        run_certifier(cert, *_batch(net, seed), dtype=torch.float32, graph=True)
    mnet, lb, ub = _batch(net, 99)
    with OpCounter() as eager:
        run_certifier(cert, mnet, lb, ub, dtype=torch.float32, graph=False)
    with OpCounter() as replayed:
        res = run_certifier(cert, mnet, lb, ub, dtype=torch.float32, graph=True)
    assert res.store is None
    assert replayed.syncs == eager.syncs == 1  # the finite check's
    # the same operations, but for the two views of the boxes flattened before the replay is called, and
    # without the eager run's ``detach`` of the tensors it keeps a view on (segmented_ops.kept_view: the
    # run's own tensors, so made at every eager run; a replay makes no views)
    diff = {k: replayed.by_name[k] - eager.by_name[k] for k in replayed.by_name | eager.by_name}
    assert diff.get("detach", 0) <= 0, diff
    assert {k: d for k, d in diff.items() if d and k != "detach"} == {"view": 2}, diff


def test_a_run_that_reads_a_value_back_is_not_recorded():
    x = torch.randn(4)

    def branchy(v):
        return v * 2 if bool((v > 0).any()) else v * 3  # the branch a replay would keep

    with pytest.raises(NotReplayable, match="reads a value back"):
        with Tape([x]):
            branchy(x)


def test_a_replay_runs_the_operations_on_new_inputs():
    x, y = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
    w = torch.randn(2, dtype=torch.float64)  # made before the recording: a constant

    def f(a, b):
        c = (a @ b).relu_()
        return c + w, torch.cat([c, a[:, :2]], dim=0).amax(0)

    tape = Tape([x, y])
    with tape:
        first = f(x, y)
    replay = compile_tape(tape, first)
    for k in range(3):
        a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
        for got, want in zip(replay(a, b), f(a, b)):
            assert torch.equal(got, want)


def test_a_recording_that_kept_one_runs_choice_is_never_trusted(monkeypatch):
    """A choice made from a value read without the dispatcher (``numpy()``) is invisible to the tape;
    the first replay is checked against an eager run on other boxes, differs, and the key runs
    eagerly from then on, with a warning."""
    cert = _cert("ibp")
    net = mlp([6, 8, 7, 5], seed=3)
    real = run_certifier

    def run(*args, **kwargs):
        res = real(*args, check_finite=False, **kwargs)  # as run_certifier passes it
        if float(np.asarray(args[2].numpy()).sum()) > 0:  # a hidden choice: scale the bounds or not
            res = dataclasses.replace(res, lower=res.lower * 2)
        return res

    def bounds(mnet, lb, ub):  # as run_certifier: eager when no replay answers
        lb, ub = lb.float(), ub.float()
        out = graphs.graphed_bounds(run, cert, mnet, lb, ub, torch.float32, "planned")
        if out is None:
            out = run(cert, mnet, lb, ub, dtype=torch.float32, device=lb.device, representation="planned", graph=False)
            out = (out.lower, out.upper, out.finite)
        return out

    graphs.clear()
    for seed in range(graphs.CPU_RECORD_AFTER):  # the recording call sees a box of positive sum
        mnet, lb, ub = _batch(net, seed)
        bounds(mnet, lb.abs() + 0.1, lb.abs() + 0.3)
    (taped,) = graphs._GRAPHS.values()
    assert taped is not None and not taped.checked
    mnet, lb, ub = _batch(net, 50)
    lb, ub = -ub.abs() - 1.0, -ub.abs() - 0.5  # a box of negative sum: the eager run chooses otherwise
    with pytest.warns(RuntimeWarning, match="differs from the eager run"):
        got = bounds(mnet, lb, ub)
    want = run(cert, mnet, lb.float(), ub.float(), dtype=torch.float32, representation="planned", graph=False)
    assert torch.equal(got[0], want.lower)
    assert list(graphs._GRAPHS.values()) == [None]
    assert graphs.graphed_bounds(run, cert, mnet, lb.float(), ub.float(), torch.float32, "planned") is None


def test_the_engine_replays_and_run_certifier_stays_eager_by_default():
    """``CompiledEngine.bounds`` (what ``cf-run`` and the API's ``certify`` call) asks for the replay on the
    CPU; ``run_certifier``'s default there is eager, with every layer's store (callers read it)."""
    import cfmlir

    net = mlp([6, 8, 7, 5], seed=3)
    engine = cfmlir.engine_for(cfmlir.compile("crown_ibp"), dtype="float32")
    graphs.clear()
    for seed in range(graphs.CPU_RECORD_AFTER + 3):
        mnet, lb, ub = _batch(net, seed)
        lower, upper, _ = engine.bounds(mnet, lb, ub)
        eager = run_certifier(engine.certifier, mnet, lb, ub, dtype=torch.float32)
        assert eager.store is not None
        assert torch.equal(lower, eager.lower.double()) and torch.equal(upper, eager.upper.double())
    (taped,) = graphs._GRAPHS.values()
    assert taped is not None and taped.checked


def test_a_recording_keeps_no_temporary_alive():
    """The recording holds what the eager run holds: a temporary dies when the run drops it (a big run's
    recording would otherwise keep every temporary of the run at once), and its slot is forgotten, so
    a later tensor given its id is not mistaken for it."""
    import weakref

    x = torch.randn(64, 64, dtype=torch.float64)
    tape = Tape([x])
    with tape:
        t = x * 2
        dead = weakref.ref(t)
        del t
        y = x + 1
    assert dead() is None
    replay = compile_tape(tape, (y,))
    z = torch.randn(64, 64, dtype=torch.float64)
    assert torch.equal(replay(z)[0], z + 1)
