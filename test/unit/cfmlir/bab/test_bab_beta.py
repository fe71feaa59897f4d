"""Split constraints in the bound (:mod:`cfmlir.bab.lagrangian`, beta-CROWN's Lagrangian): sound at any
multipliers ``beta >= 0`` on concrete points of each subdomain, equal to the plain bound at ``beta = 0``,
optimised per child from its parent's (warm start), an infeasible subdomain pruned, and branch and bound
with them deciding as the exact MILP with fewer subdomains than without (issue 26, point 3)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from cfmlir.bab import BabOptions, branching
from cfmlir.bab.bounding import CertifierBounding
from cfmlir.bab.domains import hi_key, lo_key, split_key
from cfmlir.bab.driver import run_bab
from cfmlir.bab.lagrangian import beta_key, lagrangian_network, split_weights
from cfmlir.bab.objective import Objective
from cfmlir.bab.structure import structure_of
from cftest.bab_cases import inside_subdomain, random_case, random_subdomains, root_domain
from cftest.nets import mlp

PER_CASE_S = 120


def _root(bounding, st, rows: int):
    root, first = root_domain(bounding, st, rows, beta=True)
    root["rows"] = first.rows
    return root


@pytest.mark.parametrize("spec", ["deeppoly", "skippoly", "deepz", "alpha_deeppoly"])
@pytest.mark.parametrize("seed", range(3))
def test_bounds_hold_at_any_multipliers(shipped, spec, seed):
    """Random subdomains (up to 6 splits over 3 hidden layers) and random multipliers from 0 to 1e3: every
    row bound of the Lagrangian network holds on the sampled points of its subdomain; at ``beta = 0`` it is
    the plain bound.  The optimised rows hold too (with alpha_deeppoly: its slopes optimised with beta)."""
    g = torch.Generator().manual_seed(seed)
    net = mlp([3, 10, 10, 10, 2], seed=seed)
    A = torch.tensor([[1.0, -1.0], [-1.0, 1.0]], dtype=torch.float64)
    mnet = net.with_margin_layer(A)
    st = structure_of(mnet)
    lb, ub = -torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    bounding = CertifierBounding(shipped.compiled(spec), mnet, st, (lb, ub))
    root = _root(bounding, st, 2)
    x = lb + (ub - lb) * torch.rand(40000, 3, generator=g, dtype=torch.float64)
    vals = mnet.forward_all(x)
    d = random_subdomains(st, root, vals, g, 24, 1 + seed * 2)
    plain = bounding.bound(d, "replace").rows
    bounding.beta_layers = tuple(s.pre for s in st.split_layers)
    assert torch.allclose(bounding.bound(d, "replace").rows, plain, rtol=1e-12, atol=1e-12)  # beta = 0
    for scale in (0.1, 1.0, 10.0, 1e3):
        for s in st.split_layers:  # nonzero on every neuron: only the split ones may count
            d[beta_key(s.pre)] = (scale * torch.rand(24, 2, s.size, generator=g)).to(torch.float32)
        rows = bounding.bound(d, "replace").rows
        for r in range(24):
            inside = inside_subdomain(st, d, vals, r)
            assert int(inside.sum()) > 0
            assert bool((vals[-1][inside] >= rows[r] - 1e-9 * (1 + rows[r].abs())).all()), (scale, r)
    # the optimised ones too (steps in float64, then in float32 with a float64 final run), and with float64
    # steps they are never worse than the multipliers they start from
    start = bounding.bound(d, "replace").rows
    for step_dtype in (None, torch.float32):
        opt_rows, betas, _ = bounding.optimize_beta(d, Objective(_region(A)), 10, 0.05, step_dtype=step_dtype)
        assert opt_rows.dtype == torch.float64
        if step_dtype is None:
            assert bool((opt_rows >= start - 1e-12).all())
        for r in range(24):
            inside = inside_subdomain(st, d, vals, r)
            assert bool((vals[-1][inside] >= opt_rows[r] - 1e-9 * (1 + opt_rows[r].abs())).all()), (step_dtype, r)
        for s in st.split_layers:  # projected: >= 0, and 0 where nothing is split
            b = betas[s.pre]
            assert bool((b >= 0).all()) and bool((b[(d[split_key(s.pre)] == 0).unsqueeze(1).expand_as(b)] == 0).all())


def _region(A, b=None):
    from cfruntime.properties.vnnlib import InputRegion

    b = torch.full((A.shape[0],), 10.0, dtype=torch.float64) if b is None else b
    # one disjunct per row: every row is a counterexample condition of its own
    return InputRegion(-torch.ones(3).numpy(), torch.ones(3).numpy(),
                       [(A[i:i + 1].numpy(), b[i:i + 1].numpy()) for i in range(A.shape[0])])


def _split_children(shipped, spec: str):
    """16 subdomains with 4 random splits each of a ``[3, 12, 12, 2]`` net's one-row margin network, bounded
    by ``spec`` with the multipliers on: ``(A, structure, bounding, sampled values, domains)``."""
    g = torch.Generator().manual_seed(7)
    net = mlp([3, 12, 12, 2], seed=7)
    A = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    mnet = net.with_margin_layer(A)
    st = structure_of(mnet)
    lb, ub = -torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    bounding = CertifierBounding(shipped.compiled(spec), mnet, st, (lb, ub))
    bounding.beta_layers = tuple(s.pre for s in st.split_layers)
    root = _root(bounding, st, 1)
    vals = mnet.forward_all(lb + (ub - lb) * torch.rand(5000, 3, generator=g, dtype=torch.float64))
    return A, st, bounding, vals, random_subdomains(st, root, vals, g, 16, 4)


def test_optimisation_tightens_and_children_inherit_it(shipped):
    """The optimised multipliers raise the open rows of split children above the plain bound somewhere;
    children of a child start from its multipliers (a new split's at 0)."""
    A, st, bounding, vals, d = _split_children(shipped, "deeppoly")
    plain = bounding.bound(d, "replace").rows
    rows, betas, _ = bounding.optimize_beta(d, Objective(_region(A, torch.tensor([1e3], dtype=torch.float64))), 20, 0.05)
    assert bool((rows >= plain - 1e-12).all()) and bool((rows > plain + 1e-6).any())
    for k, b in betas.items():
        d[beta_key(k)] = b
    unstable = torch.nonzero((d[lo_key(1)][0] < 0) & (d[hi_key(1)][0] > 0) & (d[split_key(1)][0] == 0)).reshape(-1)
    kids = branching.neuron_children(st, d.select(slice(0, 1)), unstable[:1])
    for k in bounding.beta_layers:
        assert torch.equal(kids[beta_key(k)], d[beta_key(k)][:1].repeat(2, 1, 1))
    assert bool((kids[beta_key(1)][:, :, int(unstable[0])] == 0).all())


def _infeasible_case(shipped):
    """Neurons ``z1 = x`` and ``z2 = x + 1`` on ``x in [-2, 2]``, split ``z1 >= 0``, ``z2 <= 0``: a subdomain
    with no point, though neither bound is empty (``z1 in [0, 2]``, ``z2 in [-1, 0]``); the property asks
    ``z1 - z2 + ... > 3``.  ``(bounding, domains, objective)``, the multipliers not yet on."""
    from cfruntime.network.graph import Layer, Network
    from cfruntime.properties.vnnlib import InputRegion

    w1 = torch.tensor([[1.0], [1.0]], dtype=torch.float64)
    b1 = torch.tensor([0.0, 1.0], dtype=torch.float64)
    w2 = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    net = Network([Layer(0, "input", (1,)),
                   Layer(1, "affine", (2,), [0], linear_kind="dense", weight=w1, bias=b1),
                   Layer(2, "relu", (2,), [1]),
                   Layer(3, "affine", (1,), [2], linear_kind="dense", weight=w2, bias=torch.zeros(1, dtype=torch.float64))])
    A = torch.tensor([[1.0]], dtype=torch.float64)
    mnet = net.with_margin_layer(A)
    st = structure_of(mnet)
    box = (-2 * torch.ones(1, dtype=torch.float64), 2 * torch.ones(1, dtype=torch.float64))
    bounding = CertifierBounding(shipped.compiled("deeppoly"), mnet, st, box)
    d = _root(bounding, st, 1).repeat(1)
    d[split_key(1)][0] = torch.tensor([1, -1], dtype=torch.int8)
    d[lo_key(1)][0, 0], d[hi_key(1)][0, 1] = 0.0, 0.0
    objective = Objective(InputRegion(box[0].numpy(), box[1].numpy(), [(A.numpy(), torch.tensor([3.0]).numpy())]))
    return bounding, d, objective


def test_an_infeasible_subdomain_is_pruned(shipped):
    """The subdomain of :func:`_infeasible_case`: ``beta1 = beta2 = b`` makes the bound ``f + b``, so the
    optimised rows grow far past the plain ones and the subdomain is verified."""
    bounding, d, objective = _infeasible_case(shipped)
    assert bool((d[lo_key(1)] <= d[hi_key(1)]).all())  # not empty by its bounds
    plain = bounding.bound(d, "replace").rows
    bounding.beta_layers = (1,)
    assert not bool(objective.verified(plain)[0])
    rows, _, _ = bounding.optimize_beta(d, objective, 40, 0.5)
    assert bool(objective.verified(rows)[0]) and float(rows[0, 0]) > float(plain[0, 0]) + 5


def test_lagrangian_network_adds_one_affine_and_one_add_per_split_layer():
    net = mlp([3, 4, 4, 2], seed=0).with_margin_layer(torch.tensor([[1.0, -1.0]], dtype=torch.float64))
    st = structure_of(net)
    w = split_weights({1: torch.ones(5, 1, 4, dtype=torch.float64), 3: 2 * torch.ones(5, 1, 4, dtype=torch.float64)},
                      {1: torch.tensor([[1, -1, 0, 0]] * 5), 3: torch.zeros(5, 4, dtype=torch.int8)})
    assert torch.equal(w[1][0, 0], torch.tensor([-1.0, 1.0, 0.0, 0.0], dtype=torch.float64))
    assert torch.equal(w[3], torch.zeros(5, 1, 4, dtype=torch.float64))
    lnet = lagrangian_network(net, w)
    assert [(l.kind, l.preds) for l in lnet.layers[len(net.layers):]] == [
        ("affine", [1]), ("add", [st.last, 6]), ("affine", [3]), ("add", [7, 8])]
    x = torch.randn(5, 3, dtype=torch.float64)
    vals = net.forward_all(x)
    # concretely g = f - sum beta s z on each row's own weights
    g = vals[-1][:, 0] - (vals[1][:, 0] - vals[1][:, 1])
    assert torch.allclose(lnet.forward_all(x)[-1][:, 0], g)


def test_a_certifier_that_does_not_carry_the_term_runs_without(shipped):
    """CROWN-IBP's bound of the Lagrangian network at beta = 0 is not its plain bound: BaB says so and runs
    as before (deciding the instance)."""
    case = random_case(1, margin=0.10, max_depth=2, max_width=12)
    out = run_bab(shipped.compiled("crown_ibp"), case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="relu"))
    assert out.verdict == case.truth and out.stats["beta"].startswith("off")


