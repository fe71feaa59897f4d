"""Certifiers with parameters (issue 25, acceptance 7): with every parameter at random values -- in
their domains and outside them (a read projects into the domain) -- the compiled certifier computes
the reference interpreter's bounds on every layer, in every mode (planned g-BSCR, general g-BSCR,
dense; with and without the domain rewrites), the interpreter reading the very values the compiled run
made (:class:`cfruntime.flow.param_store.ParamStore`).  The bounds are sound for those values (samples,
box vertices, PGD), and at the initial values they are the non-parametric certifier's."""

from __future__ import annotations

import pytest
import torch

from cfmlir.compiler import compile_certifier, pipeline_for
from cfmlir.interpreter.run import analyze, compile_source
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.flow.param_store import ParamStore
from cfruntime.soundness import check_bounds
from cftest.nets import boxes, mlp, residual_mlp, small_conv
from cftest.product_nets import NETS as PRODUCT_NETS
from cftest.product_nets import network as product_network

MODES = [(rep, rewrite) for rep in ("planned", "gbscr", "dense") for rewrite in (True, False)]

#: A user certifier reading parameters every way the language allows: per neuron in a rule (``curr[t]``,
#: Sigmoid's tangent point, and ``prev[k]`` on a unary rule's input), per (bounded neuron, replaced
#: neuron) in a traverse (``n[s]``, with an ``else`` value on neurons of other operators), on a list
#: (``prev[k]`` in the Affine rule) and with domains bounded by the operator's inputs.
USER_SPEC = """
def Shape as (Float l, Float u, PolyExp L, PolyExp U){[(curr[l]<=curr),(curr[u]>=curr),(curr[L]<=curr),(curr[U]>=curr)]};
param s for Relu in [prev[l] >= 0.0 ? 1.0 : 0.0, 1.0] init 0.5 else 1.0;
param t for Sigmoid in [prev[l], prev[u]] init prev[l];
param k for Relu, Affine in [0.0, 1.0] init 1.0 else 1.0;
func simplify_lower(Neuron n, Float c) = (c >= 0.0) ? (n[l] * c) : (c * n[u]);
func simplify_upper(Neuron n, Float c) = (c >= 0.0) ? (c * n[u]) : (c * n[l]);
func rl(Neuron n, Float c) = (c >= 0.0) ? ((max(c, 0.0) * n[s] + min(c, 0.0)) * n[L]) : (c * n[U]);
func ru(Neuron n, Float c) = (c >= 0.0) ? (c * n[U]) : (c * n[L]);
func priority(Neuron n) = n[layer];
func p2(Neuron n, Float c) = -n[layer];
func stop(Neuron n) = false;
func st(Neuron n, Float c) = false;
func bl(PolyExp e, Neuron n) = (e.traverse(backward, p2, st, rl){e <= n}).map(simplify_lower);
func bu(PolyExp e, Neuron n) = (e.traverse(backward, p2, st, ru){e >= n}).map(simplify_upper);
func relu(Float x) = x >= 0.0 ? x : 0.0;
func up(Neuron n) = n[l] >= 0.0 ? n : (n[u] <= 0.0 ? 0.0 : (((n[u]) / ((n[u]) - (n[l]))) * n) - (((n[u]) * (n[l])) / ((n[u]) - (n[l]))));
func ds(Float x) = sigma(x) * (1.0 - sigma(x));
func tangent(Neuron n, Float x) = sigma(x) + ds(x) * (n - x);
func sl(Neuron n, Float t) = n[u] <= 0.0 ? tangent(n, t) : sigma(n[l]) + min(ds(n[l]), ds(n[u])) * (n - n[l]);
func chord(Float l, Float u) = u - l > 0.000001 ? (sigma(u) - sigma(l)) / (u - l) : min(ds(l), ds(u));
func su(Neuron n) = n[u] <= 0.0 ? sigma(n[u]) + chord(n[l], n[u]) * (n - n[u]) : sigma(n[u]) + min(ds(n[l]), ds(n[u])) * (n - n[u]);
transformer user {
    Affine -> (bl(prev.dot(curr[weight]) + curr[bias], curr), bu(prev.dot(curr[weight]) + curr[bias], curr), prev.dot(curr[weight]) + curr[bias], prev.dot(curr[weight]) + curr[bias]);
    Relu -> (relu(prev[l]) * prev[k] * curr[k], relu(prev[u]), prev[u] <= 0.0 ? 0.0 : prev, up(prev));
    Sigmoid -> (sigma(prev[l]), sigma(prev[u]), sl(prev, curr[t]), n_upper(prev));
}
flow(forward, priority, stop, user);
""".replace("n_upper", "su")


