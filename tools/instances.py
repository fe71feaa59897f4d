"""VNN-COMP mode of ``cf-run``: per-instance deadlines (``--timeout``) and benchmark folders (``--instances``).

**Deadline.**  An instance runs in a *worker*, a child process started with ``multiprocessing``'s
``spawn`` method that imports torch, compiles the certifier once and then analyses one instance per
request.  The parent waits for the answer at most the instance's timeout; when none has come, it
kills the worker (SIGKILL) and the verdict is ``timeout``.  Killing a process is the one way to stop
an analysis that is inside a long torch kernel, a CUDA graph capture or a replay, or a z3/numpy call,
without leaving a half-updated CUDA stream, allocator or graph behind: the driver reclaims the
process's context, and the next instance gets a fresh worker.  A deadline checked between layers
would not stop a long layer, and an exception raised asynchronously (signal) in the middle of a
CUDA graph capture leaves the stream in capture mode.  The worker dies with its parent
(``PR_SET_PDEATHSIG`` on Linux), ignores Ctrl-C (the parent stops it) and leads its own process group,
which the parent kills whole.  The kill is hard: a watchdog thread of the parent fires at the deadline
whatever the parent's main thread is doing (e.g. reading an answer the worker is still writing), and the
parent writes its ``timeout`` without waiting for the worker's exit (tests: test_hard_deadline.py).

* ``cf-run --vnnlib P --timeout S`` (:func:`run_with_timeout`): the ``S`` seconds count from the start
  of the ``cf-run`` process (:func:`cfmlir.tools.deadline.process_start`, as the competition measures:
  Python's own start-up included), the worker's start-up (torch import, certifier compilation) too.
  The parent kills the worker :data:`EXIT_RESERVE_S` before the limit (what is left: killing it, writing
  the result file and the JSON, and the process's exit), so the whole command ends within the limit; the
  parent never imports torch or numpy (their imports would take seconds from the worker's).
* ``cf-run --instances CSV`` (:func:`run_instances`): one worker serves all instances; each instance's
  clock starts when the prepared worker gets it (loading the ONNX and VNN-LIB files, the analysis and
  the counterexample search count), as VNN-COMP's ``prepare_instance.sh`` / ``run_instance.sh`` split
  does; the start-ups (once, and again after each timeout) are reported apart.  A user's certifier has
  its rules for the instance's network proved first (:mod:`cfmlir.proof_gate`, cached), outside the
  instance's clock like the compilation: a proof longer than an instance's limit would otherwise be
  killed with it, again and again.

**instances.csv** (VNN-COMP's format): one instance per line, ``onnx,vnnlib,timeout`` -- paths relative
to the CSV's folder, ``.gz`` files allowed (a path whose file is missing but whose ``.gz`` exists reads
the ``.gz``: the competition's CSVs name ``net.onnx`` next to a shipped ``net.onnx.gz``), the timeout
in seconds.  Blank lines and lines starting with ``#`` are skipped.  A line with another number of
columns, or a timeout that is not a positive number of seconds up to 1e6, is a malformed CSV: one ``error: CSV:LINE: ...``
line, exit status 1, nothing runs.  A missing file, a bad model or property, an unsupported operator
make that instance ``error`` (one ``error: CSV:LINE: ...`` line on stderr) and the run goes on; the
exit status is then 1 (3 when no instance failed but a ``--check`` found unsound bounds).

``--ray [ADDRESS]`` (:func:`instance_task`, :mod:`cfmlir.distributed`): every instance is a Ray task, run
in parallel, each in its Ray worker's own worker process (the same SIGKILL deadline); the lines, files
and summary come out in the CSV's order as without Ray.  The paths are resolved in the driver's working
directory: on several machines the benchmark files must be at the same path on every node.

``--results OUT.csv`` gets one line per instance, written as soon as it is decided:
``onnx,vnnlib,verdict,seconds`` (the paths as written in the CSV), and the folder ``OUT_results/``
one VNN-COMP result file per instance (:func:`result_file_name`).
"""

from __future__ import annotations

import copy
import csv
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from cfmlir.api_args import ArgumentError, check_timeout
from cfmlir.tools import auto_certifier, run_args, run_setup, vnnlib_mode

