"""The input regions of a VNN-LIB property are bounded in batches (``cfmlir.api._certify_vnnlib``): each
region's row bounds equal those of the region bounded alone, runs of regions with different row counts and
regions without rows included; the check hook sees every analysed region once, numbered."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cfmlir
from cfmlir.api import _runs_of_equal_row_counts
from cfruntime.default_data import default_network_path
from cfruntime.properties import InputRegion, VnnlibProperty


@pytest.fixture(scope="module")
def net():
    return cfmlir.load_network(default_network_path())


def _regions(net, seed: int = 0) -> list[InputRegion]:
    """12 regions of 2 rows, one without rows (a disjunct that holds everywhere), 9 of 3 rows, 5 of 2 rows."""
    rng = np.random.default_rng(seed)
    n, m = net.input_size, net.output_size
    out = []
    for count, rows in ((12, (1, 1)), (1, (0,)), (9, (2, 1)), (5, (1, 1))):
        for _ in range(count):
            centre = rng.uniform(0.2, 0.8, n)
            disjuncts = [(rng.standard_normal((r, m)), rng.standard_normal(r)) for r in rows]
            out.append(InputRegion(centre - 0.01, centre + 0.01, disjuncts))
    return out


def test_runs_of_equal_row_counts(net):
    regions = _regions(net)
    assert _runs_of_equal_row_counts(regions) == [(0, 12), (13, 22), (22, 27)]
    assert _runs_of_equal_row_counts([]) == []


@pytest.mark.parametrize("name", ["deeppoly", "ibp"])
def test_each_region_bounds_equal_the_region_alone(net, name):
    regions = _regions(net)
    prop = VnnlibProperty(net.input_size, net.output_size, regions, "<test>")
    eng = cfmlir.engine_for(cfmlir.compile(name), "compiled")
    seen = []

    def check(mnet, lb, ub, layers, first):
        seen.append((first, lb.shape[0]))
        assert layers  # every layer's bounds are asked for when there is a check

    res = cfmlir.certify(None, net, prop, engine=eng, batch_size=4, check=check, proof=_proof(name, net))
    assert len(res.row_lb) == len(regions)
    for i, reg in enumerate(regions):
        A = reg.stacked()[0]
        if A.shape[0] == 0:
            assert res.row_lb[i].shape == (0,) and res.row_ub[i].shape == (0,)
            continue
        mnet = net.with_margin_layer(torch.from_numpy(A))
        lo, hi, _ = eng.bounds(mnet, reg.lb.reshape(1, -1), reg.ub.reshape(1, -1))
        np.testing.assert_allclose(res.row_lb[i], lo[0].numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.row_ub[i], hi[0].numpy(), rtol=0, atol=1e-12)
    covered = [r for first, k in seen for r in range(first, first + k)]
    assert covered == [i for i, reg in enumerate(regions) if reg.stacked()[0].shape[0] > 0]
    assert max(k for _, k in seen) == 4  # batches of batch_size regions


def test_interpreter_engine_gives_the_compiled_bounds(net):
    regions = _regions(net)[10:15]  # a run's end, the region without rows, a run's start
    prop = VnnlibProperty(net.input_size, net.output_size, regions, "<test>")
    cert = cfmlir.compile("ibp")
    compiled = cfmlir.certify(cert, net, prop, batch_size=2)
    interpreted = cfmlir.certify(cert, net, prop, engine="interpreter", batch_size=2)
    for a, b in zip(compiled.row_lb + compiled.row_ub, interpreted.row_lb + interpreted.row_ub):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    assert compiled.verdict == interpreted.verdict


def _proof(name, net):
    from cfmlir.proof_gate import proof_for

    return proof_for(cfmlir.compile(name), net)
