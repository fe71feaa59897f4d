"""The compiled control flow: a condition on the layer runs one branch, a traverse by layer substitutes
whole layers, and a traverse whose priority reads a neuron or its coefficient keeps the per-neuron loop
(issue 13, acceptance 4 and 6) -- each equal to the neuron-level interpreter."""

from collections import Counter
from pathlib import Path

import pytest
import torch

from cfmlir.certifiers import certifier_source
from cfmlir.compiler import compile_certifier, pipeline_for
from cfmlir.interpreter.run import analyze, compile_source
from cfruntime import tensor as gb
from cfruntime.flow.context import LayerContext
from cfruntime.flow.engine import run_certifier

from cftest.nets import boxes, mlp, small_conv

SPECS = Path(__file__).parent / "specs"


def traverses_per_layer(cert, net, lb, ub, monkeypatch, representation="planned") -> Counter:
    """How many layer-granular traverses each layer's rule ran."""
    seen: Counter = Counter()
    original = LayerContext.traverse_layers

    def counting(self, *args):
        seen[self.layer.index] += 1
        return original(self, *args)

    monkeypatch.setattr(LayerContext, "traverse_layers", counting)
    run_certifier(cert, net, lb, ub, representation=representation)
    return seen


def affine_layers(net) -> list[int]:
    return [l.index for l in net.layers if l.kind == "affine"]


@pytest.mark.parametrize("representation", ["planned", "gbscr", "dense"])
def test_crown_ibp_back_substitutes_at_the_last_layer_only(monkeypatch, representation):
    net = mlp([3, 5, 4, 4, 3], seed=1)
    lb, ub = boxes(3, batch=2, seed=2)
    cert = compile_certifier(*certifier_source("crown_ibp"), pipeline_for(True), use_cache=False)
    seen = traverses_per_layer(cert, net, lb, ub, monkeypatch, representation)
    last = net.layers[-1].index
    assert dict(seen) == {last: 2}  # the lower and the upper back-substitution, nothing elsewhere


def test_reusecert_and_zid_run_one_branch_per_layer(monkeypatch):
    net = mlp([3, 5, 4, 4, 4, 4, 3], seed=3)
    lb, ub = boxes(3, batch=2, seed=4)
    last = net.layers[-1].index
    # ReuseCert: the first affine layer and the last back-substitute l, u (2 traverses); every other
    # affine layer also L and U (4).  Running both branches would make 6 everywhere.
    cert = compile_certifier(*certifier_source("reusecert"), pipeline_for(True), use_cache=False)
    seen = traverses_per_layer(cert, net, lb, ub, monkeypatch)
    want = {k: 2 if k in (1, last) else 4 for k in affine_layers(net)}
    assert dict(seen) == want
    # ZID: only the last layer back-substitutes (its box_z repeats the two bounds' traverses)
    cert = compile_certifier(*certifier_source("zid"), pipeline_for(True), use_cache=False)
    seen = traverses_per_layer(cert, net, lb, ub, monkeypatch)
    assert set(seen) == {last}


def test_untaken_branch_costs_nothing(monkeypatch):
    """CROWN-IBP without the uniform-branch pass computes both sides of its last-layer condition on
    every layer (and merges them); with it, the back-substitutions vanish from the hidden layers (only
    the last layer traverses), the run takes fewer torch operations, and the bounds are the same."""
    from cfruntime.op_count import OpCounter

    net = mlp([3, 5, 4, 4, 4, 3], seed=1)
    lb, ub = boxes(3, batch=2, seed=2)
    last = net.layers[-1].index
    with_branches = pipeline_for(True)
    without = tuple(p for p in with_branches if p != "uniform-branch")
    counts, lows, seen = {}, {}, {}
    for pipeline in (with_branches, without):
        cert = compile_certifier(*certifier_source("crown_ibp"), pipeline, use_cache=False)
        with OpCounter() as c:
            lows[pipeline] = run_certifier(cert, net, lb, ub).lower
        counts[pipeline] = c.ops
        seen[pipeline] = traverses_per_layer(cert, net, lb, ub, monkeypatch)
        monkeypatch.undo()
    assert dict(seen[with_branches]) == {last: 2}
    assert set(seen[without]) > {last}, seen[without]  # hidden layers back-substitute too
    # (the hidden layers' traverses are most of the work: 382 ops against 627 when measured)
    assert counts[with_branches] < 0.7 * counts[without], counts
    torch.testing.assert_close(lows[with_branches], lows[without], rtol=1e-9, atol=1e-9)


SPEC_NETS = {"mlp_relu": (mlp([3, 5, 4, 3], seed=4), 0.4), "conv": (small_conv(seed=5), 0.1)}


@pytest.mark.parametrize("spec", ["deeppoly_coeff_priority", "backsub_widest_first"])
def test_per_neuron_traverse_equals_interpreter(spec):
    """Priorities that read the coefficient or a neuron's bounds: the general loop (no
    layer_traverse in the module), equal to the interpreter in every representation."""
    path = SPECS / f"{spec}.cf"
    text = path.read_text()
    prog = compile_source(text, str(path), spec)
    for rewrite in (True, False):
        cert = compile_certifier(text, str(path), pipeline_for(rewrite), use_cache=False)
        assert not cert.layer_granular and "rt.loop_guard(ctx.traverse_cap())" in cert.source
        for net_name, (net, radius) in SPEC_NETS.items():
            lb, ub = boxes(net.input_size, batch=2, seed=9, radius=radius)
            ref = [analyze(prog, net, lb[i], ub[i]) for i in range(2)]
            for rep in ("planned", "gbscr", "dense"):
                res = run_certifier(cert, net, lb, ub, representation=rep)
                for layer in net.layers[1:]:
                    for member in ("l", "u"):
                        got = gb.to_dense(res.store.get(layer.index, member))
                        want = torch.tensor([r.member(member, layer.index) for r in ref], dtype=torch.float64)
                        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7,
                                                   msg=lambda m: f"{spec} {net_name} {rep} rewrite={rewrite} layer {layer.index} {member}: {m}")


def test_widest_first_is_a_different_order():
    """The widest-first spec really substitutes in another order than DeepPoly (so the test above
    exercises per-neuron priorities, not a relabelled layer order): its bounds differ somewhere."""
    net = mlp([3, 6, 6, 3], seed=11)
    lb, ub = boxes(3, batch=3, seed=12, radius=0.6)
    path = SPECS / "backsub_widest_first.cf"
    a = run_certifier(compile_certifier(path.read_text(), str(path), pipeline_for(True)), net, lb, ub)
    b = run_certifier(compile_certifier(*certifier_source("deeppoly"), pipeline_for(True)), net, lb, ub)
    assert not torch.allclose(a.lower, b.lower, rtol=1e-9, atol=1e-9)
