"""Scale-out on Ray (the optional extra ``cfmlir[ray]``): batches of a robustness property, or the
instances of a VNN-COMP benchmark, as tasks of a Ray cluster.

* :func:`ray_bounds` -- what :func:`cfmlir.certify` (``ray=ADDRESS``) and ``cf-run --ray`` run in dataset
  mode: the boxes are cut into ``batch_size`` chunks, each chunk is one task that runs
  :func:`cfmlir.engines.bounds_in_batches` (the same loop as in one process, so the same bounds) and
  returns the margins' bounds (and every layer's, when asked); the chunks are reassembled in order.
* :func:`submit` / :func:`result` -- any module-level function as a task (``cf-run --instances --ray``,
  :mod:`cfmlir.tools.instances`, whose task keeps the per-instance worker process and its SIGKILL
  timeout).

A Ray worker compiles the certifier (from its source text: nodes need no shared files) and unpickles the
network once, and keeps them for the next tasks (:func:`_engine_and_network`, keyed by the certifier's
source and options and the network's path).  ``address``: ``"local"`` starts a local cluster of
``os.cpu_count()`` CPUs (``CFMLIR_RAY_CPUS`` to change); ``"HOST:PORT"`` joins a running one
(``ray start --head`` there).  When Ray is already initialised in this process (``ray.init`` by the
caller), that cluster is used.  Nothing here imports :mod:`ray` before it is needed, and without Ray
installed the first use is a :class:`RayError` saying to install ``cfmlir[ray]``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from dataclasses import dataclass

from cfruntime.errors import CfRuntimeError, UserError

#: what a user reads when Ray is not installed
RAY_MISSING = "--ray needs Ray, which is not installed: pip install 'cfmlir[ray]'"
#: compiled certifiers and networks a Ray worker keeps (the most recently used ones)
WORKER_CACHE_SIZE = 4


class RayError(CfRuntimeError):
    """Ray is not installed, the cluster cannot be reached, or a task failed (one line)."""


class RemoteFailure(CfRuntimeError):
    """A user error inside a task, carried back as its one-line message (``error: ...``): a task returns
    it, :func:`result` raises it in the driver."""

    def __init__(self, line: str):
        self.text = " ".join(str(line).split())  # not ``line``: CfRuntimeError's line number
        super().__init__(self.text)

    @property
    def message(self) -> str:
        return self.text


def _ray():
    """The :mod:`ray` module, or :class:`RayError` (:data:`RAY_MISSING`)."""
    try:
        import ray
    except ImportError:
        raise RayError(RAY_MISSING) from None
    return ray


def require_ray() -> None:
    """:class:`RayError` when Ray cannot be imported (checked before any work starts)."""
    _ray()


def _local_cpus() -> int:
    text = os.environ.get("CFMLIR_RAY_CPUS")
    if text is None:
        return os.cpu_count() or 1
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n <= 0:
        raise RayError(f"CFMLIR_RAY_CPUS must be a positive integer, got '{text}'")
    return n


def connect(address: str | None = "local") -> bool:
    """Initialise Ray in this process unless it is already: a local cluster (``address`` None or
    ``"local"``) or the running cluster at ``address``.  True when this call initialised it.  Quiet: no
    dashboard, no log lines on the terminal, the workers' output not forwarded."""
    import logging

    ray = _ray()
    if ray.is_initialized():
        return False
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR,
             "configure_logging": True}
    local = address in (None, "", "local")
    if not local:
        _probe(address)
    try:
        if local:
            ray.init(num_cpus=_local_cpus(), **quiet)
        else:
            with _stderr_to_file() as log:  # Ray's C++ client logs each retry of an unreachable or refusing head
                try:
                    ray.init(address=address, **quiet)
                except Exception:  # noqa: BLE001 - reported as one line below (Ctrl-C passes)
                    log.seek(0)
                    lines = [ln.strip() for ln in log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
                    if lines:  # the last thing Ray said (e.g. an authentication token that does not match)
                        said = re.sub(r"^\[[^]]*\]\s*[\w.]+:\d+:\s*", "", lines[-1])  # no "[time W pid] file.cc:N:"
                        raise RayError(f"cannot reach the Ray cluster at {address}: {said[-300:]}") from None
                    raise
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        where = "a local Ray cluster" if local else f"the Ray cluster at {address}"
        raise RayError(f"cannot start or reach {where}: {' '.join(str(exc).split())[:300]}") from None
    return True


def _probe(address: str, timeout_s: float = 10.0) -> None:
    """A :class:`RayError` at once when nothing listens at ``HOST:PORT`` (``ray://HOST:PORT`` too; other
    forms, such as ``auto``, are left to Ray): Ray itself retries an unreachable head for minutes."""
    import socket

    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayError(f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}): start its head with "
                       "`ray start --head` there, or give no ADDRESS for a local cluster") from None