#: the longest a worker may take to start (import torch, compile the certifier) in --instances mode
PREPARE_LIMIT_S = 600.0
#: seconds before the limit at which the parent stops waiting and kills the worker (then: the verdict
#: ``timeout`` written, the process's exit)
EXIT_RESERVE_S = 0.25
#: seconds before the parent's kill by which the worker answers on its own: input splitting
#: (``--split``) starts no round it predicts to end later (:mod:`cfmlir.input_splitting`)
REPLY_RESERVE_S = 0.25
#: columns of an instances.csv line
CSV_COLUMNS = ("onnx", "vnnlib", "timeout")


# ---------------------------------------------------------------------------------------------
# instances.csv
# ---------------------------------------------------------------------------------------------
@dataclass
class Instance:
    """One line of an instances.csv."""

    line: int
    onnx_text: str  # as written in the CSV
    vnnlib_text: str
    onnx: Path  # resolved: relative to the CSV's folder, ``.gz`` when only that exists
    vnnlib: Path
    timeout: float
    missing: str | None = None  # the error line when a file does not exist


def read_instances(csv_path: str | Path) -> list[Instance]:
    """The instances of ``csv_path``; :class:`~cfruntime.errors.DataError` (``error: CSV:LINE: ...``)
    for a malformed file."""
    from cfruntime.errors import DataError
    from cfruntime.gzio import existing, read_text

    path = Path(csv_path)
    if path.is_dir() and (path / "instances.csv").is_file():  # a benchmark folder
        path = path / "instances.csv"
    if not path.is_file():
        raise DataError("no such instances file" if not path.exists() else "not a file", file=path)
    try:
        text = read_text(path)
    except UnicodeDecodeError:
        raise DataError("not a text file (expected lines onnx,vnnlib,timeout)", file=path) from None
    except OSError as e:
        raise DataError(f"cannot read ({e.strerror or e})", file=path) from None
    base = path.parent
    out: list[Instance] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            row = next(csv.reader([line]))
        except csv.Error as e:
            raise DataError(f"malformed CSV line ({e})", file=path, line=lineno) from None
        row = [c.strip() for c in row]
        if len(row) != len(CSV_COLUMNS):
            raise DataError(f"expected {len(CSV_COLUMNS)} columns ({', '.join(CSV_COLUMNS)} in seconds), got {len(row)}",
                            file=path, line=lineno)
        onnx_text, vnnlib_text, timeout_text = row
        if not onnx_text or not vnnlib_text:
            raise DataError("empty onnx or vnnlib path", file=path, line=lineno)
        try:
            timeout = check_timeout(timeout_text, "timeout")
        except ArgumentError as err:
            raise DataError(str(err), file=path, line=lineno) from None
        onnx, vnnlib = existing(base / onnx_text), existing(base / vnnlib_text)
        missing = [t for t, p in ((onnx_text, onnx), (vnnlib_text, vnnlib)) if not p.is_file()]
        msg = None
        if missing:
            msg = str(DataError("no such file " + " nor ".join(f"'{m}'" for m in missing) + f" (in {base})",
                                file=path, line=lineno))
        out.append(Instance(lineno, onnx_text, vnnlib_text, onnx, vnnlib, timeout, msg))
    if not out:
        raise DataError("no instances (expected lines onnx,vnnlib,timeout)", file=path)
    return out


def result_file_name(inst: Instance) -> str:
    """The name of an instance's result file in ``OUT_results/``: ``<line>_<onnx>_<vnnlib>.txt``
    (the file names without their ``.onnx``/``.vnnlib``/``.gz`` endings)."""

    def stem(text: str) -> str:
        name = Path(text).name
        for end in (".gz", ".onnx", ".vnnlib"):
            if name.endswith(end):
                name = name[: -len(end)]
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)

    return f"{inst.line:04d}_{stem(inst.onnx_text)}_{stem(inst.vnnlib_text)}.txt"


def results_dir(results_csv: str | Path) -> Path:
    """``OUT_results`` next to ``OUT.csv``."""
    p = Path(results_csv)
    return p.with_name(p.stem + "_results")


# ---------------------------------------------------------------------------------------------
# the worker process
# ---------------------------------------------------------------------------------------------
class WorkerTimeout(Exception):
    """The worker did not answer in time (it has been killed)."""


