"""The shape members of every layer analysed so far, and their network-wide views.

Per layer ``k`` (``n_k`` neurons) and member: a Float/Int/Bool member is a ``[B, n_k]`` tensor; a
PolyExp member an :class:`Affine` with coefficients ``[B, n_k, N]`` over all ``N`` neurons; a SymExp
member an :class:`Affine` with coefficients ``[B, n_k, S_k]`` over the ``S_k`` noise symbols that
existed when it was stored (fewer than later: they are padded with zeros when read).

A map or traverse reads a member of *all* neurons; :meth:`ShapeStore.global_member` concatenates the
layers (zeros for layers not analysed yet, whose coefficients in any expression are zero) and caches
the result until the next layer is stored.
"""

from __future__ import annotations

import torch

from cfruntime import tensor as gb
from cfruntime.errors import RuleError
from cfruntime.flow.representation import Representation
from cfruntime.flow.values import Affine


class Pending:
    """A member value not computed yet: ``compute()`` stores it (with the layer's other pending members) when
    it is first read (:mod:`cfruntime.flow.deferred`); a value never read is never computed."""

    def __init__(self, compute):
        self._compute = compute
        self.running = False

    def compute(self) -> None:
        if self.running:  # the layer's own rule reading its bounds: as before they are stored
            raise RuleError("a layer's bounds are read while they are computed")
        self.running = True
        try:
            self._compute()
        finally:
            self.running = False


