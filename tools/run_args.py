"""``cf-run``'s command line: the flags (:func:`build_parser`), their defaults and the checks of their
values and combinations (:func:`check_options`, :func:`check_preprocessing_flags`; the value checks are
the API's, :mod:`cfmlir.api_args`); :class:`UsageError` for a bad value or combination.  Shared by
:mod:`cfmlir.tools.cf_run` and :mod:`cfmlir.tools.instances` (whose Ray tasks rebuild the arguments)."""

from __future__ import annotations

import argparse
import math

from cfmlir.api_args import (
    ENGINES, FLATTEN_ORDERS, LAYOUTS, ArgumentError, check_device, check_eps, check_interpreter_options,
    check_positive_int, check_timeout,
)
from cfmlir.tools.arg_errors import one_line_errors


DEFAULT_CERTIFIER = "deeppoly"
DEFAULT_EPS = 0.005
#: exit status of a run whose bounds the soundness check refuted
EXIT_UNSOUND = 3
DEFAULT_CHECK_TOL = 1e-6


class UsageError(ArgumentError):
    """A bad option value or combination of options (one-line message; printed as ``error: ...``, exit
    status 1); an :class:`~cfmlir.api_args.ArgumentError`, as the API's bad arguments."""


def _version() -> str:
    """``cf-run (cfmlir X) with torch Y, onnx Z, xdsl W`` from the installed distributions."""
    from cfmlir.tools.provenance import versions

    v = versions()
    return f"cf-run (cfmlir {v['cfmlir']}) with torch {v['torch']}, onnx {v['onnx']}, xdsl {v['xdsl']}"


