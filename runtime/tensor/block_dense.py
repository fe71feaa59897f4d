"""Dense block: the core *is* the dense form of the block.

Index map: identity, ``phi(i_1..i_r) = (i_1..i_r)``; no holes.

Example: core ``[[1, 2], [3, 4]]`` placed at start ``(1, 0)`` of a 3x3 tensor
with background 0 gives::

    [[0, 0, 0],
     [1, 2, 0],
     [3, 4, 0]]
"""

from __future__ import annotations

import torch

from .block_repeat import RepeatBlock


class DenseBlock(RepeatBlock):
    kind = "dense"

    def __init__(self, core: torch.Tensor):
        super().__init__(core, tuple(core.shape))

    def to_dense(self, fill=None) -> torch.Tensor:
        return self.core
