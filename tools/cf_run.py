"""``cf-run``: certify a network with a ConstraintFlow certifier.

::

    cf-run --certifier NAME_OR_PATH --net NET.onnx --data CSV --eps E [--n K] [--json OUT]
    cf-run --certifier NAME_OR_PATH --net NET.onnx --vnnlib FILE [--json OUT]
    cf-run                      # deeppoly on the shipped default net and 10 MNIST images, eps 0.005

Engines: ``--engine compiled`` (default) compiles the certifier to tensor code (cached by source
hash and pipeline) and runs it batch by batch on g-BSCR tensors; ``--no-sparse`` runs the same code on
dense torch tensors and ``--no-rewrite`` compiles without the domain rewrites (the paper's ablation);
``--batch-size``, ``--device`` and ``--dtype`` tune the run.  ``--engine interpreter`` runs the
neuron-level reference interpreter, one sample at a time.

Dataset mode reads ERAN CSV rows (label, pixels 0..255), certifies local robustness in the
L-infinity ball of radius ``eps`` (pixel units in [0, 1], clipped to [0, 1]) and prints accuracy,
certified-among-correct and times.  ``--json OUT`` writes::

    {"certifier", "network", "eps", "n", "labels": [...], "correct": [bool], "certified": [bool],
     "margin_lb": [[...]], "margin_ub": [[...]],          # N x K; column j bounds y_true - y_j
     "times": {"compile_s", "load_s", "analysis_s"}}      # the own column is 0

(a sample is certified iff it is classified correctly and every margin j != true has a lower
bound > 0).  VNN-LIB mode writes ``{"certifier", "network", "vnnlib", "verdict", "regions":
[{"row_lb": [...], "row_ub": [...]}], "times": {...}}`` with the verdict ``unsat`` (every disjunct of
the counterexample region refuted), ``sat`` (a concrete counterexample found by sampling/PGD) or
``unknown``.

The preprocessing convention (``std``: pixels/255; ``nln_raw255``: raw 0..255 for the ``mnist_nln_*``
nets) and the HWC-flatten quirk of the CIFAR fully-connected nets are taken from
``../shared/nets/MANIFEST.json`` when the network is listed there, else ``std``.

Every user error (bad certifier, bad ONNX, bad CSV row, bad VNN-LIB, eps outside [0, 1], missing file) is
one line ``error: ...`` on stderr and exit status 1; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from cfmlir.tools.arg_errors import one_line_errors

ENGINES = ("interpreter", "compiled")
DEFAULT_CERTIFIER = "deeppoly"
DEFAULT_EPS = 0.005


class UsageError(Exception):
    """A bad combination of options (one-line message)."""


def _version() -> str:
    """``cf-run (cfmlir X) with torch Y, onnx Z, xdsl W`` from the installed distributions."""
    from importlib.metadata import PackageNotFoundError, version

    def v(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    return f"cf-run (cfmlir {v('cfmlir')}) with torch {v('torch')}, onnx {v('onnx')}, xdsl {v('xdsl')}"


def build_parser() -> argparse.ArgumentParser:
    p = one_line_errors(argparse.ArgumentParser(
        prog="cf-run",
        description="Certify a network with a ConstraintFlow certifier (local robustness or a VNN-LIB property). "
                    "With no arguments: deeppoly on the shipped MNIST 3x50 net and 10 images at eps 0.005.",
    ))
    p.add_argument("--version", action="version", version=_version())
    p.add_argument("--certifier", default=None, help=f"shipped certifier name or path to a .cf file (default {DEFAULT_CERTIFIER})")
    p.add_argument("--net", default=None, help="ONNX network (default: the shipped mnist_relu_3_50.onnx)")
    p.add_argument("--data", default=None, help="ERAN CSV file of test images (label, pixels 0..255)")
    p.add_argument("--eps", default=None, help="L-infinity radius in [0,1] pixel units (dataset mode)")
    p.add_argument("--n", type=int, default=None, help="certify only the first N rows of --data")
    p.add_argument("--vnnlib", default=None, help="VNN-LIB property file (instead of --data/--eps)")
    p.add_argument("--dataset", choices=("mnist", "cifar10"), default=None,
                   help="dataset of --data (default: detected from the row length)")
    p.add_argument("--engine", choices=ENGINES, default="compiled", help="analysis engine (default: compiled)")
    p.add_argument("--no-sparse", action="store_true", help="compiled engine: dense torch tensors instead of g-BSCR")
    p.add_argument("--no-rewrite", action="store_true", help="compiled engine: compile without the domain rewrites")
    p.add_argument("--batch-size", type=int, default=100, help="compiled engine: properties per batch (default 100)")
    p.add_argument("--device", default="cpu", help="compiled engine: torch device (default cpu)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                   help="compiled engine: floating-point type (default float64)")
    p.add_argument("--json", default=None, metavar="OUT", help="write the results as JSON to OUT")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    return p


def _manifest_entry(net_path: Path):
    """The MANIFEST.json entry of ``net_path`` (by file name), or None."""
    try:
        from cfruntime.properties import load_manifest, shared_dir

        if shared_dir() is None:
            return None
        for e in load_manifest():
            if e.file == net_path.name:
                return e
    except Exception:  # noqa: BLE001 - the manifest is optional metadata
        return None
    return None


def _parse_eps(text) -> float:
    try:
        eps = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"--eps must be a number, got '{text}'") from None
    if not math.isfinite(eps) or not 0 <= eps <= 1:
        raise UsageError(f"--eps must be in [0, 1] (pixel units), got {text}")
    return eps


def _progress(it, total: int, quiet: bool, desc: str):
    """A progress bar over ``it`` (or, with ``it`` None, one updated by hand) on a terminal."""
    disable = quiet or not sys.stderr.isatty()
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return it
    return tqdm(it, total=total, desc=desc, file=sys.stderr, disable=disable, leave=False)


def _load_program(args, certifier: str):
    """The interpreter's program or the compiled certifier, as ``--engine`` says."""
    if args.engine == "interpreter":
        from cfmlir.interpreter.run import load_certifier

        return load_certifier(certifier)
    from cfmlir.compiler import compile_certifier, load_certifier_source, pipeline_for

    return compile_certifier(*load_certifier_source(certifier), pipeline_for(not args.no_rewrite))


