"""Branch and bound (:mod:`cfmlir.bab`) as a whole: it decides random ReLU instances the way an exact MILP
does (issue 26, acceptance 2), runs unchanged with other polyhedral certifiers and a user's spec
(acceptance 4), never turns an unsound certifier's bounds into ``unsat`` under ``--check`` (acceptance 1),
and stops ``unknown`` at its limits; ``cf-run --bab`` writes what it found."""

from __future__ import annotations

import json
import time

import numpy as np
import onnx
import pytest
import torch

import cfmlir
from cfmlir.bab import BabOptions, verify_property
from cfmlir.bab.driver import run_bab
from cfmlir.tools.cf_run import main as cf_run
from cftest.bab_cases import case_bounding, empty_root, random_case
from cftest.instances_folder import numpy_forward, relu_net, vnnlib_text
from cftest.milp import min_violation, min_violation_by_enumeration

#: seconds each random instance may take (they take well under one to a few seconds)
PER_CASE_S = 120


@pytest.fixture(scope="module")
def deeppoly(shipped):
    return shipped.compiled("deeppoly")


@pytest.mark.parametrize("seed", range(16))
def test_decides_random_instances_as_the_milp_does(deeppoly, seed):
    """Nets of up to 3 hidden layers of 20 ReLUs; the threshold 10% of the output spread on the true side
    of the exact minimum (MILP); one or two rows per disjunct."""
    case = random_case(seed, margin=0.10, rows=1 + seed % 3 // 2)
    out = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="relu"))
    assert out.verdict == case.truth, (case.sizes, out.verdict, out.stopped, out.stats)
    if out.verdict == "sat":
        cex = out.counterexample
        reg = case.prop.regions[0]
        assert np.all(cex.x >= reg.lb) and np.all(cex.x <= reg.ub)
        A, b = reg.disjuncts[0]
        assert np.all(A @ numpy_forward(case.ws, case.bs, cex.x) <= b + 1e-9)


@pytest.mark.parametrize("seed", [2, 3, 4, 5, 9, 13, 17])
def test_close_calls_on_small_nets(deeppoly, seed):
    """1% of the spread from the minimum, one hidden layer, no first attack: decided (the unsat ones after
    branching: one pass does not suffice), and the MILP agrees with enumerating every activation pattern."""
    case = random_case(seed, margin=0.01, max_depth=1, max_width=8)
    reg = case.prop.regions[0]
    A, b = reg.disjuncts[0]
    assert abs(min_violation_by_enumeration(case.ws, case.bs, reg.lb, reg.ub, A, np.zeros(1)) - case.minimum) < 1e-6
    out = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="relu", attack_restarts=0))
    assert out.verdict == case.truth
    assert out.verdict == "sat" or out.stats["domains"] > 1


def test_input_branching_decides_a_low_dimensional_box(deeppoly):
    case = random_case(3, margin=0.05, max_depth=2)
    out = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="input"))
    assert out.verdict == case.truth == "unsat" and out.stats["branching"] == ["input"]


@pytest.mark.parametrize("spec", ["crown_ibp", "skippoly", "deepz", "renamed deeppoly (a user's .cf)"])
def test_other_certifiers_run_unchanged(shipped, deeppoly, spec):
    """The driver knows a certifier only by its Float lower/upper members: CROWN-IBP, SkipPoly, DeepZ and a
    user's spec (DeepPoly with its members renamed) decide the same instances as DeepPoly."""
    from cfmlir.certifiers import certifier_source
    from cftest.mutants import renamed

    cert = shipped.compiled(spec) if " " not in spec else cfmlir.compile(renamed(certifier_source("deeppoly")[0])).compiled
    for seed in (1, 2, 5):
        case = random_case(seed, margin=0.10, max_depth=2, max_width=12)
        out = run_bab(cert, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                      options=BabOptions(branching="relu"))
        assert out.verdict == case.truth, (spec, seed, out.stopped)


