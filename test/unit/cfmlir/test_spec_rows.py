"""Zero specification rows are not bounded (cfmlir/spec_rows.py): a robustness spec's own-class row is dropped
before the engine runs and given back as exactly 0; the other rows' bounds are those of the whole spec, the
kept layers' last bounds keep every row; specs without (or with uneven) zero rows are left alone."""

from __future__ import annotations

import torch

import cfmlir
from cfmlir import spec_rows
from cfmlir.engines import bounds_in_batches
from cfruntime.properties import robustness_spec
from cftest.nets import boxes, mlp


def test_compact_and_spread_round_trip():
    labels = torch.tensor([2, 0, 3])
    C = robustness_spec(labels, 4)
    small, keep = spec_rows.compact(C)
    assert small.shape == (3, 3, 4)
    assert not bool((keep == labels.unsqueeze(1)).any())
    assert torch.equal(spec_rows.spread(small.sum(-1) + 5.0, keep, 4)[torch.arange(3), labels], torch.zeros(3, dtype=torch.float64))
    back = spec_rows.spread(torch.arange(9, dtype=torch.float64).reshape(3, 3), keep, 4)
    others = torch.ones(3, 4, dtype=torch.bool)
    others[torch.arange(3), labels] = False
    assert torch.equal(back[others], torch.arange(9, dtype=torch.float64))
    uneven = C.clone()
    uneven[0, (labels[0] + 1) % 4] = 0  # sample 0 has two zero rows, the others one
    assert spec_rows.compact(uneven)[1] is None
    assert spec_rows.compact(torch.randn(2, 3, 4))[1] is None
    assert spec_rows.spread(back, None, 4) is back


def test_bounds_in_batches_skips_the_own_row_and_keeps_the_others():
    net = mlp([5, 12, 12, 4], seed=2)
    lb, ub = boxes(5, batch=6, seed=3, radius=0.2)
    labels = torch.tensor([0, 1, 2, 3, 1, 2])
    C = robustness_spec(labels, 4)
    eng = cfmlir.engine_for(cfmlir.compile("deeppoly"))
    rows_bounded = []
    real = eng.bounds
    eng.bounds = lambda mnet, *a: rows_bounded.append(mnet.output_size) or real(mnet, *a)
    lower, upper, layers, _ = bounds_in_batches(eng, net, lb, ub, C, 4, with_layers=True, keep_layers=True)
    assert rows_bounded == [3, 3]  # two batches, the own row left out
    full_lo, full_hi, _ = real(net.with_margin_layer(C), lb, ub)
    others = torch.ones(6, 4, dtype=torch.bool)
    others[torch.arange(6), labels] = False
    torch.testing.assert_close(lower[others], full_lo[others], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(upper[others], full_hi[others], rtol=1e-12, atol=1e-12)
    assert bool((lower[~others] == 0).all() and (upper[~others] == 0).all())
    last = max(layers)
    assert layers[last][0].shape == (6, 4) and torch.equal(layers[last][0], lower)
