"""Properties: dataset mode (ERAN CSV + L-inf ball + robustness margins), VNN-LIB, the net manifest.

See :mod:`cfruntime.properties.dataset`, :mod:`cfruntime.properties.vnnlib`
and :mod:`cfruntime.properties.manifest`; the evaluation's epsilons in
:mod:`cfruntime.properties.paper_eps`.
"""

from cfruntime.properties.dataset import (
    CONVENTIONS,
    DATASETS,
    EranImages,
    RobustnessProperty,
    images_01,
    linf_box,
    load_eran_csv,
    normalize_dataset_name,
    robustness_property,
    robustness_spec,
    to_network_input,
)
from cfruntime.properties.manifest import AccuracyCheck, NetEntry, load_manifest, shared_dir
from cfruntime.properties.paper_eps import PAPER_EPSILON, dataset_csv, load_paper_problem
from cfruntime.properties.vnnlib import (
    InputRegion,
    VnnlibProperty,
    interval_row_lower_bounds,
    output_in_disjunct,
    parse_vnnlib,
    region_verified,
    to_vnnlib,
    verdict,
)

__all__ = [
    "CONVENTIONS", "DATASETS", "EranImages", "RobustnessProperty", "images_01", "linf_box", "load_eran_csv",
    "normalize_dataset_name", "robustness_property", "robustness_spec", "to_network_input",
    "AccuracyCheck", "NetEntry", "load_manifest", "shared_dir", "PAPER_EPSILON", "dataset_csv",
    "load_paper_problem",
    "InputRegion", "VnnlibProperty", "interval_row_lower_bounds", "output_in_disjunct", "parse_vnnlib",
    "region_verified", "to_vnnlib", "verdict",
]
