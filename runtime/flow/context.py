"""One rule invocation's view of the network: what emitted code calls as ``ctx.<name>``.

The context resolves the rule's inputs (``curr``, ``prev``, ``weight``, ``bias``...), the symbolic
sizes of the metadata (``batch``, ``curr``, ``prev``, ``poly`` = all neurons, ``sym`` = all noise
symbols), member and metadata accesses on sets of neurons, the PolyExp ``dot``, the promotion of
neurons/noise symbols to PolyExps/SymExps, and fresh noise symbols.
"""

from __future__ import annotations

import torch

from cfruntime import tensor as gb
from cfruntime.flow.store import ShapeStore
from cfruntime.flow.values import Affine, Neurons


class LayerContext:
    def __init__(self, network, layer, store: ShapeStore, batch: int, sym_start: int, sym_total: int, weights):
        self.network = network
        self.layer = layer
        self.store = store
        self.rep = store.rep
        self.batch = batch
        self.sym_next = sym_start
        self.sym_total = sym_total
        self.weights = weights  # callable: layer -> weight in the engine's representation
        self._sizes = {
            "batch": batch, "curr": layer.size, "poly": store.total, "sym": sym_total,
            "prev": network[layer.preds[0]].size if layer.preds else 0,
        }

    # -- sizes and inputs ----------------------------------------------------------------------------
    def size(self, expr: str) -> int:
        out = 1
        for f in expr.split("*"):
            out *= int(f) if f.isdigit() else self._sizes[f]
        return out

    def _layer_neurons(self, k: int, dim: int, rank: int) -> Neurons:
        layer = self.network[k]
        return Neurons(layer.offset, layer.size, dim, rank)

    def input(self, name: str):
        layer = self.layer
        if name == "curr":
            return self._layer_neurons(layer.index, 1, 2)
        if name == "curr_list":
            return self._layer_neurons(layer.index, 2, 3)
        if name == "prev":
            if layer.kind == "affine":
                return self._layer_neurons(layer.preds[0], 2, 3)
            if len(layer.preds) == 1:
                return self._layer_neurons(layer.preds[0], 1, 2)
            raise NotImplementedError("the list 'prev' of a binary operator is not supported by the compiled engine")
        if name in ("prev_0", "prev_1"):
            return self._layer_neurons(layer.preds[int(name[-1])], 1, 2)
        if name == "weight":
            return self.weights(layer)
        if name == "bias":
            bias = layer.bias if not getattr(layer, "batched", False) else layer.bias
            bias = bias.to(self.rep.dtype).to(self.rep.device)
            return bias.unsqueeze(0) if bias.dim() == 1 else bias
        raise KeyError(f"unknown rule input '{name}'")

    # -- neuron sets -----------------------------------------------------------------------------------
    def all_neurons(self, rank: int) -> Neurons:
        return Neurons(0, self.store.total, rank, rank + 1)

    def all_noise(self, rank: int) -> Neurons:
        return Neurons(0, self.sym_total, rank, rank + 1, noise=True)

    def fresh_noise(self) -> Neurons:
        n = self.layer.size
        start = self.sym_next
        if start + n > self.sym_total:
            raise RuntimeError("more fresh noise symbols than were allocated for this rule")
        self.sym_next += n
        return Neurons(start, n, 1, 2, noise=True)

    def _spread(self, x, n: Neurons, trailing: int):
        """A ``[B, count, *trail]`` tensor laid out like ``n``: ``[B, 1.., count@dim, 1.., *trail]``."""
        for d in range(1, n.dim):
            x = gb.add_dim(x, d)
        for d in range(n.dim + 1, n.rank):
            x = gb.add_dim(x, d)
        return x

    def access(self, n: Neurons, member: str):
        if n.noise:
            raise RuntimeError("noise symbols have no members")
        net = self.network
        if member in ("layer", "last_layer"):
            last = len(net.layers) - 1
            value = (lambda k: float(k)) if member == "layer" else (lambda k: float(k == last))
            return self.rep.per_layer_constant(net.layers, n, value)
        letter = self.store.members[member]
        k = _layer_containing(net, n.start, n.count)
        if k is not None:
            layer = net[k]
            lo = n.start - layer.offset
            stored = self.store.get(k, member)
            if letter == "S":
                stored = self.store.pad_sym(stored, self.sym_total)
            if letter in "PS":
                coeff = stored.coeff if stored.coeff is not None else self.rep.zeros((self.batch, layer.size, self._width(letter)))
                coeff = gb.slice_range(coeff, 1, lo, lo + n.count)
                const = _slice(stored.const, lo, n.count)
                return Affine(self._spread(coeff, n, 1), self._spread(const, n, 0))
            return self._spread(_slice(stored, lo, n.count), n, 0)
        glob = self.store.global_member(member, self.sym_total)
        if letter in "PS":
            coeff = gb.slice_range(glob.coeff, 1, n.start, n.start + n.count)
            return Affine(self._spread(coeff, n, 1), self._spread(glob.const[:, n.start : n.start + n.count], n, 0))
        return self._spread(glob[:, n.start : n.start + n.count], n, 0)

    def _width(self, letter: str) -> int:
        return self.store.total if letter == "P" else self.sym_total

    # -- PolyExp/SymExp constructors -----------------------------------------------------------------
    def dot(self, n: Neurons, w) -> Affine:
        """``neurons.dot(weights)``: the weights become coefficients at the neurons' indices."""
        coeff = self.rep.embed(w, len(w.shape) - 1, n.start, self.store.total)
        return Affine(coeff, 0.0)

    def neuron_to_poly(self, n: Neurons) -> Affine:
        return Affine(self._one_hot(n, self.store.total), 0.0)

    def noise_to_sym(self, n: Neurons) -> Affine:
        return Affine(self._one_hot(n, self.sym_total), 0.0)

    def _one_hot(self, n: Neurons, total: int):
        lead = (1,) * n.dim
        x = self.rep.one_hot(lead, n.count, n.start, total)
        for d in range(n.dim + 1, n.rank):
            x = gb.add_dim(x, d)
        return x


def _layer_containing(net, start: int, count: int) -> int | None:
    for layer in net.layers:
        if layer.offset <= start and start + count <= layer.offset + layer.size:
            return layer.index
    return None


def _slice(x, lo: int, count: int):
    if isinstance(x, (int, float)):
        return x
    if x.shape[1] == count and lo == 0:
        return x
    return gb.slice_range(x, 1, lo, lo + count)
