"""Properties: dataset mode (ERAN CSV + L-inf ball + robustness margins), VNN-LIB, the net manifest.

See :mod:`cfruntime.properties.dataset`, :mod:`cfruntime.properties.vnnlib`,
:mod:`cfruntime.results` (VNN-COMP result files), :mod:`cfruntime.properties.manifest` and
:mod:`cfruntime.properties.preprocessing` (how images become network inputs); the evaluation's epsilons in
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
from cfruntime.properties.manifest import AccuracyCheck, NetEntry, find_entry, load_manifest, shared_dir
from cfruntime.properties.preprocessing import Preprocessing, ResolvedPreprocessing, from_convention, resolve_preprocessing
from cfruntime.properties.paper_eps import PAPER_EPSILON, dataset_csv, load_paper_problem
from cfruntime.results import VERDICTS, Counterexample, confirm_counterexample, read_result, write_result
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
    "AccuracyCheck", "NetEntry", "find_entry", "load_manifest", "shared_dir", "PAPER_EPSILON", "dataset_csv",
    "Preprocessing", "ResolvedPreprocessing", "from_convention", "resolve_preprocessing",
    "load_paper_problem",
    "InputRegion", "VnnlibProperty", "interval_row_lower_bounds", "output_in_disjunct", "parse_vnnlib",
    "region_verified", "to_vnnlib", "verdict",
    "VERDICTS", "Counterexample", "confirm_counterexample", "read_result", "write_result",
]
