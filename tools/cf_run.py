"""``cf-run``: certify a network with a ConstraintFlow certifier.

::

    cf-run --certifier NAME_OR_PATH --net NET.onnx --data CSV --eps E [--n K] [--json OUT]
    cf-run --certifier NAME_OR_PATH --net NET.onnx --vnnlib FILE [--json OUT] [--timeout S] [--results FILE]
    cf-run --certifier NAME_OR_PATH --instances DIR/instances.csv [--results OUT.csv] [--timeout S]
    cf-run                      # deeppoly on the shipped default net and 10 MNIST images, eps 0.005

Engines: ``--engine compiled`` (default) compiles the certifier to tensor code (cached by source
hash and pipeline) and runs it batch by batch on g-BSCR tensors; ``--no-sparse`` runs the same code on
dense torch tensors and ``--no-rewrite`` compiles without the domain rewrites (the paper's ablation);
``--batch-size``, ``--device`` and ``--dtype`` tune the run.  ``--engine interpreter`` runs the
neuron-level reference interpreter, one sample at a time.

Dataset mode reads ERAN CSV rows (label, pixels 0..255), certifies local robustness in the
L-infinity ball of radius ``eps`` (pixel units in [0, 1], clipped to [0, 1]) and prints accuracy,
certified-among-correct and times.  ``--json OUT`` writes::

    {"certifier", "network", "eps", "n", "labels": [...], "correct": [bool], "certified": [bool],
     "margin_lb": [[...]], "margin_ub": [[...]],          # N x K; column j bounds y_true - y_j
     "times": {"compile_s", "load_s", "analysis_s"},      # the own column is 0; compile_s: imports excluded
     "batch_size": {"requested", "used"}, "provenance": {...}}

(a sample is certified iff it is classified correctly and every margin j != true has a lower
bound > 0).  ``--layer-bounds`` (with ``--json``) adds ``"layer_bounds": {layer: {"lower": [[...]], "upper":
[[...]]}}``: every layer's bounds but the input's, one list per sample (the last layer is the margins,
its own column unzeroed).  The same analysis is :func:`cfmlir.certify` (:mod:`cfmlir.api`).  VNN-LIB mode writes ``{"certifier", "network", "vnnlib", "verdict", "regions":
[{"row_lb": [...], "row_ub": [...]}], "times": {...}, "provenance": {...}}`` with the verdict ``unsat`` (every disjunct of
the counterexample region refuted), ``sat`` (a concrete counterexample found by sampling/PGD and
confirmed by the network, ``"counterexample": {"x", "y", "region", "disjunct"}``) or ``unknown``.  ``.onnx.gz`` and ``.vnnlib.gz`` files are read transparently.

VNN-COMP mode (:mod:`cfmlir.tools.instances`, :mod:`cfruntime.results`): ``--results FILE``
writes the competition's result file (the verdict ``unsat``/``sat``/``unknown``/``timeout``/``error``
on the first line; for ``sat`` the confirmed counterexample ``((X_0 v) ... (Y_0 v) ...)``);
``--timeout S`` runs the instance in a child process that is killed after ``S`` seconds (the verdict
is then ``timeout``); ``--instances CSV`` runs every line ``onnx,vnnlib,timeout`` of a benchmark's
``instances.csv`` and ``--results OUT.csv`` then gets one line ``onnx,vnnlib,verdict,seconds`` per
instance (the result files go to the folder ``OUT_results``).

Ray (``--ray [ADDRESS]``, the extra ``cfmlir[ray]``; :mod:`cfmlir.distributed`): dataset mode certifies
each ``--batch-size`` chunk of the images as a Ray task and ``--instances`` each instance, on the cluster
at ``ADDRESS`` or on a local one started for the run; the output is the single-process run's.  Dataset
mode goes through :func:`cfmlir.certify` either way (the one batching loop; ``--check`` and the progress
bar are its per-batch hooks).

Preprocessing (dataset mode; :mod:`cfruntime.properties.preprocessing`): the network is given
``x = (pixel/255 - mean) / std`` per channel in ``--layout`` (NCHW or NHWC), and reads its first Flatten
in ``--flatten-order`` (CHW, or HWC for ERAN's CIFAR fully-connected nets).  A field not given by a flag
comes from the network's manifest entry (``--manifest FILE``, else ``MANIFEST.json`` beside the network,
else the source tree's ``../shared/nets/MANIFEST.json``), else from the default (mean 0, std 1, NCHW, CHW),
with a ``warning:`` line on stderr.  Every JSON has a ``"provenance"`` object
(:mod:`cfmlir.tools.provenance`): versions, arguments, hashes of the certifier, network and input files,
device, dtype, batch size, whether the compile cache was hit, and the preprocessing and its sources.

Soundness check (``--check``, on by default for a certifier given as a ``.cf`` file, off for a shipped one
given by name; ``--no-check`` turns it off): after the analysis, :func:`cfruntime.soundness.check_bounds`
evaluates the network on concrete points of every analysed box (uniform samples, the centre, box
vertices, and a PGD attack on the margins and on the neurons closest to their bounds) and compares
every value with the Float lower/upper bounds the certifier computed for that layer (every layer after
the input, the margins included).  A value outside ``[lower - tol*max(1,|lower|), upper +
tol*max(1,|upper|)]`` (``--check-tol``, default 1e-6) is a violation: each violating layer is reported
on stderr (the worst violations and a count), nothing is certified (a VNN-LIB ``unsat`` becomes
``unknown``, or ``sat`` when the concrete counterexample search that then runs finds one) and the exit
status is 3.  The JSON then has ``"unsound"`` (true/false), ``"check"`` (what was evaluated, the
tolerance, the seconds, the violations per layer), ``"violations"`` (the worst ones of each layer) and
``times.check_s``; without the check these keys are absent.  A path (even to a shipped file, or a
byte-identical copy of one) counts as a user's certifier.  The check is empirical: finding no
violation does not prove a certifier sound.

Every user error (bad certifier, bad ONNX, bad CSV row, bad VNN-LIB, eps outside [0, 1], missing file) is
one line ``error: ...`` on stderr and exit status 1; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cfmlir.tools.arg_errors import one_line_errors

ENGINES = ("interpreter", "compiled")
#: ``--layout`` and ``--flatten-order`` values (cfruntime.properties.preprocessing, which imports torch)
LAYOUTS = ("NCHW", "NHWC")
FLATTEN_ORDERS = ("CHW", "HWC")
DEFAULT_CERTIFIER = "deeppoly"
DEFAULT_EPS = 0.005
#: exit status of a run whose bounds the soundness check refuted
EXIT_UNSOUND = 3
#: ``check_bounds`` parameters of ``--check``: per box 256 uniform samples, the centre and the two extreme
#: corners, 64 vertices (all of them when there are fewer); 20 PGD steps on every margin and, per hidden layer,
#: side and box, on the 4 neurons whose sampled values came closest to their bounds (``check_bounds``' default
#: is 16: 2-4 times the cost, PGD being most of it, and it caught no mutant that 4 missed)
CHECK_PARAMS = {"n_samples": 256, "n_vertices": 64, "pgd_steps": 20, "pgd_neurons": 4, "pgd_restarts": 1}
DEFAULT_CHECK_TOL = 1e-6
#: violations per layer printed / kept in the JSON
CHECK_SHOWN, CHECK_KEPT = 3, 20


class UsageError(Exception):
    """A bad combination of options (one-line message)."""


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


def _preprocessing_flags(args) -> dict:
    """The preprocessing fields given on the command line, parsed (None where not given); a bad value
    is a one-line error."""
    from cfruntime.properties.preprocessing import parse_values

    mean, std = getattr(args, "mean", None), getattr(args, "std", None)
    return {"mean": None if mean is None else parse_values(mean, "--mean"),
            "std": None if std is None else parse_values(std, "--std", positive=True),
            "layout": getattr(args, "layout", None), "flatten_order": getattr(args, "flatten_order", None)}


def _check_preprocessing_flags(args) -> None:
    """Reject bad preprocessing flags (values, a manifest that cannot be read, image flags outside
    dataset mode) before anything is compiled."""
    image_flags = [f"--{n}" for n in ("mean", "std", "layout") if getattr(args, n, None) is not None]
    if image_flags and (args.vnnlib is not None or args.instances is not None):
        verb = "applies" if len(image_flags) == 1 else "apply"
        raise UsageError(f"{', '.join(image_flags)} {verb} to dataset mode (--data) only: VNN-LIB boxes are in the "
                         "network's input space")
    _preprocessing_flags(args)
    if args.manifest is not None:
        from cfruntime.properties import load_manifest

        load_manifest(args.manifest)


def _parse_eps(text) -> float:
    try:
        eps = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--eps must be a number, got '{text}'") from None
    if not math.isfinite(eps) or not 0 <= eps <= 1:
        raise UsageError(f"--eps must be in [0, 1] (pixel units), got {text}")
    return eps


def _progress(it, total: int, quiet: bool, desc: str):
    """A progress bar over ``it`` (or, with ``it`` None, one updated by hand) on a terminal."""
    disable = quiet or not sys.stderr.isatty()
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return it
    return tqdm(it, total=total, desc=desc, file=sys.stderr, disable=disable, leave=False)


@dataclass
class LoadedProgram:
    """The certifier as ``--engine`` runs it, the seconds it took (imports excluded), and whether the
    compiled module came from the cache (None for the interpreter)."""

    program: object
    compile_s: float
    cache_hit: bool | None = None
    cache_file: Path | None = None


def _load_program(args, certifier: str) -> LoadedProgram:
    """The interpreter's program or the compiled certifier, as ``--engine`` says.  The modules (torch,
    xDSL) are imported before the clock starts: ``compile_s`` is the compilation (or cache read) alone."""
    if args.engine == "interpreter":
        from cfmlir.interpreter.run import load_certifier

        t0 = time.perf_counter()
        prog = load_certifier(certifier)
        return LoadedProgram(prog, time.perf_counter() - t0)
    import cfmlir.frontend  # noqa: F401 - imported here so that compile_s does not count it
    import cfmlir.passes.emit_python  # noqa: F401
    import cfruntime.flow.engine  # noqa: F401 - torch
    from cfmlir.compiler import compile_certifier_cached, load_certifier_source, pipeline_for

    t0 = time.perf_counter()
    c = compile_certifier_cached(*load_certifier_source(certifier), pipeline_for(not args.no_rewrite))
    return LoadedProgram(c.certifier, time.perf_counter() - t0, c.cache_hit, c.cache_file)


def _engine_label(args) -> str:
    if args.engine == "interpreter":
        return "interpreter"
    mode = ("dense" if args.no_sparse else "g-BSCR") + (", no rewrites" if args.no_rewrite else "")
    widened = args.widen == "on" or (args.widen == "auto" and args.dtype != "float64")
    return f"compiled, {mode}, {args.dtype}{' widened' if widened else ''}, batch {args.batch_size}"


def _engine(args, prog):
    """The :mod:`cfmlir.engines` engine of ``prog`` (``_load_program``'s) with this run's options."""
    from cfmlir.engines import CompiledEngine, InterpreterEngine

    if args.engine == "interpreter":
        return InterpreterEngine(prog)
    return CompiledEngine(prog, sparse=not args.no_sparse, dtype=args.dtype, device=args.device, widen=args.widen)


def _api_certifier(args, loaded: LoadedProgram, certifier: str):
    """``loaded`` as the :class:`cfmlir.api.Certifier` that :func:`cfmlir.certify` takes (with its source,
    which ``--ray`` ships to the workers)."""
    from cfmlir.api import Certifier
    from cfmlir.certifiers import certifier_names, certifier_source
    from cfmlir.compiler import load_certifier_source

    if args.engine == "interpreter" and certifier in certifier_names():  # the interpreter's rule: a name first
        (text, file), name = certifier_source(certifier), certifier
    else:
        text, file = load_certifier_source(certifier)
        name = certifier if file != certifier else Path(file).stem
    compiled = loaded.program if args.engine == "compiled" else None
    program = loaded.program if args.engine == "interpreter" else None
    return Certifier(name, text, file, not args.no_rewrite, compiled, loaded.cache_hit, loaded.compile_s, program)


class _SoundnessCheck:
    """``--check``: :func:`cfruntime.soundness.check_bounds` on every layer's bounds of each analysed
    batch; keeps the worst violations of each layer, the counts, and what it cost."""

    def __init__(self, tol: float, unit: str = "sample"):
        self.tol = tol
        self.unit = unit  # what a box is called in the messages: sample (dataset) or region (VNN-LIB)
        self.seconds = 0.0
        self.totals = {"points": 0, "pgd_targets": 0, "forward_rows": 0, "batches": 0}
        self.per_sample: dict = {}
        self.counts: dict[int, int] = {}  # layer -> violations
        self.kinds: dict[int, str] = {}
        self.worst: dict[int, list] = {}  # layer -> the worst violations (Violation, samples renumbered)
        self.checked_layers = 0
        self.checked_bounds = 0

    def __call__(self, mnet, lb, ub, layers: dict, first: int = 0) -> None:
        from cfruntime.soundness import check_bounds

        t0 = time.perf_counter()
        st: dict = {}
        found = check_bounds(mnet, lb, ub, layers, tol=self.tol, keep_points=False, max_per_layer=CHECK_KEPT, stats=st,
                             **CHECK_PARAMS)
        last = mnet.layers[-1].index
        for k in layers:
            self.kinds.setdefault(k, "margins" if k == last else mnet.layers[k].kind)
        for v in found:
            v.sample += first
            self.worst.setdefault(v.layer, []).append(v)
        for k, n in st["violations_per_layer"].items():
            self.counts[k] = self.counts.get(k, 0) + n
        for k in self.worst:
            self.worst[k] = sorted(self.worst[k], key=lambda v: -v.excess)[:CHECK_KEPT]
        for k in ("points", "pgd_targets", "forward_rows"):
            self.totals[k] += st[k]
        self.totals["batches"] += 1
        self.per_sample = {k: st[k] for k in ("points_per_sample", "samples", "vertices")}
        self.checked_layers = max(self.checked_layers, st["layers"])
        self.checked_bounds += st["neurons"]
        self.seconds += time.perf_counter() - t0

    @property
    def unsound(self) -> bool:
        return bool(self.counts)

    @property
    def violations(self) -> int:
        return sum(self.counts.values())

    def _what(self, v) -> str:
        rel = "<" if v.side == "lower" else ">"
        return (f"neuron {v.neuron} {self.unit} {v.sample}: value {v.value:.9g} {rel} {v.side} bound {v.bound:.9g} "
                f"(by {v.excess:.3g}, found by {v.source})")

    def report(self) -> None:
        """One line per violating layer (its count and worst violation), and up to two more of its
        violations, on stderr."""
        for k in sorted(self.counts):
            shown = self.worst.get(k, [])[:CHECK_SHOWN]
            if not shown:
                continue
            print(f"unsound: layer {k} ({self.kinds.get(k, '?')}): {self.counts[k]} bound(s) violated; worst: "
                  f"{self._what(shown[0])}", file=sys.stderr)
            for v in shown[1:]:
                print(f"unsound:   also layer {k} {self._what(v)}", file=sys.stderr)

    def method(self) -> str:
        ps = self.per_sample
        return (f"{ps.get('samples', 0)} samples + {ps.get('vertices', 0)} vertices per {self.unit}, "
                f"PGD {CHECK_PARAMS['pgd_steps']} steps on {self.totals['pgd_targets']} targets")

    def summary(self) -> str:
        consequence = "nothing certified" if self.unit == "sample" else "no unsat verdict"
        verdict = (f"UNSOUND: {self.violations} bound(s) violated in {len(self.counts)} layer(s), {consequence}"
                   if self.unsound else "no violation")
        return f"{verdict} ({self.method()}, tol {self.tol:g}, {self.seconds:.3f}s)"

    def json(self) -> dict:
        """``unsound``, ``check`` and ``violations`` entries of the JSON result."""
        viol = []
        for k in sorted(self.worst):
            for v in self.worst[k]:
                viol.append({"layer": k, "kind": self.kinds.get(k, "?"), "neuron": v.neuron, self.unit: v.sample,
                             "side": v.side, "bound": v.bound, "value": v.value, "excess": v.excess, "found_by": v.source})
        check = {"tol": self.tol, "seconds": self.seconds, **{k: v for k, v in CHECK_PARAMS.items()}, **self.per_sample,
                 **self.totals, "layers": self.checked_layers, "bounds": self.checked_bounds,
                 "violations": self.violations, "violations_per_layer": {str(k): n for k, n in sorted(self.counts.items())}}
        return {"unsound": self.unsound, "check": check, "violations": viol}


def _user_certifier(args) -> bool:
    """True when ``--certifier`` is a ``.cf`` file rather than a shipped certifier's name (a path to a
    shipped file, or a byte-identical copy of one, counts as a file)."""
    from cfmlir.certifiers import certifier_names

    c = args.certifier
    if c is None:
        return False
    if c in certifier_names():
        # the compiled engine reads a file of that name when there is one, the interpreter never does
        return args.engine == "compiled" and Path(c).exists()
    return True


def _parse_check(args):
    """The :class:`_SoundnessCheck` of this run, or None (``--check``/``--no-check``/the default)."""
    tol = DEFAULT_CHECK_TOL
    if args.check_tol is not None:
        try:
            tol = float(args.check_tol)
        except ValueError:
            raise UsageError(f"--check-tol must be a number, got '{args.check_tol}'") from None
        if not math.isfinite(tol) or tol < 0:
            raise UsageError(f"--check-tol must be a finite number >= 0, got {args.check_tol}")
    on = args.check if args.check is not None else _user_certifier(args)
    if not on:
        return None
    return _SoundnessCheck(tol, "region" if args.vnnlib is not None else "sample")


def _parse_timeout(text) -> float:
    try:
        t = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--timeout must be a number of seconds, got '{text}'") from None
    if not math.isfinite(t) or t <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {text}")
    return t


def run(args) -> int:
    start = time.perf_counter()
    if args.batch_size is not None and args.batch_size <= 0:
        raise UsageError(f"--batch-size must be positive, got {args.batch_size}")
    if args.engine == "interpreter" and (args.no_sparse or args.no_rewrite):
        raise UsageError("--no-sparse and --no-rewrite apply to the compiled engine only")
    if args.device != "cpu":
        import torch

        try:
            ok = torch.device(args.device).type != "cuda" or torch.cuda.is_available()
        except RuntimeError:
            ok = False
        if not ok:
            raise UsageError(f"device '{args.device}' is not available here")
    if args.vnnlib is not None and (args.data is not None or args.eps is not None or args.n is not None):
        raise UsageError("--vnnlib cannot be combined with --data, --eps or --n")
    if args.n is not None and args.n <= 0:
        raise UsageError(f"--n must be positive, got {args.n}")
    if args.timeout is not None:
        args.timeout = _parse_timeout(args.timeout)
    if args.instances is not None:
        if any(v is not None for v in (args.net, args.vnnlib, args.data, args.eps, args.n)):
            raise UsageError("--instances cannot be combined with --net, --vnnlib, --data, --eps or --n")
    elif args.vnnlib is None and (args.timeout is not None or args.results is not None):
        raise UsageError("--timeout and --results apply to VNN-LIB properties (--vnnlib or --instances)")
    if getattr(args, "layer_bounds", False) and (args.vnnlib is not None or args.instances is not None):
        raise UsageError("--layer-bounds applies to dataset mode (--data) only")
    if getattr(args, "ray", None) is not None:
        if args.vnnlib is not None:
            raise UsageError("--ray applies to dataset mode (--data) and --instances, not to one --vnnlib property")
        from cfmlir.distributed import require_ray

        require_ray()
    _check_preprocessing_flags(args)
    check = _parse_check(args)
    if args.instances is not None:
        from cfmlir.tools.instances import run_instances

        return run_instances(args)
    if args.vnnlib is not None and args.timeout is not None:
        from cfmlir.tools.instances import run_with_timeout

        return run_with_timeout(args, start)

    defaults_mode = args.net is None and args.data is None and args.vnnlib is None
    if args.net is None:
        from cfruntime.default_data import default_network_path

        net_path = Path(default_network_path())
    else:
        net_path = Path(args.net)
    if args.vnnlib is None:
        if args.data is None:
            if not defaults_mode:
                raise UsageError("--data (with --eps) or --vnnlib is required with --net")
            from cfruntime.default_data import default_data_path

            data_path = Path(default_data_path())
        else:
            data_path = Path(args.data)
        if args.eps is None:
            if not defaults_mode:
                raise UsageError("--eps is required with --data")
            eps = DEFAULT_EPS
        else:
            eps = _parse_eps(args.eps)

    certifier = args.certifier or DEFAULT_CERTIFIER
    loaded = _load_program(args, certifier)
    if args.vnnlib is not None:
        return finish_vnnlib(args, *vnnlib_instance(args, loaded, certifier, check))

    t0 = time.perf_counter()
    net, prep = _load_network(net_path, args)

    from cfruntime.properties import DATASETS, load_eran_csv, robustness_property

    images = load_eran_csv(data_path, args.dataset, stop=args.n)
    channels = DATASETS[images.dataset][1][0]
    prep.value.check_channels(channels)
    warning = prep.warning(net_path, channels)
    if warning is not None:
        print(warning, file=sys.stderr)
    prop = robustness_property(images, eps, prep.value, net.input_shape, num_classes=net.output_size)
    load_s = time.perf_counter() - t0
    from cfmlir.tools.provenance import provenance

    prov = provenance(args, certifier, net_path, loaded, prep, data=data_path)
    from cfmlir.api import Network

    return _run_dataset(args, loaded, certifier, Network(net, prep, net_path), prop, loaded.compile_s, load_s, check, prov)


def _ray_session(args):
    """``with`` this: Ray initialised for ``--ray`` (and shut down after, when cf-run started it), else nothing."""
    import contextlib

    if getattr(args, "ray", None) is None:
        return contextlib.nullcontext()
    from cfmlir.distributed import session

    return session(args.ray)


def _run_dataset(args, loaded: LoadedProgram, certifier, network, prop, compile_s, load_s, check=None,
                 prov=None) -> int:
    """Certify ``prop`` on ``network`` (a :class:`cfmlir.api.Network`) by :func:`cfmlir.certify`, in this
    process or on Ray (``--ray``); print the summary, write ``--json``; the exit status."""
    from cfmlir import api
    from cfmlir.engines import WIDEN

    n = len(prop)
    net_path = network.path
    want_layers = bool(getattr(args, "layer_bounds", False))
    bar = _progress(None, n, args.quiet, f"{Path(str(certifier)).stem}")

    def on_batch(start: int, stop: int) -> None:
        if hasattr(bar, "update"):
            bar.update(stop - start)

    def on_shrink(old: int, new: int, oom) -> None:
        print(f"note: a batch of {old} did not fit in memory ({oom}); going on with batches of {new}", file=sys.stderr)

    interpreter = args.engine == "interpreter"  # float64 on the CPU, whatever --device/--dtype say
    with _ray_session(args):
        res = api.certify(_api_certifier(args, loaded, certifier), network, prop, engine=args.engine,
                          device="cpu" if interpreter else args.device, dtype="float64" if interpreter else args.dtype,
                          widen=None if interpreter else WIDEN[args.widen], sparse=not args.no_sparse,
                          batch_size=args.batch_size, layer_bounds=want_layers, check=check, on_batch=on_batch,
                          on_shrink=on_shrink, ray=args.ray)
    if hasattr(bar, "close"):
        bar.close()
    labels = [int(v) for v in prop.labels.tolist()]
    correct = res.correct.tolist()
    certified = res.certified.tolist()
    mlb, mub = res.margin_lb.tolist(), res.margin_ub.tolist()
    analysis_s = res.times["analysis_s"]
    if check is not None and check.unsound:  # an unsound analysis certifies nothing
        certified = [False] * n
    out = {
        "certifier": str(certifier),
        "network": str(net_path),
        "eps": prop.eps,
        "n": n,
        "labels": labels,
        "correct": correct,
        "certified": certified,
        "margin_lb": mlb,
        "margin_ub": mub,
        "times": {"compile_s": compile_s, "load_s": load_s, "analysis_s": analysis_s},
    }
    # the interpreter analyses one input at a time
    out["batch_size"] = {"requested": args.batch_size, "used": 1 if interpreter else res.batch_size}
    if want_layers:
        out["layer_bounds"] = {str(k): {"lower": lo.tolist(), "upper": hi.tolist()}
                               for k, (lo, hi) in sorted(res.layer_bounds.items())}
    if prov is not None:
        out["provenance"] = prov
    if check is not None:
        out["times"]["check_s"] = check.seconds
        out.update(check.json())
        check.report()
    if args.json:
        _write_json(args.json, out)
    if not args.quiet:
        nc, ncert = sum(correct), sum(certified)
        pct = lambda a, b: f"{100.0 * a / b:.1f}%" if b else "n/a"  # noqa: E731
        print(f"certifier {certifier} on {net_path.name}, eps {prop.eps:g}, {n} samples (engine: {_engine_label(args)})")
        print(f"accuracy:  {nc}/{n} ({pct(nc, n)})")
        print(f"certified: {ncert}/{nc} correctly classified ({pct(ncert, nc)})")
        print(f"time:      compile {compile_s:.3f}s, load {load_s:.3f}s, analysis {analysis_s:.3f}s "
              f"({analysis_s / max(n, 1):.3f}s/sample)")
        if check is not None:
            print(f"check:     {check.summary()}")
    return _check_status(check)


def _check_error(check) -> str | None:
    """The error line of a check that found a violation, else None."""
    if check is None or not check.unsound:
        return None
    consequence = "nothing is certified" if check.unit == "sample" else "no unsat verdict is given"
    return (f"error: unsound bounds: the soundness check found {check.violations} violated bound(s) in "
            f"{len(check.counts)} layer(s); {consequence}")


def _check_status(check) -> int:
    """0, or :data:`EXIT_UNSOUND` (with its error line) when the check found a violation."""
    msg = _check_error(check)
    if msg is None:
        return 0
    print(msg, file=sys.stderr)
    return EXIT_UNSOUND


def _load_network(net_path: Path, args=None):
    """The network at ``net_path``, read with its flatten order, and its resolved preprocessing
    (:class:`~cfruntime.properties.preprocessing.ResolvedPreprocessing`: the flags of ``args``, else
    its manifest entry, else the defaults)."""
    from cfruntime.errors import NetworkError
    from cfruntime.network import load_onnx
    from cfruntime.properties.preprocessing import resolve_preprocessing

    if not net_path.is_file():
        raise NetworkError("no such network file", file=net_path)
    flags = _preprocessing_flags(args) if args is not None else {}
    prep = resolve_preprocessing(net_path, **flags, manifest=getattr(args, "manifest", None))
    return load_onnx(net_path, **prep.value.load_kwargs()), prep


def vnnlib_instance(args, loaded: LoadedProgram, certifier, check=None) -> tuple[dict, list[str], str | None]:
    """Load ``--net`` and ``--vnnlib`` and decide the property with the certifier ``loaded``: ``(the JSON
    object, the summary lines, the error line of an unsound check or None)``.  Nothing is printed but the
    check's report; a ``sat`` verdict always comes with a counterexample the network confirms
    (``"counterexample"`` in the JSON)."""
    import numpy as np

    from cfmlir.tools.provenance import provenance

    from cfruntime.errors import PropertyError
    from cfruntime.properties import confirm_counterexample, parse_vnnlib

    t0 = time.perf_counter()
    if args.net is None:
        from cfruntime.default_data import default_network_path

        net_path = Path(default_network_path())
    else:
        net_path = Path(args.net)
    prog, compile_s = loaded.program, loaded.compile_s
    net, prep = _load_network(net_path, args)
    prop = parse_vnnlib(args.vnnlib)
    if prop.num_inputs != net.input_size or prop.num_outputs != net.output_size:
        raise PropertyError(f"property has {prop.num_inputs} inputs and {prop.num_outputs} outputs, the network "
                            f"{net.input_size} and {net.output_size}", file=args.vnnlib)
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    from cfmlir.api import certify

    res = certify(None, net, prop, engine=_engine(args, prog), check=check)  # the engine object runs the certifier
    lows, highs, v = res.row_lb, res.row_ub, res.verdict
    if check is not None and check.unsound and v == "unsat":  # refuted by unsound bounds: nothing is known
        v = "unknown"
    cex = None
    if v != "unsat":
        from cfruntime.soundness import vnnlib_counterexample

        found = vnnlib_counterexample(net, prop)
        if found is not None:
            # sat only with a point that the network, evaluated again in float64, confirms
            cex = confirm_counterexample(net, prop, found[0], found[1])
            if cex is not None:
                v = "sat"
    analysis_s = time.perf_counter() - t1 - (check.seconds if check is not None else 0.0)
    out = {
        "certifier": str(certifier),
        "network": str(net_path),
        "vnnlib": str(args.vnnlib),
        "verdict": v,
        "regions": [{"row_lb": np.asarray(lo).tolist(), "row_ub": np.asarray(hi).tolist()} for lo, hi in zip(lows, highs)],
        "times": {"compile_s": compile_s, "load_s": load_s, "analysis_s": analysis_s},
    }
    if cex is not None:
        out["counterexample"] = cex.to_json()
    if check is not None:
        out["times"]["check_s"] = check.seconds
        out.update(check.json())
        check.report()
    out["provenance"] = provenance(args, certifier, net_path, loaded, prep, vnnlib=args.vnnlib)
    lines = [f"certifier {certifier} on {net_path.name}, property {Path(args.vnnlib).name} (engine: {_engine_label(args)})",
             f"verdict:   {v}",
             f"time:      compile {compile_s:.3f}s, load {load_s:.3f}s, analysis {analysis_s:.3f}s"]
    if check is not None:
        lines.append(f"check:     {check.summary()}")
    return out, lines, _check_error(check)


def finish_vnnlib(args, out: dict, lines: list[str], check_error: str | None) -> int:
    """Write ``--results`` and ``--json`` of one VNN-LIB instance, print its summary; the exit status."""
    if args.results:
        write_results_file(args.results, out["verdict"], out.get("counterexample"))
    if args.json:
        _write_json(args.json, out)
    if not args.quiet:
        for line in lines:
            print(line)
    if check_error is not None:
        print(check_error, file=sys.stderr)
        return EXIT_UNSOUND
    return 0


def write_results_file(path, verdict: str, counterexample: dict | None = None) -> None:
    """The VNN-COMP result file (:mod:`cfruntime.results`); a :class:`UsageError` when it cannot be written."""
    from cfruntime.results import Counterexample, write_result

    cex = None
    if counterexample is not None:
        cex = Counterexample(np.asarray(counterexample["x"], dtype=np.float64), np.asarray(counterexample["y"], dtype=np.float64),
                             counterexample["region"], counterexample["disjunct"])
    try:
        write_result(path, verdict, cex)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_json(path, obj) -> None:
    try:
        Path(path).write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _one_line(msg: str) -> str:
    msg = " ".join(str(msg).split())
    return msg


class ReportedError(Exception):
    """An error whose one-line message (``error: ...``) is already formatted (e.g. by a child process)."""


def error_line(e: BaseException) -> str:
    """The one ``error:`` line that reports ``e`` to a user (never a traceback)."""
    if isinstance(e, ReportedError):
        return _one_line(str(e))
    if isinstance(e, UsageError):
        return "error: " + _one_line(str(e))
    from cfmlir.diagnostics import CfError
    from cfruntime.errors import CfRuntimeError

    if isinstance(e, (CfRuntimeError, CfError)):
        return _one_line(str(e))
    if isinstance(e, OSError):
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        return f"error: {where}{_one_line(e.strerror or str(e))}"
    if isinstance(e, KeyboardInterrupt):
        return "error: interrupted"
    if isinstance(e, MemoryError):  # outside the analysis (which retries with smaller batches)
        return f"error: out of memory ({_one_line(str(e)) or 'allocation failed'})"
    from cfruntime.flow.engine import EngineError

    if isinstance(e, EngineError):
        return "error: " + _one_line(str(e))
    return (f"error: internal error ({type(e).__name__}): {_one_line(str(e))} "
            "(set CF_RUN_TRACEBACK=1 for details)")


def is_internal_error(e: BaseException) -> bool:
    """True for an exception that is a bug rather than a user error (``CF_RUN_TRACEBACK=1`` shows its traceback)."""
    from cfmlir.diagnostics import CfError
    from cfruntime.errors import CfRuntimeError
    from cfruntime.flow.engine import EngineError

    known = (CfRuntimeError, CfError, ReportedError, UsageError, OSError, KeyboardInterrupt, MemoryError, EngineError)
    return not isinstance(e, known)


def _results_on_error(args) -> None:
    """A single VNN-LIB run that failed still leaves its result file: ``error``."""
    if getattr(args, "results", None) and getattr(args, "vnnlib", None) is not None and getattr(args, "instances", None) is None:
        try:
            write_results_file(args.results, "error")
        except UsageError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv  # for the JSON's provenance
    try:
        return run(args)
    except KeyboardInterrupt as e:
        print(error_line(e), file=sys.stderr)
        _results_on_error(args)
        return 130
    except Exception as e:  # noqa: BLE001 - never show a traceback to a user
        if os.environ.get("CF_RUN_TRACEBACK") and is_internal_error(e):
            raise
        print(error_line(e), file=sys.stderr)
        _results_on_error(args)
    return 1


if __name__ == "__main__":  # pragma: no cover
    # ``python -m cfmlir.tools.cf_run`` (vnncomp/run_instance.sh): run the imported module, so that the
    # exception classes cfmlir.tools.instances raises are the ones main() catches
    from cfmlir.tools.cf_run import main as _main

    sys.exit(_main())
