"""Bounding subdomains with a compiled certifier: the "bound subdomains" strategy of the driver.

Algorithm: the domains of a batch are the rows of one engine call (``batch_size`` at a time, fewer when
a batch runs out of memory) on the region's margin network.  Each row's input box is the region's (ReLU
branching) or its own (input branching); what the domain knows about its carried layers -- its parent's
bounds, with a split neuron's bound at 0 -- reaches the certifier through the engine's bound overrides
(:mod:`cfruntime.flow.overrides`), right after each carried layer's rule:

* ``reuse="replace"``: the carried layers' bounds *are* the domain's (the rules do not recompute them,
  :mod:`cfruntime.flow.specialise`); only the layers in between (ReLU outputs, cheap) and the last layer
  (the property's rows, a back-substitution of ``R`` rows; their lower bounds only) are computed.  Splitting a ReLU changes only
  its own relaxation, which becomes exact, so this is how a ReLU split is bounded (as in BaBSR and
  beta-CROWN without refined intermediate bounds).
* ``reuse="tighten"``: every layer is recomputed and intersected with the domain's bounds (input
  branching: a smaller box gives tighter bounds everywhere; or refining the intermediate bounds of
  ReLU-split domains); the new bounds of the carried layers come back.

Nothing here knows the certifier: any compiled certifier whose shape has Float ``lower``/``upper`` members
(DeepPoly, CROWN-IBP, SkipPoly, DeepZ, a user's ``.cf``) is bounded the same way.  The soundness check
(``cf-run --check``) sees every batch's layer bounds, with a predicate saying which concrete points lie
in each row's subdomain (its ReLU splits), since a point of the box outside the subdomain need not obey
the subdomain's bounds.  A future Lagrangian (beta-CROWN) strategy keeps this interface:
``bound(domains, reuse) -> Bounds``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cfmlir.bab.domains import Domains, hi_key, lo_key, split_key
from cfmlir.bab.lagrangian import (beta_key, cut_biases, lagrangian_network, last_layer_index, new_layer_overrides,
                                   project, split_weights)
from cfmlir.bab.local_rows import ROWS_OF, local_margin_network, to_full
from cfmlir.bab.warm_params import fields_of, root_columns, warm_store


@dataclass
class Bounds:
    """What bounding a batch of ``P`` domains gave: the rows' lower bounds ``[P, R]``; the carried layers'
    new bounds ``{k: (lo [P, n_k], hi [P, n_k])}`` (``reuse="tighten"`` and the root; else None); ``empty``
    ``[P]``: domains some carried neuron of which has ``lo > hi`` (the subdomain has no point); ``alphas``:
    the certifier's optimised parameters as domain fields (:mod:`cfmlir.bab.warm_params`; the root only)."""

    rows: torch.Tensor
    carried: dict | None
    empty: torch.Tensor
    alphas: dict | None = None


