"""Numbers as 0-dimensional tensors, made once per value, dtype and device.

``torch.where(c, x, 0.0)`` makes a ``scalar_tensor`` for the number on every call (one more operation,
a kernel launch on a GPU); so does ``torch.nextafter(x, -inf)``'s target.  :func:`scalar_like` keeps
one 0-dimensional tensor per ``(value, dtype, device)`` and hands it out again::

    torch.where(c, x, scalar_like(0.0, x))      # one operation, where there were two
    where_number(c, x, 0.0)                     # the same, either branch a number

Not kept when made inside a CUDA graph's capture (the graph's memory pool owns it then).  Never
write into what it returns.
"""

from __future__ import annotations

import torch

_KEPT: dict = {}


def scalar_like(value: float, like: torch.Tensor) -> torch.Tensor:
    """``value`` as a 0-dimensional tensor of ``like``'s dtype on ``like``'s device (shared: read only)."""
    key = (float(value), like.dtype, like.device)
    hit = _KEPT.get(key)
    if hit is None:
        hit = torch.full((), value, dtype=like.dtype, device=like.device)
        if not (like.is_cuda and torch.cuda.is_current_stream_capturing()):
            _KEPT[key] = hit
    return hit


def where_number(c: torch.Tensor, a, b) -> torch.Tensor:
    """``torch.where(c, a, b)`` where one of ``a``/``b`` is a tensor and the other may be a number: the
    number as a kept 0-dimensional tensor of the tensor's dtype and device (:func:`scalar_like`)."""
    like = a if isinstance(a, torch.Tensor) else b
    return torch.where(c, a if isinstance(a, torch.Tensor) else scalar_like(a, like),
                       b if isinstance(b, torch.Tensor) else scalar_like(b, like))
