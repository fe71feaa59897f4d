"""Bounds of a layer given from outside the certifier: ``run_certifier(..., bound_overrides=...)``.

A branch-and-bound search (:mod:`cfmlir.bab`) bounds many *subdomains* of an input box at once, one per
batch row, and knows facts about each that the certifier cannot see: a ReLU split fixes the sign of a
pre-activation neuron on the subdomain (``z >= 0`` or ``z <= 0``), and bounds computed for a parent
domain hold on every child.  It hands them to the engine as a :class:`BoundOverride` per layer::

    run_certifier(cert, net, lb, ub, bound_overrides={3: BoundOverride(lo, hi)})  # lo, hi: [B, n_3]

Right after layer 3's rule has run (and its bounds were widened, in float32), the layer's Float members
whose roles are ``lower`` and ``upper`` (:mod:`cfruntime.contract`) become

* ``l := max(l, lo)``, ``u := min(u, hi)`` (``replace=False``, the default: both bounds hold on the
  row's subdomain, so their intersection does); ``-inf``/``inf`` entries change nothing;
* ``l := lo``, ``u := hi`` (``replace=True``: the caller's bounds *are* the layer's bounds; the rule is
  then run without computing its own, :mod:`cfruntime.flow.specialise`, which skips e.g. DeepPoly's
  back-substitution of every neuron of an affine layer); ``replace="lower"`` or ``"upper"`` replaces one
  side only (``BoundOverride(upper=inf, replace="upper")`` on the last layer: its upper bounds are not
  wanted, so they are not computed).

Every later rule reads the new bounds.  This is sound for every certifier whose shape constraints make
those members bounds of the neuron (``curr[l] <= curr <= curr[u]``): the subdomain's concrete values
lie within them, so every rule's own soundness argument goes through unchanged.  ``lo > hi`` on some
neuron means the row's subdomain is empty.

In float32 (and the other widened dtypes) the given float64 bounds are cast outward, so they still
contain the values they bounded.

``rows`` (with ``replace=True``; unwidened runs): the rule computes bounds for those neurons of the layer
only and the others keep the given ones (:mod:`cfruntime.flow.row_subset`; an optimisation loop's sparse
intermediate bounds: ``BoundOverride(lo, hi, replace=True, rows=unstable)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class BoundOverride:
    """Lower and upper bounds ``[B, n]`` (either may be None: no bound on that side) of one layer's
    neurons per batch row; ``replace``: they replace the rule's bounds instead of tightening them (True:
    both sides, ``"lower"``/``"upper"``: that side only)."""

    lower: torch.Tensor | None = None
    upper: torch.Tensor | None = None
    replace: bool | str = False
    #: the neurons whose bounds the rule computes (an index tensor; None: all or, replacing, none)
    rows: torch.Tensor | None = None

    def __post_init__(self):
        if self.replace not in (False, True, "lower", "upper"):
            raise ValueError(f"replace must be False, True, 'lower' or 'upper', not {self.replace!r}")
        if self.rows is not None and (self.replace is not True or self.lower is None or self.upper is None):
            raise ValueError("a bound override with rows gives both bounds of the other rows (replace=True)")
        if self.replaces("lower") and self.lower is None or self.replaces("upper") and self.upper is None:
            raise ValueError("a replacing bound override needs the bounds of the sides it replaces")

    def replaces(self, side: str) -> bool:
        """True when the given ``side`` (``"lower"``/``"upper"``) replaces the rule's."""
        return self.replace is True or self.replace == side

    def cast(self, dtype: torch.dtype, device) -> "BoundOverride":
        """The bounds in ``dtype`` on ``device``, rounded outward where the cast rounds (the cast bounds
        contain the given ones; a bound the dtype holds exactly, such as a split's 0, stays)."""
        from cfruntime.flow.widening import box_to_dtype_exact

        lo, hi = box_to_dtype_exact(self.lower, self.upper, dtype, device)
        return BoundOverride(lo, hi, self.replace, None if self.rows is None else self.rows.to(device))

    def apply(self, lower: torch.Tensor, upper: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's bounds after the override (``lower``/``upper``: the rule's, ``[B, n]``; with
        ``rows``, already written into the given ones by the engine)."""
        if self.rows is not None:
            return lower, upper
        if self.lower is not None:
            lower = self.lower if self.replaces("lower") else torch.maximum(lower, self.lower)
        if self.upper is not None:
            upper = self.upper if self.replaces("upper") else torch.minimum(upper, self.upper)
        return lower, upper


def check_overrides(overrides: dict, network, batch: int) -> None:
    """A :class:`ValueError` naming the layer when an override does not fit the network or the batch."""
    last = network.layers[-1].index
    for k, ov in overrides.items():
        if not isinstance(ov, BoundOverride):
            raise TypeError(f"bound_overrides[{k}] must be a BoundOverride, not {type(ov).__name__}")
        if not 0 < k <= last:
            raise ValueError(f"bound_overrides: no layer {k} to override (layers 1..{last})")
        n = network.layers[k].size
        for side in (ov.lower, ov.upper):
            if side is not None and tuple(side.shape) != (batch, n):
                raise ValueError(f"bound_overrides[{k}]: expected [{batch}, {n}] bounds, got {tuple(side.shape)}")
        r = ov.rows
        if r is not None and (r.dim() != 1 or r.dtype != torch.long or not 0 < r.numel() <= n):
            # (their values are not read here: no host sync per run; index_copy checks them)
            raise ValueError(f"bound_overrides[{k}]: rows must be a 1-D index tensor of 1..{n} neurons")