@dataclass
class Outcome:
    """What became of one instance."""

    verdict: str  # unsat / sat / unknown / timeout / error
    seconds: float
    out: dict | None = None  # cf-run's JSON object of the instance (None for timeout and error)
    lines: list[str] = field(default_factory=list)  # its summary lines
    check_error: str | None = None  # the error line of an unsound --check
    message: str | None = None  # the error line, for error (and for unknown when the certifier's proof failed)
    warning: str | None = None  # the proof's warning line (rules the prover left unknown)
    exit_status: int = 0  # of the error (3: the certifier's proof failed, cfmlir.proof_gate)


def _die_with_parent() -> None:
    """Linux: the kernel kills this process when its parent dies (no orphaned analysis)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort
        pass


def _own_group() -> None:
    """Make the worker the leader of its own process group, so that the parent's kill at the deadline
    (:meth:`Worker.hard_kill`) also reaches any process the worker started (a solver, a compiler): none of
    them may keep running, or hold the output pipes open, past the limit."""
    import os

    try:
        os.setpgid(0, 0)
    except OSError:  # not allowed here (a session leader): the worker alone is killed
        pass


def _worker_entry(main, conn, args) -> None:
    """The worker process's first function: it dies with its parent, leads its own process group, then runs
    ``main(conn, args)`` (:func:`_worker_main`)."""
    from cfruntime.allocator import keep_freed_memory

    _die_with_parent()
    _own_group()
    keep_freed_memory()  # the engine's temporaries reused, not page-faulted in again (cfruntime.allocator)
    main(conn, args)


def _worker_main(conn, args) -> None:
    """The worker: compile the certifier, then answer ``("prove", net)`` (the proof gate for that network's
    rules, :mod:`cfmlir.proof_gate`) and ``("run", net, vnnlib, kill_at)`` requests until ``("stop",)``."""
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us

    def failed(e: BaseException) -> tuple:
        if os.environ.get("CF_RUN_TRACEBACK") and run_setup.is_internal_error(e):
            import traceback

            traceback.print_exc()
        return ("failed", run_setup.error_line(e), run_setup.exit_status_of(e), getattr(e, "result_verdict", "error"))

    # (auto resolved here, in the worker: the parent imports neither onnx nor torch; every later reading
    # of args.certifier -- a shipped certifier or a user's .cf file -- sees the certifier chosen)
    certifier = auto_certifier.apply(args)
    try:
        loaded = run_setup.load_program(args, certifier)
        conn.send(("ready", loaded.compile_s))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        conn.send(failed(e))
        return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "prove":
            conn.send(_prove_for(args, loaded, certifier, msg[1], failed))
            continue
        if msg[0] != "run":
            return
        _, net, vnnlib, kill_at = msg
        a = copy.copy(args)
        a.net, a.vnnlib, a.instances, a.json, a.results, a.timeout = net, vnnlib, None, None, None, None
        # input splitting stops by itself before the parent's kill (time.monotonic is the machine's clock)
        a.split_deadline = kill_at - REPLY_RESERVE_S
        try:
            check = run_setup.parse_check(a)
            reply = ("done", *vnnlib_mode.vnnlib_instance(a, loaded, certifier, check))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            reply = failed(e)
        sys.stdout.flush()
        sys.stderr.flush()
        conn.send(reply)


def _prove_for(args, loaded, certifier: str, net: str, failed) -> tuple:
    """The worker's answer to ``("prove", net)``: ``("proved",)`` or ``failed``'s reply (a refuted rule: exit
    status 3; a network that does not load: its error)."""
    try:
        a = copy.copy(args)
        a.net = net
        network, _prep = run_setup.load_network_file(Path(net), a)
        run_setup.run_proof(a, loaded, certifier, network)
        return ("proved",)
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        return failed(e)


class Worker:
    """A worker process (see the module docstring); :meth:`kill` abandons it at once."""

    def __init__(self, args, target=None):
        """``target(conn, args)``: the worker's main function (:func:`_worker_main`; a test gives one that never
        answers)."""
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # never fork a process that may hold a CUDA context or torch threads
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_entry, args=(target or _worker_main, child, args), daemon=True, name="cf-run-worker")
        self.proc.start()
        child.close()
        self.compile_s: float | None = None
        #: set by :meth:`hard_kill` (the deadline's kill): a broken pipe after it is a timeout, not a crash
        self.killed = False

    def _answer(self, until: float):
        """The worker's next message, or :class:`WorkerTimeout` at :func:`time.monotonic` time ``until``
        (the worker is then killed); a worker that died answers ``("failed", <why>, ...)``.

        The deadline is hard: a watchdog thread kills the worker's process group at ``until`` whatever this
        thread is doing then (waiting for the answer, or reading one the worker is still writing -- a
        worker descheduled half-way through a message would hold ``recv`` past the limit), and whatever
        the worker is doing (a torch kernel, the attack, an LP, a compilation or a proof)."""
        import threading

        watchdog = threading.Timer(max(until - time.monotonic(), 0.0), self.hard_kill)
        watchdog.daemon = True
        watchdog.start()
        try:
            if not self.conn.poll(max(until - time.monotonic(), 0.0)):
                self.hard_kill()
                raise WorkerTimeout()
            try:
                return self.conn.recv()
            except (EOFError, OSError):
                if self.killed or time.monotonic() >= until:  # the watchdog's kill, not a crash
                    raise WorkerTimeout() from None
                self.proc.join(5)
                code = self.proc.exitcode
                how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
                self.kill()
                return ("failed", f"error: the analysis process died ({how}; out of memory?)", 1, "error")
        finally:
            watchdog.cancel()

    def hard_kill(self) -> None:
        """SIGKILL the worker and its process group (:func:`_own_group`) at once, without waiting for
        their exit (the kernel reaps them; :meth:`kill` joins).  Safe from any thread, and more than once."""
        import os
        import signal

        self.killed = True
        pid = self.proc.pid
        if pid is None:
            return
        try:
            os.killpg(pid, signal.SIGKILL)  # the worker leads its group (its pid is not reaped yet)
        except OSError:  # no such group yet (the worker has not called setpgid): the worker alone
            pass
        try:
            self.proc.kill()
        except (OSError, ValueError, AttributeError):
            pass

    def prepare(self, until: float) -> float:
        """Wait until the certifier is compiled (its seconds); :class:`cfmlir.tools.run_setup.ReportedError`
        when it cannot be, :class:`WorkerTimeout` at :func:`time.monotonic` time ``until``."""
        from cfmlir.tools.run_setup import ReportedError

        msg = self._answer(until)
        if msg[0] != "ready":
            self.kill()
            raise ReportedError(*msg[1:])
        self.compile_s = msg[1]
        return self.compile_s

    def prove(self, net: Path) -> Outcome | None:
        """Prove the certifier's rules for ``net`` (:mod:`cfmlir.proof_gate`; cached, so the instance's
        own run finds them proved) before the instance's clock starts, as its compilation was: None, or the
        instance's :class:`Outcome` when a rule is refuted or the network does not load."""
        t0 = time.monotonic()
        self.conn.send(("prove", str(net)))
        try:
            msg = self._answer(t0 + PREPARE_LIMIT_S)
        except WorkerTimeout:
            return Outcome("error", 0.0, message=f"error: the proof of the certifier's rules did not end within "
                                                 f"{PREPARE_LIMIT_S:g}s", exit_status=1)
        if msg[0] == "proved":
            return None
        _, line, status, verdict = msg
        return Outcome(verdict, 0.0, message=line, exit_status=status)

    def run(self, net: Path | None, vnnlib: Path, kill_at: float) -> Outcome:
        """Decide one instance, the worker killed at :func:`time.monotonic` time ``kill_at`` (:func:`kill_time`)
        when it has not answered (``net`` None: cf-run's default network)."""
        t0 = time.monotonic()
        self.conn.send(("run", None if net is None else str(net), str(vnnlib), kill_at))
        try:
            msg = self._answer(kill_at)
        except WorkerTimeout:
            return Outcome("timeout", time.monotonic() - t0)
        seconds = time.monotonic() - t0
        if msg[0] == "done":
            _, out, lines, check_error, warning = msg
            return Outcome(out["verdict"], seconds, out, lines, check_error, warning=warning)
        _, line, status, verdict = msg
        return Outcome(verdict, seconds, message=line, exit_status=status)

    @property
    def alive(self) -> bool:
        """Can the worker take another request (not killed, not dead)?"""
        return not self.killed and self.proc.is_alive()

    @property
    def spent(self) -> bool:
        """Should the worker be replaced before the next request: dead, killed, or holding more than half of its
        data limit (:func:`cfruntime.memory_limit.grown_past_share`: a process's data only grows)?"""
        from cfruntime.memory_limit import grown_past_share

        return not self.alive or grown_past_share(self.proc.pid)

    def kill(self, wait: float = 10.0) -> None:
        """Kill the worker (and its group) and wait at most ``wait`` seconds for its exit."""
        if self.proc.is_alive():
            self.hard_kill()
        self.proc.join(wait)
        self.conn.close()

    def close(self) -> None:
        """Stop the worker (politely when it is idle, else by killing it)."""
        if self.proc.is_alive():
            try:
                self.conn.send(("stop",))
            except (OSError, ValueError):
                pass
            self.proc.join(5)
        self.kill()


