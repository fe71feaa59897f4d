"""What one ``cf-run`` analysis needs, whatever the mode: the certifier's program (:func:`load_program`, the
compiled module or the interpreter's program), the network file (:func:`load_network_file`), the engine,
the soundness check of ``--check`` (:func:`parse_check`), the JSON writer, and how an exception becomes
the one line a user sees (:func:`error_line`, :func:`is_internal_error`).  Used by the dataset mode
(:mod:`cfmlir.tools.cf_run`), the VNN-LIB mode (:mod:`cfmlir.tools.vnnlib_mode`) and the instances runner
(:mod:`cfmlir.tools.instances`)."""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cfmlir.tools.run_args import DEFAULT_CHECK_TOL, EXIT_UNSOUND, UsageError, preprocessing_flags
from cfruntime.errors import UserError

#: ``check_bounds`` parameters of ``--check``: per box 256 uniform samples, the centre and the two extreme
#: corners, 64 vertices (all of them when there are fewer); 20 PGD steps on every margin and, per hidden layer,
#: side and box, on the 4 neurons whose sampled values came closest to their bounds (``check_bounds``' default
#: is 16: 2-4 times the cost, PGD being most of it, and it caught no mutant that 4 missed)
CHECK_PARAMS = {"n_samples": 256, "n_vertices": 64, "pgd_steps": 20, "pgd_neurons": 4, "pgd_restarts": 1}
#: violations per layer printed / kept in the JSON
CHECK_SHOWN, CHECK_KEPT = 3, 20


@dataclass
class LoadedProgram:
    """The certifier as ``--engine`` runs it, the seconds it took (imports excluded), and whether the
    compiled module came from the cache (None for the interpreter)."""

    program: object
    compile_s: float
    cache_hit: bool | None = None
    cache_file: Path | None = None


def load_program(args, certifier: str) -> LoadedProgram:
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


def engine_label(args) -> str:
    if args.engine == "interpreter":
        return "interpreter"
    mode = ("dense" if args.no_sparse else "g-BSCR") + (", no rewrites" if args.no_rewrite else "")
    widened = args.widen == "on" or (args.widen == "auto" and args.dtype != "float64")
    opt = f", optimised ({args.optimize} iterations)" if getattr(args, "optimize", None) else ""
    return f"compiled, {mode}, {args.dtype}{' widened' if widened else ''}, batch {args.batch_size}{opt}"


def optimize_args(args) -> dict:
    """``optimize``/``lr`` of :func:`cfmlir.certify` from ``--optimize N`` and ``--lr`` (empty without)."""
    if args.optimize is None and args.lr is None:
        return {}
    return {"optimize": args.optimize, "lr": args.lr}


def make_engine(args, prog):
    """The :mod:`cfmlir.engines` engine of ``prog`` (``load_program``'s) with this run's options; with
    ``--optimize`` the optimising engine (VNN-LIB rows: no early stop, their thresholds are not 0)."""
    from cfmlir.engines import CompiledEngine, InterpreterEngine

    opt = optimize_args(args)
    if opt:
        from cfmlir.optimize import OptimizeError, OptimizeOptions, OptimizingEngine, options_from, require_params

        if args.engine == "interpreter":
            raise OptimizeError("--optimize runs the compiled engine, not the interpreter")
        options = options_from(opt["optimize"], opt["lr"])
        if options is None:
            raise OptimizeError("--lr needs --optimize N")
        require_params(prog, Path(str(getattr(args, "certifier", None) or prog.name)).stem)
        options = OptimizeOptions(options.iterations, options.lr, options.lr_decay, False, options.patience)
        return OptimizingEngine(prog, options, sparse=not args.no_sparse, dtype=args.dtype, device=args.device,
                                widen=args.widen)
    if args.engine == "interpreter":
        return InterpreterEngine(prog)
    return CompiledEngine(prog, sparse=not args.no_sparse, dtype=args.dtype, device=args.device, widen=args.widen)


def api_certifier(args, loaded: LoadedProgram, certifier: str):
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
    return Certifier(name, text, file, not args.no_rewrite, compiled, loaded.cache_hit, loaded.compile_s, program,
                     shipped=not user_certifier(args, certifier))


def run_proof(args, loaded: LoadedProgram, certifier: str, network):
    """The proof gate of this run (:func:`cfmlir.proof_gate.proof_for`) for the rules ``network`` makes the
    certifier run: its :class:`~cfmlir.proof_gate.Proof` (``--proof-timeout``); a refuted rule, or with
    ``--require-proof`` an unknown one, raises (exit status 3)."""
    from cfmlir.proof_gate import proof_for

    return proof_for(api_certifier(args, loaded, certifier), network, timeout=getattr(args, "proof_timeout", None),
                     require=bool(getattr(args, "require_proof", False)))


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

    def __call__(self, mnet, lb, ub, layers: dict, first: int = 0, inside=None) -> None:
        """Check one batch (``inside``: which points lie in each box's subdomain, ``check_bounds``')."""
        from cfruntime.soundness import check_bounds

        t0 = time.perf_counter()
        st: dict = {}
        found = check_bounds(mnet, lb, ub, layers, tol=self.tol, keep_points=False, max_per_layer=CHECK_KEPT, stats=st,
                             inside=inside, **CHECK_PARAMS)
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


def user_certifier(args, certifier: str | None = None) -> bool:
    """True when ``certifier`` (by default ``--certifier``) is a ``.cf`` file rather than a shipped
    certifier's name (a path to a shipped file, or a byte-identical copy of one, counts as a file)."""
    from cfmlir.certifiers import certifier_names

    c = args.certifier if certifier is None else certifier
    if c is None:
        return False
    if c in certifier_names():
        # the compiled engine reads a file of that name when there is one, the interpreter never does
        return args.engine == "compiled" and Path(c).exists()
    return True


