"""``cf-run --vnnlib`` on a network the loader refuses (an op no certifier rule covers) whose property leaves
free only inputs the network reads through integer roundings: the property is decided by evaluating every
point that matters (:mod:`cfruntime.discrete_enumeration`), with no certifier.  Any other refused network
keeps its error.

Example (cctsdb_yolo_2023: ``ArgMax``, ``ScatterND`` and ``Range`` on a patch's position ``X_12288, X_12289``)::

    certifier deeppoly on patch-1.onnx, property spec_onnx_patch-1_idx_00559_0.vnnlib (not used: unsupported ONNX op 'ArgMax' at node 'ArgMax_198')
    verdict:   unsat (enumeration: 3969 of 3969 points, X_12288 trunc, X_12289 trunc, by ONNX Runtime)
"""

from __future__ import annotations

import time
from pathlib import Path


def enumerable(net_path, vnnlib_path) -> bool:
    """Whether the property at ``vnnlib_path`` leaves free only inputs the network reads through integer
    roundings (:func:`~cfruntime.network.discrete_inputs.discrete_reads`): cf-run's early check of a refused
    network lets it through to :func:`enumeration_instance` only then (otherwise the loader's error comes at
    once, before anything compiles)."""
    import numpy as np

    from cfruntime.network.discrete_inputs import NotDiscrete, discrete_reads
    from cfruntime.network.onnx_loader import read_model
    from cfruntime.properties import parse_vnnlib

    prop = parse_vnnlib(vnnlib_path)
    model, _raw = read_model(Path(net_path))
    try:
        for reg in prop.regions:
            discrete_reads(model, np.asarray(reg.lb) < np.asarray(reg.ub))
    except NotDiscrete:
        return False
    return True


def enumeration_instance(args, loaded, certifier, net_path: Path, refused) -> tuple[dict, list[str], None, None]:
    """The instance decided by enumeration, as :func:`cfmlir.tools.vnnlib_mode.vnnlib_instance` returns it
    (its JSON object and summary lines; no check, no proof: no rule is used); raises ``refused`` (the
    loader's :class:`~cfruntime.errors.UnsupportedOpError`) when the property cannot be decided this way."""
    from cfmlir.tools.provenance import provenance
    from cfmlir.tools.run_setup import network_preprocessing
    from cfruntime.discrete_enumeration import NotEnumerable, enumerate_property
    from cfruntime.errors import NetworkError
    from cfruntime.network.onnx_loader import read_model
    from cfruntime.properties import parse_vnnlib

    t0 = time.perf_counter()
    prop = parse_vnnlib(args.vnnlib)
    model, _raw = read_model(net_path)
    load_s = time.perf_counter() - t0
    try:
        found = enumerate_property(model, net_path, prop, deadline=getattr(args, "split_deadline", None))
    except NotEnumerable as e:
        if str(e).startswith("ONNX Runtime"):  # it would have been decided: say what is missing
            raise NetworkError(f"{refused.what}; the property's free inputs are read only through integer "
                               f"roundings, which cf-run enumerates with ONNX Runtime: pip install onnxruntime",
                               file=net_path) from None
        raise refused from None
    out = {
        "certifier": str(certifier),
        "network": str(net_path),
        "vnnlib": str(args.vnnlib),
        "verdict": found.verdict,
        "proved": "not needed (enumeration: no rule is used)",
        "enumeration": found.json(),
        "regions": [],
        "times": {"compile_s": loaded.compile_s, "load_s": load_s, "analysis_s": found.seconds},
    }
    if found.counterexample is not None:
        out["counterexample"] = found.counterexample.to_json()
    out["provenance"] = provenance(args, certifier, net_path, loaded, network_preprocessing(net_path, args),
                                   vnnlib=args.vnnlib)
    reads = ", ".join(f"X_{i} {kind}" for i, kind in sorted(found.reads.items())) or "no free input read"
    stopped = "" if found.stopped is None else f", stopped: {found.stopped}"
    lines = [f"certifier {certifier} on {net_path.name}, property {Path(args.vnnlib).name} (not used: {refused.what})",
             f"verdict:   {found.verdict} (enumeration: {found.points} of {found.total} points, {reads}, "
             f"by ONNX Runtime{stopped})",
             f"time:      compile {loaded.compile_s:.3f}s, load {load_s:.3f}s, analysis {found.seconds:.3f}s"]
    return out, lines, None, None
