"""Small ONNX models that read some inputs only through integer roundings (the shape of cctsdb_yolo_2023: a
position cast to an integer and used as an index, an ``ArgMax`` that no certifier rule covers), for the tests
of :mod:`cfruntime.network.discrete_inputs`, :mod:`cfruntime.discrete_enumeration` and
``tools/discrete_mode.py``."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: the table the rounded position indexes: row ``p`` scales the two fixed inputs
TABLE = np.array([[1.0, -1.0], [0.5, 2.0], [-1.0, 1.0], [2.0, 0.25], [0.0, 1.0], [1.5, -0.5], [-0.5, -0.5],
                  [0.25, 3.0]], dtype=np.float32)


def _const(name: str, value) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))


def position_model(rounding: str = "Cast", between: str | None = None) -> onnx.ModelProto:
    """``x [4]``: ``x_0, x_1`` pixel values, ``x_2`` a position, ``x_3`` unused.  ``p = rounding(x_2)`` (``Cast``
    to int64, or ``Floor``/``Ceil``/``Round`` then a cast), ``s = TABLE[p] * (x_0, x_1)``; the outputs are
    ``(argmax(s), s_0 + s_1)``.  ``between``: an op put between ``x_2`` and its rounding (``"Neg"`` makes the
    position a real-valued read)."""
    nodes = [_const("i2", np.array(2, dtype=np.int64)), _const("s0", np.array([0], dtype=np.int64)),
             _const("s2", np.array([2], dtype=np.int64)), _const("table", TABLE),
             helper.make_node("Gather", ["x", "i2"], ["pos_real"], axis=0, name="take_position")]
    src = "pos_real"
    if between is not None:
        nodes.append(helper.make_node(between, [src], ["pos_between"], name="between"))
        src = "pos_between"
    if rounding == "Cast":
        nodes.append(helper.make_node("Cast", [src], ["pos"], to=TensorProto.INT64, name="round"))
    else:
        nodes += [helper.make_node(rounding, [src], ["pos_f"], name="round"),
                  helper.make_node("Cast", ["pos_f"], ["pos"], to=TensorProto.INT64, name="to_index")]
    nodes += [helper.make_node("Gather", ["table", "pos"], ["row"], axis=0, name="lookup"),
              helper.make_node("Slice", ["x", "s0", "s2"], ["pixels"], name="pixels"),
              helper.make_node("Mul", ["row", "pixels"], ["scores"], name="mul"),
              helper.make_node("ArgMax", ["scores"], ["best"], axis=0, keepdims=1, name="argmax"),
              helper.make_node("Cast", ["best"], ["best_f"], to=TensorProto.FLOAT, name="best_f"),
              helper.make_node("ReduceSum", ["scores"], ["total"], keepdims=1, name="total"),
              helper.make_node("Concat", ["best_f", "total"], ["y"], axis=0, name="y")]
    graph = helper.make_graph(nodes, "position", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what ONNX Runtime 1.23 reads (onnx's own default is newer)
    return model


def position_output(x: np.ndarray, rounding: str = "Cast") -> np.ndarray:
    """What :func:`position_model` computes at ``x`` (numpy, float32), for checking the enumeration."""
    x = np.asarray(x, dtype=np.float32)
    r = {"Cast": np.trunc, "Floor": np.floor, "Ceil": np.ceil, "Round": np.round}[rounding]
    scores = TABLE[int(r(x[2]))] * x[:2]
    return np.array([float(np.argmax(scores)), float(scores.sum(dtype=np.float32))])


def vnnlib_text(lo, hi, outputs: list[str]) -> str:
    """A VNN-LIB property: ``lo <= x <= hi``, unsafe when every output assertion of ``outputs`` holds (e.g.
    ``"(<= Y_1 0.5)"``)."""
    out = [f"(declare-const X_{i} Real)" for i in range(len(lo))] + ["(declare-const Y_0 Real)", "(declare-const Y_1 Real)"]
    for i, (a, b) in enumerate(zip(lo, hi)):
        out += [f"(assert (>= X_{i} {a!r}))", f"(assert (<= X_{i} {b!r}))"]
    out += [f"(assert {o})" for o in outputs]
    return "\n".join(out) + "\n"
