"""The ``nn.Module`` import (:mod:`cfruntime.network.torch_import`): the layers of a module's ONNX
export, its outputs, functional and method forms, constants computed from buffers, the folding of
stages, tensors read by reference, and the errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from cfruntime.network.torch_import import UnsupportedModuleError, trace_module
from cftest import torch_models as tm


def _kinds(net):
    return [(l.kind, l.linear_kind, tuple(l.shape)) for l in net.layers]


@pytest.mark.parametrize("name", sorted(tm.MODELS))
def test_layers_are_the_onnx_exports(name):
    model, x = tm.model(name), tm.inputs(name, batch=4)
    net = trace_module(model, x).network()
    assert _kinds(net) == _kinds(tm.onnx_export(model, x))
    torch.testing.assert_close(net.forward(x.reshape(4, -1)), model(x), rtol=1e-12, atol=1e-12)


class _Functional(nn.Module):
    """Functional forms, methods, a view through ``x.size(0)``, constants from buffers."""

    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(6, 12))
        self.register_buffer("scale", torch.tensor([2.0, 0.5, 1.5]))
        self.conv = nn.Conv2d(3, 2, 2)

    def forward(self, x):
        x = x * self.scale.view(1, 3, 1, 1) + 0.25  # a constant computed from a buffer
        h = F.relu(self.conv(x))                     # [B, 2, 1, 3]
        h = h.view(h.size(0), -1)
        h = h.reshape(h.shape[0], 6)
        h = F.linear(torch.tanh(h), self.w1[:, :6])
        h = h.sigmoid().clamp(min=0.2, max=0.7)
        h = F.leaky_relu(-h, 0.25) - 1.0
        h = F.hardtanh(F.elu(h, 0.5), -0.5, 2.0)
        return F.relu6(F.softplus(h) / 2.0)


def test_functional_forms_methods_and_folded_constants():
    torch.manual_seed(0)
    model = _Functional().double()
    x = torch.rand(5, 3, 2, 4, dtype=torch.float64)
    net = trace_module(model, x).network()
    torch.testing.assert_close(net.forward(x.reshape(5, -1)), model(x), rtol=1e-12, atol=1e-12)
    kinds = [l.kind for l in net.layers]
    for k in ("relu", "tanh", "sigmoid", "hardtanh", "leakyrelu", "elu", "softplus", "relu6"):
        assert k in kinds, k


def test_stages_fold_as_the_loader_folds():
    """Normalisation into the first Linear, Linear after Linear, BatchNorm into its Conv, an average
    pooling unrolled into the Linear after it: each a single affine layer."""
    torch.manual_seed(1)
    model = nn.Sequential(tm.Normalize([0.5], [0.25]), nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2).eval(), nn.ReLU(),
                          nn.AvgPool2d(2), nn.Flatten(), nn.Linear(2, 4), nn.Linear(4, 3)).double().eval()
    x = torch.rand(2, 1, 4, 4, dtype=torch.float64)
    net = trace_module(model, x).network()
    assert _kinds(net) == [("input", None, (1, 4, 4)), ("affine", "conv", (2, 2, 2)), ("relu", None, (2, 2, 2)),
                           ("affine", "dense", (3,))]
    torch.testing.assert_close(net.forward(x.reshape(2, -1)), model(x), rtol=1e-12, atol=1e-12)


def test_tensors_are_the_parameters_by_reference():
    """Every build reads the parameters as they are now; the built tensors have a gradient path to
    them; float32 parameters give float64 layers (the loader's)."""
    model = tm.model("mlp", dtype=torch.float32)
    plan = trace_module(model, tm.inputs("mlp", dtype=torch.float32))
    v0 = plan.version()
    net = plan.network()
    w = net.layers[1].weight
    assert w.dtype == torch.float64 and w.grad_fn is not None
    w.sum().backward()
    assert model[1].weight.grad is not None and bool((model[1].weight.grad == 1).all())
    with torch.no_grad():
        model[1].weight.add_(1.0)
    assert plan.version() != v0
    torch.testing.assert_close(plan.network().layers[1].weight, model[1].weight.double().detach() * 1, rtol=0, atol=0)


def test_residual_join_of_one_value_is_a_scaling():
    class Twice(nn.Module):
        def forward(self, x):
            h = torch.relu(x)
            return torch.flatten(h + h, 1)

    x = torch.rand(2, 1, 2, 2, dtype=torch.float64) - 0.5
    net = trace_module(Twice(), x).network()
    assert [l.kind for l in net.layers] == ["input", "relu", "affine"]
    torch.testing.assert_close(net.forward(x.reshape(2, -1)), Twice()(x), rtol=0, atol=0)


class _Clamp(nn.Module):
    def __init__(self, lo, hi):
        super().__init__()
        self.lo, self.hi = lo, hi

    def forward(self, x):
        return x.clamp(self.lo, self.hi)


@pytest.mark.parametrize("module,message", [
    (nn.Sequential(nn.Conv2d(1, 1, 2, padding=1, padding_mode="reflect")), "padding_mode 'reflect'"),
    (nn.Sequential(nn.MaxPool2d(2, ceil_mode=True)), "ceil_mode"),
    (nn.Sequential(nn.AvgPool2d(2, divisor_override=3)), "divisor_override"),
    (nn.Sequential(nn.Softplus(beta=2.0)), "beta 2.0"),
    (nn.Sequential(nn.AdaptiveAvgPool2d(3)), "the output must divide the input"),
    (nn.Sequential(nn.Flatten(0)), "does not keep the batch dimension"),
    (nn.Sequential(nn.Flatten(), _Clamp(1.0, 1.0)), "min 1 not below max 1"),
])
def test_unsupported_configurations(module, message):
    with pytest.raises(UnsupportedModuleError, match=message):
        trace_module(module.double().eval(), torch.rand(2, 1, 2, 2, dtype=torch.float64))


def test_error_names_the_model_and_the_node():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gelu = nn.GELU()

        def forward(self, x):
            return self.gelu(torch.flatten(x, 1))

    with pytest.raises(UnsupportedModuleError) as info:
        trace_module(Net(), torch.rand(2, 1, 2, 2))
    assert str(info.value) == "error: Net: unsupported module GELU at node 'gelu'"
