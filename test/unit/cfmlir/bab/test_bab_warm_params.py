"""A certifier's own parameters carried by subdomains (:mod:`cfmlir.bab.warm_params`): the root's optimised
values bound its children from the start, any values the domains carry give sound bounds, the multipliers'
optimisation moves them and children inherit them; the split multipliers stay on after a root optimisation;
FSB draws candidates from the intercept score too (:func:`cfmlir.bab.branching.candidate_scores`)."""

from __future__ import annotations

import time

import pytest
import torch

from cfmlir.bab import BabOptions, branching
from cfmlir.bab.domains import hi_key, lo_key, split_key
from cfmlir.bab.domains import Domains
from cfmlir.bab.driver import run_bab
from cfmlir.bab.lagrangian import beta_key
from cfmlir.bab.structure import structure_of
from cfmlir.optimize import OptimizeOptions
from cfruntime.flow.param_store import PAIR, ParamStore
from cftest.bab_cases import case_bounding, empty_root, inside_subdomain, random_case, random_subdomains

PER_CASE_S = 120


def _optimised_root(cert, seed: int, iterations: int = 15):
    """``(case, mnet, structure, bounding, root)``: the root of a random case bounded with its parameters
    optimised, its carried bounds, signs, zero multipliers and optimised parameters as fields."""
    case = random_case(seed, margin=0.10, max_depth=3, max_width=12, rows=2)
    obj, mnet, st, bounding = case_bounding(cert, case)
    root = empty_root(obj.rows)
    opt = bounding.bound_optimized(root, OptimizeOptions(iterations=iterations),
                                   lambda rows: torch.zeros(rows.shape[0], dtype=torch.bool))
    for k, (lo, hi) in opt.carried.items():
        root[lo_key(k)], root[hi_key(k)] = lo, hi
    for s in st.split_layers:
        root[split_key(s.pre)] = torch.zeros(1, s.size, dtype=torch.int8)
    root.update(opt.alphas or {})
    root["rows"] = opt.rows
    return case, obj, mnet, st, bounding, root


def _fields(root) -> list[str]:
    return [name for name in root if name.startswith("alpha:")]


def test_pair_start_and_pair_columns_round_trip():
    """A store's pair tensor starts from ``pair_start``'s values, and :meth:`pair_columns` reads them back on
    the asked columns, also where the store keeps a sparse subset (a held column reads its domain's lower end)."""
    lo = torch.tensor([[0.0, 0.0, 1.0, 0.2]], dtype=torch.float64)
    hi = torch.tensor([[1.0, 0.0, 1.0, 0.9]], dtype=torch.float64)
    init = torch.zeros(1, 4, dtype=torch.float64)
    warm = torch.arange(12, dtype=torch.float64).reshape(1, 3, 4) / 20
    store = ParamStore(pair_start=lambda key, start: warm if key[1] == 9 else None)
    key = ("a", 9, 2, PAIR)
    assert torch.equal(store.get(key, (1, 3, 4), lo, hi, init), warm)
    assert torch.equal(store.get(("a", 8, 2, PAIR), (1, 3, 4), lo, hi, init), torch.zeros(1, 3, 4, dtype=torch.float64))
    store.domain("a", 2, lambda: (lo, hi, init))
    cols = torch.tensor([0, 3])
    assert torch.equal(store.pair_columns(key, cols), warm[..., cols])
    store.columns[key] = torch.tensor([3])  # as a sparse store keeps it: column 3 only
    store.raw[key] = warm[..., [3]].clone()
    got = store.pair_columns(key, cols)
    assert torch.equal(got[..., 1], warm[..., 3]) and bool((got[..., 0] == lo[0, 0]).all())


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_the_root_parameters_bound_a_child_from_the_start(shipped, seed):
    """The root's optimised parameters, as fields, give a domain bounded again with the parent's intermediate
    bounds the optimised rows (not DeepPoly's): equal to the root's within rounding where the optimisation
    kept its last run, never above them, and above the run without the fields somewhere (over the seeds:
    the fields are read)."""
    cert = shipped.compiled("alpha_deeppoly")
    _case, _obj, _mnet, _st, bounding, root = _optimised_root(cert, seed)
    fields = _fields(root)
    assert fields and all(root[f].dtype == torch.float32 and root[f].shape[:2] == (1, root["rows"].shape[1])
                          for f in fields)
    warm = bounding.bound(root, "replace").rows
    cold = bounding.bound(Domains({k: v for k, v in root.items() if k not in fields}), "replace").rows
    assert bool((warm <= root["rows"] + 1e-6 * (1 + root["rows"].abs())).all())
    assert float(warm.sum()) >= float(cold.sum()) - 1e-9
    assert float(warm.sum()) > float(cold.sum()) + 1e-6 or bool(torch.allclose(cold, root["rows"]))


