"""What the widening of one certifier on one network does per layer, decided once from the structure.

The compiler's exactness analysis (``EXACT`` in a compiled module, :mod:`cfmlir.passes.exactness_analysis`)
tags every member value a rule computes: ``transparent F`` (per neuron 0 or ``F`` times the same
neuron's stored bound of the same role in the single predecessor, selected by exact conditions),
``exact F K`` (no rounding, ``|v| <= F M + K``), ``unit`` (a PolyExp with 0/1 coefficients and
constant 0), ``exact``, ``inexact``.  From the tags and the network's graph this plan decides, per
layer ``k``:

* ``float_kind[k]``: how its Float bounds are widened -- ``transparent`` (not at all: they inherit
  their predecessor's pre-charge, see :mod:`cfruntime.flow.widening`), ``exact`` (pre-charge only) or
  ``inexact`` (their own rounding and the pre-charge);
* ``rho[k]``: the relative pre-charge its stored Float bounds carry: ``rho_pre(k)`` when any later rule
  may read them (0 for the last layer, which nothing reads), raised to the pre-charge of every
  transparent successor (whose bounds are made of these);
* ``pushable[k]``: an affine layer whose every successor is an element-wise layer whose rule does no
  back-substitution: its polyhedra's substitution error is charged on the successors' polyhedra (one
  per-neuron term each) instead of on its own constants, so its lower and upper polyhedra stay one
  expression (a back-substitution through it needs one product, not a split by sign);
* ``layer_at``: the layer whose columns are ``(offset, size)``.
"""

from __future__ import annotations

from cfruntime import contract

#: layer kinds with one predecessor whose rules work neuron by neuron (a diagonal relaxation)
ELEMENTWISE = frozenset({"relu", "sigmoid", "tanh", "leakyrelu", "elu", "softplus", "abs", "relu6", "hardtanh"})
SUBSTITUTES = contract.EXACT_SUBSTITUTES


def _parse(tag: str | None) -> tuple[str, float, float]:
    """``(kind, F, K)`` of a Float member's tag (``inexact`` for a missing one)."""
    parts = (tag or "inexact").split()
    if parts[0] == "transparent":
        return "transparent", float(parts[1]), 0.0
    if parts[0] == "exact" and len(parts) == 3:
        return "exact", float(parts[1]), float(parts[2])
    return "inexact", 0.0, 0.0


class Plan:
    def __init__(self, cert, network, rho_pre) -> None:
        layers = network.layers
        exact = getattr(cert, "exact", None) or {}
        lo = cert.member_with_role(contract.NUMBER_LETTERS, contract.LOWER)
        hi = cert.member_with_role(contract.NUMBER_LETTERS, contract.UPPER)
        self.tags: dict[int, dict[str, str]] = {}
        self.succ: dict[int, list[int]] = {l.index: [] for l in layers}
        for l in layers[1:]:
            self.tags[l.index] = exact.get(contract.OPERATOR_OF_KIND.get(l.kind), {})
            for p in l.preds:
                self.succ[p].append(l.index)
        self.layer_at = {(l.offset, l.size): l.index for l in layers}
        self.float_kind: dict[int, tuple[str, float, float]] = {0: ("input", 0.0, 0.0)}
        for l in layers[1:]:
            tl, th = (_parse(self.tags[l.index].get(m)) for m in (lo, hi))
            single = len(l.preds) == 1
            same = single and layers[l.preds[0]].size == l.size
            if tl[0] == th[0] == "transparent" and same:
                self.float_kind[l.index] = ("transparent", max(tl[1], th[1]), 0.0)
            elif tl[0] in ("exact", "transparent") and th[0] in ("exact", "transparent") and single:
                self.float_kind[l.index] = ("exact", max(tl[1], th[1]), max(tl[2], th[2]))
            else:
                self.float_kind[l.index] = ("inexact", 0.0, 0.0)
        self.rho: dict[int, float] = {}
        for l in reversed(layers):
            k = l.index
            r = rho_pre(k) if self.succ[k] else 0.0
            for j in self.succ[k]:
                if self.float_kind[j][0] == "transparent":
                    r = max(r, self.rho[j])
            self.rho[k] = r
        self.pushable: dict[int, bool] = {}
        for l in layers[1:]:
            s = self.succ[l.index]
            self.pushable[l.index] = l.kind == "affine" and bool(s) and all(
                layers[j].kind in ELEMENTWISE and layers[j].preds == [l.index]
                and SUBSTITUTES not in self.tags[j] for j in s)

    def unit(self, layer, member: str) -> bool:
        """Whether ``layer``'s rule makes ``member`` with 0/1 coefficients and constant 0."""
        return self.tags.get(layer.index, {}).get(member) == "unit"
