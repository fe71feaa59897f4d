"""Small ``nn.Module`` models built in the tests (for :mod:`cfmlir.bounded` and the module import), and
their ONNX export read by our loader."""

from __future__ import annotations

import io
import warnings

import torch
from torch import nn


class Normalize(nn.Module):
    """``(x - mean) / std`` per channel (buffers)."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))

    def forward(self, x):
        return (x - self.mean) / self.std


class Residual(nn.Module):
    """conv - relu - (conv - relu) + skip - maxpool - avgpool - flatten - linear - tanh - linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(16, 5)
        self.out = nn.Linear(5, 3)

    def forward(self, x):
        h = torch.relu(self.c1(x))
        h = h + torch.relu(self.c2(h))
        h = torch.flatten(self.avg(self.pool(h)), 1)
        return self.out(torch.tanh(self.fc(h)))


def _bn(channels: int, seed: int) -> nn.BatchNorm2d:
    g = torch.Generator().manual_seed(seed)
    bn = nn.BatchNorm2d(channels, eps=2.0 ** -17)  # exact in float32 (the ONNX attribute)
    with torch.no_grad():
        bn.running_mean.copy_(torch.rand(channels, generator=g) - 0.5)
        bn.running_var.copy_(torch.rand(channels, generator=g) + 0.5)
        bn.weight.copy_(torch.rand(channels, generator=g) + 0.5)
        bn.bias.copy_(torch.rand(channels, generator=g) - 0.5)
    return bn


def mlp(seed: int = 0, activation=nn.ReLU) -> nn.Module:
    """``[B, 1, 3, 4]`` -> 3 logits."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 10), activation(), nn.Linear(10, 8), activation(), nn.Linear(8, 3))


def cnn(seed: int = 0) -> nn.Module:
    """``[B, 2, 6, 6]`` -> 3 logits: normalisation, padded conv, BatchNorm, strided conv, LeakyReLU,
    max pooling."""
    torch.manual_seed(seed)
    return nn.Sequential(Normalize([0.4, 0.5], [0.3, 0.25]), nn.Conv2d(2, 4, 3, padding=1), _bn(4, seed), nn.ReLU(),
                         nn.Conv2d(4, 4, 2, stride=2), nn.LeakyReLU(0.125), nn.MaxPool2d(2, stride=1, padding=1),
                         nn.Flatten(), nn.Linear(64, 6), nn.ReLU(), nn.Linear(6, 3))


def plain_cnn(seed: int = 0) -> nn.Module:
    """``[B, 2, 6, 6]`` -> 3 logits: padded and strided convolutions, BatchNorm and ReLU only (what
    every tool's CROWN relaxes alike)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), _bn(4, seed), nn.ReLU(), nn.Conv2d(4, 4, 2, stride=2),
                         nn.ReLU(), nn.Flatten(), nn.Linear(36, 6), nn.ReLU(), nn.Linear(6, 3))


def residual(seed: int = 0) -> nn.Module:
    """``[B, 2, 8, 8]`` -> 3 logits (:class:`Residual`)."""
    torch.manual_seed(seed)
    return Residual()


def global_pool(seed: int = 0) -> nn.Module:
    """``[B, 2, 6, 6]`` -> 3 logits through an adaptive average pooling to 1x1."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))


def mlp_sigmoid(seed: int = 0) -> nn.Module:
    return mlp(seed, nn.Sigmoid)


def mlp_tanh(seed: int = 0) -> nn.Module:
    return mlp(seed, nn.Tanh)


#: name -> (builder, input shape without the batch)
MODELS = {"mlp": (mlp, (1, 3, 4)), "mlp_sigmoid": (mlp_sigmoid, (1, 3, 4)), "mlp_tanh": (mlp_tanh, (1, 3, 4)), "cnn": (cnn, (2, 6, 6)), "plain_cnn": (plain_cnn, (2, 6, 6)),
          "residual": (residual, (2, 8, 8)), "global_pool": (global_pool, (2, 6, 6))}


def model(name: str, dtype=torch.float64, seed: int = 0) -> nn.Module:
    return MODELS[name][0](seed).to(dtype).eval()


def inputs(name: str, batch: int = 3, dtype=torch.float64, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(batch, *MODELS[name][1], generator=g, dtype=torch.float64).to(dtype)


def onnx_export(module: nn.Module, x: torch.Tensor):
    """``module``'s ONNX export (torch's TorchScript exporter, a dynamic batch) read by our loader."""
    import onnx

    from cfruntime.network import network_from_model

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's deprecation and tracer warnings
        torch.onnx.export(module, (x[:1],), buf, dynamo=False, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    return network_from_model(onnx.load_from_string(buf.getvalue()), source="export.onnx")
