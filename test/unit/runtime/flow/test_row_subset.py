"""Bounds for some rows of a layer only (``BoundOverride(rows=...)``, :mod:`cfruntime.flow.row_subset`): the
rows' bounds are the whole-layer rule's, on dense and convolutional layers (padding, stride), with
parameters that differ per reading row (dense and kept-column stores), gradients included; the other rows
keep the given bounds; misuse is refused."""

from __future__ import annotations

import pytest
import torch

from cftest.nets import layered_case as _case
from cfruntime import tensor as gb
from cfruntime.flow import param_store
from cfruntime.flow.engine import EngineError, run_certifier
from cfruntime.flow.overrides import BoundOverride, check_overrides
from cfruntime.flow.param_store import ParamStore


def _layer_bounds(res, k: int, b: int):
    return tuple(gb.to_dense(res.store.get(k, m)).expand(b, -1) for m in ("l", "u"))


def _scrambled_store(cert, net, lb, ub, sparse: bool) -> ParamStore:
    """A store whose pair parameters differ per reading row (a row read as another's gives other bounds)."""
    ps = ParamStore(sparse=sparse)
    run_certifier(cert, net, lb, ub, params=ps)
    g = torch.Generator().manual_seed(7)
    for t in ps.raw.values():
        t.copy_(torch.rand(t.shape, generator=g, dtype=t.dtype))
    return ps


@pytest.mark.parametrize("kind, sparse, representation", [("mlp", False, True), ("mlp", True, True), ("conv", False, True),
                                                           ("conv", True, True), ("mlp", False, False)])
def test_rows_get_the_whole_layers_bounds(shipped, kind, sparse, representation, monkeypatch):
    """alpha_deeppoly (float64) with scrambled parameters: for each hidden affine layer, rows 0, 2, 4, ...
    computed alone equal the whole run's bounds (1e-12); the other rows are the given (looser) ones.
    ``sparse``: kept-column parameter store; ``representation``: g-BSCR (else dense tensors)."""
    if sparse:  # every pair tensor kept by columns, read as KeptColumns
        monkeypatch.setattr(param_store, "SPARSE_MIN_NUMEL", 0)
        monkeypatch.setattr(param_store, "SPARSE_BELOW", 1.0)
    net, lb, ub = _case(kind)
    cert = shipped.compiled("alpha_deeppoly")
    ps = _scrambled_store(cert, net, lb, ub, sparse)
    full = run_certifier(cert, net, lb, ub, params=ps, sparse=representation)
    b = lb.shape[0]
    last = net.layers[-1].index
    checked = 0
    for layer in net.layers[1:]:
        if layer.kind != "affine" or layer.index == last:
            continue
        k, n = layer.index, layer.size
        lo, hi = _layer_bounds(full, k, b)
        rows = torch.arange(0, n, 2)
        given = BoundOverride(lo - 1.0, hi + 1.0, replace=True, rows=rows)
        got = run_certifier(cert, net, lb, ub, params=ps, bound_overrides={k: given}, sparse=representation)
        glo, ghi = _layer_bounds(got, k, b)
        torch.testing.assert_close(glo[:, rows], lo[:, rows], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(ghi[:, rows], hi[:, rows], rtol=1e-12, atol=1e-12)
        other = torch.arange(1, n, 2)
        assert torch.equal(glo[:, other], lo[:, other] - 1.0) and torch.equal(ghi[:, other], hi[:, other] + 1.0)
        checked += 1
    assert checked == (3 if kind == "mlp" else 2)


@pytest.mark.parametrize("kind", ["mlp", "conv"])
def test_rows_gradients_are_the_whole_layers(shipped, kind):
    """The gradient of the rows' summed lower bounds in the parameters is the whole run's, row-restricted."""
    net, lb, ub = _case(kind)
    cert = shipped.compiled("alpha_deeppoly")
    ps = _scrambled_store(cert, net, lb, ub, sparse=False)
    for t in ps.raw.values():
        t.requires_grad_(True)
    k = [l.index for l in net.layers[1:] if l.kind == "affine"][1]  # the second affine layer: it reads parameters
    rows = torch.tensor([0, 3, 5])
    b = lb.shape[0]

    def grads(overrides):
        for t in ps.raw.values():
            t.grad = None
        with torch.enable_grad():
            res = run_certifier(cert, net, lb, ub, params=ps, bound_overrides=overrides)
            lo = _layer_bounds(res, k, b)[0][:, rows]
            lo.sum().backward()
        return {key: t.grad.clone() for key, t in ps.raw.items() if t.grad is not None}

    with torch.no_grad():
        lo, hi = _layer_bounds(run_certifier(cert, net, lb, ub, params=ps), k, b)
    whole = grads(None)
    part = grads({k: BoundOverride(lo.clone(), hi.clone(), replace=True, rows=rows)})
    assert whole and set(part) <= set(whole)
    for key, g in whole.items():
        torch.testing.assert_close(part.get(key, torch.zeros_like(g)), g, rtol=1e-10, atol=1e-12)


def test_row_overrides_refuse_misuse(shipped):
    net, lb, ub = _case("mlp")
    n = net.layers[1].size
    lo, hi = torch.zeros(3, n, dtype=torch.float64), torch.ones(3, n, dtype=torch.float64)
    with pytest.raises(ValueError, match="replace=True"):
        BoundOverride(lo, hi, rows=torch.tensor([0]))
    with pytest.raises(ValueError, match="replace=True"):
        BoundOverride(lo, None, replace=True, rows=torch.tensor([0]))
    for bad in (torch.tensor([[0]]), torch.tensor([0.0]), torch.zeros(0, dtype=torch.long)):
        with pytest.raises(ValueError, match="rows must be"):
            check_overrides({1: BoundOverride(lo, hi, replace=True, rows=bad)}, net, 3)
    cert = shipped.compiled("deeppoly")
    with pytest.raises(EngineError, match="unwidened"):
        run_certifier(cert, net, lb.float(), ub.float(), dtype=torch.float32, widen=True,
                      bound_overrides={1: BoundOverride(lo, hi, replace=True, rows=torch.tensor([0, 1]))})