@contextlib.contextmanager
def _stderr_to_file():
    """File descriptor 2 redirected into a temporary file (yielded) for the block."""
    import sys
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            yield log
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


@contextlib.contextmanager
def session(address: str | None = "local"):
    """``with session(address):`` -- Ray initialised for the block, and shut down after it when the
    block initialised it."""
    started = connect(address)
    try:
        yield
    finally:
        if started:
            _ray().shutdown()


#: the Ray remote function of each function submitted (made once per process)
_REMOTE: dict = {}


def submit(fn, *args, num_gpus: float = 0, **kwargs):
    """Run the module-level function ``fn(*args, **kwargs)`` as a Ray task (one CPU, no retry): its
    object reference."""
    ray = _ray()
    if fn not in _REMOTE:
        _REMOTE[fn] = ray.remote(fn)
    return _REMOTE[fn].options(num_cpus=1, num_gpus=num_gpus, max_retries=0).remote(*args, **kwargs)


def result(ref):
    """The value of a task (:func:`submit`): a :class:`RemoteFailure` it returned is raised here, a task
    that failed in Ray (a worker died, the node was lost) is a :class:`RayError`."""
    ray = _ray()
    try:
        value = ray.get(ref)
    except ray.exceptions.RayError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, CfRuntimeError):
            raise RemoteFailure(str(cause)) from None
        first = " ".join(str(cause or exc).split())[:300]
        raise RayError(f"a Ray task failed ({type(exc).__name__}): {first}") from None
    if isinstance(value, RemoteFailure):
        raise value
    return value


def cancel(refs) -> None:
    """Cancel tasks that are no longer wanted (an error or Ctrl-C in the driver).  Finished tasks are left
    alone: cancelling a task while Ray completes it is a race inside Ray that aborts the driver ("Tried to
    complete task that was not pending", ray-project/ray#54527), so callers pass only the tasks whose
    results they never took, and those already done are filtered out here."""
    ray = _ray()
    refs = list(refs)
    if not refs:
        return
    with contextlib.suppress(Exception):
        _done, refs = ray.wait(refs, num_returns=len(refs), timeout=0)
    for ref in refs:
        with contextlib.suppress(Exception):
            ray.cancel(ref)


def failure_line(exc: BaseException) -> RemoteFailure:
    """A task's exception as a :class:`RemoteFailure` (a user error keeps its message; anything else is
    an internal error, named as such)."""
    if isinstance(exc, UserError):
        return RemoteFailure(exc.diagnostic)
    if isinstance(exc, MemoryError):
        return RemoteFailure(f"error: out of memory on a Ray worker ({exc or 'allocation failed'})")
    return RemoteFailure(f"error: internal error on a Ray worker ({type(exc).__name__}): {exc}")


# ---------------------------------------------------------------------------------------------
# batches of a robustness property
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CertifierSpec:
    """What a worker needs to build the engine: the certifier's source, ``rewrite``, the engine's name
    and options (``device``, ``dtype``, ``widen``, ``sparse``)."""

    name: str
    text: str
    file: str
    rewrite: bool
    engine: str
    options: tuple  # sorted (key, value) pairs

    @property
    def key(self) -> str:
        h = hashlib.sha256()
        for part in (self.name, self.text, self.file, repr(self.rewrite), self.engine, repr(self.options)):
            h.update(part.encode("utf-8") + b"\0")
        return h.hexdigest()


#: a Ray worker's engines and networks: key -> (engine, network), most recent last
_WORKER_STATE: dict = {}


