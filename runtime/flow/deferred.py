"""Bounds computed when first read: a layer's Float bounds that no later rule reads are never computed.

DeepPoly computes every layer's bounds by back-substitution to the input, but among the rules only a
nonlinear one reads its input's bounds (ReLU's relaxation needs ``prev[l]``, ``prev[u]``); an affine layer or
a residual join reads its inputs' expressions.  So the bounds of a convolution that feeds a join, of an
average pool that feeds a convolution, or of the network's output before the specification's margin layer
are read by nobody -- and they are the expensive ones: on VNN-COMP's TinyYOLO (16x52x52 maps, 21,125 outputs
of which a property reads five) they were most of the pass.

The engine runs such a layer's rule without its bounds (:func:`~cfruntime.flow.specialise.rule_without`) and
stores a :class:`~cfruntime.flow.store.Pending` in their place.  A read (``ShapeStore.get``: a later rule, a
traverse that concretises at that layer, the caller reading every layer's bounds) runs the rule for the
bounds alone then, in the layer's own context -- its predecessors' stored values and its symbol range, which
never change once stored -- so a bound that is read is the one the layer would have computed at once.

Algorithm (:func:`deferred_layers`): the bounds of layer ``k`` are deferred when

* the run has no gradient, widening, parameters or bound overrides, and frees no member (each of these reads
  or changes the bounds at the layer's own time: the widening's error terms, the order in which parameters
  are read, a freed predecessor the late rule would need), and its tensors are planned (a rule reads the
  bounds of all neurons a layer at a time, only the layers its expression reaches; the other representations
  concatenate every layer's, which computes them all);
* the certifier has a PolyExp member (its bounds come from substitution: the work worth saving) and its
  Float members are the two bounds only;
* ``k`` is not the last layer (its bounds are the result) and every successor of ``k`` is linear (an affine
  layer or a join).  A successor's rule that reads the bounds anyway (IBP's affine rule) computes them at
  that moment: the same values, a little later.

Example (``x -> conv1 -> relu -> conv2 -> add(conv2, conv3(x)) -> relu``): ``conv2`` and ``conv3`` feed the
join, so their bounds are pending; the join's are read by the ReLU, so they are computed at once, by a
back-substitution that runs through ``conv2`` and ``conv3`` without their bounds.
"""

from __future__ import annotations

from cfruntime import contract

#: layer kinds whose rules substitute their inputs' expressions rather than read their bounds
LINEAR_KINDS = frozenset({"affine", "add"})


def deferred_layers(cert, network, *, plain_run: bool) -> frozenset[int]:
    """The layers of ``network`` whose Float bounds the engine computes only when read (see the module's
    Algorithm); ``plain_run``: planned tensors, no gradient, widening, parameters, overrides, nothing freed."""
    members = cert.members
    floats = [role for _, letter, role in members if letter in contract.NUMBER_LETTERS]
    if not plain_run or cert.params or sorted(floats) != sorted((contract.LOWER, contract.UPPER)) \
            or not any(letter == "P" for _, letter, _ in members):
        return frozenset()
    layers = network.layers
    successors: dict[int, list[str]] = {}
    for layer in layers[1:]:
        for k in layer.preds:
            successors.setdefault(k, []).append(layer.kind)
    last = layers[-1].index
    return frozenset(l.index for l in layers[1:-1] if l.index != last and successors.get(l.index)
                     and all(kind in LINEAR_KINDS for kind in successors[l.index]))
