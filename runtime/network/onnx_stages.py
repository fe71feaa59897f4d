"""The values the ONNX loader tracks, and the pending linear stages that compose into layers.

Every ONNX value the loader (:mod:`cfruntime.network.onnx_loader`) has met is a :class:`_Const`
(numpy) or a :class:`_Lin`: one layer's output followed by pending linear *stages* -- a gather
(:class:`_GStage`: ``y[i] = scale[i] * x[index[i]] + shift[i]``), a dense map (:class:`_DStage`:
``y = W x + b``) or a 2-D convolution (:class:`_CStage`).  :func:`_compose` merges two consecutive
stages into one when the result is exact and stays in one of these forms (see the loader's module
docstring for which pairs merge); the loader turns what remains into ``'affine'`` layers.

Example: ``Sub(mean) -> Div(std) -> Flatten -> Gemm`` is gather, gather, gather, dense: the gathers
merge into one, which merges into the dense stage: one affine layer ``W' x + b'``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from cfruntime.network.graph import _prod


@dataclass
class _Const:
    value: np.ndarray


@dataclass
class _GStage:
    index: np.ndarray  # [n_out] int64
    scale: np.ndarray  # [n_out] float64
    shift: np.ndarray  # [n_out] float64
    in_size: int
    out_shape: tuple

    def is_order_preserving(self) -> bool:
        return self.index.shape[0] == self.in_size and bool(np.all(self.index == np.arange(self.in_size)))

    def is_identity(self) -> bool:
        return self.is_order_preserving() and bool(np.all(self.scale == 1.0)) and bool(np.all(self.shift == 0.0))


@dataclass
class _DStage:
    W: np.ndarray  # [n_out, n_in]
    b: np.ndarray  # [n_out]
    out_shape: tuple

    @property
    def in_size(self) -> int:
        return self.W.shape[1]


@dataclass
class _CStage:
    kernel: np.ndarray  # [O, C, kh, kw]
    bias: np.ndarray  # [n_out] per neuron
    stride: tuple
    pads: tuple  # (top, left, bottom, right)
    dilation: tuple
    in_shape: tuple
    out_shape: tuple
    from_pool: bool = False  # an AveragePool (may be unrolled into a following dense stage)

    @property
    def in_size(self) -> int:
        return _prod(self.in_shape)

    def dense(self) -> np.ndarray:
        n = self.in_size
        eye = np.eye(n).reshape(n, *self.in_shape)
        t = torch.from_numpy(eye)
        t = F.pad(t, (self.pads[1], self.pads[3], self.pads[0], self.pads[2]))
        y = F.conv2d(t, torch.from_numpy(np.ascontiguousarray(self.kernel)), stride=self.stride, dilation=self.dilation)
        return y.reshape(n, -1).numpy().T.copy()


@dataclass(eq=False)
class _Lin:
    """A value computed from one layer by pending linear stages.

    ``shape`` is the value's full ONNX shape for one sample: with a batch dimension of size 1 first
    when ``lead == 1`` (a batched model, or a value made by an op that has one, such as Conv), the
    plain shape when ``lead == 0`` (a model whose input has no batch dimension).  ``inner`` (the
    shape without the batch dimension) is the shape of the layer that holds the value.
    """

    src: int  # layer index
    shape: tuple
    stages: list = field(default_factory=list)
    lead: int = 1

    @property
    def inner(self) -> tuple:
        return tuple(self.shape[self.lead:])

    @property
    def size(self) -> int:
        return _prod(self.shape[self.lead:])


def _conv_np(x: np.ndarray, kernel: np.ndarray, stride, pads, dilation) -> np.ndarray:
    """conv of one [C,H,W] image (float64) -> [O,OH,OW]."""
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))[None]
    t = F.pad(t, (pads[1], pads[3], pads[0], pads[2]))
    y = F.conv2d(t, torch.from_numpy(np.ascontiguousarray(kernel, dtype=np.float64)), stride=stride, dilation=dilation)
    return y[0].numpy()


def _per_channel(vec: np.ndarray, shape: tuple) -> np.ndarray | None:
    """If ``vec`` (flat over ``shape`` = (C,H,W)) is constant over each channel, return [C]."""
    if len(shape) != 3:
        return None
    v = vec.reshape(shape)
    c = v[:, :1, :1]
    if np.all(v == c):
        return c.reshape(-1).copy()
    return None


def _compose(prev, new, limit_cells: int = 1 << 26):
    """Merge stage ``new`` (applied after ``prev``) into one stage, or return None."""
    if isinstance(new, _GStage):
        if isinstance(prev, _GStage):
            return _GStage(prev.index[new.index], new.scale * prev.scale[new.index],
                           new.scale * prev.shift[new.index] + new.shift, prev.in_size, new.out_shape)
        if isinstance(prev, _DStage):
            if new.index.shape[0] * prev.W.shape[1] > max(limit_cells, prev.W.size):
                return None  # a gather that repeats rows: kept apart, the dense map's rows not copied
            return _DStage(prev.W[new.index] * new.scale[:, None], prev.b[new.index] * new.scale + new.shift, new.out_shape)
        if isinstance(prev, _CStage):
            if not new.is_order_preserving():
                return None
            sc = _per_channel(new.scale, prev.out_shape)
            if sc is None:
                return None
            return _CStage(prev.kernel * sc[:, None, None, None], prev.bias * new.scale + new.shift, prev.stride, prev.pads,
                           prev.dilation, prev.in_shape, prev.out_shape, prev.from_pool)
    if isinstance(new, _DStage):
        if isinstance(prev, _GStage):
            n_src = prev.in_size
            Ws = new.W * prev.scale[None, :]
            if new.W.shape[0] * n_src > limit_cells:
                return None
            W = np.zeros((new.W.shape[0], n_src))
            idx = prev.index
            if idx.shape[0] == n_src and np.unique(idx).shape[0] == n_src:
                W[:, idx] = Ws
            else:
                np.add.at(W.T, idx, Ws.T)
            return _DStage(W, new.W @ prev.shift + new.b, new.out_shape)
        if isinstance(prev, _DStage):
            if new.W.shape[0] * prev.W.shape[1] > limit_cells:
                return None
            return _DStage(new.W @ prev.W, new.W @ prev.b + new.b, new.out_shape)
        if isinstance(prev, _CStage) and prev.from_pool and _prod(prev.out_shape) * prev.in_size <= limit_cells // 4:
            return _DStage(new.W @ prev.dense(), new.W @ prev.bias + new.b, new.out_shape)
        return None  # keep convolutions as convolutions
    if isinstance(new, _CStage):
        if isinstance(prev, _GStage) and not any(new.pads) and prev.is_order_preserving():
            sc = _per_channel(prev.scale, new.in_shape)
            if sc is None:
                return None
            kernel = new.kernel * sc[None, :, None, None]
            bias = new.bias + _conv_np(prev.shift.reshape(new.in_shape), new.kernel, new.stride, new.pads, new.dilation).reshape(-1)
            return _CStage(kernel, bias, new.stride, new.pads, new.dilation, new.in_shape, new.out_shape)
        return None
    return None


def _slice_positions(dim: int, start: int, end: int, step: int) -> np.ndarray:
    """The positions ONNX Slice selects along one axis of size ``dim`` (negative ``start``/``end``
    count from the end, then clamp: ``[0, dim]`` for a positive ``step``, ``[-1, dim - 1]`` for a
    negative one)."""
    start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return np.arange(start, end, step, dtype=np.int64)


def _gather_rows(stage, rows: np.ndarray):
    """``(index, scale, shift)`` of the rows ``rows`` of a gather stage."""
    return stage.index[rows], stage.scale[rows], stage.shift[rows]


def _dense_rows(stage, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` of the rows ``rows`` of a gather, dense or conv stage as a dense map."""
    if isinstance(stage, _GStage):
        W = np.zeros((rows.shape[0], stage.in_size))
        W[np.arange(rows.shape[0]), stage.index[rows]] = stage.scale[rows]
        return W, stage.shift[rows]
    if isinstance(stage, _DStage):
        return stage.W[rows], stage.b[rows]
    return stage.dense()[rows], stage.bias[rows]


