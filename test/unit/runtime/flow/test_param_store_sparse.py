"""The parameter store's sparse columns and its projection's gradient (runtime/flow/param_store.py).

A sparse store (what the optimisation loops use) keeps a pair tensor's raw values only on the columns
whose domain is wider than a point; every other column reads its domain's lower end.  On
alpha_deeppoly that must give exactly the dense store's bounds and, on the kept columns, its
gradients; the reference interpreter must read the same values through ``value_at``; an optimiser's
projection must clip the kept columns into their own domains."""

from __future__ import annotations

import pytest
import torch

from cfmlir.interpreter.run import analyze
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.flow import param_store
from cfruntime.flow.param_store import ParamStore, project
from cftest.nets import boxes, mlp, small_conv


@pytest.fixture(autouse=True)
def _small_tensors_sparse(monkeypatch):
    """The test nets are small: keep their tensors sparse whatever their size."""
    monkeypatch.setattr(param_store, "SPARSE_MIN_NUMEL", 0)


def _fill(lo, hi, init):
    """Values inside the domain, different per sample and column (deterministic)."""
    b, n = lo.shape
    frac = torch.sin(torch.arange(b * n, dtype=lo.dtype).reshape(b, n) * 0.7 + 0.3) ** 2
    return lo + (hi - lo) * frac


def _problems():
    # narrow boxes: most ReLUs stable, so the stores keep few columns
    net = mlp([6, 16, 16, 16, 4], seed=3)
    yield "mlp", net, *boxes(net.input_size, batch=3, seed=4, radius=0.05)
    conv = small_conv(seed=5)
    yield "conv", conv, *boxes(conv.input_size, batch=2, seed=6, radius=0.02)


def _run(cert, net, lb, ub, store):
    with torch.enable_grad():
        res = run_certifier(cert, net, lb, ub, dtype=torch.float64, widen=False, params=store, graph=False)
        (res.lower.sum() - 0.5 * res.upper.sum()).backward()
    return res


def test_sparse_store_gives_the_dense_bounds_and_gradients(shipped):
    cert = shipped.compiled("alpha_deeppoly")
    kept = 0
    for name, net, lb, ub in _problems():
        dense = ParamStore(fill=_fill, requires_grad=True)
        sparse = ParamStore(fill=_fill, requires_grad=True, sparse=True)
        a, b = _run(cert, net, lb, ub, dense), _run(cert, net, lb, ub, sparse)
        torch.testing.assert_close(b.lower, a.lower, rtol=0, atol=1e-12, msg=lambda s: f"{name} lower: {s}")
        torch.testing.assert_close(b.upper, a.upper, rtol=0, atol=1e-12, msg=lambda s: f"{name} upper: {s}")
        assert set(sparse.raw) == set(dense.raw)
        for key, cols in sparse.columns.items():
            kept += 1
            full = dense.raw[key]
            assert cols.numel() < full.shape[2], key
            assert sparse.raw[key].shape == (*full.shape[:2], cols.numel())
            torch.testing.assert_close(sparse.raw[key].detach(), full.detach()[..., cols], rtol=0, atol=0)
            g_dense = torch.zeros_like(full) if full.grad is None else full.grad
            g_sparse = torch.zeros_like(sparse.raw[key]) if sparse.raw[key].grad is None else sparse.raw[key].grad
            torch.testing.assert_close(g_sparse, g_dense[..., cols], rtol=1e-12, atol=1e-12,
                                       msg=lambda s: f"{name} {key} gradient: {s}")
            # the columns left out are the ones whose domain is a point in every sample
            lo, hi = dense.last_domains[(key[0], key[2])]
            out = torch.ones(full.shape[2], dtype=torch.bool)
            out[cols] = False
            assert bool((lo[:, out] == hi[:, out]).all()) and bool((lo[:, cols] < hi[:, cols]).any(0).all())
    assert kept, "no pair tensor was kept sparse: the test nets are too unstable"


def test_interpreter_reads_the_sparse_store(shipped):
    """value_at maps a kept column to its raw value and a held one to its domain's end, so the
    interpreter reproduces the compiled bounds of a sparse run."""
    from cfmlir.certifiers import certifier_source
    from cfmlir.interpreter.run import compile_source

    prog = compile_source(*certifier_source("alpha_deeppoly"), "alpha_deeppoly")
    name, net, lb, ub = next(_problems())
    store = ParamStore(fill=_fill, sparse=True)
    res = run_certifier(shipped.compiled("alpha_deeppoly"), net, lb, ub, dtype=torch.float64, params=store)
    assert store.columns
    ref = [analyze(prog, net, lb[b], ub[b], sample=b, params=store) for b in range(lb.shape[0])]
    for layer in net.layers[1:]:
        for m in ("l", "u"):
            got = gb.to_dense(res.store.get(layer.index, m)).expand(lb.shape[0], -1)
            want = torch.tensor([r.member(m, layer.index) for r in ref], dtype=torch.float64)
            torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9, msg=lambda s: f"layer {layer.index} {m}: {s}")


