"""Hypothesis strategies and oracles for the g-BSCR tests."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from cfruntime.tensor import (ConstantBlock, ConvBlock, DenseBlock, DiagonalBlock, PatchesBlock, SelectBlock,
                              RepeatBlock, SparseTensor)
from cfruntime.tensor.conv_utils import conv_out_hw
from cfruntime.tensor.overlap import intersect, region_of

KINDS = ["dense", "repeat", "constant", "diagonal", "conv", "patches", "select"]
FLOAT_VALUES = [0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 1.5, -0.25]
SPECIAL = [math.inf, -math.inf]
BACKGROUNDS = [0.0, 1.0, math.inf, -math.inf, -0.5, 2.0]
BOOL_BACKGROUNDS = [False, True]


def values(gen: torch.Generator, shape, dtype, special: bool) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=gen).bool()
    pool = FLOAT_VALUES + (SPECIAL if special else [])
    idx = torch.randint(0, len(pool), tuple(shape), generator=gen)
    return torch.tensor(pool, dtype=dtype)[idx]


def _randint(gen, lo, hi):
    """inclusive"""
    return int(torch.randint(lo, hi + 1, (1,), generator=gen))


def conv_geometry(gen, max_rows, max_cols):
    """A random small conv geometry whose matrix fits in max_rows x max_cols, or None."""
    for _ in range(20):
        ci, co = _randint(gen, 1, 2), _randint(gen, 1, 2)
        hi, wi = _randint(gen, 1, 3), _randint(gen, 1, 3)
        kh, kw = _randint(gen, 1, 2), _randint(gen, 1, 2)
        s, p = _randint(gen, 1, 2), _randint(gen, 0, 1)
        ho, wo = conv_out_hw((hi, wi), (kh, kw), (s, s), (p, p))
        if ho < 1 or wo < 1:
            continue
        if co * ho * wo <= max_rows and ci * hi * wi <= max_cols:
            return dict(ci=ci, co=co, hi=hi, wi=wi, kh=kh, kw=kw, s=s, p=p, ho=ho, wo=wo)
    return None


def make_block(gen, kind, shape, dtype, special, bg=None):
    """Random block of `kind` fitting in `shape` -> (block) or None."""
    r = len(shape)
    if kind in ("dense", "repeat", "constant"):
        ext = [_randint(gen, 1, n) for n in shape]
        if kind == "dense":
            return DenseBlock(values(gen, ext, dtype, special))
        if kind == "constant":
            return ConstantBlock(values(gen, [1] * r, dtype, special), ext)
        core_shape = [1 if bool(torch.rand(1, generator=gen) < 0.5) else e for e in ext]
        return RepeatBlock(values(gen, core_shape, dtype, special), ext)
    if kind == "diagonal":
        if r < 2:
            return None
        d = _randint(gen, 0, r - 2)
        nmax = min(shape[d], shape[d + 1])
        n = _randint(gen, 1, nmax)
        core_shape = [_randint(gen, 1, shape[k]) for k in range(r) if k != d + 1]
        core_shape[d] = n
        return DiagonalBlock(values(gen, core_shape, dtype, special), d)
    if kind in ("conv", "patches"):
        if r < 2:
            return None
        g = conv_geometry(gen, shape[-2], shape[-1])
        if g is None:
            return None
        lead = [_randint(gen, 1, n) for n in shape[:-2]]
        w = values(gen, (g["co"], g["ci"], g["kh"], g["kw"]), dtype, special)
        if kind == "conv":
            return ConvBlock(w, (g["hi"], g["wi"]), g["s"], g["p"], lead)
        core = values(gen, lead + [g["co"], g["ho"], g["wo"], g["ci"], g["kh"], g["kw"]], dtype, special)
        return PatchesBlock(core, (g["hi"], g["wi"]), g["s"], g["p"])
    if kind == "select":  # one entry per row, columns repeated or skipped at random
        if r < 2:
            return None
        m, n = _randint(gen, 1, shape[-2]), _randint(gen, 1, shape[-1])
        lead = [_randint(gen, 1, k) for k in shape[:-2]]
        index = torch.randint(0, n, (m,), generator=gen)
        return SelectBlock(values(gen, lead + [m], dtype, special), index, n)
    raise ValueError(kind)


def make_tensor(gen, shape, dtype, bg, kinds, n_blocks, special, avoid=None):
    blocks = []
    regions = []
    for _ in range(n_blocks):
        kind = kinds[_randint(gen, 0, len(kinds) - 1)]
        blk = make_block(gen, kind, shape, dtype, special)
        if blk is None:
            continue
        start = [_randint(gen, 0, n - e) for n, e in zip(shape, blk.shape)]
        reg = region_of(start, blk.shape)
        if any(intersect(reg, o) is not None for o in regions):
            continue
        regions.append(reg)
        blocks.append((start, blk))
    return SparseTensor(shape, bg, blocks, dtype=dtype)


@st.composite
def shapes(draw, min_rank=1, max_rank=3, max_side=7):
    r = draw(st.integers(min_rank, max_rank))
    return tuple(draw(st.integers(1, max_side)) for _ in range(r))


@st.composite
def tensor_pair(draw, kinds_a=KINDS, kinds_b=KINDS, dtype=torch.float32, same_shape=True,
                min_rank=2, zero_bg=False):
    shape = draw(shapes(min_rank=min_rank, max_rank=3, max_side=9))
    seed = draw(st.integers(0, 2**31 - 1))
    special = draw(st.booleans())
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        bga, bgb = draw(st.sampled_from(BOOL_BACKGROUNDS)), draw(st.sampled_from(BOOL_BACKGROUNDS))
    elif zero_bg:
        bga = bgb = 0.0
    else:
        bga, bgb = draw(st.sampled_from(BACKGROUNDS)), draw(st.sampled_from(BACKGROUNDS))
    na, nb = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    a = make_tensor(gen, shape, dtype, bga, list(kinds_a), na, special)
    b = make_tensor(gen, shape, dtype, bgb, list(kinds_b), nb, special)
    return a, b


@st.composite
def tensors(draw, kinds=KINDS, dtype=torch.float32, min_rank=1, max_rank=3, bgs=None):
    shape = draw(shapes(min_rank=min_rank, max_rank=max_rank, max_side=9))
    seed = draw(st.integers(0, 2**31 - 1))
    special = draw(st.booleans())
    gen = torch.Generator().manual_seed(seed)
    pool = bgs or (BOOL_BACKGROUNDS if dtype == torch.bool else BACKGROUNDS)
    bg = draw(st.sampled_from(pool))
    n = draw(st.integers(0, 4))
    return make_tensor(gen, shape, dtype, bg, list(kinds), n, special)


# ------------------------------------------------------------------ oracles
def assert_matches(result, expected: torch.Tensor):
    """`result` (SparseTensor or tensor) equals the dense torch result."""
    if isinstance(result, SparseTensor):
        result.validate()
        got = result.to_dense()
    else:
        got = result
    assert tuple(got.shape) == tuple(expected.shape), (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if expected.dtype == torch.bool or not expected.is_floating_point():
        assert torch.equal(got, expected), (got, expected)
    else:
        tol = 1e-6 if expected.dtype == torch.float32 else 1e-12
        torch.testing.assert_close(got, expected, rtol=tol, atol=tol, equal_nan=True)


def unrolled_conv(weight, in_hw, stride, padding) -> torch.Tensor:
    """Independent oracle: the conv matrix M with M @ x.flatten() == conv2d(x).flatten()."""
    ci = weight.shape[1]
    n_in = ci * in_hw[0] * in_hw[1]
    basis = torch.eye(n_in, dtype=weight.dtype).reshape(n_in, ci, *in_hw)
    out = F.conv2d(basis, weight, stride=stride, padding=padding)  # [n_in, Co, Ho, Wo]
    return out.reshape(n_in, -1).T.contiguous()


def naive_patches(core, in_hw, stride, padding) -> torch.Tensor:
    """Independent loop oracle for a (lead-free) patches core."""
    co, ho, wo, ci, kh, kw = core.shape
    hi, wi = in_hw
    m = torch.zeros(co * ho * wo, ci * hi * wi, dtype=core.dtype)
    for c in range(co):
        for oh in range(ho):
            for ow in range(wo):
                for cc in range(ci):
                    for a in range(kh):
                        for b in range(kw):
                            ih, iw = oh * stride - padding + a, ow * stride - padding + b
                            if 0 <= ih < hi and 0 <= iw < wi:
                                m[(c * ho + oh) * wo + ow, (cc * hi + ih) * wi + iw] = core[c, oh, ow, cc, a, b]
    return m


def conv_and_patches(ci, co, h, k, s, p, seed, lead=(2,)):
    """A float64 conv block and a patches block of the same geometry with independent random values."""
    g = torch.Generator().manual_seed(seed)
    conv = ConvBlock(torch.randn(co, ci, k, k, generator=g, dtype=torch.float64), (h, h), s, p, lead=lead)
    core = torch.randn(conv.as_patches().core.shape, generator=g, dtype=torch.float64)
    return conv, PatchesBlock(core, (h, h), s, p)
