"""A network's real-valued tensors -- weights, biases, convolution kernels, gather scales -- as one list.

The compiled engine's bounds are differentiable functions of these tensors (and of the input box):
give any of them ``requires_grad`` and back-propagate through the bounds.  Three helpers:

* :func:`network_tensors` -- the tensors in a fixed order (layer by layer: weight or kernel or
  scale, then bias), e.g. to hand them to ``torch.autograd.gradcheck``;
* :func:`with_tensors` -- a copy of the network holding other tensors in their places (same
  structure), e.g. the ones gradcheck perturbs;
* :func:`fresh_views` -- a copy whose gradient-carrying tensors are new views of the same storage.

Why fresh views: the engine keeps what it derives from a parameter (a dtype cast, an unrolled or
blocked matrix, ``|W|``) *on the tensor object* (:mod:`cfruntime.flow.parameters`,
:mod:`cfruntime.flow.widening`), so that later batches reuse it.  A derived value that is part of an
autograd graph must not outlive its run (the graph is freed by ``backward``, and a tensor changed in
place would leave it stale), so a run that wants gradients gives every derived value a fresh object
to live on: ``t.view_as(t)`` shares the storage and passes the gradient to ``t``.
"""

from __future__ import annotations

import dataclasses

import torch

from cfruntime.network.graph import Layer, Network

#: ``(holder attribute or None for the layer itself, tensor attribute)`` in list order.
_SLOTS = ((None, "weight"), ("conv", "kernel"), ("gather", "scale"), (None, "bias"))


def _slots(layer: Layer):
    for holder, attr in _SLOTS:
        obj = layer if holder is None else getattr(layer, holder)
        if obj is not None and isinstance(getattr(obj, attr, None), torch.Tensor):
            yield holder, attr, getattr(obj, attr)


def network_tensors(network: Network) -> list[torch.Tensor]:
    """Every weight, kernel, scale and bias of ``network``, layer by layer."""
    return [t for layer in network.layers for _, _, t in _slots(layer)]


def _replaced(layer: Layer, new: dict) -> Layer:
    """``layer`` with ``new[(holder, attr)]`` in those slots (a holder spec is copied, not changed)."""
    holders = {}
    for (holder, attr), t in new.items():
        if holder is not None:
            holders.setdefault(holder, {})[attr] = t
    kw = {attr: t for (holder, attr), t in new.items() if holder is None}
    kw.update({h: dataclasses.replace(getattr(layer, h), **attrs) for h, attrs in holders.items()})
    return dataclasses.replace(layer, **kw) if kw else layer


def _rebuilt(network: Network, layers: list[Layer]) -> Network:
    return Network(layers, source=network.source, notices=network.notices, input_name=network.input_name,
                   margin=network.margin, margin_folded=network.margin_folded)


def with_tensors(network: Network, tensors) -> Network:
    """A copy of ``network`` holding ``tensors`` (in :func:`network_tensors` order, same shapes)."""
    tensors = list(tensors)
    want = sum(1 for layer in network.layers for _ in _slots(layer))
    if len(tensors) != want:
        raise ValueError(f"the network holds {want} tensors, {len(tensors)} were given")
    it = iter(tensors)
    layers = []
    for layer in network.layers:
        new = {}
        for holder, attr, old in _slots(layer):
            t = next(it)
            if tuple(t.shape) != tuple(old.shape):
                raise ValueError(f"layer {layer.index} {holder or 'layer'}.{attr}: shape {tuple(t.shape)} given, "
                                 f"{tuple(old.shape)} expected")
            new[holder, attr] = t
        layers.append(_replaced(layer, new))
    return _rebuilt(network, layers)


def requires_grad(network: Network) -> bool:
    """Whether any tensor of ``network`` asks for a gradient."""
    return any(t.requires_grad for t in network_tensors(network))


def fresh_views(network: Network) -> Network:
    """A copy of ``network`` in which every tensor that requires a gradient is a new view of itself
    (see the module docstring); the others are shared."""
    layers = []
    for layer in network.layers:
        new = {(h, a): t.view_as(t) for h, a, t in _slots(layer) if t.requires_grad}
        layers.append(_replaced(layer, new))
    return _rebuilt(network, layers)