def test_limits_end_unknown(deeppoly):
    case = random_case(11, margin=0.01)
    out = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() - 1.0, options=BabOptions(branching="relu"))
    assert (out.verdict, out.stopped) == ("unknown", "deadline")
    out = run_bab(deeppoly, case.net, case.prop, options=BabOptions(branching="relu", max_domains=3, lp_unstable=0,
                                                                      attack_restarts=0))
    assert (out.verdict, out.stopped) == ("unknown", "domain limit") and out.stats["domains"] <= 3 + 2 * 64


def test_no_root_when_the_deadline_cannot_wait_for_it(deeppoly):
    """``pass_seconds``: with 60 s left and a first pass of 40 s the root and a round (2 x 40 s) cannot end: the
    search stops ``unknown`` before bounding anything; with a pass of 1 s it decides the instance."""
    case = random_case(3, margin=0.05, max_depth=2)
    slow = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + 60,
                   options=BabOptions(branching="relu", attack_restarts=0, pass_seconds=40.0))
    assert slow.verdict == "unknown" and slow.stopped.startswith("deadline (one pass took 40 s")
    assert slow.stats["domains"] == 0
    fast = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + 60,
                   options=BabOptions(branching="relu", attack_restarts=0, pass_seconds=1.0))
    assert fast.verdict == case.truth == "unsat"
    # with the first pass's layer bounds the root needs no pass: the slow search starts from them and decides
    first = cfmlir.certify(cfmlir.compile("deeppoly"), case.net, case.prop, layer_bounds="computed")
    slow = run_bab(deeppoly, case.net, case.prop, deadline=time.monotonic() + 60, root_bounds=first.layer_bounds,
                   options=BabOptions(branching="relu", attack_restarts=0, pass_seconds=40.0))
    assert slow.verdict == "unsat" and slow.stats["root"] == "first pass" and slow.stats["domains"] > 1


def test_an_optimising_root_reuses_the_first_pass_only_when_short_of_time(shipped):
    """A certifier that optimises its root (``BabOptions.optimize``) optimises it, first pass or not, while the
    time left holds two passes; with less, it starts from the first pass's bounds instead of stopping, and
    optimises the rows' own parameters from them."""
    from cfmlir.optimize import OptimizeOptions

    case = random_case(5, margin=0.10, max_depth=2, max_width=12)
    first = cfmlir.certify(cfmlir.compile("alpha_deeppoly"), case.net, case.prop, layer_bounds="computed")
    for took, root in ((1.0, None), (40.0, "first pass, rows optimised")):
        out = run_bab(shipped.compiled("alpha_deeppoly"), case.net, case.prop, deadline=time.monotonic() + 60,
                      root_bounds=first.layer_bounds, options=BabOptions(branching="relu", pass_seconds=took,
                                                                         optimize=OptimizeOptions(iterations=10)))
        assert out.verdict == case.truth and out.stats.get("root") == root


def _residual_instance(b: float = -4.65):
    """TinyYOLO's block (:func:`cftest.nets.residual_conv`, seed 2) and the property ``y_0 - y_1 <= b`` over a box
    of radius 0.03: one DeepPoly pass leaves it open (row bound -4.818), branch and bound proves it (27
    subdomains).  Two of its convolutions feed a join: no rule reads their bounds."""
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty
    from cftest.nets import residual_conv

    net = residual_conv(seed=2)
    centre = np.random.default_rng(0).uniform(-1, 1, net.input_size)
    region = InputRegion(centre - 0.03, centre + 0.03, [(np.array([[1.0, -1.0, 0.0]]), np.array([b]))])
    return net, VnnlibProperty(net.input_size, 3, [region])


