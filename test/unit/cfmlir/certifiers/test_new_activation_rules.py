"""The rules of issue 16's activations (LeakyRelu, Abs, Relu6, HardTanh, Elu, Softplus; Sigmoid and Tanh
where they were missing) in every shipped certifier: on small networks built here from layers (every
certifier's every rule exercised on both sides of each kink, with several ``alpha``), the compiled
engine gives the reference interpreter's bounds on every layer in every mode, and those bounds
contain every concrete value the soundness checker finds (samples, box vertices, PGD).  IBP's images
are exact; every certifier is exact on a box that is one point."""

from functools import lru_cache

import pytest
import torch

from cfmlir.compiler import compile_certifier, pipeline_for
from cfmlir.interpreter.run import analyze, compile_source
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.network.graph import Layer, Network, elementwise_image
from cftest.activation_nets import CERTIFIERS, affine, assert_exact_on_a_point, assert_matches_interpreter_on, boxes


#: name -> (activation kind, alpha, scale of the pre-activations): scales put the kinks of each
#: function inside the ranges the boxes give (Relu6's 6, HardTanh's -1 and 1, Elu's curved side).
NETS = {
    "leakyrelu": ("leakyrelu", 0.01, 2.0),
    "leakyrelu_0.3": ("leakyrelu", 0.3, 2.0),
    "leakyrelu_neg": ("leakyrelu", -0.4, 2.0),  # V-shaped
    "leakyrelu_concave": ("leakyrelu", 1.7, 2.0),
    "abs": ("abs", None, 2.0),
    "relu6": ("relu6", None, 8.0),
    "hardtanh": ("hardtanh", None, 3.0),
    "elu": ("elu", 1.0, 2.0),
    "elu_0.5": ("elu", 0.5, 2.0),
    "elu_2": ("elu", 2.0, 2.0),  # not convex: interval lines
    "elu_neg": ("elu", -0.5, 2.0),  # not monotone
    "softplus": ("softplus", None, 3.0),
    "sigmoid": ("sigmoid", None, 3.0),
    "tanh": ("tanh", None, 2.0),
}


@lru_cache(maxsize=None)
def network(name, sizes=(3, 5, 4, 3), kind=None, alpha=None):
    """``input - (affine - activation) x 2 - affine`` with the activation of ``NETS[name]`` (or
    ``kind`` and ``alpha`` with ``name``'s weights)."""
    if kind is None:
        kind, alpha, scale = NETS[name]
    else:
        scale = NETS[name][2]
    g = torch.Generator().manual_seed(sum(map(ord, name)))
    layers = [Layer(index=0, kind="input", shape=(sizes[0],))]
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = torch.randn(n_out, n_in, generator=g, dtype=torch.float64) * scale / n_in ** 0.5
        b = torch.randn(n_out, generator=g, dtype=torch.float64) * scale * 0.3
        layers.append(affine(len(layers), len(layers) - 1, w, b))
        if i < len(sizes) - 2:
            layers.append(Layer(index=len(layers), kind=kind, shape=(n_out,), preds=[len(layers) - 1], alpha=alpha))
    return Network(layers, source=f"{name}.handbuilt")


#: The kinks of the piecewise functions (Elu, Softplus, Sigmoid, Tanh: where they change curvature).
KINKS = {"relu6": (0.0, 6.0), "hardtanh": (-1.0, 1.0)}


def test_the_boxes_put_neurons_on_every_side_of_every_kink(shipped):
    """Every rule's branches are taken: for each activation some pre-activation intervals (IBP's) lie
    below each kink, some above, some contain it, and for the clips some contain both kinks."""
    for name, (kind, _, _) in NETS.items():
        net = network(name)
        lb, ub = boxes(net)
        res = run_certifier(shipped.compiled("ibp", True), net, lb, ub)
        kinks = KINKS.get(kind, (0.0,))
        counts = {(k, side): 0 for k in kinks for side in ("below", "above", "across")}
        both = 0
        for layer in net.layers:
            if layer.kind != kind:
                continue
            l, u = (gb.to_dense(res.store.get(layer.preds[0], m)) for m in ("l", "u"))
            for k in kinks:
                counts[k, "below"] += int((u <= k).sum())
                counts[k, "above"] += int((l >= k).sum())
                counts[k, "across"] += int(((l < k) & (u > k)).sum())
            both += int(((l < kinks[0]) & (u > kinks[-1])).sum())
        assert min(counts.values()) > 0 and both > 0, (name, counts, both)