def _random(seed: int, spread: float):
    g = torch.Generator().manual_seed(seed)

    def fill(lo, hi, init):
        return lo - spread + (hi - lo + 2 * spread) * torch.rand(lo.shape, generator=g, dtype=lo.dtype)

    return fill


def _nets(sigmoid: bool, residual: bool = True):
    nets = {"mlp": mlp([3, 5, 4, 3], seed=4), "conv": small_conv(seed=5)}
    if residual:
        nets["residual"] = residual_mlp(seed=8)
    if sigmoid:
        nets["mlp_sigmoid"] = mlp([3, 4, 4, 2], activation="sigmoid", seed=6)
    return nets


def _check_equal(name, text, file, nets, spread):
    prog = compile_source(text, file, name)
    compiled = {rw: compile_certifier(text, file, pipeline_for(rw), use_cache=False) for rw in (True, False)}
    assert compiled[True].params, "the certifier declares parameters"
    read = 0
    for net_name, net in nets.items():
        lb, ub = boxes(net.input_size, batch=2, seed=9, radius=0.4)
        for i, (rep, rewrite) in enumerate(MODES):
            ps = ParamStore(fill=_random(11 + i, spread))
            res = run_certifier(compiled[rewrite], net, lb, ub, representation=rep, params=ps)
            read += len(ps.raw)
            ref = [analyze(prog, net, lb[b], ub[b], sample=b, params=ps) for b in range(lb.shape[0])]
            layers = {}
            for layer in net.layers[1:]:
                got = [gb.to_dense(res.store.get(layer.index, m)).expand(lb.shape[0], -1) for m in ("l", "u")]
                for m, g in zip(("l", "u"), got):
                    want = torch.tensor([r.member(m, layer.index) for r in ref], dtype=torch.float64)
                    torch.testing.assert_close(g, want, rtol=1e-9, atol=1e-9, msg=lambda s: (
                        f"{name} on {net_name}, layer {layer.index} '{m}', {rep}, rewrite={rewrite}: {s}"))
                layers[layer.index] = tuple(got)
            if i == 0:
                assert check_bounds(net, lb, ub, layers) == []
    assert read, f"{name}: no parameter was read"


@pytest.mark.parametrize("spread", [0.0, 0.3], ids=["in_domain", "projected"])
@pytest.mark.parametrize("name", ["alpha_deeppoly", "alpha_deepz"])
def test_compiled_equals_interpreter_at_random_parameters(name, spread):
    from cfmlir.certifiers import certifier_source

    _check_equal(name, *certifier_source(name), _nets(sigmoid=True), spread)


@pytest.mark.parametrize("spread", [0.0, 0.3], ids=["in_domain", "projected"])
@pytest.mark.parametrize("name", ["alpha_deeppoly", "alpha_deepz"])
def test_issue_27_kinds_at_random_parameters(name, spread):
    """Products of two layers, Sign, Floor, Sin, Cos, Exp, Reciprocal and a Softmax (VNN-COMP 2024's
    layer kinds) behind and in front of ReLUs: the same equality and soundness.  (Before these rules the
    parametric certifiers stopped at such a layer: ``auto`` chose alpha_deeppoly and it had no rule.)"""
    from cfmlir.certifiers import certifier_source

    _check_equal(name, *certifier_source(name), {n: product_network(n) for n in PRODUCT_NETS}, spread)


@pytest.mark.parametrize("spread", [0.0, 0.3], ids=["in_domain", "projected"])
def test_user_certifier_every_kind_of_read(spread):
    _check_equal("user", USER_SPEC, "user.cf", _nets(sigmoid=True, residual=False), spread)


