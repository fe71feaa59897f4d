"""What a network offers branch and bound: the ReLU neurons that can be split, the S-curve (sigmoid, tanh)
neurons whose input interval can be cut in two, the layers whose bounds a subdomain carries, and whether a
fully split subdomain is affine (decided exactly by an LP).

Computed on the *margin network* the driver bounds (``network.with_margin_layer(A)``: the property's
rows fold into the last affine layer, or follow as a new last layer), so layer indices are the ones the
engine's ``bound_overrides`` and layer bounds use.  Example: an MLP ``input -> affine(1) -> relu(2) ->
affine(3) -> relu(4) -> affine(5, margins)`` has the split layers ``(relu 2, pre 1)``, ``(relu 4, pre 3)``
and carries the bounds of layers 1 and 3 (the ReLU outputs are cheap to recompute from them, the last
layer is what each bounding computes).  With ``sigmoid`` in place of ``relu 4`` it has the curve layer
``(sigmoid 4, pre 3)`` instead: a cut of neuron ``i`` at a point ``t`` gives the children ``z_i >= t`` and
``z_i <= t`` (GenBaB-style branching on general activations), whose certifier relaxations are tighter.
"""

from __future__ import annotations

from dataclasses import dataclass

from cfruntime.network.graph import ELEMENTWISE_KINDS

#: layer kinds on which a fully split domain's network is affine (ReLU with a fixed pattern)
PIECEWISE_LINEAR_KINDS = ("input", "affine", "relu", "add")
#: activation kinds whose neurons' input intervals are cut (curve layers)
CURVE_KINDS = ("sigmoid", "tanh")


@dataclass(frozen=True)
class SplitLayer:
    """A ReLU layer ``relu`` whose neurons can be split, and its pre-activation layer ``pre`` (``size``
    neurons): splitting neuron ``i`` fixes the sign of neuron ``i`` of ``pre`` on each child."""

    relu: int
    pre: int
    size: int


@dataclass(frozen=True)
class CurveLayer:
    """An S-curve activation layer ``act`` (``kind``: sigmoid or tanh) on the pre-activation layer ``pre``
    (``size`` neurons): cutting neuron ``i`` at ``t`` gives children with ``z_i`` in ``[lo, t]`` and ``[t, hi]``."""

    act: int
    pre: int
    size: int
    kind: str


@dataclass(frozen=True)
class BabStructure:
    split_layers: tuple[SplitLayer, ...]
    #: layers whose lower/upper bounds a domain keeps (every split layer's ``pre`` among them)
    carried: tuple[int, ...]
    #: True when every layer is affine, ReLU or an addition: a domain without an unstable ReLU is affine
    piecewise_linear: bool
    last: int
    #: the S-curve layers whose neurons can be cut (after the ReLU neurons in branching's numbering)
    curve_layers: tuple[CurveLayer, ...] = ()

    @property
    def relu_neurons(self) -> int:
        return sum(s.size for s in self.split_layers)

    @property
    def branchable(self) -> bool:
        """Has neurons to branch on (ReLU splits or curve cuts)."""
        return bool(self.split_layers or self.curve_layers)


def structure_of(mnet) -> BabStructure:
    """The :class:`BabStructure` of the margin network ``mnet``."""
    last = mnet.layers[-1].index
    splits = tuple(SplitLayer(l.index, l.preds[0], l.size) for l in mnet.layers[1:]
                   if l.kind == "relu" and l.preds[0] > 0)
    curves = tuple(CurveLayer(l.index, l.preds[0], l.size, l.kind) for l in mnet.layers[1:]
                   if l.kind in CURVE_KINDS and l.preds[0] > 0 and l.preds[0] not in {s.pre for s in splits})
    carried = tuple(l.index for l in mnet.layers[1:-1] if l.kind not in ELEMENTWISE_KINDS)
    carried = tuple(sorted(set(carried) | {s.pre for s in splits} | {c.pre for c in curves}))
    pwl = all(l.kind in PIECEWISE_LINEAR_KINDS for l in mnet.layers) and all(
        l.kind != "relu" or l.preds[0] > 0 for l in mnet.layers)
    return BabStructure(splits, carried, pwl, last, curves)
