"""Optimising a certifier's parameters: projected Adam on the bounds' lower ends (alpha-CROWN's loop).

A certifier with parameters (``param a for Relu in [lo, hi] init e ...``, see ``docs/optimisation.md``)
is sound for every value of them in their domains, so any values give valid bounds and the best ones
can be searched for.  :func:`optimize_bounds` does it for one batch of input boxes on a margin network
(rows = the specification: ``y_true - y_j`` or VNN-LIB constraint rows):

Algorithm (the lower-bound side of auto_LiRPA 0.7.1's ``_get_optimized_bounds``, same defaults):

1. every parameter starts at its declared initial value (e.g. alpha-DeepPoly's slopes at DeepPoly's
   choice, so iteration 0 gives the non-parametric bounds), one raw tensor per (reading layer,
   owning layer) and sample (:class:`cfruntime.flow.param_store.ParamStore`); each read projects the
   raw value into its domain in the current run (the domain moves with the bounds);
2. ``iterations`` runs of the compiled engine (eager, differentiable); after each run but the last,
   the loss ``-sum(lower)`` over every row of every sample not yet verified (with ``early_stop``) is
   back-propagated through the whole run -- intermediate layers' bounds included, so parameters used
   for them are optimised for the final rows -- and Adam (``lr``, decayed by ``lr_decay`` per
   iteration) updates the raw values, which are then clipped into the last run's domains; from the
   second run on, only the intermediate bounds the parameters can change are computed again, the
   others are the first run's (:mod:`cfmlir.optimize_rows`: alpha-CROWN's sparse intermediate bounds);
3. per sample the best parameters are kept: when a sample's summed lower bound improves, its rows become
   the element-wise maximum of the old best and the new ones and its parameters are remembered; after
   ``patience`` iterations without any improvement, or when every row of every sample is verified
   (``early_stop``), the loop ends.  Where the last layer has parameters of its own per row
   (alpha-CROWN's slopes of each margin's back-substitution), each *row's* best values of those are kept
   too (from the iteration where that row's bound was highest);
4. the result: in float32 the iterations ran unwidened (fast; their bounds are not rigorous), and the
   result comes from *widened float64* runs (:mod:`cfruntime.flow.widening`), so the reported bounds
   hold for the real-valued network and lose ~1e-12 to the widening (a widened float32 run loses ~1e-3
   on every margin of a 6x100 MLP, more than the optimisation gains): one with every sample's best
   parameters, one more with each row's best last-layer values (the other layers' are the sample's
   best, so their bounds are the first run's, given to the engine instead of computed again), and the
   element-wise maximum of the two (both are sound).  In float64 every iterate is a bound: the result
   is their element-wise maximum and that of the run with each row's best last-layer values.  A row's
   bound is not monotone in the iterations while their sum is, and auto_LiRPA reports each row's best
   iterate: one run with the sample's best parameters fell up to 1.2 below it (mnist 9x200, eps 0.01;
   0.005 with the row run, 0.05 above on average).

The loop makes one host sync per iteration (whether any sample improved and whether every sample is
verified, read as one number), keeps the best on the device (``torch.where``), checks finiteness only
in the final run, and steps all parameters with one fused Adam call.

:class:`OptimizingEngine` wraps this in the engine protocol of :mod:`cfmlir.engines`
(``engine_for(cert, optimize=...)``, ``cfmlir.certify(..., optimize=N)``, ``cf-run --optimize N``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cfruntime.errors import UserError


class OptimizeError(UserError, ValueError):
    """Optimisation asked of a certifier without parameters, or bad options (one line)."""


@dataclass(frozen=True)
class OptimizeOptions:
    """The optimisation loop's settings (auto_LiRPA's alpha-CROWN defaults: 20 iterations, learning
    rate 0.5, decay 0.98 per iteration, patience 10)."""

    iterations: int = 20
    lr: float = 0.5
    lr_decay: float = 0.98
    early_stop: bool = True
    patience: int = 10

    def __post_init__(self) -> None:
        if int(self.iterations) != self.iterations or self.iterations < 1:
            raise OptimizeError(f"the number of optimisation iterations must be a positive integer, got {self.iterations!r}")
        if not (self.lr > 0):
            raise OptimizeError(f"the learning rate must be positive, got {self.lr!r}")
        if not (0 < self.lr_decay <= 1):
            raise OptimizeError(f"the learning-rate decay must be in (0, 1], got {self.lr_decay!r}")


def options_from(optimize, lr: float | None = None) -> OptimizeOptions | None:
    """``optimize`` as given to the API: None/0 (no optimisation), a number of iterations, or options."""
    if optimize is None or optimize is False or (isinstance(optimize, int) and not isinstance(optimize, bool) and optimize == 0):
        return None
    if isinstance(optimize, OptimizeOptions):
        return optimize if lr is None else OptimizeOptions(optimize.iterations, lr, optimize.lr_decay, optimize.early_stop,
                                                           optimize.patience)
    if isinstance(optimize, bool) or not isinstance(optimize, int):
        raise OptimizeError(f"optimize must be a number of iterations or OptimizeOptions, got {optimize!r}")
    return OptimizeOptions(iterations=optimize, **({} if lr is None else {"lr": lr}))


def require_params(cert, name: str) -> None:
    if not cert.params:
        raise OptimizeError(f"certifier '{name}' has no parameters to optimise (declare one with 'param ... for ... in "
                            f"[lo, hi]', as alpha_deeppoly does; see docs/optimisation.md)")


@dataclass
class OptimizeReport:
    """What one batch's optimisation did: iterations run, why it stopped, the summed lower bound per
    iteration (of the batch), and the raw parameter count."""

    iterations: int = 0
    stopped: str = ""
    history: list[float] = field(default_factory=list)
    parameters: int = 0


def optimize_bounds(cert, network, lb, ub, options: OptimizeOptions, *, dtype, device="cpu", sparse: bool = True,
                    widen: bool | None = None, verified=None, report: OptimizeReport | None = None,
                    keep_final: bool = False, params=None, deadline: float | None = None, overrides: dict | None = None):
    """Optimised bounds of ``network``'s last layer over the boxes ``[lb, ub]`` (one batch): ``(lower
    [B, n], upper [B, n], final run)`` -- the final run with every sample's best parameters (its store
    holds every layer's bounds), made when widening or ``keep_final``, else None.  ``verified(lower) -> [B] bool`` says which
    samples need no more work (default: every row's lower bound is positive); ``params``: the
    :class:`~cfruntime.flow.param_store.ParamStore` to optimise (default a new one; afterwards it holds every
    sample's best values); ``deadline``: a :func:`time.monotonic` time after which no further iteration starts
    (the best so far is kept; ``report.stopped`` says ``"deadline"``); ``overrides``: bound overrides
    (:class:`~cfruntime.flow.overrides.BoundOverride`) given to every run, the final ones included -- bounds the
    caller already has, e.g. every intermediate layer replaced by a first pass's, so that only the last layer's
    parameters are optimised (branch and bound's root from a pass).  See the module docstring for the
    algorithm."""
    import time

    import torch

    from cfruntime.flow import widening
    import torch._dynamo  # noqa: F401 - Adam's first parameter group imports it (torch/_compile.py): here, before the
    # bound runs take the memory (under cf-run's data limit that import failed as "SystemError: error return without
    # exception set" on ml4acopf_2023's 300-bus net)

    from cfruntime.flow.engine import EngineOutOfMemory, is_out_of_memory, run_certifier
    from cfmlir.optimize_rows import hold_rows, row_overrides
    from cfruntime.flow.param_store import PAIR, ParamStore

    report = report if report is not None else OptimizeReport()
    if widen is None:
        widen = widening.widened(dtype)
    if verified is None:
        def verified(lower):
            return (lower > 0).all(1)

    params = params if params is not None else ParamStore(requires_grad=True, sparse=True)
    # the final widened run is in float64: rigorous, and its widening (~1e-12) costs nothing, where a
    # widened float32 run costs ~1e-3 on every margin (docs/optimisation.md)
    final_dtype = torch.float64 if widen else dtype

    base = dict(overrides or {})

    def run(grad: bool, widen_run: bool = False, run_dtype=dtype, check: bool = False, overrides=None):
        # the caller's overrides first: the loop's own (optimize_rows) for the layers they leave to the rules
        with torch.enable_grad() if grad else torch.no_grad():
            return run_certifier(cert, network, lb, ub, sparse=sparse, dtype=run_dtype, device=device, graph=False,
                                 widen=widen_run, params=params, check_finite=check,
                                 bound_overrides={**(overrides or {}), **base} or None)

    overrides = None  # from iteration 1 on: the intermediate bounds not computed again (cfmlir.optimize_rows)
    opt = sched = None
    best_lower = best_upper = best_sum = None
    best_raw: dict = {}
    row_keys: list = []
    patience = 0
    out_of_memory = False
    history: list = []  # the summed lower bound per iteration, read once after the loop
    report.stopped = "iterations"
    for i in range(options.iterations):
        last = i == options.iterations - 1 or (deadline is not None and time.monotonic() > deadline)
        # iterations skip the finite check (a NaN is never kept as best; the final run is checked)
        try:
            res = run(grad=not last, overrides=overrides)
        except EngineOutOfMemory:
            if last:
                raise
            # the gradient's graph does not fit (alpha_deeppoly on ml4acopf's 300-bus net: > 19 GiB where one pass
            # takes 2.3): this iteration is the last, one pass without it at the parameters so far
            last = out_of_memory = True
            res = run(grad=False, overrides=overrides)
        lower, upper = res.lower, res.upper
        if i == 0:
            report.parameters = sum(t.numel() for t in params.tensors())
            if params.tensors():  # none when the network uses no rule with parameters
                opt = _adam(params.tensors(), options.lr)
                sched = torch.optim.lr_scheduler.ExponentialLR(opt, options.lr_decay)
            best_lower, best_upper = lower.detach().clone(), upper.detach().clone()
            every_lower = best_lower.clone()
            best_sum = best_lower.sum(1)
            best_raw = {k: t.detach().clone() for k, t in params.raw.items()}
            # the last layer's own per-row parameters, kept per row (step 4)
            row_keys = [k for k in params.raw if k[1] == network.layers[-1].index and k[3] == PAIR]
            row_best = lower.detach().clone()
            row_raw = {k: best_raw[k].clone() for k in row_keys}
            improved = torch.ones((), dtype=torch.bool, device=lower.device)
            # the first run is the reference: which bounds (and rows) later runs compute again
            overrides = row_overrides(cert, network, res, params) or None
        else:
            with torch.no_grad():
                # keep-best per sample, on the device (torch.where, no host sync)
                better = lower.sum(1) > best_sum
                best_upper = torch.minimum(best_upper, upper)
                best_lower = torch.where(better.unsqueeze(1), torch.maximum(best_lower, lower), best_lower)
                best_sum = best_lower.sum(1)
                every_lower = torch.maximum(every_lower, lower)
                for k, t in params.raw.items():
                    best_raw[k] = torch.where(better.view(-1, *(1,) * (t.dim() - 1)), t, best_raw[k])
                improved = better.any()
                if row_keys:
                    row_better = lower > row_best
                    row_best = torch.maximum(row_best, lower)
                    for k in row_keys:
                        t = params.raw[k]
                        row_raw[k] = torch.where(row_better.view(*row_better.shape, *(1,) * (t.dim() - 2)), t, row_raw[k])
        report.iterations = i + 1
        with torch.no_grad():
            done = verified(best_lower)
            history.append(lower.sum())
            # the loop's one host sync: whether anything improved (bit 0), whether all is verified (bit 1)
            state = int((improved.to(torch.int8) + 2 * done.all().to(torch.int8)).item())
        improved_h, done_h = state & 1, state & 2
        patience = 0 if improved_h else patience + 1
        if options.early_stop and done_h:
            report.stopped = "verified"
            break
        if patience > options.patience:
            report.stopped = "no improvement"
            break
        if last:
            if out_of_memory:
                report.stopped = "memory"
            elif i < options.iterations - 1:
                report.stopped = "deadline"
            break
        if opt is None:  # e.g. alpha_deeppoly on a sigmoid net: the first run is the result
            report.stopped = "no parameters"
            break
        with torch.enable_grad():  # the caller may run under torch.no_grad()
            loss = -lower.sum(1)
            if options.early_stop:
                loss = loss * (~done).to(loss.dtype)
            loss = loss.sum()
        opt.zero_grad(set_to_none=True)
        try:
            loss.backward()
        except (MemoryError, RuntimeError) as e:
            if not is_out_of_memory(e):
                raise
            # the backward pass does not fit: no step, the best bounds so far stand
            del res, lower, upper, loss
            report.stopped = "memory"
            break
        if i == 0 and overrides:  # rows whose bounds stay the first run's keep their parameters too
            hold_rows(params, overrides)
        opt.step()
        params.project_()
        sched.step()
        del res, lower, upper, loss
    report.history.extend(torch.stack(history).tolist())
    # the best parameters of every sample, for the final (widened) run
    with torch.no_grad():
        for k, t in params.raw.items():
            t.copy_(best_raw[k])
    final = None
    if widen:
        params.cast_(final_dtype)
        final = run(grad=False, widen_run=True, run_dtype=final_dtype, check=True)
        lower, upper = final.lower.detach(), final.upper.detach()
    elif keep_final:
        final = run(grad=False, check=True)
        lower, upper = torch.maximum(every_lower, final.lower), torch.minimum(best_upper, final.upper)
    else:
        lower, upper = every_lower, best_upper
    if row_keys and report.iterations > 1:  # each row's own best last-layer values (step 4; after one iteration they
        # are the sample's); afterwards the store holds the sample's again
        with torch.no_grad():
            for k in row_keys:
                params.raw[k].copy_(row_raw[k])
        rows = run(grad=False, widen_run=widen, run_dtype=final_dtype, check=True,
                   overrides=None if final is None else _replaced(cert, network, final))
        lower, upper = torch.maximum(lower, rows.lower.detach()), torch.minimum(upper, rows.upper.detach())
        with torch.no_grad():
            for k in row_keys:
                params.raw[k].copy_(best_raw[k])
    return lower, upper, final


def _replaced(cert, network, res) -> dict:
    """Overrides that give every layer but the first and last its bounds in the run ``res`` (replacing:
    the rules do not compute them again, :mod:`cfruntime.flow.specialise`) -- for a run that differs from
    ``res`` in the last layer's parameters only, whose other layers' bounds are exactly ``res``'s."""
    from cfmlir.engine_io import bound_members, stored_bounds
    from cfruntime.flow.overrides import BoundOverride

    b, members = res.lower.shape[0], bound_members(cert)
    return {layer.index: BoundOverride(*stored_bounds(cert, res, layer.index, b, members), replace=True)
            for layer in network.layers[1:-1]}


def _adam(tensors: list, lr: float):
    """Adam over the raw parameter tensors: the fused kernel where torch has it (one operation and no
    host sync per step, where the per-tensor loop costs ~9 operations and one sync per tensor)."""
    import torch

    try:
        return torch.optim.Adam(tensors, lr=lr, fused=True)
    except (RuntimeError, TypeError, ValueError):  # an older torch, or a dtype/device without the fused kernel
        return torch.optim.Adam(tensors, lr=lr)


class OptimizingEngine:
    """The compiled engine with the certifier's parameters optimised per batch (see the module
    docstring); the engine protocol of :mod:`cfmlir.engines`.  ``with_layers``: every layer's bounds
    of a final run with the best parameters."""

    name = "compiled"

    def __init__(self, compiled, options: OptimizeOptions, *, sparse: bool = True, dtype="float64", device="cpu",
                 widen=None, verified=None):
        from cfmlir.engine_io import engine_options

        self.certifier = compiled
        self.options = options
        self.sparse = bool(sparse)
        self.dtype, self.widen = engine_options(dtype, widen)
        self.device = device
        self.verified = verified
        self.reports: list[OptimizeReport] = []

    def bounds(self, network, lb, ub, with_layers: bool = False):
        import torch

        from cfmlir.engine_io import as_boxes, store_layer_bounds

        lb, ub = as_boxes(network, lb, ub)
        rep = OptimizeReport()
        lower, upper, final = optimize_bounds(self.certifier, network, lb, ub, self.options, dtype=self.dtype,
                                              device=self.device, sparse=self.sparse, widen=self.widen,
                                              verified=self.verified, report=rep, keep_final=with_layers)
        self.reports.append(rep)
        lower, upper = lower.to("cpu", torch.float64), upper.to("cpu", torch.float64)
        if not with_layers:
            return lower, upper, None
        return lower, upper, store_layer_bounds(self.certifier, network, final, lower, upper)
