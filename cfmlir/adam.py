"""Adam (Kingma and Ba, 2015) over lists of tensors, written with torch's ``_foreach`` operations.

The update is torch's ``torch.optim.Adam`` (no weight decay, no AMSGrad): with the gradient ``g`` of
step ``t``::

    m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)

Why not ``torch.optim.Adam``: its first construction imports ``torch._dynamo`` (about 2 s on a 2-core
CPU, once per process: a branch-and-bound worker pays it within its instance's time limit), and its
per-tensor loop costs ~9 operations and a host sync per tensor per step, where this costs 8 ``_foreach``
operations per group of tensors.  The caller steps under its own schedule and projects afterwards.
"""

from __future__ import annotations

import math

import torch


class Adam:
    """``Adam(tensors, lr)``; :meth:`add_group` adds tensors with their own learning rate (as
    ``torch.optim``'s parameter groups); :meth:`zero_grad`, :meth:`step` as in ``torch.optim``."""

    def __init__(self, tensors, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        if not lr > 0:
            raise ValueError(f"Adam: the learning rate must be positive, got {lr}")
        self.betas, self.eps = betas, eps
        self.groups: list[dict] = []
        self.add_group(tensors, lr)

    def add_group(self, tensors, lr: float) -> None:
        tensors = list(tensors)
        self.groups.append({"params": tensors, "lr": lr,
                            "m": [torch.zeros_like(p) for p in tensors], "v": [torch.zeros_like(p) for p in tensors],
                            "t": [0] * len(tensors)})  # steps taken per tensor (one without a gradient takes none)

    def zero_grad(self) -> None:
        for g in self.groups:
            for p in g["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        for g in self.groups:
            live = [i for i, p in enumerate(g["params"]) if p.grad is not None]
            for i in live:
                g["t"][i] += 1
            for t in sorted({g["t"][i] for i in live}):  # one set of operations per step count (usually one)
                self._update(g, [i for i in live if g["t"][i] == t], t)

    @torch.no_grad()
    def _update(self, g: dict, live: list[int], t: int) -> None:
        """One step of the tensors ``live`` of group ``g``, each at its step ``t``."""
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** t, math.sqrt(1 - b2 ** t)
        params = [g["params"][i] for i in live]
        grads = [p.grad for p in params]
        m, v = [g["m"][i] for i in live], [g["v"][i] for i in live]
        torch._foreach_lerp_(m, grads, 1 - b1)  # m + (1 - b1) (g - m) = b1 m + (1 - b1) g
        torch._foreach_mul_(v, b2)
        torch._foreach_addcmul_(v, grads, grads, value=1 - b2)
        denom = torch._foreach_sqrt(v)
        torch._foreach_div_(denom, c2)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(params, m, denom, value=-g["lr"] / c1)
