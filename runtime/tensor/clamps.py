"""A clamp of a dense tensor by numbers, and the positive and negative parts and the magnitude of a tensor.

``max(t, 0)`` is made by ``relu`` (the same values as ``clamp``; ``NaN`` stays ``NaN``).  Where
autograd records it, its backward is one fused kernel (``threshold_backward``) where clamp's is a
comparison, a scalar tensor and a select -- the clamps of a ReLU relaxation (the positive parts of
back-substituted coefficients, ``max(l, 0)``) were the largest part of a certified-training step's
backward -- but with *clamp's* gradient: 1 at ``t = 0``, not relu's 0.  The difference is not a
detail: a back-substituted coefficient is exactly 0 wherever a slope of 0 cut its row, and alpha-
CROWN's slopes start at 0 on half the unstable neurons; with relu's gradient those rows pass no
gradient to the slopes before them, and the optimised margins of mnist 9x200 (eps 0.01, 20 steps)
ended up to 27 lower than alpha-CROWN's, whose clamps pass it.  The negative part's gradient is 0 at
``t = 0`` (:func:`negative_part`): with clamp's there too, a split ``t+ L + t- U`` of a 0 passed
``L + U``, twice the derivative where ``L`` and ``U`` are one affine map (every slope at 0 got twice
its one-sided derivative).
"""

from __future__ import annotations

import torch


def _with_gradient(value, gradient):
    """``value(t)`` where autograd records it with the backward ``gradient(g, t)`` (one element-wise
    autograd function; the plain ``value`` where nothing is recorded)."""

    class _Elementwise(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t: torch.Tensor) -> torch.Tensor:  # noqa: D102 - autograd's interface
            ctx.save_for_backward(t)
            return value(t)

        @staticmethod
        def backward(ctx, g: torch.Tensor) -> torch.Tensor:  # noqa: D102
            (t,) = ctx.saved_tensors
            return gradient(g, t)

    def apply(t: torch.Tensor) -> torch.Tensor:
        return _Elementwise.apply(t) if torch.is_grad_enabled() and t.requires_grad else value(t)

    return apply


# t > -(least normal) is t >= 0 but for negative subnormals (a gradient there is immaterial; a subnormal
# threshold could be flushed to -0 where denormals are): one threshold_backward kernel
_positive_part = _with_gradient(
    torch.relu, lambda g, t: torch.ops.aten.threshold_backward(g, t, -torch.finfo(t.dtype).smallest_normal))
_negative_part = _with_gradient(lambda t: torch.clamp(t, max=0), lambda g, t: torch.where(t < 0, g, 0.0))
_magnitude = _with_gradient(torch.abs, lambda g, t: torch.where(t >= 0, g, -g))


def positive_part(t: torch.Tensor) -> torch.Tensor:
    """``t+ = max(t, 0)``, with clamp's gradient (1 at ``t = 0``)."""
    return _positive_part(t)


def negative_part(t: torch.Tensor) -> torch.Tensor:
    """``t- = min(t, 0)``, with gradient 0 at ``t = 0``, where :func:`positive_part`'s is 1: a
    coefficient split ``t+ L + t- U`` then passes ``L`` at ``t = 0``, not ``L + U`` (clamp's gradient
    on both halves), which doubled the gradient of every slope at 0 (a product ``c * al`` that is 0,
    then split at an affine layer, whose ``L`` and ``U`` are the same map: the gradient must be it once)."""
    return _negative_part(t)


def magnitude(t: torch.Tensor) -> torch.Tensor:
    """``|t|`` with gradient 1 at ``t = 0`` (abs's is 0): the centre/radius form of a split, ``x (p +
    n)/2 + |x| (p - n)/2``, then has the gradient ``p`` at ``x = 0``, as ``x+ p + x- n`` with
    :func:`positive_part` and :func:`negative_part` has (abs's gradient gave the mean ``(p + n)/2``: a
    slope's derivative at 0 came out 0.54-0.67x the one-sided one where a coefficient 0 met a ReLU's two
    lines)."""
    return _magnitude(t)


def clamp_number(t: torch.Tensor, lo, hi) -> torch.Tensor:
    """``torch.clamp(t, lo, hi)`` for numbers (or None) ``lo`` and ``hi`` (values and gradients; the
    positive and negative parts, ``lo = 0`` or ``hi = 0`` alone, with gradients that add up to 1 at 0)."""
    if t.dtype.is_floating_point and (lo is None) != (hi is None):
        bound = lo if hi is None else hi
        if not isinstance(bound, bool) and bound == 0:
            return positive_part(t) if hi is None else negative_part(t)
    return torch.clamp(t, lo, hi)
