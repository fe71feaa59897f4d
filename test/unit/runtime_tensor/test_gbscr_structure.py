"""Block-structure guarantees the compiled certifiers' speed depends on (values are checked against
dense torch too): broadcast views are not copied, ``where`` keeps diagonals and skips regions its
condition cannot change, and masks multiply without densifying."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import cfruntime.tensor as T
from cfruntime.flow import ops as rt
from cfruntime.tensor import DiagonalBlock, RepeatBlock, SparseTensor


def diag_tensor(core: torch.Tensor, col: int, width: int, bg: float = 0.0) -> SparseTensor:
    """``[B, n, width]`` with ``core [B, n]`` on the diagonal of columns ``col..col+n``."""
    b, n = core.shape
    return SparseTensor((b, n, width), bg, [((0, 0, col), DiagonalBlock(core, 1))], dtype=core.dtype)


def test_broadcast_view_becomes_a_repeat_block():
    base = torch.arange(6.0).reshape(2, 3, 1)
    view = base.expand(2, 3, 50)
    wrapped = T.binary(view, T.from_dense(torch.zeros(2, 3, 50)), "add")
    assert torch.equal(wrapped.to_dense(), view)
    plus = T.binary(view, SparseTensor((2, 3, 50), 0.0, [], dtype=torch.float32), "add")
    assert all(isinstance(b, RepeatBlock) and b.core.numel() == 6 for _, b in plus.blocks)
    assert torch.equal(plus.to_dense(), view)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), both=st.booleans(), bg=st.sampled_from([0.0, 1.0, float("inf")]))
def test_where_with_a_broadcast_condition_keeps_diagonals(seed, both, bg):
    g = torch.Generator().manual_seed(seed)
    cond = (torch.rand(3, 4, 1, generator=g) > 0.5).expand(3, 4, 20)
    a = diag_tensor(torch.randn(3, 4, generator=g), 5, 20, bg)
    b = diag_tensor(torch.randn(3, 4, generator=g), 5, 20, bg) if both else bg
    out = T.where(cond, a, b)
    dense_b = b.to_dense() if both else torch.full((3, 4, 20), bg)
    assert torch.equal(out.to_dense(), torch.where(cond, a.to_dense(), dense_b))
    assert len(out.blocks) == 1 and isinstance(out.blocks[0][1], DiagonalBlock)


def test_where_with_a_uniform_condition_block_takes_one_branch():
    a = diag_tensor(torch.randn(2, 3), 0, 6, bg=5.0)
    ones = torch.ones(2, 3, 6, dtype=torch.bool)
    for cond, bg_c in ((ones, False), (~ones, True)):
        c = SparseTensor((2, 3, 6), bg_c, [((0, 0, 0), T.DenseBlock(cond))], dtype=torch.bool)
        out = T.where(c, a, -1.0)
        assert torch.equal(out.to_dense(), torch.where(cond, a.to_dense(), torch.tensor(-1.0)))


def test_mask_times_values_is_a_where_and_empty_results_are_pruned():
    x = T.from_dense(torch.tensor([[[0.0, 2.0, float("inf")]]]))
    mask = T.from_dense(torch.tensor([[[True, True, False]]]))
    assert torch.equal(rt.mult(mask, x).to_dense(), torch.tensor([[[0.0, 2.0, 0.0]]]))  # no 0 * inf = NaN
    none = T.from_dense(torch.zeros(1, 1, 3, dtype=torch.bool))
    assert rt.mult(none, x).blocks == []
