"""The analysis engines behind :func:`cfmlir.certify` and ``cf-run``, with one protocol.

An engine computes bounds of a network's last layer over a batch of input boxes::

    engine.bounds(network, lb, ub, with_layers)  # lb, ub: [B, input_size] (anything array-like)
    -> (lower [B, n], upper [B, n], layers)      # float64 on the CPU; layers None unless with_layers

``layers`` is ``{layer index: (lower [B, n_k], upper [B, n_k])}`` for every layer but the input (the box
itself), the last included: the certifier's Float lower/upper members.  ``network`` is usually a margin
network (:meth:`cfruntime.network.Network.with_margin_layer`), whose per-sample layers are indexed by the
row of the box.

* :class:`CompiledEngine` -- the compiled certifier (:func:`cfruntime.flow.engine.run_certifier`), the
  whole batch at once, on g-BSCR (``sparse``) or dense tensors, on any device and dtype;
* :class:`InterpreterEngine` -- the neuron-level reference interpreter, one box after the other.

:func:`margin_network` builds the margin network of a batch (an allocation failure there is an
:class:`~cfruntime.flow.engine.EngineOutOfMemory`, which :func:`cfruntime.flow.batching.in_batches`
answers with smaller batches).
"""

from __future__ import annotations

import numpy as np

#: ``widen`` values of ``cf-run --widen`` -> :func:`cfruntime.flow.engine.run_certifier`'s
WIDEN = {"auto": None, "on": True, "off": False}


def margin_network(network, C, device="cpu"):
    """``network.with_margin_layer(C)`` (``C [B, K, n]``: the margins' weights are per sample, so a batch
    may not fit already here: then an ``EngineOutOfMemory`` at the last layer)."""
    from cfruntime.flow.engine import out_of_memory_at

    return out_of_memory_at(lambda: network.with_margin_layer(C), network.layers[-1].index, "margins", len(C), device)


def store_layer_bounds(cert, network, res, lower, upper) -> dict:
    """``{layer: (lower [B, n], upper [B, n])}`` from a compiled engine result's store (the input layer,
    the box itself by construction, left out; the last layer is ``(lower, upper)``)."""
    import torch

    from cfruntime import contract
    from cfruntime import tensor as gb

    lo_name = cert.member_with_role(contract.NUMBER_LETTERS, contract.LOWER)
    hi_name = cert.member_with_role(contract.NUMBER_LETTERS, contract.UPPER)
    b = lower.shape[0]
    out = {}
    for layer in network.layers[1:-1]:
        out[layer.index] = tuple(gb.to_dense(res.store.get(layer.index, name)).to("cpu", torch.float64).expand(b, -1)
                                 for name in (lo_name, hi_name))
    out[network.layers[-1].index] = (lower, upper)
    return out


def _boxes(network, lb, ub):
    import torch

    lb = torch.as_tensor(np.asarray(lb, dtype=np.float64)).reshape(-1, network.input_size)
    ub = torch.as_tensor(np.asarray(ub, dtype=np.float64)).reshape(-1, network.input_size)
    return lb, ub


class CompiledEngine:
    """A compiled certifier (:class:`cfruntime.flow.engine.CompiledCertifier`) run batch by batch.

    ``dtype``: ``"float64"``/``"float32"`` or a torch dtype; ``widen``: None (on for float32), True or
    False (or ``cf-run``'s ``"auto"``/``"on"``/``"off"``)."""

    name = "compiled"

    def __init__(self, certifier, *, sparse: bool = True, dtype="float64", device="cpu", widen=None):
        import torch

        self.certifier = certifier
        self.sparse = bool(sparse)
        self.dtype = dtype if isinstance(dtype, torch.dtype) else {"float64": torch.float64, "float32": torch.float32}[dtype]
        self.device = device
        self.widen = WIDEN[widen] if isinstance(widen, str) else widen

    def bounds(self, network, lb, ub, with_layers: bool = False):
        import torch

        from cfruntime.flow.engine import run_certifier

        lb, ub = _boxes(network, lb, ub)
        # a replayed CUDA graph keeps the last layer's bounds only: the layers need every layer's store
        res = run_certifier(self.certifier, network, lb, ub, sparse=self.sparse, dtype=self.dtype, device=self.device,
                            widen=self.widen, **({"graph": False} if with_layers else {}))
        lower, upper = res.lower.to("cpu", torch.float64), res.upper.to("cpu", torch.float64)
        if not with_layers:
            return lower, upper, None
        return lower, upper, store_layer_bounds(self.certifier, network, res, lower, upper)


class InterpreterEngine:
    """The reference interpreter's program (:func:`cfmlir.interpreter.run.load_certifier`), one box at a
    time, in float64 (box ``r`` of a batch uses sample ``r`` of the network's per-sample layers)."""

    name = "interpreter"

    def __init__(self, program):
        self.program = program

    def bounds(self, network, lb, ub, with_layers: bool = False):
        import torch

        from cfmlir.interpreter.run import analyze

        lb, ub = _boxes(network, lb, ub)
        lows, highs, per_layer = [], [], {}
        for r in range(lb.shape[0]):
            res = analyze(self.program, network, lb[r], ub[r], sample=r)
            lows.append(res.lower)
            highs.append(res.upper)
            if with_layers:
                for k, (lo, hi) in res.layer_bounds().items():
                    if k > 0:  # the input layer is the box itself
                        per_layer.setdefault(k, ([], []))[0].append(lo)
                        per_layer[k][1].append(hi)
        f64 = lambda rows: torch.tensor(rows, dtype=torch.float64)  # noqa: E731
        lower, upper = f64(lows), f64(highs)
        if not with_layers:
            return lower, upper, None
        return lower, upper, {k: (f64(lo), f64(hi)) for k, (lo, hi) in per_layer.items()}
