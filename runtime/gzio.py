"""Reading input files that may be gzip-compressed (VNN-COMP ships ``.onnx.gz`` and ``.vnnlib.gz``).

A file is treated as gzip when it starts with the gzip magic bytes ``1f 8b`` (whatever its name),
so ``net.onnx.gz``, and a compressed file renamed to ``net.onnx``, both load transparently; any
other file is read as it is.  Corrupt or truncated gzip data raises :class:`OSError` with a
one-line reason (callers turn it into their ``error: <file>: ...`` line).
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
#: refuse to inflate more than this (a gzip bomb, or a wrong file, must not exhaust memory)
MAX_INFLATED_BYTES = 16 << 30
#: inflate this many bytes at a time (a single ``read(MAX_INFLATED_BYTES + 1)`` reserves 16 GiB of address
#: space, which a process under a data limit, :mod:`cfruntime.memory_limit`, is refused)
CHUNK_BYTES = 64 << 20


def is_gzip(path: str | Path) -> bool:
    """True when ``path`` starts with the gzip magic bytes."""
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def read_bytes(path: str | Path) -> bytes:
    """The content of ``path``, decompressed when it is gzip data."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        return _inflate(data)
    except _TooLarge as e:
        raise OSError(str(e)) from None
    except (OSError, EOFError, zlib.error) as e:
        raise OSError(f"corrupt gzip data ({type(e).__name__}: {' '.join(str(e).split()) or 'truncated'})") from None


def _inflate(data: bytes) -> bytes:
    """``data`` decompressed, :data:`CHUNK_BYTES` at a time, at most :data:`MAX_INFLATED_BYTES`."""
    parts, total = [], 0
    with gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as g:
        while chunk := g.read(CHUNK_BYTES):
            total += len(chunk)
            if total > MAX_INFLATED_BYTES:
                raise _TooLarge(f"gzip data inflates to more than {MAX_INFLATED_BYTES >> 30} GiB")
            parts.append(chunk)
    return b"".join(parts)


class _TooLarge(Exception):
    """Inflated data past :data:`MAX_INFLATED_BYTES` (not a corruption: reported as it is)."""


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    """The text of ``path`` (decompressed when it is gzip data); :class:`UnicodeDecodeError` for binary data."""
    return read_bytes(path).decode(encoding)


def existing(path: str | Path) -> Path:
    """``path``, or ``path.gz`` when only the compressed file exists (VNN-COMP's ``instances.csv`` names
    ``onnx/net.onnx`` while the repository ships ``onnx/net.onnx.gz``)."""
    p = Path(path)
    if not p.exists():
        gz = p.with_name(p.name + ".gz")
        if gz.is_file():
            return gz
    return p

