"""The layer graph the runtime (interpreter and compiled code) runs over.

A :class:`Network` is a list of :class:`Layer` objects in topological order.
Layer 0 is the input layer; every other layer has a ConstraintFlow layer
number equal to its position (``layer.index``), so ``n[layer]`` of a neuron is
the index of the layer that contains it.  Neurons are numbered globally: the
neurons of layer ``k`` are ``layer.offset .. layer.offset + layer.size - 1``
(input layer first).  Every layer's values are handled *flattened* (row-major
over ``layer.shape``) as ``[batch, size]`` tensors.

Layer kinds
-----------
``'input'``    no predecessors.
``'affine'``   ``y = W x + b`` of its single predecessor ``x`` (flattened).
               How ``W`` is stored is ``layer.linear_kind``:

               * ``'dense'``  ``layer.weight``: ``[size, pred_size]`` (or, for a
                 per-sample margin layer, ``[batch, size, pred_size]`` with
                 ``layer.bias`` ``[batch, size]``; ``layer.batched`` is True);
               * ``'conv'``   ``layer.conv``: a :class:`ConvSpec` (2-D
                 convolution, group 1, asymmetric zero padding);
               * ``'gather'`` ``layer.gather``: a :class:`GatherSpec`
                 (``y[i] = scale[i] * x[index[i]] + b[i]``: diagonal
                 normalisation layers and permutations).

               ``weight_matrix()`` always returns the dense matrix (unrolling
               convolutions: this can be large), ``matvec``/``rmatvec``
               apply ``W`` / ``W^T`` without building it.
``'relu'``, ``'sigmoid'``, ``'tanh'``, ``'leakyrelu'``, ``'elu'``, ``'softplus'``, ``'abs'``,
``'relu6'``, ``'hardtanh'``
               elementwise of the single predecessor (same size; the shape may
               differ by a reshape); :data:`ELEMENTWISE_FUNCTIONS` gives each
               one's concrete function.  Issue 27 added ``'sign'`` (-1, 0, 1),
               ``'floor'``, ``'sin'``, ``'cos'``, ``'exp'`` and ``'reciprocal'``
               (``1/x``; a Softmax is ``1 / sum_j exp(x_j - x_i)``).  ``layer.alpha`` is LeakyRelu's slope
               for ``x < 0`` and Elu's ``alpha`` (``alpha * (exp(x) - 1)`` for
               ``x < 0``), None for the other kinds.  ``relu6`` is
               ``min(max(x, 0), 6)``, ``hardtanh`` is ``min(max(x, -1), 1)``,
               ``softplus`` is ``log(1 + exp(x))``.
``'maxpool'``  ``layer.maxpool``: a :class:`MaxPoolSpec` whose ``index_map``
               ``[size, window]`` lists, for every output neuron, the
               predecessor neurons in its window (``-1`` = padding).
``'add'``      elementwise sum of its two predecessors (residual joins).
``'mul'``      elementwise product of its two predecessors (``Mul``/``MatMul`` of two
               perturbed values, ``Pow`` with an integer exponent; the two may be one layer).
               :data:`BINARY_FUNCTIONS` gives ``add`` and ``mul`` concretely.

All weights are stored in float64; evaluation runs in the dtype of the input
(float32 or float64).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F

from cfruntime.errors import PropertyError

AFFINE_KINDS = ("dense", "conv", "gather")
ELEMENTWISE_KINDS = ("relu", "sigmoid", "tanh", "leakyrelu", "elu", "softplus", "abs", "relu6", "hardtanh", "sign", "floor",
                     "sin", "cos", "exp", "reciprocal")
BINARY_KINDS = ("add", "mul")
LAYER_KINDS = ("input", "affine", "maxpool") + BINARY_KINDS + ELEMENTWISE_KINDS


#: Elementwise kind -> its concrete function ``(x, alpha) -> y`` (``alpha``: the layer's ``alpha``).
ELEMENTWISE_FUNCTIONS = {
    "relu": lambda x, a: torch.relu(x),
    "sigmoid": lambda x, a: torch.sigmoid(x),
    "tanh": lambda x, a: torch.tanh(x),
    "leakyrelu": lambda x, a: torch.where(x >= 0, x, x * a),
    "elu": lambda x, a: torch.where(x > 0, x, torch.expm1(x) * a),
    "softplus": lambda x, a: torch.logaddexp(x, torch.zeros_like(x)),  # exact everywhere (F.softplus cuts at 20)
    "abs": lambda x, a: torch.abs(x),
    "relu6": lambda x, a: torch.clamp(x, 0.0, 6.0),
    "hardtanh": lambda x, a: torch.clamp(x, -1.0, 1.0),
    "sign": lambda x, a: torch.sign(x),
    "floor": lambda x, a: torch.floor(x),
    "sin": lambda x, a: torch.sin(x),
    "cos": lambda x, a: torch.cos(x),
    "exp": lambda x, a: torch.exp(x),
    "reciprocal": lambda x, a: torch.reciprocal(x),
}
#: Periodic kinds -> (the phase of a maximum, of a minimum): ``f(p + 2 pi k)`` is ``1``, ``-1``.
PERIODIC_EXTREMES = {"sin": (math.pi / 2, -math.pi / 2), "cos": (0.0, math.pi)}
#: Binary kind -> its concrete function of the two predecessors' values.
BINARY_FUNCTIONS = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y}


def binary_image(kind: str, a: tuple[torch.Tensor, torch.Tensor], b: tuple[torch.Tensor, torch.Tensor]):
    """The exact image of the boxes ``a = (lo, hi)``, ``b`` under a binary kind: sums of the ends for
    ``add``; for ``mul`` the smallest and largest of the four products of the ends (a product is
    bilinear, so its extremes over a box are at the corners)."""
    if kind == "add":
        return a[0] + b[0], a[1] + b[1]
    corners = torch.stack([a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]])
    return corners.amin(0), corners.amax(0)


#: The ONNX default ``alpha`` of the kinds that have one.
DEFAULT_ALPHA = {"leakyrelu": 0.01, "elu": 1.0}


def elementwise_image(kind: str, alpha: float | None, lo: torch.Tensor, hi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The exact image ``[min f, max f]`` of every interval ``[lo, hi]`` under the elementwise ``kind``.
    Every kind is monotone (image ``[f(lo), f(hi)]``) except ``abs`` and LeakyRelu/Elu with a negative
    ``alpha``: those are V-shaped with their minimum 0 at 0, so the image is the end points' larger
    value above, and below 0 when the interval contains 0, else the end points' smaller value."""
    f = ELEMENTWISE_FUNCTIONS[kind]
    fl, fh = f(lo, alpha), f(hi, alpha)
    if kind == "abs" or (kind in DEFAULT_ALPHA and alpha is not None and alpha < 0):
        low = torch.where((lo < 0) & (hi > 0), torch.zeros_like(fl), torch.minimum(fl, fh))
        return low, torch.maximum(fl, fh)
    if kind in PERIODIC_EXTREMES:  # 1 (-1) where a maximum (minimum) lies in [lo, hi], else the ends
        peak, trough = PERIODIC_EXTREMES[kind]
        up = torch.where(_contains_phase(lo, hi, peak), torch.ones_like(fl), torch.maximum(fl, fh))
        down = torch.where(_contains_phase(lo, hi, trough), -torch.ones_like(fl), torch.minimum(fl, fh))
        return down, up
    if kind == "reciprocal":  # decreasing on each side of 0; unbounded across it
        across = (lo <= 0) & (hi >= 0)
        inf = torch.full_like(fl, math.inf)
        return torch.where(across, -inf, fh), torch.where(across, inf, fl)
    return fl, fh


