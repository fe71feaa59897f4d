"""The parts of branch and bound, each against a definition: the domain values are
:func:`boxes_verified`'s predicate, the pool pops best-first then depth-first within its memory bound,
children cover their parent, the LP refutes only with a checked dual bound and its points are real
counterexamples, and the check's ``inside`` leaves points outside a subdomain alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cfmlir.bab import branching
from cfmlir.bab.bounding import subdomain_membership
from cfmlir.bab.domains import DomainPool, Domains, PoolFull, hi_key, lo_key, split_key
from cfmlir.bab.exact import decide
from cfmlir.bab.objective import Objective
from cfmlir.bab.structure import structure_of
from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty, boxes_verified
from cftest.bab_cases import root_domain
from cftest.milp import min_violation
from cftest.nets import mlp


def _region(lb, ub, disjuncts):
    return InputRegion(np.asarray(lb, float), np.asarray(ub, float),
                       [(np.asarray(A, float), np.asarray(b, float)) for A, b in disjuncts])


def test_values_are_the_verified_predicate():
    reg = _region([0, 0], [1, 1], [([[1, 0, 0], [0, 1, 0]], [0.5, 0.0]), ([[0, 0, 1]], [2.0]), ([[-1, 1, 0]], [0.0])])
    obj = Objective(reg)
    g = torch.Generator().manual_seed(0)
    rows = torch.randn(200, 4, generator=g, dtype=torch.float64) * 2
    A, b, groups = reg.stacked()
    want = torch.from_numpy(boxes_verified(rows.numpy(), b, groups))
    assert torch.equal(obj.value(rows) > 0, want) and torch.equal(obj.verified(rows), want)
    assert 0 < int(want.sum()) < 200
    # the target row is a row of the worst disjunct
    worst = obj.disjunct_values(rows).argmin(1)
    t = obj.target_rows(rows)
    assert all(obj.member[w, r] for w, r in zip(worst.tolist(), t.tolist()))
    # a concrete output's violation: <= 0 exactly when it satisfies a disjunct
    y = torch.randn(300, 3, generator=g, dtype=torch.float64)
    from cfruntime.properties.vnnlib import output_in_disjunct

    got = obj.violation(y) <= 0
    assert [bool(v) for v in got] == [output_in_disjunct(reg, yy.numpy()) is not None for yy in y]


def _domains(values, depths, width=3):
    p = len(values)
    return Domains({"value": torch.tensor(values, dtype=torch.float64), "depth": torch.tensor(depths, dtype=torch.int32),
                    "rows": torch.zeros(p, 2, dtype=torch.float64), "lo1": torch.zeros(p, width, dtype=torch.float64)})


def test_pool_pops_the_worst_first_and_the_deepest_when_full():
    pool = DomainPool(max_bytes=10 ** 9)
    pool.push(_domains([0.5, -2.0, -1.0, 3.0], [1, 2, 3, 4]))
    pool.push(_domains([-3.0], [1]))
    assert len(pool) == 5 and pool.min_value() == -3.0
    assert pool.pop(2)["value"].tolist() == [-3.0, -2.0]
    assert pool.pop(10)["value"].tolist() == [-1.0, 0.5, 3.0] and len(pool) == 0
    per = DomainPool.row_bytes(_domains([0.0], [0]))
    small = DomainPool(max_bytes=per * 2000)
    small.push(_domains([float(v) for v in range(1500)], [v % 7 for v in range(1500)]))
    assert small.depth_first  # past half the bound: the deepest domains first
    assert set(small.pop(5)["depth"].tolist()) == {6}
    with pytest.raises(PoolFull):
        small.push(_domains([0.0] * 600, [0] * 600))


def test_the_pool_reserves_its_bound_once_and_doubles_where_it_cannot(monkeypatch):
    from cfmlir.bab import domains as dom

    per = DomainPool.row_bytes(_domains([0.0], [0]))
    pool = DomainPool(max_bytes=per * 5000)
    pool.push(_domains([0.0] * 10, [0] * 10))
    assert pool.capacity == 5000  # the whole bound at the first push
    stored = pool.store["value"]
    pool.push(_domains([1.0] * 3000, [1] * 3000))
    assert pool.store["value"] is stored and len(pool) == 3010  # never copied to grow
    real_empty = torch.empty

    def no_big(size, *a, **k):  # a system that refuses the reservation
        if size[0] > 1024:
            raise RuntimeError("cannot allocate")
        return real_empty(size, *a, **k)

    monkeypatch.setattr(dom.torch, "empty", no_big)
    small = DomainPool(max_bytes=per * 5000)
    small.push(_domains([0.0] * 10, [0] * 10))
    assert small.capacity == 1024  # doubling from the initial capacity
    monkeypatch.setattr(dom.torch, "empty", real_empty)
    small.push(_domains([float(v) for v in range(1500)], [0] * 1500))
    assert small.capacity == 2048 and len(small) == 1510
    assert sorted(small.pop(3)["value"].tolist()) == [0.0, 0.0, 0.0]


def test_the_pool_stores_layer_bounds_in_float32_rounded_outward():
    g = torch.Generator().manual_seed(5)
    lo = torch.randn(40, 7, generator=g, dtype=torch.float64)
    hi = lo + torch.rand(40, 7, generator=g, dtype=torch.float64)
    lo[:, 0], hi[:, 1] = 0.0, 0.0  # split neurons: a bound 0 stays 0
    d = Domains({"value": torch.randn(40, generator=g, dtype=torch.float64), "depth": torch.arange(40, dtype=torch.int32),
                 "rows": torch.randn(40, 2, generator=g, dtype=torch.float64), lo_key(3): lo, hi_key(3): hi,
                 split_key(3): torch.zeros(40, 7, dtype=torch.int8)})
    # float64 bounds stored in 4 bytes each, every other field as pushed
    assert DomainPool.row_bytes(d) == 8 + 4 + 16 + 2 * 7 * 4 + 7
    pool = DomainPool(max_bytes=10 ** 8)
    pool.push(d)
    back = pool.pop(40)
    order = torch.argsort(back["depth"])
    back = back.select(order)
    assert all(back[k].dtype == d[k].dtype for k in d)
    for k in ("value", "depth", "rows", split_key(3)):
        assert torch.equal(back[k], d[k])
    step = torch.finfo(torch.float32).eps * torch.maximum(lo.abs(), hi.abs()) + torch.finfo(torch.float32).tiny
    assert (back[lo_key(3)] <= lo).all() and (back[hi_key(3)] >= hi).all()  # still bounds of the domain
    assert (lo - back[lo_key(3)] <= step).all() and (back[hi_key(3)] - hi <= step).all()  # at most a step out
    assert (back[lo_key(3)][:, 0] == 0).all() and (back[hi_key(3)][:, 1] == 0).all()


def test_the_pools_default_bound_is_a_share_of_the_available_memory(monkeypatch):
    from cfmlir.bab import options

    pages = {"SC_AVPHYS_PAGES": 5 * 2 ** 20, "SC_PAGE_SIZE": 4096}  # 20 GiB available
    monkeypatch.setattr(options.os, "sysconf", lambda name: pages[name])
    assert options.default_memory_bytes() == 5 * 2 ** 30
    pages["SC_AVPHYS_PAGES"] = 2 ** 10  # 4 MiB available: the floor
    assert options.default_memory_bytes() == options.MIN_POOL_BYTES

    def unreadable(name):
        raise ValueError(name)

    monkeypatch.setattr(options.os, "sysconf", unreadable)
    assert options.default_memory_bytes() == options.MIN_POOL_BYTES


def test_searches_that_run_at_once_share_the_pools_memory(monkeypatch):
    """Ray's one instance per CPU: each analysis process inherits the count and its pool takes its share of
    the memory (the searches started together see the same available memory)."""
    from cfmlir.bab import options
    from cfmlir.tools.instances import share_memory_among_cpus

    pages = {"SC_AVPHYS_PAGES": 5 * 2 ** 20, "SC_PAGE_SIZE": 4096}  # 20 GiB available
    monkeypatch.setattr(options.os, "sysconf", lambda name: pages[name])
    monkeypatch.delenv(options.CONCURRENT_SEARCHES_ENV, raising=False)
    assert options.default_memory_bytes() == 5 * 2 ** 30
    monkeypatch.setattr(options.os, "cpu_count", lambda: 4)
    share_memory_among_cpus()
    assert options.os.environ[options.CONCURRENT_SEARCHES_ENV] == "4"
    assert options.default_memory_bytes() == 5 * 2 ** 28  # a quarter of the 5 GiB
    monkeypatch.setenv(options.CONCURRENT_SEARCHES_ENV, "16")  # the user's count is kept ...
    share_memory_among_cpus()
    assert options.os.environ[options.CONCURRENT_SEARCHES_ENV] == "16"
    assert options.default_memory_bytes() == options.MIN_POOL_BYTES  # ... down to the floor
    for bad in ("x", "0", "-3"):
        monkeypatch.setenv(options.CONCURRENT_SEARCHES_ENV, bad)
        assert options.concurrent_searches() == 1


def test_relu_children_cover_the_parent():
    net = mlp([3, 5, 4, 2], seed=1)
    mnet = net.with_margin_layer(torch.eye(2, dtype=torch.float64))
    st = structure_of(mnet)
    assert [(s.relu, s.pre) for s in st.split_layers] == [(2, 1), (4, 3)] and st.carried == (1, 3)
    assert st.piecewise_linear
    d = Domains({"value": torch.zeros(2, dtype=torch.float64), "depth": torch.zeros(2, dtype=torch.int32),
                 "rows": torch.zeros(2, 2, dtype=torch.float64)})
    for s in st.split_layers:
        d[lo_key(s.pre)] = -torch.ones(2, s.size, dtype=torch.float64)
        d[hi_key(s.pre)] = torch.ones(2, s.size, dtype=torch.float64)
        d[split_key(s.pre)] = torch.zeros(2, s.size, dtype=torch.int8)
    kids = branching.neuron_children(st, d, torch.tensor([1, 5 + 2]))  # neuron 1 of layer 1, neuron 2 of layer 3
    assert kids["depth"].tolist() == [1, 1, 1, 1]
    assert float(kids["lo1"][0, 1]) == 0.0 and float(kids["hi1"][0, 1]) == 1.0 and int(kids["split1"][0, 1]) == 1
    assert float(kids["hi1"][2, 1]) == 0.0 and float(kids["lo1"][2, 1]) == -1.0 and int(kids["split1"][2, 1]) == -1
    assert float(kids["lo3"][1, 2]) == 0.0 and float(kids["hi3"][3, 2]) == 0.0
    assert branching.unstable_count(st, kids).tolist() == [8, 8, 8, 8]


def test_input_children_cover_the_box():
    d = Domains({"lb": torch.tensor([[0.0, -1.0], [1.0, 1.0]], dtype=torch.float64),
                 "ub": torch.tensor([[1.0, 1.0], [3.0, 2.0]], dtype=torch.float64),
                 "depth": torch.zeros(2, dtype=torch.int32), "value": torch.zeros(2, dtype=torch.float64)})
    kids = branching.input_children(d, torch.tensor([1, 0]))
    assert kids["lb"].tolist() == [[0.0, -1.0], [1.0, 1.0], [0.0, 0.0], [2.0, 1.0]]
    assert kids["ub"].tolist() == [[1.0, 0.0], [2.0, 2.0], [1.0, 1.0], [3.0, 2.0]]


def test_fsb_keeps_the_candidate_whose_worse_child_is_best():
    p, k = 2, 3
    # blocks (candidate, side, domain): candidate 1's children are (0.5, -0.1) for domain 0, the best worse child
    v = torch.tensor([[[-1.0, 0.2], [2.0, 0.1]], [[0.5, -0.5], [-0.1, 0.0]], [[-2.0, 0.3], [9.0, 0.4]]],
                     dtype=torch.float64).reshape(-1)
    assert branching.pick_best_candidates(v, p, k).tolist() == [1, 2]


def _lp_case(seed, sizes=(3, 6, 5, 2)):
    from cftest.instances_folder import relu_net
    from cfruntime.network import network_from_model

    ws, bs, model = relu_net(list(sizes), seed=seed)
    return ws, bs, network_from_model(model)


@pytest.mark.parametrize("seed", range(6))
def test_lp_refutes_only_what_holds_and_finds_real_counterexamples(seed):
    """On the root domain (interval bounds, every neuron free): the LP's answer against the MILP's exact
    minimum -- refuted only when the minimum is above the threshold, a confirmed point only when it is
    below; a leaf (every neuron's sign fixed to a pattern that occurs) is exact."""
    from cftest.milp import interval_bounds

    ws, bs, net = _lp_case(seed)
    rng = np.random.default_rng(seed)
    lb, ub = -np.ones(3), np.ones(3)
    A = rng.standard_normal((1, 2))
    m, x_min = min_violation(ws, bs, lb, ub, A, np.zeros(1))
    pre = interval_bounds(ws, bs, lb, ub)
    bounds = {1: pre[0], 3: pre[1]}
    for thr, truth in ((m - 5.0, "refuted"), (m + 0.5, "sat")):
        reg = _region(lb, ub, [(A, [thr])])
        prop = VnnlibProperty(3, 2, [reg])
        out = decide(net, Objective(reg), prop, 0, (lb, ub), bounds, [0])
        assert out.decided in (truth, "open"), (thr, m, out.decided)
        if out.decided == "sat":
            assert float(A[0] @ net.forward(torch.from_numpy(out.counterexample.x).reshape(1, -1))[0].numpy()) <= thr
    # a leaf: the pattern of x_min, with bounds that fix it; exact both ways
    z1 = ws[0].astype(float) @ x_min + bs[0]
    z3 = ws[1].astype(float) @ np.maximum(z1, 0) + bs[1]
    leaf = {k: (np.where(z >= 0, 0.0, pre_k[0]), np.where(z >= 0, pre_k[1], 0.0))
            for k, z, pre_k in ((1, z1, pre[0]), (3, z3, pre[1]))}
    for thr, truth in ((m + 1e-3, "sat"), (m - 1e-3, None)):
        reg = _region(lb, ub, [(A, [thr])])
        out = decide(net, Objective(reg), VnnlibProperty(3, 2, [reg]), 0, (lb, ub), leaf, [0])
        if truth is not None:
            assert out.decided == "sat"
        else:  # below the minimum: no point of any pattern, so none of this one's either
            assert out.decided == "refuted"


def test_membership_keeps_points_of_the_subdomain():
    net = mlp([2, 3, 2], seed=0)
    st = structure_of(net.with_margin_layer(torch.eye(2, dtype=torch.float64)))
    d = Domains({"value": torch.zeros(2, dtype=torch.float64), split_key(1): torch.tensor([[1, 0, 0], [0, -1, 0]],
                                                                                          dtype=torch.int8)})
    inside = subdomain_membership(d, st)
    vals = {1: torch.tensor([[0.5, -1.0, 3.0], [-0.5, 2.0, 0.0], [0.0, -1.0, 0.0], [1.0, 0.5, 0.0]], dtype=torch.float64)}
    rows = torch.tensor([0, 0, 1, 1])
    assert inside(vals, rows).tolist() == [True, False, True, False]
    assert subdomain_membership(Domains({"value": torch.zeros(1), split_key(1): torch.zeros(1, 3, dtype=torch.int8)}),
                                st) is None


@pytest.mark.parametrize("seed", range(3))
def test_refine_replaces_up_to_the_split_layer_and_tightens_after(shipped, seed):
    """Refining ReLU children split on layer 3 (``bound(kids, "tighten", replace_upto=3)``): the carried
    layers 1 and 3 come back exactly as the children gave them (replaced: nothing before or at the split
    layer can change), layer 5 is recomputed and intersected (never looser than the child's, tighter
    somewhere), and every bound, and every margin row, holds on the concrete points of each child's
    subdomain."""
    from cfmlir.bab.bounding import CertifierBounding

    net = mlp([3, 8, 8, 8, 2], seed=seed)
    mnet = net.with_margin_layer(torch.tensor([[1.0, -1.0]], dtype=torch.float64))
    st = structure_of(mnet)
    assert st.carried == (1, 3, 5)
    lb, ub = -torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    bounding = CertifierBounding(shipped.compiled("deeppoly"), mnet, st, (lb, ub))
    root, _first = root_domain(bounding, st, 1)
    g = torch.Generator().manual_seed(seed)
    x = lb + (ub - lb) * torch.rand(20000, 3, generator=g, dtype=torch.float64)
    vals = mnet.forward_all(x)
    # a neuron of layer 3 that takes both signs on the box (so both children hold sampled points)
    both = (vals[3] > 0).any(0) & (vals[3] < 0).any(0)
    assert bool(both.any())  # the test means something
    n = int(torch.nonzero(both)[0])
    kids = branching.neuron_children(st, root, torch.tensor([8 + n]))  # layer 3 follows layer 1's 8 neurons
    out = bounding.bound(kids, "tighten", replace_upto=3)
    for k in (1, 3):
        assert torch.equal(out.carried[k][0], kids[lo_key(k)]) and torch.equal(out.carried[k][1], kids[hi_key(k)])
    lo5, hi5 = out.carried[5]
    assert bool((lo5 >= kids["lo5"]).all() and (hi5 <= kids["hi5"]).all())
    assert bool(((lo5 > kids["lo5"]) | (hi5 < kids["hi5"])).any())  # the split tightened layer 5 somewhere
    # soundness on concrete points of each child's subdomain (its split's sign holds)
    for r, sign in enumerate((1, -1)):
        inside = vals[3][:, n] * sign >= 0
        assert int(inside.sum()) > 0
        for k in (1, 3, 5):
            v = vals[k][inside]
            assert bool((v >= out.carried[k][0][r] - 1e-9).all() and (v <= out.carried[k][1][r] + 1e-9).all())
        assert bool((vals[-1][inside] >= out.rows[r] - 1e-9).all())


def test_a_batch_whose_layers_are_read_never_replays_a_cuda_graph(monkeypatch, shipped):
    """A replayed CUDA graph keeps the last layer's bounds only (``EngineResult.store`` is None), so a
    batch whose layers are carried or checked asks the engine for an eager run.  The float32 root batch is
    the case that broke on a GPU: widened, it has no bound overrides, and overrides were what turned the
    graph off (``cf-run --device cuda --dtype float32 --bab``: 'NoneType' object has no attribute 'get')."""
    import dataclasses

    from cfmlir.bab.bounding import CertifierBounding
    from cfmlir.engine_io import store_layer_bounds
    from cfruntime.flow import engine

    seen, real = [], engine.run_certifier

    def recording(*args, **kw):
        seen.append(kw.get("graph"))
        return real(*args, **kw)

    monkeypatch.setattr(engine, "run_certifier", recording)
    net = mlp([3, 6, 6, 2], seed=1)
    mnet = net.with_margin_layer(torch.tensor([[1.0, -1.0]], dtype=torch.float64))
    st = structure_of(mnet)
    lb, ub = -torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    bounding = CertifierBounding(shipped.compiled("deeppoly"), mnet, st, (lb, ub), dtype=torch.float32)
    assert bounding.widened
    root, _first = root_domain(bounding, st, 1)
    assert seen and all(g is False for g in seen)
    assert all(k in root for k in (lo_key(1), hi_key(1)))
    # and a run that kept no store says so in one line instead of failing on None
    res = real(shipped.compiled("deeppoly"), mnet, lb.reshape(1, -1), ub.reshape(1, -1))
    with pytest.raises(ValueError, match="graph=False"):
        store_layer_bounds(shipped.compiled("deeppoly"), mnet, dataclasses.replace(res, store=None), res.lower, res.upper)
