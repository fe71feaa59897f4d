"""The widening's structure (:class:`cfruntime.flow.widening._Structure`: counts, rounding factors, the
plan) is made once per certifier and network structure and shared by the runs: every batch's margin
network (and its centred copy) reuses it, a network of another structure, another dtype or a
certifier with other tags gets its own -- equal, field by field, to one made afresh -- and the bounds
of a run that reuses one are bit for bit those of a run that makes it.  A key blind to the network's
structure is caught by the same checks."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for
from cfruntime import contract
from cfruntime.flow import widening
from cfruntime.flow.engine import run_certifier
from cfruntime.flow.representation import Representation
from cfruntime.network import network_from_model
from cfruntime.network.builders import mlp_model

#: the fields a run reads from its structure
FIELDS = ("u", "sizes", "S", "total", "sum_lens", "chain", "sym_total", "k_sym", "lo", "hi", "pairs", "zono",
          "sum_terms", "substitutes", "k_max", "safety", "rho_post", "rho_c", "eta", "float_cs")
PLAN_FIELDS = ("succ", "layer_at", "float_kind", "rho", "pushable")


def certifier(name: str = "crown_ibp"):
    return compile_certifier(*load_certifier_source(name), pipeline_for(True))


def mlp(hidden: tuple[int, ...], seed: int = 11):
    """input(6) - (affine - relu) per hidden size - affine(3)."""
    rng = np.random.default_rng(seed)
    sizes = (6, *hidden, 3)
    ws = [rng.normal(size=(o, i)).astype(np.float32) for i, o in zip(sizes, sizes[1:])]
    bs = [rng.normal(size=o).astype(np.float32) for o in sizes[1:]]
    return network_from_model(mlp_model(ws, bs, "relu", input_shape=(6,)))


def margin(net, seed: int):
    """A batch's margin network (its own copy of every layer, the last one folded with ``C``)."""
    c = torch.from_numpy(np.random.default_rng(seed).normal(size=(2, 2, 3)))
    return net.with_margin_layer(c)


def rep(dtype=torch.float32):
    return Representation("planned", dtype, "cpu")


def boxes(net, n: int = 2):
    g = torch.Generator().manual_seed(3)
    x = torch.rand(n, net.layers[0].size, generator=g, dtype=torch.float64)
    return x - 0.05, x + 0.05


def fields(s) -> dict:
    out = {f: getattr(s, f) for f in FIELDS}
    out.update({f"plan.{f}": getattr(s.plan, f) for f in PLAN_FIELDS} if s.plan is not None else {})
    return out


def check_fresh(cert, net, r) -> None:
    """The shared structure of ``cert`` on ``net`` equals one made afresh, field by field."""
    assert fields(widening._structure(cert, net, r)) == fields(widening._Structure(cert, net, r))


def test_the_batches_of_one_network_share_one_structure():
    cert, net = certifier(), mlp((8, 8))
    a, b = margin(net, 1), margin(net, 2)
    assert widening._structure(cert, a, rep()) is widening._structure(cert, b, rep())
    assert widening.Widening(cert, a, rep(), 2).plan is widening.Widening(cert, b, rep(), 2).plan
    # the centred copy a run analyses (a new network and input layer's consumer) reuses it too
    lb, ub = boxes(net)
    centred = widening.centre_input(a, lb.float(), ub.float(), torch.float32)[0]
    assert centred is not a and widening._structure(cert, centred, rep()) is widening._structure(cert, a, rep())
    check_fresh(cert, b, rep())


@pytest.mark.parametrize("other", [(8, 5), (8, 8, 8), (8,)])
def test_another_structure_gets_its_own(other):
    """A hidden layer's size, one layer more or fewer: its own structure, as made afresh."""
    cert = certifier()
    a, b = margin(mlp((8, 8)), 1), margin(mlp(other), 1)
    sa, sb = widening._structure(cert, a, rep()), widening._structure(cert, b, rep())
    assert sa is not sb
    check_fresh(cert, a, rep())
    check_fresh(cert, b, rep())


def test_another_dtype_or_tag_table_gets_its_own():
    cert, net = certifier(), margin(mlp((8, 8)), 1)
    s32 = widening._structure(cert, net, rep())
    s16 = widening._structure(cert, net, rep(torch.float16))
    assert s16 is not s32 and s16.u != s32.u
    check_fresh(cert, net, rep(torch.float16))
    mutant = copy.copy(cert)  # (shares the original's cache: the key tells the tables apart)
    mutant.exact = {op: {m: t if m.startswith("@") else "inexact" for m, t in tags.items()}  # (the members')
                    for op, tags in cert.exact.items()}
    sm = widening._structure(mutant, net, rep())
    assert sm is not s32 and sm.plan.float_kind != s32.plan.float_kind
    check_fresh(mutant, net, rep())


