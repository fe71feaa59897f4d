"""The linear stages of :mod:`cfruntime.network.torch_import`: lazy torch expressions of a module's
tensors, and the exact merging of consecutive linear maps that the ONNX loader does.

A :class:`Lazy` is ``fn(*deps)`` evaluated once per network build; its ``memo`` (one dict per build)
holds the values and the build's dtype (``memo[DTYPE]``; a dependency :data:`MEMO` stands for the memo
itself).  A stage is a :class:`Diag` (``s x + t`` elementwise), a :class:`Dense` (``W x + b``) or a
:class:`Conv` (a 2-D convolution plus a per-neuron bias); :func:`compose` merges a stage into the one
before it exactly where :mod:`cfruntime.network.onnx_loader` merges its ``_GStage``/``_DStage``/
``_CStage`` (so a module and its ONNX export have the same layers), e.g.::

    Dense(W2, b2) after Dense(W1, b1)  ->  Dense(W2 @ W1, W2 @ b1 + b2)
    Diag(s, t) after Conv(K, b)        ->  Conv(K * s[:, None, None, None], b * s + t)   (s per channel)
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from cfruntime.network.graph import _prod

#: the ONNX loader's limit on an unrolled (merged) dense stage, in matrix entries
LIMIT_CELLS = 1 << 26

# ---------------------------------------------------------------------------------------------
# lazy expressions of the module's tensors
# ---------------------------------------------------------------------------------------------
class Lazy:
    """``fn(*deps)`` evaluated once per network build (``memo``: one dict per build)."""

    __slots__ = ("fn", "deps")

    def __init__(self, fn, *deps):
        self.fn, self.deps = fn, deps

    def __call__(self, memo: dict):
        key = id(self)
        if key not in memo:
            memo[key] = self.fn(*(memo if d is MEMO else d(memo) if isinstance(d, Lazy) else d for d in self.deps))
        return memo[key]


#: a dependency that stands for the build's memo itself (for functions of several lazies)
MEMO = object()


#: the memo's key of the build's dtype
DTYPE = "dtype"


def cast(t, dtype):
    return t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t


def lazy(fn, *deps) -> Lazy:
    return Lazy(fn, *deps)


def flat(x, shape: tuple, dtype) -> torch.Tensor:
    """A constant (number or tensor) broadcast over ``shape`` and flattened, in ``dtype``."""
    t = torch.as_tensor(x, dtype=dtype) if not isinstance(x, torch.Tensor) else cast(x, dtype)
    if t.dim() > len(shape):  # a leading batch dimension of 1 (checked when the node was read)
        t = t.reshape(t.shape[t.dim() - len(shape):])
    return t.expand(shape).reshape(-1)


# ---------------------------------------------------------------------------------------------
# linear stages (lazy tensors in the build's dtype, as the ONNX loader's _GStage/_DStage/_CStage)
# ---------------------------------------------------------------------------------------------
@dataclass(eq=False)
class Diag:
    """``y = scale * x + shift`` elementwise over ``shape`` (``scale``/``shift``: flat ``[n]`` lazies,
    None for 1 and 0); ``per_channel``: the scale is one number per channel of a ``(C, H, W)`` shape
    (``channel``: that ``[C]`` lazy)."""

    scale: Lazy | None
    shift: Lazy | None
    shape: tuple
    channel: Lazy | None = None
    name: str = ""

    @property
    def out_shape(self) -> tuple:
        return self.shape

    @property
    def in_size(self) -> int:
        return _prod(self.shape)


@dataclass(eq=False)
class Dense:
    W: Lazy  # [out, in]
    b: Lazy  # [out]
    out_shape: tuple
    in_size: int
    name: str = ""


@dataclass(eq=False)
class Conv:
    kernel: Lazy  # [O, C, kh, kw]
    bias: Lazy  # [O * oh * ow], per neuron
    stride: tuple
    pads: tuple  # (top, left, bottom, right)
    dilation: tuple
    in_shape: tuple
    out_shape: tuple
    from_pool: bool = False
    name: str = ""

    def apply(self, x: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
        """``[N, in_size] -> [N, out_size]`` without bias."""
        t, l, b, r = self.pads
        xi = F.pad(x.reshape(x.shape[0], *self.in_shape), (l, r, t, b))
        return F.conv2d(xi, kernel, stride=self.stride, dilation=self.dilation).reshape(x.shape[0], -1)

    def dense(self, memo) -> torch.Tensor:
        """The unrolled ``[out_size, in_size]`` matrix."""
        n = _prod(self.in_shape)
        k = self.kernel(memo)
        return self.apply(torch.eye(n, dtype=k.dtype, device=k.device), k).T


def _mul(a, b):
    return b if a is None else a if b is None else lazy(operator.mul, a, b)


def compose(prev, new):
    """``new`` after ``prev`` as one stage where the ONNX loader merges them, else None."""
    if isinstance(new, Diag):
        s, t = new.scale, new.shift
        if isinstance(prev, Diag):
            shift = prev.shift if s is None or prev.shift is None else lazy(operator.mul, s, prev.shift)
            shift = t if shift is None else shift if t is None else lazy(operator.add, shift, t)
            return Diag(_mul(prev.scale, s), shift, new.shape, _channel_product(prev, new))
        if isinstance(prev, Dense):
            W = prev.W if s is None else lazy(lambda w, s: w * s[:, None], prev.W, s)
            b = prev.b if s is None else lazy(operator.mul, prev.b, s)
            return Dense(W, b if t is None else lazy(operator.add, b, t), prev.out_shape, prev.in_size)
        if isinstance(prev, Conv) and per_channel(new):
            k = prev.kernel if s is None else lazy(lambda k, c: k * c[:, None, None, None], prev.kernel, new.channel)
            b = prev.bias if s is None else lazy(operator.mul, prev.bias, s)
            return Conv(k, b if t is None else lazy(operator.add, b, t), prev.stride, prev.pads, prev.dilation,
                         prev.in_shape, prev.out_shape, prev.from_pool)
        return None
    if isinstance(new, Dense):
        rows = _prod(new.out_shape)
        if isinstance(prev, Diag):
            if rows * prev.in_size > LIMIT_CELLS:
                return None
            W = new.W if prev.scale is None else lazy(lambda w, s: w * s[None, :], new.W, prev.scale)
            b = new.b if prev.shift is None else lazy(lambda w, t, b: w @ t + b, new.W, prev.shift, new.b)
            return Dense(W, b, new.out_shape, prev.in_size)
        if isinstance(prev, Dense):
            if rows * prev.in_size > LIMIT_CELLS:
                return None
            return Dense(lazy(operator.matmul, new.W, prev.W), lazy(lambda w, b1, b2: w @ b1 + b2, new.W, prev.b, new.b),
                          new.out_shape, prev.in_size)
        if isinstance(prev, Conv) and prev.from_pool and _prod(prev.out_shape) * _prod(prev.in_shape) <= LIMIT_CELLS // 4:
            return Dense(lazy(lambda w, m: w @ m, new.W, Lazy(prev.dense, MEMO)),
                          lazy(lambda w, c, b: w @ c + b, new.W, prev.bias, new.b), new.out_shape, _prod(prev.in_shape))
        return None
    if isinstance(new, Conv) and isinstance(prev, Diag) and not any(new.pads) and per_channel(prev):
        k = new.kernel if prev.scale is None else lazy(lambda k, c: k * c[None, :, None, None], new.kernel, prev.channel)
        b = new.bias
        if prev.shift is not None:
            b = lazy(lambda t, k0, b: b + new.apply(t.reshape(1, -1), k0).reshape(-1), prev.shift, new.kernel, new.bias)
        return Conv(k, b, new.stride, new.pads, new.dilation, new.in_shape, new.out_shape)
    return None


def per_channel(d: Diag) -> bool:
    return d.scale is None or d.channel is not None


def _channel_product(a: Diag, b: Diag) -> Lazy | None:
    """The per-channel scale of ``b`` after ``a`` (None when it is not one)."""
    if not (per_channel(a) and per_channel(b)):
        return None
    if a.scale is None or b.scale is None:
        return b.channel if a.scale is None else a.channel
    return lazy(operator.mul, a.channel, b.channel)