@pytest.mark.parametrize("seed", [1, 3])
def test_any_carried_parameters_give_sound_bounds(shipped, seed):
    """Random subdomains with random multipliers and random parameter fields (inside and far outside their
    domains): every row bound holds on the sampled points of its subdomain, with and without the fields'
    optimisation."""
    g = torch.Generator().manual_seed(seed)
    cert = shipped.compiled("alpha_deeppoly")
    case, obj, mnet, st, bounding, root = _optimised_root(cert, seed)
    lb, ub = bounding.box
    x = lb + (ub - lb) * torch.rand(20000, lb.shape[0], generator=g, dtype=torch.float64)
    vals = mnet.forward_all(x)
    bounding.beta_layers = tuple(s.pre for s in st.split_layers)
    for s in st.split_layers:
        root[beta_key(s.pre)] = torch.zeros(1, obj.rows, s.size, dtype=torch.float32)
    d = random_subdomains(st, root, vals, g, 12, 3)
    for f in _fields(d):
        d[f] = (3 * torch.rand(d[f].shape, generator=g) - 1).to(torch.float32)  # in [-1, 2]: slopes in [0, 1]
    for s in st.split_layers:
        d[beta_key(s.pre)] = (5 * torch.rand(len(d), obj.rows, s.size, generator=g)).to(torch.float32)
    rows = bounding.bound(d, "replace").rows
    opt_rows, _betas, alphas = bounding.optimize_beta(d, obj, 6, 0.05)
    assert set(alphas) <= set(_fields(d)) and alphas
    for r in range(len(d)):
        inside = inside_subdomain(st, d, vals, r)
        assert int(inside.sum()) > 0
        for got in (rows[r], opt_rows[r]):
            assert bool((vals[-1][inside] >= got - 1e-9 * (1 + got.abs())).all()), r


def test_the_multipliers_optimisation_moves_the_parameters_and_children_inherit_them(shipped):
    """``optimize_beta`` starts each domain's parameters from its fields and returns its best iteration's;
    they differ from the start somewhere, and both children of a split copy their parent's."""
    cert = shipped.compiled("alpha_deeppoly")
    g = torch.Generator().manual_seed(0)
    case, obj, mnet, st, bounding, root = _optimised_root(cert, 3, iterations=3)
    lb, ub = bounding.box
    vals = mnet.forward_all(lb + (ub - lb) * torch.rand(4000, lb.shape[0], generator=g, dtype=torch.float64))
    bounding.beta_layers = tuple(s.pre for s in st.split_layers)
    for s in st.split_layers:
        root[beta_key(s.pre)] = torch.zeros(1, obj.rows, s.size, dtype=torch.float32)
    d = random_subdomains(st, root, vals, g, 8, 2)
    _rows, _betas, alphas = bounding.optimize_beta(d, obj, 10, 0.05, alpha_lr=0.1)
    assert any(not torch.equal(alphas[f], d[f]) for f in alphas)
    for f, v in alphas.items():
        assert v.shape == d[f].shape and v.dtype == d[f].dtype
        d[f] = v
    s0 = st.split_layers[0]
    unstable = torch.nonzero((d[lo_key(s0.pre)][0] < 0) & (d[hi_key(s0.pre)][0] > 0)).reshape(-1)
    kids = branching.neuron_children(st, d.select(slice(0, 1)), unstable[:1])
    for f in alphas:
        assert torch.equal(kids[f], d[f][:1].repeat(2, 1, 1))


@pytest.mark.parametrize("seed", [1, 5])
def test_the_multipliers_stay_on_after_a_root_optimisation(shipped, seed):
    """With ``optimize``, the root's rows are an optimisation's best; whether the certifier carries the
    Lagrangian term is checked against a run with the same parameters, so the multipliers are on (they were
    off when the check compared the optimised rows with a run at the parameters' initial values), and the
    search decides as the MILP does."""
    cert = shipped.compiled("alpha_deeppoly")
    case = random_case(seed, margin=0.05, max_depth=3, max_width=16)
    out = run_bab(cert, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="relu", optimize=OptimizeOptions(iterations=10), lp_unstable=0))
    assert out.verdict == case.truth and out.stats["beta"] == "on"