def test_the_root_starts_from_a_first_pass_layer_bounds(deeppoly, monkeypatch):
    """``root_bounds`` (a first pass's ``certify(layer_bounds="computed")``): the root is bounded by one run of its
    rows (``replace``), never by a pass of its own, and the search is the one a root pass gives -- the same
    subdomains, round by round.  The pass leaves out the layers it deferred (the two convolutions that feed
    the join); the search carries them as unbounded, which no rule reads."""
    from cfmlir.bab.bounding import CertifierBounding

    net, prop = _residual_instance()
    cert = cfmlir.compile("deeppoly")
    first = cfmlir.certify(cert, net, prop, layer_bounds="computed")
    every = cfmlir.certify(cert, net, prop, layer_bounds=True)
    assert first.verdict == "unknown" and sorted(first.layer_bounds[0]) == [1, 5, 7]
    assert sorted(every.layer_bounds[0]) == [1, 2, 3, 4, 5, 6, 7]
    for k, (lo, hi) in first.layer_bounds[0].items():
        assert torch.equal(lo, every.layer_bounds[0][k][0]) and torch.equal(hi, every.layer_bounds[0][k][1])
    real = CertifierBounding.bound
    runs = []
    monkeypatch.setattr(CertifierBounding, "bound", lambda self, d, reuse="replace", *a, **k: runs.append(reuse) or
                        real(self, d, reuse, *a, **k))
    searches = []
    for root_bounds in (None, first.layer_bounds):
        runs.clear()
        worst = []
        out = run_bab(deeppoly, net, prop, deadline=time.monotonic() + PER_CASE_S, root_bounds=root_bounds,
                      options=BabOptions(branching="relu", attack_restarts=0), on_round=lambda p: worst.append(p["worst"]))
        searches.append((out.verdict, out.stats["domains"], worst, out.stats.get("root"), list(runs)))
    (v0, n0, w0, root0, runs0), (v1, n1, w1, root1, runs1) = searches
    assert (v0, n0) == (v1, n1) == ("unsat", 27) and w0 == w1
    assert runs0[0] == "tighten" and root0 is None
    assert "tighten" not in runs1 and root1 == "first pass"


def test_a_root_from_the_first_pass_optimises_its_rows_only(monkeypatch):
    """``bound_optimized`` of a root that carries a first pass's layer bounds (an optimising certifier short of
    time, :meth:`_RegionSearch._plan_root`): every run replaces them -- none is computed again, they come back
    unchanged -- and the rows' own slopes are optimised from them: the rows above the plain run of the rows
    (TinyYOLO's block: -4.8184 -> -4.8139), with the slopes for the children to start from."""
    from types import SimpleNamespace

    import cfruntime.flow.engine as engine
    from cfmlir.bab.domains import hi_key, lo_key
    from cfmlir.optimize import OptimizeOptions

    net, prop = _residual_instance()
    alpha = cfmlir.compile("alpha_deeppoly")
    first = cfmlir.certify(alpha, net, prop, layer_bounds="computed")
    obj, mnet, st, bounding = case_bounding(alpha.compiled, SimpleNamespace(net=net, prop=prop))
    root = empty_root(obj.rows)
    for k in st.carried:
        lo, hi = first.layer_bounds[0][k]
        root[lo_key(k)], root[hi_key(k)] = lo.reshape(1, -1).clone(), hi.reshape(1, -1).clone()
    plain = bounding.bound(root, "replace")
    real, replaced = engine.run_certifier, []
    monkeypatch.setattr(engine, "run_certifier", lambda *a, **kw: replaced.append(
        all(kw["bound_overrides"][k].replace is True for k in st.carried)) or real(*a, **kw))
    opt = bounding.bound_optimized(root, OptimizeOptions(iterations=20), lambda rows: (rows > 0).all(1))
    assert len(replaced) > 2 and all(replaced)
    for k in st.carried:
        assert torch.equal(opt.carried[k][0], root[lo_key(k)]) and torch.equal(opt.carried[k][1], root[hi_key(k)])
    assert float(plain.rows[0, 0]) == pytest.approx(-4.8184, abs=1e-4)
    assert float(opt.rows[0, 0]) > float(plain.rows[0, 0]) + 4e-3 and opt.alphas


