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


def root_domain(bounding, structure, rows: int, *, beta: bool = False):
    """The search's root as one domain row: its carried layers' bounds from a first bound of ``bounding``
    (a ``cfmlir.bab.bounding.CertifierBounding``), no ReLU split (signs 0) and, with ``beta``, every split
    layer's multipliers at 0.  Returns ``(root, first)``: ``root["rows"]`` is left at 0 (the caller takes
    ``first.rows`` where it wants the root's own rows)."""
    import torch

    from cfmlir.bab.domains import hi_key, lo_key, split_key
    from cfmlir.bab.domains import Domains
    from cfmlir.bab.lagrangian import beta_key

    root = Domains({"rows": torch.zeros(1, rows, dtype=torch.float64), "value": torch.zeros(1, dtype=torch.float64),
                    "depth": torch.zeros(1, dtype=torch.int32)})
    first = bounding.bound(root, "tighten")
    for k, (lo, hi) in first.carried.items():
        root[lo_key(k)], root[hi_key(k)] = lo, hi
    for s in structure.split_layers:
        root[split_key(s.pre)] = torch.zeros(1, s.size, dtype=torch.int8)
        if beta:
            root[beta_key(s.pre)] = torch.zeros(1, rows, s.size, dtype=torch.float32)
    return root, first


def random_subdomains(st, root, vals, g, n_domains: int, n_splits: int):
    """``n_domains`` children of ``root``, each with ``n_splits`` random neurons split the way a random
    sampled point has them (so each subdomain has that point): ``st`` the structure, ``root`` the root domain,
    ``vals`` every layer's values at the sampled points, ``g`` a generator."""
    import torch

    from cfmlir.bab.domains import hi_key, lo_key, split_key

    p = vals[0].shape[0]
    d = root.repeat(n_domains)
    total = sum(s.size for s in st.split_layers)
    for r in range(n_domains):
        point = int(torch.randint(p, (1,), generator=g))
        for flat in torch.randperm(total, generator=g)[:n_splits].tolist():
            start = 0
            for s in st.split_layers:
                if flat < start + s.size:
                    n = flat - start
                    if float(vals[s.pre][point, n]) >= 0:
                        d[split_key(s.pre)][r, n], d[lo_key(s.pre)][r, n] = 1, max(0.0, float(d[lo_key(s.pre)][r, n]))
                    else:
                        d[split_key(s.pre)][r, n], d[hi_key(s.pre)][r, n] = -1, min(0.0, float(d[hi_key(s.pre)][r, n]))
                    break
                start += s.size
    return d


def inside_subdomain(st, d, vals, r):
    """``[N]`` bool: which sampled points (``vals``) lie in domain ``r`` of ``d`` (its ReLU splits hold)."""
    import torch

    from cfmlir.bab.domains import split_key

    ok = torch.ones(vals[0].shape[0], dtype=torch.bool)
    for s in st.split_layers:
        sign = d[split_key(s.pre)][r]
        z = vals[s.pre]
        ok &= ~(((sign > 0) & (z < 0)) | ((sign < 0) & (z > 0))).any(1)
    return ok


def case_bounding(cert, case):
    """``(objective, margin network, structure, bounding)`` of a case's first region, bounded by the compiled
    certifier ``cert`` (a ``cfmlir.bab.bounding.CertifierBounding`` over the region's box)."""
    import torch

    from cfmlir.bab.bounding import CertifierBounding
    from cfmlir.bab.objective import Objective
    from cfmlir.bab.structure import structure_of

    region = case.prop.regions[0]
    obj = Objective(region)
    mnet = case.net.with_margin_layer(obj.A)
    st = structure_of(mnet)
    box = (torch.from_numpy(np.asarray(region.lb, float)), torch.from_numpy(np.asarray(region.ub, float)))
    return obj, mnet, st, CertifierBounding(cert, mnet, st, box)


def empty_root(rows: int):
    """The search's root before anything is known: rows and value 0, depth 0."""
    import torch

    from cfmlir.bab.domains import Domains

    return Domains({"rows": torch.zeros(1, rows, dtype=torch.float64), "value": torch.zeros(1, dtype=torch.float64),
                    "depth": torch.zeros(1, dtype=torch.int32)})
