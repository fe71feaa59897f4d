"""Worker main functions (:class:`cfmlir.tools.instances.Worker`'s ``target``) that never answer, for the tests of
``cf-run --timeout``'s hard deadline (test/unit/tools/test_hard_deadline.py): they run in a spawned process, so they
live in an importable module."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time


def _grandchild(pid_file: str) -> None:
    """Start a process that sleeps for an hour and write its pid to ``pid_file``."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    with open(pid_file, "w", encoding="ascii") as f:
        f.write(str(p.pid))


def half_message(conn, args) -> None:
    """Answer ``ready``, then start an instance's answer -- a length header of 1 MB and 10 bytes of it -- and
    sleep: the parent's ``recv`` waits for the rest forever unless the worker is killed.  Also leaves a
    grandchild process (``args`` is the file for its pid) that must die with the worker."""
    conn.send(("ready", 0.0))
    _grandchild(args)
    conn.recv()  # the ("run", ...) request
    os.write(conn.fileno(), struct.pack("!i", 1_000_000) + b"x" * 10)
    time.sleep(3600)


def silent(conn, args) -> None:
    """Never answer at all (a worker stuck in compilation), ignoring SIGTERM; a grandchild as above."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _grandchild(args)
    time.sleep(3600)