def kill_time(limit: float, start: float | None = None) -> float:
    """When to kill the worker of an instance with ``limit`` seconds from ``start`` (default now):
    :data:`EXIT_RESERVE_S` before, so that the verdict is written within the limit."""
    return (time.monotonic() if start is None else start) + limit - EXIT_RESERVE_S


# ---------------------------------------------------------------------------------------------
# cf-run --vnnlib P --timeout S
# ---------------------------------------------------------------------------------------------
def run_with_timeout(args, start: float) -> int:
    """One VNN-LIB instance within ``args.timeout`` seconds of :func:`time.monotonic` time ``start`` (the
    process's start, :func:`cfmlir.tools.deadline.process_start`); cf-run's exit status."""

    kill_at = kill_time(args.timeout, start)
    if kill_at <= time.monotonic():  # the time is up already: no worker to start
        outcome = Outcome("timeout", time.monotonic() - start)
    else:
        worker = Worker(args)
        try:
            worker.prepare(kill_at)
            outcome = worker.run(Path(args.net) if args.net else None, Path(args.vnnlib), kill_at)
        except WorkerTimeout:
            outcome = Outcome("timeout", time.monotonic() - start)
        finally:
            # its answer is in (or the limit has come): killed, not waited for (torch's teardown takes
            # seconds; the kernel reaps it after this process's exit)
            worker.kill(wait=0.0)
    if outcome.message is not None:
        raise run_setup.ReportedError(outcome.message, outcome.exit_status or 1, outcome.verdict)
    if outcome.verdict != "timeout":
        return vnnlib_mode.finish_vnnlib(args, outcome.out, outcome.lines, outcome.check_error, outcome.warning)
    elapsed = time.monotonic() - start
    net = args.net
    if net is None:
        from cfruntime.default_data import default_network_path

        net = default_network_path()
    certifier = auto_certifier.resolve(args.certifier, args.net)
    out = {"certifier": str(certifier), "network": str(net), "vnnlib": str(args.vnnlib), "verdict": "timeout",
           "timeout_s": args.timeout, "times": {"elapsed_s": elapsed}}
    lines = [f"certifier {certifier} on {Path(net).name}, property {Path(args.vnnlib).name} "
             f"(engine: {run_setup.engine_label(args)})",
             "verdict:   timeout",
             f"time:      {elapsed:.3f}s (limit {args.timeout:g}s)"]
    return vnnlib_mode.finish_vnnlib(args, out, lines, None)


