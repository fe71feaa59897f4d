"""Run the lit/FileCheck suite: ``python test/run_lit.py [extra lit args]``.

Runs ``lit -v test/lit`` with the running interpreter's ``lit`` (so the venv's ``cf-opt`` and
``filecheck`` are used), echoes lit's output, and prints a closing line ``lit: N passed, M failed``
as the very last line.  Exits non-zero when a test failed, when lit itself failed, or when no test
ran.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = HERE / "lit"

# lit's summary lines, e.g. "  Passed: 58 (100.00%)" or "Total Discovered Tests: 58"
_COUNT = re.compile(r"^\s*(Passed|Failed|Unresolved|Timed Out|Expectedly Failed|Unexpectedly Passed|Unsupported|Skipped|Excluded)\s*:\s*(\d+)", re.M)
_RESULT = re.compile(r"^(PASS|FAIL|XFAIL|XPASS|UNRESOLVED|UNSUPPORTED|TIMEOUT): ", re.M)


def main(argv: list[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    bindir = os.path.dirname(sys.executable)
    lit_exe = os.path.join(bindir, "lit")
    cmd = [lit_exe] if os.path.exists(lit_exe) else [sys.executable, "-m", "lit.main"]
    cmd += ["-v", *extra, str(SUITE)]
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    out = proc.stdout
    sys.stdout.write(out)
    if out and not out.endswith("\n"):
        sys.stdout.write("\n")

    counts = {k: int(v) for k, v in _COUNT.findall(out)}
    per_test = _RESULT.findall(out)
    passed = counts.get("Passed", per_test.count("PASS")) + counts.get("Expectedly Failed", per_test.count("XFAIL"))
    failed = (
        counts.get("Failed", per_test.count("FAIL"))
        + counts.get("Unresolved", per_test.count("UNRESOLVED"))
        + counts.get("Timed Out", per_test.count("TIMEOUT"))
        + counts.get("Unexpectedly Passed", per_test.count("XPASS"))
    )
    ok = proc.returncode == 0 and failed == 0 and passed > 0
    if proc.returncode != 0 and failed == 0:
        failed = 1  # lit itself failed (bad configuration, crash): count it as a failure
    if passed == 0 and failed == 0:
        print("run_lit: no tests ran")
    sys.stdout.flush()
    print(f"lit: {passed} passed, {failed} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