def _engine_label(args) -> str:
    if args.engine == "interpreter":
        return "interpreter"
    mode = ("dense" if args.no_sparse else "g-BSCR") + (", no rewrites" if args.no_rewrite else "")
    return f"compiled, {mode}, {args.dtype}, batch {args.batch_size}"


def _compiled_bounds(args, cert, net, lb, ub, C):
    """Margin bounds ``[B, K]`` of ``C @ net(x)`` over the boxes, by the compiled engine."""
    from cfruntime.flow.engine import out_of_memory_at

    # the margins' weights are per sample ([B, K, n]): a batch may not fit here already
    mnet = out_of_memory_at(lambda: net.with_margin_layer(C), net.layers[-1].index, "margins", len(C), args.device)
    return _compiled_run(args, cert, mnet, lb, ub)


def _compiled_run(args, cert, mnet, lb, ub):
    """Bounds of the last layer of ``mnet`` over the boxes (``[B, n]`` each), by the compiled engine."""
    import torch

    from cfruntime.flow.engine import run_certifier

    lb = torch.as_tensor(np.asarray(lb, dtype=np.float64)).reshape(-1, mnet.input_size)
    ub = torch.as_tensor(np.asarray(ub, dtype=np.float64)).reshape(-1, mnet.input_size)
    dtype = torch.float64 if args.dtype == "float64" else torch.float32
    res = run_certifier(cert, mnet, lb, ub, sparse=not args.no_sparse, dtype=dtype, device=args.device)
    return res.lower.to("cpu", torch.float64), res.upper.to("cpu", torch.float64)