def test_project_clips_kept_columns_into_their_domains(shipped):
    name, net, lb, ub = next(_problems())
    store = ParamStore(requires_grad=True, sparse=True)
    run_certifier(shipped.compiled("alpha_deeppoly"), net, lb, ub, dtype=torch.float64, params=store)
    with torch.no_grad():
        for t in store.raw.values():
            t.fill_(5.0)
    store.project_()
    for key, cols in store.columns.items():
        _, hi = store.last_domains[(key[0], key[2])]
        torch.testing.assert_close(store.raw[key].detach(), hi[..., cols].unsqueeze(1).expand_as(store.raw[key]))


def test_projection_gradient():
    raw = torch.tensor([-0.5, 0.0, 0.3, 1.0, 1.5], dtype=torch.float64, requires_grad=True)
    lo, hi = torch.zeros(5, dtype=torch.float64), torch.ones(5, dtype=torch.float64)
    out = project(raw, lo, hi)
    assert out.tolist() == [0.0, 0.0, 0.3, 1.0, 1.0]
    out.backward(torch.arange(1.0, 6.0, dtype=torch.float64))
    # domains without gradient: the gradient passes to raw everywhere (projected steps)
    assert raw.grad.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    # a domain with gradient: clamp's (1 on the closed domain in raw; lo/hi where they clip)
    raw.grad = None
    lo = lo.clone().requires_grad_(True)
    project(raw, lo, hi).backward(torch.arange(1.0, 6.0, dtype=torch.float64))
    assert raw.grad.tolist() == [0.0, 2.0, 3.0, 4.0, 0.0]
    assert lo.grad.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]


def test_small_tensors_stay_dense(shipped, monkeypatch):
    """Below SPARSE_MIN_NUMEL entries a pair tensor stays dense (the sparse form's extra operations
    cost more than they save there)."""
    monkeypatch.setattr(param_store, "SPARSE_MIN_NUMEL", 1 << 20)
    name, net, lb, ub = next(_problems())
    store = ParamStore(requires_grad=True, sparse=True)
    run_certifier(shipped.compiled("alpha_deeppoly"), net, lb, ub, dtype=torch.float64, params=store)
    assert store.raw and not store.columns


def test_initial_pair_values_are_one_row_shared_by_every_reader(shipped):
    """A fixed store (the engine's own when the caller gives none: no gradient, no fill, no warm start, no
    writer) keeps a pair tensor of the declared initial values as one row expanded over the readers (stride 0:
    no ``[B, n_S, n_k]`` in memory) and gives exactly the bounds of the same values materialised per reader (a
    store that asks for gradients); a store that is not fixed keeps writable tensors."""
    cert = shipped.compiled("alpha_deeppoly")
    for name, net, lb, ub in _problems():
        shared = ParamStore(fixed=True)
        res = run_certifier(cert, net, lb, ub, dtype=torch.float64, widen=False, params=shared, graph=False)
        full = ParamStore(requires_grad=True)
        with torch.enable_grad():
            ref = run_certifier(cert, net, lb, ub, dtype=torch.float64, widen=False, params=full, graph=False)
        pairs = [k for k in shared.raw if k[3] == param_store.PAIR]
        assert pairs, name
        for key in pairs:
            t = shared.raw[key]
            assert t.shape[1] == 1 or t.stride(1) == 0, (name, key)
            torch.testing.assert_close(t, full.raw[key].detach(), rtol=0, atol=0)
        writable = ParamStore()
        run_certifier(cert, net, lb, ub, dtype=torch.float64, widen=False, params=writable, graph=False)
        for t in writable.raw.values():
            t.copy_(t + 0.0)  # a caller may write into them (test_row_subset scrambles them)
        torch.testing.assert_close(res.lower, ref.lower.detach(), rtol=0, atol=0, msg=lambda s: f"{name} lower: {s}")
        torch.testing.assert_close(res.upper, ref.upper.detach(), rtol=0, atol=0, msg=lambda s: f"{name} upper: {s}")
