"""Non-finite bounds are errors, never results.

A NaN or infinite bound -- a ``0.0/0.0`` in a certifier, a network whose (folded) weights are NaN, a
float32 product of weights near 3e38 -- makes every comparison with it false, so a margin ``NaN > 0``
certifies nothing but ``check: no violation`` and an ``unsat`` built on NaN rows look like answers.
The engines stop instead, with one :class:`NonFiniteBoundsError` line that names the first layer whose
bounds are not finite (index, kind, ONNX node), the member, neuron and sample, and the likely cause.

Algorithm (compiled engine; cost: three torch operations and one host sync per certification, none
per layer): :func:`finite_flag` concatenates every stored Float member of every layer (the Float bounds
of all layers, not only the last: a NaN that a later conditional hides from the final bounds still
poisons the analysis) along the neuron dimension and reduces ``sum(x * 0)`` to one 0-d device tensor:
``0`` when every value is finite (a finite ``x * 0`` is 0, whatever its magnitude: no overflow), NaN
when one is not (``inf * 0`` and ``NaN * 0`` are NaN); the caller reads it once (:func:`is_finite`).  Only on the error path, :func:`locate` scans the store
layer by layer for the first non-finite value and diagnoses it (:func:`cause`).  The interpreter
engine checks each analysed box's layer bounds (:func:`first_non_finite_rows`).
"""

from __future__ import annotations

import math

import torch

from cfruntime.errors import CfRuntimeError

#: the type letter of a Float shape member (:mod:`cfruntime.contract`)
FLOAT_LETTER = "R"
#: a magnitude past which float32 products overflow (its largest value is 3.4e38)
_FLOAT32_HUGE = 1e30


class NonFiniteBoundsError(CfRuntimeError):
    """A bound that is NaN or infinite: the layer (index, kind, ONNX node) and the cause, one line."""

    def __init__(self, what: str, *, file=None, layer: int | None = None):
        self.layer = layer
        super().__init__(what, file=file)


def float_members(members) -> list[str]:
    """The Float members (``(name, letter, role)`` of a compiled certifier)."""
    return [name for name, letter, _ in members if letter == FLOAT_LETTER]


def finite_flag(store, names: list[str], batch: int, given=frozenset()) -> torch.Tensor:
    """0-d tensor, 0 when every stored value of the Float members ``names``, in every layer, is finite,
    else NaN (a concatenation, a product and a sum; no host sync): :func:`is_finite` reads it.
    ``given``: ``(layer, member)`` pairs whose values the caller supplied (a replacing bound override,
    :mod:`cfruntime.flow.overrides`; ``inf`` there means "not wanted"), not checked."""
    parts = []
    for name in names:
        for k, value in store.values[name].items():
            if (k, name) in given:
                continue
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                parts.append(value if value.dim() == 2 and value.shape[0] == batch else value.reshape(1, -1))
    if not parts:
        return torch.zeros(())
    if any(p.shape[0] != batch for p in parts):
        parts = [p.reshape(1, -1) for p in parts]
    return torch.cat(parts, 1).mul_(0).sum()  # in place: the concatenation is this function's own buffer


def is_finite(flag: torch.Tensor) -> bool:
    """:func:`finite_flag`'s answer (the one host sync)."""
    return flag.item() == 0.0


def _layer_text(layer) -> str:
    """``layer 3 (affine, ONNX node 'fc1')`` (``the margin layer`` for the margins cf-run adds)."""
    names = [n for n in (layer.name or "").split("+") if n]
    onnx = [n for n in names if n != "margin"]
    parts = [layer.kind] + ([f"ONNX node '{'+'.join(onnx)}'"] if onnx else []) + (["the margin layer"] if "margin" in names else [])
    return f"layer {layer.index} ({', '.join(parts)})"


def _value_text(v: float) -> str:
    return "NaN" if math.isnan(v) else ("+inf" if v > 0 else "-inf")


def layer_parameters(layer) -> list[torch.Tensor]:
    """The numeric parameters of a layer (weights, bias, convolution kernel, gather scale)."""
    out = [t for t in (layer.weight, layer.bias) if isinstance(t, torch.Tensor)]
    if layer.conv is not None:
        out.append(layer.conv.kernel)
    if layer.gather is not None:
        out.append(layer.gather.scale)
    return [t for t in out if t.is_floating_point()]