class ShapeStore:
    def __init__(self, members: list[tuple[str, str, str]], sizes: list[int], batch: int, rep: Representation):
        self.members = {name: letter for name, letter, _ in members}
        self.sizes = sizes
        self.offsets = [sum(sizes[:k]) for k in range(len(sizes))]
        self.total = sum(sizes)
        self.batch = batch
        self.rep = rep
        self.values: dict[str, dict[int, object]] = {name: {} for name, _, _ in members}
        self._global: dict[tuple[str, int], object] = {}
        #: a stored member of one layer seen through a rule's layout (``LayerContext.access``); stored
        #: values never change, so these views stay valid for the whole run
        self.views: dict[tuple, object] = {}
        self.released: set[tuple[int, str]] = set()  # (layer, member) values freed (release)
        self._full_batch = _BatchedOnce(batch)
        #: the run's optimisable parameters (:class:`cfruntime.flow.param_store.ParamStore`) and the
        #: compiled module's ``PARAMS`` (see :mod:`cfruntime.flow.param_reads`)
        self.params = None
        self.param_specs: dict = {}

    def put(self, layer: int, name: str, value) -> None:
        self.values[name][layer] = value
        self._global.clear()

    def replace(self, layer: int, name: str, value) -> None:
        """Store another value of a layer's member (the widening's late correction, before any later
        rule runs); the views of the old one are dropped."""
        old = self.values[name].get(layer)
        ids = {id(v) for v in (old, getattr(old, "coeff", None), getattr(old, "const", None)) if v is not None}
        for key in [k for k, hit in self.views.items()
                    if (k[0] == layer and k[1] == name) or (k[0] == "view" and id(hit[0]) in ids)]:
            del self.views[key]
        self.put(layer, name, value)

    def release(self, layer: int, names: list[str]) -> None:
        """Free a layer's values of the members ``names`` (PolyExp/SymExp members that every rule
        reads through its predecessors only: ``LOCAL_MEMBERS``), once every successor of ``layer``
        has run: DeepZ's noise-symbol coefficients are gigabytes per layer on a CIFAR ConvBig."""
        freed = []
        for name in names:
            value = self.values[name].pop(layer, None)
            freed += [value, getattr(value, "coeff", None), getattr(value, "const", None)]
            self.released.add((layer, name))
        ids = {id(v) for v in freed if v is not None}
        # views of the freed values would keep them alive: (layer, member, ...) and ("view", id, ...)
        for key in [k for k, hit in self.views.items()
                    if (k[0] == layer and k[1] in names) or (k[0] == "view" and id(hit[0]) in ids)]:
            del self.views[key]
        self._global.clear()

    def computed(self, layer: int, name: str) -> bool:
        """Whether layer ``layer``'s member ``name`` holds a value (not a :class:`Pending` one no rule read)."""
        value = self.values[name].get(layer)
        return value is not None and not isinstance(value, Pending)

    def get(self, layer: int, name: str):
        try:
            value = self.values[name][layer]
            if isinstance(value, Pending):
                value.compute()
                value = self.values[name][layer]
            return value
        except KeyError:
            if (layer, name) in self.released:
                raise RuntimeError(f"shape member '{name}' of layer {layer} was freed after its successors ran") from None
            raise RuleError(f"shape member '{name}' of layer {layer} is read before it is computed") from None

    def pad_sym(self, value: Affine, total_sym: int) -> Affine:
        """A stored SymExp with its coefficients extended (with zeros) to ``total_sym`` symbols."""
        c = value.coeff
        if c is None or c.shape[-1] == total_sym:
            return value
        return Affine(gb.embed_range(c, len(c.shape) - 1, 0, total_sym, 0.0), value.const)

    def global_member(self, name: str, total_sym: int = 0):
        """Member ``name`` of all ``N`` neurons: ``[B, N]`` or an Affine with ``[B, N, N|S]``."""
        key = (name, total_sym)
        if key in self._global:
            return self._global[key]
        for k in [k for k, v in self.values[name].items() if isinstance(v, Pending) and not v.running]:
            self.get(k, name)  # every layer is read: computed now
        letter = self.members[name]
        b = self.batch
        if letter in "PS":
            width = self.total if letter == "P" else total_sym
            coeffs, consts = [], []
            for k, n in enumerate(self.sizes):
                v = self.values[name].get(k)
                if v is None:
                    coeffs.append(self.rep.zeros((b, n, width)))
                    consts.append(torch.zeros((b, n), dtype=self.rep.dtype, device=self.rep.device))
                    continue
                if letter == "S":
                    v = self.pad_sym(v, total_sym)
                coeffs.append(v.coeff if v.coeff is not None else self.rep.zeros((b, n, width)))
                consts.append(gb.to_dense(v.const).expand(b, n) if not isinstance(v.const, float) else torch.full((b, n), v.const, dtype=self.rep.dtype))
            out = Affine(self.rep.cat([self._full_batch(c) for c in coeffs], 1), torch.cat(consts, 1))
        else:
            stored = [(self.offsets[k], v) for k, v in sorted(self.values[name].items()) if not isinstance(v, Pending)]
            out = self.rep.float_member(stored, b, self.total)
            if out is not None:
                self._global[key] = out
                return out
            parts = []
            for k, n in enumerate(self.sizes):
                v = self.values[name].get(k)
                v = None if isinstance(v, Pending) else v  # being computed: not stored yet
                parts.append(torch.zeros((b, n), dtype=self.rep.dtype, device=self.rep.device) if v is None else gb.to_dense(v).to(self.rep.dtype).expand(b, n))
            out = torch.cat(parts, 1)
        self._global[key] = out
        return out


def _full_batch(c, b: int):
    """Coefficients with their batch dimension at full size (stored ones may broadcast)."""
    if c.shape[0] == b:
        return c
    return gb.expand_dim(c, 0, b)


class _BatchedOnce:
    """``_full_batch`` of each stored coefficient tensor made once, so that two members holding the
    same value (DeepPoly's ``L`` and ``U`` of an affine layer) also share their global blocks --
    what lets ``rt.split_inner`` see that its two bounds are one."""

    def __init__(self, batch: int):
        self.batch = batch
        self._made: dict[int, tuple] = {}

    def __call__(self, c):
        hit = self._made.get(id(c))
        if hit is None or hit[0] is not c:
            hit = (c, _full_batch(c, self.batch))
            self._made[id(c)] = hit
        return hit[1]
