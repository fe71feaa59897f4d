"""What a ``cf-run`` result depends on: the ``"provenance"`` object of its JSON.

Enough to run it again and to tell two results apart::

    {"versions": {"cfmlir", "torch", "onnx", "xdsl", "python"},
     "argv": [...],                                    # cf-run's arguments as given
     "certifier": {"name", "file", "sha256"},          # sha256 of the .cf file (a generated deeppoly_p: its text)
     "network": {"file", "sha256"},                    # of the file's bytes as given (.gz included)
     "data": {"file", "sha256"} | "vnnlib": {...},     # the images or the property
     "engine", "sparse", "rewrite", "device", "dtype", "widen", "batch_size",
     "compile_cache": {"hit", "file"},                 # hit: true / false, null for the interpreter
     "preprocessing": {...}}                           # cfruntime.properties.preprocessing (values and sources)
"""

from __future__ import annotations

import hashlib
import platform
from pathlib import Path

#: the distributions whose versions a result records (``cf-run --version`` prints the same)
VERSIONED = ("cfmlir", "torch", "onnx", "xdsl")


def versions() -> dict[str, str]:
    """The installed versions of :data:`VERSIONED` ("not installed" when one is not) and Python's."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in VERSIONED:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    out["python"] = platform.python_version()
    return out


def file_record(path) -> dict:
    """``{"file": absolute path, "sha256": of its bytes}``."""
    from cfruntime.properties.manifest import file_sha256

    p = Path(path)
    return {"file": str(p.resolve()), "sha256": file_sha256(p)}


def certifier_record(certifier: str) -> dict:
    """``{"name", "file", "sha256"}`` of a certifier given by name or path: the file's bytes, or the
    text of a certifier generated from a template (``deeppoly_<p>``; ``file`` is then null)."""
    from cfmlir.compiler import load_certifier_source

    text, file = load_certifier_source(certifier)
    p = Path(file)
    if p.is_file():
        return {"name": str(certifier), **file_record(p)}
    return {"name": str(certifier), "file": None, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def provenance(args, certifier: str, net_path, compiled, preprocessing, *, data=None, vnnlib=None) -> dict:
    """The ``"provenance"`` object of a run: ``args`` (cf-run's parsed options, ``args.argv`` its
    arguments), ``compiled`` (``run_setup.LoadedProgram``), ``preprocessing`` (a
    :class:`~cfruntime.properties.preprocessing.ResolvedPreprocessing`), ``data`` or ``vnnlib`` the input file."""
    compiled_engine = args.engine == "compiled"
    out = {
        "versions": versions(),
        "argv": list(getattr(args, "argv", None) or []),
        "certifier": certifier_record(certifier),
        "network": file_record(net_path),
    }
    if data is not None:
        out["data"] = file_record(data)
    if vnnlib is not None:
        out["vnnlib"] = file_record(vnnlib)
    out.update({
        "engine": args.engine,
        "sparse": (not args.no_sparse) if compiled_engine else None,
        "rewrite": (not args.no_rewrite) if compiled_engine else None,
        "device": args.device if compiled_engine else "cpu",
        "dtype": args.dtype if compiled_engine else "float64",
        "widen": (args.widen == "on" or (args.widen == "auto" and args.dtype != "float64")) if compiled_engine else None,
        "batch_size": args.batch_size if compiled_engine else 1,
        "compile_cache": {"hit": compiled.cache_hit,
                          "file": None if compiled.cache_file is None else str(compiled.cache_file)},
        "preprocessing": preprocessing.to_json(dataset=data is not None),
    })
    return out