def test_api_takes_names_and_paths(tmp_path):
    ws, bs, model = relu_net([2, 6, 1], seed=4)
    onnx.save(model, str(tmp_path / "net.onnx"))
    y = numpy_forward(ws, bs, np.zeros(2))[0]
    (tmp_path / "p.vnnlib").write_text(vnnlib_text([-0.01, -0.01], [0.01, 0.01], 1, [f"(assert (<= Y_0 {float(y) - 10.0!r}))"]))
    out = verify_property("deeppoly", tmp_path / "net.onnx", str(tmp_path / "p.vnnlib"), timeout=60)
    assert out.verdict == "unsat" and out.json()["verdict"] == "unsat"
    assert cfmlir.verify_property is verify_property


@pytest.fixture(scope="module")
def hard(tmp_path_factory):
    """A 4-input net with one output, its exact minimum over ``[-1, 1]^4`` (MILP), and properties ``Y_0 <=
    t`` (the violation) 5% of the output spread below it (holds) and above it (violated)."""
    d = tmp_path_factory.mktemp("bab_cli")
    ws, bs, model = relu_net([4, 16, 16, 1], seed=7)
    onnx.save(model, str(d / "net.onnx"))
    lb, ub = -np.ones(4), np.ones(4)
    m, _ = min_violation(ws, bs, lb, ub, np.ones((1, 1)), np.zeros(1))
    g = np.random.default_rng(0).uniform(-1, 1, size=(2000, 4))
    spread = float(np.ptp([numpy_forward(ws, bs, x)[0] for x in g]))
    for name, t in (("holds", m - 0.05 * spread), ("violated", m + 0.05 * spread)):
        (d / f"{name}.vnnlib").write_text(vnnlib_text(lb, ub, 1, [f"(assert (<= Y_0 {float(t)!r}))"]))
    return {"dir": d, "net": d / "net.onnx"}


def _run(hard, prop, name, *flags, certifier="deeppoly"):
    out = hard["dir"] / f"{name}.json"
    rc = cf_run(["--quiet", "--certifier", str(certifier), "--net", str(hard["net"]), "--vnnlib",
                 str(hard["dir"] / f"{prop}.vnnlib"), "--json", str(out), *map(str, flags)])
    return rc, json.loads(out.read_text())


def test_cf_run_bab_decides_and_reports(hard):
    """What one pass (and the attack) leaves unknown, ``--bab on`` decides: ``unsat`` below the minimum,
    ``sat`` above it with the competition's result file; ``--bab off`` and ``auto`` without a time limit
    leave the JSON without ``bab``."""
    from cfruntime.results import read_result

    rc, one = _run(hard, "holds", "holds_off", "--bab", "off", "--split", "off")
    assert rc == 0 and one["verdict"] == "unknown" and "bab" not in one  # the test means something
    rc, auto = _run(hard, "holds", "holds_auto", "--split", "off")
    assert rc == 0 and "bab" not in auto
    rc, d = _run(hard, "holds", "holds_on", "--bab", "on", "--bab-branching", "relu")
    assert rc == 0 and d["verdict"] == "unsat" and d["bab"]["verdict"] == "unsat"
    assert set(d["bab"]) >= {"domains", "rounds", "seconds", "domains_per_second", "disjunct_domains",
                              "disjunct_domains_per_second", "branching", "stopped"}
    assert d["bab"]["beta"] == "on"  # split multipliers (cfmlir.bab.lagrangian), on by default
    rc, nb = _run(hard, "holds", "holds_no_beta", "--bab", "on", "--bab-branching", "relu", "--bab-beta", "off")
    assert rc == 0 and nb["verdict"] == "unsat" and "beta" not in nb["bab"]
    rc, v = _run(hard, "violated", "violated_on", "--bab", "on", "--results", hard["dir"] / "violated.txt")
    assert rc == 0 and v["verdict"] == "sat"
    verdict, xs, ys = read_result(hard["dir"] / "violated.txt")
    assert verdict == "sat" and len(xs) == 4 and len(ys) == 1


