"""``cfruntime.gzio``: gzip data inflated a chunk at a time, with a ceiling."""

from __future__ import annotations

import gzip

import pytest

from cfruntime import gzio


def test_gzip_data_is_inflated_in_chunks_and_refused_past_the_ceiling(tmp_path, monkeypatch):
    """The content comes back whole across chunk boundaries (a chunk smaller than the data); past
    ``MAX_INFLATED_BYTES`` an ``OSError`` says so (a gzip bomb does not fill memory); plain files as they are."""
    data = bytes(range(256)) * 1000
    packed = tmp_path / "x.onnx.gz"
    packed.write_bytes(gzip.compress(data))
    plain = tmp_path / "x.onnx"
    plain.write_bytes(data)
    monkeypatch.setattr(gzio, "CHUNK_BYTES", 1000)
    assert gzio.read_bytes(packed) == data == gzio.read_bytes(plain)
    monkeypatch.setattr(gzio, "MAX_INFLATED_BYTES", len(data) - 1)
    with pytest.raises(OSError, match="inflates to more than"):
        gzio.read_bytes(packed)
    monkeypatch.setattr(gzio, "MAX_INFLATED_BYTES", len(data))
    assert gzio.read_bytes(packed) == data


def test_corrupt_gzip_data_is_one_oserror(tmp_path):
    bad = tmp_path / "x.onnx.gz"
    bad.write_bytes(gzip.compress(b"abc" * 100)[:-12])
    with pytest.raises(OSError, match="corrupt gzip data"):
        gzio.read_bytes(bad)