class CertifierBounding:
    """Bounds domains of one input region with the compiled certifier ``cert`` (see the module docstring).

    ``mnet``: the region's margin network; ``structure``: its :class:`~cfmlir.bab.structure.BabStructure`;
    ``box``: the region's ``(lb, ub)`` ``[n0]``; ``check(mnet, lb, ub, layers, region, inside=...)``: the
    soundness check of every batch, or None."""

    def __init__(self, cert, mnet, structure, box, *, dtype=torch.float64, device="cpu", sparse: bool = True,
                 widen=None, batch_size: int = 256, check=None, region: int = 0):
        self.cert, self.mnet, self.structure = cert, mnet, structure
        self.box = box
        self.options = {"dtype": dtype, "device": device, "sparse": sparse, "widen": widen}
        self.batch_size = batch_size
        self.check, self.region = check, region
        self.rows_bounded = 0  # engine rows computed (every domain and every candidate child)
        from cfruntime.flow import widening

        #: a widened run (float32) charges rounding errors by the magnitudes of every stored bound, so a
        #: placeholder bound (the rows' unwanted upper ends, the Lagrangian layers') would swamp the rows:
        #: there the rows' upper bounds are computed and no multipliers are used
        self.widened = bool(widening.widened(dtype) if widen is None else widen)
        #: split layers whose constraints enter the bound through multipliers (``domains["beta<k>"]``,
        #: :mod:`cfmlir.bab.lagrangian`); empty: none (set by the driver once the certifier carries them)
        self.beta_layers: tuple[int, ...] = ()
        #: the certifier's parameters the domains carry (:mod:`cfmlir.bab.warm_params`): ``{(name, k):
        #: columns}``, set by :meth:`bound_optimized`; empty: none (children start from the initial values)
        self.alpha_cols: dict = {}

    def _boxes(self, domains: Domains):
        if "lb" in domains:
            return domains["lb"], domains["ub"]
        p = len(domains)
        return self.box[0].reshape(1, -1).expand(p, -1), self.box[1].reshape(1, -1).expand(p, -1)

    def _carries(self, domains: Domains) -> bool:
        """Whether the domains carry layer bounds (every child does; a root only when it starts from the
        first pass's, :meth:`cfmlir.bab.driver._RegionSearch._plan_root`)."""
        return bool(self.structure.carried) and lo_key(self.structure.carried[0]) in domains

    def bound(self, domains: Domains, reuse: str = "replace", replace_upto: int = -1, score_dtype=None) -> Bounds:
        """Bounds of every domain of the batch (``reuse``: ``"replace"`` or ``"tighten"``, see the module
        docstring; with ``"tighten"``, the carried layers up to ``replace_upto`` are still replaced: no split
        below a ReLU split changes them; a domain without carried bounds -- the root -- is bounded from its
        box alone).  ``score_dtype``: a raw run in that precision (no widening, no soundness check) whose
        rows only *score* the domains -- FSB's candidates (:class:`~cfmlir.bab.options.BabOptions`
        ``fsb_dtype``) -- and must never be kept as bounds."""
        from cfruntime.flow.batching import in_batches

        if reuse not in ("replace", "tighten"):
            raise ValueError(f"unknown reuse '{reuse}'")
        lb, ub = self._boxes(domains)
        has_carried = self._carries(domains)
        want_layers = reuse == "tighten" or not has_carried
        replaced = {k for k in self.structure.carried if reuse == "replace" or k <= replace_upto}
        parts, _report = in_batches(lambda a, b: self._run(domains, lb, ub, a, b, replaced, has_carried, want_layers,
                                                           score_dtype),
                                    len(domains), self.batch_size)
        rows = torch.cat([p[2][0] for p in parts])
        self.rows_bounded += rows.shape[0]
        carried = None
        empty = torch.zeros(rows.shape[0], dtype=torch.bool)
        if want_layers:
            carried = {k: (torch.cat([p[2][1][k][0] for p in parts]), torch.cat([p[2][1][k][1] for p in parts]))
                       for k in self.structure.carried}
            for lo, hi in carried.values():
                empty |= (lo > hi).any(1)
        return Bounds(rows, carried, empty)

    def bound_optimized(self, domains: Domains, optimize, verified, deadline: float | None = None) -> Bounds:
        """Bounds of the domains (the root) with the certifier's parameters optimised for their rows
        (:func:`cfmlir.optimize.optimize_bounds`, alpha-CROWN's loop; ``optimize``: its
        :class:`~cfmlir.optimize.OptimizeOptions`, ``verified(rows) -> [P] bool``: where to stop early;
        ``deadline``: when to stop iterating, a :func:`time.monotonic` time).
        Every layer's bounds come from the final run with each domain's best parameters (any parameter
        values give sound bounds), so the carried layers are as tight as the optimisation made them and
        every later child starts from them; the optimised parameters of the rows come back as domain fields
        (``Bounds.alphas``), where children start theirs from (:mod:`cfmlir.bab.warm_params`).  Domains that
        carry layer bounds already (a root from the first pass's, :meth:`cfmlir.bab.driver._RegionSearch._plan_root`)
        keep them: every run replaces them (:meth:`_overrides`), so only the rows' back-substitution and its
        parameters are optimised -- one run costs what the rows alone cost, not a pass."""
        from cfmlir.engines import store_layer_bounds
        from cfmlir.optimize import optimize_bounds
        from cfruntime.flow.param_store import ParamStore

        lb, ub = self._boxes(domains)
        o = self.options
        has_carried = self._carries(domains)
        overrides = self._overrides(domains, 0, len(domains), self.mnet.layers[-1].size,
                                    set(self.structure.carried) if has_carried else None, o["dtype"])
        params = ParamStore(requires_grad=True, sparse=True)
        lower, upper, final = optimize_bounds(self.cert, self.mnet, lb, ub, optimize, dtype=o["dtype"],
                                              device=o["device"], sparse=o["sparse"], widen=o["widen"],
                                              verified=verified, keep_final=True, params=params, deadline=deadline,
                                              overrides=overrides)
        reader = self.mnet.layers[-1].index
        self.alpha_cols = root_columns(params, reader)
        alphas = fields_of(params, reader, self.alpha_cols)
        lower, upper = lower.to("cpu", torch.float64), upper.to("cpu", torch.float64)
        self.rows_bounded += lower.shape[0]
        layers = store_layer_bounds(self.cert, self.mnet, final, lower, upper)
        if self.check is not None:
            self.check(self.mnet, lb, ub, layers, self.region, inside=None)
        carried = {k: layers[k] for k in self.structure.carried}
        empty = torch.zeros(lower.shape[0], dtype=torch.bool)
        for lo, hi in carried.values():
            empty |= (lo > hi).any(1)
        return Bounds(lower, carried, empty, alphas or None)

    def _run(self, domains: Domains, lb, ub, a: int, b: int, replaced: set, has_carried: bool, want_layers: bool,
             score_dtype=None):
        from cfruntime.flow.engine import run_certifier

        scoring = score_dtype is not None and score_dtype != self.options["dtype"]
        options = {**self.options, "dtype": score_dtype, "widen": False} if scoring else self.options
        check = None if scoring else self.check  # a score is no bound: nothing to check
        margins = self._margin_network(domains, a, b)
        overrides = self._overrides(domains, a, b, margins.layers[-1].size, replaced if has_carried else None,
                                    options["dtype"])
        net = margins
        if self.beta_layers and beta_key(self.beta_layers[0]) in domains:
            betas = {k: domains[beta_key(k)][a:b].to(torch.float64) for k in self.beta_layers}
            net = self._lagrangian(betas, domains, a, b, overrides, options["dtype"], margins)
        read_layers = want_layers or check is not None
        params = warm_store(domains, a, b, net.layers[-1].index, self.alpha_cols)
        extra = {} if params is None else {"params": params, "graph": False}
        # a replayed CUDA graph keeps the last layer's bounds only (no store): never where layers are read
        res = run_certifier(self.cert, net, lb[a:b], ub[a:b], bound_overrides=overrides,
                            **{"graph": False if read_layers else None, **extra}, **options)
        lower = self._full_rows(domains, a, b, res.lower.to("cpu", torch.float64))
        layers = None
        if read_layers:
            layers = self._layers(net, res, lower)
        if check is not None:
            check(self.mnet, lb[a:b], ub[a:b], layers, self.region, inside=subdomain_membership(
                domains.select(slice(a, b)), self.structure))
        return lower, layers

    def _overrides(self, domains: Domains, a: int, b: int, rows: int, replaced: set | None, dtype) -> dict:
        """The bound overrides of a run of domains ``a:b``: the rows' upper bounds, never used, not computed (the
        last layer's rule skips them; the placeholder is the dtype's largest finite value -- a bound of every
        finite margin, and finite for the engine's non-finite check -- in the engine's dtype so no outward cast
        makes it inf; not in a widened run, see :attr:`widened`), and the domains' carried layer bounds
        (``replaced``: those the rules do not compute again, the others are tightened; None: the domains carry
        none)."""
        from cfruntime.flow.overrides import BoundOverride

        overrides = {}
        if not self.widened:
            rows_up = torch.full((b - a, rows), torch.finfo(dtype).max, dtype=dtype)
            overrides[self.structure.last] = BoundOverride(upper=rows_up, replace="upper")
        if replaced is not None:
            overrides.update({k: BoundOverride(domains[lo_key(k)][a:b], domains[hi_key(k)][a:b],
                                               replace=k in replaced) for k in self.structure.carried})
        return overrides

    def _margin_network(self, domains: Domains, a: int, b: int):
        """The margin network rows ``a:b`` are bounded on: the region's, or for domains answerable for their
        own rows only, one with those rows (:mod:`cfmlir.bab.local_rows`)."""
        if ROWS_OF not in domains:
            return self.mnet
        return local_margin_network(self.mnet, domains[ROWS_OF][a:b])

    def _full_rows(self, domains: Domains, a: int, b: int, lower: torch.Tensor) -> torch.Tensor:
        """``[b - a, R]``: a run's row bounds in the property's rows (``-inf``: a row the domain does not bound)."""
        if ROWS_OF not in domains:
            return lower
        return to_full(lower, domains[ROWS_OF][a:b], self.mnet.layers[-1].size)

    def _lagrangian(self, betas: dict, domains: Domains, a: int, b: int, overrides: dict, dtype=None, margins=None):
        """The Lagrangian network of rows ``a:b`` for the multipliers ``betas`` (:mod:`cfmlir.bab.lagrangian`),
        its new layers' overrides (in ``dtype``, default the search's) added to ``overrides``; ``margins``: the
        margin network it extends (default the rows' own, :meth:`_margin_network`)."""
        margins = self._margin_network(domains, a, b) if margins is None else margins
        signs = {k: domains[split_key(k)][a:b] for k in betas}
        # a cut curve neuron's constraint is s (z - t): t its interval's end on the cut's side
        points = {c.pre: torch.where(signs[c.pre] > 0, domains[lo_key(c.pre)][a:b], domains[hi_key(c.pre)][a:b])
                  for c in self.structure.curve_layers if c.pre in signs}
        net = lagrangian_network(margins, split_weights(betas, signs), cut_biases(betas, signs, points))
        overrides.update(new_layer_overrides(margins, net, b - a, dtype or self.options["dtype"]))
        return net

    def _layers(self, net, res, lower) -> dict:
        """The margin network's layer bounds of a run on ``net`` (the margin network, its Lagrangian network,
        whose rows bound the margins' lower ends on the subdomain, or one of these for the domains' own rows);
        ``lower``: the rows' lower bounds in the property's rows."""
        from cfmlir.engine_io import store_layer_bounds

        if net is self.mnet:
            return store_layer_bounds(self.cert, self.mnet, res, lower, res.upper.to("cpu", torch.float64))
        local = res.lower.to("cpu", torch.float64)
        layers = store_layer_bounds(self.cert, net, res, local, res.upper.to("cpu", torch.float64))
        last = self.structure.last
        out = {k: v for k, v in layers.items() if k < last}
        out[last] = (lower, torch.full_like(lower, torch.inf))
        return out

    def optimize_beta(self, domains: Domains, objective, iterations: int, lr: float, alpha_lr: float = 0.1,
                      step_dtype: torch.dtype | None = None):
        """Each domain's multipliers optimised for its rows (beta-CROWN's loop): projected Adam on the
        values of its open disjuncts, from the domain's own ``beta<k>`` (its parent's: a warm start).
        Returns ``(rows [P, R], {k: beta [P, R, n_k]}, alphas)``: per domain a bound of its rows and the
        multipliers of the iteration whose value was best.  A certifier's own parameters (``alpha_deeppoly``)
        are optimised with them (Adam at ``alpha_lr``, projected into their domains), from the domain's own
        (its parent's, :mod:`cfmlir.bab.warm_params`) or else their initial values; ``alphas``: the fields
        of the best iteration's (``{}``: the domains carry none).
        The soundness check sees the rows returned.

        ``step_dtype``: the precision of the gradient steps (None: the search's own).  When it is the search's,
        the rows are the element-wise best of every iterate (each is a bound on the domain: every iterate has
        ``beta >= 0``).  When it differs (float32 steps in a float64 search), the iterates are raw
        low-precision runs that steer the multipliers but bound nothing: the rows come from one final run in
        the search's precision with the last multipliers (as soon as an iterate's raw rows verify every
        domain of the batch, with those multipliers).  Any multipliers ``>= 0`` give a sound bound, so only
        that final run needs rigour."""
        from cfmlir.adam import Adam
        from cfruntime.flow.param_store import ParamStore

        dtype = self.options["dtype"]
        apart = step_dtype is not None and step_dtype != dtype
        step_options = {**self.options, "dtype": step_dtype, "widen": False} if apart else self.options
        rows_out, betas_out, alphas_out = [], {k: [] for k in self.beta_layers}, {}
        lb, ub = self._boxes(domains)
        reader = last_layer_index(self.mnet, self.beta_layers)  # the Lagrangian network's last layer reads them
        for a in range(0, len(domains), self.batch_size):
            b = min(a + self.batch_size, len(domains))
            raw = {k: domains[beta_key(k)][a:b].to(torch.float64).clone().requires_grad_(True) for k in self.beta_layers}
            signs = {k: domains[split_key(k)][a:b] for k in self.beta_layers}
            opt = Adam(raw.values(), lr=lr)
            # a certifier with parameters (alpha_deeppoly's slopes): optimised with the multipliers, from the
            # domains' own (their parent's) or else their initial values (any values are sound)
            params = warm_store(domains, a, b, reader, self.alpha_cols, requires_grad=True)
            if params is None and getattr(self.cert, "params", None):
                params = ParamStore(requires_grad=True, sparse=True)
            extra = {} if params is None else {"params": params}
            best_rows = best_value = None
            best_beta, best_alpha = {}, {}
            # rows a domain is not answerable for (+inf: a per-disjunct copy's other disjuncts) steer nothing
            answerable = ~torch.isposinf(domains["rows"][a:b])
            step, final = 0, iterations == 1
            while True:
                options = self.options if final or not apart else step_options
                if final and apart and params is not None:
                    params.cast_(dtype)
                betas = {k: project(v, signs[k]) for k, v in raw.items()}
                res, lower = self._beta_run(betas, domains, a, b, lb, ub, options, extra, grad=not final)
                if params is not None and step == 0 and params.tensors() and not final:
                    opt.add_group(params.tensors(), alpha_lr)
                self.rows_bounded += b - a
                seen = lower.masked_fill(~answerable, torch.inf)
                with torch.no_grad():
                    value = objective.value(seen.detach())
                    if final or not apart:  # a bound: kept
                        best_rows = lower.detach().clone() if best_rows is None else torch.maximum(best_rows, lower.detach())
                    alphas = fields_of(params, reader, self.alpha_cols) if params is not None else {}
                    if best_value is None:
                        best_value, best_beta = value, {k: v.detach().clone() for k, v in betas.items()}
                        best_alpha = alphas
                    else:
                        better = value > best_value
                        best_value = torch.where(better, value, best_value)
                        for k, v in betas.items():
                            best_beta[k][better] = v.detach()[better]
                        for f, v in alphas.items():
                            best_alpha[f][better] = v[better]
                if final:
                    break
                if bool(objective.verified((best_rows if not apart else lower.detach()).masked_fill(~answerable, torch.inf)).all()):
                    if not apart:
                        break
                    final = True  # these multipliers verify every domain in low precision: the rigorous run
                    continue
                dv = objective.disjunct_values(seen)
                open_ = (dv <= 0) & dv.isfinite()
                loss = -torch.where(open_, dv, torch.zeros_like(dv)).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                with torch.no_grad():  # projected: the raw values stay in the multipliers' domain
                    for v in raw.values():
                        v.clamp_(min=0)
                if params is not None:
                    params.project_()
                del res, lower, loss, seen
                step += 1
                final = step == iterations - 1
            if self.check is not None:
                self.check(self.mnet, lb[a:b], ub[a:b], self._best_layers(domains, a, b, best_rows), self.region,
                           inside=subdomain_membership(domains.select(slice(a, b)), self.structure))
            rows_out.append(best_rows)
            for k in self.beta_layers:
                betas_out[k].append(best_beta[k].to(dtype if dtype != torch.float64 else torch.float32))
            for f, v in best_alpha.items():
                alphas_out.setdefault(f, []).append(v)
        return (torch.cat(rows_out), {k: torch.cat(v) for k, v in betas_out.items()},
                {f: torch.cat(v) for f, v in alphas_out.items()})

    def _beta_run(self, betas: dict, domains: Domains, a: int, b: int, lb, ub, options: dict, extra: dict, grad: bool):
        """One run of the Lagrangian network of rows ``a:b`` with ``options`` (its dtype may differ from the
        search's); ``(result, rows' lower bounds in float64)``."""
        from cfruntime.flow.engine import run_certifier

        overrides = self._replaced(domains, a, b)
        net = self._lagrangian(betas, domains, a, b, overrides, options["dtype"])
        with torch.enable_grad() if grad else torch.no_grad():
            res = run_certifier(self.cert, net, lb[a:b], ub[a:b], bound_overrides=overrides, graph=False,
                                **extra, **options)
            lower = self._full_rows(domains, a, b, res.lower.to("cpu", torch.float64))
        return res, lower

    def _replaced(self, domains: Domains, a: int, b: int) -> dict:
        """Overrides replacing every carried layer's bounds of rows ``a:b`` by the domains' own."""
        from cfruntime.flow.overrides import BoundOverride

        return {k: BoundOverride(domains[lo_key(k)][a:b], domains[hi_key(k)][a:b], replace=True)
                for k in self.structure.carried}

    def input_coefficients(self, domains: Domains) -> tuple[torch.Tensor, torch.Tensor]:
        """``(rows [P, R], coeff [P, R, n0])``: each domain's row bounds with its carried layers' bounds held
        fixed (a ``"replace"`` run) and the gradient of each row's bound with respect to the box, ``d/d lb +
        d/d ub`` -- the input coefficients of the row's linear bound where the certifier concretises one over
        the box (:mod:`cfmlir.bab.clipping`, which trusts them for nothing: neither is kept as a bound).  The
        domains answer for every row (no local rows).  One backward pass per row."""
        from cfruntime.flow.engine import run_certifier

        lb0, ub0 = self._boxes(domains)
        rows_out, coeff_out = [], []
        for a in range(0, len(domains), self.batch_size):
            b = min(a + self.batch_size, len(domains))
            lb, ub = lb0[a:b].clone().requires_grad_(True), ub0[a:b].clone().requires_grad_(True)
            overrides = self._replaced(domains, a, b)
            params = warm_store(domains, a, b, self.mnet.layers[-1].index, self.alpha_cols)
            extra = {} if params is None else {"params": params}
            with torch.enable_grad():
                res = run_certifier(self.cert, self.mnet, lb, ub, bound_overrides=overrides,
                                    graph=False, **extra, **self.options)
                lower = res.lower
                grads = []
                for r in range(lower.shape[1]):
                    g_lb, g_ub = torch.autograd.grad(lower[:, r].sum(), (lb, ub), retain_graph=r + 1 < lower.shape[1],
                                                     allow_unused=True)
                    grads.append(sum(torch.zeros_like(lb) if g is None else g for g in (g_lb, g_ub)))
            self.rows_bounded += b - a
            rows_out.append(lower.detach().to("cpu", torch.float64))
            coeff_out.append(torch.stack(grads, 1).to("cpu", torch.float64))
        return torch.cat(rows_out), torch.cat(coeff_out)

    def _best_layers(self, domains: Domains, a: int, b: int, rows) -> dict:
        """The layer bounds the search uses for rows ``a:b``: the carried ones, and ``rows`` for the margins
        (the layers in between are not used by the search, so not checked)."""
        out = {k: (domains[lo_key(k)][a:b], domains[hi_key(k)][a:b]) for k in self.structure.carried}
        out[self.structure.last] = (rows, torch.full_like(rows, torch.inf))
        return out


