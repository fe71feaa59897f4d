"""Plan once, run many: a certification on CUDA captured as a CUDA graph and replayed per batch.

The planned engine makes the same kernels on every call for a given certifier, network and batch
shape, and never waits for the device (no host syncs), so a whole certification can be recorded once
with ``torch.cuda.graph`` and replayed: no Python, no dispatcher and no launch latency per
operation.  What changes between batches is copied into the graph's buffers before each replay: the
input boxes, and the parameters of *batched* layers (the margin layer ``C W`` that
``Network.with_margin_layer`` folds into the last layer for every batch).  The network's other
parameters are the graph's constants (cached per tensor by :mod:`cfruntime.flow.parameters`).

A graph is kept per (certifier, network structure and parameters, batch shape, dtype,
representation); :func:`graphed_bounds` falls back to the eager engine when capture fails.

On the CPU the same premise gives a recorded run instead (:class:`_Taped`, :mod:`cfruntime.flow.tape`):
its dispatched operations, recorded at a key's ``CPU_RECORD_AFTER``-th call, replayed as one
straight-line function once a first replay has been found bit for bit equal to an eager run.
"""

from __future__ import annotations

import gc
import warnings

import torch

from cfruntime.network.graph import Layer, Network

_GRAPHS: dict[tuple, "_Graph | None"] = {}
_MAX_GRAPHS = 16


def _own_batched(network: Network, dtype, device) -> tuple[Network, list[tuple[int, torch.Tensor, torch.Tensor]]]:
    """``network`` with fresh copies of its batched layers' weights and biases (the margin layer
    ``C W``: it changes with every batch), and those copies as ``(layer index, weight, bias)``: a
    captured or recorded run reads its parameters from them, and a later call copies or passes the
    batch's own in their place."""
    owned: list[tuple[int, torch.Tensor, torch.Tensor]] = []
    layers = []
    for l in network.layers:
        if l.kind == "affine" and l.batched:
            w = l.weight.to(device=device, dtype=dtype).clone()
            b = l.bias.to(device=device, dtype=dtype).clone()
            owned.append((l.index, w, b))
            l = Layer(index=l.index, kind=l.kind, shape=l.shape, preds=list(l.preds), name=l.name,
                      linear_kind=l.linear_kind, weight=w, bias=b)
        layers.append(l)
    return Network(layers, source=network.source, input_name=network.input_name), owned


class _Graph:
    """One captured certification: its input buffers, its dynamic parameters and its outputs."""

    def __init__(self, run, cert, network: Network, lb, ub, dtype, representation):
        device = lb.device
        self.lb, self.ub = lb.clone(), ub.clone()
        net, self.dynamic = _own_batched(network, dtype, device)  # (layer, weight buffer, bias buffer)
        self.network = net
        self.cert = cert  # (the key names it by id: never reused while the graph is kept)
        lo, hi = self.lb, self.ub  # (no reference to self: a _Graph is freed as soon as it is dropped)

        def call():
            return run(cert, net, lo, hi, dtype=dtype, device=device, representation=representation, graph=False)

        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            call()  # warm: parameters, layouts and memos are made outside the graph
        torch.cuda.current_stream(device).wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        # No Python garbage collection inside the capture: a collected CUDA graph (or any CUDA object)
        # freed there invalidates the capture ("operation not permitted when stream is capturing").
        enabled = gc.isenabled()
        gc.disable()
        try:
            with torch.cuda.graph(self.graph):
                res = call()
        finally:
            if enabled:
                gc.enable()
        self.lower, self.upper, self.finite = res.lower, res.upper, res.finite

    def release(self) -> None:
        """Free the captured graph now (not whenever its object is collected)."""
        self.graph.reset()

    def __call__(self, network: Network, lb, ub):
        self.lb.copy_(lb)
        self.ub.copy_(ub)
        for index, w, b in self.dynamic:
            layer = network.layers[index]
            w.copy_(layer.weight)
            b.copy_(layer.bias)
        self.graph.replay()
        return self.lower.clone(), self.upper.clone(), self.finite.clone()


class _Taped:
    """One recorded certification on the CPU (:mod:`cfruntime.flow.tape`): its inputs are the boxes
    and the batched layers' parameters, as :class:`_Graph`'s buffers are.  ``first``: the recording
    run's own results; ``checked``: a replay has been found equal to an eager run."""

    def __init__(self, run, cert, network: Network, lb, ub, dtype, representation):
        from cfruntime.flow.tape import Tape, compile_tape

        self.dtype = dtype
        net, owned = _own_batched(network, dtype, lb.device)
        self.dynamic = [index for index, _, _ in owned]
        inputs = [lb.clone(), ub.clone()]  # fresh tensors: nothing is kept on them from earlier runs
        for _, w, b in owned:
            inputs += [w, b]
        # kept: the key names the certifier and the layers' parameters by id (never reused while alive)
        self.cert = cert
        self.network = net
        tape = Tape(inputs)
        with tape:
            res = run(cert, net, inputs[0], inputs[1], dtype=dtype, device=lb.device,
                      representation=representation, graph=False)
        self.first = res.lower, res.upper, res.finite
        self.replay = compile_tape(tape, self.first)
        self.checked = False

    def release(self) -> None:
        self.replay = None

    def __call__(self, network: Network, lb, ub):
        args = [lb, ub]
        for index in self.dynamic:
            layer = network.layers[index]
            args += [layer.weight.to(dtype=self.dtype), layer.bias.to(dtype=self.dtype)]
        return self.replay(*args)


