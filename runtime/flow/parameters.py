"""A network's weights and biases as the engine uses them, made once per tensor and setting.

Converting a layer's parameters (dtype, device, a convolution block or an unrolled matrix) on every
call would cost a host-to-device copy per layer and batch on a GPU, and a few tensor operations per
layer on any device.  They are made on first use and kept on the source tensor (or convolution spec)
itself, keyed by the representation kind, dtype and device and made again when the tensor was
written in place (its ``_version``): the copies of a network that ``Network.with_margin_layer`` makes
for every batch share their layers' tensors, so only the new margin layer's parameters are converted
again.  A run that wants gradients converts every gradient-carrying tensor afresh (it sees fresh
views of them, :func:`cfruntime.network.tensors.fresh_views`).
"""

from __future__ import annotations

import torch

from cfruntime.flow.representation import Representation
from cfruntime.tensor import Segmented
from cfruntime.tensor.segmented_ops import mark_constant


def _version(source) -> int:
    """The in-place version of the tensor(s) ``source`` stands for: a tensor, a convolution's kernel,
    a gather's scale (``optimizer.step()`` writes into a model's parameters in place)."""
    t = source if isinstance(source, torch.Tensor) else getattr(source, "kernel", getattr(source, "scale", None))
    return t._version if isinstance(t, torch.Tensor) else 0


def _cache(source, rep: Representation) -> dict:
    """The converted values kept on ``source`` for ``rep``'s setting, emptied when ``source`` was
    written in place since they were made (a cast or blocked copy would be stale)."""
    per_source = source.__dict__.setdefault("_engine_parameters", {})
    key, version = (rep.kind, rep.dtype, rep.device), _version(source)
    hit = per_source.get(key)
    if hit is None or hit[0] != version:
        hit = per_source[key] = (version, {})
    return hit[1]


def _batched_cache(layer, rep: Representation) -> dict:
    """A batch's own layer's converted parameters, kept on that layer object (a new one per batch; a
    CUDA graph's layer keeps the captured conversion, replayed on its refilled buffers): the rule and
    the widening read them once."""
    per_layer = layer.__dict__.setdefault("_engine_batched", {})
    return per_layer.setdefault((rep.kind, rep.dtype, rep.device, id(layer.weight), id(layer.bias)), {})


def _constant(w):
    """Mark a converted parameter (its parts) as never changing, so derived values may be kept on it."""
    if w is None:
        return w
    parts = w.parts.values() if isinstance(w, Segmented) else [w]
    for p in parts:
        mark_constant(p)
    return w


def weight(layer, rep: Representation):
    """``[1, size, pred]`` (``[B, size, pred]`` for a batched layer), or one block: a convolution's, a
    gather's -- a diagonal where it scales each neuron in place (an input normalisation), else a selection
    (a transposed convolution's phases interleaved, an upsampling, a slice; never its ``size x pred``
    matrix)."""
    if layer.linear_kind == "conv" and rep.sparse:
        cache = _cache(layer.conv, rep)
        if "block" not in cache:
            cache["block"] = _constant(rep.conv_weight(layer.conv))  # None: not one convolution block
        if cache["block"] is not None:
            return cache["block"]
    if layer.linear_kind == "gather" and rep.sparse:
        cache = _cache(layer.gather, rep)
        if "block" not in cache:
            g = layer.gather
            in_place = g.in_size == g.index.shape[0] and torch.equal(g.index, torch.arange(g.in_size))
            cache["block"] = _constant(rep.diagonal_weight(g.scale) if in_place else rep.select_weight(g))
        if cache["block"] is not None:
            return cache["block"]
    if layer.batched:  # a batch's own (margin) layer, maybe a CUDA graph's buffer: converted once per layer object
        cache = _batched_cache(layer, rep)
        if "weight" not in cache:
            w = layer.weight.to(rep.dtype)
            cache["weight"] = rep.tensor(w) if rep.sparse else w.to(rep.device)
        return cache["weight"]
    source = layer.weight if layer.linear_kind == "dense" else (layer.conv if layer.linear_kind == "conv" else layer.gather)
    cache = _cache(source, rep)
    if "matrix" not in cache:
        w = layer.weight_matrix().to(rep.dtype).unsqueeze(0)
        cache["matrix"] = _constant(rep.tensor(w) if rep.sparse else w.to(rep.device))
    return cache["matrix"]


def alpha(layer, rep: Representation) -> torch.Tensor:
    """``[1, size]``: the layer's ``alpha`` (LeakyRelu's negative slope, Elu's scale) for every neuron,
    0 for a layer without one.  Kept on the layer (one small tensor per dtype and device)."""
    cache = _cache(layer, rep)
    if "alpha" not in cache:
        value = getattr(layer, "alpha", None)
        cache["alpha"] = torch.full((1, layer.size), float(value or 0.0), dtype=rep.dtype, device=rep.device)
    return cache["alpha"]


def bias(layer, rep: Representation) -> torch.Tensor:
    """``[1, size]`` (``[B, size]`` for a batched layer)."""
    if layer.batched:
        cache = _batched_cache(layer, rep)
        if "bias" not in cache:
            cache["bias"] = layer.bias.to(rep.dtype).to(rep.device)
        return cache["bias"]
    cache = _cache(layer.bias, rep)
    if "bias" not in cache:
        b = layer.bias.to(rep.dtype).to(rep.device)
        cache["bias"] = _constant(b.unsqueeze(0) if b.dim() == 1 else b)
    return cache["bias"]
