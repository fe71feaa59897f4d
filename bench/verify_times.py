"""cf-verify time per shipped certifier at K=2, M=2 (and larger K, M): prints a table, writes JSON.

    .venv/bin/python bench/verify_times.py [--timeout S] [--km 2,2 3,3 4,2] [--out bench/results/verify_times.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from cfmlir.certifiers import BASE_CERTIFIERS, certifier_source
from cfmlir.verify import verify_source


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--km", nargs="+", default=["2,2"])
    ap.add_argument("--certifiers", nargs="+", default=list(BASE_CERTIFIERS) + ["deeppoly_2"])
    ap.add_argument("--out", default="bench/results/verify_times.json")
    args = ap.parse_args()
    rows = []
    print(f"{'certifier':12} {'K,M':5} {'total s':>8}  verified/cex/unknown  slowest rule")
    for km in args.km:
        K, M = (int(x) for x in km.split(","))
        for name in args.certifiers:
            text, file = certifier_source(name)
            t0 = time.perf_counter()
            rs = verify_source(text, file, K=K, M=M, timeout=args.timeout)
            total = time.perf_counter() - t0
            counts = [sum(r.status == s for r in rs) for s in ("verified", "counterexample", "unknown")]
            slow = max(rs, key=lambda r: r.seconds)
            print(f"{name:12} {K},{M:<3} {total:8.2f}  {counts[0]}/{counts[1]}/{counts[2]}  {slow.op} {slow.seconds:.2f} s", flush=True)
            rows.append({"certifier": name, "K": K, "M": M, "seconds": round(total, 3), "timeout_per_rule_s": args.timeout,
                         "rules": [{"op": r.op, "status": r.status, "seconds": round(r.seconds, 3), "detail": r.detail} for r in rs]})
    Path(args.out).write_text(json.dumps(rows, indent=1, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
