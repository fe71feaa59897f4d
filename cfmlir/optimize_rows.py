"""Which intermediate bounds an optimisation loop computes again (alpha-CROWN's sparse intermediate bounds).

Every iteration of :func:`cfmlir.optimize.optimize_bounds` runs the certifier on the whole network, but
most intermediate bounds cannot change anything the parameters act on: a layer before every layer that
reads a parameter gives the same bounds in every iteration, and a neuron whose successor's parameter
domain is a single point (alpha-DeepPoly's slope of a stable ReLU) only needs bounds that keep it a
point.  :func:`row_overrides` turns the loop's first run (the initial parameters) into bound overrides
(:class:`~cfruntime.flow.overrides.BoundOverride`) for its later runs, and :func:`hold_rows` keeps the
parameters of the rows whose bounds stay the first run's at their initial values (their gradient of the
first run is dropped, so the final full runs see those rows as the loop did):

Algorithm:

1. only for certifiers whose Float members are exactly the two bounds (their rules' other values are
   PolyExps/SymExps the overrides leave alone), and only for unwidened runs (the loop's);
2. a layer below every layer that reads a parameter (``min`` of the readers of the store's raw tensors)
   reads none, nor does anything it depends on: its bounds are the reference's, replaced (the rule does
   not compute them, :mod:`cfruntime.flow.specialise`);
3. a layer whose every successor is an element-wise operator with a parameter (one predecessor, same
   size) keeps new bounds only on the neurons whose parameter domain in the reference run is wider than
   a point for some sample of the batch (the union over parameters, successors and samples); the others
   keep the reference's (``rows``, :mod:`cfruntime.flow.row_subset`); none: replaced as in 2; most of
   the layer (more than :data:`ROWS_BELOW`), or for a convolution more dense rows than its kernels have
   entries in all (``r * inputs > n * kernel``: the rows are gathered densely, the whole layer's
   back-substitution works on kernels): computed whole;
4. every other layer (the last, the input, a layer feeding an operator without parameters) is computed
   whole.

Sound whatever the rows: the reference bounds are bounds of the same network over the same boxes.  The
loop's result is still made by full runs (rigorous, :mod:`cfmlir.optimize`); the overrides only decide
what the iterations spend their time on.  Where a neuron whose domain is a point has the same relaxation
whatever its bounds (a stable ReLU is exact), the loop's bounds are the full loop's
(``test_optimize_rows.py``); where the relaxation still reads the bounds (a sigmoid's lines), the loop
works with the first run's bounds of those neurons -- sound, possibly looser than a full loop's.
"""

from __future__ import annotations

#: rows are given when at most this fraction of a layer's neurons need new bounds (measured: mnist 9x200,
#: eps 0.01, rows of 77-84% of two layers made the loop 2.5% slower, the gathers cost what they saved)
ROWS_BELOW = 0.75


def row_overrides(cert, network, ref, params) -> dict:
    """``{layer: BoundOverride}`` for the loop's runs from the reference run ``ref`` (see the module
    docstring; empty when nothing can be skipped)."""
    import torch

    from cfmlir.engine_io import bound_members, stored_bounds
    from cfruntime import contract
    from cfruntime.flow.overrides import BoundOverride

    members = bound_members(cert)
    floats = {name for name, letter, _ in cert.members if letter in contract.NUMBER_LETTERS}
    if floats != set(members) or not params.raw:
        return {}
    readers = min(key[1] for key in params.raw)
    free: dict[int, torch.Tensor] = {}  # layer -> [n] bool: some parameter domain of a successor is wider than a point
    for (_name, k), (lo, hi) in params.last_domains.items():
        free[k] = free[k] | (lo < hi).any(0) if k in free else (lo < hi).any(0)
    b = ref.lower.shape[0]
    last = network.layers[-1].index
    out = {}
    wanted = {}
    for layer in network.layers[1:]:
        k = layer.index
        if k == last:
            continue
        if k < readers:
            out[k] = None
            continue
        nxt = network.successors(k)
        if not nxt or any(j not in free or tuple(network.layers[j].preds) != (k,) or network.layers[j].size != layer.size
                          for j in nxt):
            continue
        mask = free[nxt[0]]
        for j in nxt[1:]:
            mask = mask | free[j]
        wanted[k] = mask
    if wanted:  # one host sync for every layer's rows
        counts = torch.stack([m.sum() for m in wanted.values()]).tolist()
        for (k, mask), r in zip(wanted.items(), counts):
            if r == 0:
                out[k] = None
            elif _rows_pay(network.layers[k], network.layers[network.layers[k].preds[0]].size, r):
                out[k] = mask.nonzero().flatten()
    result = {}
    for k, rows in out.items():
        lo, hi = (t.detach() for t in stored_bounds(cert, ref, k, b, members))
        result[k] = BoundOverride(lo, hi, replace=True, rows=rows)
    return result


def _rows_pay(layer, inputs: int, r: int) -> bool:
    """Whether bounds of ``r`` rows of ``layer`` (``inputs`` neurons before it) cost less than the whole layer's."""
    if r > ROWS_BELOW * layer.size:
        return False
    if layer.kind == "affine" and layer.linear_kind == "conv":
        return r * inputs <= layer.size * layer.conv.kernel.shape[1:].numel()
    return True


def hold_rows(params, overrides: dict) -> None:
    """Zero the gradients of the parameters that the rows outside each override's ``rows`` read (pair
    tensors ``[B, n_reader, n_k]`` of a reader layer with rows): the first run's backward reached them, no
    later run reads them, and they are the values the final runs use for those rows."""
    from cfruntime.flow.param_store import PAIR

    for key, t in params.raw.items():
        ov = overrides.get(key[1])
        if key[3] != PAIR or ov is None or ov.rows is None or t.grad is None or t.shape[1] == 1:
            continue
        keep = t.grad.index_select(1, ov.rows)
        t.grad.zero_()
        t.grad.index_copy_(1, ov.rows, keep)
