"""What the tests of the activation rules on small hand-built networks share
(``test_new_activation_rules.py``, ``test_vnncomp2024_rules.py``): the certifiers and run modes they
cover, the dense layer builder, the boxes of several widths, and the point check (on a box that is one
point, every certifier's bounds of every layer are the network's values)."""

from __future__ import annotations

import torch

from cfmlir.certifiers import BASE_CERTIFIERS
from cfruntime import tensor as gb
from cfruntime.flow.engine import run_certifier
from cfruntime.network.graph import Layer

#: every base certifier and DeepPoly with the two other ReLU slopes
CERTIFIERS = list(BASE_CERTIFIERS) + ["deeppoly_0", "deeppoly_2"]
#: (engine mode, rewrites on) pairs the compiled certifiers are compared in
MODES = [("planned", True), ("gbscr", True), ("dense", True), ("planned", False)]


def affine(index: int, pred: int, w: torch.Tensor, b: torch.Tensor) -> Layer:
    """A dense affine layer ``w x + b`` reading layer ``pred``."""
    return Layer(index=index, kind="affine", shape=(w.shape[0],), preds=[pred], linear_kind="dense", weight=w, bias=b)


def boxes(net, batch: int = 4, seed: int = 11) -> tuple[torch.Tensor, torch.Tensor]:
    """Boxes of several widths: narrow ones (most neurons on one side of a kink) and wide ones."""
    g = torch.Generator().manual_seed(seed)
    centre = torch.rand(batch, net.input_size, generator=g, dtype=torch.float64) * 2 - 1
    radius = torch.tensor([0.02, 0.2, 0.6, 1.2], dtype=torch.float64)[:batch].unsqueeze(1)
    return centre - radius, centre + radius


def assert_bounds_are_values(compiled, net, x: torch.Tensor, what: str) -> None:
    """On the box that is the points ``x`` (``lb == ub == x``), the bounds the compiled certifier
    gives every layer of ``net`` are the network's values there (``what`` names the case)."""
    values = net.forward_all(x)
    res = run_certifier(compiled, net, x, x)
    for layer in net.layers[1:]:
        want = values[layer.index]
        for m in ("l", "u"):
            got = gb.to_dense(res.store.get(layer.index, m))
            torch.testing.assert_close(got.expand(x.shape[0], *got.shape[1:]).reshape(want.shape), want, rtol=1e-9, atol=1e-9,
                                       msg=lambda s: f"{what}, layer {layer.index} '{m}': {s}")


def assert_exact_on_a_point(name: str, compiled, nets, network) -> None:
    """:func:`assert_bounds_are_values` of the compiled certifier ``name`` on ``network(n)`` for each
    ``n`` in ``nets``, at the first two of :func:`boxes`' lower corners."""
    for net_name in nets:
        net = network(net_name)
        assert_bounds_are_values(compiled, net, boxes(net)[0][:2], f"{name} on {net_name}")


def assert_matches_interpreter_on(nets, network, boxes_of, name: str, shipped, compiled_matches_interpreter,
                                  check: dict) -> None:
    """The ``compiled_matches_interpreter`` fixture's check of certifier ``name`` (compiled in every
    one of :data:`MODES` against the reference interpreter, and sound by ``check``'s sampling) on
    ``network(n)`` for each ``n`` in ``nets``, on the boxes ``boxes_of(net)``."""
    for net_name in nets:
        net = network(net_name)
        lb, ub = boxes_of(net)
        compiled_matches_interpreter(f"{name} on {net_name}", net, lb, ub, shipped.interpreted(name),
                                     lambda rewrite: shipped.compiled(name, rewrite), MODES, check)
