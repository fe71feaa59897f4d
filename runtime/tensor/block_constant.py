"""Constant block: one scalar repeated over the whole extent.

The core is a single value (stored as a tensor with all dims of size 1).
Index map: every dense index of the extent reads core index ``(0, ..., 0)``;
no holes.

Example: value ``7`` with extent [2, 3] is ``[[7, 7, 7], [7, 7, 7]]``.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .block_repeat import RepeatBlock


class ConstantBlock(RepeatBlock):
    kind = "constant"

    def __init__(self, core: torch.Tensor, shape: Sequence[int]):
        shape = tuple(int(s) for s in shape)
        if core.numel() != 1:
            raise ValueError("constant block core must hold exactly one value")
        super().__init__(core.reshape((1,) * len(shape)), shape)

    @classmethod
    def of(cls, value, shape, dtype=torch.float32, device=None) -> "ConstantBlock":
        return cls(torch.full((1,) * len(shape), value, dtype=dtype, device=device), shape)

    @property
    def value(self):
        return self.core.reshape(()).item()
