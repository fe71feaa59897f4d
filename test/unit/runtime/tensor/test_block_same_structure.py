"""``Block.same_structure``: the same block without reading a value (kind, extent, parameters, and
stored tensors that are the same view of the same storage)."""

import pytest
import torch

from cfruntime.tensor import ConstantBlock, ConvBlock, DenseBlock, DiagonalBlock, PatchesBlock, RepeatBlock
from cfruntime.tensor.block_unit_dims import UnitDimBlock

CORE = torch.arange(12.0).reshape(3, 4)
WEIGHT = torch.ones(2, 1, 3, 3)
PATCHES = torch.ones(1, 2, 2, 2, 1, 3, 3)

#: kind -> builder of a block over the given stored tensors
BUILDERS = {
    "dense": lambda: DenseBlock(CORE),
    "repeat": lambda: RepeatBlock(CORE[:, :1], (3, 4)),
    "constant": lambda: ConstantBlock(CORE[:1, :1], (3, 4)),
    "diagonal": lambda: DiagonalBlock(CORE, 1),
    "conv": lambda: ConvBlock(WEIGHT, (4, 4), 1, 0, lead=(2,)),
    "patches": lambda: PatchesBlock(PATCHES, (4, 4), 1, 0),
    "unit_dims": lambda: UnitDimBlock(ConvBlock(WEIGHT, (4, 4)), (2,)),
}


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_rebuilt_over_the_same_storage_is_the_same(kind):
    a, b = BUILDERS[kind](), BUILDERS[kind]()
    assert a is not b and a.same_structure(b) and b.same_structure(a) and a.same_structure(a)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_equal_values_in_other_storage_are_not_the_same(kind):
    a = BUILDERS[kind]()
    assert not a.same_structure(a.map_values(torch.clone))


def test_kind_extent_and_parameters_count():
    assert not DenseBlock(CORE).same_structure(RepeatBlock(CORE, (3, 4)))  # same values, other kind
    assert not DiagonalBlock(CORE, 0).same_structure(DiagonalBlock(CORE, 1))
    assert not ConvBlock(WEIGHT, (4, 4), 1, 0).same_structure(ConvBlock(WEIGHT, (4, 4), 1, 1))
    assert not ConvBlock(WEIGHT, (4, 4)).same_structure(ConvBlock(WEIGHT, (5, 5)))
    assert not DenseBlock(CORE[:, :2]).same_structure(DenseBlock(CORE[:, 2:]))  # other view
    assert not DenseBlock(CORE.t()).same_structure(DenseBlock(CORE.t().contiguous()))


def test_wrapped_blocks_are_compared_by_structure():
    conv = ConvBlock(WEIGHT, (4, 4))
    assert UnitDimBlock(conv, (2,)).same_structure(UnitDimBlock(ConvBlock(WEIGHT, (4, 4)), (2,)))
    assert not UnitDimBlock(conv, (2,)).same_structure(UnitDimBlock(ConvBlock(WEIGHT.clone(), (4, 4)), (2,)))
