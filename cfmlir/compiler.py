"""The compiler driver: ConstraintFlow source -> emitted Python module, with an on-disk cache.

``compile_certifier(text, file, pipeline)`` runs the frontend (parse, type check, lower to ``cf``),
the pass pipeline (``--shape-analysis`` and the rewrites, see :mod:`cfmlir.passes.pipeline`) and the
Python emission, and returns a loaded :class:`~cfruntime.flow.engine.CompiledCertifier`.  Emitted
modules are cached under ``$CFMLIR_CACHE_DIR`` (default ``~/.cache/cfmlir``) by the hash of the source,
the pipeline and the compiler itself (:func:`compiler_fingerprint`); :func:`compile_certifier_cached`
also says whether the cache was hit.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from cfmlir.diagnostics import CfError, Loc
from cfmlir.passes.pipeline import DEFAULT_PIPELINE, NO_REWRITE_PIPELINE, run_pipeline

COMPILER_VERSION = "0.1.0"


def compiler_fingerprint() -> str:
    """A hash of the compiler's own code (frontend, dialects, passes) and version: part of the cache
    key, so an edited compiler never reuses modules emitted by an older one."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        import cfmlir.dialects.cf
        import cfmlir.passes.pipeline

        h = hashlib.sha256(COMPILER_VERSION.encode())
        # the folders of modules, not of packages: run beside a clone named ``cfmlir``, ``import
        # cfmlir`` finds that folder as a namespace package, which has no ``__file__``
        here = Path(__file__).resolve().parent
        for root in (here, Path(cfmlir.dialects.cf.__file__).resolve().parent,
                     Path(cfmlir.passes.pipeline.__file__).resolve().parent):
            files = sorted(root.rglob("*.py")) if root != here else sorted(
                p for p in root.rglob("*.py") if "certifiers" not in p.parts)
            for f in files:
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
        _FINGERPRINT = h.hexdigest()[:16]
    return _FINGERPRINT


_FINGERPRINT: str | None = None


def cache_dir() -> Path:
    return Path(os.environ.get("CFMLIR_CACHE_DIR", Path.home() / ".cache" / "cfmlir"))


def load_certifier_source(name_or_path: str) -> tuple[str, str]:
    """``(text, file)`` of a shipped certifier name or a path to a ``.cf`` file."""
    from cfmlir.certifiers import certifier_names, certifier_source

    path = Path(name_or_path)
    if path.suffix == ".cf" or path.exists():
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise CfError(Loc(str(path), 0, 0), f"cannot read certifier: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return certifier_source(name_or_path)
    except KeyError:
        known = ", ".join(certifier_names())
        raise CfError(Loc("", 0, 0), f"unknown certifier '{name_or_path}' (shipped: {known})") from None


def emit_certifier(text: str, file: str, pipeline=DEFAULT_PIPELINE) -> str:
    """The Python source of a certifier compiled with ``pipeline``."""
    from cfmlir.frontend import compile_to_cf
    from cfmlir.passes.emit_python import emit_python

    module = compile_to_cf(text, file)
    run_pipeline(module, pipeline)
    module.verify()
    digest = hashlib.sha256(text.encode()).hexdigest()
    return emit_python(module, source=Path(file).name, digest=digest, pipeline=",".join(pipeline))


@dataclass
class Compiled:
    """A loaded certifier and how it was obtained: ``cache_hit`` True when the emitted module was read
    from ``cache_file``, False when it was compiled now, None when the cache was not used."""

    certifier: object  # cfruntime.flow.engine.CompiledCertifier
    cache_hit: bool | None
    cache_file: Path | None


def compile_certifier_cached(text: str, file: str, pipeline=DEFAULT_PIPELINE, use_cache: bool = True) -> Compiled:
    """Compile (or fetch from the cache) and load a certifier; say which it was."""
    from cfruntime.flow.engine import CompiledCertifier

    key = hashlib.sha256("\0".join((compiler_fingerprint(), ",".join(pipeline), text)).encode()).hexdigest()[:32]
    name = Path(file).stem
    path = cache_dir() / f"{name}-{key}.py"
    source = None
    if use_cache and path.exists():
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            source = None  # an unreadable cache entry is compiled again
    hit = source is not None
    if source is None:
        source = emit_certifier(text, file, pipeline)
        if use_cache:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(source, encoding="utf-8")
                tmp.replace(path)
            except OSError:
                pass  # a read-only home is no reason to fail
    return Compiled(CompiledCertifier.from_source(name, source, file), hit if use_cache else None,
                    path if use_cache else None)


def compile_certifier(text: str, file: str, pipeline=DEFAULT_PIPELINE, use_cache: bool = True):
    """Compile (or fetch from the cache) and load a certifier."""
    return compile_certifier_cached(text, file, pipeline, use_cache).certifier


def pipeline_for(rewrite: bool) -> tuple[str, ...]:
    return DEFAULT_PIPELINE if rewrite else NO_REWRITE_PIPELINE