#: calls of one key on the CPU before its run is recorded: a recording costs about 40 runs of a small
#: batch and saves a few milliseconds per run, so one-off shapes stay eager
CPU_RECORD_AFTER = 3
_SEEN: dict[tuple, int] = {}


def _taped_bounds(run, key, cert, network: Network, lb, ub, dtype, representation):
    """:func:`graphed_bounds` on the CPU: None (run eagerly) until the key's ``CPU_RECORD_AFTER``-th call,
    which records its run; the next call replays *and* runs eagerly, and the replay is trusted only if
    every result is bit for bit the eager one (a recording that would keep one run's choice -- a
    value read back, which :class:`~cfruntime.flow.tape.Tape` refuses, or one it cannot see -- differs
    on other boxes)."""
    from cfruntime.flow.tape import NotReplayable

    if key not in _GRAPHS:
        seen = _SEEN[key] = _SEEN.get(key, 0) + 1
        if seen < CPU_RECORD_AFTER:
            if len(_SEEN) > 4 * _MAX_GRAPHS:
                _SEEN.pop(next(iter(_SEEN)))
            return None
        if len(_GRAPHS) >= _MAX_GRAPHS:
            _release(_GRAPHS.pop(next(iter(_GRAPHS))))
        try:
            taped = _Taped(run, cert, network, lb, ub, dtype, representation)
        except NotReplayable:
            _GRAPHS[key] = None
            return None
        _GRAPHS[key] = taped
        out, taped.first = taped.first, None
        return out
    taped = _GRAPHS[key]
    if taped is None:
        return None
    if taped.checked:
        return taped(network, lb, ub)
    res = run(cert, network, lb, ub, dtype=dtype, device=lb.device, representation=representation, graph=False)
    want = res.lower, res.upper, res.finite
    why = "differs from the eager run on other boxes"
    try:
        got = taped(network, lb, ub)
    except Exception as exc:  # noqa: BLE001 - a replay that cannot run is one that is not trusted
        got, why = None, f"could not be replayed ({type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]})"
    if got is not None and all(_same(a, b) for a, b in zip(got, want)):
        taped.checked = True
    else:
        warnings.warn(f"a recorded CPU run {why}; running eagerly", RuntimeWarning)
        _GRAPHS[key] = None
    return want


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit the same values (NaN where the other has NaN: a non-finite run is located eagerly)."""
    return a.shape == b.shape and a.dtype == b.dtype and bool(((a == b) | (a.isnan() & b.isnan())).all())


def _key(cert, network: Network, lb, dtype, representation, widen: bool = True) -> tuple:
    parts = []
    for l in network.layers:
        if l.kind == "affine" and l.batched:
            parts.append(("batched", tuple(l.weight.shape)))
        else:
            parts.append((l.kind, tuple(l.shape), id(l.weight), id(l.bias), id(l.conv), id(l.gather)))
    return (id(cert), tuple(parts), tuple(lb.shape), str(lb.device), dtype, representation, widen)


def graphed_bounds(run, cert, network: Network, lb, ub, dtype, representation, widen: bool = True):
    """``(lower, upper, finite)`` of the last layer (``finite``: the 0-d flag of
    :func:`cfruntime.flow.finite.finite_flag`) by replaying the certification's CUDA graph (captured on
    first use); None when it cannot be captured (the caller runs the eager engine).  ``widen``: whether
    ``run`` widens low-precision bounds (:mod:`cfruntime.flow.widening`; part of the graph's key)."""
    key = _key(cert, network, lb, dtype, representation, widen)
    if lb.device.type == "cpu":
        return _taped_bounds(run, key, cert, network, lb, ub, dtype, representation)
    if key not in _GRAPHS:
        if len(_GRAPHS) >= _MAX_GRAPHS:
            _release(_GRAPHS.pop(next(iter(_GRAPHS))))
        try:
            _GRAPHS[key] = _Graph(run, cert, network, lb, ub, dtype, representation)
        except Exception as exc:  # noqa: BLE001 - a capture failure only costs the replay's speed
            warnings.warn(f"CUDA graph capture failed ({type(exc).__name__}: {exc}); running eagerly", RuntimeWarning)
            _GRAPHS[key] = None
    graph = _GRAPHS[key]
    return None if graph is None else graph(network, lb, ub)


def _release(graph: "_Graph | None") -> None:
    if graph is not None:
        graph.release()


def clear() -> None:
    """Forget every captured graph and recorded run (their memory is freed when no result refers to it)."""
    for graph in _GRAPHS.values():
        _release(graph)
    _GRAPHS.clear()
    _SEEN.clear()
