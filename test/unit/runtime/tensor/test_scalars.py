"""Numbers as kept 0-dimensional tensors (:mod:`cfruntime.tensor.scalars`): a selection against a number
is one operation, not two, and gives what ``torch.where`` with the number gives."""

import torch

from cfruntime import tensor as gb
from cfruntime.op_count import OpCounter
from cfruntime.tensor.scalars import scalar_like, where_number


def test_one_tensor_per_value_dtype_and_device():
    x32, x64 = torch.zeros(3), torch.zeros(3, dtype=torch.float64)
    assert scalar_like(0.5, x32) is scalar_like(0.5, x32)
    assert scalar_like(0.5, x32) is not scalar_like(0.5, x64) and scalar_like(0.5, x64).dtype == torch.float64
    assert scalar_like(0.5, x32) is not scalar_like(-0.5, x32) and scalar_like(-0.5, x32).item() == -0.5


def test_a_selection_against_a_number_is_one_operation():
    c = torch.tensor([True, False, True])
    x = torch.tensor([1.0, 2.0, 3.0])
    gb.where(c, x, 0.0)  # the number's tensor made once
    with OpCounter() as count:
        got = gb.where(c, x, 0.0)
        got2 = gb.where(c, 7.0, x)
    assert "scalar_tensor" not in count.by_name and count.by_name["where"] == 2, count.by_name
    assert torch.equal(got, torch.where(c, x, 0.0)) and torch.equal(got2, torch.where(c, 7.0, x))
    assert got.dtype == x.dtype


def test_where_number_takes_the_number_on_either_side():
    c = torch.tensor([True, False])
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert torch.equal(where_number(c, x, -1.0), torch.tensor([1.0, -1.0], dtype=torch.float64))
    assert torch.equal(where_number(c, -1.0, x), torch.tensor([-1.0, 2.0], dtype=torch.float64))
    assert where_number(c, 3.0, x).dtype == torch.float64
