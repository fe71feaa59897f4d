"""The analysis engines behind :func:`cfmlir.certify` and ``cf-run``, with one protocol.

An engine computes bounds of a network's last layer over a batch of input boxes::

    engine.bounds(network, lb, ub, with_layers)  # lb, ub: [B, input_size] (anything array-like)
    -> (lower [B, n], upper [B, n], layers)      # float64 on the CPU; layers None unless with_layers

``layers`` is ``{layer index: (lower [B, n_k], upper [B, n_k])}`` for every layer but the input (the box
itself), the last included: the certifier's Float lower/upper members; ``with_layers="computed"``
(:data:`~cfmlir.engine_io.COMPUTED`) may leave out the layers whose bounds the run deferred and no rule
read (the compiled engine does: :mod:`cfruntime.flow.deferred`).  ``network`` is usually a margin
network (:meth:`cfruntime.network.Network.with_margin_layer`), whose per-sample layers are indexed by the
row of the box.

* :class:`CompiledEngine` -- the compiled certifier (:func:`cfruntime.flow.engine.run_certifier`), the
  whole batch at once, on g-BSCR (``sparse``) or dense tensors, on any device and dtype;
* :class:`InterpreterEngine` -- the neuron-level reference interpreter, one box after the other.

:class:`Certifier` (what :func:`cfmlir.compile` returns) names the certifier both engines run, and
:class:`Network` (what :func:`cfmlir.load_network` returns) the network with its preprocessing;
:func:`check_certifier` and :func:`network_of` refuse anything else (one line, :mod:`cfmlir.api_args`);
:func:`engine_for` makes its engine; :func:`bounds_in_batches` is the one batching loop (in this process
and in every Ray task of :mod:`cfmlir.distributed`), re-exported by :mod:`cfmlir.api`.

:func:`margin_network` builds the margin network of a batch (an allocation failure there is an
:class:`~cfruntime.flow.engine.EngineOutOfMemory`, which :func:`cfruntime.flow.batching.in_batches`
answers with smaller batches).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfmlir import api_args
from cfmlir.engine_io import COMPUTED, WIDEN, store_layer_bounds  # noqa: F401 - re-exported: engines' public names
from cfmlir.engine_io import as_boxes as _boxes
from cfmlir.engine_io import engine_options


def margin_network(network, C, device="cpu"):
    """``network.with_margin_layer(C)`` (``C [B, K, n]``: the margins' weights are per sample, so a batch
    may not fit already here: then an ``EngineOutOfMemory`` at the last layer)."""
    from cfruntime.flow.engine import out_of_memory_at

    return out_of_memory_at(lambda: network.with_margin_layer(C), network.layers[-1].index, "margins", len(C), device)


class CompiledEngine:
    """A compiled certifier (:class:`cfruntime.flow.engine.CompiledCertifier`) run batch by batch.

    ``dtype``: ``"float64"``/``"float32"`` or a torch dtype; ``widen``: None (on for float32), True or
    False (or ``cf-run``'s ``"auto"``/``"on"``/``"off"``); ``graph``: None (the engine replays a CUDA
    graph where it pays, :func:`cfruntime.flow.engine.run_certifier`) or False (always eager: every
    operation runs where an operation counter sees it); ``blocks``: a layer too big for memory at once is
    computed a block of neurons at a time (False: out of memory then; a ``time.monotonic()`` deadline: while
    the layer's predicted end is before it, :func:`cfruntime.flow.engine.run_certifier`)."""

    name = "compiled"

    def __init__(self, certifier, *, sparse: bool = True, dtype="float64", device="cpu", widen=None, graph=None,
                 blocks: bool | float = True):
        self.certifier = certifier
        self.sparse = bool(sparse)
        self.dtype, self.widen = engine_options(dtype, widen)
        self.device = device
        self.graph = graph
        self.blocks = blocks

    def bounds(self, network, lb, ub, with_layers: bool = False):
        import torch

        from cfruntime.flow.engine import run_certifier

        lb, ub = _boxes(network, lb, ub)
        # a replayed CUDA graph (a recorded CPU run) keeps the last layer's bounds only: the layers need
        # every layer's store; on the CPU a replay is asked for (run_certifier's default is eager there)
        if with_layers or self.graph is False:
            graph = {"graph": False}
        else:
            graph = {"graph": True} if torch.device(self.device).type == "cpu" and self.graph is None else {}
        res = run_certifier(self.certifier, network, lb, ub, sparse=self.sparse, dtype=self.dtype, device=self.device,
                            widen=self.widen, blocks=self.blocks, **graph)
        lower, upper = res.lower.to("cpu", torch.float64), res.upper.to("cpu", torch.float64)
        if not with_layers:
            return lower, upper, None
        return lower, upper, store_layer_bounds(self.certifier, network, res, lower, upper,
                                                computed_only=with_layers == COMPUTED)


class InterpreterEngine:
    """The reference interpreter's program (:func:`cfmlir.interpreter.run.load_certifier`), one box at a
    time, in float64 (box ``r`` of a batch uses sample ``r`` of the network's per-sample layers)."""

    name = "interpreter"

    def __init__(self, program):
        self.program = program

    def bounds(self, network, lb, ub, with_layers: bool = False):
        import torch

        from cfmlir.interpreter.run import analyze
        from cfruntime.flow.finite import check_layer_rows

        lb, ub = _boxes(network, lb, ub)
        lows, highs, per_layer = [], [], {}
        names = (self.program.lower_member, self.program.upper_member)
        for r in range(lb.shape[0]):
            res = analyze(self.program, network, lb[r], ub[r], sample=r)
            bounds = res.layer_bounds()
            check_layer_rows(network, bounds, sample=r, member_names=names)  # a NaN or inf bound is an error
            lows.append(res.lower)
            highs.append(res.upper)
            if with_layers:
                for k, (lo, hi) in bounds.items():
                    if k > 0:  # the input layer is the box itself
                        per_layer.setdefault(k, ([], []))[0].append(lo)
                        per_layer[k][1].append(hi)
        f64 = lambda rows: torch.tensor(rows, dtype=torch.float64)  # noqa: E731
        lower, upper = f64(lows), f64(highs)
        if not with_layers:
            return lower, upper, None
        return lower, upper, {k: (f64(lo), f64(hi)) for k, (lo, hi) in per_layer.items()}


@dataclass
class Certifier:
    """A compiled certifier: ``compiled`` (the compiled engine's
    :class:`~cfruntime.flow.engine.CompiledCertifier`), its source ``text`` and ``file``, the ``rewrite``
    flag it was compiled with and whether the compile cache was hit; :attr:`program` is the reference
    interpreter's program of the same source (built on first use).  ``shipped``: made from a shipped
    certifier's name (its rules are proved by the test suite, :mod:`cfmlir.proof_gate`; a path or source
    text is a user's certifier, proved before every verdict)."""

    name: str
    text: str
    file: str
    rewrite: bool
    compiled: Any
    cache_hit: bool | None = None
    compile_s: float = 0.0
    _program: Any = field(default=None, repr=False)
    shipped: bool = False

    @property
    def program(self):
        """The reference interpreter's program (:mod:`cfmlir.interpreter.run`)."""
        if self._program is None:
            from cfmlir.interpreter.run import compile_source

            self._program = compile_source(self.text, self.file, self.name)
        return self._program


@dataclass
class Network:
    """A loaded ONNX network (``network``, a :class:`cfruntime.network.Network`, whose attributes this
    object also answers), its ``path`` and its resolved ``preprocessing``
    (:class:`~cfruntime.properties.preprocessing.ResolvedPreprocessing`: how images become inputs): what
    :func:`cfmlir.load_network` returns."""

    network: Any
    preprocessing: Any
    path: Path

    def __getattr__(self, name):
        if name.startswith("__") or name in ("network", "preprocessing", "path"):
            raise AttributeError(name)
        return getattr(self.network, name)

    def __call__(self, x):
        return self.network.forward(x)


def check_certifier(value) -> Certifier:
    """What :func:`cfmlir.compile` returns (a name or path is refused, with the call that makes one)."""
    return api_args.check_kind(value, Certifier, "certifier", "cfmlir.compile")


def network_of(value, name: str = "network"):
    """The :class:`cfruntime.network.Network` of ``value``: what :func:`cfmlir.load_network` returns, or a
    cfruntime network itself (a file name or a torch module is refused)."""
    from cfruntime.network import Network as RawNetwork

    if isinstance(value, Network):
        return value.network
    return api_args.check_kind(value, RawNetwork, name, "cfmlir.load_network")


def engine_for(certifier: Certifier, engine: str = "compiled", *, device="cpu", dtype="float64", widen=None,
               sparse: bool = True, graph=None, optimize=None, lr: float | None = None):
    """The engine object (:mod:`cfmlir.engines`) that runs ``certifier``: ``"compiled"`` or
    ``"interpreter"`` (float64 on the CPU only).  ``graph=False``: the compiled engine never replays a
    CUDA graph (for counting operations).  ``optimize``: a number of iterations (or
    :class:`cfmlir.optimize.OptimizeOptions`) to optimise the certifier's parameters for every batch
    (learning rate ``lr``, default 0.5): an :class:`cfmlir.optimize.OptimizingEngine` (compiled only)."""
    check_certifier(certifier)
    api_args.check_choice(engine, "engine", api_args.ENGINES)
    device, dtype = api_args.check_device(device, "device"), api_args.check_dtype(dtype, "dtype")
    api_args.check_interpreter_options(engine, device, dtype)
    api_args.check_widen(widen, "widen")
    api_args.check_bool(sparse, "sparse")
    if graph is not None:
        api_args.check_bool(graph, "graph")
    if optimize is not None or lr is not None:
        from cfmlir.optimize import OptimizeError, OptimizingEngine, options_from, require_params

        opts = options_from(optimize, lr)
        if opts is None and lr is not None:
            raise OptimizeError("a learning rate is given but no optimisation (optimize=N iterations)")
        if opts is not None:
            if engine != "compiled":
                raise OptimizeError(f"parameters are optimised with the compiled engine, not the '{engine}' engine")
            require_params(certifier.compiled, certifier.name)
            return OptimizingEngine(certifier.compiled, opts, sparse=sparse, dtype=dtype, device=device, widen=widen)
    if engine == "compiled":
        return CompiledEngine(certifier.compiled, sparse=sparse, dtype=dtype, device=device, widen=widen, graph=graph)
    if engine == "interpreter":
        if str(device) != "cpu" or dtype not in ("float64", None):
            raise ValueError("the interpreter engine runs in float64 on the CPU only")
        return InterpreterEngine(certifier.program)
    raise ValueError(f"unknown engine '{engine}' (expected 'compiled' or 'interpreter')")


def bounds_in_batches(eng, net, lb, ub, C, batch_size: int, *, device="cpu", with_layers: bool = False,
                      keep_layers: bool = False, on_slice=None, on_shrink=None):
    """The one batching loop: bounds of the margins ``C[i] @ net(x)`` over the boxes ``[lb[i], ub[i]]``,
    ``batch_size`` boxes at a time by the engine ``eng`` (halved when a batch runs out of memory,
    :func:`cfruntime.flow.batching.in_batches`).  ``with_layers``: ask the engine for every layer's
    bounds (passed to ``on_slice(start, stop, margin_network, layers)`` after each batch);
    ``keep_layers``: return them.  ``(lower [N, K], upper [N, K], layers or None, the batch size used)``,
    the own columns not zeroed."""
    if not callable(getattr(eng, "bounds", None)):
        raise api_args.ArgumentError(f"eng must be an engine (cfmlir.engine_for), got {api_args.described(eng)}")
    network_of(net, "net")
    api_args.check_positive_int(batch_size, "batch_size")
    api_args.check_callable(on_slice, "on_slice")
    api_args.check_callable(on_shrink, "on_shrink")
    from cfruntime.flow.batching import in_batches

    from cfmlir import spec_rows

    def run_slice(lo: int, hi: int):
        spec, kept = spec_rows.compact(C[lo:hi])  # rows that are 0 (a robustness spec's own class): exactly 0
        mnet = margin_network(net, spec, device)
        lower, upper, layers = eng.bounds(mnet, lb[lo:hi], ub[lo:hi], with_layers)
        if on_slice is not None:
            on_slice(lo, hi, mnet, layers)
        k = C.shape[1]
        lower, upper = spec_rows.spread(lower, kept, k), spec_rows.spread(upper, kept, k)
        if keep_layers and layers is not None and kept is not None:
            last = mnet.layers[-1].index
            layers = {**layers, last: tuple(spec_rows.spread(v, kept, k) for v in layers[last])}
        return lower, upper, layers if keep_layers else None

    slices, report = in_batches(run_slice, len(lb), batch_size, on_shrink)
    return (*concat_slices([s[2] for s in slices], C.shape[1], keep_layers), report.used)


def concat_slices(parts, k: int, keep_layers: bool):
    """``(lower, upper, layers or None)`` of consecutive batches' ``(lower, upper, layers)``."""
    import torch

    if not parts:
        empty = torch.zeros(0, k, dtype=torch.float64)
        return empty, empty.clone(), ({} if keep_layers else None)
    lower = torch.cat([p[0] for p in parts])
    upper = torch.cat([p[1] for p in parts])
    layers = None
    if keep_layers:
        layers = {j: (torch.cat([p[2][j][0] for p in parts]), torch.cat([p[2][j][1] for p in parts]))
                  for j in parts[0][2]}
    return lower, upper, layers
