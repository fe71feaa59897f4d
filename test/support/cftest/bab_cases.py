"""Random ReLU networks and properties whose answer is known exactly (:mod:`cftest.milp`), for the
branch-and-bound tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cftest.instances_folder import numpy_forward, relu_net
from cftest.milp import min_violation


@dataclass
class Case:
    sizes: list
    ws: list
    bs: list
    net: object  # cfruntime.network.Network
    prop: object  # VnnlibProperty
    minimum: float  # min over the box of the disjunct's violation before the threshold shift
    truth: str  # "sat" or "unsat"


def random_case(seed: int, margin: float, *, max_depth: int = 3, max_width: int = 20, rows: int = 1) -> Case:
    """A net ``[n_in, width x depth, n_out]`` (n_in 2..5, depth 1..``max_depth``, width 5..``max_width``) and
    a one-disjunct property ``A y <= b`` (``rows`` rows) over a box; ``b`` is shifted from the exact
    minimum of ``max_r A_r y`` by ``margin`` times the sampled spread -- below it for odd seeds (``unsat``),
    above it for even ones (``sat``)."""
    from cfruntime.network import network_from_model
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty

    rng = np.random.default_rng(1000 + seed)
    n_in, depth = int(rng.integers(2, 6)), int(rng.integers(1, max_depth + 1))
    width, n_out = int(rng.integers(5, max_width + 1)), int(rng.integers(2, 5))
    sizes = [n_in] + [width] * depth + [n_out]
    ws, bs, model = relu_net(sizes, seed=seed)
    centre, radius = rng.uniform(-1, 1, n_in), rng.uniform(0.2, 1.0)
    lb, ub = centre - radius, centre + radius
    A = rng.standard_normal((rows, n_out))
    m, _ = min_violation(ws, bs, lb, ub, A, np.zeros(rows))
    samples = lb + rng.uniform(size=(300, n_in)) * (ub - lb)
    vals = np.array([np.max(A @ numpy_forward(ws, bs, x)) for x in samples])
    spread = float(vals.max() - vals.min()) + 1e-6
    truth = "sat" if seed % 2 == 0 else "unsat"
    shift = margin * spread if truth == "sat" else -margin * spread
    b = np.full(rows, m + shift)
    prop = VnnlibProperty(n_in, n_out, [InputRegion(lb, ub, [(A, b)])])
    return Case(sizes, ws, bs, network_from_model(model), prop, m, truth)
