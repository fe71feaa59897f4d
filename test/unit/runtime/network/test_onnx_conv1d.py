"""1-D ``Conv`` (nn4sys_2023's pensieve nets: [1, C, L] inputs) loads as the 2-D convolution of a height-1
image: the network computes what torch's ``conv1d`` computes, with pads, strides and dilations."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from cfruntime.network import load_onnx


@pytest.mark.parametrize("pads,strides,dilations", [([0, 0], [1], [1]), ([1, 2], [2], [1]), ([2, 0], [1], [2])])
def test_conv1d_equals_torch(tmp_path, pads, strides, dilations):
    rng = np.random.default_rng(0)
    K, b = rng.standard_normal((4, 3, 3)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    conv = helper.make_node("Conv", ["X", "K", "b"], ["c"], kernel_shape=[3], pads=pads, strides=strides, dilations=dilations)
    graph = helper.make_graph([conv, helper.make_node("Relu", ["c"], ["Y"])], "c1",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 9])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, None, None])],
                              [numpy_helper.from_array(K, "K"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "c1.onnx"
    onnx.save(model, str(path))
    net = load_onnx(path)
    x = torch.from_numpy(rng.uniform(-1, 1, (5, 27)))
    padded = torch.nn.functional.pad(x.reshape(5, 3, 9), pads)  # ONNX pads: [begin, end] of the one spatial axis
    want = torch.relu(torch.nn.functional.conv1d(padded, torch.from_numpy(K).double(), torch.from_numpy(b).double(),
                                                 stride=strides[0], dilation=dilations[0]))
    got = net.forward(x)
    assert got.shape == (5, want[0].numel())
    assert torch.allclose(got, want.reshape(5, -1), atol=1e-6)


def test_conv1d_on_a_batch_of_two_is_refused(tmp_path):
    K = np.ones((2, 1, 2), np.float32)
    graph = helper.make_graph([helper.make_node("Conv", ["X", "K"], ["Y"], kernel_shape=[2], name="c")], "c1",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 1, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, None, None])], [numpy_helper.from_array(K, "K")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "b.onnx"))
    from cfruntime.errors import NetworkError
    with pytest.raises(NetworkError, match="Conv"):
        load_onnx(tmp_path / "b.onnx")
