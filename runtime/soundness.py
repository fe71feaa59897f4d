"""Empirical soundness checker for computed bounds (library; also used by tests).

:func:`check_bounds` evaluates the network concretely on points of the input
box and reports every value outside its claimed bounds:

1. uniform samples inside the box (plus its centre and its two extreme corners),
2. box vertices (all of them for <= log2(n_vertices) free coordinates, else a random subset),
3. a short PGD attack (torch autograd, sign gradient, projected to the box)
   minimising each margin / neuron to attack its lower bound and maximising
   it to attack its upper bound.  For margins every row is attacked; for
   hidden layers the ``pgd_neurons`` neurons per side and sample whose
   sampled extreme came closest to the bound without reaching it (bounds
   that a sample reached, such as a dead ReLU's 0, come last).

A violation means the bounds are unsound (or the network the bounds were
computed for differs from ``network``).  A NaN bound, or a NaN value, is always a
violation (by an infinite excess): a comparison with NaN is false, and "no value
below NaN" must never read as "no violation".  :func:`vnnlib_counterexample`
searches for a concrete input that satisfies a VNN-LIB disjunct (``sat``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from cfruntime.box_search import ODI_STEPS, box_points, forward_upto, pgd
from cfruntime.errors import PropertyError
from cfruntime.network.graph import BINARY_FUNCTIONS, ELEMENTWISE_FUNCTIONS, Network, binary_image, elementwise_image
from cfruntime.region_screen import padded_disjuncts, screen_regions

MARGIN = "margin"


@dataclass
class Violation:
    layer: int | str  # layer index, or 'margin'
    neuron: int  # index within the layer (margin row for 'margin')
    sample: int
    value: float
    bound: float
    side: str  # 'lower' (value < lower bound) | 'upper' (value > upper bound)
    source: str  # 'sample' | 'vertex' | 'pgd'
    point: torch.Tensor | None = field(default=None, repr=False)  # the input that produced the value

    @property
    def excess(self) -> float:
        e = (self.bound - self.value) if self.side == "lower" else (self.value - self.bound)
        return math.inf if math.isnan(e) else e

    def __str__(self) -> str:
        rel = "<" if self.side == "lower" else ">"
        return (f"layer {self.layer} neuron {self.neuron} sample {self.sample}: value {self.value:.9g} {rel} "
                f"{self.side} bound {self.bound:.9g} (by {self.excess:.3g}, found by {self.source})")


def _nan_is_violation(excess: torch.Tensor) -> torch.Tensor:
    """``excess`` with NaN (a NaN bound or value, or a lower bound of +inf / upper of -inf) as +inf."""
    return torch.nan_to_num(excess, nan=math.inf, posinf=math.inf, neginf=-math.inf)


def _batched(t, batch: int, size: int, what: str) -> torch.Tensor:
    t = torch.as_tensor(t, dtype=torch.float64)
    t = t.reshape(1, -1) if t.dim() <= 1 else t.reshape(t.shape[0], -1)
    if t.shape[1] != size and t.numel() == size:
        t = t.reshape(1, size)
    if t.shape[1] != size or t.shape[0] not in (1, batch):
        raise PropertyError(f"{what}: expected [{batch}, {size}] values, got shape {tuple(t.shape)}")
    return t.expand(batch, size)


def _box(network: Network, input_lb, input_ub) -> tuple[torch.Tensor, torch.Tensor]:
    n = network.input_size
    lb = torch.as_tensor(input_lb, dtype=torch.float64)
    ub = torch.as_tensor(input_ub, dtype=torch.float64)
    lb = lb.reshape(-1, n)
    ub = ub.reshape(-1, n)
    if lb.shape != ub.shape:
        raise PropertyError("input lower and upper bounds differ in shape")
    if torch.any(lb > ub):
        raise PropertyError("input lower bound above upper bound")
    return lb, ub


_SOURCES = ("sample", "vertex", "pgd")


class _Tracker:
    """The worst value found so far per (layer, neuron, sample, side), kept as tensors: a wrong
    certifier can violate every neuron of every sample, millions of them on a big network."""

    def __init__(self, tol, keep_points: bool = True):
        self.tol = tol
        self.keep_points = keep_points
        self.state: dict[tuple, dict] = {}  # (layer, side) -> {"excess", "value", "source", "chunk", "row", "bound"}
        self.points: list[torch.Tensor] = []  # point tensors referenced by the "chunk" entries

    def _slot(self, layer, side, bound: torch.Tensor) -> dict:
        st = self.state.get((layer, side))
        if st is None:
            shape = bound.shape
            st = {"excess": torch.zeros(shape, dtype=torch.float64), "value": torch.zeros(shape, dtype=torch.float64),
                  "source": torch.zeros(shape, dtype=torch.int8), "bound": bound}
            if self.keep_points:
                st["chunk"] = torch.full(shape, -1, dtype=torch.int64)
                st["row"] = torch.zeros(shape, dtype=torch.int64)
            self.state[(layer, side)] = st
        return st

    def check(self, layer, vals, sample_ids, lb, ub, points, source):
        """vals [R, n]; lb/ub [B, n]; rows belong to samples sample_ids [R]."""
        lo = lb[sample_ids]
        hi = ub[sample_ids]
        tl = self.tol * lo.abs().clamp(min=1.0)
        th = self.tol * hi.abs().clamp(min=1.0)
        code = _SOURCES.index(source)
        for side, excess, bound in (("lower", lo - tl - vals, lb), ("upper", vals - hi - th, ub)):
            excess = _nan_is_violation(excess)
            bad_rows = (excess > 0).any(dim=1)
            if not bool(bad_rows.any()):
                continue
            st = self._slot(layer, side, bound)
            chunk_id = None
            for s in torch.unique(sample_ids[bad_rows]).tolist():
                rows = torch.nonzero(sample_ids == s).reshape(-1)
                worst, arg = excess[rows].max(dim=0)
                better = worst > st["excess"][s]
                if not bool(better.any()):
                    continue
                cols = torch.nonzero(better).reshape(-1)
                r = rows[arg[cols]]
                st["excess"][s, cols] = worst[cols]
                st["value"][s, cols] = vals[r, cols].detach().to(torch.float64)
                st["source"][s, cols] = code
                if self.keep_points and points is not None:
                    if chunk_id is None:
                        self.points.append(points.detach())
                        chunk_id = len(self.points) - 1
                    st["chunk"][s, cols] = chunk_id
                    st["row"][s, cols] = r

    def result(self, max_per_layer: int | None = None, counts: dict | None = None) -> list[Violation]:
        """The violations, worst first; with ``max_per_layer`` only the worst ones of each layer
        (``counts`` gets every layer's total either way)."""
        per_layer: dict = {}
        for (layer, side), st in self.state.items():
            idx = torch.nonzero(st["excess"] > 0)
            if idx.numel() == 0:
                continue
            s_i, c_i = idx[:, 0], idx[:, 1]
            value = st["value"][s_i, c_i]
            bound = st["bound"][s_i, c_i].to(torch.float64)
            exc = _nan_is_violation((bound - value) if side == "lower" else (value - bound))
            per_layer.setdefault(layer, []).append((side, st, s_i, c_i, value, bound, exc))
        out = []
        for layer, parts in per_layer.items():
            total = sum(int(p[2].numel()) for p in parts)
            if counts is not None:
                counts[layer] = total
            cut = None
            if max_per_layer is not None and total > max_per_layer:
                cut = torch.topk(torch.cat([p[6] for p in parts]), max_per_layer).values[-1]
            for side, st, s_i, c_i, value, bound, exc in parts:
                keep = torch.nonzero(exc >= cut).reshape(-1) if cut is not None else torch.arange(exc.numel())
                for j in keep.tolist():
                    s, c = int(s_i[j]), int(c_i[j])
                    point = None
                    if self.keep_points and int(st["chunk"][s, c]) >= 0:
                        point = self.points[int(st["chunk"][s, c])][int(st["row"][s, c])].clone()
                    out.append(Violation(layer, c, s, float(value[j]), float(bound[j]), side,
                                         _SOURCES[int(st["source"][s, c])], point))
        out.sort(key=lambda v: -v.excess)
        if max_per_layer is not None:  # ties at the cut may have let a few more through
            seen: dict = {}
            kept = []
            for v in out:
                seen[v.layer] = seen.get(v.layer, 0) + 1
                if seen[v.layer] <= max_per_layer:
                    kept.append(v)
            out = kept
        return out


def _margins(C: torch.Tensor, y: torch.Tensor, sample_ids: torch.Tensor) -> torch.Tensor:
    Cs = C[sample_ids] if C.dim() == 3 else C.unsqueeze(0).expand(y.shape[0], *C.shape)
    return torch.einsum("rkp,rp->rk", Cs.to(y.dtype), y)


def check_bounds(network: Network, input_lb, input_ub, layer_bounds: dict | None = None, *, margin_bounds=None, C=None,
                 n_samples: int = 256, n_vertices: int = 64, pgd_steps: int = 20, pgd_neurons: int = 16, pgd_restarts: int = 1,
                 tol: float = 1e-6, seed: int = 0, chunk: int = 1024, keep_points: bool = True,
                 max_per_layer: int | None = None, stats: dict | None = None, inside=None) -> list[Violation]:
    """Report concrete values outside their claimed bounds.

    ``input_lb/input_ub``: ``[B, *input_shape]`` (or one box).  ``layer_bounds``:
    ``{layer_index: (lb, ub)}`` with ``[B, size]`` (or ``[size]``) tensors;
    a lower bound ``-inf`` or an upper bound ``inf`` holds for every value; a NaN bound
    is violated by every value.  ``margin_bounds``: ``(lb, ub)``
    ``[B, K]`` of the margins ``C[b] @ y`` with ``C`` ``[B, K, out]`` or ``[K, out]``
    (``y`` = the output layer of ``network``).  A value is a violation if it is
    below ``lb - tol*max(1,|lb|)`` or above ``ub + tol*max(1,|ub|)``.
    Returns the violations sorted by how far they exceed the bound (worst first), at most one per
    (layer, neuron, sample, side): the worst value found.

    ``inside(values, sample_ids) -> [R] bool`` (``values``: every layer's values of ``R`` points): the bounds
    of box ``b`` hold only on the points of the box it accepts -- a branch-and-bound subdomain, a box with
    ReLU signs fixed (:mod:`cfmlir.bab.bounding`); the other points are not checked (PGD then runs through
    every layer, so that ``inside`` sees them all).

    ``keep_points=False`` keeps no input point per violation (``Violation.point`` is None; a wrong
    certifier on a big network has millions of violations).  ``max_per_layer``: return only the
    worst violations of each layer.  ``stats`` (a dict) is filled with what was done and found:
    ``points`` (concrete inputs evaluated by sampling: ``points_per_sample`` per sample, of which
    ``samples`` uniform samples and the centre, ``vertices`` box vertices), ``pgd_targets`` (attacked
    neuron/side/sample triples, ``pgd_steps`` steps each), ``forward_rows`` (network evaluations in
    all), ``layers`` (checked layers), ``neurons`` (checked bounds), ``violations`` and
    ``violations_per_layer`` (every violation, also those that ``max_per_layer`` leaves out).
    """
    lb, ub = _box(network, input_lb, input_ub)
    B = lb.shape[0]
    gen = torch.Generator().manual_seed(seed)
    checks: dict = {}
    for li, (l, u) in (layer_bounds or {}).items():
        if not 0 <= li < len(network):
            raise PropertyError(f"layer_bounds: no layer {li}")
        size = network[li].size
        checks[li] = (_batched(l, B, size, f"lower bounds of layer {li}"), _batched(u, B, size, f"upper bounds of layer {li}"))
    if margin_bounds is not None:
        if C is None:
            raise PropertyError("margin_bounds need the margin matrix C")
        C = torch.as_tensor(C, dtype=torch.float64)
        k = C.shape[-2]
        checks[MARGIN] = (_batched(margin_bounds[0], B, k, "margin lower bounds"), _batched(margin_bounds[1], B, k, "margin upper bounds"))
    tracker = _Tracker(tol, keep_points)
    if stats is not None:
        stats.update(layers=len(checks), neurons=sum(int(c[0].numel()) for c in checks.values()), points=0,
                     points_per_sample=0, samples=0, vertices=0, pgd_targets=0, pgd_steps=pgd_steps, forward_rows=0,
                     violations=0, violations_per_layer={})
    if not checks:
        return []

    def layer_vals(vals, key, sample_ids):
        if key == MARGIN:
            return _margins(C, vals[-1], sample_ids)
        return vals[key]

    # 1+2: samples and vertices
    pts, src = box_points(lb, ub, n_samples, n_vertices, gen)  # [B, P, n]
    P = pts.shape[1]
    src_arr = np.array(src)
    if stats is not None:
        n_vert = sum(1 for k in src if k == "vertex")
        stats.update(points=B * P, points_per_sample=P, samples=P - n_vert, vertices=n_vert, forward_rows=B * P)
    flat = pts.reshape(B * P, -1)
    sids = torch.arange(B).repeat_interleave(P)
    closest = {key: (torch.full(checks[key][0].shape, math.inf, dtype=torch.float64),
                     torch.full(checks[key][0].shape, math.inf, dtype=torch.float64)) for key in checks}
    with torch.no_grad():
        for s in range(0, flat.shape[0], chunk):
            xs, ss = flat[s:s + chunk], sids[s:s + chunk]
            vals = network.forward_all(xs, sample_ids=ss)
            member = None if inside is None else inside(vals, ss)
            for key, (lo, hi) in checks.items():
                v = layer_vals(vals, key, ss)
                kinds = src_arr[(np.arange(s, s + xs.shape[0]) % P)]
                for kind in ("sample", "vertex"):
                    m = torch.from_numpy(kinds == kind)
                    if member is not None:
                        m &= member
                    if bool(m.any()):
                        tracker.check(key, v[m], ss[m], lo, hi, xs[m], kind)
                # slack to the bounds, per sample and neuron
                for b_i in torch.unique(ss).tolist():
                    rows = ss == b_i if member is None else (ss == b_i) & member
                    if not bool(rows.any()):
                        continue
                    closest[key][0][b_i] = torch.minimum(closest[key][0][b_i], (v[rows] - lo[b_i]).min(dim=0).values)
                    closest[key][1][b_i] = torch.minimum(closest[key][1][b_i], (hi[b_i] - v[rows]).min(dim=0).values)

    # 3: PGD on margins (all rows) and on the neurons closest to their bounds; one attack per layer
    # for both sides, through the layers up to the attacked one only
    if pgd_steps > 0:
        for key, (lo, hi) in checks.items():
            size = lo.shape[1]
            n_pick = size if key == MARGIN else min(pgd_neurons, size)
            upto = None if key == MARGIN or inside is not None else key
            t_sample, t_neuron, t_sign = [], [], []
            for side_i, (sign, bound) in enumerate(((1.0, lo), (-1.0, hi))):
                slack = closest[key][side_i].clone()
                # a bound a sample already reached (a dead ReLU's 0) or passed (reported) goes last: it
                # would crowd out the neurons whose bound was not reached
                slack[slack <= 0] = torch.finfo(torch.float64).max
                slack[~torch.isfinite(bound)] = math.inf
                pick = torch.topk(-slack, n_pick, dim=1).indices  # [B, n_pick] smallest slack
                ok = torch.isfinite(torch.gather(bound, 1, pick))
                rows = torch.arange(B)[:, None].expand(B, n_pick)
                t_sample.append(rows[ok])
                t_neuron.append(pick[ok])
                t_sign.append(torch.full((int(ok.sum()),), sign, dtype=torch.float64))
            t_sample, t_neuron, t_sign = torch.cat(t_sample), torch.cat(t_neuron), torch.cat(t_sign)
            if t_sample.numel() == 0:
                continue
            for r in range(pgd_restarts):
                for s in range(0, t_sample.numel(), chunk):
                    ss, nn, sg = t_sample[s:s + chunk], t_neuron[s:s + chunk], t_sign[s:s + chunk]

                    def objective(vals, ss=ss, nn=nn, sg=sg, key=key):
                        v = layer_vals(vals, key, ss)
                        return sg * v[torch.arange(v.shape[0]), nn]

                    bx, _ = pgd(network, lb, ub, ss, objective, pgd_steps, gen, upto=upto)
                    with torch.no_grad():
                        vals = forward_upto(network, bx, ss, upto)
                        v = layer_vals(vals, key, ss)
                    if inside is not None:
                        member = inside(vals, ss)
                        bx, v, ss = bx[member], v[member], ss[member]
                    tracker.check(key, v, ss, lo, hi, bx, "pgd")
                    if stats is not None:
                        stats["pgd_targets"] += int(ss.shape[0])
                        stats["forward_rows"] += int(ss.shape[0]) * (pgd_steps + 2)
    counts: dict = {}
    out = tracker.result(max_per_layer, counts)
    if stats is not None:
        stats["violations"] = sum(counts.values())
        stats["violations_per_layer"] = counts
    return out


def interval_bounds(network: Network, input_lb, input_ub) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Plain interval arithmetic (sound reference bounds for every layer, ``[B, size]``)."""
    lb, ub = _box(network, input_lb, input_ub)
    out = {0: (lb, ub)}
    for layer in network.layers[1:]:
        ins = [out[p] for p in layer.preds]
        if layer.kind == "affine":
            l, u = ins[0]
            c, r = (l + u) / 2, (u - l) / 2
            mid = layer.matvec(c) + layer.bias_for(c.shape[0], c.dtype)
            if layer.linear_kind == "dense":
                w = layer.weight.abs()
                rad = torch.einsum("bkp,bp->bk", w, r) if w.dim() == 3 else r @ w.T
            elif layer.linear_kind == "conv":
                from cfruntime.network.graph import ConvSpec
                cv = layer.conv
                rad = ConvSpec(cv.kernel.abs(), cv.stride, cv.padding, cv.dilation, cv.in_shape, cv.out_shape).apply(r)
            else:
                rad = r[:, layer.gather.index] * layer.gather.scale.abs()
            out[layer.index] = (mid - rad, mid + rad)
        elif layer.kind == "maxpool":
            l, u = ins[0]
            out[layer.index] = (layer.evaluate([l]), layer.evaluate([u]))  # monotone
        elif layer.kind in ELEMENTWISE_FUNCTIONS:
            out[layer.index] = elementwise_image(layer.kind, layer.alpha, *ins[0])
        elif layer.kind in BINARY_FUNCTIONS:
            out[layer.index] = binary_image(layer.kind, ins[0], ins[1])
        else:
            raise TypeError(layer.kind)
    return out


def attack_margins(network: Network, input_lb, input_ub, C, *, steps: int = 40, restarts: int = 2, seed: int = 0):
    """PGD lower estimates of every margin ``C[b] @ y``: returns ``(min_margin [B, K], argmin inputs [B, K, n])``."""
    lb, ub = _box(network, input_lb, input_ub)
    B = lb.shape[0]
    C = torch.as_tensor(C, dtype=torch.float64)
    K = C.shape[-2]
    gen = torch.Generator().manual_seed(seed)
    ss = torch.arange(B).repeat_interleave(K)
    kk = torch.arange(K).repeat(B)
    best = torch.full((B * K,), math.inf, dtype=torch.float64)
    best_x = torch.zeros(B * K, lb.shape[1], dtype=torch.float64)
    for _ in range(restarts):
        def objective(vals):
            return _margins(C, vals[-1], ss)[torch.arange(ss.shape[0]), kk]
        bx, bo = pgd(network, lb, ub, ss, objective, steps, gen)
        better = bo < best
        best = torch.where(better, bo, best)
        best_x[better] = bx[better]
    return best.reshape(B, K), best_x.reshape(B, K, -1)


#: :func:`vnnlib_counterexample`: PGD rows on the nearest disjunct's violation (by default; ``restarts`` if more).
#: traffic_signs_recognition_2023's 64x64 net (Sign activations, 42 disjuncts), loaded 2-core CPU: with 3 rows
#: ``model_64_idx_8362_eps_1`` is missed, with 10 found in 33 s, where one row per disjunct and restart (126)
#: took 255 s a run
NEAREST_DISJUNCT_ROWS = 10


#: :func:`vnnlib_counterexample`: a property of more input regions than this is attacked by
#: :func:`cfruntime.region_screen.screen_regions` (all regions screened at once) rather than region by region
MANY_REGIONS = 16


def vnnlib_counterexample(network: Network, prop, *, n_samples: int = 256, steps: int = 50, restarts: int = 3, seed: int = 0,
                          nearest_rows: int = NEAREST_DISJUNCT_ROWS):
    """Search a concrete input violating a VNN-LIB property.

    Returns ``(region_index, x [input_size], y [output_size])`` with ``x`` in the
    region's box and ``y = network(x)`` satisfying all constraints of some
    disjunct, or ``None``.  Per region: ``n_samples`` points of the box; with several disjuncts,
    ``max(restarts, nearest_rows)`` rows that minimise the smallest disjunct's largest ``A y - b`` (the
    nearest disjunct's violation, as a margin loss over the classes of a robustness property: 42
    disjuncts on traffic_signs_recognition_2023; ``nearest_rows=0``: none); then one PGD run
    over ``restarts`` random starts for every disjunct at once (rows ``disjunct x restart``,
    each minimising its disjunct's largest ``A y - b``; in both runs the odd rows start from output-diversified
    points, :func:`cfruntime.box_search.diversify`): one forward and backward pass per
    step for all of them, so a wide network's weights are read once per step, not once per
    disjunct and restart.  The first row (in disjunct, then restart order) whose end point
    the network puts in the disjunct is the answer.  A property of more than :data:`MANY_REGIONS` input
    regions (nn4sys_2023: up to 60,000) is searched by :func:`cfruntime.region_screen.screen_regions`
    instead (every region sampled at once, then PGD from the nearest regions; ``restarts`` and
    ``nearest_rows``: its rows per region).
    """
    from cfruntime.properties.vnnlib import output_in_disjunct

    if prop.num_inputs != network.input_size or prop.num_outputs != network.output_size:
        raise PropertyError(f"property has {prop.num_inputs} inputs/{prop.num_outputs} outputs, the network "
                            f"{network.input_size}/{network.output_size}")
    if len(prop.regions) > MANY_REGIONS:  # one screening of all regions, then PGD from the nearest
        return screen_regions(network, prop, n_samples=n_samples, steps=steps, rows=max(restarts, nearest_rows), seed=seed)
    gen = torch.Generator().manual_seed(seed)
    for ri, reg in enumerate(prop.regions):
        lb = torch.from_numpy(reg.lb).reshape(1, -1)
        ub = torch.from_numpy(reg.ub).reshape(1, -1)
        pts, _ = box_points(lb, ub, n_samples, 16, gen)
        with torch.no_grad():
            ys = network.forward(pts[0])
        for x, y in zip(pts[0], ys):
            if output_in_disjunct(reg, y.numpy()) is not None:
                return ri, x, y
        if any(A.shape[0] == 0 for A, _ in reg.disjuncts):  # a disjunct without constraints holds everywhere
            return ri, pts[0][0], ys[0]
        if not reg.disjuncts or restarts < 1:
            continue
        if len(reg.disjuncts) > 1 and nearest_rows > 0:  # first rows for all disjuncts at once: the nearest one's
            A, b = _stacked_disjuncts(reg, 1)
            rows = max(restarts, nearest_rows)
            ss = torch.zeros(rows, dtype=torch.int64)
            bx, _ = pgd(network, lb, ub, ss, lambda vals: (torch.einsum("djo,ro->rdj", A, vals[-1]) - b).amax(dim=2)
                         .amin(dim=1), steps, gen, diversify_steps=ODI_STEPS)
            hit = _first_in_region(network, reg, bx)
            if hit is not None:
                return (ri, *hit)
        A, b = _stacked_disjuncts(reg, restarts)
        ss = torch.zeros(A.shape[0], dtype=torch.int64)
        bx, _ = pgd(network, lb, ub, ss, lambda vals: (torch.einsum("rjo,ro->rj", A, vals[-1]) - b).amax(dim=1), steps, gen,
                    diversify_steps=ODI_STEPS)
        hit = _first_in_region(network, reg, bx)
        if hit is not None:
            return (ri, *hit)
    return None


def _first_in_region(network: Network, reg, xs: torch.Tensor):
    """``(x, y)`` of the first point of ``xs`` whose output the network puts in one of ``reg``'s disjuncts, or
    None."""
    from cfruntime.properties.vnnlib import output_in_disjunct

    with torch.no_grad():
        ys = network.forward(xs)
    for r in range(xs.shape[0]):
        if output_in_disjunct(reg, ys[r].numpy()) is not None:
            return xs[r], ys[r]
    return None


def _stacked_disjuncts(region, restarts: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(A [D * restarts, J, out], b [D * restarts, J])``: each of ``region``'s disjuncts ``A y <= b`` repeated
    for its restarts (row ``d * restarts + r``), padded to the longest with rows ``0 y - inf`` that never attain
    the largest ``A y - b`` (:func:`cfruntime.region_screen.padded_disjuncts` of the one region)."""
    A, b = padded_disjuncts([region], region.disjuncts[0][0].shape[1])
    return A[0].repeat_interleave(restarts, 0), b[0].repeat_interleave(restarts, 0)
