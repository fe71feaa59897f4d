"""Reader for ``shared/nets/MANIFEST.json`` (the corpus of real networks).

For every net: its path, dataset, preprocessing convention, input shape and
layout, and the accuracy figures the manifest records, normalised into
:class:`AccuracyCheck` (which CSV file, which rows, which semantics, which
expected accuracy), e.g.

* ``first100``                    -> ``data/<mnist|cifar10>_test.csv`` rows 0..99
* ``first1000``                   -> ``data/mnist_test_1000.csv`` rows 0..999
* ``heldout_rows800_999``         -> ``data/mnist_test_1000.csv`` rows 800..999
* ``train_rows0_799``             -> ``data/mnist_test_1000.csv`` rows 0..799
* ``first100_training_images``    -> ``data/cifar10_test.csv`` rows 0..99
* ``first100_intended_semantics`` -> rows 0..99, the net loaded with ``hwc_flatten=True``
* ``first100_standard_NCHW_feed`` -> rows 0..99, standard ONNX semantics
* ``first100_raw_HWC_buffer_as_NCHW`` -> rows 0..99, HWC values fed as NCHW

(``pgd20_*`` figures are adversarial accuracies, not checked here.)

:func:`find_entry` finds a network's entry: in a manifest given by path, else in ``MANIFEST.json``
beside the network file, else in the source tree's ``../shared/nets/MANIFEST.json``.  An entry is the
network's when its recorded ``sha256`` equals the file's content (whatever the file is called), or,
for an entry without a ``sha256``, when the file names agree (a ``.gz`` suffix ignored).  A file that
has an entry's name but other content is not that network.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from cfruntime.errors import DataError

REPO_ROOT = Path(__file__).resolve().parents[2]


def shared_dir(repo_root: str | Path | None = None) -> Path | None:
    """``<repo_root>/../shared`` if it exists (the CI layout), else None."""
    root = Path(repo_root) if repo_root is not None else REPO_ROOT
    d = root.parent / "shared"
    return d if (d / "nets" / "MANIFEST.json").is_file() else None


@dataclass
class AccuracyCheck:
    key: str
    data_file: Path
    start: int
    stop: int
    expected: float
    semantics: str = "standard"  # 'standard' | 'intended' | 'raw_hwc_buffer'
    ties: int | None = None

    @property
    def rows(self) -> int:
        return self.stop - self.start


@dataclass
class NetEntry:
    file: str
    path: Path
    dataset: str  # 'mnist' | 'cifar10'
    preprocessing: str  # 'std' | 'nln_raw255' | 'cifar_fc_hwc_quirk'
    input_shape: tuple  # without batch
    layout: str
    dynamic_batch: bool
    output_kind: str
    accuracy_checks: list[AccuracyCheck] = field(default_factory=list)
    raw: dict = field(default_factory=dict)
    sha256: str | None = None  # of the file's content, when the manifest records it

    @property
    def name(self) -> str:
        return self.file[:-5] if self.file.endswith(".onnx") else self.file

    def convention(self, semantics: str = "standard") -> str:
        """Input preprocessing convention (see :mod:`cfruntime.properties.dataset`)."""
        if semantics == "raw_hwc_buffer":
            return "raw_hwc_buffer"
        return "nln_raw255" if self.preprocessing == "nln_raw255" else "std"

    def load_kwargs(self, semantics: str = "standard") -> dict:
        """Keyword arguments for :func:`cfruntime.network.load_onnx`."""
        return {"hwc_flatten": True} if semantics == "intended" else {}

    def default_semantics(self) -> str:
        """'intended' for the CIFAR FC HWC-quirk nets (ERAN semantics), else 'standard'."""
        return "intended" if self.preprocessing == "cifar_fc_hwc_quirk" else "standard"


_SEMANTICS = {
    "first100_intended_semantics": "intended",
    "first100_standard_NCHW_feed": "standard",
    "first100_raw_HWC_buffer_as_NCHW": "raw_hwc_buffer",
}


def _checks(acc: dict, dataset: str, data_dir: Path) -> list[AccuracyCheck]:
    small = data_dir / ("mnist_test.csv" if dataset == "mnist" else "cifar10_test.csv")
    big = data_dir / "mnist_test_1000.csv"
    out = []
    for key, val in acc.items():
        if not isinstance(val, (int, float)) or key.startswith("argmax_ties") or key.startswith("pgd"):
            continue
        if key in ("first100", "first100_training_images") or key in _SEMANTICS:
            ties = acc.get("argmax_ties_first100")
            out.append(AccuracyCheck(key, small, 0, 100, float(val), _SEMANTICS.get(key, "standard"), ties))
        elif key == "first1000":
            out.append(AccuracyCheck(key, big, 0, 1000, float(val), "standard", acc.get("argmax_ties_first1000")))
        elif key == "heldout_rows800_999":
            out.append(AccuracyCheck(key, big, 800, 1000, float(val), "standard", acc.get("argmax_ties_heldout")))
        elif key == "train_rows0_799":
            out.append(AccuracyCheck(key, big, 0, 800, float(val), "standard", None))
    return out


def load_manifest(path: str | Path | None = None) -> list[NetEntry]:
    """Entries of MANIFEST.json (default: ``<repo>/../shared/nets/MANIFEST.json``); a file that cannot
    be read or is not a manifest (a JSON object with a ``nets`` list of objects naming a ``file``) is a
    :class:`DataError`."""
    if path is None:
        sd = shared_dir()
        if sd is None:
            raise DataError("no shared network corpus found (expected ../shared/nets/MANIFEST.json next to the repository)")
        path = sd / "nets" / "MANIFEST.json"
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        why = getattr(e, "strerror", None) or e
        raise DataError(f"cannot read manifest ({why})", file=path) from None
    nets_dir = path.parent
    data_dir = nets_dir.parent / "data"
    if not isinstance(doc, dict) or not isinstance(doc.get("nets"), list):
        raise DataError("not a network manifest (expected a JSON object with a \"nets\" list)", file=path)
    out = []
    for i, n in enumerate(doc["nets"]):
        try:
            if not isinstance(n.get("file"), str):
                raise TypeError("no \"file\" name")
            ds = str(n.get("dataset", "")).lower().replace("-", "")
            inp = n.get("input") or {}
            out.append(NetEntry(
                file=n["file"], path=nets_dir / n["file"], dataset=ds, preprocessing=inp.get("preprocessing", "std"),
                input_shape=tuple(inp.get("shape", [])[1:]), layout=inp.get("layout", "NCHW"),
                dynamic_batch=bool(inp.get("dynamic_batch", False)), output_kind=(n.get("output") or {}).get("kind", ""),
                accuracy_checks=_checks(n.get("accuracy") or {}, ds, data_dir), raw=n,
                sha256=n["sha256"].lower() if isinstance(n.get("sha256"), str) else None,
            ))
        except (AttributeError, TypeError, KeyError, ValueError) as e:
            raise DataError(f"not a network manifest (entry {i} of \"nets\": {e})", file=path) from None
    return out


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int, content: bool) -> str:
    if content:
        from cfruntime.gzio import read_bytes

        return hashlib.sha256(read_bytes(path)).hexdigest()
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_sha256(path: str | Path, *, content: bool = False) -> str:
    """The sha256 of a file's bytes (``content``: of its content, gzip data decompressed); remembered
    per (path, size, modification time), so a network used by many properties is read once."""
    st = Path(path).stat()
    return _sha256(str(Path(path).resolve()), st.st_size, st.st_mtime_ns, content)


def _bare_name(path: Path) -> str:
    return path.name[:-3] if path.name.endswith(".gz") else path.name


@dataclass
class EntryLookup:
    """What :func:`find_entry` found: the ``entry`` (or None), the ``manifest`` it is in, the manifests
    ``searched``, and a ``note`` when a manifest lists another file of the network's name."""

    entry: NetEntry | None
    manifest: Path | None
    searched: list[Path] = field(default_factory=list)
    note: str | None = None