@pytest.mark.parametrize("name", CERTIFIERS)
def test_compiled_equals_interpreter_and_is_sound(name, compiled_matches_interpreter, shipped):
    assert_matches_interpreter_on(NETS, network, boxes, name, shipped, compiled_matches_interpreter,
                                  {"n_samples": 256, "n_vertices": 8, "pgd_steps": 20, "pgd_neurons": 32})


def test_ibp_images_are_exact(shipped):
    """IBP's bounds of every activation layer are the exact image of its input interval."""
    for name, (kind, alpha, _) in NETS.items():
        net = network(name)
        lb, ub = boxes(net)
        res = run_certifier(shipped.compiled("ibp", True), net, lb, ub)
        for layer in net.layers:
            if layer.kind == kind:
                lo, hi = (gb.to_dense(res.store.get(layer.preds[0], m)) for m in ("l", "u"))
                want = elementwise_image(kind, alpha, lo, hi)
                for m, w in zip(("l", "u"), want):
                    torch.testing.assert_close(gb.to_dense(res.store.get(layer.index, m)), w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", CERTIFIERS)
def test_exact_on_a_point(name, shipped):
    """On a box that is one point every certifier's bounds of every layer are the network's values."""
    assert_exact_on_a_point(name, shipped.compiled(name, True), NETS, network)


@pytest.mark.parametrize("name", CERTIFIERS)
def test_leakyrelu_with_alpha_0_is_relu(name, shipped):
    """LeakyRelu(0) and Abs are ReLU's relaxations rewritten (x = relu(x) + 0*x, |x| = 2 relu(x) - x):
    LeakyRelu(0) gives ReLU's output bounds in every certifier, and Abs those of LeakyRelu(-1)."""
    for a, b in ((dict(kind="leakyrelu", alpha=0.0), dict(kind="relu")), (dict(kind="abs"), dict(kind="leakyrelu", alpha=-1.0))):
        nets = [network("leakyrelu", **kw) for kw in (a, b)]
        lb, ub = boxes(nets[0])
        out = [run_certifier(shipped.compiled(name, True), net, lb, ub) for net in nets]
        last = nets[0].layers[-1].index
        for m in ("l", "u"):
            torch.testing.assert_close(gb.to_dense(out[0].store.get(last, m)), gb.to_dense(out[1].store.get(last, m)),
                                       rtol=1e-9, atol=1e-9, msg=lambda s: f"{name} {a} vs {b} '{m}': {s}")


ALPHA_SPEC = """def Shape as (Float l, Float u){[(curr[l]<=curr),(curr[u]>=curr)]};
func lo(Neuron n, Float c) = (c >= 0.0) ? (c * n[l]) : (c * n[u]);
func hi(Neuron n, Float c) = (c >= 0.0) ? (c * n[u]) : (c * n[l]);
func priority(Neuron n) = n[layer];
func stop(Neuron n) = true;
transformer t{
    Affine -> ((prev.dot(curr[weight]) + curr[bias]).map(lo) + 10.0 * curr[alpha], (prev.dot(curr[weight]) + curr[bias]).map(hi));
    LeakyRelu -> (curr[alpha], 2.0 * curr[alpha]);
}
flow(forward, priority, stop, t);
"""


def test_alpha_metadata_is_the_layer_alpha_and_0_elsewhere(shipped):
    """``curr[alpha]`` reads a LeakyRelu layer's alpha and 0 on an affine layer, in both engines."""
    net = network("leakyrelu_0.3")
    lb, ub = boxes(net)
    ibp = run_certifier(shipped.compiled("ibp", True), net, lb, ub)
    prog = compile_source(ALPHA_SPEC, "alpha.cf", "alpha")
    mod = compile_certifier(ALPHA_SPEC, "alpha.cf", pipeline_for(True), use_cache=False)
    res = run_certifier(mod, net, lb, ub)
    ref = analyze(prog, net, lb[0], ub[0])
    first_affine, first_act = net.layers[1], net.layers[2]
    torch.testing.assert_close(gb.to_dense(res.store.get(1, "l")), gb.to_dense(ibp.store.get(1, "l")), rtol=0, atol=0)
    torch.testing.assert_close(torch.tensor(ref.member("l", 1), dtype=torch.float64), gb.to_dense(ibp.store.get(1, "l"))[0])
    assert first_affine.kind == "affine" and first_act.kind == "leakyrelu"
    for m, scale in (("l", 1.0), ("u", 2.0)):
        want = [0.3 * scale] * first_act.size
        assert gb.to_dense(res.store.get(2, m)).expand(lb.shape[0], -1).tolist() == [want] * lb.shape[0]
        assert ref.member(m, 2) == want
