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
confirmed by the network, ``"counterexample": {"x", "y", "region", "disjunct"}``; the attack runs before any bounding
pass, so a sat instance has ``"regions": []``) or ``unknown``.  ``.onnx.gz`` and ``.vnnlib.gz`` files are read transparently.
A property one pass leaves ``unknown`` is split over its input box (``--split auto|on|off``, ``--max-boxes N``;
:mod:`cfmlir.input_splitting`; the JSON then has ``"split": {"boxes", "rounds", "stopped"}``).

VNN-COMP mode (:mod:`cfmlir.tools.instances`, :mod:`cfruntime.results`): ``--results FILE``
writes the competition's result file (the verdict ``unsat``/``sat``/``unknown``/``timeout``/``error``
on the first line; for ``sat`` the confirmed counterexample ``((X_0 v) ... (Y_0 v) ...)``);
``--timeout S`` runs the instance in a child process that is killed before ``S`` seconds have passed since
cf-run's process started (the verdict is then ``timeout``); ``--instances CSV`` runs every line ``onnx,vnnlib,timeout`` of a benchmark's
``instances.csv`` and ``--results OUT.csv`` then gets one line ``onnx,vnnlib,verdict,seconds`` per
instance (the result files go to the folder ``OUT_results``).

Ray (``--ray [ADDRESS]``, the extra ``cfmlir[ray]``; :mod:`cfmlir.distributed`): dataset mode certifies
each ``--batch-size`` chunk of the images as a Ray task and ``--instances`` each instance, on the cluster
at ``ADDRESS`` or on a local one started for the run; the output is the single-process run's.  Dataset
mode goes through :func:`cfmlir.certify` either way (the one batching loop; ``--check`` and the progress
bar are its per-batch hooks).

Optimisation (``--optimize N``, ``--lr LR``; :mod:`cfmlir.optimize`, ``docs/optimisation.md``): a certifier
with parameters (``param ...``: ``alpha_deeppoly``, ``alpha_deepz``) has them optimised per batch by N
iterations of projected Adam on the margins' (VNN-LIB: the constraint rows') lower bounds.

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

Proof gate (:mod:`cfmlir.proof_gate`, docs/trust.md): a certifier given as a ``.cf`` file has the rules this
network runs proved sound before any analysis (``--proof-timeout S`` per rule, cached); a counterexample is
exit status 3 with ``error: FILE:LINE:COL: rule T.Op is unsound: ...`` and no verdict (a result file says
``unknown``); an ``unknown`` rule is one warning and ``"proved": false`` (``--require-proof``: exit 3).  The
JSON says ``"proved"`` (``true``, ``false`` or ``"shipped"``) and, for a ``.cf`` file, ``"proof"``.

Every user error (bad certifier, bad ONNX, bad CSV row, bad VNN-LIB, eps outside [0, 1], missing file, a
non-finite bound: :mod:`cfruntime.flow.finite`, a flag given where it would be ignored) is one line ``error: ...`` on
stderr and exit status 1; never a traceback (``docs/errors.md``: every error class, its exit status and line).  Every
JSON is strict (no ``NaN``/``Infinity``).  Without a terminal (a log, CI, nohup) dataset mode prints a ``progress:``
line on stderr after a batch, at most every 10 s.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from cfmlir.api_args import short_data_note
from cfmlir.tools import auto_certifier
from cfmlir.tools.run_args import (DEFAULT_CERTIFIER, DEFAULT_EPS, UsageError, build_parser, check_options, check_preprocessing_flags,
                                   parse_eps)
from cfmlir.tools.run_setup import (LoadedProgram, api_certifier, check_status, engine_label, error_line, exit_status_of,
                                    is_internal_error, load_network_file, load_program, optimize_args, parse_check, run_proof,
                                    write_json)
from cfmlir.tools.vnnlib_mode import finish_vnnlib, vnnlib_instance, write_results_file


#: without a terminal, a progress line after a batch at most this often (seconds)
PROGRESS_EVERY_S = 10.0


