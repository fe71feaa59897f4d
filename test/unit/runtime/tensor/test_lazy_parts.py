"""Parts made on first read (:mod:`cfruntime.tensor.lazy_parts`): a rule that reads a Float member over
every stored layer makes the view of the layer it multiplies only."""

import pytest
import torch

import cfmlir
from cfruntime.op_count import OpCounter
from cfruntime.tensor.lazy_parts import LazyParts

from cftest.nets import boxes, mlp


def test_a_part_is_made_once_when_read_and_never_when_not():
    made = []

    def maker(s):
        return lambda: made.append(s) or torch.full((1, 1, 2), float(s))

    parts = LazyParts({0: maker(0), 2: maker(2), 4: maker(4)})
    assert list(parts) == [0, 2, 4] and len(parts) == 3 and 2 in parts and 3 not in parts
    assert made == []  # keys, length and membership make nothing
    assert parts.get(2)[0, 0, 0] == 2.0 and parts[2] is parts.get(2)
    assert parts.get(3) is None
    with pytest.raises(KeyError):
        parts[3]
    assert made == [2]
    assert dict(parts.items()).keys() == {0, 2, 4} and sorted(made) == [0, 2, 4]  # items make the rest, once


def test_interval_bounds_view_only_the_predecessor():
    """IBP over an MLP of ``L`` affine layers, planned layout: each affine layer reads its predecessor's
    ``l`` and ``u`` (two views), not those of every layer before it (which grew with the square of the
    depth: 2 + 4 + 6 ... views)."""
    sizes = [4, 6, 6, 6, 6, 6, 3]
    net = mlp(sizes, seed=1)
    lb, ub = boxes(4, batch=2, seed=2, radius=0.1)
    engine = cfmlir.engine_for(cfmlir.compile("ibp"), dtype="float64", graph=False)
    engine.bounds(net, lb, ub)  # warm: one-off views of the weights
    with OpCounter() as c:
        engine.bounds(net, lb, ub)
    affine = len(sizes) - 1
    assert c.by_name["unsqueeze"] <= 2 * affine, c.by_name
