"""A network's weights and biases as the engine uses them, made once per layer and setting.

Converting a layer's parameters (dtype, device, a convolution block or an unrolled matrix) on every
call would cost a host-to-device copy per layer and batch on a GPU, and a few tensor operations per
layer on any device.  They are made on first use and kept on the layer object (a ``Layer`` is
immutable once loaded), keyed by the representation kind, dtype and device; a network made per batch
(the margin layer of :meth:`Network.with_margin_layer`) only carries its new layer's.
"""

from __future__ import annotations

import torch

from cfruntime.flow.representation import Representation


def _cache(layer, rep: Representation) -> dict:
    per_layer = layer.__dict__.setdefault("_engine_parameters", {})
    return per_layer.setdefault((rep.kind, rep.dtype, rep.device), {})


def weight(layer, rep: Representation):
    """``[1, size, pred]`` (``[B, size, pred]`` for a batched layer) or a convolution block."""
    cache = _cache(layer, rep)
    if "weight" not in cache:
        conv = rep.conv_weight(layer.conv) if rep.sparse and layer.linear_kind == "conv" else None
        if conv is not None:  # a convolution block, never unrolled
            cache["weight"] = conv
        else:
            w = layer.weight.to(rep.dtype) if layer.batched else layer.weight_matrix().to(rep.dtype).unsqueeze(0)
            cache["weight"] = rep.tensor(w) if rep.sparse else w.to(rep.device)
    return cache["weight"]


def bias(layer, rep: Representation) -> torch.Tensor:
    """``[1, size]`` (``[B, size]`` for a batched layer)."""
    cache = _cache(layer, rep)
    if "bias" not in cache:
        b = layer.bias.to(rep.dtype).to(rep.device)
        cache["bias"] = b.unsqueeze(0) if b.dim() == 1 else b
    return cache["bias"]