def run(args) -> int:
    if args.batch_size is not None and args.batch_size <= 0:
        raise UsageError(f"--batch-size must be positive, got {args.batch_size}")
    if args.engine == "interpreter" and (args.no_sparse or args.no_rewrite):
        raise UsageError("--no-sparse and --no-rewrite apply to the compiled engine only")
    if args.device != "cpu":
        import torch

        try:
            ok = torch.device(args.device).type != "cuda" or torch.cuda.is_available()
        except RuntimeError:
            ok = False
        if not ok:
            raise UsageError(f"device '{args.device}' is not available here")
    if args.vnnlib is not None and (args.data is not None or args.eps is not None or args.n is not None):
        raise UsageError("--vnnlib cannot be combined with --data, --eps or --n")
    if args.n is not None and args.n <= 0:
        raise UsageError(f"--n must be positive, got {args.n}")

    defaults_mode = args.net is None and args.data is None and args.vnnlib is None
    if args.net is None:
        from cfruntime.default_data import default_network_path

        net_path = Path(default_network_path())
    else:
        net_path = Path(args.net)
    if args.vnnlib is None:
        if args.data is None:
            if not defaults_mode:
                raise UsageError("--data (with --eps) or --vnnlib is required with --net")
            from cfruntime.default_data import default_data_path

            data_path = Path(default_data_path())
        else:
            data_path = Path(args.data)
        if args.eps is None:
            if not defaults_mode:
                raise UsageError("--eps is required with --data")
            eps = DEFAULT_EPS
        else:
            eps = _parse_eps(args.eps)

    certifier = args.certifier or DEFAULT_CERTIFIER
    t0 = time.perf_counter()
    prog = _load_program(args, certifier)
    compile_s = time.perf_counter() - t0

    from cfruntime.errors import NetworkError
    from cfruntime.network import load_onnx

    t0 = time.perf_counter()
    if not net_path.is_file():
        raise NetworkError("no such network file", file=net_path)
    entry = _manifest_entry(net_path)
    kwargs = entry.load_kwargs(entry.default_semantics()) if entry is not None else {}
    net = load_onnx(net_path, **kwargs)
    if args.vnnlib is not None:
        return _run_vnnlib(args, prog, certifier, net, net_path, compile_s, t0)

    from cfruntime.properties import load_eran_csv, robustness_property

    images = load_eran_csv(data_path, args.dataset, stop=args.n)
    convention = entry.convention(entry.default_semantics()) if entry is not None else "std"
    prop = robustness_property(images, eps, convention, net.input_shape, num_classes=net.output_size)
    load_s = time.perf_counter() - t0
    return _run_dataset(args, prog, certifier, net, net_path, prop, compile_s, load_s)


def _run_dataset(args, prog, certifier, net, net_path, prop, compile_s, load_s) -> int:
    import torch

    from cfmlir.interpreter.run import certify_sample

    n = len(prop)
    t0 = time.perf_counter()
    with torch.no_grad():
        logits = net.forward(prop.x.to(torch.float64))
    preds = logits.argmax(dim=1)
    labels = [int(v) for v in prop.labels.tolist()]
    correct = [bool(int(p) == l) for p, l in zip(preds.tolist(), labels)]
    certified, mlb, mub = [], [], []
    if args.engine == "interpreter":
        for i in _progress(range(n), n, args.quiet, f"{Path(str(certifier)).stem}"):
            r = certify_sample(prog, net, prop.lb[i], prop.ub[i], labels[i])
            certified.append(bool(correct[i] and r.certified))
            mlb.append(r.margin_lb)
            mub.append(r.margin_ub)
    else:
        from cfruntime.flow.batching import in_batches

        bar = _progress(None, n, args.quiet, f"{Path(str(certifier)).stem}")

        def run_slice(lo: int, hi: int):
            out = _compiled_bounds(args, prog, net, prop.lb[lo:hi], prop.ub[lo:hi], prop.C[lo:hi])
            if hasattr(bar, "update"):
                bar.update(hi - lo)
            return out

        def shrink(old: int, new: int, oom) -> None:
            print(f"note: a batch of {old} did not fit in memory ({oom}); going on with batches of {new}", file=sys.stderr)

        slices, report = in_batches(run_slice, n, args.batch_size, shrink)
        if hasattr(bar, "close"):
            bar.close()
        batch_used = report.used
        for start, stop, (lo, hi) in slices:
            for j, i in enumerate(range(start, stop)):
                row_lo, row_hi = lo[j].tolist(), hi[j].tolist()
                row_lo[labels[i]] = row_hi[labels[i]] = 0.0  # the own column is y_true - y_true
                mlb.append(row_lo)
                mub.append(row_hi)
                certified.append(bool(correct[i] and all(x > 0 for k, x in enumerate(row_lo) if k != labels[i])))
    analysis_s = time.perf_counter() - t0
    out = {
        "certifier": str(certifier),
        "network": str(net_path),
        "eps": prop.eps,
        "n": n,
        "labels": labels,
        "correct": correct,
        "certified": certified,
        "margin_lb": mlb,
        "margin_ub": mub,
        "times": {"compile_s": compile_s, "load_s": load_s, "analysis_s": analysis_s},
    }
    # the interpreter analyses one input at a time
    out["batch_size"] = {"requested": args.batch_size, "used": 1 if args.engine == "interpreter" else batch_used}
    if args.json:
        _write_json(args.json, out)
    if not args.quiet:
        nc, ncert = sum(correct), sum(certified)
        pct = lambda a, b: f"{100.0 * a / b:.1f}%" if b else "n/a"  # noqa: E731
        print(f"certifier {certifier} on {net_path.name}, eps {prop.eps:g}, {n} samples (engine: {_engine_label(args)})")
        print(f"accuracy:  {nc}/{n} ({pct(nc, n)})")
        print(f"certified: {ncert}/{nc} correctly classified ({pct(ncert, nc)})")
        print(f"time:      compile {compile_s:.3f}s, load {load_s:.3f}s, analysis {analysis_s:.3f}s "
              f"({analysis_s / max(n, 1):.3f}s/sample)")
    return 0


