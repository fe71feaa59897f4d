"""cfmlir.adam.Adam takes the steps of torch.optim.Adam (the update it replaces in branch and bound's
multiplier optimisation), with parameter groups of their own learning rates, tensors without a gradient
left alone, and without importing torch._dynamo."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from cfmlir.adam import Adam


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_same_steps_as_torch_adam(dtype):
    gen = torch.Generator().manual_seed(0)
    start = [torch.randn(3, 4, generator=gen, dtype=dtype), torch.randn(5, generator=gen, dtype=dtype),
             torch.randn(2, 2, generator=gen, dtype=dtype)]
    ours = [t.clone().requires_grad_(True) for t in start]
    ref = [t.clone().requires_grad_(True) for t in start]
    a = Adam(ours[:2], lr=0.05)
    a.add_group(ours[2:], lr=0.3)
    b = torch.optim.Adam(ref[:2], lr=0.05)
    b.add_param_group({"params": ref[2:], "lr": 0.3})
    for step in range(25):
        for ps, opt in ((ours, a), (ref, b)):
            opt.zero_grad()
            loss = sum(((p - 0.5) ** 2 * (k + 1)).sum() + p.sin().sum() for k, p in enumerate(ps))
            if step % 7 == 3:  # one tensor without a gradient this step: left alone by both
                loss = loss - (ps[1] ** 2).sum().detach()
                loss.backward(inputs=[ps[0], ps[2]])
            else:
                loss.backward()
            opt.step()
    for x, y in zip(ours, ref):
        torch.testing.assert_close(x, y, rtol=1e-5 if dtype == torch.float32 else 1e-12, atol=1e-6 if dtype == torch.float32 else 1e-12)


def test_a_non_positive_learning_rate_is_refused():
    with pytest.raises(ValueError, match="learning rate"):
        Adam([torch.zeros(2, requires_grad=True)], lr=0.0)


def test_no_dynamo_import():
    code = ("import sys, torch; from cfmlir.adam import Adam; p = torch.zeros(3, requires_grad=True); a = Adam([p], 0.1); "
            "p.sum().backward(); a.step(); print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
