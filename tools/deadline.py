"""When a ``cf-run`` process started: ``--timeout`` counts from there, as VNN-COMP measures a run
(Python's own start-up and the imports included).  Kept apart from :mod:`cfmlir.tools.instances` so that
reading the clock imports nothing heavy."""

from __future__ import annotations

import os
import time

#: a process older than this is not a fresh ``cf-run`` (``/proc`` gave something odd): count from now
_MAX_AGE_S = 3600.0


def process_start() -> float:
    """The :func:`time.monotonic` time at which this process started (Linux: ``/proc/self/stat``'s start
    time against ``/proc/uptime``, to the kernel's clock tick, 10 ms; elsewhere: now)."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of stat: start time in ticks
    except (OSError, ValueError, IndexError):
        return now
    return now - min(max(age, 0.0), _MAX_AGE_S)
