"""Geometry helpers shared by convolution and patches blocks.

Neurons of a feature map ``[C, H, W]`` are flattened in ``C, H, W`` order
(``index = (c * H + h) * W + w``), exactly like ``tensor.reshape(-1)``.
An output position ``(oh, ow)`` with kernel offset ``(ki, kj)`` reads input
position ``(oh * sh - ph + ki, ow * sw - pw + kj)``; positions outside the input
are the convolution's zero padding and are not part of the dense matrix.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F


def pair(v) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        return int(v[0]), int(v[1])
    return int(v), int(v)


def conv_out_hw(in_hw, k_hw, stride, padding) -> tuple[int, int]:
    return tuple((i + 2 * p - k) // s + 1 for i, k, s, p in zip(in_hw, k_hw, stride, padding))


def unfold_image(img: torch.Tensor, k_hw, stride, padding, out_hw) -> torch.Tensor:
    """``img [N, C, H, W]`` -> patches ``[N, C, kh, kw, Ho, Wo]`` (a strided view
    of a padded copy; works for any dtype).  Entry ``[n, c, ki, kj, oh, ow]`` is
    ``img[n, c, oh*sh - ph + ki, ow*sw - pw + kj]`` or 0 outside the image."""
    (kh, kw), (sh, sw), (ph, pw), (ho, wo) = k_hw, stride, padding, out_hw
    H, W = img.shape[-2:]
    rh = max(0, (ho - 1) * sh + kh - H - ph)
    rw = max(0, (wo - 1) * sw + kw - W - pw)
    x = img
    if ph or pw or rh or rw:
        # crop first if the padding is "negative" on the right (never needed for
        # the geometries built here, but keeps the helper total).
        x = F.pad(img, (pw, rw, ph, rh)) if img.dtype != torch.bool else \
            F.pad(img.to(torch.uint8), (pw, rw, ph, rh)).to(torch.bool)
    u = x.unfold(2, kh, sh).unfold(3, kw, sw)  # [N, C, Lh, Lw, kh, kw]
    u = u[:, :, :ho, :wo]
    return u.permute(0, 1, 4, 5, 2, 3)


def fold_patches(cols: torch.Tensor, in_hw, stride, padding) -> torch.Tensor:
    """Adjoint of :func:`unfold_image`: ``cols [N, C, kh, kw, Ho, Wo]`` is
    scatter-added into ``[N, C, H, W]`` (contributions in the padding dropped).  On the CPU one
    ``index_add_`` (2-4x faster than ``F.fold`` there on the conv nets' back-substitution shapes);
    on CUDA ``F.fold`` (one kernel, no atomics)."""
    if cols.device.type == "cpu":
        return _fold_by_index(cols, in_hw, stride, padding)
    return _fold_by_col2im(cols, in_hw, stride, padding)


def _fold_by_col2im(cols: torch.Tensor, in_hw, stride, padding) -> torch.Tensor:
    N, C, kh, kw, ho, wo = cols.shape
    (H, W), (sh, sw), (ph, pw) = in_hw, stride, padding
    hc, wc = (ho - 1) * sh + kh, (wo - 1) * sw + kw
    canvas = F.fold(cols.reshape(N, C * kh * kw, ho * wo), (hc, wc), (kh, kw), stride=(sh, sw))
    eh, ew = max(0, ph + H - hc), max(0, pw + W - wc)
    if eh or ew:
        canvas = F.pad(canvas, (0, ew, 0, eh))
    return canvas[:, :, ph: ph + H, pw: pw + W]


def _fold_by_index(cols: torch.Tensor, in_hw, stride, padding) -> torch.Tensor:
    """:func:`fold_patches` as one ``index_add_`` of the columns onto a zero canvas."""
    N, C = cols.shape[:2]
    canvas = fold_canvas(N, C, cols.shape[2:], in_hw, stride, padding, cols)
    fold_onto(canvas, cols, stride, padding, in_hw)
    return canvas_image(canvas, N, C, cols.shape[2:], in_hw, stride, padding)


def _canvas_hw(khwo, in_hw, stride, padding) -> tuple[int, int]:
    """The canvas a fold writes onto: every column's position and the padded image fit."""
    kh, kw, ho, wo = khwo
    (H, W), (sh, sw), (ph, pw) = in_hw, stride, padding
    return max((ho - 1) * sh + kh, ph + H), max((wo - 1) * sw + kw, pw + W)


def fold_canvas(n: int, c: int, khwo, in_hw, stride, padding, like: torch.Tensor) -> torch.Tensor:
    """The zero canvas ``[n * c, hc * wc]`` of :func:`fold_onto` for ``n`` images of ``c`` channels
    and columns ``[*, c, kh, kw, Ho, Wo]`` (``khwo = (kh, kw, Ho, Wo)``)."""
    hc, wc = _canvas_hw(khwo, in_hw, stride, padding)
    return like.new_zeros(n * c, hc * wc)


def fold_onto(canvas: torch.Tensor, cols: torch.Tensor, stride, padding, in_hw) -> None:
    """Scatter-add ``cols [N, C, kh, kw, Ho, Wo]`` onto ``canvas``'s rows ``[N * C, hc * wc]`` (a
    piece of a :func:`fold_canvas`: its rows are a view) in place."""
    N, C, kh, kw, ho, wo = cols.shape
    _, wc = _canvas_hw((kh, kw, ho, wo), in_hw, stride, padding)
    idx = _canvas_index(kh, kw, ho, wo, stride[0], stride[1], wc, cols.device)
    canvas.index_add_(1, idx, cols.reshape(N * C, kh * kw * ho * wo))


def canvas_image(canvas: torch.Tensor, n: int, c: int, khwo, in_hw, stride, padding) -> torch.Tensor:
    """The images ``[n, c, H, W]`` on a canvas (a view: the padding's entries left out)."""
    hc, wc = _canvas_hw(khwo, in_hw, stride, padding)
    (H, W), (ph, pw) = in_hw, padding
    return canvas.view(n, c, hc, wc)[:, :, ph: ph + H, pw: pw + W]


@functools.lru_cache(maxsize=64)
def _canvas_index(kh, kw, ho, wo, sh, sw, wc, device) -> torch.Tensor:
    """Flat canvas position of every column entry ``[ki, kj, oh, ow]``: ``(oh*sh + ki, ow*sw + kj)``."""
    ar = lambda n: torch.arange(n, device=device)  # noqa: E731
    rows = ar(ho).view(1, 1, -1, 1) * sh + ar(kh).view(-1, 1, 1, 1)
    cols = ar(wo).view(1, 1, 1, -1) * sw + ar(kw).view(1, -1, 1, 1)
    return (rows * wc + cols).reshape(-1)


def patch_index_map(out_chw, in_chw, k_hw, stride, padding, device):
    """For every patches-core position ``[Co, Ho, Wo, Ci, kh, kw]`` (flattened):
    (row, col) in the dense matrix and a validity mask (inside the input)."""
    (co, ho, wo), (ci, H, W), (kh, kw), (sh, sw), (ph, pw) = out_chw, in_chw, k_hw, stride, padding
    ar = lambda n: torch.arange(n, device=device)  # noqa: E731
    C_o = ar(co).view(-1, 1, 1, 1, 1, 1)
    OH = ar(ho).view(1, -1, 1, 1, 1, 1)
    OW = ar(wo).view(1, 1, -1, 1, 1, 1)
    C_i = ar(ci).view(1, 1, 1, -1, 1, 1)
    KI = ar(kh).view(1, 1, 1, 1, -1, 1)
    KJ = ar(kw).view(1, 1, 1, 1, 1, -1)
    ih = OH * sh - ph + KI
    iw = OW * sw - pw + KJ
    valid = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    shape = (co, ho, wo, ci, kh, kw)
    row = ((C_o * ho + OH) * wo + OW).expand(shape)
    col = ((C_i * H + ih.clamp(0, max(H - 1, 0))) * W + iw.clamp(0, max(W - 1, 0))).expand(shape)
    valid = valid.expand(shape)
    return row.reshape(-1), col.reshape(-1), valid.reshape(-1)


@functools.lru_cache(maxsize=64)
def footprint_valid(out_hw, in_hw, k_hw, stride, padding, device) -> tuple[torch.Tensor, bool, bool]:
    """Which patches-core positions ``[1, Ho, Wo, 1, kh, kw]`` fall inside the input (the others
    are the zero padding: unmapped), whether all do, and whether some row of the matrix has a hole
    (an input position its kernel does not reach)."""
    (ho, wo), (H, W), (kh, kw), (sh, sw), (ph, pw) = out_hw, in_hw, k_hw, stride, padding
    ih = torch.arange(ho, device=device)[:, None] * sh - ph + torch.arange(kh, device=device)[None]
    iw = torch.arange(wo, device=device)[:, None] * sw - pw + torch.arange(kw, device=device)[None]
    okh = (ih >= 0) & (ih < H)  # [Ho, kh]
    okw = (iw >= 0) & (iw < W)  # [Wo, kw]
    valid = okh[:, None, :, None] & okw[None, :, None, :]  # [Ho, Wo, kh, kw]
    has_hole = bool(valid.reshape(ho * wo, -1).sum(1).min() < H * W) if ho * wo else False
    return valid[None, :, :, None], bool(valid.all()), has_hole
