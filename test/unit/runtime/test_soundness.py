"""The soundness checker reports wrong bounds and accepts sound (interval-arithmetic) bounds."""

from __future__ import annotations

import pytest
import torch

from cfruntime.network import network_from_model
from cfruntime.network.builders import conv_residual_model, mlp_model, random_mlp_weights
from cfruntime.properties import robustness_spec
from cfruntime.soundness import Violation, attack_margins, check_bounds, interval_bounds


def nets():
    ws, bs = random_mlp_weights([6, 10, 10, 4], seed=21, scale=2.0)
    yield "mlp", network_from_model(mlp_model(ws, bs, ["relu", "tanh"])), (6,)
    yield "conv", network_from_model(conv_residual_model(seed=5)), (3, 8, 8)


@pytest.mark.parametrize("name,net,shape", list(nets()), ids=["mlp", "conv"])
def test_interval_bounds_are_sound_and_tightened_bounds_are_not(name, net, shape):
    torch.manual_seed(0)
    x = torch.rand(2, *shape, dtype=torch.float64)
    lb, ub = x - 0.05, x + 0.05
    ib = interval_bounds(net, lb, ub)
    assert check_bounds(net, lb, ub, ib, n_samples=64, pgd_steps=10) == []
    # shrink every layer's interval to its middle half: sampling / PGD must find values outside
    bad = {k: (l + 0.25 * (u - l), u - 0.25 * (u - l)) for k, (l, u) in ib.items() if k > 0}
    viol = check_bounds(net, lb, ub, bad, n_samples=64, pgd_steps=10)
    assert viol and all(isinstance(v, Violation) for v in viol)
    layers = {v.layer for v in viol}
    assert len(net) - 1 in layers
    for v in viol[:20]:
        lo, hi = bad[v.layer]
        bound = lo if v.side == "lower" else hi
        assert v.bound == pytest.approx(float(bound[v.sample, v.neuron]))
        assert (v.value < v.bound) == (v.side == "lower")
        # the reported point is inside the box and reproduces the value
        assert torch.all(v.point >= lb[v.sample].reshape(-1) - 1e-12) and torch.all(v.point <= ub[v.sample].reshape(-1) + 1e-12)
        val = net.forward_all(v.point.reshape(1, -1))[v.layer][0, v.neuron]
        assert float(val) == pytest.approx(v.value, abs=1e-9)
    assert viol == sorted(viol, key=lambda v: -v.excess)
    assert "layer" in str(viol[0])


def test_margin_bounds_pgd_finds_an_attack_below_a_wrong_lower_bound():
    ws, bs = random_mlp_weights([5, 16, 3], seed=3, scale=3.0)
    net = network_from_model(mlp_model(ws, bs, "relu"))
    x = torch.rand(3, 5, dtype=torch.float64)
    lb, ub = (x - 0.1).clamp(0, 1), (x + 0.1).clamp(0, 1)
    C = robustness_spec(torch.tensor([0, 1, 2]), 3)
    mnet = net.with_margin_layer(C)
    mb = interval_bounds(mnet, lb, ub)[len(mnet) - 1]
    assert check_bounds(net, lb, ub, margin_bounds=mb, C=C) == []
    assert check_bounds(mnet, lb, ub, {len(mnet) - 1: mb}) == []
    # claim the PGD minimum + 1e-3 as lower bound: only an attack (not the centre) finds the violation
    found, _ = attack_margins(net, lb, ub, C)
    own_mask = torch.eye(3, dtype=torch.bool)
    claimed = (torch.where(own_mask, torch.zeros_like(found), found + 1e-3), mb[1])
    viol = check_bounds(net, lb, ub, margin_bounds=claimed, C=C, n_samples=0, n_vertices=0, pgd_steps=30)
    assert viol and all(v.layer == "margin" and v.side == "lower" for v in viol)
    own = {(s, s) for s in range(3)}
    assert all((v.sample, v.neuron) not in own for v in viol)  # own margin is identically 0 == bound


def test_infinite_bounds_are_not_checked_and_shapes_are_validated():
    ws, bs = random_mlp_weights([4, 3, 2], seed=1)
    net = network_from_model(mlp_model(ws, bs, "relu"))
    lb, ub = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    inf = torch.full((3,), float("inf"), dtype=torch.float64)
    assert check_bounds(net, lb, ub, {1: (-inf, inf)}) == []
    with pytest.raises(Exception, match="expected"):
        check_bounds(net, lb, ub, {1: (torch.zeros(5), torch.ones(5))})


def test_a_nan_bound_is_a_violation_never_no_violation():
    """``value < NaN`` is false: a NaN bound (or a lower bound of +inf, an upper bound of -inf) must still be
    reported, by an infinite excess."""
    ws, bs = random_mlp_weights([4, 3, 2], seed=1)
    net = network_from_model(mlp_model(ws, bs, "relu"))
    lb, ub = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    inf = torch.full((3,), float("inf"), dtype=torch.float64)
    lo, hi = -inf.clone(), inf.clone()
    lo[1] = float("nan")
    hi[2] = -float("inf")
    found = check_bounds(net, lb, ub, {1: (lo, hi)}, pgd_steps=0)
    assert {(v.neuron, v.side) for v in found} == {(1, "lower"), (2, "upper")}
    assert all(v.excess == float("inf") for v in found)
    st: dict = {}
    check_bounds(net, lb, ub, {1: (lo, hi)}, stats=st)
    assert st["violations"] == 2
