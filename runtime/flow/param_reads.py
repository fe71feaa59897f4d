"""Reading a parameter in a rule: what emitted code calls as ``ctx.param(neurons, name)``.

See :mod:`cfruntime.flow.param_store` for what a parameter's values are.  Algorithm of
:func:`read`: the neurons read lie along dimension ``n.dim`` of a rank ``n.rank`` tensor whose
dimensions 0 and 1 are the batch and the reading layer's neurons (``curr``).  ``n.dim == 1`` is an
*aligned* read (the reader itself, or a unary rule's ``prev``): one value per reading neuron,
``[B, n_curr]``.  Otherwise every neuron read has a value per reading neuron (a *pair* read): per
layer ``k`` the neurons cover, the projected raw tensor ``[B, n_curr, n_k]`` of an owner layer or the
``else`` value of any other layer, concatenated along the neurons and laid out as
``[B, n_curr, 1.., n@dim, 1..]``.  The projection uses the domain of layer ``k`` computed in its own
context (its rule's inputs) by the compiled ``param_<name>_<Operator>`` function, once per run.  A read
the compiler marks ``scale=True`` (its value is only ever a scale of ``substitute_scaled``) of one layer
kept sparse by the store is returned as a :class:`~cfruntime.tensor.KeptColumns`, never made dense.
"""

from __future__ import annotations

import torch

from cfruntime import contract
from cfruntime import tensor as gb
from cfruntime.flow import ops as rt
from cfruntime.flow.param_store import ALIGNED, PAIR, ParamError, project
from cfruntime.flow.values import Window


def read(ctx, n, name: str, scale: bool = False):
    store = ctx.store
    spec = store.param_specs.get(name)
    if spec is None or store.params is None:
        raise ParamError(f"parameter '{name}' is read but the certifier declares no such parameter")
    if isinstance(n, Window):
        raise ParamError(f"parameter '{name}' of a max-pool window is not supported by the compiled engine")
    m = ctx.layout.sizes[ctx.layer.index]
    layout = ctx.layout
    if n.dim == 1:
        k = layout.containing(n.start, n.count)
        if k is None or n.count != m or layout.offsets[k] != n.start or layout.sizes[k] != n.count:
            raise ParamError(f"parameter '{name}' read on neurons that are not one layer like curr's (layer {ctx.layer.index})")
        return ctx._spread(_piece(ctx, spec, name, k, ALIGNED), n, 0)
    pieces = []
    for k, (off, size) in enumerate(zip(layout.offsets, layout.sizes)):
        if off + size <= n.start or off >= n.start + n.count:
            continue
        if off < n.start or off + size > n.start + n.count:
            raise ParamError(f"parameter '{name}' read on part of layer {k}: not supported by the compiled engine")
        pieces.append((size, _piece(ctx, spec, name, k, PAIR, kept=scale and n.dim == n.rank - 1)))
    if ctx.in_rows:  # a traverse on some rows of the layer (cfruntime.flow.row_subset): their values
        from cfruntime.flow.row_subset import read_rows  # noqa: PLC0415

        pieces = [(size, read_rows(p, ctx.rows)) for size, p in pieces]
        m = ctx.rows.numel()
    if len(pieces) == 1 and isinstance(pieces[0][1], (float, gb.KeptColumns)):
        return pieces[0][1]  # a KeptColumns is [B, n_curr, n_k]: already laid out (n.dim is the last)
    b = ctx.batch
    dense = [p.dense() if isinstance(p, gb.KeptColumns) else p if isinstance(p, torch.Tensor)
             else torch.full((b, m, size), p, dtype=ctx.rep.dtype, device=ctx.rep.device) for size, p in pieces]
    out = dense[0] if len(dense) == 1 else torch.cat([d.expand(b, m, d.shape[2]) for d in dense], 2)
    view = (out.shape[0], m) + (1,) * (n.dim - 2) + (n.count,) + (1,) * (n.rank - n.dim - 1)
    return out.reshape(view)


def _piece(ctx, spec: dict, name: str, k: int, mode: str, kept: bool = False):
    """The projected values of layer ``k``'s neurons for every reading neuron (``[B, n_curr]`` aligned,
    ``[B, n_curr, n_k]`` pair, a KeptColumns if ``kept`` and the store keeps it sparse), or the ``else``
    number when layer ``k`` has no such parameter."""
    layer = ctx.network[k]
    op = contract.OPERATOR_OF_KIND.get(layer.kind)
    fn = spec["domains"].get(op)
    if fn is None:
        if spec["default"] is None:
            raise ParamError(f"parameter '{name}' has no value on layer {k} ({layer.kind}): it is declared for "
                             f"{', '.join(spec['domains'])} and has no 'else' value")
        return float(spec["default"])
    params = ctx.store.params
    lo, hi, init = params.domain(name, k, lambda: _domain(ctx, fn, layer))
    m = ctx.layout.sizes[ctx.layer.index]
    if mode == ALIGNED:
        return project(params.get((name, ctx.layer.index, k, ALIGNED), (ctx.batch, m), lo, hi, init), lo, hi)
    return params.pair_value((name, ctx.layer.index, k, PAIR), (ctx.batch, m, layer.size), lo, hi, init, kept)


def _domain(ctx, fn, layer) -> tuple:
    """``(lo, hi, init)`` ``[B, n_k]`` of ``layer`` by its compiled domain function, in its own context."""
    sub = type(ctx)(ctx.network, layer, ctx.store, ctx.batch, ctx.sym_next, ctx.sym_total)  # the layer's own context
    b, n = ctx.batch, layer.size
    out = []
    for v in fn(rt, sub):
        if isinstance(v, (int, float)):
            v = torch.full((b, n), float(v), dtype=ctx.rep.dtype, device=ctx.rep.device)
        else:
            v = gb.to_dense(v).to(ctx.rep.dtype).expand(b, n)
        out.append(v)
    return tuple(out)
