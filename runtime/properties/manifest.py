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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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
    """Entries of MANIFEST.json (default: ``<repo>/../shared/nets/MANIFEST.json``)."""
    if path is None:
        sd = shared_dir()
        if sd is None:
            raise DataError("no shared network corpus found (expected ../shared/nets/MANIFEST.json next to the repository)")
        path = sd / "nets" / "MANIFEST.json"
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise DataError(f"cannot read manifest ({e})", file=path) from None
    nets_dir = path.parent
    data_dir = nets_dir.parent / "data"
    out = []
    for n in doc.get("nets", []):
        ds = n["dataset"].lower().replace("-", "")
        inp = n.get("input", {})
        out.append(NetEntry(
            file=n["file"], path=nets_dir / n["file"], dataset=ds, preprocessing=inp.get("preprocessing", "std"),
            input_shape=tuple(inp.get("shape", [])[1:]), layout=inp.get("layout", "NCHW"),
            dynamic_batch=bool(inp.get("dynamic_batch", False)), output_kind=n.get("output", {}).get("kind", ""),
            accuracy_checks=_checks(n.get("accuracy", {}), ds, data_dir), raw=n,
        ))
    return out
