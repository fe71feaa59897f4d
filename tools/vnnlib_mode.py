"""``cf-run --vnnlib``: one VNN-LIB instance (:func:`vnnlib_instance`: verdict ``unsat``/``sat``/``unknown``,
its JSON object and summary lines), how it ends (:func:`finish_vnnlib`: printing, ``--json``, ``--results``,
the exit status) and the competition's result file (:func:`write_results_file`).  Run in-process, in a
``--timeout`` worker or by :mod:`cfmlir.tools.instances` for each line of an ``instances.csv``."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

from cfmlir.tools.discrete_mode import enumeration_instance
from cfmlir.tools.run_args import EXIT_UNSOUND, UsageError
from cfmlir.tools.run_setup import (LoadedProgram, check_error_line, engine_label, load_network_file, load_program, make_engine,
                                    run_proof, write_json)


def vnnlib_instance(args, loaded: LoadedProgram, certifier, check=None) -> tuple[dict, list[str], str | None, str | None]:
    """Load ``--net`` and ``--vnnlib`` and decide the property with the certifier ``loaded``: ``(the JSON
    object, the summary lines, the error line of an unsound check or None, the proof's warning line or
    None)``.  Nothing is printed but the check's report; a ``sat`` verdict always comes with a
    counterexample the network confirms (``"counterexample"`` in the JSON).  The certifier's rules for
    this network are proved first (:mod:`cfmlir.proof_gate`): a refuted rule raises, no verdict."""
    import numpy as np

    from cfmlir.tools.provenance import provenance

    from cfruntime.errors import PropertyError, UnsupportedOpError
    from cfruntime.properties import confirm_counterexample, parse_vnnlib

    t0 = time.perf_counter()
    if args.net is None:
        from cfruntime.default_data import default_network_path

        net_path = Path(default_network_path())
    else:
        net_path = Path(args.net)
    prog, compile_s = loaded.program, loaded.compile_s
    try:
        net, prep = load_network_file(net_path, args)
    except UnsupportedOpError as refused:  # decided without a certifier if the free inputs are only rounded
        return enumeration_instance(args, loaded, certifier, net_path, refused)
    prop = parse_vnnlib(args.vnnlib)
    if net.output_softmax_dropped and not prop.compares_outputs_only():  # the property reads the probabilities
        net, prep = load_network_file(net_path, args, keep_output_softmax=True)
    if prop.num_inputs != net.input_size or prop.num_outputs != net.output_size:
        raise PropertyError(f"property has {prop.num_inputs} inputs and {prop.num_outputs} outputs, the network "
                            f"{net.input_size} and {net.output_size}", file=args.vnnlib)
    load_s = time.perf_counter() - t0
    proof = run_proof(args, loaded, certifier, net)  # before any analysis: a refuted rule ends the instance here
    search = _search_program(args, net)  # branch and bound's own certifier, through the same gate
    t1 = time.perf_counter()
    from cfmlir.api import certify
    from cfruntime.flow.engine import EngineOutOfMemory, EnginePastDeadline
    from cfruntime.soundness import vnnlib_counterexample

    # The attack first (samples, then PGD: forward and backward passes only): a violated property needs no
    # bounds, and on wide nets one bounding pass costs far more than the attack (cgan_2023: minutes against
    # seconds).  sat only with a point that the network, evaluated again in float64, confirms.
    cex = split = bab = out_of_memory = pass_s = None
    found = vnnlib_counterexample(net, prop)
    if found is not None:
        cex = confirm_counterexample(net, prop, found[0], found[1])
    if cex is not None:
        v, lows, highs = "sat", [], []
    else:  # the engine object runs the certifier ``proof`` is about
        try:
            engine = make_engine(args, prog)
            if getattr(args, "split_deadline", None) is not None and hasattr(engine, "blocks"):
                # under a time limit a layer too big for memory runs a block of neurons at a time only while
                # its predicted end is before the deadline, else the pass ends (the attack has the time left)
                engine.blocks = args.split_deadline
            batch = args.batch_size if getattr(args, "batch_size_given", False) else REGION_BATCH
            t_pass = time.perf_counter()
            res = certify(None, net, prop, engine=engine, check=check, proof=proof, batch_size=batch, device=args.device,
                          layer_bounds=_root_layers(args, prop))
        except (EngineOutOfMemory, EnginePastDeadline) as exc:  # nothing is proved; the attack goes on (sat or unknown)
            out_of_memory = str(exc)
            v, lows, highs = "unknown", [], []
            cex = attack_until(net, prop, getattr(args, "split_deadline", None))
            if cex is not None:
                v = "sat"
        else:
            lows, highs = res.row_lb, res.row_ub
            v = _trusted(res.verdict, check)
            # a region's share of the pass (batched regions cost less each: this errs towards searching)
            pass_s = (time.perf_counter() - t_pass) / max(1, len(prop.regions))
    if v == "unknown" and out_of_memory is None and not (check is not None and check.unsound):
        bab = _bab(args, prog if search is None else search[0], net, prop, lows, check, pass_s, res.layer_bounds)
        split = None if bab is not None else _split(args, prog, net, prop, lows, check)
        found = bab or split
        if found is not None:
            v, cex = _trusted(found.verdict, check), found.counterexample or cex
    analysis_s = time.perf_counter() - t1 - (check.seconds if check is not None else 0.0)
    out = {
        "certifier": str(certifier),
        "network": str(net_path),
        "vnnlib": str(args.vnnlib),
        "verdict": v,
        **proof.json(),
        "regions": [{"row_lb": np.asarray(lo).tolist(), "row_ub": np.asarray(hi).tolist()} for lo, hi in zip(lows, highs)],
        "times": {"compile_s": compile_s, "load_s": load_s, "analysis_s": analysis_s},
    }
    if cex is not None:
        out["counterexample"] = cex.to_json()
    if out_of_memory is not None:
        out["out_of_memory"] = out_of_memory
    if split is not None:
        out["split"] = split.json()
    if bab is not None:
        out["bab"] = {**bab.json(), **({"certifier": args.bab_certifier} if getattr(args, "bab_certifier", None) else {})}
    if check is not None:
        out["times"]["check_s"] = check.seconds
        out.update(check.json())
        check.report()
    out["provenance"] = provenance(args, certifier, net_path, loaded, prep, vnnlib=args.vnnlib)
    lines = [f"certifier {certifier} on {net_path.name}, property {Path(args.vnnlib).name} (engine: {engine_label(args)})",
             f"verdict:   {v}" + ("" if split is None else f" (input splitting: {split.boxes} boxes in {split.rounds} "
                                     f"rounds{'' if split.stopped is None else ', stopped at the ' + split.stopped})")
             + ("" if bab is None else f" (branch and bound: {_bab_summary(bab)})")
             + ("" if out_of_memory is None else f" (one bounding pass does not fit: {out_of_memory}; attacked "
                                                 f"{'until the time limit' if v == 'unknown' else 'again'})"),
             f"time:      compile {compile_s:.3f}s, load {load_s:.3f}s, analysis {analysis_s:.3f}s"]
    if check is not None:
        lines.append(f"check:     {check.summary()}")
    warnings = [w for w in (proof.warning(), search and search[1].warning()) if w]
    return out, lines, check_error_line(check), "\n".join(warnings) or None


def _search_program(args, net):
    """``(program, proof)`` of the certifier branch and bound searches with when it is not the pass's own
    (``args.bab_certifier``, auto's choice on residual nets: :mod:`cfmlir.tools.auto_certifier`), proved for
    ``net``'s rules before any analysis as the pass's certifier is (:func:`run_proof`: a refuted rule raises,
    exit status 3); None when the search uses the pass's certifier or no search is asked for."""
    search = getattr(args, "bab_certifier", None)
    if search is None or not _bab_asked(args):
        return None
    loaded = load_program(args, search)
    return loaded.program, run_proof(args, loaded, search, net)


#: input regions of a property bounded in one engine call unless ``--batch-size`` says (halved when out of
#: memory): nn4sys_2023's ``lindex`` properties have 200 to 60,000 regions of one input each
REGION_BATCH = 1024

#: ``--max-boxes`` by default: without a time limit, and under one (where the deadline stops the search)
MAX_BOXES_UNTIMED, MAX_BOXES_TIMED = 20_000, 1_000_000


#: attacks after the first (:func:`attack_until`): PGD rows of each, more each time (on the nearest disjunct's
#: violation, one more row per disjunct; a property of one disjunct: restarts of it)
ATTACK_ROWS = (30, 50, 100)


def attack_until(net, prop, deadline: float | None):
    """Where no bound can be computed (one pass does not fit in memory), more attacks: new seeds, with
    :data:`ATTACK_ROWS` PGD rows, until one finds a counterexample the network confirms (returned) or the
    :func:`time.monotonic` ``deadline`` would pass before another ends (the last size repeats); without a
    deadline one attack of the first size.  None when none is found, or when an attack does not fit in
    memory."""
    from cfruntime.flow.engine import is_out_of_memory
    from cfruntime.properties import confirm_counterexample
    from cfruntime.soundness import vnnlib_counterexample

    one_disjunct = all(len(reg.disjuncts) <= 1 for reg in prop.regions)
    seed = 0
    while True:
        rows = ATTACK_ROWS[min(seed, len(ATTACK_ROWS) - 1)]
        seed += 1
        t0 = time.monotonic()
        try:
            found = vnnlib_counterexample(net, prop, restarts=rows if one_disjunct else 1, nearest_rows=rows, seed=seed)
        except (MemoryError, RuntimeError) as exc:  # every disjunct's restarts go in one batch
            if not is_out_of_memory(exc):
                raise
            return None
        if found is not None:
            cex = confirm_counterexample(net, prop, found[0], found[1])
            if cex is not None:
                return cex
        took = time.monotonic() - t0
        # the next one has at most twice as many rows
        if deadline is None or time.monotonic() + 2.0 * took > deadline:
            return None


def _trusted(verdict: str, check) -> str:
    """``unsat`` resting on bounds the soundness check refuted is ``unknown``: nothing is known."""
    return "unknown" if verdict == "unsat" and check is not None and check.unsound else verdict


def _split(args, prog, net, prop, lows, check):
    """Input splitting (:mod:`cfmlir.input_splitting`) of a property one pass left unknown, when ``--split``
    asks for it: its :class:`~cfmlir.input_splitting.SplitOutcome`, else None.  The deadline is the
    instance's (``args.split_deadline``, set by the process that enforces ``--timeout``)."""
    from cfmlir.input_splitting import decide_by_splitting, should_split
    from cfruntime.properties.vnnlib import region_verified

    mode = getattr(args, "split", "off")
    if mode == "auto" and args.engine == "interpreter":  # the reference interpreter: one pass, unless asked
        return None
    if not should_split(mode, prop):
        return None
    verified = [region_verified(reg, lo) for reg, lo in zip(prop.regions, lows)]
    deadline = getattr(args, "split_deadline", None)
    max_boxes = args.max_boxes or (MAX_BOXES_UNTIMED if deadline is None else MAX_BOXES_TIMED)
    batch = {"batch_size": args.batch_size} if getattr(args, "batch_size_given", False) else {}  # else splitting's
    return decide_by_splitting(make_engine(args, prog), net, prop, verified, max_boxes=max_boxes,
                               deadline=deadline, device=args.device, check=check, **batch)


#: a first pass keeps its layers' bounds for branch and bound's roots (``_root_layers``) up to this many regions
#: (nn4sys_2023's ``lindex`` properties have up to 60,000, each searched by splitting its input instead)
ROOT_LAYERS_MAX_REGIONS = 64


def _bab_asked(args) -> bool:
    """Whether ``--bab`` runs branch and bound after a pass that leaves the property unknown (``auto``: the
    compiled engine under a time limit)."""
    mode = getattr(args, "bab", "off")
    if args.engine != "compiled" or mode == "off":
        return False
    return mode != "auto" or getattr(args, "split_deadline", None) is not None


def _root_layers(args, prop):
    """``certify``'s ``layer_bounds`` for the first pass: the layers it computes anyway (``"computed"``), for
    branch and bound's roots to start from (:func:`cfmlir.bab.driver.run_bab`'s ``root_bounds``), when a
    search may follow; else none."""
    from cfmlir.engine_io import COMPUTED

    return COMPUTED if _bab_asked(args) and len(prop.regions) <= ROOT_LAYERS_MAX_REGIONS else False


def _bab(args, prog, net, prop, lows, check, pass_s: float | None = None, root_bounds: list | None = None):
    """Branch and bound (:mod:`cfmlir.bab`) of a property one pass left unknown, when ``--bab`` asks for it
    (:func:`_bab_asked`): its :class:`~cfmlir.bab.BabOutcome`, else None.  The
    deadline is the instance's (``args.split_deadline``, set by the process that enforces ``--timeout``);
    without one, the search stops after ``--max-boxes`` subdomains (20000 by default).  ``pass_s``: the first
    pass's seconds per region (:attr:`~cfmlir.bab.BabOptions.pass_seconds`: no root the deadline cannot wait for);
    ``root_bounds``: the pass's layer bounds per region (:attr:`cfmlir.api.VnnlibResult.layer_bounds`), where
    the roots start from."""
    from cfmlir.bab import BabOptions
    from cfmlir.bab.driver import run_bab
    from cfruntime.properties.vnnlib import region_verified

    deadline = getattr(args, "split_deadline", None)
    if not _bab_asked(args):
        return None
    engine = make_engine(args, prog)
    max_domains = args.max_boxes or (MAX_BOXES_UNTIMED if deadline is None else None)
    from cfmlir.optimize import options_from

    # --optimize N (or auto's choice, BaB only: auto_certifier.BAB_OPTIMIZE): the root's parameters optimised
    # (alpha-CROWN at the root), its bounds and parameters carried by every child
    given = getattr(args, "optimize", None)
    optimize = options_from(given or getattr(args, "bab_optimize", None) or None, getattr(args, "lr", None))
    options = BabOptions(branching=getattr(args, "bab_branching", "auto"), max_domains=max_domains,
                         engine_batch=args.batch_size if args.batch_size > 100 else 1024, optimize=optimize,
                         optimize_input=given is not None,
                         beta=getattr(args, "bab_beta", "on") == "on", pass_seconds=pass_s,
                         root_optimize=getattr(args, "bab_root_optimize", "all"),
                         **({} if getattr(args, "bab_batch", None) is None else {"batch": args.bab_batch}))
    verified = [region_verified(reg, lo) for reg, lo in zip(prop.regions, lows)]
    return run_bab(prog, net, prop, deadline=deadline, options=options, dtype=engine.dtype, device=args.device,
                   sparse=engine.sparse, widen=engine.widen, check=check, verified=verified, root_bounds=root_bounds)


def _branching(kinds: list[str]) -> str:
    """The splits of each input region (``none``: decided before branching): ``relu/input splits`` for up to
    four regions, else counted (nn4sys_2023's ``lindex_5000`` has 5,000 regions: one name each made a 40 kB
    line)."""
    if len(kinds) <= 4:
        return "/".join(kinds) + " splits"
    return "splits per region: " + ", ".join(f"{kind} {n}" for kind, n in Counter(kinds).items())


def _bab_summary(bab) -> str:
    st = bab.stats
    text = f"{st['domains']} subdomains in {st['rounds']} rounds, {bab.domains_per_second:.0f}/s, {_branching(st['branching'])}"
    if st.get("beta", "on") != "on":  # asked for (--bab-beta on) but not used: say why
        text += f", split multipliers {st['beta']}"
    if "root_optimize" in st:  # asked for but did not fit in memory: the plain pass instead
        text += f", root optimisation {st['root_optimize']}"
    return text + ("" if bab.stopped is None else f", stopped: {bab.stopped}")


def finish_vnnlib(args, out: dict, lines: list[str], check_error: str | None, warning: str | None = None) -> int:
    """Write ``--results`` and ``--json`` of one VNN-LIB instance, print its summary (and the proof's
    ``warning``); the exit status."""
    if warning is not None:
        print(warning, file=sys.stderr)
    if args.results:
        write_results_file(args.results, out["verdict"], out.get("counterexample"))
    if args.json:
        write_json(args.json, out)
    if not args.quiet:
        for line in lines:
            print(line)
    if check_error is not None:
        print(check_error, file=sys.stderr)
        return EXIT_UNSOUND
    return 0


def write_results_file(path, verdict: str, counterexample: dict | None = None) -> None:
    """The VNN-COMP result file (:mod:`cfruntime.results`); a :class:`UsageError` when it cannot be written.
    (numpy is imported only for a counterexample: a ``--timeout`` run's parent never imports it.)"""
    from cfruntime.results import Counterexample, write_result

    cex = None
    if counterexample is not None:
        import numpy as np

        cex = Counterexample(np.asarray(counterexample["x"], dtype=np.float64), np.asarray(counterexample["y"], dtype=np.float64),
                             counterexample["region"], counterexample["disjunct"])
    try:
        write_result(path, verdict, cex)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
