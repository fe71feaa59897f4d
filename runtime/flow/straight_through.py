"""Values with the data of one computation and the gradient of another (a straight-through carry).

The float32 widening (:mod:`cfruntime.flow.widening`) moves every stored bound and expression outward
by a rigorous bound of its rounding errors.  When a run wants gradients the engine computes the
widening without recording it (``torch.no_grad``) and returns the widened values carrying the
gradient of the unwidened ones: the widening terms (~1e-6 relative) are constants for the gradient,
the values are exactly the widened, sound ones.

:func:`carry` ``(new, old)`` does this for every kind of stored value, by dispatch on the type of
``new``: a tensor gets :class:`_Carry` (forward: ``new`` exactly; backward: the gradient to ``old``,
summed to ``old``'s shape where ``new`` is broadcast); an :class:`~cfruntime.flow.values.Affine` or a
:class:`~cfruntime.tensor.Segmented` carries part by part, a :class:`~cfruntime.tensor.DiagonalBlock`
its core.  A part the widening left alone (``new is old``) stays as it was; any other g-BSCR value is
carried densely.
"""

from __future__ import annotations

from functools import singledispatch

import torch

from cfruntime import tensor as gb
from cfruntime.flow.values import Affine
from cfruntime.tensor import DiagonalBlock, Segmented


class _Carry(torch.autograd.Function):
    """``forward(new, old) = new``; ``backward(g) = (None, g summed to old's shape)``."""

    @staticmethod
    def forward(ctx, new, old):
        ctx.old_shape = old.shape
        return new.view_as(new)

    @staticmethod
    def backward(ctx, g):
        return None, g.sum_to_size(ctx.old_shape)


def _carries_grad(x) -> bool:
    return isinstance(x, torch.Tensor) and x.requires_grad


@singledispatch
def carry(new, old):
    """``new``'s values with ``old``'s gradient (see the module docstring)."""
    if new is old or old is None or isinstance(old, (int, float)):
        return new
    return _carry_tensor(gb.to_dense(new), gb.to_dense(old))


@carry.register
def _(new: float, old):
    return new


@carry.register
def _(new: int, old):
    return new


@carry.register
def _carry_tensor(new: torch.Tensor, old):
    if new is old:
        return new
    if not isinstance(old, torch.Tensor):
        if old is None or isinstance(old, (int, float)):
            return new
        old = gb.to_dense(old)
    return _Carry.apply(new, old) if _carries_grad(old) else new


@carry.register
def _(new: Affine, old):
    if new is old or not isinstance(old, Affine):
        return new
    return Affine(carry(new.coeff, old.coeff), carry(new.const, old.const))


@carry.register
def _(new: Segmented, old):
    if new is old or old is None:
        return new
    if not isinstance(old, Segmented) or old.sdim != new.sdim or old.fill or new.fill:
        return _carry_tensor(gb.to_dense(new), gb.to_dense(old))
    parts = {s: carry(p, old.parts.get(s)) for s, p in new.parts.items()}
    return Segmented(new.shape, new.sdim, parts, new.dtype, new.device)


@carry.register
def _(new: DiagonalBlock, old):
    if new is old or old is None:
        return new
    if isinstance(old, DiagonalBlock) and old.delta == new.delta and old.core.shape == new.core.shape:
        return DiagonalBlock(carry(new.core, old.core), new.delta)
    return _carry_tensor(new.to_dense(0), gb.to_dense(old) if not isinstance(old, torch.Tensor) else old)


def carry_values(new: dict, old: dict) -> dict:
    """:func:`carry` member by member (``name -> value`` dicts of one layer)."""
    return {name: carry(v, old.get(name)) for name, v in new.items()}
