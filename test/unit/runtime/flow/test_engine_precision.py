"""The compiled engine runs float32 without TensorFloat-32 (cuDNN uses it for convolutions by
default on CUDA: ~1e-3 relative error, far above float32 rounding) and restores the caller's flags."""

import torch

from cfmlir.certifiers import certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfruntime.flow import engine

from cftest.nets import boxes, small_conv


def test_tf32_is_off_during_a_run_and_restored_after(monkeypatch):
    net = small_conv(seed=1)
    lb, ub = boxes(net.layers[0].size, batch=2, seed=2, radius=0.05)
    cert = compile_certifier(*certifier_source("deeppoly"), pipeline_for(True))
    seen = []
    real_run = engine._run

    def spy(*args):
        seen.append((torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32))
        return real_run(*args)

    monkeypatch.setattr(engine, "_run", spy)
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        res = engine.run_certifier(cert, net, lb, ub, dtype=torch.float32)
        after = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
    assert seen == [(False, False)]
    assert after == (True, True)
    assert res.lower.dtype == torch.float32 and bool((res.lower <= res.upper).all())