def _joined_conv(stages: list) -> tuple | None:
    """Convolutions of one tensor joined along their output channels as one convolution, or None.

    They need the same input, stride, dilation and output size.  Each kernel is placed in one window
    covering all of theirs (top/left padding the largest of theirs; a kernel whose own padding is
    smaller starts that much later, in steps of the dilation, zeros around it), so every output reads
    the same inputs, or zero padding, as before: exact.  Returns ``(kernel, stride, pads, dilation,
    in_shape, out_shape)``."""
    first = stages[0]
    if any((st.stride, st.dilation, st.in_shape, st.out_shape[1:]) != (first.stride, first.dilation, first.in_shape,
                                                                       first.out_shape[1:]) for st in stages):
        return None
    (sh, sw), (dh, dw) = first.stride, first.dilation
    top, left = max(st.pads[0] for st in stages), max(st.pads[1] for st in stages)
    offsets = [((top - st.pads[0]), (left - st.pads[1])) for st in stages]
    if any(oy % dh or ox % dw for oy, ox in offsets):
        return None
    offsets = [(oy // dh, ox // dw) for oy, ox in offsets]
    kh = max(oy + st.kernel.shape[2] for st, (oy, _) in zip(stages, offsets))
    kw = max(ox + st.kernel.shape[3] for st, (_, ox) in zip(stages, offsets))
    C, H, W = first.in_shape
    oh, ow = first.out_shape[1:]
    bottom = max(0, (oh - 1) * sh - top + (kh - 1) * dh - H + 1)  # the last window ends inside the padding
    right = max(0, (ow - 1) * sw - left + (kw - 1) * dw - W + 1)
    if ((H + top + bottom - (kh - 1) * dh - 1) // sh + 1, (W + left + right - (kw - 1) * dw - 1) // sw + 1) != (oh, ow):
        return None
    kernels = []
    for st, (oy, ox) in zip(stages, offsets):
        k = np.zeros((st.kernel.shape[0], C, kh, kw))
        k[:, :, oy:oy + st.kernel.shape[2], ox:ox + st.kernel.shape[3]] = st.kernel
        kernels.append(k)
    out = (sum(st.out_shape[0] for st in stages), oh, ow)
    return np.concatenate(kernels), first.stride, (top, left, bottom, right), first.dilation, first.in_shape, out
