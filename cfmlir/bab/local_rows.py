"""A domain's own rows: a per-disjunct domain bounds only its disjunct's rows of the property.

A tree per open disjunct (:attr:`cfmlir.bab.options.BabOptions.per_disjunct`) makes each domain answerable
for one disjunct ``k``: its value is ``value_k``, the other disjuncts' rows are ``+inf`` in its ``rows``
field and never matter again.  Bounding all ``R`` rows of the margin network would spend most of the
back-substitution on them (a robustness property: 9 rows, 1 needed).  So such a domain carries
``rows_of`` ``[P, r]`` -- the indices of its disjunct's rows (``r``: the largest open disjunct's size,
padded by repeating its first row) -- and is bounded on its own margin network, whose last layer is the
margin layer's rows ``rows_of`` per domain (a batched affine, ``[P, r, n]``)::

    f = W' h + b'          (the margin network's last layer, R rows)
    f_loc[p] = W'[rows_of[p]] h + b'[rows_of[p]]      (r rows per domain: the same numbers, fewer rows)

Each local row's lower bound is a lower bound of the row it names, so scattered back into ``[P, R]`` (where
two local rows name one row -- padding -- the larger is kept; rows not named get ``-inf``, no bound) it is
what the search expects from a full run.  The row-shaped fields of such a domain are local too: the split
multipliers ``beta<k>`` ``[P, r, n_k]`` and a certifier's parameters ``alpha:<name>:<k>`` ``[P, r, m_k]``
(:mod:`cfmlir.bab.warm_params`), read by the local network's last layer as they are by the full one's.
"""

from __future__ import annotations

import torch

from cfruntime.network.graph import Layer, Network, _copy_layer

#: the domain field of the row indices a domain is answerable for (absent: every row, the full margin network)
ROWS_OF = "rows_of"


def local_margin_network(mnet: Network, rows_of: torch.Tensor) -> Network:
    """``mnet`` with its last (margin) layer's rows ``rows_of[p]`` for domain ``p``: a batched affine layer
    ``[P, r, n]`` at the same index (``rows_of`` ``[P, r]``); every other layer a shallow copy (its tensors
    shared).  Cheap enough to build per run (0.3 ms on mnistfc 256x6, 64 domains), so nothing caches it."""
    last = mnet.layers[-1]
    if last.kind != "affine" or last.batched:
        raise ValueError(f"the margin network's last layer ({last.kind}) is not a shared affine layer")
    w, b = last.weight_matrix(), last.bias
    idx = rows_of.to(torch.int64)
    layers = [_copy_layer(l) for l in mnet.layers[:-1]]
    layers.append(Layer(index=last.index, kind="affine", shape=(idx.shape[1],), preds=list(last.preds),
                        name=last.name + "[own rows]", linear_kind="dense", weight=w[idx].contiguous(),
                        bias=b[idx].contiguous()))
    return Network(layers, source=mnet.source, notices=mnet.notices, input_name=mnet.input_name)


def to_full(local: torch.Tensor, rows_of: torch.Tensor, rows: int, fill: float = -torch.inf) -> torch.Tensor:
    """``[P, R]``: the local rows' bounds ``local`` ``[P, r]`` at the rows they name (the larger where two
    name one), ``fill`` elsewhere; differentiable in ``local``."""
    full = torch.full((local.shape[0], rows), fill, dtype=local.dtype, device=local.device)
    return full.scatter_reduce(1, rows_of.to(torch.int64).to(local.device), local, "amax", include_self=False)


def own_rows(member: torch.Tensor, disjuncts: list[int]) -> torch.Tensor:
    """``[D, r]``: the rows of each of ``disjuncts`` (``member`` ``[K, R]`` bool, the rows of every disjunct),
    padded to the largest by repeating the disjunct's first row."""
    groups = [torch.nonzero(member[k]).reshape(-1) for k in disjuncts]
    r = max(int(g.numel()) for g in groups)
    return torch.stack([torch.cat([g, g[:1].repeat(r - g.numel())]) for g in groups])


def localise(domains, rows_of: torch.Tensor, row_fields) -> None:
    """Make full-row domains local (in place): ``rows_of`` ``[P, r]`` their rows; every field of
    ``row_fields`` (``[P, R, ...]``: multipliers, parameters) keeps those rows only."""
    idx = rows_of.to(torch.int64)
    for name in row_fields:
        v = domains[name]
        gather = idx.reshape(*idx.shape, *([1] * (v.dim() - 2))).expand(*idx.shape, *v.shape[2:])
        domains[name] = v.gather(1, gather).contiguous()
    domains[ROWS_OF] = idx
