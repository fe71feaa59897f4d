"""Dataset-mode properties: ERAN CSV images, L-infinity boxes, robustness margins.

Pipeline (``nets/MANIFEST.json`` ``preprocessing_conventions``)::

    CSV row (label, p0..pD; 0..255; CIFAR rows HWC-interleaved)
      -> images_01:   [N, C, H, W] float64 in [0, 1] (CIFAR: HWC -> CHW)
      -> linf_box:    [clip(x - eps, 0, 1), clip(x + eps, 0, 1)]   (eps in [0,1] pixel units)
      -> to_network_input(convention, input_shape): the net's input space
            'std'            x                       (mean/std Sub/Div are inside the graph)
            'nln_raw255'     255 * x                 (mnist_nln_* nets take raw 0..255 pixels)
            'raw_hwc_buffer' the HWC-ordered values reshaped as the input (only to reproduce a
                             manifest accuracy figure of the CIFAR FC quirk nets)
            a Preprocessing  (pixel/255 - mean) / std per channel, in its layout
                             (:mod:`cfruntime.properties.preprocessing`: every convention is one)

All three maps are monotone increasing per coordinate, so they map boxes to boxes.

The output property is local robustness: margins ``y_true - y_j > 0`` for all
``j != true``.  :func:`robustness_spec` returns ``C`` ``[N, K, K]`` with row
``j`` = ``e_true - e_j`` (row ``true`` is zero), i.e. column ``j`` of the
reported margins is the bound on ``y_true - y_j`` and the sample's own column
is 0.  ``Network.with_margin_layer(C)`` turns it into a final per-sample
affine layer (folded into the last affine layer when there is one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cfruntime.errors import DataError, PropertyError

DATASETS = {
    # name: (pixels per row, image shape CHW, csv layout, classes)
    "mnist": (784, (1, 28, 28), "hw", 10),
    "cifar10": (3072, (3, 32, 32), "hwc", 10),
}
CONVENTIONS = ("std", "nln_raw255", "raw_hwc_buffer")


def normalize_dataset_name(dataset: str) -> str:
    d = str(dataset).lower().replace("-", "").replace("_", "")
    if d in ("mnist",):
        return "mnist"
    if d in ("cifar10", "cifar"):
        return "cifar10"
    raise PropertyError(f"unknown dataset '{dataset}' (expected mnist or cifar10)")


@dataclass
class EranImages:
    """Rows of an ERAN CSV file. ``pixels``: uint8 ``[N, D]`` in file order; ``labels``: int64 ``[N]``;
    ``lines``: 1-based line number of each row."""

    path: str
    dataset: str
    labels: torch.Tensor
    pixels: np.ndarray
    lines: list[int]

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def num_classes(self) -> int:
        return DATASETS[self.dataset][3]

    def images_01(self) -> torch.Tensor:
        return images_01(self.pixels, self.dataset)


def _text_lines(fh, path: Path):
    """The lines of a file opened in binary, decoded; a line that is not UTF-8 text is a
    :class:`DataError` at that line."""
    for lineno, raw in enumerate(fh, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DataError("not a UTF-8 text file (binary data?)", file=path, line=lineno) from None


def load_eran_csv(path: str | Path, dataset: str | None = None, *, start: int = 0, stop: int | None = None) -> EranImages:
    """Read rows ``start..stop-1`` (0-based, ``stop=None``: all) of an ERAN CSV file.

    ``dataset`` (``'mnist'``/``'cifar10'``) fixes the row length; ``None``
    infers it from the first row (785 or 3073 columns).  Every bad row gives
    ``error: <file>:<line>: <what>`` (wrong column count, non-integer value,
    pixel outside 0..255, label outside 0..9).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError("no such data file", file=path)
    ds = None if dataset is None else normalize_dataset_name(dataset)
    labels, rows, lines = [], [], []
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise DataError(f"cannot read ({e.strerror})", file=path) from None
    with fh:
        row_i = -1
        for lineno, line in enumerate(_text_lines(fh, path), start=1):
            text = line.strip()
            if not text:
                continue
            row_i += 1
            if row_i < start:
                continue
            if stop is not None and row_i >= stop:
                break
            fields = [f.strip() for f in text.split(",")]
            if ds is None:
                by_len = {v[0] + 1: k for k, v in DATASETS.items()}
                if len(fields) not in by_len:
                    raise DataError(f"expected 785 (MNIST) or 3073 (CIFAR10) columns, got {len(fields)}", file=path, line=lineno)
                ds = by_len[len(fields)]
            n_pix, _, _, n_cls = DATASETS[ds]
            if len(fields) != n_pix + 1:
                raise DataError(f"expected {n_pix + 1} columns (label + {n_pix} pixels) for {ds}, got {len(fields)}", file=path, line=lineno)
            vals = []
            for col, f in enumerate(fields):
                try:
                    v = int(f)
                except ValueError:
                    try:
                        fv = float(f)
                    except ValueError:
                        fv = None
                    if fv is not None and fv.is_integer():
                        v = int(fv)
                    else:
                        raise DataError(f"column {col + 1}: '{f[:20]}' is not an integer", file=path, line=lineno) from None
                vals.append(v)
            if not 0 <= vals[0] < n_cls:
                raise DataError(f"label {vals[0]} out of range 0..{n_cls - 1}", file=path, line=lineno)
            bad = next((c for c, v in enumerate(vals[1:]) if not 0 <= v <= 255), None)  # Python ints: any size
            if bad is not None:
                shown = str(vals[bad + 1]) if len(str(vals[bad + 1])) <= 20 else str(vals[bad + 1])[:17] + "..."
                raise DataError(f"column {bad + 2}: pixel value {shown} out of range 0..255", file=path, line=lineno)
            pix = np.asarray(vals[1:], dtype=np.int64)
            labels.append(vals[0])
            rows.append(pix.astype(np.uint8))
            lines.append(lineno)
    if not rows:
        raise DataError("no data rows" + (f" in range {start}..{stop}" if start or stop is not None else ""), file=path)
    return EranImages(str(path), ds, torch.tensor(labels, dtype=torch.int64), np.stack(rows), lines)


