"""Which free inputs a network reads only through integer roundings (``runtime/network/discrete_inputs.py``)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from cfruntime.network.discrete_inputs import NotDiscrete, Rounding, discrete_reads
from cftest.discrete_models import position_model

INT64 = (-float(2 ** 63), float(2 ** 63 - 1))


def _free(*idx, n=4):
    mask = np.zeros(n, dtype=bool)
    mask[list(idx)] = True
    return mask


@pytest.mark.parametrize(("op", "kind"), [("Cast", "trunc"), ("Floor", "floor"), ("Ceil", "ceil"), ("Round", "round")])
def test_a_position_read_through_a_rounding_is_discrete(op, kind):
    """x_2 reaches the network only through its rounding (then a cast to an index); x_3 is read by nothing."""
    reads = discrete_reads(position_model(op), _free(2, 3))
    assert reads == {2: Rounding("trunc", *INT64) if op == "Cast" else Rounding(kind)}


def test_nothing_free_reads_nothing():
    assert discrete_reads(position_model(), _free()) == {}


def test_a_pixel_read_as_a_real_is_not_discrete():
    """x_0 is multiplied by the looked-up row: a real-valued read, named with its node."""
    with pytest.raises(NotDiscrete, match=r"^X_0 reaches node 'mul' \(Mul\)$"):
        discrete_reads(position_model(), _free(0, 2))


def test_arithmetic_before_the_rounding_is_not_discrete():
    """``Cast(-x_2)`` is discrete too, but this analysis only follows selections to a rounding: refused, not
    mis-read (the enumeration's witnesses assume the rounding reads x_2 itself)."""
    with pytest.raises(NotDiscrete, match=r"X_2 reaches node 'between' \(Neg\)"):
        discrete_reads(position_model(between="Neg"), _free(2))


def test_a_selection_in_between_is_followed():
    """``Identity`` and ``Cast`` to float64 keep the value: x_2 is still read only through the rounding."""
    assert discrete_reads(position_model(between="Identity"), _free(2)) == {2: Rounding("trunc", *INT64)}


def _model(nodes, inputs=("x",), n=4, outputs=(("y", TensorProto.FLOAT),)):
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(i, TensorProto.FLOAT, [n]) for i in inputs],
                              [helper.make_tensor_value_info(o, t, None) for o, t in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))


def test_an_unrounded_output_is_not_discrete():
    m = _model([helper.make_node("Identity", ["x"], ["y"], name="id")])
    with pytest.raises(NotDiscrete, match=r"X_1 reaches the output 'y' without a rounding"):
        discrete_reads(m, _free(1))
    assert discrete_reads(m, _free()) == {}


def test_a_free_input_rounded_two_ways_is_refused():
    nodes = [helper.make_node("Floor", ["x"], ["f"], name="floor"), helper.make_node("Ceil", ["x"], ["c"], name="ceil"),
             helper.make_node("Add", ["f", "c"], ["y"], name="add")]
    with pytest.raises(NotDiscrete, match=r"X_1 is rounded two ways \(floor and ceil, at node 'ceil' \(Ceil\)\)"):
        discrete_reads(_model(nodes), _free(1))


def test_a_narrow_cast_keeps_its_range():
    nodes = [helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT8, name="to_int8"),
             helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT, name="back")]
    assert discrete_reads(_model(nodes), _free(0)) == {0: Rounding("trunc", -128.0, 127.0)}


def test_a_selection_with_a_computed_index_is_refused():
    """``Gather(x[0:3], Cast(x_3))``: which element is read depends on x_3, so x_0..x_2 are read by a choice
    the tokens cannot say."""
    nodes = [_const("i3", np.array(3, dtype=np.int64)), helper.make_node("Gather", ["x", "i3"], ["p"], axis=0, name="g3"),
             helper.make_node("Cast", ["p"], ["pi"], to=TensorProto.INT64, name="pi"),
             _const("s0", np.array([0], dtype=np.int64)), _const("s3", np.array([3], dtype=np.int64)),
             helper.make_node("Slice", ["x", "s0", "s3"], ["head"], name="head"),
             helper.make_node("Gather", ["head", "pi"], ["v"], axis=0, name="pick"),
             helper.make_node("Floor", ["v"], ["y"], name="floor")]
    with pytest.raises(NotDiscrete, match=r"X_0 reaches node 'pick' \(Gather\): its input 1 \(a parameter\) is not a constant"):
        discrete_reads(_model(nodes), _free(0, 3))
    # with only x_3 free, x[0:3] holds no free input: a function of fixed inputs and a rounding
    assert discrete_reads(_model(nodes), _free(3)) == {3: Rounding("trunc", *INT64)}