def test_cf_run_bab_batch_is_the_domains_branched_per_round(hard):
    """``--bab-batch N`` (BabOptions.batch): at most N domains branched a round -- N = 1 takes a round per
    branched domain, where the default branches many at once -- and the verdict is the same."""
    rc, d = _run(hard, "holds", "holds_batch_default", "--bab", "on", "--bab-branching", "relu")
    rc1, one = _run(hard, "holds", "holds_batch_1", "--bab", "on", "--bab-branching", "relu", "--bab-batch", "1")
    assert rc == rc1 == 0 and d["verdict"] == one["verdict"] == "unsat"
    assert one["bab"]["rounds"] > d["bab"]["rounds"]  # the test means something: the default branches several a round
    assert one["bab"]["rounds"] >= one["bab"]["domains"] // 2 - 1  # one domain (two children) a round


@pytest.mark.parametrize("mutant", ["deeppoly ReLU upper bound 0", "deeppoly ReLU lower polyhedron is the upper bound u"])
def test_an_unsound_certifier_proves_nothing_by_bab(hard, mutant, monkeypatch, tmp_path):
    """A mutant certifier's bounds, checked on every batch of subdomains (``--check``, on by default for a
    ``.cf`` file), never make an ``unsat``; the exit status says unsound.  (The prover refutes these mutants
    before any analysis: here it is made to miss them, :mod:`cftest.proofs`, so that the check is tested.)"""
    from cftest.mutants import unsound_file
    from cftest.proofs import prover_misses

    cf = unsound_file(hard["dir"], mutant)
    prover_misses(monkeypatch, tmp_path / "cache", cf.read_text())
    rc, d = _run(hard, "holds", cf.stem, "--bab", "on", "--bab-branching", "relu", certifier=cf)
    assert rc == 3 and d["unsound"] is True and d["verdict"] != "unsat"


def test_root_optimisation_of_a_parametric_certifier(shipped):
    """``BabOptions(optimize=...)`` with alpha-DeepPoly: the root's rows are at least the unoptimised ones
    (above them somewhere: the optimisation means something), every carried layer's bounds hold on concrete
    points of the box, and the search still decides as the MILP does."""
    from cfmlir.optimize import OptimizeOptions

    cert = shipped.compiled("alpha_deeppoly")
    optimize = OptimizeOptions(iterations=10)
    gained = False
    for seed in (1, 2, 5):
        case = random_case(seed, margin=0.10, max_depth=2, max_width=12)
        obj, mnet, st, bounding = case_bounding(cert, case)
        box = bounding.box

        def root():
            return empty_root(obj.rows)

        plain = bounding.bound(root(), "tighten")
        opt = bounding.bound_optimized(root(), optimize, lambda rows: torch.zeros(rows.shape[0], dtype=torch.bool))
        assert bool((opt.rows >= plain.rows - 1e-12).all())
        gained |= bool((opt.rows > plain.rows + 1e-9).any())
        x = box[0] + (box[1] - box[0]) * torch.rand(5000, box[0].shape[0], generator=torch.Generator().manual_seed(seed),
                                                     dtype=torch.float64)
        vals = mnet.forward_all(x)
        for k, (lo, hi) in opt.carried.items():
            assert bool((vals[k] >= lo - 1e-9).all() and (vals[k] <= hi + 1e-9).all())
        assert bool((vals[-1] >= opt.rows - 1e-9).all())
        out = run_bab(cert, case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                      options=BabOptions(branching="relu", optimize=optimize))
        assert out.verdict == case.truth, (seed, out.stopped)
    assert gained


def _out_of_memory(*args, **kwargs):
    from cfruntime.flow.engine import EngineOutOfMemory

    raise EngineOutOfMemory(3, "mul", 1, 2 ** 28, "cpu")