@pytest.mark.parametrize("name, base", [("alpha_deeppoly", "deeppoly"), ("alpha_deepz", "deepz")])
def test_initial_parameters_give_the_non_parametric_bounds(name, base, shipped):
    """(alpha_deeppoly's sigmoid lines are CROWN's, not DeepPoly's: test_bounded_peer.py compares them
    with auto_LiRPA's CROWN, test_crown_lines.py checks them.)"""
    nets = {**_nets(sigmoid=name != "alpha_deeppoly"), **{n: product_network(n) for n in PRODUCT_NETS}}
    for net_name, net in nets.items():
        lb, ub = boxes(net.input_size, batch=3, seed=2, radius=0.5)
        a = run_certifier(shipped.compiled(name), net, lb, ub)
        b = run_certifier(shipped.compiled(base), net, lb, ub)
        torch.testing.assert_close(a.lower, b.lower, rtol=1e-12, atol=1e-12, msg=lambda s: f"{name} on {net_name}: {s}")
        torch.testing.assert_close(a.upper, b.upper, rtol=1e-12, atol=1e-12, msg=lambda s: f"{name} on {net_name}: {s}")


def test_pair_parameters_are_one_per_bounded_and_replaced_neuron(shipped):
    """alpha-DeepPoly's slopes: one raw tensor [B, n_bounded, n_relu] per (bounded layer, ReLU layer),
    for lower and upper bounds separately (alpha-CROWN's per-bound alphas)."""
    net = mlp([3, 5, 4, 3], seed=4)  # layers: 0 input, 1 affine, 2 relu, 3 affine, 4 relu, 5 affine
    lb, ub = boxes(3, batch=2, seed=1)
    ps = ParamStore()
    run_certifier(shipped.compiled("alpha_deeppoly"), net, lb, ub, params=ps)
    shapes = {k: tuple(v.shape) for k, v in ps.raw.items()}
    assert shapes == {("al", 3, 2, "pair"): (2, 4, 5), ("au", 3, 2, "pair"): (2, 4, 5),
                      ("al", 5, 4, "pair"): (2, 3, 4), ("al", 5, 2, "pair"): (2, 3, 5),
                      ("au", 5, 4, "pair"): (2, 3, 4), ("au", 5, 2, "pair"): (2, 3, 5)}


def test_gradients_of_the_bounds_in_the_parameters_are_right(shipped):
    """float64 gradcheck of a margin's lower bound in alpha-DeepPoly's slopes, at values strictly inside
    their domains (where the bounds are smooth in them)."""
    net = mlp([3, 5, 4, 3], seed=4)
    lb, ub = boxes(3, batch=2, seed=1, radius=0.6)
    cert = shipped.compiled("alpha_deeppoly")
    ps = ParamStore(fill=lambda lo, hi, init: lo + (hi - lo) * torch.full_like(lo, 0.37))
    run_certifier(cert, net, lb, ub, params=ps)
    keys = [k for k in ps.raw if bool((ps.last_domains[(k[0], k[2])][1] > ps.last_domains[(k[0], k[2])][0]).any())]
    assert keys
    free = {k: (ps.last_domains[(k[0], k[2])][1] > ps.last_domains[(k[0], k[2])][0]).unsqueeze(1).expand(ps.raw[k].shape)
            for k in keys}
    base = {k: v.detach().clone() for k, v in ps.raw.items()}

    def f(*xs):
        store = ParamStore()
        store.raw = dict(base)
        for k, x in zip(keys, xs):
            store.raw[k] = torch.where(free[k], x, base[k])
        return run_certifier(cert, net, lb, ub, params=store).lower.sum()

    xs = tuple(base[k].clone().requires_grad_(True) for k in keys)
    assert torch.autograd.gradcheck(f, xs, eps=1e-6, atol=1e-5, rtol=1e-4)


def test_a_parameter_without_a_value_on_a_layer_is_a_clear_error():
    from cfruntime.flow.param_store import ParamError

    text = USER_SPEC.replace("param s for Relu in [prev[l] >= 0.0 ? 1.0 : 0.0, 1.0] init 0.5 else 1.0;",
                             "param s for Relu in [prev[l] >= 0.0 ? 1.0 : 0.0, 1.0] init 0.5;")
    cert = compile_certifier(text, "user.cf", pipeline_for(True), use_cache=False)
    net = mlp([3, 5, 4, 3], seed=4)
    lb, ub = boxes(3, batch=2, seed=1)
    with pytest.raises(ParamError, match="parameter 's' has no value on layer .* it is declared for Relu and has no 'else' value"):
        run_certifier(cert, net, lb, ub)