def _match(entries: list[NetEntry], net_path: Path, digest: str) -> tuple[NetEntry | None, bool]:
    """The entry of the network (by content, else by name where no hash is recorded), and whether an
    entry of that name with another hash was passed over."""
    name = _bare_name(net_path)
    for e in entries:
        if e.sha256 is not None and e.sha256 == digest:
            return e, False
    other = False
    for e in entries:
        if _bare_name(Path(e.file)) == name:
            if e.sha256 is None:
                return e, False
            other = True
    return None, other


def default_manifests(net_path: str | Path) -> list[Path]:
    """Where a network's entry is looked for without ``--manifest``: ``MANIFEST.json`` beside it, then
    the source tree's ``../shared/nets/MANIFEST.json`` (when there is one)."""
    out = [Path(net_path).parent / "MANIFEST.json"]
    sd = shared_dir()
    if sd is not None:
        out.append(sd / "nets" / "MANIFEST.json")
    seen, uniq = set(), []
    for p in out:
        key = p.resolve() if p.exists() else p
        if key not in seen:
            seen.add(key)
            uniq.append(p)
    return uniq


def find_entry(net_path: str | Path, manifest: str | Path | None = None) -> EntryLookup:
    """The manifest entry of the network file ``net_path``.  With ``manifest``, only that file is
    read (a :class:`DataError` when it cannot be); else :func:`default_manifests`, where a file that is
    missing or unreadable is skipped."""
    net_path = Path(net_path)
    digest = file_sha256(net_path, content=True)
    candidates = [Path(manifest)] if manifest is not None else default_manifests(net_path)
    searched, note = [], None
    for m in candidates:
        if manifest is None and not m.is_file():
            continue
        try:
            entries = load_manifest(m)
        except DataError:
            if manifest is not None:
                raise
            continue
        searched.append(m)
        entry, other = _match(entries, net_path, digest)
        if entry is not None:
            return EntryLookup(entry, m, searched)
        if other and note is None:
            note = f"{m} lists a different file named {_bare_name(net_path)} (sha256 differs)"
    return EntryLookup(None, None, searched, note)