@pytest.mark.parametrize("seed", [1, 5, 9])
def test_beta_decides_with_fewerrandom_subdomains(shipped, seed):
    """Unsat random instances decided without the LP (``lp_unstable=0``: bounds alone) as the MILP says,
    with far fewer subdomains with multipliers than without (which exhausts a 3x larger budget on some)."""
    cert = shipped.compiled("deeppoly")
    case = random_case(seed, margin=0.10, rows=1 + seed % 3 // 2)
    assert case.truth == "unsat"
    common = dict(branching="relu", lp_unstable=0, attack_restarts=0)
    with_beta = run_bab(cert, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                        options=BabOptions(max_domains=1000, **common))
    assert with_beta.verdict == "unsat" and with_beta.stats["beta"] == "on"
    without = run_bab(cert, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                      options=BabOptions(beta=False, max_domains=3 * with_beta.stats["domains"], **common))
    assert without.verdict in ("unsat", "unknown")
    assert without.verdict == "unknown" or without.stats["domains"] > with_beta.stats["domains"]


def test_float32_runs_without_multipliers_and_keeps_its_rows(shipped):
    """A widened float32 run charges rounding errors by the magnitude of every stored bound, so placeholder
    bounds (the rows' unwanted upper ends, the Lagrangian layers') would swamp them (the root's rows were
    -3e32 before): it computes the rows' upper bounds, runs without beta, and decides as float64 does."""
    cert = shipped.compiled("deeppoly")
    case = random_case(3, margin=0.10)
    runs = {dt: run_bab(cert, case.net, case.prop, dtype=dt, deadline=time.monotonic() + PER_CASE_S,
                        options=BabOptions(branching="relu", lp_unstable=0, attack_restarts=0, max_domains=2000))
            for dt in (torch.float32, torch.float64)}
    assert runs[torch.float32].verdict == runs[torch.float64].verdict == case.truth == "unsat"
    assert runs[torch.float32].stats["beta"].startswith("off") and runs[torch.float64].stats["beta"] == "on"
    assert runs[torch.float32].stats["domains"] <= 200


def test_an_unwidened_float32_run_keeps_the_multipliers(shipped):
    """Without widening (``widen=False``) a float32 run has no placeholder problem, and the root's check that
    the certifier carries the term allows for float32 rounding: on an MNIST-sized net (784 inputs, sums long
    enough to round differently with the zero term) a 1e-9 tolerance switched beta off for DeepPoly."""
    from cfruntime.network import network_from_model
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty
    from cftest.instances_folder import relu_net

    sizes = [784, 256, 256, 10]
    _, _, model = relu_net(sizes, seed=0)
    net = network_from_model(model)
    lb, ub = np.full(784, 0.3), np.full(784, 0.36)
    A = (np.eye(10)[1] - np.eye(10)[0]).reshape(1, -1)
    xs = torch.from_numpy(lb + np.random.default_rng(0).uniform(size=(500, 784)) * (ub - lb))
    vals = net.forward(xs) @ torch.from_numpy(A).T
    b = float(vals.min()) - 0.05 * float(vals.max() - vals.min())  # below every sample: the root cannot decide
    prop = VnnlibProperty(784, 10, [InputRegion(lb, ub, [(A, np.array([b]))])])
    out = run_bab(shipped.compiled("deeppoly"), net, prop, dtype=torch.float32, widen=False,
                  deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="relu", attack_restarts=0, max_domains=4))
    assert out.stats["beta"] == "on", out.stats["beta"]


