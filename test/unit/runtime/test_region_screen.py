"""``cfruntime.region_screen``: the attack on a property of many input regions finds the one violated
region's point, finds nothing on a safe property, and its padded disjuncts mean what the disjuncts mean."""

from __future__ import annotations

import numpy as np
import torch

import cfmlir
from cfruntime.default_data import default_network_path
from cfruntime.properties import InputRegion, VnnlibProperty, confirm_counterexample
from cfruntime.properties.vnnlib import output_in_disjunct
from cfruntime.region_screen import padded_disjuncts, screen_regions
from cfruntime.soundness import MANY_REGIONS, vnnlib_counterexample


def _net():
    return cfmlir.load_network(default_network_path())


def _property(net, violated: int | None, regions: int = 60, seed: int = 0) -> VnnlibProperty:
    """Boxes of radius 0.02 around random points; the output region ``Y_0 >= y_0(centre) + 1000`` (never
    reached) in every region but ``violated``, whose is ``Y_0 <= y_0(centre)`` (reached at the centre)."""
    rng = np.random.default_rng(seed)
    out, m = [], net.output_size
    for r in range(regions):
        c = rng.uniform(0.2, 0.8, net.input_size)
        with torch.no_grad():
            y0 = float(net.forward(torch.from_numpy(c).reshape(1, -1))[0, 0])
        row = np.zeros((1, m))
        if r == violated:
            row[0, 0] = 1.0
            disjuncts = [(row, np.array([y0]))]
        else:
            row[0, 0] = -1.0
            disjuncts = [(row, np.array([-(y0 + 1000.0)])), (np.vstack([row, row]), np.array([-(y0 + 2000.0)] * 2))]
        out.append(InputRegion(c - 0.02, c + 0.02, disjuncts))
    return VnnlibProperty(net.input_size, m, out, "<test>")


def test_the_one_violated_region_is_found_and_confirmed():
    net = _net()
    prop = _property(net, violated=41)
    found = screen_regions(net, prop, seed=3)
    assert found is not None and found[0] == 41
    cex = confirm_counterexample(net, prop, found[0], found[1])
    assert cex is not None
    reg = prop.regions[41]
    assert np.all(found[1].numpy() >= reg.lb) and np.all(found[1].numpy() <= reg.ub)


def test_a_safe_property_gives_nothing():
    net = _net()
    assert screen_regions(net, _property(net, violated=None), seed=1) is None


def test_many_regions_go_to_the_screen_and_few_do_not(monkeypatch):
    import cfruntime.soundness as soundness

    net = _net()
    calls = []
    real = soundness.screen_regions
    monkeypatch.setattr(soundness, "screen_regions", lambda *a, **k: calls.append(1) or real(*a, **k))
    found = vnnlib_counterexample(net, _property(net, violated=MANY_REGIONS + 2, regions=MANY_REGIONS + 5))
    assert calls and found is not None and found[0] == MANY_REGIONS + 2
    calls.clear()
    found = vnnlib_counterexample(net, _property(net, violated=3, regions=MANY_REGIONS))
    assert not calls and found is not None and found[0] == 3


def test_padded_disjuncts_hold_exactly_where_a_disjunct_does():
    """Regions with 1, 2 and 3 disjuncts of 0 to 3 rows: ``min_d max_j (A y - b) <= 0`` iff
    :func:`output_in_disjunct` finds one, on random outputs (a disjunct without rows holds everywhere)."""
    rng = np.random.default_rng(5)
    m = 3
    shapes = [(1,), (2, 3), (0, 2), (3, 1, 2)]
    regions = [InputRegion(np.zeros(1), np.ones(1), [(rng.standard_normal((r, m)), rng.standard_normal(r)) for r in rows])
               for rows in shapes]
    A, b = padded_disjuncts(regions, m)
    assert A.shape == (4, 3, 3, m)
    ys = torch.from_numpy(rng.standard_normal((500, m)))
    for r, reg in enumerate(regions):
        ids = torch.full((500,), r)
        v = (torch.einsum("pdjm,pm->pdj", A[ids], ys) - b[ids]).amax(2).amin(1)
        want = [output_in_disjunct(reg, y.numpy()) is not None for y in ys]
        assert (v <= 0).tolist() == want
        assert any(want) and (r == 2 or not all(want))  # both answers occur (region 2: everywhere)
