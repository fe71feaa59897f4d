"""Composition of pending linear stages (:func:`cfruntime.network.onnx_stages._compose`): a gather after a
dense map merges into one dense map unless it repeats rows beyond the cell limit -- then both stay (a
Softmax's differences ``x_j - x_i`` over vit_2023's 867 attention scores read 14739 rows of a 867 x 13872
map: merged, 14739 x 13872 float64 = 1.6 GB per layer; apart, 97 MB and a gather)."""

from __future__ import annotations

import numpy as np

from cfruntime.network.onnx_stages import _compose, _DStage, _GStage


def _stages(rows_out: int):
    rng = np.random.default_rng(3)
    dense = _DStage(rng.standard_normal((4, 3)), rng.standard_normal(4), (4,))
    index = rng.integers(0, 4, size=rows_out)
    gather = _GStage(index, rng.standard_normal(rows_out), rng.standard_normal(rows_out), 4, (rows_out,))
    return dense, gather


def _apply(stage, x):
    if isinstance(stage, _DStage):
        return stage.W @ x + stage.b
    return stage.scale * x[stage.index] + stage.shift


def test_a_gather_after_a_dense_map_merges_within_the_limit():
    dense, gather = _stages(10)
    merged = _compose(dense, gather, limit_cells=30)  # 10 x 3 = 30 cells: within
    assert isinstance(merged, _DStage) and merged.W.shape == (10, 3)
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(_apply(merged, x), _apply(gather, _apply(dense, x)), rtol=1e-12)


def test_a_gather_repeating_rows_beyond_the_limit_stays_apart():
    dense, gather = _stages(10)
    assert _compose(dense, gather, limit_cells=29) is None  # 30 cells > 29 and > the dense map's 12


def test_a_gather_that_does_not_grow_the_map_merges_at_any_limit():
    """A permutation or a selection of rows (a Flatten, a Slice after a Gemm) is never kept apart: the merged
    map is no larger than the dense one."""
    dense, gather = _stages(4)
    assert isinstance(_compose(dense, gather, limit_cells=1), _DStage)
    dense, gather = _stages(2)
    assert isinstance(_compose(dense, gather, limit_cells=1), _DStage)