def subdomain_membership(domains: Domains, structure):
    """``inside(values, rows) -> [N] bool``: which concrete points lie in their row's subdomain -- every
    ReLU split of the row holds, and every cut curve neuron's value lies in the row's interval for it
    (``values``: every layer's values of the points, ``rows``: the row of each point); None when no domain
    has a split."""
    splits = [(s.pre, domains[split_key(s.pre)]) for s in structure.split_layers if split_key(s.pre) in domains]
    cuts = [(c.pre, domains[split_key(c.pre)], domains[lo_key(c.pre)], domains[hi_key(c.pre)])
            for c in structure.curve_layers if split_key(c.pre) in domains]
    if not any(bool((sign != 0).any()) for _, sign in splits) and not any(bool((m != 0).any()) for _, m, _, _ in cuts):
        return None

    def inside(values, rows):
        ok = torch.ones(rows.shape[0], dtype=torch.bool)
        for k, sign in splits:
            s = sign[rows]
            z = values[k]
            ok &= (((s > 0) & (z < 0)) | ((s < 0) & (z > 0))).logical_not().all(1)
        for k, mark, lo, hi in cuts:
            z = values[k]
            ok &= ((mark[rows] != 0) & ((z < lo[rows]) | (z > hi[rows]))).logical_not().all(1)
        return ok

    return inside
