"""``cf-run``'s command line: the flags (:func:`build_parser`), their defaults and the checks of their
values (eps, timeout, preprocessing flags); :class:`UsageError` for a bad combination.  Shared by
:mod:`cfmlir.tools.cf_run` and :mod:`cfmlir.tools.instances` (whose Ray tasks rebuild the arguments)."""

from __future__ import annotations

import argparse
import math

from cfmlir.tools.arg_errors import one_line_errors
from cfruntime.errors import UserError


ENGINES = ("interpreter", "compiled")
#: ``--layout`` and ``--flatten-order`` values (cfruntime.properties.preprocessing, which imports torch)
LAYOUTS = ("NCHW", "NHWC")
FLATTEN_ORDERS = ("CHW", "HWC")
DEFAULT_CERTIFIER = "deeppoly"
DEFAULT_EPS = 0.005
#: exit status of a run whose bounds the soundness check refuted
EXIT_UNSOUND = 3
DEFAULT_CHECK_TOL = 1e-6


class UsageError(UserError):
    """A bad combination of options (one-line message; printed as ``error: ...``)."""


def _version() -> str:
    """``cf-run (cfmlir X) with torch Y, onnx Z, xdsl W`` from the installed distributions."""
    from cfmlir.tools.provenance import versions

    v = versions()
    return f"cf-run (cfmlir {v['cfmlir']}) with torch {v['torch']}, onnx {v['onnx']}, xdsl {v['xdsl']}"


def _upper(text: str) -> str:
    return str(text).strip().upper()


def build_parser() -> argparse.ArgumentParser:
    p = one_line_errors(argparse.ArgumentParser(
        prog="cf-run",
        description="Certify a network with a ConstraintFlow certifier (local robustness or a VNN-LIB property). "
                    "With no arguments: deeppoly on the shipped MNIST 3x50 net and 10 images at eps 0.005.",
    ))
    p.add_argument("--version", action="version", version=_version())
    p.add_argument("--certifier", default=None, help=f"shipped certifier name or path to a .cf file (default {DEFAULT_CERTIFIER})")
    p.add_argument("--net", default=None, help="ONNX network (default: the shipped mnist_relu_3_50.onnx)")
    p.add_argument("--data", default=None, help="ERAN CSV file of test images (label, pixels 0..255)")
    p.add_argument("--eps", default=None, help="L-infinity radius in [0,1] pixel units (dataset mode)")
    p.add_argument("--n", type=int, default=None, help="certify only the first N rows of --data")
    p.add_argument("--vnnlib", default=None, help="VNN-LIB property file (instead of --data/--eps)")
    p.add_argument("--dataset", choices=("mnist", "cifar10"), default=None,
                   help="dataset of --data (default: detected from the row length)")
    p.add_argument("--engine", choices=ENGINES, default="compiled", help="analysis engine (default: compiled)")
    p.add_argument("--no-sparse", action="store_true", help="compiled engine: dense torch tensors instead of g-BSCR")
    p.add_argument("--no-rewrite", action="store_true", help="compiled engine: compile without the domain rewrites")
    p.add_argument("--batch-size", type=int, default=100, help="compiled engine: properties per batch (default 100)")
    p.add_argument("--device", default="cpu", help="compiled engine: torch device (default cpu)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                   help="compiled engine: floating-point type (default float64)")
    p.add_argument("--widen", choices=("auto", "on", "off"), default="auto",
                   help="compiled engine: widen every bound by a rigorous bound of its rounding errors, so that "
                        "it holds for the real-valued network (auto: on for float32, off for float64; off gives "
                        "raw float32 bounds, which rounding can make unsound by ~1e-5)")
    p.add_argument("--check", dest="check", action="store_true", default=None,
                   help="check the computed bounds of every layer empirically (samples, box vertices, PGD); a value "
                        "outside its bounds certifies nothing and exits with status 3 (default: on for a .cf file, "
                        "off for a shipped certifier given by name)")
    p.add_argument("--no-check", dest="check", action="store_false", help="no soundness check")
    p.add_argument("--check-tol", default=None, metavar="TOL",
                   help=f"relative tolerance of the check: a value v violates lower bound l if v < l - TOL*max(1,|l|) "
                        f"(default {DEFAULT_CHECK_TOL:g})")
    p.add_argument("--json", default=None, metavar="OUT", help="write the results as JSON to OUT")
    p.add_argument("--layer-bounds", action="store_true",
                   help="dataset mode, with --json: add every layer's lower/upper bounds per sample to the JSON "
                        "(\"layer_bounds\": {layer: {\"lower\": [...], \"upper\": [...]}})")
    p.add_argument("--timeout", default=None, metavar="S",
                   help="VNN-LIB: stop an instance after S seconds (verdict 'timeout'); with --instances it replaces "
                        "the timeout column of the CSV")
    p.add_argument("--split", choices=("auto", "on", "off"), default="auto",
                   help="VNN-LIB: when one pass leaves a property unknown, split the input box in halves and analyse "
                        "them until it is decided, --max-boxes are analysed or the time is up (auto: with the compiled "
                        "engine when at most 16 inputs vary, e.g. ACAS Xu; cfmlir.input_splitting)")
    p.add_argument("--max-boxes", default=None, type=_positive_int, metavar="N",
                   help="VNN-LIB: the most sub-boxes --split (or subdomains --bab) analyses (default 20000 without a "
                        "time limit; under --timeout or --instances 1000000: the time limit governs)")
    p.add_argument("--bab", choices=("auto", "on", "off"), default="auto",
                   help="VNN-LIB: when one pass leaves a property unknown, decide it by branch and bound (ReLU splits, "
                        "or input splits when at most 16 inputs vary; cfmlir.bab) instead of --split (auto: with the "
                        "compiled engine under a time limit, --timeout or --instances; see docs/bab.md)")
    p.add_argument("--bab-branching", choices=("auto", "relu", "input"), default="auto",
                   help="VNN-LIB, --bab: split ReLU neurons, input dimensions, or choose by the inputs that vary (auto)")
    p.add_argument("--results", default=None, metavar="OUT",
                   help="VNN-LIB: write the VNN-COMP result file (verdict, and the counterexample for sat) to OUT; "
                        "with --instances: the results CSV (onnx,vnnlib,verdict,seconds), result files in OUT_results/")
    p.add_argument("--instances", default=None, metavar="CSV",
                   help="run every instance (onnx,vnnlib,timeout; paths relative to the CSV's folder) of a VNN-COMP "
                        "benchmark's instances.csv")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="run the batches (dataset mode) or the instances (--instances) as tasks of a Ray cluster: "
                        "the one at ADDRESS (HOST:PORT of `ray start --head`), or a local one when no ADDRESS is "
                        "given; needs cfmlir[ray]")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    pre = p.add_argument_group(
        "preprocessing", "how dataset images become network inputs: x = (pixel/255 - mean) / std per channel; a value "
                         "not given here comes from the network's manifest entry, else from the default (with a warning)")
    pre.add_argument("--mean", default=None, metavar="M[,M,M]",
                     help="mean subtracted from pixel/255, one value or one per channel (default 0)")
    pre.add_argument("--std", default=None, metavar="S[,S,S]",
                     help="divisor after the mean, > 0, one value or one per channel; 1/255 gives raw 0..255 pixels "
                          "(default 1)")
    pre.add_argument("--layout", type=_upper, choices=LAYOUTS, default=None,
                     help="order of the values given to the network: NCHW (channel-major, default) or NHWC "
                          "(channels interleaved)")
    pre.add_argument("--flatten-order", type=_upper, choices=FLATTEN_ORDERS, default=None,
                     help="how the network's first Flatten orders a [C,H,W] tensor: CHW (ONNX, default) or HWC "
                          "(ERAN's CIFAR fully-connected nets); applies to VNN-LIB mode too")
    pre.add_argument("--manifest", default=None, metavar="FILE",
                     help="read the network's preprocessing from this MANIFEST.json (default: MANIFEST.json beside "
                          "the network, else ../shared/nets/MANIFEST.json of the source tree)")
    return p