def test_a_root_optimisation_that_does_not_fit_falls_back_to_one_pass(shipped, monkeypatch):
    """The root's parameter optimisation out of memory (VNN-COMP 2024 ml4acopf's 118-bus nets: an error
    before): the root is bounded by one plain pass and the search decides as the MILP does; the stats say
    why the root was not optimised."""
    from cfmlir.bab.bounding import CertifierBounding
    from cfmlir.optimize import OptimizeOptions

    monkeypatch.setattr(CertifierBounding, "bound_optimized", _out_of_memory)
    case = random_case(5, margin=0.10, max_depth=2, max_width=12)
    out = run_bab(shipped.compiled("alpha_deeppoly"), case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="relu", optimize=OptimizeOptions(iterations=10)))
    assert out.verdict == case.truth and out.stats["root_optimize"].startswith("off (out of cpu memory at layer 3")


def test_a_domain_that_does_not_fit_ends_unknown(deeppoly, monkeypatch):
    """Bounding one domain out of memory (the engine already halved the batch down to 1): ``unknown``,
    stopped by memory, not an error."""
    from cfmlir.bab.bounding import CertifierBounding

    monkeypatch.setattr(CertifierBounding, "bound", _out_of_memory)
    case = random_case(11, margin=0.10)
    out = run_bab(deeppoly, case.net, case.prop, options=BabOptions(branching="relu", attack_restarts=0))
    assert out.verdict == "unknown" and out.stopped.startswith("memory (out of cpu memory at layer 3 (mul)")

    def allocator_fails(*args, **kwargs):  # an allocation outside the engine's layers (ml4acopf's 300-bus net)
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory")

    monkeypatch.setattr(CertifierBounding, "bound", allocator_fails)
    out = run_bab(deeppoly, case.net, case.prop, options=BabOptions(branching="relu", attack_restarts=0))
    assert out.verdict == "unknown" and out.stopped.startswith("memory ([enforce fail")

    def a_bug(*args, **kwargs):
        raise RuntimeError("The size of tensor a (186) must match the size of tensor b (47)")

    monkeypatch.setattr(CertifierBounding, "bound", a_bug)  # any other error is not hidden
    with pytest.raises(RuntimeError, match="must match"):
        run_bab(deeppoly, case.net, case.prop, options=BabOptions(branching="relu", attack_restarts=0))


@pytest.mark.parametrize("seed", [1, 3])  # unsat: the search reaches the root
def test_input_branching_optimises_the_root_without_carrying_its_parameters(shipped, monkeypatch, seed):
    """``optimize_input=False`` (``--certifier auto``): the root is optimised once all the same (a root the
    optimisation verifies needs no split: ml4acopf_2024 ``14_ieee prop3`` on the linear nets, unknown after
    600 s of input splits before), and the search over input boxes decides as the MILP does."""
    from cfmlir.bab.bounding import CertifierBounding
    from cfmlir.optimize import OptimizeOptions

    calls = []
    optimised = CertifierBounding.bound_optimized

    def spy(self, *args, **kwargs):
        calls.append(len(args[0]))
        return optimised(self, *args, **kwargs)

    monkeypatch.setattr(CertifierBounding, "bound_optimized", spy)
    case = random_case(seed, margin=0.10, max_depth=2, max_width=12)
    out = run_bab(shipped.compiled("alpha_deeppoly"), case.net, case.prop, deadline=time.monotonic() + PER_CASE_S,
                  options=BabOptions(branching="input", optimize=OptimizeOptions(iterations=10), optimize_input=False))
    assert out.verdict == case.truth and calls == [1]


def test_cf_run_bab_with_optimize_decides(hard):
    """``cf-run --certifier alpha_deeppoly --optimize N --bab on``: the root's parameters are optimised and
    the search decides what one pass leaves unknown."""
    rc, d = _run(hard, "holds", "holds_alpha", "--bab", "on", "--bab-branching", "relu", "--optimize", "5",
                 certifier="alpha_deeppoly")
    assert rc == 0 and d["verdict"] == "unsat" and d["bab"]["verdict"] == "unsat"


