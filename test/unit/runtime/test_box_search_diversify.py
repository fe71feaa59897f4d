"""Output-diversified starts (:func:`cfruntime.box_search.diversify`) in both attacks: a counterexample in a
corner region of a box where the property's violation is flat (no gradient) is found with them and missed
without them; even rows keep their uniform starts."""

from __future__ import annotations

import torch

import cfmlir.bab.attack as attack
import cfruntime.soundness as soundness
from cfmlir.bab.objective import Objective
from cfruntime.box_search import ODI_STEPS, pgd
from cfruntime.network.graph import Layer, Network
from cfruntime.properties import parse_vnnlib
from cfruntime.properties.vnnlib import output_in_disjunct

N = 20


def _corner_net() -> Network:
    """x in [0, 1]^20, s = (1, -1, 1, ...): Y_0 = relu(s.x - 9) and Y_1 = relu(-s.x - 9) are 0 but within 1 of
    the corners (1, 0, 1, ...) and (0, 1, 0, ...) (neither is lb or ub; one vertex in 2^20 each), Y_2 =
    relu(s.x + 10) = s.x + 10 on the box: the one output whose gradient is not 0 at a uniform start."""
    s = torch.tensor([(-1.0) ** i for i in range(N)], dtype=torch.float64)
    w = torch.stack([s, -s, s])
    return Network([Layer(index=0, kind="input", shape=(N,)),
                    Layer(index=1, kind="affine", shape=(3,), preds=[0], linear_kind="dense", weight=w,
                          bias=torch.tensor([-9.0, -9.0, 10.0], dtype=torch.float64)),
                    Layer(index=2, kind="relu", shape=(3,), preds=[1])], source="corners.handbuilt")


def _corner_property():
    """``Y_0 >= 0.5 or Y_1 >= 0.5``: violated only near the two corners, where the violation has a gradient."""
    text = "\n".join([f"(declare-const X_{i} Real)" for i in range(N)] + [f"(declare-const Y_{j} Real)" for j in range(3)]
                     + [f"(assert (>= X_{i} 0))\n(assert (<= X_{i} 1))" for i in range(N)]
                     + ["(assert (or (and (>= Y_0 0.5)) (and (>= Y_1 0.5))))"])
    return parse_vnnlib(text=text)


def test_the_vnnlib_attack_reaches_a_flat_corner_only_from_diversified_starts(monkeypatch):
    net, prop = _corner_net(), _corner_property()
    ri, x, y = soundness.vnnlib_counterexample(net, prop)
    assert output_in_disjunct(prop.regions[ri], y.numpy()) is not None
    assert bool((x >= 0).all() and (x <= 1).all()) and float(net.forward(x.reshape(1, -1)).amax()) >= 0.5
    monkeypatch.setattr(soundness, "ODI_STEPS", 0)
    assert soundness.vnnlib_counterexample(net, prop) is None


def test_the_bab_attack_reaches_a_flat_corner_only_from_diversified_starts(monkeypatch):
    net, prop = _corner_net(), _corner_property()
    objective = Objective(prop.regions[0])
    lb = torch.zeros(1, N, dtype=torch.float64)
    ub = torch.ones(1, N, dtype=torch.float64)
    x, v = attack.pgd(net, objective, lb, ub, restarts=4, steps=10, generator=torch.Generator().manual_seed(0))
    assert float(v[0]) <= 0 and float(objective.violation(net.forward(x))[0]) <= 0
    monkeypatch.setattr(attack, "ODI_STEPS", 0)
    x, v = attack.pgd(net, objective, lb, ub, restarts=4, steps=10, generator=torch.Generator().manual_seed(0))
    assert float(v[0]) > 0


def test_diversified_rows_are_the_odd_ones_and_end_at_corners():
    """Zero PGD steps return the starts: the even rows are the uniform starts of plain PGD (same seed), the odd
    ones two half-box steps along ``sign(d(w . y)/dx) = +-s``: a corner of the box."""
    net = _corner_net()
    lb, ub = torch.zeros(1, N, dtype=torch.float64), torch.ones(1, N, dtype=torch.float64)
    ss = torch.zeros(6, dtype=torch.int64)

    def objective(vals):
        return vals[-1][:, 0]

    plain, _ = pgd(net, lb, ub, ss, objective, 0, torch.Generator().manual_seed(3))
    odi, _ = pgd(net, lb, ub, ss, objective, 0, torch.Generator().manual_seed(3), diversify_steps=ODI_STEPS)
    assert torch.equal(odi[0::2], plain[0::2])
    assert not torch.equal(odi[1::2], plain[1::2])
    assert bool(((odi[1::2] == 0) | (odi[1::2] == 1)).all())
    assert (plain[1::2] > 0).all() and (plain[1::2] < 1).all()


def test_diversified_false_keeps_the_uniform_starts():
    """``attack.pgd(diversified=False)``: plain PGD (the flat corner is missed, as with ``ODI_STEPS = 0``)."""
    net, prop = _corner_net(), _corner_property()
    objective = Objective(prop.regions[0])
    lb, ub = torch.zeros(1, N, dtype=torch.float64), torch.ones(1, N, dtype=torch.float64)
    x, v = attack.pgd(net, objective, lb, ub, restarts=4, steps=10, generator=torch.Generator().manual_seed(0),
                      diversified=False)
    assert float(v[0]) > 0


def test_input_branching_attacks_its_boxes_from_uniform_starts(monkeypatch):
    """Branch and bound over input boxes attacks the boxes it splits with plain PGD (the random restart
    uniform in the box: on ACAS Xu 1_9 prop_7 diversified starts lost the counterexample), while the first
    attack on the whole region keeps the diversified starts."""
    from cfmlir import api
    from cfmlir.bab import BabOptions
    from cfmlir.bab.driver import run_bab

    calls = []
    real = attack.pgd

    def recording(*args, **kwargs):
        calls.append((int(args[2].shape[0]), kwargs.get("diversified", True)))
        return real(*args, **kwargs)

    monkeypatch.setattr(attack, "pgd", recording)
    net = _corner_net()
    prop = _corner_property()
    run_bab(api.compile("deeppoly").compiled, net, prop,
            options=BabOptions(branching="input", max_domains=40, attack_restarts=1, attack_steps=1))
    assert calls[0] == (1, True)  # the first attack: the region's one box, diversified
    assert len(calls) > 1 and all(not diversified for _, diversified in calls[1:])  # the split boxes: uniform
