"""How dataset images become network inputs, and where that choice came from.

A dataset image is ``pixel/255`` in ``[0, 1]``, ``[C, H, W]`` (channel-major; :func:`images_01`).
The network is given, per channel ``c`` (one value: every channel),

    x = (pixel/255 - mean[c]) / std[c]

laid out as ``layout`` -- ``NCHW``: channel-major (ONNX's convention), ``NHWC``: channels interleaved
(the order of an ERAN CSV row) -- and reshaped to the network's input shape.  ``flatten_order`` is how
the network's first Flatten of a ``[N, C, H, W]`` tensor orders the features: ``CHW`` (ONNX semantics)
or ``HWC`` (ERAN's TensorFlow-exported CIFAR fully-connected nets, whose first Gemm expects
channel-interleaved columns; :func:`cfruntime.network.load_onnx` ``hwc_flatten=True``).  ``mean`` and
``std`` act outside the network: a net that normalises inside its graph (leading Sub/Div) takes mean 0
and std 1.  The maps are increasing per coordinate (``std > 0``), so a box of pixels maps to a box.

Every convention of ``nets/MANIFEST.json`` is one setting (:func:`from_convention`):

==========================================  ======  =======  ======  =============
convention                                  mean    std      layout  flatten_order
==========================================  ======  =======  ======  =============
``std`` (pixel/255)                          0       1        NCHW    CHW
``nln_raw255`` (raw 0..255 pixels)           0       1/255    NCHW    CHW
``cifar_fc_hwc_quirk`` (ERAN semantics)      0       1        NCHW    HWC
``raw_hwc_buffer`` (a manifest figure only)  0       1        NHWC    CHW
==========================================  ======  =======  ======  =============

:func:`resolve_preprocessing` takes each field from the user's value (``cf-run --mean/--std/--layout/
--flatten-order``) when given, else from the network's manifest entry
(:func:`cfruntime.properties.manifest.find_entry`: ``--manifest FILE``, else ``MANIFEST.json`` beside
the network, else the source tree's ``../shared/nets/MANIFEST.json``), else the default (the ``std``
row), and records where each came from; :meth:`ResolvedPreprocessing.warning` is the line to print
when the defaults had to be guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from cfruntime.errors import DataError, PropertyError

LAYOUTS = ("NCHW", "NHWC")
FLATTEN_ORDERS = ("CHW", "HWC")
FIELDS = ("mean", "std", "layout", "flatten_order")
#: the ``input.preprocessing`` values of a manifest entry
MANIFEST_CONVENTIONS = ("std", "nln_raw255", "cifar_fc_hwc_quirk")
#: where a field's value came from
FLAGS, MANIFEST, DEFAULT = "flags", "manifest", "default"


@dataclass(frozen=True)
class Preprocessing:
    """``x = (pixel/255 - mean) / std`` per channel, in ``layout``; the network read with ``flatten_order``."""

    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    layout: str = "NCHW"
    flatten_order: str = "CHW"

    def load_kwargs(self) -> dict:
        """Keyword arguments for :func:`cfruntime.network.load_onnx`."""
        return {"hwc_flatten": True} if self.flatten_order == "HWC" else {}

    def check_channels(self, channels: int) -> None:
        """A :class:`PropertyError` unless ``mean`` and ``std`` have 1 or ``channels`` values."""
        for name, vals in (("mean", self.mean), ("std", self.std)):
            if len(vals) not in (1, channels):
                want = "1 value" if channels == 1 else f"1 or {channels} values"
                raise PropertyError(f"--{name} has {len(vals)} values but the images have {channels} channel"
                                    f"{'s' if channels != 1 else ''} (give {want})")

    def apply(self, x01: torch.Tensor, input_shape) -> torch.Tensor:
        """``[N, C, H, W]`` images in [0, 1] -> ``[N, *input_shape]`` network inputs.

        Computed as ``(x - mean) * (1/std)``: with mean 0 and std 1 the images pass unchanged, and with
        std 1/255 the result is exactly ``255 * x``."""
        input_shape = tuple(int(s) for s in input_shape)
        n = x01.shape[0]
        size = math.prod(input_shape)
        if x01[0].numel() != size:
            raise PropertyError(f"images of {x01[0].numel()} values do not fit the network input shape {input_shape}")
        if x01.dim() != 4:
            raise PropertyError("preprocessing needs [N, C, H, W] images")
        self.check_channels(x01.shape[1])
        x = x01
        if any(m != 0.0 for m in self.mean) or any(s != 1.0 for s in self.std):
            mean = torch.tensor(self.mean, dtype=x.dtype).reshape(1, -1, 1, 1)
            scale = torch.tensor([1.0 / s for s in self.std], dtype=x.dtype).reshape(1, -1, 1, 1)
            x = (x - mean) * scale
        if self.layout == "NHWC":
            x = x.permute(0, 2, 3, 1)
        return x.reshape(n, *input_shape)

    def describe(self) -> str:
        """``mean 0, std 1, layout NCHW`` (and ``flatten HWC`` when not CHW)."""
        text = f"mean {_values(self.mean)}, std {_values(self.std)}, layout {self.layout}"
        return text + (f", flatten order {self.flatten_order}" if self.flatten_order != "CHW" else "")

    def to_json(self) -> dict:
        return {"mean": list(self.mean), "std": list(self.std), "layout": self.layout, "flatten_order": self.flatten_order}


def _values(vals) -> str:
    return ",".join(f"{v:g}" for v in vals)


def from_convention(convention: str, *, hwc_flatten: bool = False) -> Preprocessing:
    """The setting of a ``nets/MANIFEST.json`` convention (see the module docstring)."""
    flatten = "HWC" if hwc_flatten else "CHW"
    if convention == "std":
        return Preprocessing(flatten_order=flatten)
    if convention == "nln_raw255":
        return Preprocessing(std=(1.0 / 255.0,), flatten_order=flatten)
    if convention == "raw_hwc_buffer":
        return Preprocessing(layout="NHWC", flatten_order=flatten)
    raise PropertyError(f"unknown preprocessing convention '{convention}' (expected std, nln_raw255 or raw_hwc_buffer)")


def parse_values(text: str, what: str, *, positive: bool = False) -> tuple[float, ...]:
    """``"0.4914,0.4822,0.4465"`` or ``"1/255"`` -> a tuple of finite floats (``positive``: each > 0);
    a :class:`PropertyError` naming ``what`` (e.g. ``--std``) otherwise."""
    parts = [p.strip() for p in str(text).split(",")]
    out = []
    for p in parts:
        try:
            if "/" in p:
                num, den = p.split("/", 1)
                v = float(num) / float(den)
            else:
                v = float(p)
        except (ValueError, ZeroDivisionError):
            raise PropertyError(f"{what}: '{p}' is not a number (give one value or one per channel, comma-separated; "
                                f"a fraction such as 1/255 is allowed)") from None
        if not math.isfinite(v):
            raise PropertyError(f"{what}: '{p}' is not a finite number")
        if positive and v <= 0:
            raise PropertyError(f"{what}: {p} must be positive (x = (pixel/255 - mean) / std)")
        out.append(v)
    return tuple(out)


@dataclass
class ResolvedPreprocessing:
    """A :class:`Preprocessing` and where each field came from (``source``: field -> ``flags``,
    ``manifest`` or ``default``); ``manifest`` is the file whose entry (``entry``, of ``convention``)
    was used, ``searched`` the manifests read, ``note`` why a same-named entry was not used."""

    value: Preprocessing
    source: dict
    manifest: Path | None = None
    entry: str | None = None
    convention: str | None = None
    searched: list = field(default_factory=list)
    note: str | None = None

    def defaulted(self, channels: int) -> list[str]:
        """The fields of the image mapping (mean, std; layout when the images have several channels)
        that neither the user nor a manifest gave."""
        fields = ["mean", "std"] + (["layout"] if channels > 1 else [])
        return [f for f in fields if self.source[f] == DEFAULT]

    def warning(self, network: str | Path, channels: int) -> str | None:
        """The one ``warning:`` line for a guessed preprocessing, or None when nothing was guessed."""
        guessed = self.defaulted(channels)
        if not guessed:
            return None
        v = self.value
        shown = {"mean": f"mean {_values(v.mean)}", "std": f"std {_values(v.std)}", "layout": f"layout {v.layout}"}
        where = ("the network is not listed in " + ", ".join(str(m) for m in self.searched)) if self.searched \
            else "no manifest found"
        if self.note:
            where += f" ({self.note})"
        flags = "/".join(f"--{f}" for f in guessed)
        return (f"warning: {Path(str(network)).name}: {flags} not given and {where}; using the default "
                f"{', '.join(shown[f] for f in guessed)} (x = (pixel/255 - mean) / std), which may be wrong for this "
                f"network: give --mean/--std/--layout or --manifest FILE")

    def to_json(self, dataset: bool = True) -> dict:
        """The provenance's ``preprocessing`` object; ``dataset=False`` (VNN-LIB boxes are in the
        network's input space): the flatten order only."""
        fields = FIELDS if dataset else ("flatten_order",)
        full = self.value.to_json()
        out = {f: full[f] for f in fields}
        out["from"] = {f: self.source[f] for f in fields}
        out["manifest"] = None if self.manifest is None else str(Path(self.manifest).resolve())
        out["manifest_convention"] = self.convention
        return out