class _Progress:
    """Progress over ``total`` samples on stderr, updated after each batch: a bar on a terminal; without
    one (a log file, CI, nohup) a line ``progress: 200/1000 samples (20.0%), 12.3 s`` after a batch, at most
    every :data:`PROGRESS_EVERY_S` seconds, so a long run shows it is alive; nothing under ``--quiet``."""

    def __init__(self, total: int, quiet: bool, desc: str):
        self.total, self.done = total, 0
        self.bar = None
        self.lines = not quiet and not sys.stderr.isatty()
        self.start = self.last = time.perf_counter()
        if not quiet and not self.lines:
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover
                return
            self.bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False)

    def update(self, k: int) -> None:
        self.done += k
        if self.bar is not None:
            self.bar.update(k)
        now = time.perf_counter()
        if self.lines and now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            pct = 100.0 * self.done / max(self.total, 1)
            print(f"progress: {self.done}/{self.total} samples ({pct:.1f}%), {now - self.start:.1f} s",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run(args) -> int:
    check_options(args)
    if args.memory_limit == "auto" and str(args.device) == "cpu" and getattr(args, "command_line", False):
        from cfruntime.memory_limit import limit_data_memory

        # out of memory an error the engine answers, not a SIGKILL (cfruntime.memory_limit); the process's own
        # limit, so only where cf-run is the process (not a caller's main(argv), a test's or a script's)
        limit_data_memory()
    if getattr(args, "ray", None) is not None:
        from cfmlir.distributed import require_ray


        require_ray()
    check_preprocessing_flags(args)
    check = parse_check(args)
    if args.net is not None and args.instances is None and args.timeout is None:
        # a bad network is one line before anything compiles (with --timeout the worker process loads and
        # checks it: this process imports neither torch nor numpy, whose import takes seconds of the limit)
        from cfruntime.errors import UnsupportedOpError
        from cfruntime.network.onnx_loader import check_file

        try:
            check_file(args.net)
        except UnsupportedOpError:
            from cfmlir.tools.discrete_mode import enumerable

            if args.vnnlib is None or not enumerable(args.net, args.vnnlib):  # (else: decided by enumeration)
                raise
    if args.instances is not None:
        from cfmlir.tools.instances import run_instances


        return run_instances(args)
    if args.vnnlib is not None and args.timeout is not None:
        from cfmlir.tools.instances import run_with_timeout


        return run_with_timeout(args, args.start)


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
            eps = parse_eps(args.eps)


    # every later reading of args.certifier (a shipped certifier or a user's .cf file) sees the one chosen
    certifier = auto_certifier.apply(args)
    loaded = load_program(args, certifier)
    if args.vnnlib is not None:
        return finish_vnnlib(args, *vnnlib_instance(args, loaded, certifier, check))


    t0 = time.perf_counter()
    net, prep = load_network_file(net_path, args)


    from cfruntime.properties import DATASETS, load_eran_csv, robustness_property


    images = load_eran_csv(data_path, args.dataset, stop=args.n)
    if args.n is not None and (note := short_data_note(data_path, args.n, len(images))) is not None:
        print(f"warning: {note}", file=sys.stderr)
    channels = DATASETS[images.dataset][1][0]
    prep.value.check_channels(channels)
    warning = prep.warning(net_path, channels)
    if warning is not None:
        print(warning, file=sys.stderr)
    prop = robustness_property(images, eps, prep.value, net.input_shape, num_classes=net.output_size, network=str(net_path))
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
    bar = _Progress(n, args.quiet, f"{Path(str(certifier)).stem}")


    def on_batch(start: int, stop: int) -> None:
        bar.update(stop - start)


    def on_shrink(old: int, new: int, oom) -> None:
        print(f"note: a batch of {old} did not fit in memory ({oom}); going on with batches of {new}", file=sys.stderr)


    interpreter = args.engine == "interpreter"  # float64 on the CPU, whatever --device/--dtype say
    proof = run_proof(args, loaded, certifier, network)  # before any analysis: a refuted rule ends the run here
    warning = proof.warning()
    if warning is not None:
        print(warning, file=sys.stderr)
    with _ray_session(args):
        res = api.certify(api_certifier(args, loaded, certifier), network, prop, engine=args.engine, proof=proof,
                          device="cpu" if interpreter else args.device, dtype="float64" if interpreter else args.dtype,
                          widen=None if interpreter else WIDEN[args.widen], sparse=not args.no_sparse,
                          batch_size=args.batch_size, layer_bounds=want_layers, check=check, on_batch=on_batch,
                          on_shrink=on_shrink, ray=args.ray, **optimize_args(args))
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
        **proof.json(),
    }
    # the interpreter analyses one input at a time
    out["batch_size"] = {"requested": args.batch_size, "used": 1 if interpreter else res.batch_size}
    if optimize_args(args):
        out["optimize"] = {"iterations": args.optimize, "lr": 0.5 if args.lr is None else args.lr}
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
        write_json(args.json, out)
    if not args.quiet:
        nc, ncert = sum(correct), sum(certified)
        pct = lambda a, b: f"{100.0 * a / b:.1f}%" if b else "n/a"  # noqa: E731
        print(f"certifier {certifier} on {net_path.name}, eps {prop.eps:g}, {n} samples (engine: {engine_label(args)})")
        print(f"accuracy:  {nc}/{n} ({pct(nc, n)})")
        print(f"certified: {ncert}/{nc} correctly classified ({pct(ncert, nc)})")
        print(f"time:      compile {compile_s:.3f}s, load {load_s:.3f}s, analysis {analysis_s:.3f}s "
              f"({analysis_s / max(n, 1):.3f}s/sample)")
        if check is not None:
            print(f"check:     {check.summary()}")
    return check_status(check)


def _results_on_error(args, e: BaseException) -> None:
    """A single VNN-LIB run that failed still leaves its result file: ``error`` (``unknown`` when the
    certifier's proof failed: :mod:`cfmlir.proof_gate`)."""
    if getattr(args, "results", None) and getattr(args, "vnnlib", None) is not None and getattr(args, "instances", None) is None:
        try:
            write_results_file(args.results, getattr(e, "result_verdict", "error"))
        except UsageError:
            pass


def main(argv: list[str] | None = None) -> int:
    from cfmlir.tools.deadline import process_start
    from cfruntime.allocator import keep_freed_memory

    keep_freed_memory()  # the engine's temporaries reused, not page-faulted in again (cfruntime.allocator)
    # --timeout counts from the process's start on the command line (as VNN-COMP measures), from this call
    # when called with arguments (in a process that may be running for long)
    start = process_start() if argv is None else time.monotonic()
    command_line = argv is None
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv  # for the JSON's provenance
    args.start = start
    args.command_line = command_line
    try:
        return run(args)
    except KeyboardInterrupt as e:
        print(error_line(e), file=sys.stderr)
        _results_on_error(args, e)
        return 130
    except Exception as e:  # noqa: BLE001 - never show a traceback to a user
        if os.environ.get("CF_RUN_TRACEBACK") and is_internal_error(e):
            raise
        print(error_line(e), file=sys.stderr)
        _results_on_error(args, e)
        return exit_status_of(e)


if __name__ == "__main__":  # pragma: no cover
    # ``python -m cfmlir.tools.cf_run`` (vnncomp/run_instance.sh): run the imported module, so that the
    # exception classes cfmlir.tools.instances raises are the ones main() catches
    from cfmlir.tools.cf_run import main as _main


    sys.exit(_main())