def _with_disjuncts(case, disjuncts):
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty

    reg = case.prop.regions[0]
    return VnnlibProperty(case.prop.num_inputs, case.prop.num_outputs, [InputRegion(reg.lb, reg.ub, disjuncts)])


@pytest.mark.parametrize("per_disjunct", [False, True])
def test_disjunct_domains_count_each_open_disjunct_of_a_subdomain(deeppoly, per_disjunct):
    """``stats["disjunct_domains"]`` (alpha-beta-CROWN's unit: a tree per disjunct): a subdomain counts once
    per disjunct its parent left open.  One joint tree (``per_disjunct=False``): one disjunct gives as many as
    the subdomains; the same disjunct three times three times as many; plus a disjunct the root refutes
    (``y <= -1e9``) one more (the root's).  A tree per disjunct: the same disjunct three times is three trees,
    each as big as the one disjunct's (the root is bounded once); the refuted disjunct gets no tree."""
    case = random_case(1, margin=0.10, max_depth=2, max_width=12)
    (A, b), = case.prop.regions[0].disjuncts
    runs = {}
    for name, disjuncts in (("one", [(A, b)]), ("thrice", [(A, b)] * 3),
                            ("and refuted", [(A, b), (A[:1], np.full(1, -1e9))])):
        out = run_bab(deeppoly, case.net, _with_disjuncts(case, disjuncts), deadline=time.monotonic() + PER_CASE_S,
                      options=BabOptions(branching="relu", attack_restarts=0, per_disjunct=per_disjunct))
        assert out.verdict == case.truth == "unsat", (name, out.stopped)
        runs[name] = out.stats
    d = runs["one"]["domains"]
    assert d > 1
    assert runs["one"]["disjunct_domains"] == d
    if per_disjunct:
        assert runs["thrice"]["domains"] == 1 + 3 * (d - 1) and runs["thrice"]["disjunct_domains"] == 3 + 3 * (d - 1)
    else:
        assert runs["thrice"]["domains"] == d and runs["thrice"]["disjunct_domains"] == 3 * d
    assert runs["and refuted"]["domains"] == d and runs["and refuted"]["disjunct_domains"] == d + 1


def test_a_tree_per_disjunct_copies_the_root_once_per_open_disjunct(deeppoly):
    """The root's copies: one per disjunct it leaves open, each with the other disjuncts' rows at +inf (so
    its value is its own disjunct's), and the bounds the soundness check sees never carry those +inf rows."""
    case = random_case(5, margin=0.10, max_depth=2, max_width=12)
    (A, b), = case.prop.regions[0].disjuncts
    refuted = (A[:1], np.full(1, -1e9))
    prop = _with_disjuncts(case, [(A, b), refuted, (A, b + 1e-3)])
    seen = []

    class Check:
        unsound = False

        def __call__(self, mnet, lb, ub, layers, region, inside=None):
            seen.append(max(float(lo.max()) for lo, _ in layers.values()))

    out = run_bab(deeppoly, case.net, prop, deadline=time.monotonic() + PER_CASE_S, check=Check(),
                  options=BabOptions(branching="relu", attack_restarts=0))
    assert out.verdict == case.truth == "unsat", out.stopped
    assert seen and max(seen) < np.inf
    from cfmlir.bab.driver import _RegionSearch

    search = _RegionSearch(deeppoly, case.net, prop, 0, prop.regions[0], BabOptions(branching="relu", attack_restarts=0),
                           None, __import__("torch").Generator(), {"domains": 0, "disjunct_domains": 0, "branching": []},
                           {}, None)
    root = search._root()
    rows = root["rows"].numpy()
    assert rows.shape[0] == 2  # the refuted disjunct gets no copy
    assert np.isinf(rows[0, 2:]).all() and np.isfinite(rows[0, :1]).all()
    assert np.isinf(rows[1, :2]).all() and np.isfinite(rows[1, 2:]).all()


