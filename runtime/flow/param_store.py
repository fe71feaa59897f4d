"""The values of a certifier's optimisable parameters (``param a for Relu in [lo, hi] ...``) for one batch.

A parameter read ``n[a]`` in the rule of neuron ``s`` is ``a_s(n)``: one value per (reading neuron,
neuron read).  The compiled engine reads parameters a layer at a time (:meth:`LayerContext.param
<cfruntime.flow.context.LayerContext.param>`), so the values live in one *raw* tensor per

* ``(name, reader layer S, owner layer k, "aligned")``: ``[B, n_S]`` -- the neuron read is the reader
  itself (``curr[a]``) or the neuron at its position in a predecessor (a unary rule's ``prev[a]``);
* ``(name, S, k, "pair")``: ``[B, n_S, n_k]`` -- every neuron of layer ``k`` for every neuron of
  layer ``S`` (``n[a]`` in a map or traverse of ``S``'s rule: alpha-CROWN's per-bound slopes).

A raw tensor is made on first read from the declared initial value of layer ``k``'s neurons
(``init``, or ``fill(lo, hi, init)`` for tests), and is what an optimiser changes.  What a rule uses is
always the raw value *projected* into the domain ``[lo, hi]`` of the current run (``min(max(raw, lo),
hi)``, lo and hi computed from this run's bounds: they move while an optimiser runs), so any raw value
gives a sound certifier.  On neurons of operators the parameter is not declared for, the read is its
``else`` value.

Algorithm of a read: find the layer(s) the neurons lie in; per layer, the domain ``(lo, hi, init)``
is computed once per run by the compiled ``param_<a>_<Op>`` function in that layer's context (cached
until :meth:`ParamStore.begin_run`); the raw tensor is looked up or made; the projected value is laid
out like the neurons (``[B, n_S, 1.., n_k@dim, 1..]``).

*Sparse columns* (``ParamStore(sparse=True)``, what the optimisation loops use): most neurons' domains
are a single point (alpha-DeepPoly's slope of a stable ReLU: ``[1, 1]`` active, ``[0, 0]`` dead), and
their raw values can never move.  A pair tensor keeps raw values only on the columns (neurons of the
owner layer) whose domain is wider than a point for some sample of the batch in the run that makes
it, when they are at most :data:`SPARSE_BELOW` of the layer and the tensor is large
(:data:`SPARSE_MIN_NUMEL`) -- alpha-CROWN's unstable-neuron alphas.  Every other column reads the
projection of its domain's lower end *in the current run*: a value in that run's domain, so sound
whatever the domains do later.  The optimiser's per-iteration work (Adam, projection, keep-best) then
runs on the kept columns only, and a read used only as a scale of ``substitute_scaled`` gets them as a
:class:`~cfruntime.tensor.KeptColumns` (no tensor, no gradient of the full size is made).
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from cfruntime.tensor.kept_columns import KeptColumns

ALIGNED, PAIR = "aligned", "pair"
#: a sparse store keeps a pair tensor's free columns only when they are at most this fraction of the layer
SPARSE_BELOW = 0.5
#: ... and when the tensor has at least this many entries (below, the few more operations of the sparse
#: form cost more than the passes they save: mnist 6x100's [10, 100, 100] slopes optimise in 1.9 s dense,
#: 2.5-2.9 s sparse)
SPARSE_MIN_NUMEL = 1 << 20


class ParamError(RuntimeError):
    """A parameter read the engine cannot serve (a one-line message naming the parameter and layer)."""


class ParamStore:
    """Raw parameter tensors of one batch, made on first read (see the module docstring).

    ``fill(lo, hi, init) -> raw`` (``[B, n]`` tensors) overrides the initial value (tests draw random
    values); ``requires_grad`` makes every raw tensor a leaf an optimiser can update; ``sparse`` keeps
    pair tensors' free columns only (see the module docstring); ``pair_start(key, start) -> raw or None``
    overrides a pair tensor's initial values (``start``: ``[B, n_S, n_k]``, the declared ones; a warm start
    from values an earlier run found, e.g. a branch-and-bound parent's, :meth:`pair_columns`); ``fixed``:
    no one writes into the raw tensors, so a pair tensor of initial values may be one shared row."""

    def __init__(self, fill: Callable | None = None, requires_grad: bool = False, sparse: bool = False,
                 pair_start: Callable | None = None, fixed: bool = False):
        self.fill = fill
        #: nothing will write into the raw tensors (the engine's own store when the caller gives none): a pair
        #: tensor of the initial values is then one row shared by every reader, read-only (see :meth:`get`)
        self.fixed = fixed
        self.pair_start = pair_start
        self.requires_grad = requires_grad
        self.sparse = sparse
        self.raw: dict[tuple, torch.Tensor] = {}
        #: key -> the owner layer's columns that have raw values (index tensor), for a pair tensor kept sparse
        self.columns: dict[tuple, torch.Tensor] = {}
        #: (name, layer) -> (lo, hi) of the current run
        self._domains: dict[tuple[str, int], tuple] = {}
        #: (name, layer) -> (lo, hi) of the last run that read it (for projecting after a step)
        self.last_domains: dict[tuple[str, int], tuple] = {}

    def begin_run(self) -> None:
        """A new run: domains depend on the bounds, so they are computed again."""
        self._domains = {}

    def tensors(self) -> list[torch.Tensor]:
        return list(self.raw.values())

    def domain(self, name: str, k: int, compute) -> tuple:
        """``(lo, hi, init)`` of layer ``k`` in this run (``compute()`` on first use)."""
        hit = self._domains.get((name, k))
        if hit is None:
            hit = self._domains[(name, k)] = compute()
            self.last_domains[(name, k)] = hit[:2]
        return hit

    def get(self, key: tuple, shape: tuple, lo, hi, init) -> torch.Tensor:
        """The raw tensor of ``key`` (``(name, S, k, mode)``), made with ``shape`` from ``init`` (or
        ``fill``) on first use.  ``lo``/``hi``/``init`` are ``[B, n_k]``; ``shape`` is ``[B, n_S]``
        (aligned) or ``[B, n_S, n_k]`` (pair)."""
        t = self.raw.get(key)
        if t is None:
            other = (*key[:3], PAIR if key[3] == ALIGNED else ALIGNED)
            if other in self.raw:
                raise ParamError(f"parameter '{key[0]}' of layer {key[2]} is read both on its own neurons and on all "
                                 f"neurons of layer {key[2]} by layer {key[1]}: not supported by the compiled engine")
            start = self.fill(lo, hi, init) if self.fill is not None else init
            start = start.detach()
            # a pair tensor of the declared initial values in a fixed store (no optimiser, no warm start, no
            # writer): one row for every reader, not [B, n_S, n_k] in memory (alpha_deeppoly's slopes on VNN-COMP
            # 2024 tllverifybench, layers of 2048 ReLUs: 16 MB a box and pair of layers, GiBs a batch)
            shared = key[3] == PAIR and self.fixed and not self.requires_grad and self.fill is None
            if key[3] == PAIR:
                start = start.unsqueeze(1)
                if self.pair_start is not None:
                    warm = self.pair_start(key, start.expand(shape))
                    start = start if warm is None else warm.detach().to(start.dtype)
                    shared = shared and warm is None
                cols = self._free_columns(lo, hi) if math.prod(shape) >= SPARSE_MIN_NUMEL and not shared else None
                if cols is not None:
                    self.columns[key] = cols
                    start, shape = start[..., cols], (*shape[:2], cols.numel())
            t = start.expand(shape)
            if not shared:
                t = t.clone()
            if self.requires_grad:
                t.requires_grad_(True)
            self.raw[key] = t
        elif tuple(t.shape) != tuple(shape) and not (key in self.columns and tuple(t.shape[:2]) == tuple(shape[:2])):
            raise ParamError(f"parameter '{key[0]}' of layer {key[2]} read with shape {tuple(shape)} but made with "
                             f"{tuple(t.shape)} (a batch of another size?)")
        return t

    def _free_columns(self, lo, hi) -> torch.Tensor | None:
        """The columns whose domain is wider than a point for some sample, if the store is sparse and
        they are few enough (one host sync, once per tensor), else None (every column)."""
        if not self.sparse:
            return None
        cols = (lo < hi).any(0).nonzero().flatten()
        return cols if cols.numel() <= SPARSE_BELOW * lo.shape[-1] else None

    def pair_value(self, key: tuple, shape: tuple, lo, hi, init, kept: bool = False):
        """The projected values ``[B, n_S, n_k]`` of pair tensor ``key`` (``lo``/``hi``/``init``: ``[B,
        n_k]`` of this run): the raw values projected, and on the columns without raw values (sparse) the
        projection of the domain's lower end -- as a :class:`~cfruntime.tensor.KeptColumns` when
        ``kept`` (the caller takes one), else as a tensor."""
        raw = self.get(key, shape, lo, hi, init)
        lo, hi = lo.unsqueeze(1), hi.unsqueeze(1)
        cols = self.columns.get(key)
        if cols is None:
            if raw.shape[1] > 1 and raw.stride(1) == 0:  # shared initial values (get): projected once, not per reader
                return project(raw[:, :1], lo, hi).expand(raw.shape)
            return project(raw, lo, hi)
        value = KeptColumns(project(raw, lo[..., cols], hi[..., cols]), torch.clamp(lo, min=lo, max=hi), cols)
        return value if kept else value.dense()

    @torch.no_grad()
    def pair_columns(self, key: tuple, cols: torch.Tensor) -> torch.Tensor:
        """The raw values ``[B, n_S, len(cols)]`` of pair tensor ``key`` on the owner layer's columns
        ``cols``; a column it keeps no raw value for (sparse) reads its domain's lower end in the last run."""
        t = self.raw[key]
        kept = self.columns.get(key)
        if kept is None:
            return t[..., cols].detach()
        lo, hi = self.last_domains[(key[0], key[2])]
        full = torch.minimum(lo, hi).to(t.dtype).unsqueeze(1).expand(t.shape[0], t.shape[1], lo.shape[-1]).clone()
        full[..., kept] = t.detach()
        return full[..., cols]

    @torch.no_grad()
    def project_(self) -> None:
        """Clip every raw tensor into the domain of the last run that read it (after an optimiser
        step; the rules project anyway, this keeps the raw values from drifting far outside)."""
        for key, t in self.raw.items():
            name, _s, k, mode = key
            lo, hi = self.last_domains[(name, k)]
            if mode == PAIR:
                lo, hi = lo.unsqueeze(1), hi.unsqueeze(1)
                cols = self.columns.get(key)
                if cols is not None:
                    lo, hi = lo[..., cols], hi[..., cols]
            t.clamp_(min=lo, max=hi)

    @torch.no_grad()
    def cast_(self, dtype: torch.dtype) -> None:
        """Every raw tensor in ``dtype`` from now on (a final run in another precision than the
        optimisation's: the values, not an optimiser's leaves any more)."""
        self.raw = {k: t.detach().to(dtype) for k, t in self.raw.items()}
        self.requires_grad = False

    def value_at(self, name: str, sample: int, reader_layer: int, reader_pos: int, layer: int, pos: int) -> float:
        """The raw value ``a_s(n)`` for ``s`` at ``reader_pos`` of ``reader_layer`` and ``n`` at ``pos`` of
        ``layer`` (the reference interpreter reads the values a compiled run made; KeyError when
        that run never read them)."""
        key = (name, reader_layer, layer, PAIR)
        t = self.raw.get(key)
        if t is not None:
            b = sample if t.shape[0] > 1 else 0
            cols = self.columns.get(key)
            if cols is None:
                return float(t[b, reader_pos, pos])
            at = (cols == pos).nonzero().flatten()
            if at.numel():
                return float(t[b, reader_pos, int(at[0])])
            lo, hi = self.last_domains[(name, layer)]  # a held column: its domain's lower end, projected
            return float(torch.clamp(lo[b, pos], min=lo[b, pos], max=hi[b, pos]))
        t = self.raw[(name, reader_layer, layer, ALIGNED)]
        return float(t[sample if t.shape[0] > 1 else 0, reader_pos])