def test_an_interpolating_resize_is_not_a_selection():
    nodes = [_const("shape", np.array([1, 1, 4], dtype=np.int64)), helper.make_node("Reshape", ["x", "shape"], ["r"], name="r"),
             _const("scales", np.array([1.0, 1.0, 2.0], dtype=np.float32)),
             helper.make_node("Resize", ["r", "", "scales"], ["z"], mode="linear", name="resize"),
             helper.make_node("Floor", ["z"], ["y"], name="floor")]
    with pytest.raises(NotDiscrete, match=r"X_2 reaches node 'resize' \(Resize\): mode 'linear'"):
        discrete_reads(_model(nodes), _free(2))
    nearest = [*nodes[:3], helper.make_node("Resize", ["r", "", "scales"], ["z"], mode="nearest", name="resize"), nodes[4]]
    assert discrete_reads(_model(nearest), _free(2)) == {2: Rounding("floor")}


def test_constants_mixed_into_a_selection_carry_no_input():
    """``Concat(x[2:3], c)`` then ``Floor``: the constant's elements are no input's; x_2 is read by the floor."""
    nodes = [_const("s", np.array([2], dtype=np.int64)), _const("e", np.array([3], dtype=np.int64)),
             helper.make_node("Slice", ["x", "s", "e"], ["p"], name="p"), _const("c", np.array([7.5], dtype=np.float32)),
             helper.make_node("Concat", ["p", "c"], ["pc"], axis=0, name="cat"), helper.make_node("Floor", ["pc"], ["y"], name="floor")]
    assert discrete_reads(_model(nodes), _free(2)) == {2: Rounding("floor")}


def test_two_data_inputs_are_refused():
    m = _model([helper.make_node("Add", ["x", "z"], ["y"])], inputs=("x", "z"))
    with pytest.raises(NotDiscrete, match="2 data inputs"):
        discrete_reads(m, _free(0))


def test_the_property_must_fit_the_input():
    with pytest.raises(NotDiscrete, match="the model's input has 4 elements, the property 5"):
        discrete_reads(position_model(), np.zeros(5, dtype=bool))


def test_initializers_are_constants():
    """The index of a ``Gather`` given as an initializer (as exporters write it) is a constant parameter."""
    graph = helper.make_graph([helper.make_node("Gather", ["x", "i2"], ["p"], axis=0, name="g"),
                               helper.make_node("Floor", ["p"], ["y"], name="floor")], "m",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.array([2], dtype=np.int64), "i2")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert discrete_reads(m, _free(2)) == {2: Rounding("floor")}
    assert discrete_reads(m, _free(1, 2)) == {2: Rounding("floor")}  # x_1: read by nothing


def test_subgraphs_and_random_numbers_are_refused():
    """An ``If`` branch may read x without listing it; a random op makes the output no function of x at all."""
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["b"])], "branch", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])])
    nodes = [_const("c", np.array(True)), helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch, name="if")]
    with pytest.raises(NotDiscrete, match=r"node 'if' \(If\) has a subgraph"):
        discrete_reads(_model(nodes), _free())
    nodes = [helper.make_node("RandomUniformLike", ["x"], ["r"], name="noise"), helper.make_node("Floor", ["r"], ["y"], name="f")]
    with pytest.raises(NotDiscrete, match=r"node 'noise' \(RandomUniformLike\) draws random numbers"):
        discrete_reads(_model(nodes), _free())
