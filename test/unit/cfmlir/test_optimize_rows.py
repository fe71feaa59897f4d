"""The optimisation loop's sparse intermediate bounds (cfmlir/optimize_rows.py): after the first run, layers
before every parameter reader keep their bounds, and a layer feeding an activation with parameters gets new
bounds only on the neurons whose parameter domain is wider than a point; the loop's result equals the loop
that computes every bound (float64, MLP and CNN), and the rows' parameters alone move."""

from __future__ import annotations

import pytest
import torch

import cfmlir.optimize_rows as optimize_rows
from cfmlir.optimize import OptimizeOptions, OptimizeReport, optimize_bounds
from cfruntime.flow.overrides import BoundOverride
from cfruntime.flow.param_store import PAIR, ParamStore
from cftest.nets import boxes, mlp, small_conv


def _problem(kind: str):
    if kind == "mlp":
        net = mlp([6, 24, 24, 24, 4], seed=5)
        lb, ub = boxes(6, batch=3, seed=6, radius=0.05)
        out = 4
    else:
        net = small_conv(seed=2)
        lb, ub = boxes(50, batch=3, seed=3, radius=0.1)
        out = 3
    C = torch.randn(3, 2, out, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    return net.with_margin_layer(C), lb, ub


@pytest.mark.parametrize("kind", ["mlp", "conv"])
def test_the_loop_with_row_overrides_equals_the_full_loop(shipped, kind, monkeypatch):
    mnet, lb, ub = _problem(kind)
    cert = shipped.compiled("alpha_deeppoly")
    made = []
    real = optimize_rows.row_overrides

    def spy(*args):
        made.append(real(*args))
        return made[-1]

    monkeypatch.setattr(optimize_rows, "row_overrides", spy)
    if kind == "conv":  # rows of its small convolution would not pay (cost rule): taken anyway, for the check
        monkeypatch.setattr(optimize_rows, "_rows_pay", lambda layer, inputs, r: r < layer.size)
    results = {}
    for mode in ("rows", "full"):
        if mode == "full":
            monkeypatch.setattr(optimize_rows, "row_overrides", lambda *args: {})
        rep = OptimizeReport()
        lower, upper, _ = optimize_bounds(cert, mnet, lb, ub, OptimizeOptions(iterations=8, early_stop=False),
                                          dtype=torch.float64, report=rep)
        results[mode] = (lower, upper, rep.history)
    (ov,) = made
    assert any(o.rows is None for o in ov.values()), ov  # a layer before every reader: its bounds kept
    assert any(o.rows is not None and 0 < o.rows.numel() < mnet.layers[k].size for k, o in ov.items()), ov
    lo_r, up_r, hist_r = results["rows"]
    lo_f, up_f, hist_f = results["full"]
    torch.testing.assert_close(lo_r, lo_f, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(torch.tensor(hist_r), torch.tensor(hist_f), rtol=1e-9, atol=1e-9)
    assert hist_f[-1] > hist_f[0] + 1e-6  # the parameters did move the bounds


def test_hold_rows_keeps_only_the_rows_gradients():
    ps = ParamStore(requires_grad=True)
    t = torch.zeros(2, 5, 3, dtype=torch.float64, requires_grad=True)
    other = torch.zeros(2, 4, 3, dtype=torch.float64, requires_grad=True)
    ps.raw = {("al", 3, 2, PAIR): t, ("al", 5, 4, PAIR): other}
    t.grad = torch.ones_like(t)
    other.grad = torch.ones_like(other)
    rows = torch.tensor([1, 4])
    lo = torch.zeros(2, 5, dtype=torch.float64)
    optimize_rows.hold_rows(ps, {3: BoundOverride(lo, lo, replace=True, rows=rows), 5: BoundOverride(lo[:, :4], lo[:, :4], replace=True)})
    assert torch.equal(t.grad[:, rows], torch.ones(2, 2, 3, dtype=torch.float64))
    assert float(t.grad.sum()) == 12.0  # only the two rows
    assert torch.equal(other.grad, torch.ones_like(other))  # a layer whose bounds are all kept reads no parameter
