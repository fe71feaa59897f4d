"""``cfmlir.BoundedNetwork`` (:mod:`cfmlir.bounded`): an ``nn.Module`` and its ONNX export give the same
bounds, gradients reach the module's parameters, regions (balls, per-sample eps, boxes) and ``C``, the
page ``docs/api.md`` (its example runs), and every documented misuse error."""

from __future__ import annotations

import copy
import re

import pytest
import torch
from torch import nn

import cfmlir
from cfmlir.bounded import BoundsError
from cfmlir.diagnostics import CfError
from cfruntime.errors import NetworkError
from cfruntime.network.torch_import import UnsupportedModuleError
from cftest import REPO
from cftest import torch_models as tm
from cftest.specs import interval_spec


@pytest.mark.parametrize("certifier", ["crown_ibp", "deeppoly", "deepz", "ibp"])
@pytest.mark.parametrize("name", sorted(tm.MODELS))
def test_module_and_its_onnx_export_give_the_same_bounds(name, certifier):
    model = tm.model(name)
    x = tm.inputs(name)
    onnx_net = tm.onnx_export(model, x)
    C = torch.randn(3, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    ours, theirs = cfmlir.BoundedNetwork(model, certifier), cfmlir.BoundedNetwork(onnx_net, certifier)
    for c in (None, C):
        a, b = ours.bounds(x, eps=0.03, C=c), theirs.bounds(x, eps=0.03, C=c)
        for p, q in zip(a, b):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-9)
    kinds = lambda net: [(l.kind, l.linear_kind, tuple(l.shape)) for l in net.layers]  # noqa: E731
    assert kinds(ours.network()) == kinds(onnx_net)