@pytest.mark.parametrize("name", ["crown_ibp", "deeppoly", "ibp", "deepz"])
def test_a_run_that_reuses_a_structure_is_bit_for_bit_one_that_makes_it(name):
    """Runs on networks of two structures, alternating, with one certifier: each run's widened Float
    bounds (every layer's) are bit for bit those of a run with a certifier whose cache is empty."""
    cert = certifier(name)
    lo, hi = (cert.member_with_role(contract.NUMBER_LETTERS, role) for role in (contract.LOWER, contract.UPPER))
    nets = [margin(mlp((8, 8)), 1), margin(mlp((8, 5), seed=4), 2), margin(mlp((8, 8), seed=9), 3)]
    for net in nets + nets:
        lb, ub = boxes(net)
        shared = run_certifier(cert, net, lb, ub, dtype=torch.float32, graph=False)
        fresh_cert = copy.copy(cert)
        fresh_cert.__dict__.pop("_cf_widening", None)  # (a copy's dict: the original keeps its cache)
        fresh = run_certifier(fresh_cert, net, lb, ub, dtype=torch.float32, graph=False)
        assert "_cf_widening" in fresh_cert.__dict__ and fresh_cert._cf_widening is not cert._cf_widening
        for k in range(len(net.layers)):
            for m in (lo, hi):
                x, y = shared.store.get(k, m), fresh.store.get(k, m)
                assert torch.equal(x.view(torch.int32), y.view(torch.int32)), (name, k, m)


def test_a_key_blind_to_the_structure_is_caught(monkeypatch):
    """The checks above fail for a cache whose key ignores the network: the structure made for the
    first network is returned for one of another size."""
    monkeypatch.setattr(widening, "_signature", lambda network: ())
    cert = certifier()
    a, b = margin(mlp((8, 8)), 1), margin(mlp((8, 5)), 1)
    assert widening._structure(cert, a, rep()) is widening._structure(cert, b, rep())
    with pytest.raises(AssertionError):
        check_fresh(cert, b, rep())


def test_the_centred_biases_follow_an_in_place_weight_update():
    """The float64 weights kept for the centred biases (``b + W x0``) and their error bounds (``g rowsum|W|
    max|x0| + g |b|``) are made again after the weight changes in place (kept per in-place version):
    stale ones would shift the analysed network or under-charge its rounding."""
    net = mlp((4,))
    first = net.layers[1]
    lb, ub = boxes(net)
    lb, ub = lb.float(), ub.float()
    x0 = ((lb + ub) * 0.5).double()

    def centred():
        out, _, _, errs = widening.centre_input(net, lb, ub, torch.float32)
        return out.layers[1].bias, errs[1]

    before, err_before = centred()
    assert torch.allclose(before, first.bias.double() + x0 @ first.weight.double().T)
    with torch.no_grad():
        first.weight.mul_(2.0)
    after, err_after = centred()
    assert torch.allclose(after, first.bias.double() + x0 @ first.weight.double().T)
    assert not torch.allclose(after, before)
    assert (err_after > err_before).all()  # rowsum |W| doubled


def test_the_centred_inputs_weight_term_bounds_the_product_without_one():
    """Section 5's ``|W| . m_pred`` for a consumer of the centred input whose float64 weights do not survive
    the cast (a folded normalisation): ``rowsum|W| max_p m_p``, at least the product on every neuron and at
    most about twice it (the radii of an eps-box), made without a matrix product."""
    from cfruntime.op_count import OpCounter

    cert, net = certifier("ibp"), mlp((8,))
    with torch.no_grad():
        net.layers[1].weight.mul_(1 / 3)  # float64 weights no float32 number equals
    lb, ub = boxes(net, n=3)
    centred, dl, du, errs = widening.centre_input(net, lb.float(), ub.float(), torch.float32)
    w = widening.Widening(cert, centred, rep(), 3, errs)
    w.mags[0] = torch.maximum(-dl, du)
    layer = centred.layers[1]
    assert not widening.exact_parameters(layer, torch.float32)
    w._weights_times_m(layer)  # the rounded-up row sums are made once per weight version
    with OpCounter() as c:
        got = w._weights_times_m(layer)
    want = widening.abs_dot(layer.weight.float().unsqueeze(0), w.mags[0])
    assert bool((got >= want).all()) and bool((got <= 2.5 * want).all())
    assert c.by_name["mm"] == 0 and c.by_name["bmm"] == 0 and c.ops <= 2, c.by_name