# ---------------------------------------------------------------------------------------------
# cf-run --instances CSV
# ---------------------------------------------------------------------------------------------
def run_instances(args) -> int:
    """Every instance of ``args.instances``; cf-run's exit status (see the module docstring)."""
    from cfruntime.results import VERDICTS

    t_start = time.perf_counter()
    certifier = args.certifier or run_args.DEFAULT_CERTIFIER  # 'auto': chosen per network (_instance_args)
    instances = read_instances(args.instances)
    csv_path = Path(args.instances)
    if csv_path.is_dir():
        csv_path = csv_path / "instances.csv"
    out_csv, res_dir, csv_file, writer = None, None, None, None
    if args.results:
        out_csv = Path(args.results)
        res_dir = results_dir(out_csv)
        try:
            res_dir.mkdir(parents=True, exist_ok=True)
            csv_file = open(out_csv, "w", encoding="utf-8", newline="")
        except OSError as e:
            raise run_args.UsageError(f"cannot write {e.filename or out_csv}: {e.strerror or e}") from None
        writer = csv.writer(csv_file, lineterminator="\n")
    if not args.quiet:
        print(f"certifier {certifier} on {len(instances)} instance(s) of {csv_path} (engine: {run_setup.engine_label(args)})",
              flush=True)
    counts = {v: 0 for v in VERDICTS}
    rows, unsound, refuted, warned = [], 0, 0, set()
    startup = _Startup()
    outcomes = _outcomes_on_ray(args, instances, startup) if getattr(args, "ray", None) is not None \
        else _outcomes_here(args, instances, startup)
    try:
        for k, (inst, limit, outcome) in enumerate(outcomes, start=1):
            if outcome.message is not None and inst.missing is None:
                outcome.message = _at_line(outcome.message, csv_path, inst.line)
            counts[outcome.verdict] += 1
            if outcome.message:
                print(outcome.message, file=sys.stderr, flush=True)
            if outcome.exit_status == run_args.EXIT_UNSOUND:  # the certifier's proof failed
                refuted += 1
            if outcome.warning is not None and outcome.warning not in warned:  # once per run
                warned.add(outcome.warning)
                print(outcome.warning, file=sys.stderr, flush=True)
            if outcome.check_error:
                unsound += 1
                print(_at_line(outcome.check_error, csv_path, inst.line), file=sys.stderr, flush=True)
            if writer is not None:
                cex = (outcome.out or {}).get("counterexample")
                vnnlib_mode.write_results_file(res_dir / result_file_name(inst), outcome.verdict, cex)
                writer.writerow([inst.onnx_text, inst.vnnlib_text, outcome.verdict, f"{outcome.seconds:.3f}"])
                csv_file.flush()
            rows.append({"line": inst.line, "onnx": inst.onnx_text, "vnnlib": inst.vnnlib_text, "verdict": outcome.verdict,
                         "time_s": outcome.seconds, "timeout_s": limit, "message": outcome.message, "result": outcome.out})
            if not args.quiet:
                print(f"[{k}/{len(instances)}] {inst.onnx_text} {inst.vnnlib_text}: {outcome.verdict} "
                      f"({outcome.seconds:.3f}s)", flush=True)
    finally:
        outcomes.close()  # stops the worker (or cancels the Ray tasks) when the loop ended early
        if csv_file is not None:
            csv_file.close()
    startup_s = startup.seconds
    total_s = time.perf_counter() - t_start
    instances_s = sum(r["time_s"] for r in rows)
    if args.json:
        run_setup.write_json(args.json, {"certifier": str(certifier), "instances_csv": str(csv_path), "instances": rows,
                                       "counts": counts, "times": {"total_s": total_s, "instances_s": instances_s,
                                                                   "startup_s": startup_s}})
    if not args.quiet:
        print("verdicts:  " + ", ".join(f"{counts[v]} {v}" for v in VERDICTS))
        proving = " and proving the certifier's rules" if run_setup.user_certifier(args) else ""
        print(f"time:      {total_s:.3f}s total ({instances_s:.3f}s in the instances, {startup_s:.3f}s starting "
              f"the analysis process{proving})")
        if out_csv is not None:
            print(f"results:   {out_csv} (result files in {res_dir})")
    if counts["error"]:
        return 1
    return run_args.EXIT_UNSOUND if unsound or refuted else 0


