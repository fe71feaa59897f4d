"""cf-verify time per shipped certifier (all nine: the eight base ones and deeppoly_p at p = 2): prints a
table, writes JSON.

    .venv/bin/python bench/verify_times.py [--timeout S] [--km 2,2 3,3] [--certifiers deeppoly ...]
                                           [--out bench/results/verify_times.json]

Per certifier: wall seconds, CPU seconds of this process (the prover is single-threaded; on a
loaded machine wall time grows with the load, CPU time much less), the verdict counts and the
slowest rule.  The JSON also records the machine's load average before and after each certifier,
the command, the prover version and the per-rule lines.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_source
from cfmlir.verify import PROVER_VERSION, verify_source
from cfmlir.verify.operators import OPERATORS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per rule (cf-verify's default: 20)")
    ap.add_argument("--km", nargs="+", default=["2,2"])
    ap.add_argument("--certifiers", nargs="+", default=list(BASE_CERTIFIERS) + ["deeppoly_2"])
    ap.add_argument("--out", default="bench/results/verify_times.json")
    ap.add_argument("--exclude", nargs="*", default=[],
                    help="operators left out (named in the table and the JSON), e.g. Sin Cos")
    args = ap.parse_args()
    rows = []
    print(f"{'certifier':12} {'K,M':5} {'wall s':>7} {'cpu s':>7}  verified/cex/unknown  slowest rule (wall)  load")
    for km in args.km:
        K, M = (int(x) for x in km.split(","))
        for name in args.certifiers:
            text, file = certifier_source(name)
            load0 = os.getloadavg()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            ops = None if not args.exclude else set(OPERATORS) - set(args.exclude)
            rs = verify_source(text, file, K=K, M=M, timeout=args.timeout, ops=ops)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            load1 = os.getloadavg()[0]
            counts = [sum(r.status == s for r in rs) for s in ("verified", "counterexample", "unknown")]
            slow = max(rs, key=lambda r: r.seconds)
            print(f"{name:12} {K},{M:<3} {wall:7.1f} {cpu:7.1f}  {counts[0]}/{counts[1]}/{counts[2]}"
                  f"{'':15}{slow.op} {slow.seconds:.1f} s{'':6}{load0:.1f}-{load1:.1f}", flush=True)
            rows.append({"certifier": name, "K": K, "M": M, "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
                         "load_average_before_after": [round(load0, 2), round(load1, 2)],
                         "timeout_per_rule_s": args.timeout, "excluded_ops": args.exclude,
                         "rules": [{"op": r.op, "status": r.status, "seconds": round(r.seconds, 3), "detail": r.detail}
                                   for r in rs]})
    meta = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "prover_version": PROVER_VERSION,
            "cpu_count": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    Path(args.out).write_text(json.dumps({"meta": meta, "runs": rows}, indent=1, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
