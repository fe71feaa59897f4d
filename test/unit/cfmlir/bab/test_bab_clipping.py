"""Clipping input boxes (:mod:`cfmlir.bab.clipping`): the clip of a known linear bound, slabs that cover what is
cut off, the certifier's input coefficients a pointwise lower bound of the rows (DeepPoly), and a search that
stays right when the coefficients lie (every cut-off slab is bounded before a side is clipped)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from cfmlir.bab import BabOptions, clipping
from cfmlir.bab.bounding import CertifierBounding
from cfmlir.bab.domains import hi_key, lo_key
from cfmlir.bab.domains import Domains
from cfmlir.bab.driver import run_bab
from cftest.bab_cases import case_bounding, random_case
from cftest.instances_folder import numpy_forward


@pytest.fixture(scope="module")
def deeppoly(shipped):
    return shipped.compiled("deeppoly")


def test_clip_of_one_row():
    """``L(x) = x0 + 2 x1`` on ``[0, 1]^2``, counterexamples where ``L <= 1.5``: ``x1 <= 0.75``, ``x0``
    unclipped (``x0 <= 1.5`` cuts nothing); a row of negative coefficient clips the lower end."""
    lb, ub = torch.zeros(1, 2, dtype=torch.float64), torch.ones(1, 2, dtype=torch.float64)
    coeff = torch.tensor([[[1.0, 2.0]]], dtype=torch.float64)
    slack = torch.tensor([[0.0 - 1.5]], dtype=torch.float64)  # min L - b
    lo, hi = clipping.clip_boxes(lb, ub, slack, coeff, [[0]])
    assert torch.equal(lo, lb) and hi[0, 0] == 1.0 and 0.75 < float(hi[0, 1]) < 0.75 + 1e-6
    # -x1 <= -0.25 - ... : L = -x1 on [0, 1]^2 (min -1), b = -0.25: counterexamples where x1 >= 0.25
    lo, hi = clipping.clip_boxes(lb, ub, torch.tensor([[-1.0 + 0.25]], dtype=torch.float64),
                                 torch.tensor([[[0.0, -1.0]]], dtype=torch.float64), [[0]])
    assert torch.equal(hi, ub) and 0.25 - 1e-6 < float(lo[0, 1]) < 0.25 and lo[0, 0] == 0.0


def test_clip_takes_the_hull_of_the_disjuncts_and_skips_refuted_ones():
    lb, ub = torch.zeros(1, 1, dtype=torch.float64), torch.ones(1, 1, dtype=torch.float64)
    # rows: x <= 0.2 (L = x, b = 0.2), x >= 0.6 (L = -x, b = -0.6), a refuted one (slack > 0)
    coeff = torch.tensor([[[1.0], [-1.0], [1.0]]], dtype=torch.float64)
    slack = torch.tensor([[-0.2, -1.0 + 0.6, 0.5]], dtype=torch.float64)
    lo, hi = clipping.clip_boxes(lb, ub, slack, coeff, [[0], [1]])
    assert torch.equal(lo, lb) and torch.equal(hi, ub)  # the hull of [0, 0.2] and [0.6, 1]
    lo, hi = clipping.clip_boxes(lb, ub, slack, coeff, [[0], [2]])
    assert float(hi[0, 0]) == pytest.approx(0.2, abs=1e-6) and lo[0, 0] == 0.0  # the second disjunct refuted
    lo, hi = clipping.clip_boxes(lb, ub, slack, coeff, [[0, 1]])  # one disjunct: x <= 0.2 and x >= 0.6
    assert torch.equal(lo, lb) and torch.equal(hi, ub)  # refuted (empty): left to the bound, which verifies it


def test_slabs_and_the_clipped_box_cover_the_box():
    g = torch.Generator().manual_seed(0)
    lb = torch.rand(20, 4, generator=g, dtype=torch.float64)
    ub = lb + torch.rand(20, 4, generator=g, dtype=torch.float64)
    new_lb = torch.where(torch.rand(20, 4, generator=g) < 0.5, lb + 0.3 * (ub - lb), lb)
    new_ub = torch.where(torch.rand(20, 4, generator=g) < 0.5, ub - 0.3 * (ub - lb), ub)
    owner, dim, upper, s_lb, s_ub = clipping.slabs(lb, ub, new_lb, new_ub)
    assert owner.numel() == int((new_lb > lb).sum() + (new_ub < ub).sum())
    verified = torch.rand(owner.numel(), generator=g) < 0.6
    out_lb, out_ub = clipping.confirmed(lb, ub, new_lb, new_ub, owner, dim, upper, verified)
    for p in range(20):
        x = lb[p] + torch.rand(2000, 4, generator=g, dtype=torch.float64) * (ub[p] - lb[p])
        covered = ((x >= out_lb[p]) & (x <= out_ub[p])).all(1)
        for s in torch.nonzero((owner == p) & verified).reshape(-1).tolist():
            covered |= ((x >= s_lb[s]) & (x <= s_ub[s])).all(1)
        assert bool(covered.all())
        assert bool((out_lb[p] >= lb[p]).all() and (out_ub[p] <= ub[p]).all())


@pytest.mark.parametrize("seed", [1, 3, 5, 8])
def test_input_coefficients_give_a_pointwise_lower_bound(deeppoly, seed):
    """DeepPoly's rows with the carried layers fixed are ``min over the box of a.x + c``: ``a`` from
    :meth:`CertifierBounding.input_coefficients`, ``c`` from the rows; ``a.x + c`` never exceeds the row's
    value at sampled points of a sub-box (where the carried bounds still hold), and reaches the row's bound
    at the box's minimising corner."""
    case = random_case(seed, margin=0.05, max_depth=2)
    obj, mnet, st, bounding = case_bounding(deeppoly, case)
    region = case.prop.regions[0]
    lb = torch.from_numpy(np.asarray(region.lb, float)).reshape(1, -1)
    ub = torch.from_numpy(np.asarray(region.ub, float)).reshape(1, -1)
    root = Domains({"rows": torch.zeros(1, obj.rows, dtype=torch.float64), "value": torch.zeros(1, dtype=torch.float64),
                    "depth": torch.zeros(1, dtype=torch.int32), "lb": lb, "ub": ub})
    first = bounding.bound(root, "tighten")
    for k, (lo, hi) in first.carried.items():
        root[lo_key(k)], root[hi_key(k)] = lo, hi
    # a sub-box, bounded with the box's layer bounds
    mid = (lb + ub) / 2
    sub = root.select(torch.tensor([0]))
    sub["lb"], sub["ub"] = mid - (ub - lb) / 8, mid + (ub - lb) / 4
    rows, coeff = bounding.input_coefficients(sub)
    a = coeff[0]  # [R, n]
    c = rows[0] - (torch.minimum(a * sub["lb"][0], a * sub["ub"][0])).sum(1)
    x = sub["lb"][0] + torch.rand(500, lb.shape[1], dtype=torch.float64) * (sub["ub"][0] - sub["lb"][0])
    y = torch.from_numpy(np.stack([numpy_forward(case.ws, case.bs, xi.numpy()) for xi in x])) @ obj.A.T
    assert bool((x @ a.T + c <= y + 1e-9).all())
    corner = torch.where(a > 0, sub["lb"][0], sub["ub"][0])  # [R, n]
    assert torch.allclose((corner * a).sum(1) + c, rows[0], atol=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_input_branching_with_clipping_decides_as_the_milp_does(deeppoly, seed):
    """Random nets (2-5 inputs), 2% of the spread from the exact minimum: input branching with clipping gives
    the MILP's answer; clipping cuts something on the unsat ones (``clipped_sides``)."""
    case = random_case(seed, margin=0.02, max_depth=2, rows=1 + seed % 3 // 2)
    out = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + 120,
                  options=BabOptions(branching="input", attack_restarts=0))
    assert out.verdict == case.truth, (out.stopped, out.stats)
    if out.verdict == "unsat" and out.stats["domains"] > 10:
        assert out.stats.get("clipped_sides", 0) > 0


@pytest.mark.parametrize("seed", [0, 2, 4, 6])
def test_lying_coefficients_cannot_cut_off_a_counterexample(deeppoly, seed, monkeypatch):
    """Coefficients of the wrong sign (a certifier whose bound is no linear concretisation) clip toward the
    wrong end; the slabs cut off are bounded before a side is clipped, so the sat instances stay sat."""
    real = CertifierBounding.input_coefficients

    def lying(self, domains):
        rows, coeff = real(self, domains)
        return rows, -coeff

    monkeypatch.setattr(CertifierBounding, "input_coefficients", lying)
    case = random_case(seed, margin=0.02, max_depth=2)
    assert case.truth == "sat"
    out = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + 120,
                  options=BabOptions(branching="input", attack_restarts=0, input_attack=0))
    assert out.verdict == "sat", (out.stopped, out.stats)


def test_the_soundness_check_sees_every_slab(deeppoly, monkeypatch):
    """Every slab a clip cuts off is bounded in a batch the soundness check (``cf-run --check``) sees: a
    side is clipped only on a checked bound."""
    seen, cut = [], []
    real = clipping.slabs

    def recording(*args):
        out = real(*args)
        cut.append(torch.cat([out[3], out[4]], 1))
        return out

    monkeypatch.setattr(clipping, "slabs", recording)

    class Check:
        unsound = False

        def __call__(self, mnet, lb, ub, layers, region, inside=None):
            seen.append(torch.cat([lb, ub], 1))

    case = random_case(3, margin=0.05, max_depth=2)
    out = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + 120, check=Check(),
                  options=BabOptions(branching="input", attack_restarts=0))
    assert out.verdict == case.truth == "unsat" and out.stats.get("clipped_sides", 0) > 0
    checked = {tuple(r.tolist()) for r in torch.cat(seen)}
    slabs_cut = [tuple(r.tolist()) for r in torch.cat(cut)]
    assert slabs_cut and all(s in checked for s in slabs_cut)
