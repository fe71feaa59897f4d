"""alpha_deeppoly's McCormick parameters (``ml``, ``mu`` for Neuron_mult): each side of a product's
relaxation is a convex combination of McCormick's two planes on that side, the mix a parameter in [0, 1]
(1: the first plane, DeepPoly's).  On a network whose only parameters are these (two affine layers
multiplied, no ReLU), the other end of the domain gives other bounds, both ends and the optimised mix are
sound (samples, box vertices, PGD), and the optimisation climbs above the initial bounds -- the parameters
are live and sound.  (Compiled = interpreter at random values and the initial values = deeppoly:
``test_parametric_certifiers.py``; the prover: ``cf-verify alpha_deeppoly --rule Neuron_mult``.)"""

from __future__ import annotations

import torch

from cfmlir.engine_io import store_layer_bounds
from cfmlir.optimize import OptimizeOptions, OptimizeReport, optimize_bounds
from cfruntime.flow.engine import run_certifier
from cfruntime.flow.param_store import ParamStore
from cfruntime.network.graph import Layer, Network
from cfruntime.soundness import check_bounds
from cftest.nets import boxes


def _product_of_affines(seed=7) -> Network:
    """``W (A x + a) * (B x + b) + c``: a product of two affine layers whose operands take both signs."""
    g = torch.Generator().manual_seed(seed)

    def dense(n_out, n_in):
        return (torch.randn(n_out, n_in, generator=g, dtype=torch.float64) / n_in ** 0.5,
                torch.randn(n_out, generator=g, dtype=torch.float64) * 0.3)

    layers = [Layer(index=0, kind="input", shape=(3,))]
    for _ in range(2):
        w, b = dense(5, 3)
        layers.append(Layer(index=len(layers), kind="affine", preds=[0], shape=(5,), linear_kind="dense", weight=w, bias=b))
    layers.append(Layer(index=3, kind="mul", preds=[1, 2], shape=(5,)))
    w, b = dense(3, 5)
    layers.append(Layer(index=4, kind="affine", preds=[3], shape=(3,), linear_kind="dense", weight=w, bias=b))
    return Network(layers, source="product_of_affines.handbuilt")


def _run(cert, net, lb, ub, fill=None):
    ps = ParamStore(fill=fill) if fill is not None else ParamStore()
    res = run_certifier(cert, net, lb, ub, params=ps, graph=False)
    return res, ps


def test_the_mix_is_live_and_both_ends_are_sound(shipped):
    cert = shipped.compiled("alpha_deeppoly")
    net = _product_of_affines()
    lb, ub = boxes(3, batch=3, seed=4, radius=0.6)
    first, ps_first = _run(cert, net, lb, ub)  # init: 1, the first planes
    second, ps_second = _run(cert, net, lb, ub, fill=lambda lo, hi, init: lo)  # 0: the second planes
    assert {k[0] for k in ps_first.raw} >= {"ml", "mu"}, f"the product's parameters are read: {list(ps_first.raw)}"
    assert not torch.allclose(first.lower, second.lower) and not torch.allclose(first.upper, second.upper)
    for res in (first, second):
        layers = store_layer_bounds(cert, net, res, res.lower, res.upper)
        assert check_bounds(net, lb, ub, layers) == []


def test_optimising_the_mix_tightens_the_bounds_soundly(shipped):
    cert = shipped.compiled("alpha_deeppoly")
    net = _product_of_affines()
    lb, ub = boxes(3, batch=3, seed=4, radius=0.6)
    start, _ = _run(cert, net, lb, ub)
    rep = OptimizeReport()
    lower, upper, final = optimize_bounds(cert, net, lb, ub, OptimizeOptions(iterations=15, early_stop=False),
                                          dtype=torch.float64, report=rep, keep_final=True)
    assert rep.parameters > 0
    assert bool((lower >= start.lower - 1e-12).all())
    assert float((lower - start.lower).sum()) > 1e-3, "the mix of the two planes improves some lower bound"
    layers = store_layer_bounds(cert, net, final, lower, upper)
    assert check_bounds(net, lb, ub, layers) == []