def project(raw: torch.Tensor, lo, hi) -> torch.Tensor:
    """``min(max(raw, lo), hi)`` (``lo``/``hi`` broadcast tensors).  Its gradient in ``raw`` is 1 on the
    closed domain (a value at a bound -- where initial values often are -- still moves), as
    alpha-CROWN's clamp, and ``lo``/``hi`` get the gradient where they clip.  When ``lo`` and ``hi``
    carry no gradient (alpha-DeepPoly's domains are piecewise constant), the gradient in ``raw`` is 1
    everywhere (:class:`_Project`): a raw value outside the domain -- only where the domain moved since
    the last :meth:`ParamStore.project_` -- gets the gradient at the end it is clipped to, and the next
    projection puts it back, as projected gradient steps do; this spares the four passes of clamp's
    backward mask over the largest tensors of an optimisation."""
    if raw.requires_grad and not (getattr(lo, "requires_grad", False) or getattr(hi, "requires_grad", False)):
        return _Project.apply(raw, lo, hi)
    if not raw.requires_grad:
        return torch.clamp(raw, min=lo, max=hi)
    # selections, not clamp: clamp's backward at a tie (raw == lo) differs between torch releases
    # (2.13 gives raw all of it, 2.14 splits it with lo); a selection gives raw the closed domain's
    return torch.where(raw > hi, hi, torch.where(raw < lo, lo, raw))


class _Project(torch.autograd.Function):
    """``forward(raw, lo, hi) = clamp(raw, lo, hi)``; ``backward(g) = (g, None, None)``: see :func:`project`."""

    @staticmethod
    def forward(ctx, raw, lo, hi):
        return torch.clamp(raw, min=lo, max=hi)

    @staticmethod
    def backward(ctx, g):
        return g, None, None