def _run_vnnlib(args, prog, certifier, net, net_path, compile_s, t0) -> int:
    import numpy as np

    from cfmlir.interpreter.run import vnnlib_row_bounds
    from cfruntime.errors import PropertyError
    from cfruntime.properties import parse_vnnlib, verdict

    prop = parse_vnnlib(args.vnnlib)
    if prop.num_inputs != net.input_size or prop.num_outputs != net.output_size:
        raise PropertyError(f"property has {prop.num_inputs} inputs and {prop.num_outputs} outputs, the network "
                            f"{net.input_size} and {net.output_size}", file=args.vnnlib)
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    if args.engine == "interpreter":
        lows, highs = vnnlib_row_bounds(prog, net, prop)
    else:
        lows, highs = vnnlib_row_bounds(None, net, prop, lambda mnet, lb, ub: [b[0] for b in _compiled_run(args, prog, mnet, lb, ub)])
    v = verdict(prop, lows)
    if v != "unsat":
        from cfruntime.soundness import vnnlib_counterexample

        if vnnlib_counterexample(net, prop) is not None:
            v = "sat"
    analysis_s = time.perf_counter() - t1
    out = {
        "certifier": str(certifier),
        "network": str(net_path),
        "vnnlib": str(args.vnnlib),
        "verdict": v,
        "regions": [{"row_lb": np.asarray(lo).tolist(), "row_ub": np.asarray(hi).tolist()} for lo, hi in zip(lows, highs)],
        "times": {"compile_s": compile_s, "load_s": load_s, "analysis_s": analysis_s},
    }
    if args.json:
        _write_json(args.json, out)
    if not args.quiet:
        print(f"certifier {certifier} on {net_path.name}, property {Path(args.vnnlib).name} (engine: {_engine_label(args)})")
        print(f"verdict:   {v}")
        print(f"time:      compile {compile_s:.3f}s, load {load_s:.3f}s, analysis {analysis_s:.3f}s")
    return 0


def _write_json(path, obj) -> None:
    try:
        Path(path).write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _one_line(msg: str) -> str:
    msg = " ".join(str(msg).split())
    return msg


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from cfmlir.diagnostics import CfError
    from cfruntime.errors import CfRuntimeError

    try:
        return run(args)
    except CfRuntimeError as e:
        print(_one_line(str(e)), file=sys.stderr)
    except CfError as e:
        print(_one_line(str(e)), file=sys.stderr)
    except UsageError as e:
        print("error: " + _one_line(str(e)), file=sys.stderr)
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"error: {where}{_one_line(e.strerror or str(e))}", file=sys.stderr)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except MemoryError as e:  # outside the analysis (which retries with smaller batches)
        print(f"error: out of memory ({_one_line(str(e)) or 'allocation failed'})", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - never show a traceback to a user
        from cfruntime.flow.engine import EngineError

        if isinstance(e, EngineError):
            print("error: " + _one_line(str(e)), file=sys.stderr)
            return 1
        if os.environ.get("CF_RUN_TRACEBACK"):
            raise
        print(f"error: internal error ({type(e).__name__}): {_one_line(str(e))} "
              "(set CF_RUN_TRACEBACK=1 for details)", file=sys.stderr)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
