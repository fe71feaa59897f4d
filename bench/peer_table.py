"""Print the README's side-by-side table from ``bench/peer_compare.py`` results (not a benchmark itself).

    python bench/peer_table.py bench/results/peer_compare.json bench/results/peer_compare_cuda.json

One markdown row per (row, certifier); one column group per results file (its device, and whether our
bounds were widened, in the header): our time / auto_LiRPA's time (ratio); then certified ours/peer
(one entry when every file agrees), and the torch-op and host-sync counts of one certification
(ours/peer; one entry per file, in the files' order, where they differ).  A margin column says whether the margins agreed within the benchmark's
tolerance, and with what (the timed run, or auto_LiRPA's dense-intermediate run for DeepPoly).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NAMES = {"ibp": "IBP", "crown_ibp": "CROWN-IBP", "deeppoly": "DeepPoly"}


def print_row(r: dict, lead: str, cells) -> None:
    """One row of a benchmark's live table: ``lead`` (the row's key columns), then ``cells(r)`` -- or,
    for a record whose status is not ok, its error."""
    if r["status"] != "ok":
        print(f"{lead}  error: {r['error']}", flush=True)
        return
    print(f"{lead} {cells(r)}", flush=True)


def _seconds(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def _cell(r: dict) -> str:
    if r.get("status") != "ok":
        return r.get("status", "?")
    return f"{_seconds(r['ours_s'])} / {_seconds(r['peer_s'])} ({r['ratio']:.2f}x)"


def _agree(r: dict) -> str:
    if r.get("margins_agree") is None:
        return "not compared (too big for the dense-intermediate run)"
    return ("yes" if r["margins_agree"] else f"no (max diff {r['margin_max_abs_diff']:.3g})") + (
        ", dense-intermediate" if r.get("margins_vs") == "dense-intermediate" else "")


def table(paths: list[Path]) -> str:
    files = [json.loads(p.read_text()) for p in paths]
    heads = [(f.get("gpu") or f"CPU, {f['threads']} threads") + (", fixed malloc" if isinstance(f.get("malloc"), dict) else "")
             + {True: ", widened", False: ", raw"}.get(f.get("widened"), "") for f in files]
    lines = ["| row (batch, images) | certifier | " + " | ".join(f"{h}: ours / auto_LiRPA" for h in heads)
             + " | certified ours/peer | torch ops ours/peer | host syncs ours/peer | margins agree |",
             "|---" * (5 + len(files)) + "|---|"]
    keyed = [{(r["row"], r["certifier"]): r for r in f["runs"]} for f in files]
    order = list(dict.fromkeys(k for runs in keyed for k in runs))
    for key in order:
        rs = [runs.get(key) for runs in keyed]
        first = next(r for r in rs if r is not None)
        cells = [_cell(r) if r else "" for r in rs]
        ok = [r for r in rs if r and r.get("status") == "ok"]
        certs = list(dict.fromkeys(f"{r['certified_ours']}/{r['certified_peer']}" for r in ok))
        cert = " · ".join(certs)  # one entry when every run certified the same
        ops = " · ".join(dict.fromkeys(f"{r['ops_ours']}/{r['ops_peer']}" for r in ok if "ops_ours" in r))
        syncs = " · ".join(dict.fromkeys(f"{r['syncs_ours']}/{r['syncs_peer']}" for r in ok if "syncs_ours" in r))
        agree = " · ".join(dict.fromkeys(_agree(r) for r in ok))
        batch = "/".join(dict.fromkeys(str(r["batch"]) for r in rs if r))  # per file where they differ
        lines.append(f"| {key[0]} ({batch}, {first['n']}) | {NAMES.get(key[1], key[1])} | "
                     + " | ".join(cells) + f" | {cert} | {ops} | {syncs} | {agree} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: peer_table.py RESULTS.json [RESULTS.json ...]")
    print(table([Path(p) for p in sys.argv[1:]]))
