"""The branch-and-bound driver: decide a VNN-LIB property with any compiled certifier.

Algorithm, for each input region of the property (until one is ``sat`` or the time is up):

1. *Attack*: PGD with restarts on the region's box (:mod:`cfmlir.bab.attack`); a confirmed point is ``sat``.
2. *Root*: one certifier pass over the box gives the rows' bounds and every carried layer's bounds; a
   verified region is done.  Where the caller's first pass already computed the layers (``root_bounds``),
   the root reuses them and bounds its rows alone -- the same bounds for a certifier without parameters
   (a certifier that optimises its root reuses them only when the time left holds no optimisation).
3. *Rounds*: the pool (:mod:`cfmlir.bab.domains`) gives up to ``batch`` domains (best-first: the smallest
   value; depth-first past half the memory bound); each is split in two (:mod:`cfmlir.bab.branching`: a
   ReLU neuron, an S-curve neuron's input interval, or an input dimension) and the children are bounded in
   one engine call
   (:mod:`cfmlir.bab.bounding`), starting from their parent's bounds; a child's row bounds are the better
   of its own and its parent's (both hold on it).  A child is dropped when verified or empty (a carried
   neuron with ``lo > hi``), decided exactly when no ReLU of it is unstable and the network is piecewise
   linear (:mod:`cfmlir.bab.exact`), else pooled.  The worst children are attacked every few rounds (PGD in
   the child's input box, pulled into a ReLU subdomain by a penalty), and every input box's centre is
   evaluated.
4. The region is ``unsat`` when the pool empties with nothing undecided; a deadline, the domain limit, the
   memory bound, a batch of one domain that does not fit in memory, an undecidable leaf or unsound bounds
   (the check) end the search ``unknown``.  A root whose parameter optimisation does not fit in memory is
   bounded by one plain pass instead.

Every ``unsat`` rests on sound bounds of subdomains that cover the region: the children of a ReLU split
cover their parent (``z >= 0`` or ``z <= 0``), so do those of a cut (``z <= t`` or ``z >= t``), the halves of a
box cover it, and a child keeps only bounds that hold on it.  Every ``sat`` is a counterexample confirmed in float64.  The driver knows the certifier
only through its Float lower/upper bound members.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from cfmlir.bab import attack, branching, clipping, exact
from cfmlir.bab.bounding import Bounds, CertifierBounding
from cfmlir.bab.domains import DomainPool, Domains, PoolFull, hi_key, lo_key, split_key
from cfmlir.bab.lagrangian import beta_key
from cfmlir.bab.local_rows import localise, own_rows
from cfmlir.bab.objective import Objective
from cfmlir.bab.options import (AUTO_MAX_FREE_INPUTS, AUTO_MAX_FREE_INPUTS_WIDE, INPUT_SPLIT_RELU_RATIO, LP_UNSTABLE,
                                ROOT_AND_ROUND_PASSES, SMALL_LP, BabOptions, BabOutcome, default_memory_bytes)
from cfmlir.bab.structure import structure_of
from cfmlir.bab.warm_params import alpha_field
from cfruntime.flow.engine import EngineOutOfMemory, is_out_of_memory


#: the first attack may take this share of the time left
ATTACK_SHARE = 0.2
#: the root's parameter optimisation (``BabOptions.optimize``) may take this share of the time left
ROOT_OPTIMIZE_SHARE = 0.25


class _Stop(Exception):
    def __init__(self, why: str):
        self.why = why


class _Sat(Exception):
    def __init__(self, cex):
        self.cex = cex


def run_bab(cert, net, prop, *, deadline: float | None = None, options: BabOptions | None = None,
            dtype=torch.float64, device="cpu", sparse: bool = True, widen=None, check=None,
            verified: list[bool] | None = None, on_round=None, root_bounds: list | None = None) -> BabOutcome:
    """Decide ``prop`` (:class:`cfruntime.properties.VnnlibProperty`) on ``net`` (a
    :class:`cfruntime.network.Network`) with the compiled certifier ``cert``
    (:class:`cfruntime.flow.engine.CompiledCertifier`) by branch and bound (see the module docstring).
    ``deadline``: a :func:`time.monotonic` time; ``check``: the soundness check of every bounded batch
    (``cf-run --check``: ``check(mnet, lb, ub, layers, region, inside=...)``, with ``unsound``);
    ``verified``: regions already verified (by a first pass); ``on_round(progress)``: called after every
    round with ``{"region", "round", "pool", "worst" (the smallest value pooled), "domains", "seconds"}``;
    ``root_bounds``: per region, the layer bounds a first pass with this certifier and ``dtype`` computed on
    its box (``{layer: (lower [n], upper [n])}``, :attr:`cfmlir.api.VnnlibResult.layer_bounds`, or None)."""
    options = options or BabOptions()
    stats = {"domains": 0, "disjunct_domains": 0, "bounded": 0, "rounds": 0, "max_depth": 0, "leaves": 0,
             "seconds": 0.0, "branching": []}
    gen = torch.Generator().manual_seed(options.seed)
    for ri, region in enumerate(prop.regions):
        if verified is not None and verified[ri]:
            stats["branching"].append("none")
            continue
        search = _RegionSearch(cert, net, prop, ri, region, options, deadline, gen, stats,
                               dict(dtype=dtype, device=device, sparse=sparse, widen=widen), check, on_round=on_round,
                               pass_layers=None if root_bounds is None else root_bounds[ri])
        try:
            search.run()
        except _Sat as found:
            return BabOutcome("sat", found.cex, None, stats)
        except _Stop as stop:
            return BabOutcome("unknown", None, stop.why, stats)
    return BabOutcome("unsat", None, None, stats)


class _RegionSearch:
    def __init__(self, cert, net, prop, ri, region, options, deadline, gen, stats, engine_options, check, *,
                 on_round=None, pass_layers: dict | None = None):
        self.net, self.prop, self.ri, self.options, self.deadline = net, prop, ri, options, deadline
        self.gen, self.stats, self.check = gen, stats, check
        self.objective = Objective(region)
        self.box = (torch.from_numpy(np.asarray(region.lb, dtype=np.float64)),
                    torch.from_numpy(np.asarray(region.ub, dtype=np.float64)))
        self.mnet = net.with_margin_layer(self.objective.A)
        self.structure = structure_of(self.mnet)
        self.mode = self._mode()
        self.lp_unstable = options.lp_unstable
        if self.lp_unstable is None:
            small = net.input_size + self.structure.relu_neurons <= SMALL_LP
            self.lp_unstable = self.structure.relu_neurons if small else LP_UNSTABLE
        stats["branching"].append(self._label())
        self.cert_params = bool(getattr(cert, "params", None))
        self.bounding = CertifierBounding(cert, self.mnet, self.structure, self.box, batch_size=options.engine_batch,
                                          check=check, region=ri, **engine_options)
        self.t_start = time.monotonic()
        self.on_round = on_round
        #: the first pass's bounds of the carried layers (:meth:`usable_pass_bounds` of ``pass_layers``), or None
        self.pass_bounds: dict | None = self.usable_pass_bounds(pass_layers)
        #: whether the root is bounded from :attr:`pass_bounds` (decided by :meth:`_plan_root`)
        self.root_from_pass = False

    def _mode(self) -> str:
        if self.options.branching != "auto":
            return self.options.branching
        free = int((self.box[1] > self.box[0]).sum())
        if free <= AUTO_MAX_FREE_INPUTS or not self.structure.branchable:
            return "input"
        if free <= AUTO_MAX_FREE_INPUTS_WIDE and self.structure.relu_neurons >= INPUT_SPLIT_RELU_RATIO * free:
            return "input"  # far more neurons to split than inputs (options.py)
        return "relu"

    def _label(self) -> str:
        """What the search splits, for its stats: ``input``, ``relu``, ``curve`` (S-curve cuts) or ``relu+curve``."""
        if self.mode != "relu":
            return self.mode
        kinds = [name for name, layers in (("relu", self.structure.split_layers), ("curve", self.structure.curve_layers))
                 if layers]
        return "+".join(kinds) or "relu"

    # -- the search ----------------------------------------------------------------------------------------
    def run(self) -> None:
        if self.objective.rows == 0 or any(len(g) == 0 for g in self.objective.groups):
            self._confirm_points(((self.box[0] + self.box[1]) / 2).reshape(1, -1), torch.zeros(1))
        self._first_attack()
        t0 = time.monotonic()
        try:
            if self.deadline is not None and t0 > self.deadline:
                raise _Stop("deadline")
            self._plan_root(t0)
            root = self._root()
            if root is None:
                return
            memory = self.options.memory_bytes
            pool = DomainPool(default_memory_bytes() if memory is None else memory)
            self._keep(pool, root)
            self._rounds(pool)
        except (MemoryError, RuntimeError) as exc:  # even a batch of one domain does not fit (EngineOutOfMemory),
            # or another allocation failed: nothing more is proved
            if not (isinstance(exc, EngineOutOfMemory) or is_out_of_memory(exc)):
                raise
            raise _Stop(f"memory ({exc})") from None
        finally:
            self.stats["seconds"] += time.monotonic() - t0
            self.stats["bounded"] += self.bounding.rows_bounded

    def usable_pass_bounds(self, layers: dict | None) -> dict | None:
        """``{k: (lo [1, n_k], hi [1, n_k])}`` of every carried layer from a first pass's ``layers`` (float64;
        a layer the pass deferred, whose bounds no rule reads, is ``-inf``/``+inf``: nothing reads it), or None
        when there are none or they do not fit this search's network (a layer of another size)."""
        if not layers:
            return None
        sizes = {layer.index: layer.size for layer in self.mnet.layers}
        out = {}
        for k in self.structure.carried:
            if k not in layers:
                full = torch.full((1, sizes[k]), torch.inf, dtype=torch.float64)
                out[k] = (-full, full)
                continue
            lo, hi = (torch.as_tensor(t).to("cpu", torch.float64).reshape(1, -1) for t in layers[k])
            if lo.shape[1] != sizes[k] or hi.shape[1] != sizes[k]:
                return None
            out[k] = (lo, hi)
        return out

    def _plan_root(self, now: float) -> None:
        """How the root is bounded.  From the first pass's bounds (:attr:`pass_bounds`) when given and the
        certifier optimises nothing at the root (the same bounds: the root's rows are one run of the rows alone),
        or when the deadline leaves less than :data:`ROOT_AND_ROUND_PASSES` of the first pass's time
        (``options.pass_seconds``) for an optimisation of the whole network, or with ``options.root_optimize
        == "rows"`` -- then only the rows' own parameters are optimised, from the pass's bounds
        (:meth:`_optimized_root`: runs of the rows alone);
        otherwise by a pass of its own -- and, without a first pass's bounds, with that little time the search
        stops ``unknown``: the root and a round of its children could not end before the deadline."""
        optimizes = self._optimizes()
        took = self.options.pass_seconds
        short = self.deadline is not None and took is not None and now + ROOT_AND_ROUND_PASSES * took > self.deadline
        if self.pass_bounds is not None and (short or not optimizes or self.options.root_optimize == "rows"):
            self.root_from_pass = True
            self.stats["root"] = "first pass, rows optimised" if optimizes else "first pass"
            return
        if short:
            raise _Stop(f"deadline (one pass took {took:.0f} s, {max(0.0, self.deadline - now):.0f} s left: "
                        f"not enough for the root and a round)")

    def _first_attack(self) -> None:
        o = self.options
        if o.attack_restarts <= 0:
            return
        lb, ub = self.box[0].reshape(1, -1), self.box[1].reshape(1, -1)
        x, v = attack.pgd(self.net, self.objective, lb, ub, restarts=o.attack_restarts, steps=o.attack_steps,
                          generator=self.gen, per_disjunct=len(self.objective.groups) <= 16,
                          deadline=self._share(ATTACK_SHARE))
        self._confirm_points(x, v)

    def _share(self, share: float) -> float | None:
        """The time when ``share`` of what is left until the deadline has passed (None: no deadline)."""
        if self.deadline is None:
            return None
        now = time.monotonic()
        return now + share * max(0.0, self.deadline - now)

    def _confirm_points(self, xs, violations) -> None:
        cex = attack.confirm(self.net, self.prop, self.ri, xs, violations)
        if cex is not None:
            raise _Sat(cex)

    def _root(self) -> Domains | None:
        root = Domains({"rows": torch.zeros(1, self.objective.rows, dtype=torch.float64),
                        "value": torch.zeros(1, dtype=torch.float64), "depth": torch.zeros(1, dtype=torch.int32)})
        if self.mode == "input":
            root["lb"], root["ub"] = self.box[0].reshape(1, -1).clone(), self.box[1].reshape(1, -1).clone()
        if self.root_from_pass:
            for k, (lo, hi) in self.pass_bounds.items():
                root[lo_key(k)], root[hi_key(k)] = lo.clone(), hi.clone()
        bounds = self._optimized_root(root) if self._optimizes() else None
        if bounds is None:
            bounds = self.bounding.bound(root, "replace" if self.root_from_pass else "tighten")
        self._stop_if_unsound()
        for k, (lo, hi) in (bounds.carried or {}).items():  # (none from a replace run: the root has them)
            root[lo_key(k)], root[hi_key(k)] = lo, hi
        for s in self.structure.split_layers + self.structure.curve_layers:
            root[split_key(s.pre)] = torch.zeros(1, s.size, dtype=torch.int8)
        root.update(bounds.alphas or {})
        root["rows"] = bounds.rows
        root["value"] = self.objective.value(bounds.rows)
        self.stats["domains"] += 1
        self.stats["disjunct_domains"] += len(self.objective.groups)
        if bool(self.objective.verified(bounds.rows)[0]) or bool(bounds.empty[0]):
            return None
        if self.mode == "relu" and self.options.beta and self.structure.branchable:
            self._start_beta(root)
        if self.mode == "relu" and self.options.per_disjunct:
            root = self._per_disjunct(root)
        return root

    def _optimizes(self) -> bool:
        """Whether the root's parameters are optimised (``options.optimize`` and a certifier with parameters)."""
        return self.options.optimize is not None and self.cert_params

    def _optimized_root(self, root: Domains) -> Bounds | None:
        """The root's bounds with the certifier's parameters optimised for its rows (alpha-CROWN's loop, until
        :data:`ROOT_OPTIMIZE_SHARE` of the time left); from the first pass's layer bounds (a root that carries
        them) only the rows' own parameters are, every run a run of the rows alone.  None when a run with the
        parameters does not fit in memory (the plain bound follows)."""
        try:
            bounds = self.bounding.bound_optimized(
                root, self.options.optimize, lambda rows: self.objective.verified(rows.detach().to("cpu", torch.float64)),
                deadline=self._share(ROOT_OPTIMIZE_SHARE))
        except EngineOutOfMemory as exc:  # a run with the parameters does not fit (VNN-COMP 2024 ml4acopf's
            # 118-bus nets under cf-run's 19 GiB): the plain pass the search would run without --optimize
            self.stats["root_optimize"] = f"off ({exc})"
            return None
        if self.mode != "relu" and not self.options.optimize_input:
            # the root only (BabOptions.optimize_input): its bounds, not its parameters, reach the children
            bounds.alphas, self.bounding.alpha_cols = None, {}
        return bounds

    def _per_disjunct(self, root: Domains) -> Domains:
        """The root once per disjunct it leaves open, each copy answerable for that disjunct alone: the rows of
        the others are +inf (the copy's value is its disjunct's; ``objective.verified`` holds once it is
        refuted; every later bound keeps the larger of its own and its parent's rows, so they stay +inf),
        and the copy is bounded on its disjunct's rows only (:mod:`cfmlir.bab.local_rows`; its multipliers and
        parameters keep those rows).  Sound: each disjunct's copies partition the region as the root does,
        and the region is verified when every copy's tree is (:attr:`BabOptions.per_disjunct`)."""
        values = self.objective.disjunct_values(root["rows"])[0]
        open_ = [k for k in range(values.shape[0]) if not bool(values[k] > 0)]
        copies = root.repeat(len(open_))
        for i, k in enumerate(open_):
            copies["rows"][i, ~self.objective.member[k]] = torch.inf
        copies["value"] = self.objective.value(copies["rows"])
        row_fields = [beta_key(k) for k in self.bounding.beta_layers if beta_key(k) in copies]
        row_fields += [alpha_field(*key) for key in self.bounding.alpha_cols if alpha_field(*key) in copies]
        localise(copies, own_rows(self.objective.member, open_), row_fields)
        return copies

    def _start_beta(self, root: Domains) -> None:
        """Multipliers for the split constraints (:mod:`cfmlir.bab.lagrangian`), all 0 at the root, when the
        certifier carries them: its bound of the Lagrangian network at ``beta = 0`` equals its bound of the
        rows (else the search runs without, ``stats["beta"]`` says so)."""
        if self.bounding.widened:
            self.stats["beta"] = ("off (a widened float32 run: placeholder bounds would swamp its rounding charges; "
                                  "float64 keeps them)")
            return
        rows = self.objective.rows
        layers = self.structure.split_layers + self.structure.curve_layers
        # the same run without the term (the root's rows may be better: the best of an optimisation)
        plain = self.bounding.bound(root, "replace").rows
        for s in layers:
            root[beta_key(s.pre)] = torch.zeros(1, rows, s.size, dtype=torch.float32)
        self.bounding.beta_layers = tuple(s.pre for s in layers)
        with_term = self.bounding.bound(root, "replace").rows
        # equal up to the run's rounding (a certifier that does not carry the term is off by the placeholders'
        # size, ~1e33): 1e-9 relative in float64, ~1e-4 in an unwidened float32 run
        tol = max(1e-9, 1000 * torch.finfo(self.bounding.options["dtype"]).eps)
        if bool((with_term >= plain - tol * (1 + plain.abs())).all()):
            self.stats["beta"] = "on"
            return
        self.stats["beta"] = "off (the certifier does not carry the Lagrangian term)"
        self.bounding.beta_layers = ()
        for s in layers:
            root.pop(beta_key(s.pre))

    def _optimize_beta(self, kids: Domains) -> None:
        """Each open child's multipliers optimised from its parent's (warm start), its rows the better."""
        if not self.bounding.beta_layers or not len(kids):
            return
        open_ = ~self.objective.verified(kids["rows"])
        if "empty" in kids:
            open_ &= ~kids["empty"]
        idx = torch.nonzero(open_).reshape(-1)
        if not idx.numel():
            return
        part = kids.select(idx)
        o = self.options
        step_dtype = None if o.beta_dtype is None else getattr(torch, o.beta_dtype)
        rows, betas, alphas = self.bounding.optimize_beta(part, self.objective, o.beta_iterations, o.beta_lr,
                                                          step_dtype=step_dtype)
        self._stop_if_unsound()
        kids["rows"][idx] = torch.maximum(part["rows"], rows)
        kids["value"][idx] = self.objective.value(kids["rows"][idx])
        for k, b in betas.items():
            kids[beta_key(k)][idx] = b
        for f, v in alphas.items():
            kids[f][idx] = v

    def _rounds(self, pool: DomainPool) -> None:
        last = 0.0
        while len(pool):
            now = time.monotonic()
            if self.deadline is not None and now + 1.5 * last > self.deadline:
                raise _Stop("deadline")
            if self.options.max_domains is not None and self.stats["domains"] >= self.options.max_domains:
                raise _Stop("domain limit")
            batch = pool.pop(self.options.batch)
            # the disjuncts each parent leaves open: its children are bounded for them (alpha-beta-CROWN's unit)
            open_disjuncts = int((self.objective.disjunct_values(batch["rows"]) <= 0).sum())
            kids = self._branch_relu(batch) if self.mode == "relu" else self._branch_input(batch)
            self.stats["rounds"] += 1
            self.stats["domains"] += len(kids)
            self.stats["disjunct_domains"] += open_disjuncts * (len(kids) // max(1, len(batch)))
            self.stats["max_depth"] = max(self.stats["max_depth"], int(kids["depth"].max()) if len(kids) else 0)
            self._attack_children(kids)
            self._keep(pool, kids)
            last = time.monotonic() - now
            if self.on_round is not None:
                self.on_round({"region": self.ri, "round": self.stats["rounds"], "pool": len(pool),
                               "worst": pool.min_value(), "domains": self.stats["domains"],
                               "seconds": time.monotonic() - self.t_start})

    def _stop_if_unsound(self) -> None:
        if self.check is not None and getattr(self.check, "unsound", False):
            raise _Stop("unsound bounds")

    # -- what happens to bounded domains ---------------------------------------------------------------------
    def _keep(self, pool: DomainPool, kids: Domains) -> None:
        """Drop the verified and empty domains, decide the leaves, pool the rest."""
        if not len(kids):
            return
        open_ = ~self.objective.verified(kids["rows"])
        if "empty" in kids:
            open_ &= ~kids.pop("empty")
        kids = kids.select(open_)
        if not len(kids):
            return
        if self.mode == "relu":
            unstable = branching.unstable_count(self.structure, kids)
            if not self.structure.piecewise_linear:
                if bool((unstable == 0).any()):
                    raise _Stop("undecided leaf")
            else:
                by_lp = unstable <= self.lp_unstable
                if bool(by_lp.any()):
                    still_open = self._decide_by_lp(kids.select(by_lp), unstable[by_lp] == 0)
                    kids = Domains.cat([kids.select(~by_lp), still_open])
        try:
            pool.push(kids)
        except PoolFull:
            raise _Stop("memory") from None

    def _decide_by_lp(self, domains: Domains, leaf: torch.Tensor) -> Domains:
        """The domains the LP (:mod:`cfmlir.bab.exact`) leaves open; ``sat`` on a confirmed point; a leaf it
        cannot decide ends the search."""
        values = self.objective.disjunct_values(domains["rows"])
        keep = torch.zeros(len(domains), dtype=torch.bool)
        for i in range(len(domains)):
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise _Stop("deadline")
            bounds = {s.pre: (domains[lo_key(s.pre)][i].numpy(), domains[hi_key(s.pre)][i].numpy())
                      for s in self.structure.split_layers}
            open_disjuncts = [k for k in range(values.shape[1]) if not float(values[i, k]) > 0]
            box = (domains["lb"][i], domains["ub"][i]) if "lb" in domains else self.box
            try:
                out = exact.decide(self.net, self.objective, self.prop, self.ri, (box[0].numpy(), box[1].numpy()),
                                   bounds, open_disjuncts)
            except exact.TooBig:
                out = exact.LpOutcome("open")
            self.stats["leaves"] += 1
            if out.decided == "sat":
                raise _Sat(out.counterexample)
            if out.decided == "open":
                if bool(leaf[i]):
                    raise _Stop("undecided leaf")
                keep[i] = True
        return domains.select(keep)

    # -- ReLU branching ------------------------------------------------------------------------------------
    def _branch_relu(self, batch: Domains) -> Domains:
        o, p = self.options, len(batch)
        targets = self.objective.target_rows(batch["rows"])
        scores, backup = branching.candidate_scores(self.mnet, self.structure, batch, targets)
        k = min(o.candidates, scores.shape[1]) if o.heuristic == "fsb" else 1
        top = scores.topk(k, dim=1)
        indices, values = top.indices, top.values
        if o.heuristic == "fsb" and o.intercept_candidates:  # and the best by the intercept score not among them
            more = backup.scatter(1, indices, -1.0).topk(min(o.intercept_candidates, backup.shape[1]), dim=1)
            indices, values = torch.cat([indices, more.indices], 1), torch.cat([values, more.values], 1)
            k = indices.shape[1]
        cands = Domains.cat([branching.neuron_children(self.structure, batch, indices[:, j]) for j in range(k)])
        score_dtype = self._score_dtype()
        if score_dtype is None:
            self._bound_into(cands, "replace", parent_rows=batch["rows"].repeat(2 * k, 1))
        else:
            self._score_into(cands, score_dtype, parent_rows=batch["rows"].repeat(2 * k, 1))
        choice = indices[:, 0]
        if k > 1:
            values_c = cands["value"].clone()
            invalid = (values < 0).T.reshape(k, 1, p).expand(k, 2, p).reshape(-1)  # a stable candidate
            values_c[invalid] = -torch.inf
            best = branching.pick_best_candidates(values_c, p, k, branching.FSB_REDUCE)
            cands = branching.gather_candidate_children(cands, best, p, k)
            choice = indices[torch.arange(p), best]
        if o.refine:
            self._refine(cands, choice.repeat(2))
        elif self.structure.curve_layers:  # a cut curve neuron tightens the layers after it only when they are recomputed
            cut = choice.repeat(2) >= self.structure.relu_neurons
            if bool(cut.any()):
                self._refine(cands, choice.repeat(2), only=cut)
        self._optimize_beta(cands)
        return cands

    def _refine(self, kids: Domains, choice: torch.Tensor, only: torch.Tensor | None = None) -> None:
        """Recompute the carried layers after each child's split layer (those before it cannot change),
        intersected with the child's bounds: one engine call per split layer (``only``: ``[2P]`` bool, the
        children to refine; default all)."""
        st = self.structure
        layer_of = torch.cat([torch.full((s.size,), s.pre, dtype=torch.int64) for s in st.split_layers + st.curve_layers])
        split_at = layer_of[choice]
        if only is not None:
            split_at = torch.where(only, split_at, torch.full_like(split_at, -1))
        for pre in torch.unique(split_at).tolist():
            if pre < 0 or not any(k > pre for k in self.structure.carried):
                continue  # not refined, or the last split layer: nothing after it to refine
            rows = torch.nonzero(split_at == pre).reshape(-1)
            part = kids.select(rows)
            self._bound_into(part, "tighten", parent_rows=part["rows"], replace_upto=pre)
            for name, v in part.items():
                if name in kids:
                    kids[name][rows] = v
                else:
                    kids[name] = torch.zeros((len(kids), *v.shape[1:]), dtype=v.dtype)
                    kids[name][rows] = v

    # -- input branching -----------------------------------------------------------------------------------
    def _branch_input(self, batch: Domains) -> Domains:
        o, p = self.options, len(batch)
        targets = self.objective.target_rows(batch["rows"])
        scores = branching.input_scores(self.net, self.objective, batch, targets, o.input_split)
        free = int((batch["ub"] > batch["lb"]).sum(1).min())
        k = max(1, min(o.input_candidates, free)) if o.heuristic == "fsb" else 1
        top = scores.topk(k, dim=1)
        cands = Domains.cat([branching.input_children(batch, top.indices[:, j]) for j in range(k)])
        self._bound_into(cands, "tighten", parent_rows=batch["rows"].repeat(2 * k, 1))
        if k > 1:
            values = cands["value"].clone()
            values[cands["empty"]] = torch.inf  # an empty half is as good as verified
            best = branching.pick_best_candidates(values, p, k)
            cands = branching.gather_candidate_children(cands, best, p, k)
        if o.clip:
            self._clip(cands)
        return cands

    def _clip(self, kids: Domains) -> None:
        """Each open child box clipped to where its linear bounds allow a counterexample, every side cut off
        verified by bounding its slab (:mod:`cfmlir.bab.clipping`)."""
        open_ = ~self.objective.verified(kids["rows"]) & ~kids["empty"]
        idx = torch.nonzero(open_).reshape(-1)
        if not idx.numel():
            return
        part = kids.select(idx)
        rows, coeff = self.bounding.input_coefficients(part)
        lb, ub = part["lb"], part["ub"]
        new_lb, new_ub = clipping.clip_boxes(lb, ub, rows - self.objective.b, coeff, self.objective.groups)
        owner, dim, upper, s_lb, s_ub = clipping.slabs(lb, ub, new_lb, new_ub)
        if not owner.numel():
            return
        slab = part.select(owner)
        slab["lb"], slab["ub"] = s_lb, s_ub
        bounds = self.bounding.bound(slab, "replace")
        self._stop_if_unsound()
        verified = self.objective.verified(bounds.rows)
        self.stats["clipped_sides"] = self.stats.get("clipped_sides", 0) + int(verified.sum())
        kids["lb"][idx], kids["ub"][idx] = clipping.confirmed(lb, ub, new_lb, new_ub, owner, dim, upper, verified)

    def _score_dtype(self):
        """The precision FSB's candidates are scored in, when it is not the search's and the chosen children's
        rows come from the split multipliers' optimisation (:meth:`_optimize_beta`, every open child); else None.
        Never with curve cuts: an S-curve's relaxation on the narrow intervals cuts leave is cancellation in
        float32 (a sigmoid net the search decides in 245 subdomains scored in float64 was open after 3000)."""
        name = self.options.fsb_dtype
        dtype = None if name is None else getattr(torch, name)
        if (dtype is None or dtype == self.bounding.options["dtype"] or not self.bounding.beta_layers
                or self.structure.curve_layers):
            return None
        return dtype

    def _score_into(self, kids: Domains, dtype, parent_rows: torch.Tensor) -> None:
        """Candidates scored by a raw run in ``dtype`` (their ``value``, to choose by); their rows stay their
        parent's -- sound on every child -- until the multipliers' optimisation bounds the chosen ones."""
        bounds = self.bounding.bound(kids, "replace", score_dtype=dtype)
        kids["rows"] = parent_rows.clone()
        kids["value"] = self.objective.value(torch.maximum(bounds.rows, parent_rows))
        kids["empty"] = bounds.empty

    def _bound_into(self, kids: Domains, reuse: str, parent_rows: torch.Tensor, replace_upto: int = -1) -> None:
        bounds = self.bounding.bound(kids, reuse, replace_upto)
        self._stop_if_unsound()
        kids["rows"] = torch.maximum(bounds.rows, parent_rows)
        kids["value"] = self.objective.value(kids["rows"])
        if bounds.carried is not None:
            for k, (lo, hi) in bounds.carried.items():
                kids[lo_key(k)], kids[hi_key(k)] = lo, hi
        kids["empty"] = bounds.empty
        kids["value"][bounds.empty] = torch.inf

    # -- attacks on children -------------------------------------------------------------------------------
    def _attack_children(self, kids: Domains) -> None:
        if not len(kids):
            return
        if "lb" in kids:  # input boxes: every centre is a candidate
            centres = (kids["lb"] + kids["ub"]) / 2
            with torch.no_grad():
                v = self.objective.violation(self.net.forward(centres))
            if bool((v <= 0).any()):
                self._confirm_points(centres, v)
        o = self.options
        boxes = "lb" in kids
        count = o.input_attack if boxes else o.round_attack
        if count <= 0 or (not boxes and self.stats["rounds"] % o.attack_every):
            return
        worst = torch.topk(-kids["value"], min(count, len(kids))).indices
        some = kids.select(worst)
        lb, ub = self.bounding._boxes(some)
        rows = torch.arange(len(some)).repeat(2)  # two restarts per domain
        # an input box is its own subdomain; a ReLU subdomain's points are pulled into it by a penalty
        penalty = None if boxes else attack.split_penalty(self.structure, some, rows)
        # an input box's random restart stays uniform: the diversified start's steps of half the box go to its
        # corners, and on ACAS Xu 1_9 prop_7 (sat) the search then ran out of time (162,431 subdomains at 116 s),
        # where uniform starts find it after 65,407 (docs/bab.md, *Attacks on input boxes*)
        x, v = attack.pgd(self.net, self.objective, lb, ub, restarts=2, steps=max(10, o.attack_steps // 5),
                          generator=self.gen, penalty=penalty, deadline=self.deadline, diversified=not boxes)
        if bool((v <= 0).any()):
            self._confirm_points(x, v)
