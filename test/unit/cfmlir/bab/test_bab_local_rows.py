"""A domain's own rows (:mod:`cfmlir.bab.local_rows`): a domain bounded on its own rows gets the bounds the
full margin network gives those rows -- with and without split multipliers, and after the multipliers'
optimisation -- and ``-inf`` (no bound) on the others; the root's per-disjunct copies carry their disjunct's
rows and row-shaped fields."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from cfmlir.bab import BabOptions
from cfmlir.bab.bounding import CertifierBounding
from cfmlir.bab.driver import _RegionSearch, run_bab
from cfmlir.bab.lagrangian import beta_key
from cfmlir.bab.local_rows import ROWS_OF, localise, own_rows, to_full
from cfmlir.bab.objective import Objective
from cfmlir.bab.structure import structure_of
from cftest.bab_cases import random_case, random_subdomains, root_domain
from cftest.nets import mlp

#: the margin rows of the nets below: three rows over two outputs
A3 = torch.tensor([[1.0, -1.0], [-1.0, 1.0], [2.0, 0.5]], dtype=torch.float64)


def _setup(shipped, spec: str, seed: int, n_domains: int = 12):
    g = torch.Generator().manual_seed(seed)
    net = mlp([3, 10, 10, 2], seed=seed)
    mnet = net.with_margin_layer(A3)
    st = structure_of(mnet)
    lb, ub = -torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    bounding = CertifierBounding(shipped.compiled(spec), mnet, st, (lb, ub))
    root, first = root_domain(bounding, st, 3, beta=True)
    root["rows"] = first.rows
    vals = mnet.forward_all(lb + (ub - lb) * torch.rand(4000, 3, generator=g, dtype=torch.float64))
    d = random_subdomains(st, root, vals, g, n_domains, 3)
    # each domain's own rows: one or two of the three, the second maybe a repeat of the first (padding)
    rows_of = torch.stack([torch.randperm(3, generator=g)[:2] for _ in range(n_domains)])
    rows_of[::3, 1] = rows_of[::3, 0]
    return g, st, bounding, d, rows_of


def _local(d, rows_of, st, bounding):
    loc = d.select(slice(None))
    fields = [beta_key(k) for k in bounding.beta_layers if beta_key(k) in loc]
    localise(loc, rows_of, fields)
    return loc


def _named(rows_of) -> torch.Tensor:
    return torch.zeros(rows_of.shape[0], 3, dtype=torch.bool).scatter(1, rows_of, True)


@pytest.mark.parametrize("spec", ["deeppoly", "skippoly", "alpha_deeppoly"])
@pytest.mark.parametrize("seed", range(2))
def test_own_rows_are_bounded_as_the_full_network_bounds_them(shipped, spec, seed):
    g, st, bounding, d, rows_of = _setup(shipped, spec, seed)
    named = _named(rows_of)
    for with_beta in (False, True):
        if with_beta:
            bounding.beta_layers = tuple(s.pre for s in st.split_layers)
            for s in st.split_layers:
                d[beta_key(s.pre)] = torch.rand(len(d), 3, s.size, generator=g).to(torch.float32)
        full = bounding.bound(d, "replace").rows
        own = bounding.bound(_local(d, rows_of, st, bounding), "replace").rows
        assert own.shape == full.shape
        assert torch.allclose(own[named], full[named], rtol=1e-12, atol=1e-12), with_beta
        assert bool(torch.isneginf(own[~named]).all())
        tight = bounding.bound(_local(d, rows_of, st, bounding), "tighten")  # every layer recomputed
        assert torch.allclose(tight.rows[named], bounding.bound(d, "tighten").rows[named], rtol=1e-12, atol=1e-12)


def test_optimised_multipliers_of_own_rows_are_the_full_rows(shipped):
    """The multipliers' optimisation of a domain answerable for some rows (the others +inf) gives the same rows
    and multipliers whether it bounds every row or only its own: each row's multipliers see only that row."""
    g, st, bounding, d, rows_of = _setup(shipped, "deeppoly", 3)
    bounding.beta_layers = tuple(s.pre for s in st.split_layers)
    named = _named(rows_of)
    d["rows"] = d["rows"].masked_fill(~named, torch.inf)
    region_rows = [(A3[i:i + 1].numpy(), np.full(1, 1e3)) for i in range(3)]
    from cfruntime.properties.vnnlib import InputRegion

    objective = Objective(InputRegion(-np.ones(3), np.ones(3), region_rows))
    full_rows, full_betas, _ = bounding.optimize_beta(d, objective, 8, 0.05)
    own_rows_, own_betas, _ = bounding.optimize_beta(_local(d, rows_of, st, bounding), objective, 8, 0.05)
    assert torch.allclose(own_rows_[named], full_rows[named], rtol=1e-9, atol=1e-9)
    for k, b in own_betas.items():
        assert b.shape[1] == 2
        gathered = full_betas[k].gather(1, rows_of.unsqueeze(2).expand(-1, -1, b.shape[2]))
        single = rows_of[:, 0] == rows_of[:, 1]
        assert torch.allclose(b[~single], gathered[~single], atol=1e-6)


def test_to_full_keeps_the_larger_of_two_names_and_passes_gradients():
    local = torch.tensor([[1.0, 3.0], [2.0, -1.0]], dtype=torch.float64, requires_grad=True)
    rows_of = torch.tensor([[2, 2], [0, 1]])
    full = to_full(local, rows_of, 3)
    assert full[0].tolist() == [-np.inf, -np.inf, 3.0] and full[1].tolist() == [2.0, -1.0, -np.inf]
    full[torch.isfinite(full)].sum().backward()
    assert local.grad.tolist() == [[0.0, 1.0], [1.0, 1.0]]


def test_own_rows_pad_with_the_first_row():
    member = torch.tensor([[True, False, False, False], [False, True, True, True], [False, False, True, False]])
    assert own_rows(member, [0, 1]).tolist() == [[0, 0, 0], [1, 2, 3]]
    assert own_rows(member, [2]).tolist() == [[2]]


def test_the_roots_copies_carry_their_disjuncts_rows(shipped):
    """A property of two disjuncts (one row, two rows): each root copy carries its disjunct's rows, padded,
    and its multipliers for those rows only; the search decides as the MILP says."""
    deeppoly = shipped.compiled("deeppoly")
    case = random_case(5, margin=0.10, rows=2, max_depth=2, max_width=12)
    (A, b), = case.prop.regions[0].disjuncts
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty

    reg = case.prop.regions[0]
    prop = VnnlibProperty(case.prop.num_inputs, case.prop.num_outputs,
                          [InputRegion(reg.lb, reg.ub, [(A[:1], b[:1] - 1.0), (A, b)])])
    search = _RegionSearch(deeppoly, case.net, prop, 0, prop.regions[0], BabOptions(branching="relu", attack_restarts=0),
                           None, torch.Generator(), {"domains": 0, "disjunct_domains": 0, "branching": []}, {}, None)
    root = search._root()
    assert root[ROWS_OF].tolist() == [[0, 0], [1, 2]]
    for k in search.bounding.beta_layers:
        assert root[beta_key(k)].shape[:2] == (2, 2)
    out = run_bab(deeppoly, case.net, prop, deadline=time.monotonic() + 120,
                  options=BabOptions(branching="relu", attack_restarts=0))
    assert out.verdict == case.truth, out.stopped