@dataclass
class _Startup:
    """The seconds spent starting analysis processes (once, and again after each timeout)."""

    seconds: float = 0.0


def _limit(args, inst: Instance) -> float:
    """An instance's time limit: ``--timeout`` when given, else its CSV line's."""
    return args.timeout if args.timeout is not None else inst.timeout


def _instance_args(args, inst: Instance, chosen: dict):
    """``args`` for one instance: with ``--certifier auto`` a copy whose certifier is the one ``auto`` chooses
    for the instance's network (:func:`cfmlir.tools.auto_certifier.apply`, which also sets the branch-and-bound
    root optimisation of a certifier with parameters), ``chosen`` caching the choice per network file."""
    if getattr(args, "certifier", None) != auto_certifier.AUTO:
        return args
    key = str(inst.onnx)
    if key not in chosen:
        a = copy.copy(args)
        a.net = key
        auto_certifier.apply(a)
        a.net = args.net
        chosen[key] = a
    return chosen[key]


def _worker_key(args) -> tuple:
    """What a worker process is started with and keeps for every instance it decides: the certifier and the
    branch-and-bound settings ``auto`` chooses with it per network (:func:`_instance_args`; a product network's
    root optimisation differs from a plain one's under the same certifier)."""
    return (args.certifier, getattr(args, "bab_optimize", None), getattr(args, "bab_certifier", None),
            getattr(args, "bab_root_optimize", None))


