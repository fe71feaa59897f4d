"""Bounds that no later rule reads are computed only when read (cfruntime.flow.deferred): the results, and
every layer's bounds once read, are bit for bit those of the run that computes every layer's at once."""

import pytest
import torch

from cfmlir.certifiers import certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfruntime import tensor as gb
from cfruntime.errors import RuleError
from cfruntime.flow import engine
from cfruntime.flow.deferred import deferred_layers
from cfruntime.flow.engine import run_certifier
from cfruntime.flow.store import Pending

from cftest.nets import boxes, mlp, residual_conv


def _cert(name):
    return compile_certifier(*certifier_source(name), pipeline_for(True), use_cache=False)


def _with_margins(net):
    """The network with an appended (unfolded) margin layer ``y_0 - y_j``: its output layer feeds only it."""
    C = torch.eye(3)[0].expand(3, 3) - torch.eye(3)
    return net.with_margin_layer(C, fold=False)


def test_the_layers_deferred_are_those_feeding_linear_layers_only():
    net = _with_margins(residual_conv())
    # 1 conv - 2 relu - 3 conv, 4 conv (1x1) - 5 add - 6 relu - 7 gemm - 8 margins: 3 and 4 feed the join, 7 the
    # margins, the ReLUs 2 and 6 convolutions (a ReLU's rule reads its input's bounds, never its own)
    assert [layer.kind for layer in net.layers] == ["input", "affine", "relu", "affine", "affine", "add", "relu",
                                                     "affine", "affine"]
    assert deferred_layers(_cert("deeppoly"), net, plain_run=True) == {2, 3, 4, 6, 7}
    assert deferred_layers(_cert("deeppoly"), net, plain_run=False) == frozenset()
    assert deferred_layers(_cert("ibp"), net, plain_run=True) == frozenset()  # no expressions: nothing to save
    assert deferred_layers(_cert("alpha_deeppoly"), net, plain_run=True) == frozenset()  # parameters
    # an MLP: the hidden affine layer feeds a ReLU (which reads its bounds); the ReLU's own are deferred
    assert deferred_layers(_cert("deeppoly"), mlp([4, 6, 3]), plain_run=True) == {2}


def _no_deferral(monkeypatch):
    monkeypatch.setattr(engine, "deferred_layers", lambda *a, **k: frozenset())


@pytest.mark.parametrize("name", ["deeppoly", "crown_ibp", "skippoly", "deeppoly_2"])
@pytest.mark.parametrize("margins", [False, True])
def test_bounds_equal_those_computed_at_once(name, margins, monkeypatch):
    cert = _cert(name)
    if not any(letter == "P" for _, letter, _ in cert.members) or cert.params:
        pytest.fail(f"{name}: not a certifier whose bounds are deferred")
    net = residual_conv(seed=2)
    net = _with_margins(net) if margins else net
    lb, ub = boxes(net.input_size, batch=2, seed=5, radius=0.3)
    lazy = run_certifier(cert, net, lb, ub)
    with monkeypatch.context() as m:
        _no_deferral(m)
        eager = run_certifier(cert, net, lb, ub)
    assert torch.equal(lazy.lower, eager.lower) and torch.equal(lazy.upper, eager.upper)
    for layer in net.layers:  # read now (computed on the read where they were pending): the same values
        for member in ("l", "u") if "l" in lazy.store.values else ():
            assert torch.equal(gb.to_dense(lazy.store.get(layer.index, member)),
                               gb.to_dense(eager.store.get(layer.index, member)))


def test_bounds_nobody_reads_are_never_computed():
    net = _with_margins(residual_conv(seed=1))
    lb, ub = boxes(net.input_size, batch=2, seed=3, radius=0.3)
    res = run_certifier(_cert("deeppoly"), net, lb, ub)
    pending = {k for k, v in res.store.values["l"].items() if isinstance(v, Pending)}
    assert pending == {2, 3, 4, 6, 7}  # DeepPoly's join and margins substitute expressions; no rule read these
    assert pending == deferred_layers(_cert("deeppoly"), net, plain_run=True)
    res.store.get(4, "u")
    assert isinstance(res.store.values["l"][4], torch.Tensor)  # one read computes both bounds
    assert isinstance(res.store.values["l"][3], Pending)


def test_a_rule_reading_its_own_pending_bounds_is_an_error():
    def compute():
        box.compute()

    box = Pending(compute)
    with pytest.raises(RuleError, match="read while they are computed"):
        box.compute()
    assert not box.running
