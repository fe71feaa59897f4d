"""cf-run --vnnlib verdicts on generated VNN-COMP-like networks (issue 16): a verivital-like conv net
(a small Conv, ReLU, a zero Pad before MaxPool or AveragePool) and a net shaped like VNN-COMP's
``test`` benchmark (a rank-1 input without a batch dimension).  A property that holds gives ``unsat``
(or ``unknown``), a violated one ``sat``; the JSON regions carry finite row bounds."""

from __future__ import annotations

import pytest
from cftest.vnnlib_cases import assert_verdicts, generated_net, properties, verdict


NETS = ["verivital_maxpool", "verivital_avgpool", "test_vector"]
RUNS = [("deeppoly", "compiled"), ("deepz", "compiled"), ("crown_ibp", "interpreter")]


@pytest.mark.parametrize("net_name", NETS)
@pytest.mark.parametrize("certifier,engine", RUNS)
def test_verdicts(tmp_path, capsys, net_name, certifier, engine):
    assert_verdicts(capsys, tmp_path, generated_net(tmp_path, net_name), certifier, engine)


def test_a_small_box_is_proved(tmp_path, capsys):
    """DeepPoly proves the property that holds on every generated net (so 'unknown' above is not all
    it ever says)."""
    for net_name in NETS:
        path = generated_net(tmp_path, net_name)
        holds, _ = properties(tmp_path, path, radius=1e-4)
        assert verdict(capsys, tmp_path, "--certifier", "deeppoly", "--net", path, "--vnnlib", holds) == "unsat", net_name
