"""The compiled certifiers compute the same bounds as the neuron-level reference interpreter
(issue 5, acceptance 3): every shipped certifier, on MLPs, a small conv net and a residual block built
here, in every mode (planned g-BSCR, general g-BSCR or dense tensors, with or without the domain
rewrites), every layer, within 1e-5 relative."""

import pytest
import torch

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfmlir.interpreter.run import analyze
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cftest.nets import boxes, mlp, residual_mlp, small_conv

CERTIFIERS = list(BASE_CERTIFIERS) + [f"deeppoly_{p}" for p in range(4)]
S_SHAPED = ("ibp", "deeppoly", "deepz", "crown_ibp")  # the certifiers with Sigmoid/Tanh/Neuron_add rules
MODES = [(rep, rewrite) for rep in ("planned", "gbscr", "dense") for rewrite in (True, False)]


def networks_for(name):
    nets = {"mlp_relu": mlp([3, 5, 4, 3], seed=4), "conv": small_conv(seed=5)}
    if name in S_SHAPED:
        nets["mlp_sigmoid"] = mlp([3, 4, 4, 2], activation="sigmoid", seed=6)
        nets["mlp_tanh"] = mlp([3, 4, 3], activation="tanh", seed=7)
        nets["residual"] = residual_mlp(seed=8)
    return nets


@pytest.mark.parametrize("name", CERTIFIERS)
def test_compiled_bounds_equal_interpreter(name, shipped):
    prog = shipped.interpreted(name)
    compiled = {rw: compile_certifier(*certifier_source(name), pipeline_for(rw), use_cache=False) for rw in (True, False)}
    for net_name, net in networks_for(name).items():
        lb, ub = boxes(net.input_size, batch=2, seed=9, radius=0.4)
        ref = [analyze(prog, net, lb[i], ub[i]) for i in range(lb.shape[0])]
        for rep, rewrite in MODES:
            res = run_certifier(compiled[rewrite], net, lb, ub, representation=rep)
            for layer in net.layers[1:]:
                for member in ("l", "u"):
                    got = gb.to_dense(res.store.get(layer.index, member))
                    want = torch.tensor([r.member(member, layer.index) for r in ref], dtype=torch.float64)
                    torch.testing.assert_close(
                        got, want, rtol=1e-5, atol=1e-7,
                        msg=lambda m: f"{name} on {net_name}, layer {layer.index} '{member}', {rep}, rewrite={rewrite}: {m}",
                    )
