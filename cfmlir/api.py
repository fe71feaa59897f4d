"""The public Python API: compile a certifier, load a network and a property, certify.

::

    import cfmlir
    from cfruntime.default_data import default_data_path, default_network_path

    cert = cfmlir.compile("deeppoly")                     # shipped name, .cf path or .cf source text
    net = cfmlir.load_network(default_network_path())     # ONNX + its resolved preprocessing
    prop = cfmlir.robustness_property(net, default_data_path(), eps=0.005)
    res = cfmlir.certify(cert, net, prop, layer_bounds=True)
    res.certified.sum(), res.margin_lb.shape, res.layer_bounds[1][0].shape

This is what ``cf-run`` does in dataset mode (same margins, same verdicts).  Importing :mod:`cfmlir` is
cheap: torch and xDSL are imported by the functions that need them.  User errors are
:class:`cfmlir.diagnostics.CfError` (certifier sources) and :class:`cfruntime.errors.CfRuntimeError`
(networks, data, properties), each with a one-line message; a bad argument value or type is a
:class:`cfmlir.api_args.ArgumentError` (a ``ValueError``), with ``cf-run``'s message for the same value.
All are :class:`cfruntime.errors.UserError` (``docs/errors.md``).
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfmlir import api_args, api_validation
from cfmlir.engines import Certifier, Network, bounds_in_batches, concat_slices, engine_for

__all__ = ["Certifier", "Network", "Result", "VnnlibResult", "compile", "load_network", "robustness_property",
           "load_vnnlib", "certify", "engine_for", "bounds_in_batches"]

#: the file name given to a certifier passed as source text (its diagnostics say ``inline.cf:LINE:COL``)
INLINE_FILE = "inline.cf"


def _is_source_text(spec: str) -> bool:
    return "\n" in spec


def compile(spec, *, rewrite: bool = True) -> Certifier:  # noqa: A001 - the API's name
    """Compile a certifier: ``spec`` is a shipped certifier's name (``"deeppoly"``), a path to a ``.cf``
    file, or ``.cf`` source text (anything with a newline).  ``rewrite=False`` compiles without the domain
    rewrites.  The emitted module is cached (:func:`cfmlir.compiler.compile_certifier_cached`).  A bad
    name or source is a :class:`~cfmlir.diagnostics.CfError`."""
    api_validation.compile_args(spec, rewrite)
    import cfmlir.frontend  # noqa: F401 - imported before the clock starts, as cf-run does
    import cfmlir.passes.emit_python  # noqa: F401
    import cfruntime.flow.engine  # noqa: F401 - torch
    from cfmlir.compiler import compile_certifier_cached, load_certifier_source, pipeline_for

    spec = os.fspath(spec)
    shipped = False  # a path or source text is a user's certifier (proved before a verdict)
    if _is_source_text(spec):
        text, file, name = spec, INLINE_FILE, Path(INLINE_FILE).stem
    else:
        text, file = load_certifier_source(spec)
        name = spec if file != spec else Path(file).stem
        shipped = file != spec
    t0 = time.perf_counter()
    c = compile_certifier_cached(text, file, pipeline_for(rewrite))
    return Certifier(name, text, file, bool(rewrite), c.certifier, c.cache_hit, time.perf_counter() - t0,
                     shipped=shipped)


def _values(v, what: str, positive: bool = False):
    """``mean``/``std`` given as a number, a sequence of numbers or a ``"M,M,M"`` string -> tuple."""
    from cfruntime.properties.preprocessing import parse_values

    if v is None:
        return None
    if not isinstance(v, str):
        v = ",".join(repr(float(x)) for x in (v if hasattr(v, "__iter__") else [v]))
    return parse_values(v, what, positive=positive)


def load_network(path, *, mean=None, std=None, layout=None, flatten_order=None, manifest=None) -> Network:
    """Load an ONNX network (``.onnx`` or ``.onnx.gz``) and resolve its preprocessing as ``cf-run`` does:
    each of ``mean``/``std`` (numbers, one per channel or one for all), ``layout`` (``"NCHW"``/``"NHWC"``)
    and ``flatten_order`` (``"CHW"``/``"HWC"``) not given comes from the network's manifest entry
    (``manifest``, else ``MANIFEST.json`` beside the network, ...), else from the default."""
    api_validation.load_network_args(path, mean, std, layout, flatten_order, manifest)
    from cfruntime.errors import NetworkError
    from cfruntime.network import load_onnx
    from cfruntime.properties.preprocessing import resolve_preprocessing

    path = Path(path)
    if not path.is_file():
        raise NetworkError("no such network file", file=path)
    given = {"layout": layout, "flatten_order": flatten_order}
    given = {k: None if v is None else v.strip().upper() for k, v in given.items()}
    prep = resolve_preprocessing(path, mean=_values(mean, "mean"), std=_values(std, "std", positive=True),
                                 **given, manifest=manifest)
    return Network(load_onnx(path, **prep.value.load_kwargs()), prep, path)


def _raw(network):
    return network.network if isinstance(network, Network) else network


def robustness_property(network: Network, images_or_csv, eps: float, *, n: int | None = None,
                        dataset: str | None = None):
    """Local robustness of images in the L-infinity ball of radius ``eps`` (pixel units in [0, 1],
    clipped to [0, 1]), mapped into ``network``'s input space by its preprocessing.  ``images_or_csv``:
    an ERAN CSV path (its first ``n`` rows; ``dataset`` mnist/cifar10, default from the row length) or
    :class:`cfruntime.properties.EranImages`.  A guessed preprocessing is a :class:`UserWarning`.
    Returns a :class:`cfruntime.properties.RobustnessProperty`."""
    api_validation.robustness_property_args(network, images_or_csv, eps, n, dataset)
    from cfruntime.properties import DATASETS, EranImages, load_eran_csv
    from cfruntime.properties import robustness_property as _robustness_property
    from cfruntime.properties.preprocessing import Preprocessing, ResolvedPreprocessing

    if isinstance(images_or_csv, EranImages):
        images = images_or_csv if n is None else EranImages(
            images_or_csv.path, images_or_csv.dataset, images_or_csv.labels[:n], images_or_csv.pixels[:n],
            images_or_csv.lines[:n])
    else:
        images = load_eran_csv(images_or_csv, dataset, stop=n)
    if isinstance(network, Network):
        prep, path = network.preprocessing, network.path
    else:  # a bare cfruntime network: the default preprocessing, as given
        prep, path = ResolvedPreprocessing(Preprocessing(), {}), None
    channels = DATASETS[images.dataset][1][0]
    prep.value.check_channels(channels)
    if path is not None:
        line = prep.warning(path, channels)
        if line is not None:
            warnings.warn(line.removeprefix("warning: "), UserWarning, stacklevel=2)
    if n is not None and (note := api_args.short_data_note(images.path, n, len(images))) is not None:
        warnings.warn(note, UserWarning, stacklevel=2)
    net = _raw(network)
    return _robustness_property(images, eps, prep.value, net.input_shape, num_classes=net.output_size,
                                network=None if path is None else str(path))


def load_vnnlib(path, network):
    """A VNN-LIB property (``.vnnlib`` or ``.vnnlib.gz``), checked against ``network``'s input and output
    sizes: a :class:`cfruntime.properties.VnnlibProperty`."""
    api_validation.load_vnnlib_args(path, network)
    from cfruntime.errors import PropertyError
    from cfruntime.properties import parse_vnnlib

    net = _raw(network)
    prop = parse_vnnlib(path)
    if prop.num_inputs != net.input_size or prop.num_outputs != net.output_size:
        raise PropertyError(f"property has {prop.num_inputs} inputs and {prop.num_outputs} outputs, the network "
                            f"{net.input_size} and {net.output_size}", file=path)
    return prop


@dataclass
class Result:
    """What :func:`certify` found for a robustness property of ``N`` samples and ``K`` classes.

    ``margin_lb``/``margin_ub`` ``[N, K]`` float64: bounds of ``y_true - y_j`` (the own column is 0);
    ``certified`` ``[N]`` bool: correctly classified and every other margin's lower bound > 0;
    ``correct`` ``[N]`` bool; ``layer_bounds``: ``{layer: (lower [N, n], upper [N, n])}`` of every layer
    but the input (the last is the margin layer, its own column not zeroed) or None; ``times``
    (``analysis_s``); ``batch_size``: the one used (smaller than asked when a batch ran out of memory);
    ``proof``: the :class:`cfmlir.proof_gate.Proof` of the rules the analysis ran (``proof.proved``:
    ``"shipped"``, True, or False when some rule is ``unknown``)."""

    margin_lb: Any
    margin_ub: Any
    certified: Any
    correct: Any
    layer_bounds: dict | None
    times: dict
    batch_size: int
    proof: Any = None


@dataclass
class VnnlibResult:
    """What :func:`certify` found for a VNN-LIB property: ``verdict`` ``unsat`` (every disjunct refuted) or
    ``unknown`` (no counterexample search is run here; ``cf-run --vnnlib`` does one), the constraint rows'
    bounds per input region, ``times``, ``proof`` (as :attr:`Result.proof`)."""

    verdict: str
    row_lb: list
    row_ub: list
    times: dict
    proof: Any = None
    #: with ``certify(layer_bounds=...)``: per region ``{layer: (lower [n], upper [n])}`` (float64; None for a
    #: region without rows), every layer but the input (``"computed"``: those the pass computed, see there)
    layer_bounds: list | None = None


def certify(certifier: Certifier, network, prop, *, engine="compiled", device="cpu", dtype="float64",
            batch_size: int = 100, widen=None, layer_bounds: bool | str = False, sparse: bool = True,
            check=None, on_batch=None, on_shrink=None, ray=None, require_proof: bool = False,
            proof_timeout: float | None = None, proof=None, optimize=None,
            lr: float | None = None):
    """Analyse ``network`` with ``certifier`` for ``prop``, ``batch_size`` boxes at a time (halved when a
    batch runs out of memory).  ``engine``: ``"compiled"``, ``"interpreter"`` or an engine object with
    ``bounds(network, lb, ub, with_layers)``; ``widen``: None (on for float32), True or False;
    ``sparse=False``: dense torch tensors.  A :class:`cfruntime.properties.RobustnessProperty` gives a
    :class:`Result`, a :class:`cfruntime.properties.VnnlibProperty` a :class:`VnnlibResult`.
    ``layer_bounds``: every layer's bounds in the result too; ``"computed"``: only the layers the analysis
    computed anyway (the compiled engine leaves out a layer whose bounds no rule read,
    :mod:`cfruntime.flow.deferred`, which reading would compute: branch and bound's root reuses the rest).

    Hooks (all optional): ``check(margin_network, lb, ub, layers, first)`` is called after each batch
    (robustness: boxes ``first...`` of ``prop``; VNN-LIB: input regions ``first...``) with every layer's
    bounds (see :mod:`cfmlir.engines`); its seconds are ``times["check_s"]``, not counted in ``analysis_s``
    (``cf-run --check`` is such a hook).  ``on_batch(start, stop)`` after each batch (a progress bar);
    ``on_shrink(old, new, why)`` when a batch did not fit in memory.

    ``ray``: None (this process), or a Ray cluster's address (``"local"``/True: a local one), which
    analyses the batches of a robustness property as Ray tasks (:mod:`cfmlir.distributed`, the extra
    ``cfmlir[ray]``); the result is the one this process would give.

    The proof gate (:mod:`cfmlir.proof_gate`): before any analysis, a certifier that is not a shipped one
    given by name has the rules this network makes it run proved (``proof_timeout`` seconds per rule,
    default 20; cached).  A rule with a counterexample raises
    :class:`~cfmlir.proof_gate.UnsoundCertifierError` (no result); an ``unknown`` rule is a
    :class:`~cfmlir.proof_gate.ProofWarning` and ``result.proof.proved`` is False, or, with
    ``require_proof=True``, :class:`~cfmlir.proof_gate.UnprovedCertifierError`.  ``proof``: a
    :class:`~cfmlir.proof_gate.Proof` the caller already made for this certifier and network (then
    ``certifier`` may be None, with an engine object).

    ``optimize=N``: optimise the certifier's parameters (``param ...``; e.g. ``alpha_deeppoly``) for every
    batch by ``N`` iterations of projected Adam on the margins' lower bounds (learning rate ``lr``,
    default 0.5; :mod:`cfmlir.optimize`, ``docs/optimisation.md``); a certifier without parameters is
    an error."""
    api_validation.certify_args(certifier, network, prop, engine=engine, device=device, dtype=dtype, batch_size=batch_size,
                                widen=widen, layer_bounds=layer_bounds, sparse=sparse, check=check, on_batch=on_batch,
                                on_shrink=on_shrink, ray=ray, require_proof=require_proof, proof_timeout=proof_timeout)
    from cfruntime.properties import VnnlibProperty

    net = _raw(network)
    proof = _gate(certifier, net, proof, require_proof, proof_timeout)
    options = {"device": device, "dtype": dtype, "widen": widen, "sparse": sparse}
    if optimize is not None or lr is not None:
        options.update(optimize=optimize, lr=lr)
    eng = engine_for(certifier, engine, **options) if isinstance(engine, str) else engine
    timer = _CheckTimer(check)
    t0 = time.perf_counter()
    if isinstance(prop, VnnlibProperty):
        res = _certify_vnnlib(eng, net, prop, t0, timer, batch_size, device, layer_bounds)
        res.proof = proof
        return res
    if ray is not None and ray is not False:
        from cfmlir.distributed import ray_bounds

        if not isinstance(engine, str):
            raise ValueError("certify(ray=...) runs a named engine ('compiled' or 'interpreter'), not an engine object")
        lower, upper, layers, used = ray_bounds(
            "local" if ray is True else str(ray), certifier, network, net, prop, engine=engine, options=options,
            batch_size=batch_size, with_layers=_with_layers(layer_bounds, check), keep_layers=bool(layer_bounds),
            on_slice=_slice_hooks(net, prop, device, timer, on_batch), on_shrink=on_shrink)
    else:
        lower, upper, layers, used = bounds_in_batches(
            eng, net, prop.lb, prop.ub, prop.C, batch_size, device=device,
            with_layers=_with_layers(layer_bounds, check), keep_layers=bool(layer_bounds),
            on_slice=_slice_hooks(net, prop, device, timer, on_batch, local=True), on_shrink=on_shrink)
    res = _robustness_result(net, prop, lower, upper, layers, used, t0, timer)
    res.proof = proof
    return res


def _with_layers(layer_bounds, check):
    """The engines' ``with_layers`` for :func:`certify`'s ``layer_bounds``: every layer for a ``check`` hook."""
    return True if check is not None else layer_bounds


def _gate(certifier, net, proof, require: bool, timeout):
    """The proof gate of :func:`certify`: the certifier's :class:`~cfmlir.proof_gate.Proof` for ``net``
    (``proof`` when the caller made it), enforced; an unproved one is also a ``ProofWarning``."""
    from cfmlir import proof_gate

    if proof is None:
        if not isinstance(certifier, Certifier):
            raise ValueError("certify() proves the certifier's rules before answering: pass the Certifier "
                             "(cfmlir.compile(...)), also with an engine object")
        proof = proof_gate.proof_for(certifier, net, timeout=timeout, require=require)
        line = proof.warning()
        if line is not None:
            warnings.warn(line.removeprefix("warning: "), proof_gate.ProofWarning, stacklevel=3)
        return proof
    if not proof.shipped and proof_gate.operators_of(net) - proof.operators:
        raise ValueError("certify(proof=...) was made for a network with other layer kinds")
    if isinstance(certifier, Certifier) and (proof.shipped != proof_gate.is_shipped(certifier) or (
            not proof.shipped and proof.spec_hash != proof_gate.spec_hash(certifier.text))):
        raise ValueError("certify(proof=...) was made for another certifier")
    return proof_gate.enforce(proof, require)


class _CheckTimer:
    """The ``check`` hook of :func:`certify`, timed (``seconds``), or nothing when there is none."""

    def __init__(self, check):
        self.check = check
        self.seconds = 0.0

    def __call__(self, mnet, lb, ub, layers, first: int) -> None:
        if self.check is None:
            return
        t0 = time.perf_counter()
        self.check(mnet, lb, ub, layers, first)
        self.seconds += time.perf_counter() - t0

    def times(self, t0: float) -> dict:
        """``analysis_s`` since ``t0`` without the check, and ``check_s`` when there is a check."""
        out = {"analysis_s": time.perf_counter() - t0 - self.seconds}
        if self.check is not None:
            out["check_s"] = self.seconds
        return out


def _slice_hooks(net, prop, device, timer: _CheckTimer, on_batch, local: bool = False):
    """``on_slice(start, stop, mnet, layers)`` for :func:`bounds_in_batches`: the check (``mnet`` is the
    batch's margin network; None when the batch ran elsewhere: then it is built here) and ``on_batch``."""
    from cfmlir.engines import margin_network

    def on_slice(start, stop, mnet, layers):
        if timer.check is not None:
            if mnet is None:
                mnet = margin_network(net, prop.C[start:stop], device)
            timer(mnet, prop.lb[start:stop], prop.ub[start:stop], layers, start)
        if on_batch is not None:
            on_batch(start, stop)

    return on_slice


def _robustness_result(net, prop, lower, upper, layers, used: int, t0: float, timer: _CheckTimer) -> Result:
    """The :class:`Result` of the margins' bounds: own columns zeroed, correctness, verdicts."""
    import torch

    n = len(prop)
    rows = torch.arange(n)
    margin_lb, margin_ub = lower.clone(), upper.clone()
    margin_lb[rows, prop.labels] = 0.0  # the own column is y_true - y_true
    margin_ub[rows, prop.labels] = 0.0
    with torch.no_grad():
        correct = net.forward(prop.x.to(torch.float64)).argmax(dim=1).eq(prop.labels)
    certified = prop.verified(margin_lb) & correct
    return Result(margin_lb, margin_ub, certified, correct, layers, timer.times(t0), used)


def _certify_vnnlib(eng, net, prop, t0, timer: _CheckTimer, batch_size: int, device,
                    layer_bounds: bool | str = False) -> VnnlibResult:
    """Bounds of every input region's constraint rows ``A y`` (:meth:`~cfruntime.properties.InputRegion.stacked`;
    one array per region, empty for a region without rows), the regions in batches: consecutive regions with
    the same number of rows are one batch of boxes with per-box margin weights
    (:func:`cfmlir.engines.bounds_in_batches`, ``batch_size`` boxes an engine call), each batch checked by
    ``timer``'s hook (``first``: the batch's first region); the verdict ``unsat`` or ``unknown``.  One region
    at a time took 50 ms a region on nn4sys_2023's ``lindex`` (1,000 to 60,000 regions of one input).
    ``layer_bounds``: each region's layer bounds kept too (:attr:`VnnlibResult.layer_bounds`)."""
    import numpy as np
    import torch

    from cfmlir.engines import bounds_in_batches
    from cfruntime.properties import verdict

    regions = prop.regions
    lows, highs = [np.zeros(0)] * len(regions), [np.zeros(0)] * len(regions)
    kept = [None] * len(regions) if layer_bounds else None
    for start, stop in _runs_of_equal_row_counts(regions):
        part = regions[start:stop]
        C = torch.from_numpy(np.stack([reg.stacked()[0] for reg in part]).astype(np.float64))
        lb = torch.from_numpy(np.stack([reg.lb for reg in part]).astype(np.float64))
        ub = torch.from_numpy(np.stack([reg.ub for reg in part]).astype(np.float64))

        def on_slice(lo, hi, mnet, layers, first=start, lb=lb, ub=ub):
            timer(mnet, lb[lo:hi], ub[lo:hi], layers, first + lo)

        lower, upper, layers, _ = bounds_in_batches(eng, net, lb, ub, C, batch_size, device=device,
                                                    with_layers=_with_layers(layer_bounds, timer.check),
                                                    keep_layers=bool(layer_bounds), on_slice=on_slice)
        for k in range(stop - start):
            lows[start + k], highs[start + k] = lower[k].numpy(), upper[k].numpy()
            if kept is not None:
                kept[start + k] = {j: (lo[k], hi[k]) for j, (lo, hi) in layers.items()}
    return VnnlibResult(verdict(prop, lows), lows, highs, timer.times(t0), layer_bounds=kept)


def _runs_of_equal_row_counts(regions) -> list[tuple[int, int]]:
    """``(start, stop)`` of each maximal run of consecutive regions with the same number (> 0) of stacked
    constraint rows (a region without rows has nothing to bound)."""
    runs: list[tuple[int, int]] = []
    start, rows = 0, None
    for i, reg in enumerate(list(regions) + [None]):
        k = None if reg is None else reg.stacked()[0].shape[0]
        if k != rows:
            if rows:
                runs.append((start, i))
            start, rows = i, k
    return runs
