"""Where a compiled certifier's time goes (not a test): per runtime-API-op wall time.

    python bench/profile_ops.py --certifier deeppoly --net mnist_relu_6_100 --n 100

Certifies the first ``--n`` images of a shared network at the paper's epsilon once, in one batch
(``cfmlir.certify``, the compiled engine), with every ``rt.<op>`` call the emitted rules make timed
(the tensor ops run eagerly on the CPU, so wall time per call is the op's cost), and prints the ops by
total time (the total is the whole certification: margin network, bounds and verdicts).  ``--slow MS`` also prints
every single call slower than ``MS`` milliseconds with its operands' g-BSCR block structure, which
is how one finds an op that densifies.
"""

from __future__ import annotations

import argparse
import collections
import time

import torch

import cfmlir
import cfruntime.flow.engine as engine
from cfruntime import tensor as gb
from cfruntime.flow import ops as rt_ops
from cfruntime.flow.values import Affine
from paper_problems import paper_problem, run_script


def describe(x) -> str:
    """A value's representation: g-BSCR blocks (kind@start shape), torch shape, or the scalar."""
    if isinstance(x, Affine):
        return f"Affine({describe(x.coeff)} | {describe(x.const)})"
    if gb.is_sparse(x):
        blocks = ", ".join(f"{b.kind}@{s}{tuple(b.shape)}" for s, b in x.blocks)
        return f"gbscr{tuple(x.shape)} bg={x.background} [{blocks}]"
    if isinstance(x, torch.Tensor):
        return f"torch{tuple(x.shape)} {x.dtype}"
    return repr(x)[:24]


class TimedRuntime:
    """The ``rt`` module with every call timed (what the emitted rules receive)."""

    def __init__(self, slow_ms: float | None):
        self.totals: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])
        self.slow_ms = slow_ms

    def __getattr__(self, name):
        fn = getattr(rt_ops, name)
        if not callable(fn) or name == "loop_guard":
            return fn

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            dt = time.perf_counter() - t0
            key = name + (f"/{args[0]}" if args and isinstance(args[0], str) else "")
            self.totals[key][0] += 1
            self.totals[key][1] += dt
            if self.slow_ms is not None and dt * 1000 > self.slow_ms:
                operands = " ; ".join(describe(a) for a in args if not isinstance(a, str))
                print(f"{dt * 1000:8.1f} ms  {key}: {operands} -> {describe(out)}")
            return out

        return timed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--certifier", default="deeppoly")
    ap.add_argument("--net", default="mnist_relu_6_100")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--slow", type=float, default=None, metavar="MS")
    args = ap.parse_args()
    net, prop = paper_problem(args.net, args.n)
    cert = cfmlir.compile(args.certifier)
    timed = TimedRuntime(args.slow)
    engine.rt = timed  # the module the compiled engine hands to the emitted rules
    try:
        t0 = time.perf_counter()
        cfmlir.certify(cert, net, prop, dtype=args.dtype, batch_size=max(1, len(prop)))
        total = time.perf_counter() - t0
    finally:
        engine.rt = rt_ops
    in_ops = sum(t for _, t in timed.totals.values())
    print(f"\n{args.certifier} on {args.net}, {args.n} images, {args.dtype}: {total:.2f} s "
          f"({in_ops:.2f} s in runtime ops, the rest in the engine and the store)")
    print(f"{'op':16s} {'calls':>6s} {'seconds':>8s} {'share':>6s}")
    for key, (calls, secs) in sorted(timed.totals.items(), key=lambda kv: -kv[1][1])[:15]:
        print(f"{key:16s} {calls:6d} {secs:8.3f} {secs / total:6.1%}")
    return 0


if __name__ == "__main__":
    run_script(main)