@pytest.mark.parametrize("spec", ["deeppoly", "alpha_deeppoly"])
def test_float32_steps_steer_and_a_float64_run_bounds(shipped, spec, monkeypatch):
    """``step_dtype=float32`` in a float64 search: every gradient step is a raw (unwidened) float32 run, and
    the rows returned are exactly the lower bounds of one final float64 run without gradient -- never a
    float32 iterate's -- which hold on sampled points of each subdomain; the multipliers still climb (the
    rows end above the plain bound somewhere)."""
    A, st, bounding, vals, d = _split_children(shipped, spec)
    plain = bounding.bound(d, "replace").rows
    runs = []
    real = CertifierBounding._beta_run

    def spy(self, betas, domains, a, b, lb, ub, options, extra, grad):
        res, lower = real(self, betas, domains, a, b, lb, ub, options, extra, grad)
        runs.append((options["dtype"], options.get("widen"), grad, lower.detach()))
        return res, lower

    monkeypatch.setattr(CertifierBounding, "_beta_run", spy)
    rows, _, _ = bounding.optimize_beta(d, Objective(_region(A, torch.tensor([1e3], dtype=torch.float64))), 8, 0.05,
                                     step_dtype=torch.float32)
    assert [(dt, w, gr) for dt, w, gr, _ in runs[:-1]] == [(torch.float32, False, True)] * 7
    assert runs[-1][:3] == (torch.float64, None, False)
    assert torch.equal(rows, runs[-1][3])
    assert bool((rows > plain + 1e-6).any())
    for r in range(16):
        inside = inside_subdomain(st, d, vals, r)
        assert bool((vals[-1][inside] >= rows[r] - 1e-9 * (1 + rows[r].abs())).all()), r


