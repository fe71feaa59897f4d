"""A ceiling on the process's data memory, so that running out of memory is an error the engine answers (smaller
batches) instead of the kernel's out-of-memory killer.

Linux overcommits memory: an allocation almost never fails, and a process that touches more than the machine has
is killed (SIGKILL, no message, no result file).  The engine already halves a batch whose allocation fails
(:func:`cfruntime.flow.batching.in_batches`), and branch and bound ends a search ``unknown`` when its pool is
full; both need the failure to happen.  A soft ``RLIMIT_DATA`` makes it happen: past the limit ``brk``/``mmap``
fail, ``malloc`` returns NULL, and torch raises its "can't allocate memory" error.  Measured on VNN-COMP 2024
tllverifybench ``N=M=32`` (layers of 2048 ReLUs, input boxes split in batches of 1024): without it the
search was OOM-killed at 23 GiB of a 23 GiB machine, and ``--instances`` lost every later line's worker too.

Algorithm: ``limit = VmData now + SHARE * MemAvailable / processes`` (``/proc/self/status``, ``/proc/meminfo``),
set as the soft ``RLIMIT_DATA`` when below the present one; the hard limit is left as it is (a child may raise
it again).  Children inherit it (``--timeout``'s analysis process, ``--instances``' workers).  Only the data
segment and private writable mappings count: untouched reservations do count (``read(n)`` of a huge ``n``),
so code under the limit reads files in chunks.  Where there is no ``/proc`` or no ``resource`` module (not
Linux), nothing happens.
"""

from __future__ import annotations

#: the share of the memory available at the start that one process may add to its data
SHARE = 0.85
#: a process serving one instance after another (``--instances``' worker) is replaced once its data passes this
#: share of its limit: the data a process holds only grows (freed memory is kept for reuse,
#: :mod:`cfruntime.allocator`; each thread's malloc arena keeps its own), and on VNN-COMP 2024 vit_2023 the
#: worker reached the limit at its sixth 100 s instance (~3 GiB more per instance), where even reading the next
#: network was refused
WORKER_SHARE = 0.5


def limit_data_memory(processes: int = 1, share: float = SHARE) -> int | None:
    """Set this process's soft ``RLIMIT_DATA`` (see the module docstring): the limit in bytes, or None where it
    could not be read or set (nothing changed then)."""
    try:
        import resource
    except ImportError:  # not Unix
        return None
    available = _kib_field("/proc/meminfo", "MemAvailable")
    data = _kib_field("/proc/self/status", "VmData")
    if available is None or data is None:
        return None
    limit = int(data + share * available / max(1, processes))
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (ValueError, OSError):
        return None
    return limit


def grown_past_share(pid: int, share: float = WORKER_SHARE) -> bool:
    """Whether process ``pid`` holds more data than ``share`` of this process's data limit (children inherit
    it), or of the machine's memory when there is none; False where it cannot be read."""
    data = _kib_field(f"/proc/{pid}/status", "VmData")
    if data is None:
        return False
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
    except ImportError:
        soft = None
    if soft is None or soft == resource.RLIM_INFINITY:
        soft = _kib_field("/proc/meminfo", "MemTotal")
    return soft is not None and data > share * soft


def _kib_field(path: str, name: str) -> int | None:
    """The field ``name:`` of a ``/proc`` file given in kB, in bytes; None when absent."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
