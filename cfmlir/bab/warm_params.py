"""A certifier's own parameters carried by subdomains: each child starts from its parent's (a warm start).

A certifier with parameters (``alpha_deeppoly``'s ReLU slopes and S-curve tangent points) reads, in the rule
of the property's rows, one value per (row, neuron) of every parametric layer ``k``: the pair tensor
``(name, reader, k)`` ``[P, R, n_k]`` of :class:`cfruntime.flow.param_store.ParamStore` (alpha-CROWN's
per-output slopes).  A child of a ReLU split is bounded with its parent's intermediate bounds, so only the
rows' rule runs and only these values matter; alpha-beta-CROWN keeps them per subdomain and starts each
child's optimisation from its parent's, and so does the driver:

* the root's optimised values (``--optimize``) become the root domain's fields ``alpha:<name>:<k>``
  ``[1, R, m_k]``, on the ``m_k`` columns whose domain is wider than a point at the root (a neuron stable
  at the root stays stable in every subdomain, where its domain is a point and its value does not
  matter), so a domain holds ``R * sum m_k`` numbers, not ``R * sum n_k``;
* children copy their parent's fields (:meth:`Domains.repeat`); every run that bounds domains starts its
  store from them (:func:`warm_store`), whichever network's last layer reads them (the margin network, or
  the Lagrangian network of the split multipliers: its last layer is the reader there);
* the multipliers' optimisation changes them with the multipliers and writes each child's best back
  (:func:`fields_of`).

Any values are sound (the rules project every read into its domain of the current run), so a warm start
changes how good a bound is, never whether it holds.
"""

from __future__ import annotations

import torch

from cfruntime.flow.param_store import PAIR, ParamStore

#: the dtype the fields are kept in (any value is sound; float32 halves the pool's memory per domain)
FIELD_DTYPE = torch.float32


def alpha_field(name: str, k: int) -> str:
    return f"alpha:{name}:{k}"


def root_columns(params: ParamStore, reader: int) -> dict[tuple[str, int], torch.Tensor]:
    """``{(name, k): columns}``: for every pair tensor read by layer ``reader`` in the store's last run, the
    owner layer's columns whose domain is wider than a point for some sample."""
    cols = {}
    for key in params.raw:
        name, s, k, mode = key
        if mode != PAIR or s != reader:
            continue
        lo, hi = params.last_domains[(name, k)]
        c = (lo < hi).any(0).nonzero().flatten()
        if c.numel():
            cols[(name, k)] = c
    return cols


def fields_of(params: ParamStore, reader: int, cols: dict) -> dict[str, torch.Tensor]:
    """The domain fields ``{alpha:<name>:<k>: [P, R, m_k]}`` of the store's values read by ``reader``."""
    out = {}
    for (name, k), c in cols.items():
        key = (name, reader, k, PAIR)
        if key in params.raw:
            out[alpha_field(name, k)] = params.pair_columns(key, c).to(FIELD_DTYPE)
    return out


def warm_store(domains, a: int, b: int, reader: int, cols: dict, *, requires_grad: bool = False,
               sparse: bool = True) -> ParamStore | None:
    """A store whose pair tensors read by ``reader`` start from rows ``a:b`` of the domains' fields (None:
    the domains carry none)."""
    if not cols or alpha_field(*next(iter(cols))) not in domains:
        return None

    def start(key, init):
        name, s, k, _mode = key
        c = cols.get((name, k))
        if s != reader or c is None or init.shape[1] != domains[alpha_field(name, k)].shape[1]:
            return None
        warm = init.clone()
        warm[..., c] = domains[alpha_field(name, k)][a:b].to(init.dtype)
        return warm

    return ParamStore(requires_grad=requires_grad, sparse=sparse, pair_start=start)