class _VersionAction(argparse.Action):
    """``--version``, its text made only when asked (reading the distributions' metadata takes a
    noticeable part of a ``--timeout`` run's start-up)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help="show the versions and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version())
        parser.exit()


def _upper(text: str) -> str:
    return str(text).strip().upper()


def build_parser() -> argparse.ArgumentParser:
    p = one_line_errors(argparse.ArgumentParser(
        prog="cf-run",
        description="Certify a network with a ConstraintFlow certifier (local robustness or a VNN-LIB property). "
                    "With no arguments: deeppoly on the shipped MNIST 3x50 net and 10 images at eps 0.005.",
    ))
    p.add_argument("--version", action=_VersionAction)
    p.add_argument("--certifier", default=None, help=f"shipped certifier name or path to a .cf file (default {DEFAULT_CERTIFIER}); 'auto': "
                   "chosen per network: alpha_deeppoly (its parameters optimised at the root of branch and bound), deeppoly "
                   "on ReLU networks with residual joins and no product of two values, crown_ibp on networks of at most 16 "
                   "inputs with a layer of 8192 neurons or more; with --instances, for each line's network")
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
    p.add_argument("--batch-size", type=int, default=100,
                   help="compiled engine: properties per batch (default 100); with --vnnlib/--instances, the sub-boxes "
                        "of input splitting per batch (default 256)")
    p.add_argument("--device", default="cpu", help="compiled engine: torch device (default cpu)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                   help="compiled engine: floating-point type (default float64)")
    p.add_argument("--widen", choices=("auto", "on", "off"), default="auto",
                   help="compiled engine: widen every bound by a rigorous bound of its rounding errors, so that "
                        "it holds for the real-valued network (auto: on for float32, off for float64; off gives "
                        "raw float32 bounds, which rounding can make unsound by ~1e-5)")
    p.add_argument("--optimize", default=None, type=_positive_int, metavar="N",
                   help="compiled engine: optimise the certifier's parameters ('param ...', e.g. alpha_deeppoly's "
                        "ReLU slopes) per batch by N iterations of projected Adam on the margins' lower bounds "
                        "(docs/optimisation.md)")
    p.add_argument("--lr", default=None, type=float, metavar="LR",
                   help="with --optimize: the learning rate (default 0.5, decayed by 0.98 per iteration)")
    p.add_argument("--check", dest="check", action=_CheckFlag, nargs=0, const=True, default=None,
                   help="check the computed bounds of every layer empirically (samples, box vertices, PGD); a value "
                        "outside its bounds certifies nothing and exits with status 3 (default: on for a .cf file, "
                        "off for a shipped certifier given by name)")
    p.add_argument("--no-check", dest="check", action=_CheckFlag, nargs=0, const=False, help="no soundness check")
    p.add_argument("--check-tol", default=None, metavar="TOL",
                   help=f"relative tolerance of the check: a value v violates lower bound l if v < l - TOL*max(1,|l|) "
                        f"(default {DEFAULT_CHECK_TOL:g})")
    p.add_argument("--require-proof", action="store_true",
                   help="a certifier given as a .cf file whose rules the prover leaves unknown is an error (exit 3) "
                        "instead of a warning (cfmlir.proof_gate; a rule with a counterexample always is)")
    p.add_argument("--proof-timeout", default=None, type=_positive_seconds, metavar="S",
                   help="seconds the prover may spend on each rule of a .cf certifier before calling it unknown "
                        "(default 20; results are cached)")
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
                        "or input splits when at most 16 inputs vary, or 64 on a net with 100 ReLUs per varying input; "
                        "cfmlir.bab) instead of --split (auto: with the "
                        "compiled engine under a time limit, --timeout or --instances; see docs/bab.md)")
    p.add_argument("--bab-branching", choices=("auto", "relu", "input"), default="auto",
                   help="VNN-LIB, --bab: split ReLU neurons (and cut sigmoid/tanh neurons' input intervals), input "
                        "dimensions, or choose by the inputs that vary (auto)")
    p.add_argument("--bab-beta", choices=("on", "off"), default="on",
                   help="VNN-LIB, --bab with ReLU splits: split constraints enter the bound through optimised "
                        "multipliers (beta-CROWN; used when the certifier carries them, see docs/bab.md)")
    p.add_argument("--bab-batch", default=None, type=_positive_int, metavar="N",
                   help="VNN-LIB, --bab: subdomains branched per round, their children bounded together (default "
                        "64; alpha-beta-CROWN's solver.batch_size: on eran's 9x200 MLP 256 bounds 1.9x the "
                        "subdomains a second, see docs/bab.md)")
    p.add_argument("--results", default=None, metavar="OUT",
                   help="VNN-LIB: write the VNN-COMP result file (verdict, and the counterexample for sat) to OUT; "
                        "with --instances: the results CSV (onnx,vnnlib,verdict,seconds), result files in OUT_results/")
    p.add_argument("--instances", default=None, metavar="CSV",
                   help="run every instance (onnx,vnnlib,timeout; paths relative to the CSV's folder) of a VNN-COMP "
                        "benchmark's instances.csv")
    p.add_argument("--memory-limit", choices=("auto", "off"), default="auto",
                   help="on the CPU, bound this process's data memory (and its workers') below what the machine has "
                        "available (auto, the default: 85%%), so that running out of memory shrinks the batches or "
                        "ends a search unknown instead of the system killing the process; off: no bound")
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
    mean, std = getattr(args, "mean", None), getattr(args, "std", None)
    if mean is None and std is None:  # (the module imports torch: not at a --timeout run's start)
        return {"mean": None, "std": None, "layout": getattr(args, "layout", None),
                "flatten_order": getattr(args, "flatten_order", None)}
    from cfruntime.properties.preprocessing import parse_values

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


def _positive_seconds(text) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        t = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got '{text}'") from None
    if not math.isfinite(t) or t <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return t


def parse_eps(text) -> float:
    """``--eps``: a number in [0, 1] (the API's ``eps`` check, :func:`cfmlir.api_args.check_eps`)."""
    return _usage(check_eps, text, "--eps")


def parse_timeout(text) -> float:
    """``--timeout``: seconds in (0, 1e6] (:func:`cfmlir.api_args.check_timeout`)."""
    return _usage(check_timeout, text, "--timeout")


def _usage(check, *a):
    """``check(*a)`` with its :class:`~cfmlir.api_args.ArgumentError` as cf-run's :class:`UsageError`."""
    try:
        return check(*a)
    except ArgumentError as err:
        raise UsageError(str(err)) from None


class _CheckFlag(argparse.Action):
    """``--check`` / ``--no-check``: sets ``check`` and records which were given (both is an error)."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.check = self.const
        namespace.check_flags = [*getattr(namespace, "check_flags", []), option_string]


def given_options(argv) -> set[str]:
    """The destinations of the options given on the command line ``argv`` (not left at their defaults)."""
    p = build_parser()
    for action in p._actions:
        action.default = argparse.SUPPRESS
    ns, _ = p.parse_known_args([str(a) for a in argv or []])
    return set(vars(ns))


def _mode(args) -> str:
    return "instances" if args.instances is not None else "vnnlib" if args.vnnlib is not None else "dataset"


def check_options(args) -> None:
    """Refuse a bad value or combination of cf-run's flags before anything is compiled.  Every flag applies
    to some mode (dataset, ``--vnnlib``, ``--instances``) or engine; one given where it would be ignored is
    an error, never silently dropped (the rules: ``docs/errors.md``)."""
    given = given_options(getattr(args, "argv", None))
    mode = _mode(args)
    for name, flag in (("batch_size", "--batch-size"), ("n", "--n")):
        if getattr(args, name) is not None:
            _usage(check_positive_int, getattr(args, name), flag)
    args.device = _usage(check_device, args.device, "--device")
    if args.timeout is not None:
        args.timeout = parse_timeout(args.timeout)
    if len(set(getattr(args, "check_flags", []))) > 1:
        raise UsageError("--check and --no-check contradict each other: give one")
    if args.engine == "interpreter":
        # (--batch-size is the interpreter's batches too: of the check, the progress and the Ray tasks)
        compiled_only = [f for d, f in (("no_sparse", "--no-sparse"), ("no_rewrite", "--no-rewrite")) if d in given]
        if args.widen == "on":
            compiled_only.append("--widen on")
        if compiled_only:
            raise UsageError(f"{', '.join(compiled_only)} {'applies' if len(compiled_only) == 1 else 'apply'} to the "
                             "compiled engine only: the interpreter analyses one input at a time, in float64, unwidened")
        _usage(check_interpreter_options, args.engine, args.device, args.dtype, ("--device", "--dtype"))
    dataset_only = [f"--{d.replace('_', '-')}" for d in ("data", "eps", "n", "dataset", "layer_bounds") if d in given]
    if mode == "vnnlib" and dataset_only:
        raise UsageError(f"--vnnlib cannot be combined with {', '.join(dataset_only)} (dataset mode)")
    if mode == "instances":
        clash = [f"--{d}" for d in ("net", "vnnlib") if d in given] + dataset_only
        if clash:
            raise UsageError(f"--instances cannot be combined with {', '.join(clash)}")
    if mode == "dataset":
        vnnlib_only = [f"--{d.replace('_', '-')}" for d in ("timeout", "results", "split", "max_boxes", "bab_branching",
                                                            "bab_beta", "bab_batch") if d in given]
        if vnnlib_only:
            raise UsageError(f"{', '.join(vnnlib_only)} {'applies' if len(vnnlib_only) == 1 else 'apply'} to VNN-LIB "
                             "properties (--vnnlib or --instances)")
        if args.layer_bounds and not args.json:
            raise UsageError("--layer-bounds adds every layer's bounds to the JSON: give --json OUT too")
    bab_only = [f"--{d.replace('_', '-')}" for d in ("bab_branching", "bab_beta", "bab_batch") if d in given]
    if bab_only and args.bab == "off":
        raise UsageError(f"{', '.join(bab_only)} {'applies' if len(bab_only) == 1 else 'apply'} to branch and bound, "
                         "which --bab off turns off")
    if "max_boxes" in given and args.split == "off":
        raise UsageError("--max-boxes applies to input splitting, which --split off turns off")
    # VNN-LIB: a region is analysed as one box; --batch-size is the sub-boxes of input splitting per batch
    args.batch_size_given = "batch_size" in given
    if mode != "dataset" and args.batch_size_given and args.split == "off":
        raise UsageError("--batch-size applies to input splitting with --vnnlib/--instances, which --split off turns off")
    if getattr(args, "lr", None) is not None:
        if getattr(args, "optimize", None) is None:
            raise UsageError("--lr needs --optimize N")
        if not (math.isfinite(args.lr) and args.lr > 0):
            raise UsageError(f"--lr must be a positive number, got {args.lr:g}")
    if getattr(args, "optimize", None) is not None and args.engine == "interpreter":
        raise UsageError("--optimize runs the compiled engine, not the interpreter")
    if getattr(args, "ray", None) is not None and mode == "vnnlib":
        raise UsageError("--ray applies to dataset mode (--data) and --instances, not to one --vnnlib property")
