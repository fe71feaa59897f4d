"""Branch and bound with and without split multipliers (beta, :mod:`cfmlir.bab.lagrangian`), by counts:
the subdomains each needs to decide an instance, and what each decides within a fixed subdomain budget
(no time limit, so the figures do not depend on the machine's load; issue 26, point 3).

    .venv/bin/python bench/bab_beta_counts.py BENCHMARKS_DIR [--benchmarks mnistfc,eran] [--skip S]
        [--every K] [--first N] [--budget 2000] [--certifier deeppoly] [--optimize 20] [--reference RESULTS_CSV_DIR]
        [--out bench/results/bab_beta_counts.json]

``BENCHMARKS_DIR``: the VNN-COMP 2021 ``benchmarks/`` folder; each picked CSV line ``onnx,vnnlib,timeout``
is decided by :func:`cfmlir.verify_property` with ReLU branching (``BabOptions(branching="relu",
max_domains=BUDGET)``) twice, ``beta=False`` and ``beta=True``; the table gives per instance the verdict,
the subdomains, the engine rows (FSB candidates and beta iterations included) and the official answer
(``--reference``: ``results_csv/`` of ``stanleybak/vnncomp2021_results``), the smallest value left in the
pool at the end (``worst``: the search's global bound of the property's slack; higher is closer to
``unsat``), and per benchmark the decided counts at the budget.  One pass decides some instances before any branching: they count as decided with 1
subdomain on both sides.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bab_compare import instance_lines, majority  # noqa: E402 - the sibling bench script
from vnncomp import reference_verdicts  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def run_one(cert, onnx: Path, vnnlib: Path, budget: int, beta: bool, optimize: int = 0) -> dict:
    import cfmlir
    from cfmlir.bab import BabOptions

    from cfmlir import api
    from cfmlir.bab.driver import run_bab
    from cfmlir.optimize import OptimizeOptions

    t0 = time.process_time()
    net = api._raw(api.load_network(str(onnx)))
    prop = api.load_vnnlib(str(vnnlib), net)
    worst = []
    out = run_bab(cert.compiled, net, prop, options=BabOptions(branching="relu", max_domains=budget, beta=beta,
                                                                  optimize=OptimizeOptions(optimize) if optimize else None),
                  on_round=lambda progress: worst.append(progress["worst"]))
    st = out.stats
    return {"verdict": out.verdict, "stopped": out.stopped, "domains": st["domains"], "rows": st["bounded"],
            "rounds": st["rounds"], "leaves": st["leaves"], "beta": st.get("beta"),
            "worst_at_end": worst[-1] if worst else None, "cpu_s": time.process_time() - t0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benchmarks_dir")
    ap.add_argument("--benchmarks", default="mnistfc,eran")
    ap.add_argument("--skip", type=int, default=0)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--first", type=int, default=None)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--certifier", default="deeppoly")
    ap.add_argument("--reference", default=None)
    ap.add_argument("--optimize", type=int, default=0, help="alpha iterations at the root (a certifier with parameters)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "bab_beta_counts.json"))
    args = ap.parse_args(argv)

    import cfmlir

    cert = cfmlir.compile(args.certifier)
    reference = reference_verdicts(args.reference) if args.reference else None
    rows, summary = [], {}
    print(f"{'benchmark':10} {'instance':42} {'official':8} | {'no beta':44} | {'beta':44}")
    for bench in args.benchmarks.split(","):
        folder = Path(args.benchmarks_dir) / bench
        for onnx, vnnlib, _limit in instance_lines(folder, args):
            row = {"benchmark": bench, "onnx": onnx, "vnnlib": vnnlib,
                   "official": majority(reference, bench, onnx, vnnlib)}
            for beta in (False, True):
                row["beta" if beta else "plain"] = run_one(cert, folder / onnx, folder / vnnlib, args.budget, beta, args.optimize)
            rows.append(row)
            cell = {k: f"{row[k]['verdict']:7} {row[k]['domains']:6} dom {row[k]['rows']:7} rows worst "
                       f"{row[k]['worst_at_end'] if row[k]['worst_at_end'] is not None else float('nan'):9.4f}"
                    for k in ("plain", "beta")}
            name = f"{Path(onnx).stem}/{Path(vnnlib).stem}"[:42]
            print(f"{bench:10} {name:42} {row['official'] or '-':8} | {cell['plain']:44} | {cell['beta']:44}", flush=True)
        mine = [r for r in rows if r["benchmark"] == bench]
        summary[bench] = {k: {"decided": sum(r[k]["verdict"] in ("unsat", "sat") for r in mine),
                              "wrong": sum(1 for r in mine if r["official"] and r[k]["verdict"] in ("unsat", "sat")
                                           and r[k]["verdict"] != r["official"]),
                              "domains_of_decided": [r[k]["domains"] for r in mine if r[k]["verdict"] in ("unsat", "sat")]}
                          for k in ("plain", "beta")}
        s = summary[bench]
        print(f"{bench}: decided at a budget of {args.budget} subdomains: no beta {s['plain']['decided']}, "
              f"beta {s['beta']['decided']} of {len(mine)}; wrong {s['plain']['wrong']} / {s['beta']['wrong']}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"budget": args.budget, "certifier": args.certifier, "summary": summary,
                                          "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