def parse_check(args):
    """The :class:`_SoundnessCheck` of this run, or None (``--check``/``--no-check``/the default)."""
    tol = DEFAULT_CHECK_TOL
    if args.check_tol is not None:
        try:
            tol = float(args.check_tol)
        except ValueError:
            raise UsageError(f"--check-tol must be a number, got '{args.check_tol}'") from None
        if not math.isfinite(tol) or tol < 0:
            raise UsageError(f"--check-tol must be a finite number >= 0, got {args.check_tol}")
    on = args.check if args.check is not None else user_certifier(args)
    if not on:
        if args.check_tol is not None:
            why = "--no-check" if args.check is False else "a shipped certifier given by name is not checked unless --check"
            raise UsageError(f"--check-tol applies to the soundness check, which is off here ({why})")
        return None
    return _SoundnessCheck(tol, "region" if args.vnnlib is not None else "sample")


def check_error_line(check) -> str | None:
    """The error line of a check that found a violation, else None."""
    if check is None or not check.unsound:
        return None
    consequence = "nothing is certified" if check.unit == "sample" else "no unsat verdict is given"
    return (f"error: unsound bounds: the soundness check found {check.violations} violated bound(s) in "
            f"{len(check.counts)} layer(s); {consequence}")


def check_status(check) -> int:
    """0, or :data:`EXIT_UNSOUND` (with its error line) when the check found a violation."""
    msg = check_error_line(check)
    if msg is None:
        return 0
    print(msg, file=sys.stderr)
    return EXIT_UNSOUND


def load_network_file(net_path: Path, args=None, keep_output_softmax: bool = False):
    """The network at ``net_path``, read with its flatten order, and its resolved preprocessing
    (:class:`~cfruntime.properties.preprocessing.ResolvedPreprocessing`: the flags of ``args``, else
    its manifest entry, else the defaults)."""
    from cfruntime.errors import NetworkError
    from cfruntime.network import load_onnx

    if not net_path.is_file():
        raise NetworkError("no such network file", file=net_path)
    prep = network_preprocessing(net_path, args)
    return load_onnx(net_path, keep_output_softmax=keep_output_softmax, **prep.value.load_kwargs()), prep


def network_preprocessing(net_path: Path, args=None):
    """The preprocessing of the network at ``net_path``: the flags of ``args``, else its manifest entry, else
    the defaults (:func:`~cfruntime.properties.preprocessing.resolve_preprocessing`)."""
    from cfruntime.properties.preprocessing import resolve_preprocessing

    flags = preprocessing_flags(args) if args is not None else {}
    return resolve_preprocessing(net_path, **flags, manifest=getattr(args, "manifest", None))


def write_json(path, obj) -> None:
    """``obj`` as strict JSON (no ``NaN``/``Infinity``: a non-finite number is an error, nothing written)."""
    try:
        text = json.dumps(obj, indent=1, allow_nan=False)
    except ValueError:
        raise UsageError(f"cannot write {path}: the results hold a non-finite number at {_non_finite_key(obj)}") from None
    try:
        Path(path).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _non_finite_key(obj, where: str = "") -> str:
    """The JSON path (``"a"[3]["b"]``) of the first non-finite float in ``obj``."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return where or "the top level"
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, (list, tuple)) else ()
    for k, v in items:
        found = _non_finite_key(v, f"{where}[{json.dumps(k) if isinstance(k, str) else k}]")
        if found:
            return found
    return ""


def _one_line(msg: str) -> str:
    msg = " ".join(str(msg).split())
    return msg


class ReportedError(UserError):
    """An error whose one-line message (``error: ...``) is already formatted (e.g. by a child process), with
    the exit status and result-file verdict of the error it reports."""

    def __init__(self, message: str, exit_status: int = 1, result_verdict: str = "error"):
        super().__init__(message)
        self.exit_status = exit_status
        self.result_verdict = result_verdict

    @property
    def diagnostic(self) -> str:
        return str(self)


def error_line(e: BaseException) -> str:
    """The one ``error:`` line that reports ``e`` to a user (never a traceback): a user error
    (:class:`cfruntime.errors.UserError`: compiler diagnostics, runtime and engine errors, bad options)
    says its own line."""
    if isinstance(e, UserError):
        return _one_line(e.diagnostic)
    if isinstance(e, OSError):
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        return f"error: {where}{_one_line(e.strerror or str(e))}"
    if isinstance(e, KeyboardInterrupt):
        return "error: interrupted"
    if isinstance(e, MemoryError):  # outside the analysis (which retries with smaller batches)
        return f"error: out of memory ({_one_line(str(e)) or 'allocation failed'})"
    return (f"error: internal error ({type(e).__name__}): {_one_line(str(e))} "
            "(set CF_RUN_TRACEBACK=1 for details)")


def exit_status_of(e: BaseException) -> int:
    """cf-run's exit status for an error: its own (``exit_status``: 3 for a certifier whose proof failed,
    :mod:`cfmlir.proof_gate`), else 1."""
    status = getattr(e, "exit_status", None)
    return status if isinstance(status, int) and status > 0 else 1


def is_internal_error(e: BaseException) -> bool:
    """True for an exception that is a bug rather than a user error (``CF_RUN_TRACEBACK=1`` shows its traceback)."""
    return not isinstance(e, (UserError, OSError, KeyboardInterrupt, MemoryError))
