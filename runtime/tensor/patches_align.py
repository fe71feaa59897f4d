"""Two position-dependent kernel blocks brought onto one kernel window, so that they combine core by core.

Back-substitution through a residual join (``y = conv(x) + x``, or two convolution paths of different
depth, as in a ResNet or TinyYOLO's blocks) adds coefficient blocks over the same earlier layer whose
kernels differ: a ``5x5`` window (padding 2) from the deeper path, a ``1x1`` (padding 0) or the identity
(a diagonal) from the shorter one.  Both are patches of one stride whose windows are nested, so each
is the other's geometry with zero kernel entries around it:

    window of a row (oh, ow):  input rows  oh*s - p  ..  oh*s - p + k - 1
    common window:             p' = max(p1, p2),  k' = max(k1 - p1, k2 - p2) + p'
    core on it:                zeros, with the block's kernel at offset p' - p

A zero kernel entry maps to the zero of the sum (``holes`` of a segmented part are 0), so the padded
core is the same matrix.  A diagonal over a ``[C, H, W]`` map is the stride-1 ``1x1`` patches block whose
kernel at ``(c, h, w)`` is ``d[c, h, w]`` on channel ``c`` (``d * eye(C)``): ``C`` times the diagonal's
size, kept only where it meets a patches block of that map.

Example: ``[[a, b, 0], [0, c, d]]`` (kernels ``[a, b]``, ``[c, d]``, ``kw = 2``, padding 0) plus the
diagonal ``diag(e, f)`` of a 2-wide map with ``Wo = 2`` -- the diagonal becomes kernels ``[e, 0]``,
``[f, 0]`` on the same window, and the sum is the patches block ``[a + e, b]``, ``[c + f, d]``.
"""

from __future__ import annotations

import torch

from .block_patches import PatchesBlock


def _window(p: PatchesBlock, pad: tuple[int, int], k: tuple[int, int]) -> torch.Tensor:
    """``p``'s core on the window of padding ``pad`` and size ``k`` (containing its own)."""
    if (pad, k) == (p.padding, p.k_hw):
        return p.core
    shape = tuple(p.core.shape[:-2]) + tuple(k)
    core = torch.zeros(shape, dtype=p.core.dtype, device=p.core.device)
    oh, ow = pad[0] - p.padding[0], pad[1] - p.padding[1]
    core[..., oh:oh + p.k_hw[0], ow:ow + p.k_hw[1]] = p.core
    return core


def aligned(pa: PatchesBlock, pb: PatchesBlock) -> tuple[PatchesBlock, PatchesBlock] | None:
    """``pa`` and ``pb`` on one window (the smallest containing both), or None when they map rows to
    input positions differently (another stride, input or output map, or leading sizes) or when that
    window is larger than the input map (the dense matrix is smaller then)."""
    if (pa.shape != pb.shape or pa.in_chw != pb.in_chw or pa.out_chw != pb.out_chw or pa.stride != pb.stride
            or pa.core.shape[:-2] != pb.core.shape[:-2]):
        return None
    pad = tuple(max(a, b) for a, b in zip(pa.padding, pb.padding))
    k = tuple(max(ka - a, kb - b) + q for ka, a, kb, b, q in zip(pa.k_hw, pa.padding, pb.k_hw, pb.padding, pad))
    if k[0] * k[1] > pa.in_hw[0] * pa.in_hw[1]:
        return None  # kernels wider than the image: the matrix is smaller
    return tuple(PatchesBlock(_window(p, pad, k), p.in_hw, p.stride, pad) for p in (pa, pb))


def diagonal_as_patches(values: torch.Tensor, like: PatchesBlock) -> PatchesBlock | None:
    """The diagonal matrix ``diag(values)`` (``values [*lead, C*H*W]``) as a ``1x1`` patches block over
    ``like``'s map, or None when ``like`` is not a stride-1 map onto itself."""
    c, h, w = like.out_chw
    if like.in_chw != like.out_chw or like.stride != (1, 1) or values.shape[-1] != c * h * w:
        return None
    lead = tuple(values.shape[:-1])
    eye = torch.eye(c, dtype=values.dtype, device=values.device).view(c, 1, 1, c, 1, 1)
    core = values.reshape(lead + (c, h, w, 1, 1, 1)) * eye
    return PatchesBlock(core, like.in_hw, 1, 0)