def images_01(pixels: np.ndarray, dataset: str) -> torch.Tensor:
    """uint8 ``[N, D]`` in CSV order -> float64 ``[N, C, H, W]`` in [0, 1] (CIFAR: HWC -> CHW)."""
    ds = normalize_dataset_name(dataset)
    _, (c, h, w), layout, _ = DATASETS[ds]
    x = torch.from_numpy(np.asarray(pixels, dtype=np.float64) / 255.0)
    if layout == "hwc":
        return x.reshape(-1, h, w, c).permute(0, 3, 1, 2).contiguous()
    return x.reshape(-1, c, h, w)


def linf_box(x01: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """L-infinity ball of radius ``eps`` (pixel units in [0,1]) around ``x01``, clipped to [0,1]."""
    try:
        eps = float(eps)
    except (TypeError, ValueError):
        raise PropertyError(f"epsilon must be a number, got {eps!r}") from None
    if not np.isfinite(eps) or eps < 0:
        raise PropertyError(f"epsilon must be a finite number >= 0, got {eps:g}")
    return (x01 - eps).clamp(0.0, 1.0), (x01 + eps).clamp(0.0, 1.0)


def to_network_input(x01: torch.Tensor, convention, input_shape, dataset: str | None = None) -> torch.Tensor:
    """Map ``[N, C, H, W]`` [0,1] images (CHW order) into the network input space ``[N, *input_shape]``
    (``convention``: a name of :data:`CONVENTIONS` or a :class:`~cfruntime.properties.preprocessing.Preprocessing`)."""
    if not isinstance(convention, str):
        return convention.apply(x01, input_shape)
    input_shape = tuple(int(s) for s in input_shape)
    n = x01.shape[0]
    size = int(np.prod(input_shape))
    if x01[0].numel() != size:
        raise PropertyError(f"images of {x01[0].numel()} values do not fit the network input shape {input_shape}")
    if convention == "std":
        return x01.reshape(n, *input_shape)
    if convention == "nln_raw255":
        return (x01 * 255.0).reshape(n, *input_shape)
    if convention == "raw_hwc_buffer":
        if x01.dim() != 4:
            raise PropertyError("raw_hwc_buffer needs [N, C, H, W] images")
        return x01.permute(0, 2, 3, 1).reshape(n, *input_shape)
    raise PropertyError(f"unknown preprocessing convention '{convention}' (expected one of {', '.join(CONVENTIONS)})")


def robustness_spec(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """``C [N, K, K]`` (``K = num_classes``): row ``j`` = ``e_true - e_j``; the true label's row is 0."""
    labels = torch.as_tensor(labels, dtype=torch.int64).reshape(-1)
    if labels.numel() and (labels.min() < 0 or labels.max() >= num_classes):
        raise PropertyError(f"label out of range 0..{num_classes - 1}")
    n = labels.shape[0]
    eye = torch.eye(num_classes, dtype=torch.float64)
    C = eye[labels].unsqueeze(1).expand(n, num_classes, num_classes) - eye.unsqueeze(0)
    return C.contiguous()


def check_fits(images: EranImages, input_shape, num_classes: int | None, network: str | None = None) -> None:
    """``images`` can be given to a network of ``input_shape`` with ``num_classes`` outputs."""
    net = f"the network {Path(network).name}" if network else "the network"
    values = DATASETS[images.dataset][0]
    shape = tuple(int(s) for s in input_shape)
    if values != int(np.prod(shape)):
        raise PropertyError(f"{images.dataset} images of {values} values do not fit {net}'s input shape {shape} "
                            f"({int(np.prod(shape))} values)", file=images.path)
    if num_classes is not None and len(images):
        bad = torch.nonzero(images.labels >= num_classes).flatten()
        if bad.numel():
            i = int(bad[0])
            raise PropertyError(f"label {int(images.labels[i])} out of range 0..{num_classes - 1}: {net} has "
                                f"{num_classes} outputs", file=images.path, line=images.lines[i])


@dataclass
class RobustnessProperty:
    """Local robustness of ``N`` samples, all in the network input space."""

    x: torch.Tensor  # [N, *input_shape] centre
    lb: torch.Tensor  # [N, *input_shape]
    ub: torch.Tensor
    labels: torch.Tensor  # [N]
    C: torch.Tensor  # [N, K, K]
    eps: float
    convention: str  # a name of CONVENTIONS, or a Preprocessing's description

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def verified(self, margin_lb: torch.Tensor) -> torch.Tensor:
        """``[N]`` bool: every margin ``y_true - y_j`` (j != true) has a lower bound > 0."""
        own = torch.nn.functional.one_hot(self.labels, self.C.shape[1]).bool()
        return torch.where(own, torch.ones_like(margin_lb), margin_lb).gt(0).all(dim=1)


def robustness_property(images: EranImages, eps: float, convention, input_shape,
                        num_classes: int | None = None, network: str | None = None) -> RobustnessProperty:
    """Boxes + margin spec for every image of ``images`` (eps in [0,1] pixel units; ``convention`` as
    in :func:`to_network_input`).  Images that do not fit ``input_shape``, or a label of no class of the
    ``num_classes`` outputs, is a :class:`PropertyError` naming the data file (and its line) and the
    ``network`` (a file name, for the message)."""
    check_fits(images, input_shape, num_classes, network)
    x01 = images.images_01()
    lo, hi = linf_box(x01, eps)
    k = num_classes or images.num_classes
    return RobustnessProperty(
        x=to_network_input(x01, convention, input_shape),
        lb=to_network_input(lo, convention, input_shape),
        ub=to_network_input(hi, convention, input_shape),
        labels=images.labels.clone(),
        C=robustness_spec(images.labels, k),
        eps=float(eps),
        convention=convention if isinstance(convention, str) else convention.describe(),
    )