def _start_worker(args, startup: _Startup) -> Worker:
    """A new :class:`Worker` for ``args``, prepared within ``PREPARE_LIMIT_S`` (else :class:`WorkerTimeout`);
    the seconds its start took, failed or not, are added to ``startup``."""
    t0 = time.perf_counter()
    worker = Worker(args)
    try:
        worker.prepare(time.monotonic() + PREPARE_LIMIT_S)
    finally:
        startup.seconds += time.perf_counter() - t0
    return worker


def _decide(worker: Worker, prove: bool, onnx: Path, vnnlib: Path, limit: float, startup: _Startup) -> Outcome:
    """The Outcome of one instance in ``worker``, killed at ``limit`` seconds; with ``prove`` (a user's certifier)
    its rules for the network are proved first, before the instance's clock starts, and the seconds that took
    are added to ``startup`` (an outcome of the proof, a failed one, is the instance's)."""
    outcome = None
    if prove:
        t0 = time.perf_counter()
        outcome = worker.prove(onnx)
        startup.seconds += time.perf_counter() - t0
    if outcome is None:
        outcome = worker.run(onnx, vnnlib, kill_time(limit))
    return outcome


def _outcomes_here(args, instances: list[Instance], startup: _Startup):
    """``(instance, its limit, its Outcome)`` in order, decided by one worker process of this machine
    (a fresh one after a timeout)."""

    workers: dict[tuple, Worker] = {}  # one per certifier and search settings (_worker_key)
    chosen: dict = {}
    try:
        for inst in instances:
            limit = _limit(args, inst)
            if inst.missing is not None:
                yield inst, limit, Outcome("error", 0.0, message=inst.missing)
                continue
            a = _instance_args(args, inst, chosen)
            key = _worker_key(a)
            worker = workers.get(key)
            if worker is None:
                try:
                    worker = workers[key] = _start_worker(a, startup)
                except WorkerTimeout:
                    raise run_args.UsageError(f"the analysis process did not start within {PREPARE_LIMIT_S:g}s") from None
            outcome = _decide(worker, run_setup.user_certifier(a), inst.onnx, inst.vnnlib, limit, startup)
            if worker.spent:  # killed at the timeout, died, or grown: the next instance gets a fresh one
                workers.pop(key).close()
            yield inst, limit, outcome
    finally:
        for worker in workers.values():
            worker.close()


# ---------------------------------------------------------------------------------------------
# cf-run --instances CSV --ray [ADDRESS]
# ---------------------------------------------------------------------------------------------
#: a Ray worker's analysis process: (its key, the Worker), kept for the next instance of the same run
_RAY_WORKER: list = [None, None]


def _ray_worker_key(args, cwd: str) -> str:
    return repr((sorted((k, repr(v)) for k, v in vars(args).items()), cwd))


def share_memory_among_cpus() -> None:
    """Tell this process's analysis processes (they inherit the environment) that one search per CPU may run on
    this machine (Ray's tasks, one per CPU), so each search's pool takes its share of the memory
    (:func:`cfmlir.bab.options.default_memory_bytes`); a count set by the user is kept."""
    import os

    from cfmlir.bab.options import CONCURRENT_SEARCHES_ENV

    os.environ.setdefault(CONCURRENT_SEARCHES_ENV, str(os.cpu_count() or 1))


def instance_task(args, cwd: str, onnx: str, vnnlib: str, limit: float):
    """One instance as a Ray task (:mod:`cfmlir.distributed`): ``(Outcome, start-up seconds)``.  The
    instance runs in this Ray worker's own analysis process (:class:`Worker`, started at its first
    instance, and again after a timeout), so its deadline is the same SIGKILL as without Ray; the
    paths are relative to ``cwd``, the driver's working directory.  A worker that cannot start (a
    certifier that does not compile) is a :class:`cfmlir.distributed.RemoteFailure`: the driver raises
    it and the run stops, as without Ray."""
    import os

    from cfmlir.distributed import RemoteFailure

    if os.path.isdir(cwd) and os.getcwd() != cwd:
        os.chdir(cwd)  # before a Worker is spawned: it inherits the directory
    share_memory_among_cpus()  # so does its environment: one instance per CPU here, each with a search's pool
    key, worker = _RAY_WORKER
    if worker is not None and (key != _ray_worker_key(args, cwd) or not worker.alive):
        worker.close()
        worker = None
    startup = _Startup()
    if worker is None:
        try:
            worker = _start_worker(args, startup)
        except WorkerTimeout:
            return RemoteFailure(f"error: the analysis process did not start within {PREPARE_LIMIT_S:g}s")
        except run_setup.ReportedError as e:  # the certifier does not compile: the run stops, as without Ray
            return RemoteFailure(str(e))
    _RAY_WORKER[:] = [_ray_worker_key(args, cwd), worker]
    outcome = _decide(worker, run_setup.user_certifier(args), Path(onnx), Path(vnnlib), limit, startup)
    if worker.spent:  # killed at the timeout, died, or grown: the next instance gets a fresh one
        worker.close()
        _RAY_WORKER[:] = [None, None]
    return outcome, startup.seconds