def test_candidate_scores_rank_by_the_intercept_too():
    """The second ranking is the intercept term ``-min(lam, 0) (-l u / (u - l))`` on unstable neurons and
    ``-1`` elsewhere (up to its 1e-12 tie-break); FSB bounds ``2 k`` candidates, ``k`` from each ranking,
    without repeating a neuron."""
    from cftest.nets import mlp

    net = mlp([3, 8, 8, 2], seed=4)
    A = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    mnet = net.with_margin_layer(A)
    st = structure_of(mnet)
    g = torch.Generator().manual_seed(4)
    d = Domains({"rows": torch.zeros(3, 1, dtype=torch.float64), "value": torch.zeros(3, dtype=torch.float64),
                 "depth": torch.zeros(3, dtype=torch.int32)})
    for s in st.split_layers:
        lo = -torch.rand(3, s.size, generator=g, dtype=torch.float64)
        hi = torch.rand(3, s.size, generator=g, dtype=torch.float64) - 0.3
        d[lo_key(s.pre)], d[hi_key(s.pre)] = lo, hi
        d[split_key(s.pre)] = torch.zeros(3, s.size, dtype=torch.int8)
    targets = torch.zeros(3, dtype=torch.int64)
    scores, backup = branching.candidate_scores(mnet, st, d, targets)
    lam = branching.backward_coefficients(mnet, st, d, targets)
    expect = []
    for s in st.split_layers:
        l, u = d[lo_key(s.pre)], d[hi_key(s.pre)]
        unstable = (l < 0) & (u > 0)
        value = -lam[s.relu].clamp(max=0) * (-l * u / (u - l))
        expect.append(torch.where(unstable, value, torch.full_like(value, -1.0)))
    expect = torch.cat(expect, 1)
    assert torch.allclose(backup, expect, atol=1e-9) and torch.equal(scores >= 0, backup >= 0)
    assert torch.equal(branching.neuron_scores(mnet, st, d, targets), scores)


def test_fsb_bounds_both_rankings_candidates(shipped, monkeypatch):
    """One round of FSB with ``candidates=k`` and ``intercept_candidates=j`` splits each domain on ``k + j``
    distinct neurons: the BaBSR score's best ``k`` and the intercept score's best ``j`` among the rest."""
    from cfmlir.bab import driver

    seen = []
    real = branching.neuron_children

    def spy(structure, domains, choice):
        seen.append(choice.clone())
        return real(structure, domains, choice)

    monkeypatch.setattr(driver.branching, "neuron_children", spy)
    case = random_case(3, margin=0.05, max_depth=3, max_width=16)
    for k, j in ((2, 1), (2, 2), (3, 0)):
        seen.clear()
        run_bab(shipped.compiled("deeppoly"), case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                options=BabOptions(branching="relu", candidates=k, intercept_candidates=j, max_domains=3,
                                   lp_unstable=0, beta=False))
        first = torch.stack(seen[:k + j], 1)  # [P, k + j]: the first round's candidates per domain
        assert all(len(set(row.tolist())) == k + j for row in first)
        scores, backup = branching.candidate_scores(*_first_round(shipped, case), torch.zeros(1, dtype=torch.int64))
        assert set(first[0, :k].tolist()) == set(scores[0].topk(k).indices.tolist())
        assert set(first[0, k:].tolist()) == set(backup[0].scatter(0, scores[0].topk(k).indices, -1.0).topk(j).indices.tolist())


def _first_round(shipped, case):
    """``(mnet, structure, root)`` of the case's search as the driver's first round sees it (DeepPoly)."""
    from cftest.bab_cases import root_domain

    obj, mnet, st, bounding = case_bounding(shipped.compiled("deeppoly"), case)
    root, _first = root_domain(bounding, st, obj.rows)
    return mnet, st, root


def test_fsb_ranks_candidates_by_the_sum_of_their_children():
    """Children keep the better of their own and their parent's rows, so candidates whose worse child gains
    nothing sit at the parent's value: by the worse child alone a gain of 1e-5 there beats a gain of 0.15 on
    the better child; by the sum (what neuron splits use) the latter wins.  ``-inf`` (a stable candidate)
    and NaN never win."""
    parent = -0.2381
    # k = 3 candidates, p = 1 domain: [k blocks of (child 1, child 2)]
    values = torch.tensor([parent, parent + 0.15, parent + 1e-5, parent + 1e-5, -torch.inf, 5.0], dtype=torch.float64)
    assert int(branching.pick_best_candidates(values, 1, 3, "worse")) == 1
    assert int(branching.pick_best_candidates(values, 1, 3, "sum")) == 0
    values = torch.tensor([float("nan"), 1.0, -1.0, -0.5], dtype=torch.float64)
    assert int(branching.pick_best_candidates(values, 1, 2, "sum")) == 1
    assert branching.FSB_REDUCE == "sum"
