"""The paper's evaluation problems, loaded through the public API (:mod:`cfmlir.api`).

A problem is a shared network (by its manifest name, ``../shared/nets/MANIFEST.json``) on the first
``n`` images of its dataset at the paper's epsilon for it (:data:`cfruntime.properties.paper_eps.PAPER_EPSILON`),
with the manifest's preprocessing -- what :func:`cfruntime.properties.load_paper_problem` gives, but as
a :class:`cfmlir.Network` and a property made by :func:`cfmlir.robustness_property`, so that every
bench script certifies them with :func:`cfmlir.certify` (one batching loop, one ``certified``
predicate).  The bench scripts import this module as ``paper_problems`` (they run as
``python bench/SCRIPT.py``, which puts ``bench/`` on the path).
"""

from __future__ import annotations

import sys
from pathlib import Path

from cfruntime.properties.paper_eps import PAPER_EPSILON, dataset_csv

__all__ = ["PAPER_EPSILON", "paper_files", "paper_problem", "paper_batch_size", "user_errors", "error_line", "run_script"]


def paper_files(net_name: str, shared: Path | None = None) -> tuple[Path, Path, float, Path]:
    """``(network file, dataset CSV, epsilon, manifest)`` of a shared network; a FileNotFoundError
    naming the network when ``../shared`` or its manifest entry is missing."""
    from cfruntime.properties.manifest import load_manifest, shared_dir

    shared = shared or shared_dir()
    manifest = None if shared is None else shared / "nets" / "MANIFEST.json"
    entry = None if manifest is None else next((e for e in load_manifest(manifest) if e.path.stem == net_name), None)
    if entry is None or net_name not in PAPER_EPSILON:
        raise FileNotFoundError(f"no shared network '{net_name}' with a paper epsilon (is ../shared there?)")
    return entry.path, shared / "data" / dataset_csv(net_name), PAPER_EPSILON[net_name], manifest


def paper_problem(net_name: str, n: int, shared: Path | None = None):
    """``(cfmlir.Network, robustness property)`` of ``net_name`` on the first ``n`` images."""
    import cfmlir

    path, csv, eps, manifest = paper_files(net_name, shared)
    net = cfmlir.load_network(path, manifest=manifest)
    return net, cfmlir.robustness_property(net, csv, eps, n=n)


def paper_batch_size(net_name: str) -> int:
    """The paper's batch: 10 images for convolutional networks, 100 for fully-connected ones."""
    return 10 if "conv" in net_name.lower() else 100


def user_errors() -> tuple[type[Exception], ...]:
    """What a bad argument of a bench script raises -- an unknown network (FileNotFoundError) or
    certifier (:class:`cfmlir.diagnostics.CfError`), unreadable data
    (:class:`cfruntime.errors.CfRuntimeError`) -- each with a one-line message (:func:`error_line`)."""
    from cfmlir.diagnostics import CfError
    from cfruntime.errors import CfRuntimeError

    return FileNotFoundError, CfError, CfRuntimeError


def error_line(exc: Exception) -> str:
    """The one ``error:`` line of a :func:`user_errors` exception."""
    line = (str(exc).splitlines() or [type(exc).__name__])[0]
    return line if "error: " in line else f"error: {line}"


def run_script(main) -> None:
    """Run a bench script's ``main()`` and exit with the status it returns (0 for None); a
    :func:`user_errors` exception (an unknown network or certifier) is one line on stderr and status 1."""
    try:
        status = main()
    except user_errors() as exc:
        print(error_line(exc), file=sys.stderr)
        sys.exit(1)
    sys.exit(status)
