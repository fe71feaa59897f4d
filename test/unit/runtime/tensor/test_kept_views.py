"""Views kept on the tensors they view (``segmented_ops.kept_view``) must not keep those tensors alive.

A view holds its base from C++; kept in the base's ``__dict__`` it made a cycle that Python's collector
cannot see, so every transient coefficient that a back-substitution multiplied through a kept view stayed
in memory for good (DeepPoly: 31 MB a batch on a 3 x 1000 MLP, and a batch of 1 out of memory in CI under a
data limit after a few halvings, 2026-12-03)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import cfmlir
from cfruntime.flow import graphs
from cfruntime.network.builders import mlp_model
from cfruntime.network.onnx_loader import network_from_model
from cfruntime.tensor import segmented_ops as so

VIEWS = {
    "column": lambda t: so._column(t),
    "batch_column": lambda t: so._batch_column(t, 4),
    "rows_times_shared": lambda t: so._rows_times_shared(torch.ones(2, t.shape[2], dtype=t.dtype), t),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_a_kept_view_does_not_keep_its_tensor(name):
    """The view is kept (a second call returns the same object) and still follows the tensor's data, yet
    the tensor is freed once nothing else refers to it."""
    t = torch.randn(1, 3, 5, dtype=torch.float64)
    first = VIEWS[name](t)
    assert VIEWS[name](t) is first or name == "rows_times_shared"  # (a product: its kept transpose is inside)
    before = first.clone()
    t.mul_(2)  # in place: the kept view sees it (it shares the data)
    if name != "rows_times_shared":
        assert torch.equal(VIEWS[name](t), 2 * before)
    gone = weakref.ref(t)
    del t, first
    gc.collect()
    assert gone() is None



def test_a_blocks_kept_row_is_kept_on_the_block():
    """A row-diagonal block's core as a row (``segmented_ops._block_row``) is kept on the block, not on the
    core, and made without a ``detach``: the block holds the core, the core not the block, so no cycle; the
    core and the block are freed together."""
    from cfruntime.op_count import OpCounter
    from cfruntime.tensor.block_diagonal import DiagonalBlock

    core = torch.randn(2, 5, dtype=torch.float64)
    block = DiagonalBlock(core, 1)
    with OpCounter() as c:
        row = so._block_row(block)
    assert so._block_row(block) is row and row.shape == (2, 1, 5) and dict(c.by_name) == {"unsqueeze": 1}
    core.mul_(2)
    assert torch.equal(row[:, 0], core)
    gone = weakref.ref(core)
    del core, block, row
    gc.collect()
    assert gone() is None


def test_eager_runs_keep_no_tensor():
    """Ten eager DeepPoly runs (recorded runs off: a recording's replay makes no views) leave as many live
    tensor storages as two: nothing of a run survives it."""
    rng = np.random.default_rng(0)
    sizes = [6, 40, 40, 3]
    ws = [rng.normal(size=(o, i)).astype(np.float32) / np.sqrt(i) for i, o in zip(sizes, sizes[1:])]
    net = network_from_model(mlp_model(ws, [np.zeros(o, np.float32) for o in sizes[1:]], ["relu"] * 2,
                                       input_shape=(6,)))
    engine = cfmlir.engine_for(cfmlir.compile("deeppoly"))
    x = torch.tensor(rng.normal(size=(3, 6)))

    def live() -> int:
        gc.collect()
        return len({o.untyped_storage().data_ptr() for o in gc.get_objects()
                    if issubclass(type(o), torch.Tensor)})  # (type: isinstance reads a deprecated object's __class__)

    record_after, graphs.CPU_RECORD_AFTER = graphs.CPU_RECORD_AFTER, 1 << 30
    try:
        graphs.clear()
        for _ in range(2):
            engine.bounds(net, x - 0.1, x + 0.1)
        two = live()
        for _ in range(8):
            engine.bounds(net, x - 0.1, x + 0.1)
        assert live() == two
    finally:
        graphs.CPU_RECORD_AFTER = record_after


def test_a_bias_view_outlives_the_run():
    """A layer's bias is a constant (``parameters.bias``): the view a rule reads it through
    (``FlowContext._view``) is kept on it for every later run, so the kept columns seg_ops makes of that view
    are made once, not once per run (CROWN-IBP on cifar convBig: 24 operations a run fewer)."""
    rng = np.random.default_rng(1)
    sizes = [6, 40, 3]
    ws = [rng.normal(size=(o, i)).astype(np.float32) / np.sqrt(i) for i, o in zip(sizes, sizes[1:])]
    bs = [rng.normal(size=o).astype(np.float32) for o in sizes[1:]]
    net = network_from_model(mlp_model(ws, bs, ["relu"], input_shape=(6,)))
    engine = cfmlir.engine_for(cfmlir.compile("crown_ibp"), graph=False)
    x = torch.tensor(rng.normal(size=(3, 6)))

    def kept():
        out = {}
        for layer in net.layers:
            cache = getattr(layer.bias, "__dict__", {}).get("_engine_parameters", {})
            for _, values in cache.values():
                b = values.get("bias")
                if b is not None:
                    assert so.is_constant(b)
                    out.update({(layer.index, k): v for k, v in b.__dict__.get("_cf_memo", {}).items()})
        return out

    first = engine.bounds(net, x - 0.1, x + 0.1)
    views = kept()
    assert views, "no view kept on a bias"
    again = engine.bounds(net, x - 0.1, x + 0.1)
    assert kept() == views and all(kept()[k] is v for k, v in views.items())
    assert all(torch.equal(a, b) for a, b in zip(first[:2], again[:2]))
