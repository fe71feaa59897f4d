"""Members that every rule reads through its predecessors only (LOCAL_MEMBERS: DeepZ's and PolyZono's
Z) are freed once a layer's successors are analysed; the bounds do not change."""

import dataclasses

import pytest
import torch

from cfmlir.certifiers import certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier

from cftest.nets import boxes, mlp, residual_mlp, small_conv


@pytest.mark.parametrize("name,local", [("deepz", ["l", "u", "Z"]), ("polyzono", ["Z"]), ("ibp", []), ("deeppoly", []),
                                        ("crown_ibp", []), ("zid", ["Z"]), ("reusecert", [])])
def test_local_members_follow_the_rules(name, local):
    """prev[Z] is local; a map over a PolyExp (IBP's n[l]) or a traverse (DeepPoly's n[L]) may read any
    layer."""
    cert = compile_certifier(*certifier_source(name), pipeline_for(True), use_cache=False)
    assert list(cert.local_members) == local
    assert f"LOCAL_MEMBERS = {local!r}" in cert.source


@pytest.mark.parametrize("name", ["deepz", "polyzono", "zid"])
@pytest.mark.parametrize("net_fn", [lambda: mlp([6, 8, 8, 4]), residual_mlp, small_conv])
@pytest.mark.parametrize("representation", ["planned", "gbscr", "dense"])
def test_local_expressions_freed_and_bounds_kept(name, net_fn, representation):
    net = net_fn()
    cert = compile_certifier(*certifier_source(name), pipeline_for(True), use_cache=False)
    if any(layer.kind == "add" for layer in net.layers) and "Neuron_add" not in cert.rules:
        pytest.skip(f"{name} has no rule for residual additions")
    keep_all = dataclasses.replace(cert, local_members=())
    lb, ub = boxes(net.input_size, batch=2, seed=4, radius=0.2)
    freed = run_certifier(cert, net, lb, ub, representation=representation)
    kept = run_certifier(keep_all, net, lb, ub, representation=representation)
    last = net.layers[-1].index
    for layer in net.layers:
        if layer.index == last:
            assert layer.index in freed.store.values["Z"]
        else:  # every other layer has a successor, which ran (the residual block's too)
            assert layer.index not in freed.store.values["Z"]
            with pytest.raises(RuntimeError, match="was freed"):
                freed.store.get(layer.index, "Z")
        assert layer.index in kept.store.values["Z"]
        for member in ("l", "u"):
            assert torch.equal(gb.to_dense(freed.store.get(layer.index, member)),
                               gb.to_dense(kept.store.get(layer.index, member)))
