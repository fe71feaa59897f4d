"""KeptColumns (runtime/tensor/kept_columns.py): a dense [*, m, k] tensor kept as a few columns and one
held row.  Each use -- dense, times a tensor, a flat gather, a convolution's patches times it -- must
equal the same use of the dense tensor, values and gradients (to the kept values and the held row)."""

from __future__ import annotations

import pytest
import torch

from cfruntime.tensor import KeptColumns, PatchesBlock

CASES = [((3, 5, 7), (0, 3, 6)), ((2, 4, 9), (1,)), ((1, 3, 6), (0, 1, 2, 3, 4, 5)), ((2, 1, 4), ())]


def _pair(shape, cols, seed=0):
    g = torch.Generator().manual_seed(seed)
    *lead, m, k = shape
    kept = torch.randn(*lead, m, len(cols), generator=g, dtype=torch.float64, requires_grad=True)
    held = torch.randn(*lead, 1, k, generator=g, dtype=torch.float64, requires_grad=True)
    return kept, held, torch.tensor(cols, dtype=torch.long)


def _reference(kept, held, cols, shape):
    """T built entry by entry."""
    t = held.expand(shape).clone()
    for j, c in enumerate(cols.tolist()):
        t[..., c] = kept[..., j]
    return t


def _grads(out, kept, held, seed=1):
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    return torch.autograd.grad((out * w).sum(), [kept, held], allow_unused=True, retain_graph=True)


def _same(a, b):
    for x, y in zip(a, b):
        if x is None or y is None:
            assert (x is None or not x.any()) and (y is None or not y.any())
        else:
            torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, cols", CASES)
def test_dense_times_and_gather_equal_the_tensor(shape, cols):
    kept, held, idx = _pair(shape, cols)
    t = KeptColumns(kept, held, idx)
    ref = _reference(kept, held, idx, shape)
    assert tuple(t.shape) == shape and t.dim() == len(shape)
    torch.testing.assert_close(t.dense(), ref, rtol=0, atol=0)
    _same(_grads(t.dense(), kept, held), _grads(ref, kept, held))
    # times: a coefficient of the full shape, and one shared by the batch
    for p_shape in (shape, (1, *shape[1:])):
        p = torch.randn(p_shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        torch.testing.assert_close(t.times(p), p * ref, rtol=1e-15, atol=0)
        _same(_grads(t.times(p), kept, held), _grads(p * ref, kept, held))
    # a flat gather at random positions (repeats included)
    m, k = shape[-2:]
    flat = torch.randint(0, m * k, (17,), generator=torch.Generator().manual_seed(4))
    want = ref.reshape(*shape[:-2], m * k)[..., flat]
    torch.testing.assert_close(t.gather(flat), want, rtol=0, atol=0)
    _same(_grads(t.gather(flat), kept, held), _grads(want, kept, held))


@pytest.mark.parametrize("stride, padding", [(1, 0), (2, 1), (1, 1)])
def test_patches_times_kept_columns_equals_times_the_tensor(stride, padding):
    g = torch.Generator().manual_seed(7)
    core_in, core_out, kh = 2, 3, 3
    weight = torch.randn(core_out, core_in, kh, kh, generator=g, dtype=torch.float64)
    from cfruntime.tensor import ConvBlock

    block = ConvBlock(weight, (5, 5), stride, padding).as_patches()
    m, k = block.shape[-2:]
    kept, held, cols = _pair((2, m, k), tuple(range(1, k, 4)), seed=8)
    t = KeptColumns(kept, held, cols)
    got = block.times_dense(t)
    want = block.times_dense(_reference(kept, held, cols, (2, m, k)))
    assert isinstance(got, PatchesBlock)
    torch.testing.assert_close(got.to_dense(0), want.to_dense(0), rtol=1e-14, atol=0)
    _same(_grads(got.to_dense(0), kept, held), _grads(want.to_dense(0), kept, held))
