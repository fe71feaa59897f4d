"""Branch and bound over any compiled certifier: decide VNN-LIB properties completely on ReLU networks.

::

    import cfmlir
    out = cfmlir.verify_property("deeppoly", "net.onnx", "prop.vnnlib", timeout=60)
    out.verdict, out.counterexample, out.stats["domains"], out.domains_per_second

The modules, one concept each: :mod:`.structure` (what a network offers: split layers, carried layers),
:mod:`.objective` (a region's property as domain values), :mod:`.domains` (domains as tensor rows, the
pool), :mod:`.bounding` (bounding domains with a certifier through the engine's bound overrides),
:mod:`.branching` (BaBSR scores, FSB, input splits), :mod:`.attack` (batched PGD, confirmation),
:mod:`.exact` (the LP deciding a fully split domain), :mod:`.driver` (the loop), :mod:`.options`.
See ``docs/bab.md``.
"""

from __future__ import annotations

from cfmlir.bab.options import BabOptions, BabOutcome

__all__ = ["BabOptions", "BabOutcome", "verify_property"]


def verify_property(certifier, network, prop, *, timeout: float | None = None, options: BabOptions | None = None,
                    device="cpu", dtype="float64", sparse: bool = True, widen=None, check=None) -> BabOutcome:
    """Decide a VNN-LIB property by branch and bound (:mod:`cfmlir.bab.driver`).  ``certifier``: a
    :class:`cfmlir.Certifier` or what :func:`cfmlir.compile` takes (a shipped name, a ``.cf`` path or
    source); ``network``: a :class:`cfmlir.Network`, a :class:`cfruntime.network.Network` or an ONNX path;
    ``prop``: a :class:`cfruntime.properties.VnnlibProperty` or a VNN-LIB path; ``timeout``: seconds from
    now (the answer is ``unknown`` when they are up); ``check``: the soundness check of every batch."""
    import time

    import torch

    from cfmlir import api
    from cfmlir.bab.driver import run_bab

    deadline = None if timeout is None else time.monotonic() + float(timeout)
    cert = certifier if isinstance(certifier, api.Certifier) else api.compile(certifier)
    net = api.load_network(network) if isinstance(network, (str, bytes)) or hasattr(network, "__fspath__") else network
    net = api._raw(net)
    if not hasattr(prop, "regions"):
        prop = api.load_vnnlib(prop, net)
    torch_dtype = dtype if isinstance(dtype, torch.dtype) else {"float64": torch.float64, "float32": torch.float32}[dtype]
    return run_bab(cert.compiled, net, prop, deadline=deadline, options=options, dtype=torch_dtype, device=device,
                   sparse=sparse, widen=widen, check=check)