def test_float32_steps_stop_at_a_float64_run_once_they_verify(shipped, monkeypatch):
    """When a float32 iterate's rows verify every domain of the batch (the subdomain of
    :func:`_infeasible_case`), the next run is the final float64 one with the same multipliers (the rows
    returned are that run's, and decide the subdomain)."""
    bounding, d, objective = _infeasible_case(shipped)
    bounding.beta_layers = (1,)
    runs = []
    real = CertifierBounding._beta_run

    def spy(self, betas, domains, a, b, lb, ub, options, extra, grad):
        res, lower = real(self, betas, domains, a, b, lb, ub, options, extra, grad)
        runs.append((options["dtype"], {k: v.detach().clone() for k, v in betas.items()}, lower.detach()))
        return res, lower

    monkeypatch.setattr(CertifierBounding, "_beta_run", spy)
    rows, _, _ = bounding.optimize_beta(d, objective, 200, 0.5, step_dtype=torch.float32)
    assert bool(objective.verified(rows)[0])
    assert len(runs) < 200 and runs[-1][0] == torch.float64 and runs[-2][0] == torch.float32
    assert bool(objective.verified(runs[-2][2])[0])  # the float32 iterate that verified ...
    assert torch.equal(runs[-1][1][1], runs[-2][1][1])  # ... gave the final run its multipliers
    assert torch.equal(rows, runs[-1][2])


