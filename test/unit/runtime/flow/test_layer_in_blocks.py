"""A layer whose rule does not fit in memory at once is computed a block of its neurons at a time
(``engine._in_blocks``, :func:`cfruntime.flow.row_subset.bounds_in_blocks`): every layer's bounds equal
the whole-layer run's, smaller blocks are tried while a block does not fit, and where blocks cannot help
(a member that depends on the rows computed, or no block fits) the run ends out of memory as before."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from cftest.nets import boxes, layered_case as _case
from cfruntime import tensor as gb
from cfruntime.flow import engine
from cfruntime.flow.engine import EngineOutOfMemory, EnginePastDeadline, run_certifier

OOM = "DefaultCPUAllocator: can't allocate memory: you tried to allocate 1048576 bytes. Error code 12"


def _fits_up_to(cert, most: int, tries: list, op: str = "Affine"):
    """``cert`` whose rule ``op`` fails to allocate when asked for more than ``most`` neurons at once
    (the whole layer, or a block of rows); ``tries`` records the neurons asked for, per call."""
    rule = cert.rules[op]

    def limited(rt, ctx):
        asked = ctx.layer.size if ctx.rows is None else ctx.rows.numel()
        tries.append(asked)
        if asked > most:
            raise RuntimeError(OOM)
        return rule(rt, ctx)

    return dataclasses.replace(cert, rules={**cert.rules, op: limited})


def _all_bounds(res, net, b):
    return [tuple(gb.to_dense(res.store.get(layer.index, m)).expand(b, -1) for m in ("l", "u"))
            for layer in net.layers]


@pytest.mark.parametrize("name", ["deeppoly", "alpha_deeppoly", "skippoly"])
@pytest.mark.parametrize("kind", ["mlp", "conv"])
def test_bounds_in_blocks_equal_the_whole_layers(shipped, name, kind):
    """Every affine layer fails at once and in blocks of more than 3 neurons: 4 blocks, then 16 (down to
    at most 3 neurons each); every layer's bounds equal the run that fits (1e-12)."""
    net, lb, ub = _case(kind)
    cert = shipped.compiled(name)
    whole = run_certifier(cert, net, lb, ub)
    tries = []
    blocks = run_certifier(_fits_up_to(cert, 3, tries), net, lb, ub)
    b = lb.shape[0]
    for (lo, hi), (blo, bhi) in zip(_all_bounds(whole, net, b), _all_bounds(blocks, net, b)):
        torch.testing.assert_close(blo, lo, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(bhi, hi, rtol=1e-12, atol=1e-12)
    wide = [layer.size for layer in net.layers[1:] if layer.kind == "affine" and layer.size > 3]
    assert wide and max(tries) == max(wide)  # the whole layer was tried first
    assert any(3 < t < max(wide) for t in tries)  # then blocks too big, then blocks that fit
    for n in wide:  # a block of n/4 rows was tried before blocks of n/16
        assert -(-n // engine.FIRST_BLOCKS) in tries


def _products(kind: str):
    """``product``: products of 4 and of 3 neurons (blocks of 1 row); ``wide``: ``(A x) * (B x)`` of 8
    neurons (blocks of 2 rows)."""
    from cftest.product_nets import network
    from cfruntime.network.graph import Layer, Network

    if kind == "product":
        return network("product"), [4, 1, 1, 1, 1, 3, 1, 1, 1]
    g = torch.Generator().manual_seed(3)
    layers = [Layer(index=0, kind="input", shape=(3,))]
    for _ in range(2):
        layers.append(Layer(index=len(layers), kind="affine", preds=[0], shape=(8,), linear_kind="dense",
                            weight=torch.randn(8, 3, generator=g, dtype=torch.float64),
                            bias=torch.randn(8, generator=g, dtype=torch.float64)))
    layers.append(Layer(index=3, kind="mul", preds=[1, 2], shape=(8,)))
    layers.append(Layer(index=4, kind="affine", preds=[3], shape=(2,), linear_kind="dense",
                        weight=torch.randn(2, 8, generator=g, dtype=torch.float64), bias=torch.zeros(2, dtype=torch.float64)))
    # the layer, its first block of 2 (fails on the shapes: 2 rows against 8), again padded, 3 more blocks
    return Network(layers, source="wide_product.handbuilt"), [8, 2, 2, 2, 2, 2]


@pytest.mark.parametrize("kind", ["product", "wide"])
@pytest.mark.parametrize("name", ["deeppoly", "alpha_deeppoly"])
def test_a_product_in_blocks_equals_the_whole_layer(shipped, name, kind):
    """A product's rule takes the better of its interval bound (whole layer) and its back-substituted one
    (the rows of the block): a block of more than one row is run again with its traverse laid into the
    layer's rows (row_subset.pad_rows; before, "size of tensor a (186) must match ... (47)" on VNN-COMP 2024
    ml4acopf's 118-bus net)."""
    net, expected = _products(kind)
    lb, ub = boxes(3, batch=3, seed=4, radius=0.6)
    cert = shipped.compiled(name)
    whole = run_certifier(cert, net, lb, ub)
    tries = []
    blocks = run_certifier(_fits_up_to(cert, 2, tries, "Neuron_mult"), net, lb, ub)
    assert tries == expected  # each layer, then its blocks (a quarter of it, rounded up)
    for (lo, hi), (blo, bhi) in zip(_all_bounds(whole, net, 3), _all_bounds(blocks, net, 3)):
        torch.testing.assert_close(blo, lo, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(bhi, hi, rtol=1e-12, atol=1e-12)


def test_no_block_fits_ends_out_of_memory(shipped):
    net, lb, ub = _case("mlp")
    with pytest.raises(EngineOutOfMemory):
        run_certifier(_fits_up_to(shipped.compiled("deeppoly"), 0, []), net, lb, ub)


def test_a_member_that_depends_on_the_rows_ends_out_of_memory(shipped):
    """ReuseCert stores each affine layer's back-substituted expressions: computed for a block of rows they
    are not the layer's, so blocks cannot stand in for the whole layer."""
    net, lb, ub = _case("mlp")
    tries = []
    with pytest.raises(EngineOutOfMemory):
        run_certifier(_fits_up_to(shipped.compiled("reusecert"), 3, tries), net, lb, ub)
    # the first affine layer's expressions are its own (over the inputs): 4 blocks of 3 stand in for it; the
    # second's are back-substituted, so they differ per block: refused after its first block
    assert tries == [12, 3, 3, 3, 3, 12, 3]


def test_widened_and_gradient_runs_end_out_of_memory(shipped):
    """Blocks serve plain runs only: a widened float32 run or one with gradients fails as before."""
    net, lb, ub = _case("mlp")
    cert = _fits_up_to(shipped.compiled("deeppoly"), 3, [])
    with pytest.raises(EngineOutOfMemory):
        run_certifier(cert, net, lb.float(), ub.float(), dtype=torch.float32)
    lb = lb.clone().requires_grad_(True)
    with pytest.raises(EngineOutOfMemory):
        run_certifier(cert, net, lb, ub)


def test_blocks_off_ends_out_of_memory_at_once(shipped):
    """``blocks=False`` (``run_certifier`` and ``CompiledEngine``): out of memory after the whole layer's try."""
    from cfmlir.engines import CompiledEngine

    net, lb, ub = _case("mlp")
    tries = []
    cert = _fits_up_to(shipped.compiled("deeppoly"), 3, tries)
    with pytest.raises(EngineOutOfMemory):
        run_certifier(cert, net, lb, ub, blocks=False)
    assert tries == [12]
    with pytest.raises(EngineOutOfMemory):
        CompiledEngine(cert, blocks=False).bounds(net, lb, ub)
    assert CompiledEngine(cert).bounds(net, lb, ub)[0].shape == (3, 3)


def test_blocks_under_a_deadline_stop_when_the_layer_would_end_after_it(shipped, monkeypatch):
    """``blocks=<deadline>``: after each block the rows left are predicted at the rate of the rows done;
    a layer that would end after the deadline stops before its next block (``EnginePastDeadline``, not out
    of memory: a smaller batch would not help), one that ends before it gives the bounds of ``blocks=True``.
    The clock is a fake one that advances 10 s per block."""
    import time

    net, lb, ub = _case("mlp")
    cert = shipped.compiled("deeppoly")
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    tries = []
    limited = _fits_up_to(cert, 3, tries)
    rule = limited.rules["Affine"]

    def slow(rt, ctx):
        if ctx.rows is not None:
            clock[0] += 10.0
        return rule(rt, ctx)

    slow_cert = dataclasses.replace(limited, rules={**limited.rules, "Affine": slow})
    # the first affine layer (12 neurons): blocks of 3, 10 s each; after one block 30 s more are predicted
    with pytest.raises(EnginePastDeadline, match=r"layer 1 \(affine\).* 30 s more after 3 of 12 neurons, with 15 s left"):
        run_certifier(slow_cert, net, lb, ub, blocks=1025.0)
    assert tries == [12, 3]
    clock[0], tries[:] = 1000.0, []
    blocked = run_certifier(slow_cert, net, lb, ub, blocks=1e9)
    whole = run_certifier(cert, net, lb, ub)
    for (lo, hi), (blo, bhi) in zip(_all_bounds(whole, net, 3), _all_bounds(blocked, net, 3)):
        torch.testing.assert_close(blo, lo, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(bhi, hi, rtol=1e-12, atol=1e-12)
