"""Patches blocks of nested kernel windows (and a diagonal beside them) summed core by core: the residual
joins of a ResNet or TinyYOLO stay patches in back-substitution, equal to the dense sum."""

import pytest
import torch

from cfruntime import tensor as gb
from cfruntime.tensor import ConvBlock, DenseBlock, DiagonalBlock, PatchesBlock, Segmented
from cfruntime.tensor import segmented_ops as so
from cfruntime.tensor.conv_utils import conv_out_hw
from cfruntime.tensor.patches_align import aligned, diagonal_as_patches
from cftest.gbscr_strategies import naive_patches

HW = (8, 7)


def _patches(g, k, p, s, co=2, ci=3, lead=()):
    ho, wo = conv_out_hw(HW, (k, k), (s, s), (p, p))
    return PatchesBlock(torch.randn(*lead, co, ho, wo, ci, k, k, generator=g, dtype=torch.float64), HW, s, p)


def _dense(b: PatchesBlock) -> torch.Tensor:
    core = b.core.reshape((-1,) + tuple(b.core.shape[-6:]))
    return torch.stack([naive_patches(c, b.in_hw, b.stride[0], b.padding[0]) for c in core]).reshape(b.shape)


# (stride, (k1, p1), (k2, p2)): the windows of TinyYOLO's joins (a 1x1 or 3x3 path beside a deeper one)
# and of a stride-2 average pool's (2x2, padding 0 beside 6x6, padding 2)
JOINS = [(1, (1, 0), (5, 2)), (1, (3, 1), (7, 3)), (1, (5, 2), (3, 1)), (2, (2, 0), (6, 2)), (2, (1, 0), (3, 1))]


@pytest.mark.parametrize("lead", [(), (2,)])
@pytest.mark.parametrize("s,a,b", JOINS)
def test_aligned_blocks_are_the_same_matrices_and_sum_by_core(s, a, b, lead):
    g = torch.Generator().manual_seed(7 * s + a[0] + 3 * b[0])
    pa, pb = _patches(g, *a, s, lead=lead), _patches(g, *b, s, lead=lead)
    qa, qb = aligned(pa, pb)
    assert qa.k_hw == qb.k_hw == (max(a[0], b[0]),) * 2 and qa.padding == qb.padding
    torch.testing.assert_close(_dense(qa), _dense(pa), rtol=0, atol=0)
    torch.testing.assert_close(_dense(qb), _dense(pb), rtol=0, atol=0)
    torch.testing.assert_close(_dense(qa.with_core(qa.core + qb.core)), _dense(pa) + _dense(pb))


def test_blocks_that_map_rows_differently_are_not_aligned():
    g = torch.Generator().manual_seed(0)
    assert aligned(_patches(g, 3, 1, 1), _patches(g, 3, 1, 2)) is None  # another stride (and output map)
    wide = PatchesBlock(torch.randn(2, *HW, 3, 9, 9, generator=g, dtype=torch.float64), HW, 1, 4)
    assert aligned(_patches(g, 3, 1, 1), wide) is None  # a 9x9 window over an 8x7 map: dense is smaller


@pytest.mark.parametrize("lead", [(), (2,)])
def test_a_diagonal_is_the_channel_diagonal_one_by_one_kernel(lead):
    g = torch.Generator().manual_seed(1)
    like = _patches(g, 3, 1, 1, co=3, ci=3)
    d = torch.randn(*lead, 3 * HW[0] * HW[1], generator=g, dtype=torch.float64)
    p = diagonal_as_patches(d, like)
    assert p.k_hw == (1, 1) and p.shape == lead + like.shape
    torch.testing.assert_close(_dense(p), torch.diag_embed(d), rtol=0, atol=0)
    assert diagonal_as_patches(d, _patches(g, 3, 1, 2, co=3, ci=3)) is None  # a stride-2 map: not onto itself


def _segmented(part, width):
    return Segmented((1,) + tuple(part.shape[-2:-1]) + (width,), 2, {0: part}, torch.float64, "cpu")


@pytest.mark.parametrize("skip", ["patches", "diagonal", "conv"])
def test_a_residual_join_sums_to_patches_equal_to_the_dense_sum(skip, monkeypatch):
    """coefficients through the deep path (a 5x5 window) plus those through the skip path (a 1x1 kernel,
    the identity's diagonal, or a 3x3 convolution) over the same earlier layer: one patches part."""
    g = torch.Generator().manual_seed(2)
    deep = _patches(g, 5, 2, 1, co=3, ci=3, lead=(1,))
    n = 3 * HW[0] * HW[1]
    if skip == "patches":
        short = _patches(g, 1, 0, 1, co=3, ci=3, lead=(1,))
    elif skip == "diagonal":
        short = DiagonalBlock(torch.randn(1, n, generator=g, dtype=torch.float64), 1)
    else:
        short = ConvBlock(torch.randn(3, 3, 3, 3, generator=g, dtype=torch.float64), HW, 1, 1, lead=(1,))
    monkeypatch.setattr(so, "part_dense", lambda p: pytest.fail("the join was densified"))
    total = so.binary(_segmented(deep, n), _segmented(short, n), "add")
    assert isinstance(total.parts[0], PatchesBlock)
    torch.testing.assert_close(gb.to_dense(total)[0], _dense(deep)[0] + short.to_dense(0)[0])


def test_a_kernel_wider_than_the_image_composes_to_the_dense_matrix():
    """patches @ conv whose composed kernel (7x7 from a 5x5 window through a 3x3 convolution) exceeds the
    5x5 input map: the product is the (smaller) dense matrix, equal to the composition."""
    g = torch.Generator().manual_seed(3)
    hw = (5, 5)
    conv = ConvBlock(torch.randn(2, 2, 3, 3, generator=g, dtype=torch.float64), hw, 1, 1)
    P = PatchesBlock(torch.randn(2, *hw, 2, 5, 5, generator=g, dtype=torch.float64), hw, 1, 2)
    st = [gb.SparseTensor(b.shape, 0.0, [((0,) * len(b.shape), b)]) for b in (P, conv)]
    r = gb.inner(*st)
    assert isinstance(r.blocks[0][1], DenseBlock)
    torch.testing.assert_close(r.to_dense(), naive_patches(P.core, hw, 1, 2) @ conv.to_dense(0))
