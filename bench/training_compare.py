"""Benchmark: certified training with our compiled ``crown_ibp`` against auto_LiRPA's CROWN-IBP, side by side (not a test).

    python bench/training_compare.py                          # MLP and CNN, 2 CPU threads
    python bench/training_compare.py --models mlp --epochs 4  # a quick run

Both tools run the same loop -- ``examples/certified_training.py``: its data (``mnist_test_1000.csv``,
800 training and 200 held-out images, or synthetic ones without ``../shared``), models, initial
weights, batch order, Adam, eps/kappa schedule and CROWN-IBP loss -- with their own bounds of the
margins: ours ``cfmlir.BoundedNetwork(model, "crown_ibp", widen=False)`` (float32), auto_LiRPA 0.7.1's
``compute_bounds(method="CROWN-IBP", bound_upper=False)`` in its own environment (``../peer-venv-grad``,
``../shared/peers/auto_LiRPA`` on the path; ``bench/lirpa_training_worker.py``, a subprocess).  The two
trainings run in lockstep, one epoch of each in turn (alternating which goes first), so both epochs of
a pair see the same machine load; an epoch's time is its wall time (logits, bounds, losses, backward
passes, optimizer steps).  Reported per model: the median epoch time of each tool over the epochs that
compute bounds (eps > 0), their ratio (ours / theirs), the held-out accuracy and verified accuracy at the
target eps after the same epochs (each tool's model verified by its own CROWN-IBP; ours float32
widened), and the torch operations and host syncs of one bounds + backward step.

Prints a table and writes ``bench/results/training_compare.json`` (with the machine's load average
before and after: the timings of a shared machine are only comparable side by side).  Without
auto_LiRPA's environment it says so and exits 0.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))

import certified_training as ct  # noqa: E402

PEERS = REPO.parent / "shared" / "peers"
_PEER_VENV = REPO.parent / "peer-venv-grad" / "bin" / "python"
#: auto_LiRPA's interpreter: CF_PEER_PYTHON, else ../peer-venv-grad where it is set up, else this one (the
#: project's environment imports ../shared/peers/auto_LiRPA too, as bench/peer_compare.py does)
PEER_PYTHON = Path(os.environ.get("CF_PEER_PYTHON", _PEER_VENV if _PEER_VENV.exists() else sys.executable))
WORKER = REPO / "bench" / "lirpa_training_worker.py"


class Peer:
    """The auto_LiRPA worker process: one JSON answer per request."""

    def __init__(self, problem: Path):
        env = dict(os.environ, PYTHONPATH=str(PEERS / "auto_LiRPA"), OMP_NUM_THREADS="2")
        self.proc = subprocess.Popen([str(PEER_PYTHON), str(WORKER), str(problem)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, request: str) -> dict:
        self.proc.stdin.write(request + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"auto_LiRPA's worker stopped (exit {self.proc.wait()}) at '{request}'")
        return json.loads(line)

    def close(self) -> None:
        try:
            self.ask("quit")
        except (RuntimeError, BrokenPipeError, json.JSONDecodeError):
            pass
        self.proc.wait(timeout=60)


def count_ours(model, data, schedule: ct.Schedule) -> dict:
    """Operations and syncs of one bounds + backward step of ours (first batch, target eps) on a copy."""
    from cfruntime.op_count import OpCounter

    _, bound = ct.cfmlir_bounds("crown_ibp", widen=False)(copy.deepcopy(model))
    xb, yb = data[0][:schedule.batch_size], data[1][:schedule.batch_size]
    bound(*ct.ball(xb, schedule.eps), ct.margin_matrix(yb))  # warm: trace, compile
    with OpCounter() as c:
        ct.robust_loss(bound(*ct.ball(xb, schedule.eps), ct.margin_matrix(yb))).backward()
    return {"ops": c.ops, "syncs": c.syncs}


def compare(name: str, data, schedule: ct.Schedule, threads: int, workdir: Path, log=print) -> dict:
    model = ct.initial_model(name, schedule.seed)
    problem = workdir / f"{name}.pt"
    torch.save({"model": copy.deepcopy(model), "data": data, "schedule": asdict(schedule), "threads": threads}, problem)
    peer = Peer(problem)
    try:
        counts = {"ours": count_ours(model, data, schedule), "auto_LiRPA": peer.ask("count")}
        ours_epochs = ct.training(model, data, schedule, ct.cfmlir_bounds("crown_ibp", widen=False))
        records = {"ours": [], "auto_LiRPA": []}
        for e in range(schedule.epochs):
            order = ("ours", "auto_LiRPA") if e % 2 == 0 else ("auto_LiRPA", "ours")
            for tool in order:
                if tool == "ours":
                    rec = next(ours_epochs)
                    rec.pop("trainee")
                else:
                    rec = peer.ask("epoch")
                records[tool].append(rec)
            o, t = records["ours"][-1], records["auto_LiRPA"][-1]
            log(f"  {name} epoch {e + 1:2d}  eps {o['eps']:.3f}  loss ours {o['loss']:.4f} theirs {t['loss']:.4f}  "
                f"time ours {o['seconds']:.2f} s theirs {t['seconds']:.2f} s")
        nat, ver = ct.verified_accuracy(model, data[2], data[3], schedule.eps, ct.cfmlir_bounds("crown_ibp"))
        final = {"ours": {"accuracy": nat, "verified_accuracy": ver}, "auto_LiRPA": peer.ask("verify")}
    finally:
        peer.close()
    timed = {tool: [r["seconds"] for r in recs if r["eps"] > 0] or [r["seconds"] for r in recs]
             for tool, recs in records.items()}
    median = {tool: statistics.median(v) for tool, v in timed.items()}
    return {"model": name, "epochs": records, "median_epoch_s": median,
            "ratio": median["ours"] / median["auto_LiRPA"], "final": final, "step_counts": counts}


def _load() -> list[float]:
    return list(os.getloadavg())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--epochs", type=int, default=ct.Schedule.epochs)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default=str(ct.DEFAULT_DATA))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "training_compare.json"))
    args = ap.parse_args(argv)
    if not (PEER_PYTHON.is_file() and (PEERS / "auto_LiRPA" / "auto_LiRPA").is_dir()):
        print(f"auto_LiRPA's environment is not set up ({PEER_PYTHON}, {PEERS / 'auto_LiRPA'}): nothing to compare")
        return 0
    torch.set_num_threads(args.threads)
    schedule = ct.Schedule(epochs=args.epochs)
    data = ct.load_mnist(args.data)
    workdir = REPO / "bench" / "results" / "training_compare_work"
    workdir.mkdir(parents=True, exist_ok=True)
    load_before, t0 = _load(), time.time()
    rows = [compare(name, data, schedule, args.threads, workdir) for name in args.models.split(",")]
    out = {"schedule": asdict(schedule), "threads": args.threads, "data": args.data,
           "train_images": len(data[0]), "heldout_images": len(data[2]), "torch": torch.__version__,
           "cpus": os.cpu_count(), "load_average_before": load_before, "load_average_after": _load(),
           "wall_s": time.time() - t0, "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    for f in workdir.iterdir():
        f.unlink()
    workdir.rmdir()
    print(f"\n| model | epoch s ours | epoch s auto_LiRPA | ratio | accuracy ours / theirs | verified ours / theirs "
          f"(eps {schedule.eps}) | ops/syncs per step ours / theirs |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        f, c = r["final"], r["step_counts"]
        print(f"| {r['model']} | {r['median_epoch_s']['ours']:.2f} | {r['median_epoch_s']['auto_LiRPA']:.2f} | "
              f"{r['ratio']:.2f}x | {f['ours']['accuracy']:.3f} / {f['auto_LiRPA']['accuracy']:.3f} | "
              f"{f['ours']['verified_accuracy']:.3f} / {f['auto_LiRPA']['verified_accuracy']:.3f} | "
              f"{c['ours']['ops']}/{c['ours']['syncs']} / {c['auto_LiRPA']['ops']}/{c['auto_LiRPA']['syncs']} |")
    print(f"load average before {load_before}, after {out['load_average_after']}; JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
