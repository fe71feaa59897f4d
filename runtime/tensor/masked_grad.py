"""Multiplication and division whose gradient stays finite where their result is not used.

Rules divide by quantities that may be zero on some neurons and select the quotient only elsewhere,
e.g. ReLU's upper slope ``u / (u - l)`` under ``where(l >= 0, ..., where(u <= 0, ..., slope))``: a
neuron with ``u == l`` (every neuron, at ``eps = 0``, where certified training starts) gets
``inf``/``NaN`` in the unselected branch, and products with it (``slope * n``) too.  The forward
values are harmless (``where`` drops them), but torch's backward of ``a * b`` and ``a / b`` multiplies
the incoming gradient (0 there: the branch was not selected) by ``b``, ``1 / b`` or ``a / b^2``
(``inf``), and ``0 * inf`` is ``NaN``, which then poisons every gradient it is summed into.

:func:`multiply` and :func:`divide` are ``a * b`` and ``a / b`` whenever no gradient is recorded (the
forward-only path is unchanged: one kernel), and otherwise an autograd function whose backward gives
a zero gradient wherever the incoming one is zero (the derivative of ``where(c, x, a op b)`` there:
the value of ``a op b`` does not matter)::

    d(a * b) = g b da + g a db,   d(a / b) = (g / b) da - (g (a / b) / b) db,   0 where g == 0
"""

from __future__ import annotations

import torch


def _masked(zero: torch.Tensor, g: torch.Tensor, x: torch.Tensor, shape) -> torch.Tensor:
    """``x`` where ``g != 0``, else ``g`` (0 there), summed to ``shape``."""
    return torch.where(zero, g, x).sum_to_size(shape)


class _MaskedMultiply(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        zero = g == 0
        ga = _masked(zero, g, g * b, a.shape) if ctx.needs_input_grad[0] else None
        gb = _masked(zero, g, g * a, b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


class _MaskedDivide(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        out = a / b
        ctx.save_for_backward(b, out)
        ctx.a_shape = a.shape
        return out

    @staticmethod
    def backward(ctx, g):
        b, out = ctx.saved_tensors
        zero = g == 0
        ga = _masked(zero, g, g / b, ctx.a_shape) if ctx.needs_input_grad[0] else None
        gb = _masked(zero, g, g * out / -b, b.shape) if ctx.needs_input_grad[1] else None
        return ga, gb


def records(*ts) -> bool:
    """Whether autograd records an operation on these values (tensors or numbers): then in-place
    updates, which would overwrite values its backward needs, and ``out=`` products, which it cannot
    record, are made out of place."""
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in ts)


def _tensors(a, b):
    """Both operands as tensors (a number takes the other's dtype and device)."""
    ref = a if isinstance(a, torch.Tensor) else b
    as_t = lambda x: x if isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=ref.dtype, device=ref.device)  # noqa: E731
    return as_t(a), as_t(b)


def multiply(a, b):
    """``a * b`` (tensors or numbers, broadcast); see the module docstring for its gradient."""
    if records(a, b):
        return _MaskedMultiply.apply(*_tensors(a, b))
    return a * b


def divide(a, b):
    """``a / b`` (tensors or numbers, broadcast); see the module docstring for its gradient."""
    if records(a, b):
        return _MaskedDivide.apply(*_tensors(a, b))
    return a / b