@pytest.mark.parametrize("name", sorted(tm.MODELS))
def test_forward_is_the_module(name):
    model, x = tm.model(name), tm.inputs(name, batch=4)
    torch.testing.assert_close(cfmlir.BoundedNetwork(model)(x), model(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("certifier", ["crown_ibp", "deeppoly"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "residual"])
def test_gradcheck_module_parameters(name, certifier):
    """The bounds' gradients with respect to every parameter of the module (and the input) are
    right: gradcheck through ``torch.func.functional_call``, which swaps the module's parameters for
    the ones gradcheck perturbs (the network reads them by reference)."""
    model, x = tm.model(name), tm.inputs(name, batch=2)
    bounded = cfmlir.BoundedNetwork(model, certifier)
    names = [n for n, _ in model.named_parameters()]
    C = torch.randn(2, 2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))

    class Bounds(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x):
            return bounded.bounds(x, eps=0.05, C=C)

    wrapper = Bounds()

    def f(x, *params):
        return torch.func.functional_call(wrapper, {f"model.{n}": p for n, p in zip(names, params)}, (x,))

    params = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
    assert torch.autograd.gradcheck(f, (x.clone().requires_grad_(True), *params), fast_mode=True)


def test_gradients_reach_the_parameters_and_training_steps_are_seen():
    """A training loop: the loss's gradients land in ``model.parameters()``; after each optimizer step
    the bounds are those of a fresh copy of the updated model."""
    model, x = tm.model("cnn", dtype=torch.float32), tm.inputs("cnn", dtype=torch.float32)
    bounded = cfmlir.BoundedNetwork(model, "crown_ibp", widen=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    C = torch.eye(3)[torch.tensor([0, 1, 2])].unsqueeze(1) - torch.eye(3).unsqueeze(0)
    for _ in range(3):
        lb, _ = bounded.bounds(x, eps=0.02, C=C)
        opt.zero_grad()
        nn.functional.softplus(-lb).mean().backward()
        grads = [p.grad for p in model.parameters()]
        assert all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
        assert any(float(g.abs().sum()) > 0 for g in grads)
        opt.step()
        with torch.no_grad():
            now = bounded.bounds(x, eps=0.02, C=C)
            fresh = cfmlir.BoundedNetwork(copy.deepcopy(model), "crown_ibp", widen=False).bounds(x, eps=0.02, C=C)
        torch.testing.assert_close(now[0], fresh[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("certifier,dtype,widen", [("crown_ibp", torch.float64, None), ("deeppoly", torch.float64, None),
                                                    ("crown_ibp", torch.float32, False), ("crown_ibp", torch.float32, True)])
def test_bound_upper_false_gives_the_same_lower_bounds_and_gradients(certifier, dtype, widen):
    """``bound_upper=False``: no upper bounds (None), the same lower bounds and parameter gradients
    (bit for bit: the upper back-substitution is skipped, nothing else changes), fewer operations
    (widened: the same ones and the +inf upper bounds, the lower bound's widening reads the upper one)."""
    from cfruntime.op_count import OpCounter

    model, x = tm.model("cnn", dtype=dtype), tm.inputs("cnn", dtype=dtype)
    bounded = cfmlir.BoundedNetwork(model, certifier, widen=widen)
    C = torch.eye(3, dtype=dtype)[torch.tensor([0, 1, 2])].unsqueeze(1) - torch.eye(3, dtype=dtype).unsqueeze(0)
    runs = {}
    for upper in (True, False):
        bounded.bounds(x, eps=0.02, C=C, bound_upper=upper)  # warm: trace, compile, specialise
        model.zero_grad()
        with OpCounter() as c:
            lb, ub = bounded.bounds(x, eps=0.02, C=C, bound_upper=upper)
            lb.sum().backward()
        runs[upper] = lb.detach(), ub, [p.grad.clone() for p in model.parameters()], c.ops
    (lb_full, ub_full, g_full, ops_full), (lb, ub, g, ops) = runs[True], runs[False]
    assert ub is None and ub_full is not None and bool((ub_full >= lb_full).all())
    assert torch.equal(lb, lb_full)
    assert all(torch.equal(a, b) for a, b in zip(g, g_full))
    assert ops < ops_full if widen is not True else ops <= ops_full + 1  # + the +inf tensor


def test_certified_training_cnn_step_operations():
    """One bounds + backward step of ``examples/certified_training.py``'s CNN (batch 32, CROWN-IBP,
    lower bounds only, as auto_LiRPA's ``bound_upper=False``): 5 convolutions (interval centre and
    radius of the two layers, one transposed for the back-substitution; 6 with the upper bound's),
    at most 800 operations and 2 host syncs (torch 2.13; 888 with the upper bounds computed)."""
    import sys

    from cfruntime.op_count import OpCounter

    sys.path.insert(0, str(REPO / "examples"))
    try:
        import certified_training as ct
    finally:
        sys.path.remove(str(REPO / "examples"))
    model = ct.initial_model("cnn", 0)
    g = torch.Generator().manual_seed(0)
    x, y = torch.rand(32, 1, 28, 28, generator=g), torch.randint(0, 10, (32,), generator=g)
    C = ct.margin_matrix(y)
    _, bound = ct.cfmlir_bounds("crown_ibp", widen=False)(model)
    bound(*ct.ball(x, 0.05), C)  # warm: trace, compile
    with OpCounter() as c:
        ct.robust_loss(bound(*ct.ball(x, 0.05), C)).backward()
    assert c.by_name["convolution"] == 5
    assert c.ops <= 800 and c.syncs <= 2
    both = cfmlir.BoundedNetwork(model, "crown_ibp", widen=False).bounds(box=ct.ball(x, 0.05), C=C)[0]
    torch.testing.assert_close(bound(*ct.ball(x, 0.05), C), both, rtol=0, atol=0)


def test_no_grad_keeps_the_network_until_a_parameter_changes():
    model, x = tm.model("mlp"), tm.inputs("mlp")
    bounded = cfmlir.BoundedNetwork(model, "ibp")
    with torch.no_grad():
        bounded.bounds(x, eps=0.1)
        first = bounded.network()
        assert bounded.network() is first
        model[1].weight.mul_(0.5)
        assert bounded.network() is not first
    lb, _ = bounded.bounds(x, eps=0.1)
    assert lb.requires_grad  # grad mode and parameters that require grad: a network with a graph


def test_regions_balls_per_sample_eps_boxes_and_C():
    model, x = tm.model("mlp"), tm.inputs("mlp", batch=3)
    bounded = cfmlir.BoundedNetwork(model, "deeppoly")
    eps = torch.tensor([0.01, 0.05, 0.2], dtype=torch.float64)
    per_sample = bounded.bounds(x, eps=eps)
    for i in range(3):
        one = bounded.bounds(x[i:i + 1], eps=float(eps[i]))
        torch.testing.assert_close(per_sample[0][i:i + 1], one[0], rtol=0, atol=1e-12)
    box = bounded.bounds(box=(x - eps.view(-1, 1, 1, 1), x + eps.view(-1, 1, 1, 1)))
    torch.testing.assert_close(box[0], per_sample[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(bounded.bounds(x, eps=eps.view(-1, 1, 1, 1))[1], per_sample[1], rtol=0, atol=1e-12)
    flat = bounded.bounds(x.reshape(3, -1), eps=0.05)  # a flattened input is accepted too
    torch.testing.assert_close(flat[0], bounded.bounds(x, eps=0.05)[0], rtol=0, atol=0)
    # C shared by every sample = C repeated per sample; without C the outputs' own bounds
    C = torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    shared = bounded.bounds(x, eps=eps, C=C)
    repeated = bounded.bounds(x, eps=eps, C=C.expand(3, 4, 3))
    assert shared[0].shape == (3, 4)
    torch.testing.assert_close(shared[0], repeated[0], rtol=0, atol=1e-12)
    g = torch.Generator().manual_seed(1)
    pts = x.unsqueeze(1) + (torch.rand(3, 100, *x.shape[1:], generator=g, dtype=torch.float64) * 2 - 1) \
        * eps.view(-1, 1, 1, 1, 1)
    y = torch.stack([model(p) for p in pts]).detach()  # [3, 100, 3]
    lo, hi = (t.detach().unsqueeze(1) for t in per_sample)
    assert bool((lo <= y).all()) and bool((y <= hi).all())
    m = torch.einsum("kn,bsn->bsk", C, y)
    assert bool((shared[0].detach().unsqueeze(1) <= m + 1e-12).all())


def test_optimize_tightens_sound_bounds_with_gradients_that_the_loop_leaves_alone():
    """``bounds(..., optimize=N)`` with a certifier that has parameters: alpha-CROWN's loop
    (:func:`cfmlir.optimize.optimize_bounds`) -- without a gradient wanted, its bounds exactly; with one,
    a differentiable run at the best parameters (sound, at least the first run's); the loop's own
    backward passes leave the model's ``.grad`` untouched (they accumulated there before 2026-12-03)."""
    from cfmlir.optimize import OptimizeOptions, optimize_bounds

    model, x = tm.model("mlp"), tm.inputs("mlp", batch=3)
    C = torch.tensor([[1.0, -1.0, 0.0], [1.0, 0.0, -1.0]], dtype=torch.float64)
    bounded = cfmlir.BoundedNetwork(model, "alpha_deeppoly")
    eps = 0.3
    with torch.no_grad():
        plain = bounded.bounds(x, eps=eps, C=C)
        opt = bounded.bounds(x, eps=eps, C=C, optimize=20)
        assert all(p.grad is None for p in model.parameters())
        net = bounded.network().with_margin_layer(C)
        lb, ub = (x - eps).reshape(3, -1), (x + eps).reshape(3, -1)
        ref = optimize_bounds(bounded.certifier.compiled, net, lb, ub, OptimizeOptions(20), dtype=torch.float64)
    model.zero_grad(set_to_none=True)  # (this direct call's backward passes reach the shared parameters)
    torch.testing.assert_close(opt[0], ref[0], rtol=0, atol=0)
    assert bool((opt[0] >= plain[0]).all()) and bool((opt[0] > plain[0] + 1e-3).any())
    assert bool((opt[1] <= plain[1]).all())
    lo, hi = bounded.bounds(x, eps=eps, C=C, optimize=OptimizeOptions(iterations=20))
    assert lo.requires_grad and bool((lo.detach() >= plain[0] - 1e-12).all()) and bool((lo.detach() <= opt[0] + 1e-12).all())
    g = torch.Generator().manual_seed(2)
    pts = x.unsqueeze(1) + (torch.rand(3, 200, *x.shape[1:], generator=g, dtype=torch.float64) * 2 - 1) * eps
    m = torch.einsum("kn,bsn->bsk", C, torch.stack([model(p) for p in pts]).detach())
    assert bool((opt[0].unsqueeze(1) <= m).all()) and bool((m <= opt[1].unsqueeze(1)).all())
    assert bool((lo.detach().unsqueeze(1) <= m).all())
    lo.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    assert any(bool(t.abs().sum() > 0) for t in grads)
    # the same gradient as one plain differentiable run would give at those parameters: the loop added nothing
    model.zero_grad(set_to_none=True)
    bounded.bounds(x, eps=eps, C=C, optimize=20)[0].sum().backward()
    for a, b in zip(grads, (p.grad for p in model.parameters())):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def test_float32_default_is_widened_and_sound():
    model, x = tm.model("cnn", dtype=torch.float32), tm.inputs("cnn", dtype=torch.float32)
    bounded = cfmlir.BoundedNetwork(model, "deeppoly")
    lb, ub = bounded.bounds(x, eps=0.02)
    raw = cfmlir.BoundedNetwork(model, "deeppoly", widen=False).bounds(x, eps=0.02)
    assert lb.dtype == torch.float32
    assert bool((lb <= raw[0]).all()) and bool((ub >= raw[1]).all()) and bool((lb < raw[0]).any())
    as64 = cfmlir.BoundedNetwork(model, "deeppoly", dtype="float64").bounds(x, eps=0.02)
    assert as64[0].dtype == torch.float64


def test_onnx_path_and_loaded_network(tmp_path):
    from cfruntime.default_data import default_network_path

    net = cfmlir.load_network(default_network_path())
    x = torch.rand(2, net.input_size, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    a = cfmlir.BoundedNetwork(default_network_path(), "deeppoly").bounds(x, eps=0.01)
    b = cfmlir.BoundedNetwork(net, "deeppoly").bounds(x, eps=0.01)
    torch.testing.assert_close(a[0], b[0], rtol=0, atol=0)
    xg = x.clone().requires_grad_(True)
    lb, _ = cfmlir.BoundedNetwork(net, "crown_ibp").bounds(xg, eps=0.01)
    lb.sum().backward()
    assert xg.grad is not None and bool(torch.isfinite(xg.grad).all())


def _doc_example() -> str:
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    m = re.search(r"```python\n(.*?)```", text, re.S)
    assert m is not None, "docs/api.md has no python example"
    return m.group(1)


def test_docs_example_runs(capsys):
    exec(compile(_doc_example(), "docs/api.md", "exec"), {"__name__": "__docs__"})
    out = capsys.readouterr().out
    assert re.search(r"certified: \[(True|False)(, (True|False)){4}\]", out), out
    assert "gradient norm: True" in out, out


# -- misuse -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bounded():
    return cfmlir.BoundedNetwork(tm.model("mlp"), "ibp", example_input=tm.inputs("mlp"))


X = tm.inputs("mlp")
MISUSES = [
    ({}, "no input region"),
    ({"x": X}, "x given without eps"),
    ({"x": X, "eps": 0.1, "box": (X, X)}, "not both"),
    ({"box": X}, "box must be a pair"),
    ({"box": (X, X[:2])}, "different shapes"),
    ({"x": X.tolist(), "eps": 0.1}, "x must be a torch tensor"),
    ({"x": X.long(), "eps": 0.1}, "floating-point"),
    ({"x": X, "eps": "0.1"}, "eps must be a number or a tensor"),
    ({"x": X, "eps": torch.ones(5, dtype=torch.float64)}, "fits neither"),
    ({"x": X, "eps": -0.1}, "eps is negative or NaN"),
    ({"x": X, "eps": torch.tensor([0.1, float("nan"), 0.1], dtype=torch.float64)}, "eps is negative or NaN"),
    ({"box": (X + 0.1, X)}, "lb > ub"),
    ({"x": X[0, 0], "eps": 0.1}, "does not fit the model's input"),
    ({"x": X.reshape(3, 2, 6), "eps": 0.1}, "does not fit the model's input"),
    ({"x": X, "eps": 0.1, "C": torch.ones(2, 4, dtype=torch.float64)}, r"neither \[K, 3\]"),
    ({"x": X, "eps": 0.1, "C": torch.ones(2, 2, 3, dtype=torch.float64)}, r"neither \[K, 3\]"),
    ({"x": X, "eps": 0.1, "optimize": 20}, "has no parameters to optimise"),
    ({"x": X, "eps": 0.1, "optimize": "20"}, "optimize must be a number of iterations"),
    ({"x": X, "eps": 0.1, "optimize": -3}, "must be a positive integer"),
]


@pytest.mark.parametrize("kwargs,message", MISUSES, ids=[m[1][:24] for m in MISUSES])
def test_bounds_misuse(bounded, kwargs, message):
    with pytest.raises(BoundsError, match=message) as info:
        bounded.bounds(**kwargs)
    assert "\n" not in str(info.value) and isinstance(info.value, ValueError)


def test_constructor_misuse():
    model = tm.model("mlp")
    with pytest.raises(TypeError, match="nn.Module, an ONNX path or a loaded network"):
        cfmlir.BoundedNetwork(42)
    with pytest.raises(CfError, match="unknown certifier 'alpha-crown'"):
        cfmlir.BoundedNetwork(model, "alpha-crown")
    with pytest.raises(BoundsError, match="dtype must be float32 or float64"):
        cfmlir.BoundedNetwork(model, dtype="float16")
    with pytest.raises(BoundsError, match="widen must be"):
        cfmlir.BoundedNetwork(model, widen="on")
    with pytest.raises(BoundsError, match="unknown representation 'sparse'"):
        cfmlir.BoundedNetwork(model, representation="sparse")
    with pytest.raises(BoundsError, match="not traced yet"):
        cfmlir.BoundedNetwork(model).network()
    with pytest.raises(NetworkError, match="no such network file"):
        cfmlir.BoundedNetwork("missing.onnx")
    with pytest.raises(NetworkError, match="does not run on an input of shape"):
        cfmlir.BoundedNetwork(model, example_input=torch.zeros(2, 5, dtype=torch.float64))


class _Conv1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 2, 3)

    def forward(self, x):
        return torch.flatten(self.conv(torch.flatten(x, 2)), 1)


class _TwoInputs(nn.Module):
    def forward(self, x, y):
        return x + y


class _Branching(nn.Module):
    def forward(self, x):
        return x if x.sum() > 0 else -x


class _Square(nn.Module):
    def forward(self, x):
        return torch.flatten(x * x, 1)


class _SoftmaxInside(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        return self.fc(torch.softmax(torch.flatten(x, 1), dim=1))


UNSUPPORTED = {
    "conv1d": (_Conv1d(), "unsupported module Conv1d at node 'conv'"),
    "grouped": (nn.Sequential(nn.Conv2d(1, 2, 2, groups=1), nn.Conv2d(2, 2, 2, groups=2)), "groups=2"),
    "gelu": (nn.Sequential(nn.Flatten(), nn.GELU()), "unsupported module GELU"),
    "two inputs": (_TwoInputs(), "2 inputs"),
    "control flow": (_Branching(), "torch.fx cannot trace it"),
    "square": (_Square(), "'mul' of two data tensors"),
    "softmax inside": (_SoftmaxInside(), "unsupported function softmax"),
    "dropout training": (nn.Sequential(nn.Flatten(), nn.Dropout(0.5)).train(), "Dropout in training mode"),
    "batchnorm training": (nn.Sequential(nn.BatchNorm2d(1), nn.Flatten()).train(), "BatchNorm in training mode"),
}


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unsupported_modules(case):
    module, message = UNSUPPORTED[case]
    with pytest.raises(UnsupportedModuleError, match=message) as info:
        cfmlir.BoundedNetwork(module.double(), "ibp").bounds(tm.inputs("mlp"), eps=0.1)
    assert str(info.value).startswith("error: ") and "\n" not in str(info.value)
    assert isinstance(info.value, NetworkError)


RELU_ONLY = interval_spec("relu_only", "((prev[l] >= 0 ? prev[l] : 0), (prev[u] >= 0 ? prev[u] : 0))")


def test_certifier_without_a_rule_for_a_layer():
    from cfruntime.flow.engine import EngineError

    model = tm.mlp(0, activation=nn.Sigmoid).double()
    bounded = cfmlir.BoundedNetwork(model, RELU_ONLY)
    with pytest.raises(EngineError, match="has no rule for 'Sigmoid'"):
        bounded.bounds(tm.inputs("mlp"), eps=0.1)
    relu = cfmlir.BoundedNetwork(tm.model("mlp"), RELU_ONLY).bounds(tm.inputs("mlp"), eps=0.1)
    assert relu[0].shape == (3, 3)
