"""``cf-run`` as a whole process, timed from just before its start to its exit (as VNN-COMP measures a run),
its output going to files (not pipes another process may hold open): the tests of ``--timeout``."""

from __future__ import annotations

import subprocess
import sys
import time

from cftest import REPO

CF_RUN = [sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())"]


def timed(tmp_path, *args) -> tuple[float, int, str, str]:
    """``(wall seconds, exit status, stdout, stderr)`` of ``cf-run ARGS`` (output to files in ``tmp_path``)."""
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out, "w") as fo, open(err, "w") as fe:
        t0 = time.monotonic()
        p = subprocess.Popen(CF_RUN + [str(a) for a in args], stdout=fo, stderr=fe, cwd=REPO)
        rc = p.wait(timeout=900)
        wall = time.monotonic() - t0
    return wall, rc, out.read_text(), err.read_text()
