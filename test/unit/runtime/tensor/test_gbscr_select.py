"""The selection block (one entry per row, at a column given per row): its dense form, its structural
operations and its matrix products equal dense torch's, and the products with it never unroll it (the
weight of a gather layer: 28,800 x 28,800 float64 on cgan_2023, 6.6 GB)."""

from __future__ import annotations

import pytest
import torch

import cfruntime.tensor as T
from cfruntime.tensor import DenseBlock, DiagonalBlock, SelectBlock, SparseTensor
from cfruntime.tensor.block_repeat import RepeatBlock
from cfruntime.tensor.matmul import block_matmul


def _select(lead=(), m=5, n=4, seed=0, index=None):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, n, (m,), generator=g) if index is None else torch.tensor(index)
    return SelectBlock(torch.randn(*lead, m, generator=g, dtype=torch.float64), idx, n)


@pytest.fixture
def never_unrolled(monkeypatch):
    """Any unrolling of a selection block (its ``to_dense``) fails the test."""
    def refuse(self, fill):
        raise AssertionError("a selection block was unrolled")
    monkeypatch.setattr(SelectBlock, "to_dense", refuse)


def test_the_dense_form_of_the_docstring_example():
    a, b, c = 1.0, 2.0, 3.0
    blk = SelectBlock(torch.tensor([[a, b, c]]), torch.tensor([2, 0, 2]), 3)
    assert blk.shape == (1, 3, 3)
    assert torch.equal(blk.to_dense(0.0), torch.tensor([[[0, 0, a], [b, 0, 0], [0, 0, c]]]))
    assert torch.equal(blk.to_dense(-1.0)[0, 1], torch.tensor([b, -1.0, -1.0]))  # holes hold the background


@pytest.mark.parametrize("rel", [((0, 2), (0, 5), (0, 4)), ((1, 2), (1, 4), (0, 4)), ((0, 2), (0, 5), (1, 3)),
                                 ((0, 1), (2, 5), (3, 4))])
@pytest.mark.parametrize("fill", [0.0, 1.5])
def test_restrict_equals_the_dense_slice(rel, fill):
    """Rows, leading entries and columns cut away (a row whose column is cut shows the background)."""
    blk = _select(lead=(2,), index=[0, 3, 3, 1, 2])
    got = blk.restrict(rel, fill)
    want = blk.to_dense(fill)[tuple(slice(lo, hi) for lo, hi in rel)]
    assert torch.equal(got.to_dense(fill), want)
    assert isinstance(got, SelectBlock)


def test_structural_operations_on_the_leading_dimensions_keep_the_kind():
    blk = _select(lead=(1, 3))
    dense = blk.to_dense(0.0)
    cases = [(blk.add_dim(0, 0.0), dense.unsqueeze(0)), (blk.remove_dim(0, 0.0), dense.squeeze(0)),
             (blk.expand_dim(0, 4, 0.0), dense.expand(4, -1, -1, -1)),
             (blk.permute((1, 0, 2, 3), 0.0), dense.permute(1, 0, 2, 3)), (blk.sum_dim(1, 0.0), dense.sum(1))]
    for got, want in cases:
        assert isinstance(got, SelectBlock)
        assert torch.equal(got.to_dense(0.0), want)


def test_sums_over_rows_and_columns():
    """Over a row: its one entry; over a column: every entry that selects it (repeated and absent ones)."""
    blk = _select(lead=(2,), index=[1, 1, 3, 1, 0], n=5)
    dense = blk.to_dense(0.0)
    for dim in (1, 2):
        torch.testing.assert_close(T.to_dense(SparseTensor(dense.sum(dim).shape, 0.0, [((0, 0), blk.sum_dim(dim, 0.0))])),
                                   dense.sum(dim), rtol=0, atol=1e-15)


def test_entrywise_products_keep_the_kind():
    blk = _select(lead=(2,))
    t = torch.randn(2, 5, 4, dtype=torch.float64)
    dense = blk.to_dense(0.0)
    assert torch.equal(blk.times_dense(t).to_dense(0.0), dense * t)
    r, c = torch.randn(2, 5, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    assert torch.equal(blk.scale_rows(r).to_dense(0.0), r.unsqueeze(-1) * dense)
    assert torch.equal(blk.scale_cols(c).to_dense(0.0), dense * c.unsqueeze(-2))


@pytest.mark.parametrize("lead_x", [(3,), (1,)])
def test_products_with_dense_blocks_gather_and_scatter(lead_x, never_unrolled):
    """X @ S adds X's columns into the selected ones, S @ X gathers X's rows; no unrolling."""
    s = _select(lead=(3,), index=[2, 0, 2, 3, 2], n=4)
    dense_s = _dense(s)
    x = torch.randn(*lead_x, 6, 5, dtype=torch.float64)
    got = block_matmul(RepeatBlock(x, (3, 6, 5)), s)
    torch.testing.assert_close(got.to_dense(0.0), x @ dense_s, rtol=1e-14, atol=1e-14)
    y = torch.randn(*lead_x, 4, 2, dtype=torch.float64)
    got = block_matmul(s, RepeatBlock(y, (3, 4, 2)))
    torch.testing.assert_close(got.to_dense(0.0), dense_s @ y, rtol=1e-14, atol=1e-14)


def _dense(s: SelectBlock) -> torch.Tensor:
    out = torch.zeros(s.shape, dtype=s.core.dtype)
    s.write_into(out)
    return out


def test_products_of_selections_and_diagonals_stay_selections(never_unrolled):
    s, t = _select(lead=(2,), m=5, n=4, seed=1), _select(lead=(2,), m=4, n=6, seed=2)
    st = block_matmul(s, t)
    assert isinstance(st, SelectBlock)
    torch.testing.assert_close(_dense(st), _dense(s) @ _dense(t), rtol=1e-15, atol=1e-15)
    d_rows, d_cols = torch.randn(2, 5, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    ds = block_matmul(DiagonalBlock(d_rows, 1), s)
    sd = block_matmul(s, DiagonalBlock(d_cols, 1))
    assert isinstance(ds, SelectBlock) and isinstance(sd, SelectBlock)
    torch.testing.assert_close(_dense(ds), torch.diag_embed(d_rows) @ _dense(s), rtol=1e-15, atol=1e-15)
    torch.testing.assert_close(_dense(sd), _dense(s) @ torch.diag_embed(d_cols), rtol=1e-15, atol=1e-15)


def test_a_tensor_product_over_part_of_a_selection():
    """``inner`` of g-BSCR tensors whose blocks overlap a selection's rows and columns only in part: the
    selection is cut (rows, then columns whose rows show 0) and the product equals dense torch's."""
    s = _select(lead=(2,), m=5, n=4, index=[0, 3, 3, 1, 2])
    a = SparseTensor((2, 7, 9), 0.0, [((0, 1, 3), s)])
    x = torch.randn(2, 3, 7, dtype=torch.float64)
    b = SparseTensor((2, 3, 7), 0.0, [((0, 0, 2), DenseBlock(x[:, :, 2:6]))])
    torch.testing.assert_close(T.to_dense(T.inner(b, a)), b.to_dense() @ a.to_dense(), rtol=1e-14, atol=1e-14)
    y = torch.randn(2, 9, 3, dtype=torch.float64)
    torch.testing.assert_close(T.to_dense(T.inner(a, T.from_dense(y))), a.to_dense() @ y, rtol=1e-14, atol=1e-14)