def preprocessing_flags(args) -> dict:
    """The preprocessing fields given on the command line, parsed (None where not given); a bad value
    is a one-line error."""
    from cfruntime.properties.preprocessing import parse_values

    mean, std = getattr(args, "mean", None), getattr(args, "std", None)
    return {"mean": None if mean is None else parse_values(mean, "--mean"),
            "std": None if std is None else parse_values(std, "--std", positive=True),
            "layout": getattr(args, "layout", None), "flatten_order": getattr(args, "flatten_order", None)}


def check_preprocessing_flags(args) -> None:
    """Reject bad preprocessing flags (values, a manifest that cannot be read, image flags outside
    dataset mode) before anything is compiled."""
    image_flags = [f"--{n}" for n in ("mean", "std", "layout") if getattr(args, n, None) is not None]
    if image_flags and (args.vnnlib is not None or args.instances is not None):
        verb = "applies" if len(image_flags) == 1 else "apply"
        raise UsageError(f"{', '.join(image_flags)} {verb} to dataset mode (--data) only: VNN-LIB boxes are in the "
                         "network's input space")
    preprocessing_flags(args)
    if args.manifest is not None:
        from cfruntime.properties import load_manifest

        load_manifest(args.manifest)


def _positive_int(text) -> int:
    """argparse type: a positive integer (its error is cf-run's one usage line)."""
    try:
        n = int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be a positive integer, got '{text}'") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return n


def parse_eps(text) -> float:
    try:
        eps = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--eps must be a number, got '{text}'") from None
    if not math.isfinite(eps) or not 0 <= eps <= 1:
        raise UsageError(f"--eps must be in [0, 1] (pixel units), got {text}")
    return eps


def parse_timeout(text) -> float:
    try:
        t = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--timeout must be a number of seconds, got '{text}'") from None
    if not math.isfinite(t) or t <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {text}")
    return t
