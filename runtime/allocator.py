"""Freed memory kept in the process for reuse (glibc's malloc), not given back to the system at every free.

A back-substitution allocates and frees megabyte-sized coefficient tensors many times a second (alpha_deeppoly
bounding ACAS Xu input boxes: ``[360, 50, 50]`` float64, 7.2 MB, thousands of times a second).  glibc serves
a chunk above its mmap threshold by a fresh ``mmap`` and gives the top of its heap back above its trim
threshold (both adapt only up to the largest chunk freed so far), so such tensors cost page faults on every
use: 15 of a 20 s search's CPU seconds were the kernel's, and the search bounded 35 rounds where it bounds 59
with this (ACAS Xu 1_1 ``prop_6``, branch and bound on input boxes, 2-core CPU).

Algorithm: ``mallopt(M_MMAP_THRESHOLD, 1 GiB)`` (chunks below it come from the heap) and
``mallopt(M_TRIM_THRESHOLD, 2^31 - 1)`` (the heap's free top is kept), once per process; the process then
holds its peak heap until it exits, which an analysis process (``cf-run``, its workers) may.  Nothing
happens where the C library has no ``mallopt`` (not glibc): the defaults stay.  ``bench/peer_compare.py
--malloc fixed`` sets the same two thresholds for both tools by glibc's environment variables; the library
API (``cfmlir.certify``, ``verify_property``) leaves the process's allocator as it is.
"""

from __future__ import annotations

#: glibc's ``mallopt`` parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: chunks up to this size come from the heap (glibc accepts up to 1 GiB here on 64-bit Linux)
MMAP_THRESHOLD = 1 << 30
#: the heap's free top is given back only past this size (the largest a C int holds: never, in practice)
TRIM_THRESHOLD = 2 ** 31 - 1

_done: list[bool] = []


def keep_freed_memory() -> bool:
    """Make this process's malloc keep freed memory for reuse (see the module docstring); True where it did
    (also on later calls), False where the C library has no ``mallopt`` or refused."""
    if _done:
        return _done[0]
    import ctypes

    ok = False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is not None:
        ok = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    _done.append(ok)
    return ok