def cause(network, layer, dtype, pred_bounds_finite: bool, pred_magnitude: float) -> str:
    """Why ``layer``'s bounds are not finite: its parameters, the input box, float32 overflow, or the rule."""
    if layer.index == 0:
        return "the input box is not finite"
    params = layer_parameters(layer)
    if any(not bool(torch.isfinite(p).all()) for p in params):
        return "its parameters (weights/bias in the network file) hold NaN or infinite values"
    if not pred_bounds_finite:
        return "the bounds of its inputs are not finite"
    magnitude = max([pred_magnitude] + [float(p.abs().max()) for p in params if p.numel()])
    if dtype is not None and torch.finfo(dtype).max < 1e300 and magnitude > _FLOAT32_HUGE:
        return (f"{str(dtype).removeprefix('torch.')} overflow (magnitudes up to {magnitude:.3g} in its weights or "
                f"input bounds; float64 may hold them)")
    return ("the certifier's rule produced it from finite inputs and parameters (e.g. a division 0.0/0.0 or "
            "by zero in the spec)")


def _first_bad(t: torch.Tensor):
    """``(sample, neuron, value)`` of the first non-finite entry of ``[B, n]`` ``t``, or None."""
    bad = ~torch.isfinite(t)
    if not bool(bad.any()):
        return None
    idx = bad.nonzero()[0].tolist()
    sample, neuron = (idx[0], idx[1]) if len(idx) == 2 else (0, idx[-1])
    return sample, neuron, float(t[sample, neuron] if t.dim() == 2 else t.reshape(-1)[neuron])


def describe(network, layer, member: str, found, dtype, pred_finite: bool, pred_magnitude: float,
             sample_offset: int = 0) -> NonFiniteBoundsError:
    """The error of member ``member`` of ``layer`` at ``found`` = ``(sample, neuron, value)``."""
    sample, neuron, value = found
    what = (f"non-finite bound at {_layer_text(layer)}: '{member}' of neuron {neuron} is {_value_text(value)} "
            f"(sample {sample + sample_offset}); {cause(network, layer, dtype, pred_finite, pred_magnitude)}")
    return NonFiniteBoundsError(what, file=_network_file(network), layer=layer.index)


def _network_file(network) -> str | None:
    src = getattr(network, "source", None)
    return None if not src or src.startswith("<") else src


def _magnitude(ts) -> float:
    m = 0.0
    for t in ts:
        if t.numel():
            m = max(m, float(t.detach().abs().max()))
    return m


def locate(store, network, names: list[str], dtype) -> NonFiniteBoundsError:
    """The error of the first layer (in order) with a non-finite stored Float member (the error path of
    :func:`finite_flag`; ``store`` a :class:`cfruntime.flow.store.ShapeStore`)."""
    finite_layers: dict[int, bool] = {}
    for layer in network.layers:
        bad = None
        for name in names:
            value = store.values[name].get(layer.index)
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                found = _first_bad(value if value.dim() == 2 else value.reshape(1, -1))
                if found is not None:
                    bad = (name, found)
                    break
        finite_layers[layer.index] = bad is None
        if bad is not None:
            preds = [store.values[n].get(k) for k in layer.preds for n in names]
            preds = [p for p in preds if isinstance(p, torch.Tensor)]
            return describe(network, layer, bad[0], bad[1], dtype, all(finite_layers.get(k, True) for k in layer.preds),
                            _magnitude(preds))
    return NonFiniteBoundsError("non-finite bound (no layer's stored bounds hold it: the last layer's result)",
                                file=_network_file(network))


def check_layer_rows(network, layer_bounds: dict, sample: int = 0, member_names=("lower", "upper")) -> None:
    """The interpreter engine's check: ``layer_bounds`` ``{layer: (lower, upper)}`` (lists or tensors of
    one box) all finite, else :class:`NonFiniteBoundsError` for the first layer that is not."""
    finite_layers: dict[int, bool] = {}
    for layer in network.layers:
        if layer.index not in layer_bounds:
            continue
        rows = [torch.as_tensor(v, dtype=torch.float64).reshape(1, -1) for v in layer_bounds[layer.index]]
        bad = None
        for name, row in zip(member_names, rows):
            found = _first_bad(row)
            if found is not None:
                bad = (name, found)
                break
        finite_layers[layer.index] = bad is None
        if bad is not None:
            preds = [torch.as_tensor(v, dtype=torch.float64) for k in layer.preds if k in layer_bounds
                     for v in layer_bounds[k]]
            raise describe(network, layer, bad[0], bad[1], torch.float64,
                           all(finite_layers.get(k, True) for k in layer.preds), _magnitude(preds), sample)