def _lying_scores(monkeypatch, seen: list):
    """FSB's scoring runs (``score_dtype``) made to claim every candidate verified (rows +1e6): a search that
    kept a score as a bound would answer ``unsat`` on a ``sat`` instance."""
    real = CertifierBounding.bound

    def bound(self, domains, reuse="replace", replace_upto=-1, score_dtype=None):
        out = real(self, domains, reuse, replace_upto, score_dtype)
        if score_dtype is not None:
            seen.append(score_dtype)
            out.rows = out.rows + 1e6
        return out

    monkeypatch.setattr(CertifierBounding, "bound", bound)


@pytest.mark.parametrize("seed", [2, 6, 8, 10])
def test_fsb_scores_in_float32_choose_but_never_bound(shipped, seed, monkeypatch):
    """``BabOptions.fsb_dtype="float32"`` in a float64 search with multipliers: FSB's candidates are scored by
    raw float32 runs, and a chosen child's rows are its parent's until the multipliers' optimisation bounds it
    in float64.  With scores that lie (every candidate "verified") the search still answers as the MILP does
    on sat instances (the attack off, so the answer comes from the search's own leaves); with the scores
    kept as rows (the mutant below) it answers unsat."""
    cert = shipped.compiled("deeppoly")
    case = random_case(seed, margin=0.02)
    assert case.truth == "sat"
    seen: list = []
    _lying_scores(monkeypatch, seen)
    opts = BabOptions(branching="relu", attack_restarts=0, round_attack=0, lp_unstable=0, max_domains=3000)
    out = run_bab(cert, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S, options=opts)
    assert seen and set(seen) == {torch.float32} and out.stats["beta"] == "on"
    assert out.verdict == "sat", (out.verdict, out.stopped)


def test_kept_scores_would_answer_unsat(shipped, monkeypatch):
    """The mutant: a scored candidate's rows kept (as the search's own-precision candidates' are) -- the lying
    scores then verify every child and a ``sat`` instance comes out ``unsat``; this is what the test above
    guards against."""
    from cfmlir.bab import driver

    def kept(self, kids, dtype, parent_rows):
        bounds = self.bounding.bound(kids, "replace", score_dtype=dtype)
        kids["rows"] = torch.maximum(bounds.rows, parent_rows)
        kids["value"] = self.objective.value(kids["rows"])
        kids["empty"] = bounds.empty

    monkeypatch.setattr(driver._RegionSearch, "_score_into", kept)
    _lying_scores(monkeypatch, [])
    case = random_case(0, margin=0.02)
    out = run_bab(shipped.compiled("deeppoly"), case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="relu", attack_restarts=0, round_attack=0, lp_unstable=0,
                                     max_domains=3000))
    assert case.truth == "sat" and out.verdict == "unsat"


def test_fsb_scores_in_the_search_precision_are_kept_as_before(shipped):
    """Without multipliers (``beta=False``) there is no later bound for the chosen children: the candidates are
    bounded in the search's precision and their rows kept, whatever ``fsb_dtype`` says; and both settings
    decide an unsat instance as the MILP does."""
    cert = shipped.compiled("deeppoly")
    case = random_case(3, margin=0.10)
    for fsb in ("float32", None):
        for beta in (True, False):
            out = run_bab(cert, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                          options=BabOptions(branching="relu", lp_unstable=0, attack_restarts=0, beta=beta,
                                             fsb_dtype=fsb, max_domains=3000))
            assert out.verdict == case.truth == "unsat", (fsb, beta, out.stopped)