#: beyond this magnitude the float 2 pi has drifted from the real one by more than the margin below: every
#: interval is taken to hold an extremum (the image widens to [-1, 1], never narrows)
_PHASE_RANGE = 1e6
#: the margin, in radians, on both ends of the test (the drift of ``k * float(2 pi)`` for ``|k| < 1e6``
#: is below 1e-9)
_PHASE_MARGIN = 1e-8


def _contains_phase(lo: torch.Tensor, hi: torch.Tensor, p: float) -> torch.Tensor:
    """Whether some ``p + 2 pi k`` lies in ``[lo, hi]``, erring towards yes (a margin on both ends, and yes
    outside ``[-1e6, 1e6]``: the float ``2 pi`` drifts from the real one far out)."""
    tau = 2 * math.pi
    near = p + tau * torch.floor((hi + _PHASE_MARGIN - p) / tau) >= lo - _PHASE_MARGIN
    return near | (lo.abs() > _PHASE_RANGE) | (hi.abs() > _PHASE_RANGE)


def _prod(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


@dataclass
class ConvSpec:
    """A 2-D convolution ``out = conv(pad(in), kernel)`` (no bias; the bias is
    the layer's ``bias``, one value per output neuron).

    ``padding`` is ``(top, left, bottom, right)`` zero padding (ONNX ``pads``
    order ``[top, left, bottom, right]``).  ``bias_per_channel`` is the
    ``[out_c]`` bias when the layer bias is constant over each output
    channel (the usual case), else ``None``.
    """

    kernel: torch.Tensor  # [out_c, in_c, kh, kw] float64
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]
    dilation: tuple[int, int]
    in_shape: tuple[int, int, int]  # (C, H, W)
    out_shape: tuple[int, int, int]  # (O, OH, OW)
    bias_per_channel: torch.Tensor | None = None

    @property
    def in_size(self) -> int:
        return _prod(self.in_shape)

    @property
    def out_size(self) -> int:
        return _prod(self.out_shape)

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, in_size] -> [B, out_size]`` (no bias)."""
        b = x.shape[0]
        t, l, bo, r = self.padding
        xi = x.reshape(b, *self.in_shape)
        if any(self.padding):
            xi = F.pad(xi, (l, r, t, bo))
        k = self.kernel.to(dtype=x.dtype, device=x.device)
        y = F.conv2d(xi, k, stride=self.stride, dilation=self.dilation)
        return y.reshape(b, -1)

    def apply_transpose(self, y: torch.Tensor) -> torch.Tensor:
        """``[B, out_size] -> [B, in_size]``: multiplication by ``W^T``."""
        b = y.shape[0]
        t, l, bo, r = self.padding
        c, h, w = self.in_shape
        k = self.kernel.to(dtype=y.dtype, device=y.device)
        x = F.conv_transpose2d(y.reshape(b, *self.out_shape), k, stride=self.stride, dilation=self.dilation)
        hp, wp = h + t + bo, w + l + r
        x = F.pad(x, (0, max(0, wp - x.shape[-1]), 0, max(0, hp - x.shape[-2])))
        x = x[:, :, t : t + h, l : l + w]
        return x.reshape(b, -1)

    def weight_matrix(self) -> torch.Tensor:
        eye = torch.eye(self.in_size, dtype=self.kernel.dtype, device=self.kernel.device)
        return self.apply(eye).T.contiguous()


@dataclass
class GatherSpec:
    """``W[i, index[i]] = scale[i]``, all other entries 0."""

    index: torch.Tensor  # [size] int64 into the predecessor
    scale: torch.Tensor  # [size] float64
    in_size: int

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, self.index] * self.scale.to(dtype=x.dtype, device=x.device)

    def apply_transpose(self, y: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(y.shape[0], self.in_size, dtype=y.dtype, device=y.device)
        return out.index_add_(1, self.index.to(y.device), y * self.scale.to(dtype=y.dtype, device=y.device))

    def weight_matrix(self) -> torch.Tensor:
        w = torch.zeros(self.index.shape[0], self.in_size, dtype=self.scale.dtype, device=self.scale.device)
        w[torch.arange(self.index.shape[0]), self.index] = self.scale
        return w


@dataclass
class MaxPoolSpec:
    """Max pooling; ``index_map[i]`` are the predecessor neurons (flat indices
    into the predecessor layer) of output neuron ``i``, ``-1`` for padding."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]  # (top, left, bottom, right)
    dilation: tuple[int, int]
    in_shape: tuple[int, int, int]
    out_shape: tuple[int, int, int]
    index_map: torch.Tensor  # [out_size, kh*kw] int64

    def dense_windows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(index, present)``, both ``[out_size, kh*kw]``: ``index_map`` with every padding entry
        replaced by the first neuron of its window (so every entry is a neuron) and the mask of the
        entries that are not padding.  The compiled engine lays a max-pool layer's windows out as one
        rectangular tensor this way; every list operation of a rule masks the padding out."""
        present = self.index_map >= 0
        first = torch.gather(self.index_map, 1, present.to(torch.int64).argmax(dim=1, keepdim=True))
        return torch.where(present, self.index_map, first), present


@dataclass(eq=False)
class Layer:
    index: int
    kind: str
    shape: tuple[int, ...]
    preds: list[int] = field(default_factory=list)
    name: str = ""  # ONNX node name(s) this layer comes from
    offset: int = 0  # set by Network
    linear_kind: str | None = None  # affine only: 'dense' | 'conv' | 'gather'
    weight: torch.Tensor | None = None  # dense affine
    bias: torch.Tensor | None = None  # affine: [size] (or [batch, size] if batched)
    conv: ConvSpec | None = None
    gather: GatherSpec | None = None
    maxpool: MaxPoolSpec | None = None
    alpha: float | None = None  # leakyrelu / elu: the ONNX alpha

    def __post_init__(self):
        if self.alpha is None and self.kind in DEFAULT_ALPHA:
            self.alpha = DEFAULT_ALPHA[self.kind]

    @property
    def size(self) -> int:
        return _prod(self.shape)

    @property
    def neurons(self) -> range:
        """Global neuron indices of this layer."""
        return range(self.offset, self.offset + self.size)

    @property
    def batched(self) -> bool:
        """True for a per-sample (margin) affine layer with weight [batch, size, pred_size]."""
        return self.kind == "affine" and self.linear_kind == "dense" and self.weight is not None and self.weight.dim() == 3

    # -- affine helpers ------------------------------------------------------------------
    def weight_matrix(self) -> torch.Tensor:
        """Dense weight ``[size, pred_size]`` (``[batch, size, pred_size]`` if batched)."""
        if self.kind != "affine":
            raise TypeError(f"layer {self.index} ({self.kind}) has no weight matrix")
        if self.linear_kind == "dense":
            return self.weight
        if self.linear_kind == "conv":
            return self.conv.weight_matrix()
        return self.gather.weight_matrix()

    def matvec(self, x: torch.Tensor, sample_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``W x`` for ``x: [B, pred_size]`` (no bias).  For a batched layer row
        ``r`` of ``x`` uses sample ``sample_ids[r]`` (default: ``r``)."""
        if self.linear_kind == "dense":
            w = self.weight.to(dtype=x.dtype, device=x.device)
            if w.dim() == 3:
                w = _select_samples(w, x.shape[0], sample_ids)
                return torch.einsum("bkp,bp->bk", w, x)
            return x @ w.T
        if self.linear_kind == "conv":
            return self.conv.apply(x)
        return self.gather.apply(x)

    def rmatvec(self, y: torch.Tensor) -> torch.Tensor:
        """``W^T y`` for ``y: [B, size]`` (unbatched layers; batched: per row)."""
        if self.linear_kind == "dense":
            w = self.weight.to(dtype=y.dtype, device=y.device)
            if w.dim() == 3:
                w = _select_samples(w, y.shape[0], None)
                return torch.einsum("bkp,bk->bp", w, y)
            return y @ w
        if self.linear_kind == "conv":
            return self.conv.apply_transpose(y)
        return self.gather.apply_transpose(y)

    def bias_for(self, batch: int, dtype, device=None, sample_ids: torch.Tensor | None = None) -> torch.Tensor:
        b = self.bias.to(dtype=dtype, device=device)
        if b.dim() == 2:
            return _select_samples(b, batch, sample_ids)
        return b

    # -- evaluation ----------------------------------------------------------------------
    def evaluate(self, inputs: list[torch.Tensor], sample_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Concrete value of this layer from its predecessors' values (``[B, size]`` each)."""
        k = self.kind
        if k == "affine":
            x = inputs[0]
            return self.matvec(x, sample_ids) + self.bias_for(x.shape[0], x.dtype, x.device, sample_ids)
        if k in ELEMENTWISE_FUNCTIONS:
            return ELEMENTWISE_FUNCTIONS[k](inputs[0], self.alpha)
        if k in BINARY_FUNCTIONS:
            return BINARY_FUNCTIONS[k](inputs[0], inputs[1])
        if k == "maxpool":
            x = inputs[0]
            pad = torch.full((x.shape[0], 1), float("-inf"), dtype=x.dtype, device=x.device)
            xp = torch.cat([x, pad], dim=1)
            im = self.maxpool.index_map.to(x.device)
            im = torch.where(im < 0, torch.full_like(im, x.shape[1]), im)
            return xp[:, im].amax(dim=2)
        raise TypeError(f"cannot evaluate layer kind {k!r}")

    def describe(self) -> str:
        extra = ""
        if self.kind == "affine":
            extra = f" {self.linear_kind}"
            if self.conv is not None:
                c = self.conv
                extra += f" k={tuple(c.kernel.shape)} s={c.stride} p={c.padding} d={c.dilation}"
            if self.batched:
                extra += f" batched[{self.weight.shape[0]}]"
        elif self.kind == "maxpool":
            m = self.maxpool
            extra = f" k={m.kernel} s={m.stride} p={m.padding}"
        elif self.alpha is not None:
            extra = f" alpha={self.alpha:g}"
        return f"layer {self.index}: {self.kind}{extra} shape={self.shape} neurons {self.offset}..{self.offset + self.size - 1} preds={self.preds}" + (
            f" ({self.name})" if self.name else ""
        )


def _select_samples(t: torch.Tensor, batch: int, sample_ids: torch.Tensor | None) -> torch.Tensor:
    if sample_ids is not None:
        return t[sample_ids.to(t.device)]
    if t.shape[0] == batch:
        return t
    if t.shape[0] == 1:
        return t.expand(batch, *t.shape[1:])
    raise PropertyError(f"per-sample layer has {t.shape[0]} samples but the input batch has {batch} rows")


class Network:
    """Layer graph; see the module docstring."""

    def __init__(self, layers: list[Layer], *, source: str = "<network>", notices: list[str] | None = None,
                 input_name: str = "input", margin: torch.Tensor | None = None, margin_folded: bool = False):
        self.layers = layers
        self.source = source
        self.notices = list(notices or [])
        self.input_name = input_name
        self.margin = margin  # C used by with_margin_layer, else None
        self.margin_folded = margin_folded
        #: the ONNX model's Softmax at the output was dropped (its bounds are on the logits): exact for
        #: properties that only compare outputs (:meth:`VnnlibProperty.compares_outputs_only`)
        self.output_softmax_dropped = False
        off = 0
        for i, layer in enumerate(layers):
            if layer.index != i:
                raise ValueError(f"layer {i} has index {layer.index}")
            if (i == 0) != (layer.kind == "input"):
                raise ValueError("layer 0 (and only layer 0) must be the input layer")
            if layer.kind not in LAYER_KINDS:
                raise ValueError(f"unknown layer kind {layer.kind!r}")
            for p in layer.preds:
                if not 0 <= p < i:
                    raise ValueError(f"layer {i}: predecessor {p} is not earlier in topological order")
            layer.offset = off
            off += layer.size

    # -- structure -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    def __getitem__(self, i: int) -> Layer:
        return self.layers[i]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.layers[0].shape

    @property
    def input_size(self) -> int:
        return self.layers[0].size

    @property
    def output_layer(self) -> Layer:
        return self.layers[-1]

    @property
    def output_size(self) -> int:
        return self.layers[-1].size

    @property
    def num_neurons(self) -> int:
        last = self.layers[-1]
        return last.offset + last.size

    def layer_of_neuron(self, g: int) -> Layer:
        """The layer containing global neuron ``g``."""
        for layer in self.layers:
            if layer.offset <= g < layer.offset + layer.size:
                return layer
        raise IndexError(f"neuron {g} out of range (network has {self.num_neurons})")

    def successors(self, i: int) -> list[int]:
        return [l.index for l in self.layers if i in l.preds]

    def summary(self) -> str:
        lines = [f"network {self.source}: {len(self.layers)} layers, {self.num_neurons} neurons"]
        lines += ["  " + l.describe() for l in self.layers]
        lines += [f"  notice: {n}" for n in self.notices]
        return "\n".join(lines)

    __str__ = summary

    # -- evaluation ----------------------------------------------------------------------
    def _flat_input(self, x: torch.Tensor) -> torch.Tensor:
        n = self.input_size
        if x.dim() >= 1 and tuple(x.shape[1:]) == tuple(self.input_shape):
            return x.reshape(x.shape[0], n)
        if x.dim() == 2 and x.shape[1] == n:
            return x
        if tuple(x.shape) == tuple(self.input_shape) or (x.dim() == 1 and x.shape[0] == n):
            return x.reshape(1, n)
        raise PropertyError(f"input of shape {tuple(x.shape)} does not match the network input shape {self.input_shape}")

    def forward_all(self, x: torch.Tensor, sample_ids: torch.Tensor | None = None) -> list[torch.Tensor]:
        """Values of every layer, each flattened to ``[batch, size]``.

        ``sample_ids`` (``[batch]`` int64) selects the sample of per-sample
        (margin) layers for each row; default: row ``r`` uses sample ``r``.
        """
        vals = [self._flat_input(x)]
        for layer in self.layers[1:]:
            vals.append(layer.evaluate([vals[p] for p in layer.preds], sample_ids))
        return vals

    def forward(self, x: torch.Tensor, sample_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Output layer values ``[batch, output_size]`` (the logits, or margins
        for a network returned by :meth:`with_margin_layer`)."""
        need = {len(self.layers) - 1}
        for layer in reversed(self.layers):
            if layer.index in need:
                need.update(layer.preds)
        vals: dict[int, torch.Tensor] = {0: self._flat_input(x)}
        for layer in self.layers[1:]:
            if layer.index in need:
                vals[layer.index] = layer.evaluate([vals[p] for p in layer.preds], sample_ids)
                for p in layer.preds:  # free values no longer needed
                    if all(s.index <= layer.index for s in self.layers if p in s.preds):
                        vals.pop(p, None)
        return vals[len(self.layers) - 1]

    __call__ = forward

    # -- properties ----------------------------------------------------------------------
    def with_margin_layer(self, C: torch.Tensor, *, fold: bool = True, max_unroll: int = 1 << 24) -> "Network":
        """Network whose output is ``C[b] @ y`` per sample ``b``.

        ``C``: ``[batch, K, output_size]`` (or ``[K, output_size]`` for one
        spec shared by all samples).  When the network ends in an affine layer
        (and ``fold``), ``C`` is folded into it (``W' = C W``, ``b' = C b``) so
        the margins are computed exactly from the last hidden layer;
        otherwise a new affine layer is appended.  The result's last layer is
        a dense affine layer (batched ``[batch, K, pred_size]`` if ``C`` is 3-D).
        """
        last = self.layers[-1]
        # the network's own dtype (float64 unless it was built in another, cfruntime.network.torch_import)
        dtype = last.bias.dtype if last.kind == "affine" and last.bias is not None else torch.float64
        C = torch.as_tensor(C).to(dtype)
        if C.dim() not in (2, 3) or C.shape[-1] != self.output_size:
            raise PropertyError(f"margin matrix of shape {tuple(C.shape)} does not match the network output size {self.output_size}")
        layers = [_copy_layer(l) for l in self.layers]
        k = C.shape[-2]
        can_fold = (
            fold and last.kind == "affine" and not last.batched
            and (last.linear_kind != "conv" or last.size * self.layers[last.preds[0]].size <= max_unroll)
        )
        if can_fold:
            w = last.weight_matrix()
            new = Layer(index=last.index, kind="affine", shape=(k,), preds=list(last.preds), name=(last.name + "+margin").lstrip("+"),
                        linear_kind="dense", weight=(C @ w).contiguous(), bias=(C @ last.bias).contiguous())
            layers[-1] = new
        else:
            nb = C.shape[:-2] + (k,)
            new = Layer(index=len(layers), kind="affine", shape=(k,), preds=[last.index], name="margin",
                        linear_kind="dense", weight=C.contiguous(), bias=torch.zeros(nb, dtype=dtype))
            layers.append(new)
        return Network(layers, source=self.source, notices=self.notices, input_name=self.input_name,
                       margin=C, margin_folded=can_fold)


def _copy_layer(l: Layer) -> Layer:
    return Layer(index=l.index, kind=l.kind, shape=l.shape, preds=list(l.preds), name=l.name, linear_kind=l.linear_kind,
                 weight=l.weight, bias=l.bias, conv=l.conv, gather=l.gather, maxpool=l.maxpool, alpha=l.alpha)