def _engine_and_network(spec: CertifierSpec, net_key: str, net_ref: list):
    """The engine and network of a task, built at this worker's first task for them and kept."""
    key = (spec.key, net_key)
    if key in _WORKER_STATE:
        _WORKER_STATE[key] = _WORKER_STATE.pop(key)  # most recently used
        return _WORKER_STATE[key]
    from cfmlir.engines import Certifier, engine_for

    ray = _ray()
    net = ray.get(net_ref[0])
    if spec.engine == "compiled":
        from cfmlir.compiler import compile_certifier_cached, pipeline_for

        compiled = compile_certifier_cached(spec.text, spec.file, pipeline_for(spec.rewrite)).certifier
    else:
        compiled = None  # the interpreter compiles its program from the text (Certifier.program)
    cert = Certifier(spec.name, spec.text, spec.file, spec.rewrite, compiled)
    state = (engine_for(cert, spec.engine, **dict(spec.options)), net)
    _WORKER_STATE[key] = state
    while len(_WORKER_STATE) > WORKER_CACHE_SIZE:
        _WORKER_STATE.pop(next(iter(_WORKER_STATE)))
    return state


def _bounds_task(spec: CertifierSpec, net_key: str, net_ref: list, lb, ub, C, batch_size: int, with_layers: bool):
    """One chunk of boxes (a Ray task): ``(lower, upper, layers, batch size used, shrinks)`` as
    :func:`cfmlir.engines.bounds_in_batches` computes them, or a :class:`RemoteFailure`."""
    from cfmlir.engines import bounds_in_batches

    shrinks = []
    try:
        eng, net = _engine_and_network(spec, net_key, net_ref)
        lower, upper, layers, used = bounds_in_batches(
            eng, net, lb, ub, C, batch_size, device=dict(spec.options)["device"], with_layers=with_layers,
            keep_layers=with_layers, on_shrink=lambda old, new, why: shrinks.append((old, new, str(why))))
    except Exception as exc:  # noqa: BLE001 - carried back to the driver as one line
        return failure_line(exc)
    return lower, upper, layers, used, shrinks


def _network_key(network) -> str:
    """The key a worker keeps a network under: its file and the loader options, else this object."""
    path = getattr(network, "path", None)
    prep = getattr(network, "preprocessing", None)
    if path is None or prep is None:
        return f"object-{os.getpid()}-{id(network)}"
    st = os.stat(path)
    return f"{os.path.abspath(path)}|{st.st_size}|{st.st_mtime_ns}|{sorted(prep.value.load_kwargs().items())}"


def ray_bounds(address, certifier, network, raw, prop, *, engine: str, options: dict, batch_size: int,
               with_layers: bool, keep_layers: bool, on_slice=None, on_shrink=None):
    """:func:`cfmlir.engines.bounds_in_batches` of the whole property, one Ray task per ``batch_size``
    chunk: ``(lower, upper, layers or None, the batch size used)``.  ``on_slice(start, stop, None,
    layers)`` and ``on_shrink(old, new, why)`` are called here, in the order of the chunks.  ``network``
    names the network to the workers (its file and preprocessing, when it has them); ``raw`` is its
    :class:`cfruntime.network.Network`, the one sent."""
    from cfmlir.engines import concat_slices

    connect(address)
    ray = _ray()
    net = raw
    plain = {k: v if isinstance(v, (bool, type(None))) else str(v).removeprefix("torch.") for k, v in options.items()}
    spec = CertifierSpec(certifier.name, certifier.text, certifier.file, bool(certifier.rewrite), engine,
                         tuple(sorted(plain.items())))
    net_ref = [ray.put(net)]  # in a list: a worker fetches it only when it has not got the network yet
    n = len(prop)
    chunks = [(lo, min(n, lo + batch_size)) for lo in range(0, n, batch_size)]
    gpus = 1 if str(options.get("device", "cpu")).startswith("cuda") else 0
    refs = [submit(_bounds_task, spec, _network_key(network), net_ref, prop.lb[lo:hi], prop.ub[lo:hi], prop.C[lo:hi],
                   batch_size, with_layers, num_gpus=gpus) for lo, hi in chunks]
    parts, used = [], batch_size
    try:
        for i, ((lo, hi), ref) in enumerate(zip(chunks, refs)):
            lower, upper, layers, chunk_used, shrinks = result(ref)
            refs[i] = None  # taken: never cancelled (see cancel)
            for old, new, why in shrinks:
                if on_shrink is not None:
                    on_shrink(old, new, why)
            used = min(used, chunk_used)
            if on_slice is not None:
                on_slice(lo, hi, None, layers)
            parts.append((lower, upper, layers if keep_layers else None))
    except BaseException:
        cancel([ref for ref in refs if ref is not None])
        raise
    return (*concat_slices(parts, prop.C.shape[1], keep_layers), used)
