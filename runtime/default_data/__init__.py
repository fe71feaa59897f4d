"""Embedded default inputs for ``cf-run`` with no arguments (see README.md here).

* :func:`default_network_path` -- ERAN's MNIST 3x50 ReLU net (``mnist_relu_3_50.onnx``, 170 KB,
  preprocessing ``std``: pixels/255, identity Sub 0 / Div 1 inside the graph, ReLU on the logits);
* :func:`default_data_path` -- the first 10 rows of ERAN's ``mnist_test.csv``.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent

DEFAULT_NETWORK = "mnist_relu_3_50.onnx"
DEFAULT_DATA = "mnist_test_10.csv"
DEFAULT_DATASET = "mnist"
DEFAULT_CONVENTION = "std"


def default_network_path() -> Path:
    return _HERE / DEFAULT_NETWORK


def default_data_path() -> Path:
    return _HERE / DEFAULT_DATA