def test_input_branching_attacks_its_worst_boxes(deeppoly):
    """Counterexamples in a small ball (ACAS Xu's ``prop_2`` on nets 1_3, 1_5, 5_3: the first attack misses
    them): ``y = 1 - 2^10 sum_i |x_i - c_i|`` on ``[0, 1]^5``, unsafe where ``y >= 0.5`` (an L1 ball of radius
    2^-11 around ``c``).  With PGD on the worst child boxes every few rounds the search finds one before its
    2000-subdomain limit; with the boxes' centres alone (``input_attack=0``) it does not."""
    from cfruntime.network import network_from_model
    from cfruntime.network.builders import mlp_model
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty

    n = 5
    c = np.float32([0.3141592, 0.2718281, 0.6180339, 0.1414213, 0.5772156])
    ws = [np.concatenate([np.eye(n), -np.eye(n)]).astype(np.float32), np.full((1, 2 * n), -2.0 ** 10, np.float32)]
    bs = [np.concatenate([-c, c]).astype(np.float32), np.array([1.0], np.float32)]
    net = network_from_model(mlp_model(ws, bs, activations="relu", input_shape=(n,)))
    prop = VnnlibProperty(n, 1, [InputRegion(np.zeros(n), np.ones(n), [(np.array([[-1.0]]), np.array([-0.5]))])])
    # without clipping, which shrinks the boxes onto the ball until a centre lies in it
    found = run_bab(deeppoly, net, prop, options=BabOptions(branching="input", attack_restarts=0, lp_unstable=0,
                                                            max_domains=2000, clip=False))
    assert found.verdict == "sat" and abs(found.counterexample.x - c).sum() <= 2.0 ** -11 + 1e-9
    centres = run_bab(deeppoly, net, prop, options=BabOptions(branching="input", attack_restarts=0, lp_unstable=0,
                                                              max_domains=2000, input_attack=0, clip=False))
    assert (centres.verdict, centres.stopped) == ("unknown", "domain limit")


@pytest.mark.parametrize("hidden, free, mode", [(40, 5, "input"), (400, 20, "relu"), (2000, 20, "input"),
                                                (2000, 70, "relu"), (6400, 70, "relu")])
def test_auto_branching_splits_inputs_when_neurons_far_outnumber_them(deeppoly, hidden, free, mode):
    """``branching="auto"``: input splits up to 16 varying inputs; up to 64 when the network has at least 100
    ReLU neurons per varying input (nn4sys's pensieve nets: 32 inputs, 4364 ReLUs); else ReLU splits.  Inputs
    that do not vary do not count."""
    from cfmlir.bab.driver import _RegionSearch
    from cfmlir.bab.options import AUTO_MAX_FREE_INPUTS_WIDE, INPUT_SPLIT_RELU_RATIO
    from cfruntime.network import network_from_model
    from cfruntime.properties.vnnlib import InputRegion, VnnlibProperty

    assert (AUTO_MAX_FREE_INPUTS_WIDE, INPUT_SPLIT_RELU_RATIO) == (64, 100)
    n_in = 80
    _, _, model = relu_net([n_in, hidden, 2], seed=0)
    lb = np.zeros(n_in)
    ub = lb.copy()
    ub[:free] = 0.1  # the other inputs are fixed
    prop = VnnlibProperty(n_in, 2, [InputRegion(lb, ub, [(np.array([[1.0, -1.0]]), np.zeros(1))])])
    search = _RegionSearch(deeppoly, network_from_model(model), prop, 0, prop.regions[0],
                           BabOptions(branching="auto", attack_restarts=0), None, torch.Generator(),
                           {"domains": 0, "disjunct_domains": 0, "branching": []}, {}, None)
    assert search.mode == mode