def resolve_preprocessing(net_path: str | Path, *, mean=None, std=None, layout=None, flatten_order=None,
                          manifest: str | Path | None = None, use_manifest: bool = True) -> ResolvedPreprocessing:
    """Each field from its argument when not None (parsed values: tuples of floats, upper-case
    names), else from the network's manifest entry (see the module docstring; ``use_manifest=False``:
    none is looked for), else the default."""
    given = {"mean": mean, "std": std, "layout": layout, "flatten_order": flatten_order}
    base, lookup, convention = Preprocessing(), None, None
    if use_manifest and (manifest is not None or any(v is None for v in given.values())):
        from cfruntime.properties.manifest import find_entry

        lookup = find_entry(net_path, manifest)
        if lookup.entry is not None and lookup.entry.preprocessing not in MANIFEST_CONVENTIONS:
            raise DataError(f"entry '{lookup.entry.file}': unknown preprocessing convention "
                            f"'{lookup.entry.preprocessing}' (expected {', '.join(MANIFEST_CONVENTIONS)})",
                            file=lookup.manifest)
        if lookup.entry is not None:
            entry, convention = lookup.entry, lookup.entry.preprocessing
            semantics = entry.default_semantics()  # the CIFAR HWC nets: 'intended' (read HWC)
            base = from_convention(entry.convention(semantics), hwc_flatten=bool(entry.load_kwargs(semantics).get("hwc_flatten")))
    found = lookup is not None and lookup.entry is not None
    values, source = {}, {}
    for f, v in given.items():
        if v is not None:
            values[f], source[f] = v, FLAGS
        else:
            values[f], source[f] = getattr(base, f), MANIFEST if found else DEFAULT
    return ResolvedPreprocessing(
        Preprocessing(**values), source,
        manifest=lookup.manifest if found else None,
        entry=lookup.entry.file if found else None,
        convention=convention,
        searched=list(lookup.searched) if lookup is not None else [],
        note=lookup.note if lookup is not None else None,
    )