def _outcomes_on_ray(args, instances: list[Instance], startup: _Startup):
    """``(instance, its limit, its Outcome)`` in the CSV's order, every instance a Ray task
    (:func:`instance_task`) on the cluster of ``--ray``; the tasks run in parallel, one per CPU."""
    import os

    from cfmlir import distributed

    with distributed.session(args.ray):
        cwd = os.getcwd()
        task_args = copy.copy(args)
        task_args.ray = None
        limits = {inst.line: _limit(args, inst) for inst in instances}
        chosen: dict = {}
        refs = {inst.line: distributed.submit(instance_task, _instance_args(task_args, inst, chosen), cwd,
                                              str(inst.onnx), str(inst.vnnlib), limits[inst.line])
                for inst in instances if inst.missing is None}
        try:
            for inst in instances:
                limit = limits[inst.line]
                if inst.missing is not None:
                    yield inst, limit, Outcome("error", 0.0, message=inst.missing)
                    continue
                outcome, startup_s = distributed.result(refs.pop(inst.line))
                startup.seconds += startup_s
                yield inst, limit, outcome
        finally:
            # only the tasks whose results were never asked for (an error or Ctrl-C here): cancelling a task
            # that is just completing races with Ray's own completion and can abort this process (Ray 2.60's
            # "Tried to complete task that was not pending")
            if refs:
                distributed.cancel(list(refs.values()))


def _at_line(message: str, csv_path: Path, line: int) -> str:
    """``error: CSV:LINE: <message>`` (a message already naming that line is kept)."""
    where = f"{csv_path}:{line}: "
    body = message[len("error: "):] if message.startswith("error: ") else message
    return message if body.startswith(where) else f"error: {where}{body}"


# ---------------------------------------------------------------------------------------------
# vnncomp/prepare_instance.sh
# ---------------------------------------------------------------------------------------------
def prepare_main(argv: list[str] | None = None) -> int:
    """``python -m cfmlir.tools.instances prepare CERTIFIER ONNX VNNLIB``: compile the certifier (into the
    cache, so ``run_instance.sh`` finds it compiled), check that the network and the property load and
    match, and prove a user's certifier's rules for this network (:mod:`cfmlir.proof_gate`, cached for
    ``run_instance.sh``); one ``error:`` line and exit status 1 when they do not load (a network the loader
    refuses is ready when the property can be decided by enumeration, :mod:`cfmlir.tools.discrete_mode`), 3 when
    a rule is refuted.  No analysis."""

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 4 or argv[0] != "prepare":
        print("error: usage: python -m cfmlir.tools.instances prepare CERTIFIER ONNX VNNLIB", file=sys.stderr)
        return 1
    _, certifier, net, vnnlib = argv
    certifier = auto_certifier.resolve(certifier, net)
    try:
        from cfmlir.tools.discrete_mode import enumerable
        from cfruntime.errors import PropertyError, UnsupportedOpError
        from cfruntime.properties import parse_vnnlib

        args = run_args.build_parser().parse_args(["--certifier", certifier])
        loaded = run_setup.load_program(args, certifier)
        try:
            network, _prep = run_setup.load_network_file(Path(net))
        except UnsupportedOpError:
            if not enumerable(net, vnnlib):
                raise
            return 0  # decided by enumeration (tools/discrete_mode.py): no rule to prove
        prop = parse_vnnlib(vnnlib)
        if prop.num_inputs != network.input_size or prop.num_outputs != network.output_size:
            raise PropertyError(f"property has {prop.num_inputs} inputs and {prop.num_outputs} outputs, the network "
                                f"{network.input_size} and {network.output_size}", file=vnnlib)
        warning = run_setup.run_proof(args, loaded, certifier, network).warning()
        if warning is not None:
            print(warning, file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - one line, never a traceback
        print(run_setup.error_line(e), file=sys.stderr)
        return run_setup.exit_status_of(e)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(prepare_main())
