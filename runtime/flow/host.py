"""Host-side arithmetic on uniform values (plain Python numbers), with torch's float semantics.

A uniform value (the compiler's metadata says it is the same for every sample and neuron, such as
``curr[last_layer] == 1``) is held as a Python ``float``/``bool``; operations on two of them never
touch a tensor, so deciding a per-layer branch costs no device work and no host-device sync.
Results equal torch's on 0-dimensional float64 tensors: division by zero gives +-inf or NaN, NaN
compares false, ``min``/``max`` propagate NaN.
"""

from __future__ import annotations

from cfruntime.scalar import BINARY, UNARY


def binary(op: str, a, b):
    """``a op b`` for two host numbers (bools count as 0/1 in arithmetic)."""
    return BINARY[op](float(a), float(b))


def unary(op: str, a):
    if op == "not":
        return not a
    return UNARY[op](float(a))
