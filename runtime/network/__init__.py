"""Network layer graph of the runtime: ONNX loading, concrete evaluation.

See :mod:`cfruntime.network.graph` (layer kinds, numbering) and
:mod:`cfruntime.network.onnx_loader` (which ONNX ops are supported and how
consecutive affine ops are folded into layers).
"""

from cfruntime.network.graph import (
    AFFINE_KINDS,
    BINARY_KINDS,
    ELEMENTWISE_KINDS,
    LAYER_KINDS,
    ConvSpec,
    GatherSpec,
    Layer,
    MaxPoolSpec,
    Network,
)
from cfruntime.network.onnx_loader import SUPPORTED_OPS, load_onnx, network_from_model

__all__ = [
    "AFFINE_KINDS", "BINARY_KINDS", "ELEMENTWISE_KINDS", "LAYER_KINDS", "ConvSpec", "GatherSpec", "Layer", "MaxPoolSpec", "Network",
    "SUPPORTED_OPS", "load_onnx", "network_from_model",
]
