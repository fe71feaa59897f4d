"""What the engines (:mod:`cfmlir.engines`) and the optimisation driver (:mod:`cfmlir.optimize`) both
take and give: cf-run's ``--widen`` words, input boxes as tensors, and every layer's bounds read from a
compiled run's store.  Its own module so that the two import it and not each other."""

from __future__ import annotations

#: ``widen`` values of ``cf-run --widen`` -> :func:`cfruntime.flow.engine.run_certifier`'s
WIDEN = {"auto": None, "on": True, "off": False}

#: ``with_layers`` of an engine's ``bounds`` (:mod:`cfmlir.engines`) asking for the layers the run computed
#: anyway: a layer whose bounds no rule read (:mod:`cfruntime.flow.deferred`) is left out, not computed
COMPUTED = "computed"


def engine_options(dtype, widen):
    """``(torch dtype, widen)`` of a compiled engine's options: ``"float64"``/``"float32"`` or a torch
    dtype; None/True/False or ``cf-run``'s ``"auto"``/``"on"``/``"off"``."""
    import torch

    dt = dtype if isinstance(dtype, torch.dtype) else {"float64": torch.float64, "float32": torch.float32}[dtype]
    return dt, (WIDEN[widen] if isinstance(widen, str) else widen)


def bound_members(cert) -> tuple[str, str]:
    """The names of the certifier's Float members with the lower and the upper role."""
    from cfruntime import contract

    return tuple(cert.member_with_role(contract.NUMBER_LETTERS, role) for role in (contract.LOWER, contract.UPPER))


def stored_bounds(cert, res, k: int, b: int, members: tuple[str, str] | None = None):
    """Layer ``k``'s ``(lower, upper)`` in a compiled engine run ``res``'s store, dense and ``[b, n]`` (the
    certifier's Float members with the lower and upper role, :func:`bound_members`, looked up unless given;
    still on the run's device and in its dtype, with their autograd history)."""
    from cfruntime import tensor as gb

    return tuple(gb.to_dense(res.store.get(k, m)).expand(b, -1) for m in (members or bound_members(cert)))


def store_layer_bounds(cert, network, res, lower, upper, computed_only: bool = False) -> dict:
    """``{layer: (lower [B, n], upper [B, n])}`` from a compiled engine result's store (the input layer,
    the box itself by construction, left out; the last layer is ``(lower, upper)``).  ``computed_only``:
    without the layers whose bounds the run deferred and no rule read (:data:`COMPUTED`), which reading
    would compute now (VNN-COMP's TinyYOLO: minutes)."""
    import torch

    if res.store is None:
        raise ValueError("store_layer_bounds: this run kept no store (a replayed CUDA graph keeps the last "
                         "layer's bounds only); run the engine with graph=False to read every layer")
    b = lower.shape[0]
    out = {}
    members = bound_members(cert)
    for layer in network.layers[1:-1]:
        if computed_only and not all(res.store.computed(layer.index, m) for m in members):
            continue
        out[layer.index] = tuple(t.to("cpu", torch.float64) for t in stored_bounds(cert, res, layer.index, b, members))
    out[network.layers[-1].index] = (lower, upper)
    return out


def as_boxes(network, lb, ub):
    """``(lb, ub)`` as float64 tensors ``[B, input_size]`` (from anything numpy reads)."""
    import torch

    import numpy as np

    return tuple(_as_box(torch, np, v, network.input_size) for v in (lb, ub))


def _as_box(torch, np, v, n: int):
    if isinstance(v, torch.Tensor) and v.dtype == torch.float64 and v.device.type == "cpu" and not v.requires_grad:
        # already one (no operation when it has the shape: the engine's own batches)
        return v if v.dim() == 2 and v.shape[1] == n else v.reshape(-1, n)
    return torch.as_tensor(np.asarray(v, dtype=np.float64)).reshape(-1, n)
