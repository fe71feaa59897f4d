"""A gather layer's weight is one selection block (``cfruntime.flow.parameters.weight``), never its dense
``size x pred`` matrix: every shipped certifier's compiled bounds on a generator net (a transposed
convolution's interleaved phases, a nearest-neighbour upsampling) equal the reference interpreter's and
are sound, and the certifiers cgan_2023 runs never unroll the block (28,800 x 28,800 float64 there)."""

from __future__ import annotations

import pytest
import torch

from cftest.nets import boxes, generator_net
from cfruntime.flow import parameters
from cfruntime.flow.engine import run_certifier
from cfruntime.flow.representation import Representation
from cfruntime.tensor import SelectBlock

from cfmlir.certifiers import BASE_CERTIFIERS, PARAMETRIC_CERTIFIERS

SHIPPED = BASE_CERTIFIERS + PARAMETRIC_CERTIFIERS + ("deeppoly_2",)


@pytest.fixture(scope="module", params=[False, True], ids=["convtranspose", "upsample"])
def case(request):
    net = generator_net(upsample=request.param)
    lb, ub = boxes(net.input_size, batch=3, radius=0.4)
    return request.param, net, lb, ub


def test_a_gather_weight_is_one_selection_block(case):
    _, net, _, _ = case
    gathers = [layer for layer in net.layers if layer.kind == "affine" and layer.linear_kind == "gather"]
    assert gathers
    for layer in gathers:
        w = parameters.weight(layer, Representation("planned"))
        (block,) = w.parts.values()
        assert isinstance(block, SelectBlock) and block.shape == (1, layer.size, net.layers[layer.preds[0]].size)
        assert block.nbytes() <= layer.size * 8  # its values, not size x pred


@pytest.mark.parametrize("name", SHIPPED)
def test_compiled_bounds_equal_the_interpreter(shipped, compiled_matches_interpreter, case, name):
    upsample, net, lb, ub = case
    compiled_matches_interpreter(f"{name} on the generator net (upsample={upsample})", net, lb, ub,
                                 shipped.interpreted(name), lambda rw: shipped.compiled(name, rw), [("planned", True)])


@pytest.mark.parametrize("name", ["ibp", "crown_ibp", "deeppoly", "alpha_deeppoly", "deepz"])
def test_never_unrolled(shipped, case, monkeypatch, name):
    """The bounds equal those of the dense representation (the matrix unrolled), with every unrolling of a
    selection block refused."""
    _, net, lb, ub = case
    cert = shipped.compiled(name)
    dense = run_certifier(cert, net, lb, ub, representation="dense")

    def refuse(self, fill):
        raise AssertionError("a selection block was unrolled")

    monkeypatch.setattr(SelectBlock, "to_dense", refuse)
    planned = run_certifier(cert, net, lb, ub)
    torch.testing.assert_close(planned.lower, dense.lower, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(planned.upper, dense.upper, rtol=1e-12, atol=1e-12)
