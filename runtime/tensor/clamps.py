"""A clamp of a dense tensor by numbers, and the positive part of a tensor.

``max(t, 0)`` is made by ``relu``: the same values (and ``NaN`` stays ``NaN``), but where autograd records
it, relu's backward is one fused kernel (``threshold_backward``) and clamp's a comparison, a scalar
tensor and a select; the clamps of a ReLU relaxation (the positive parts of back-substituted
coefficients, ``max(l, 0)``) were the largest part of a certified-training step's backward.
"""

from __future__ import annotations

import torch


def clamp_number(t: torch.Tensor, lo, hi) -> torch.Tensor:
    """``torch.clamp(t, lo, hi)`` for numbers (or None) ``lo`` and ``hi``."""
    if hi is None and lo is not None and not isinstance(lo, bool) and lo == 0:
        return torch.relu(t)
    return torch.clamp(t, lo, hi)


def positive_part(t: torch.Tensor) -> torch.Tensor:
    """``t+ = max(t, 0)``."""
    return torch.relu(t)
