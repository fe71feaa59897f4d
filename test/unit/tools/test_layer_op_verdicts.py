"""cf-run --vnnlib verdicts on generated networks with the layer ops of issue 16: a Concat of
branches after different nonlinear layers, a Slice and Split of a convolution joined again by a
Concat, and a rank-1 input with Split, Slice and Concat.  A property that holds gives ``unsat`` (or
``unknown``), a violated one ``sat``; DeepPoly proves the one that holds on a small box."""

from __future__ import annotations

import onnx
import pytest

from cfruntime.network.builders import layer_op_model
from cftest.vnnlib_cases import assert_verdicts, properties, verdict

NETS = ["concat_branches", "slice_split", "vector", "clip"]
RUNS = [("deeppoly", "compiled"), ("deepz", "compiled"), ("crown_ibp", "interpreter")]


def saved(tmp_path, net_name):
    path = tmp_path / f"{net_name}.onnx"
    onnx.save(layer_op_model(net_name, seed=4), str(path))
    return path


@pytest.mark.parametrize("net_name", NETS)
@pytest.mark.parametrize("certifier,engine", RUNS)
def test_verdicts(tmp_path, capsys, net_name, certifier, engine):
    assert_verdicts(capsys, tmp_path, saved(tmp_path, net_name), certifier, engine)


@pytest.mark.parametrize("net_name", NETS)
def test_a_small_box_is_proved(tmp_path, capsys, net_name):
    path = saved(tmp_path, net_name)
    holds, _ = properties(tmp_path, path, radius=1e-4)
    assert verdict(capsys, tmp_path, "--certifier", "deeppoly", "--net", path, "--vnnlib", holds) == "unsat"
