"""Parts made on first read (:mod:`cfruntime.tensor.lazy_parts`): a rule that reads a Float member over
every stored layer makes the view of the layer it multiplies only."""

import pytest
import torch

import cfmlir
from cfruntime.op_count import OpCounter
from cfruntime.tensor import DiagonalBlock, Segmented
from cfruntime.tensor import segmented_ops as so
from cfruntime.tensor.lazy_parts import LazyParts

from cftest.nets import boxes, mlp


def test_a_part_is_made_once_when_read_and_never_when_not():
    made = []

    def make(s):
        made.append(s)
        return torch.full((1, 1, 2), float(s))

    parts = LazyParts({0: 0, 2: 2, 4: 4}, make)
    assert list(parts) == [0, 2, 4] and len(parts) == 3 and 2 in parts and 3 not in parts
    assert made == []  # keys, length and membership make nothing
    assert parts.get(2)[0, 0, 0] == 2.0 and parts[2] is parts.get(2)
    assert parts.get(3) is None
    with pytest.raises(KeyError):
        parts[3]
    assert made == [2]
    assert parts.flat(2) is None and made == [2]  # no flat maker: None, nothing made
    assert dict(parts.items()).keys() == {0, 2, 4} and sorted(made) == [0, 2, 4]  # items make the rest, once


def test_interval_bounds_view_only_the_predecessor():
    """IBP over an MLP of ``L`` affine layers, planned layout: each affine layer reads its predecessor's
    ``l`` and ``u`` (two views), not those of every layer before it (which grew with the square of the
    depth: 2 + 4 + 6 ... views)."""
    sizes = [4, 6, 6, 6, 6, 6, 3]
    net = mlp(sizes, seed=1)
    lb, ub = boxes(4, batch=2, seed=2, radius=0.1)
    engine = cfmlir.engine_for(cfmlir.compile("ibp"), dtype="float64", graph=False)
    engine.bounds(net, lb, ub)  # warm: one-off views of the weights
    with OpCounter() as c:
        engine.bounds(net, lb, ub)
    affine = len(sizes) - 1
    assert c.by_name["unsqueeze"] <= 2 * affine, c.by_name


def _flat_bounds(g, batch: int, width: int):
    """``lo <= hi`` ``[batch, 1, width]`` as one-part segmented tensors whose parts are made by an
    ``unsqueeze`` and also at hand flat (``[batch, width]``); the list records which maker ran."""
    made = []
    lo = torch.randn(batch, width, generator=g, dtype=torch.float64)
    hi = lo + torch.rand(batch, width, generator=g, dtype=torch.float64)

    def seg(v):
        parts = LazyParts({0: "k"}, lambda k: made.append("full") or v.unsqueeze(1), flat=lambda k: made.append("flat") or v)
        return Segmented((batch, 1, width), 2, parts, torch.float64, "cpu")

    return seg(lo), seg(hi), lo.unsqueeze(1), hi.unsqueeze(1), made


def _coefficients(g, kind: str, batch: int):
    """A one-part coefficient ``[batch or 1, m, n]`` of ``kind``, its dense form and its width."""
    from cfruntime.tensor.block_conv import ConvBlock

    if kind == "diagonal":
        core = torch.randn(batch, 6, generator=g, dtype=torch.float64)
        x, n = DiagonalBlock(core, 1), 6
    elif kind == "conv":
        x = ConvBlock(torch.randn(3, 2, 3, 3, generator=g, dtype=torch.float64), (5, 5), 2, 1, lead=(1,))
        n = x.shape[-1]
    else:
        rows, n = {"shared": (1, 70), "own": (batch, 70), "small": (1, 4)}[kind], {"small": 5}.get(kind, 130)
        x = torch.randn(rows[0], rows[1], n, generator=g, dtype=torch.float64)
    seg = Segmented((batch, x.shape[-2], n), 2, {0: x}, torch.float64, "cpu")
    return seg, seg.to_dense(), n


@pytest.mark.parametrize("kind", ["diagonal", "conv", "shared", "own", "small"])
def test_an_interval_product_reads_the_flat_parts(kind):
    """``interval_inner`` of a coefficient against bounds whose parts are at hand flat equals the dense
    interval product, reads the flat parts only, and -- where the kernel would take the unit dimension
    away (a diagonal, a convolution's images, rows against shared weights) -- adds none: no
    ``unsqueeze``/``squeeze``/``view`` beyond the convolution's two image reshapes."""
    g = torch.Generator().manual_seed(len(kind))
    batch = 12
    x, dense, n = _coefficients(g, kind, batch)
    lo, hi, dlo, dhi, made = _flat_bounds(g, batch, n)
    with OpCounter() as c:
        got_lo, got_hi = so.interval_inner(x, lo, hi, 2)
    want_lo = (dense.clamp(min=0) * dlo + dense.clamp(max=0) * dhi).sum(-1)
    want_hi = (dense.clamp(min=0) * dhi + dense.clamp(max=0) * dlo).sum(-1)
    torch.testing.assert_close(got_lo, want_lo, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got_hi, want_hi, rtol=1e-12, atol=1e-12)
    assert made == ["flat", "flat"]
    shape_ops = sum(c.by_name.get(k, 0) for k in ("unsqueeze", "squeeze", "view", "transpose"))
    assert shape_ops == {"conv": 4, "own": 4, "small": 2}.get(kind, 0), c.by_name


def test_ibp_on_a_convolutional_network_adds_no_unit_dimensions():
    """IBP over a convolutional network reads every predecessor's bounds flat: the interval products
    against its two convolutions take the stored ``[B, n]`` bounds (before, each affine layer viewed
    both as ``[B, 1, n]``: 6 ``unsqueeze``); only the last layer's small product (3 x 8, below
    ``SMALL_PRODUCT``: a broadcast product) gives its centre and radius the row dimension."""
    from cftest.nets import small_conv

    net = small_conv(seed=1)
    lb, ub = boxes(50, batch=3, seed=2, radius=0.1)
    engine = cfmlir.engine_for(cfmlir.compile("ibp"), dtype="float64", graph=False)
    want = engine.bounds(net, lb, ub)  # warm
    with OpCounter() as c:
        got = engine.bounds(net, lb, ub)
    assert c.by_name.get("unsqueeze", 0) == 2, c.by_name
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
