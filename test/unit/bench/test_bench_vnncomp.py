"""``bench/vnncomp.py`` runs benchmark folders through ``cf-run --instances`` and tabulates the verdicts
(issue 16): a folder of two generated benchmarks -- an MLP with one ``unsat`` and one ``sat`` instance,
and one whose network has an op no certifier handles (``error``, with its reason); the competition's
results are read in 2021's layout (``*.csv``) and in 2024's (``TOOL/YEAR_BENCHMARK/results.csv``)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper

from cfruntime.network.builders import make_model, mlp_model, random_mlp_weights
from cftest import REPO



def vnnlib(n_in: int, n_out: int, asserts: list[str]) -> str:
    lines = [f"(declare-const X_{i} Real)" for i in range(n_in)] + [f"(declare-const Y_{j} Real)" for j in range(n_out)]
    lines += [a for i in range(n_in) for a in (f"(assert (>= X_{i} 0.0))", f"(assert (<= X_{i} 0.1))")]
    return "\n".join(lines + asserts) + "\n"


def test_bench_tabulates_every_benchmark(tmp_path):
    root = tmp_path / "benchmarks"
    mlp = root / "mlp"
    mlp.mkdir(parents=True)
    ws, bs = random_mlp_weights([4, 8, 2], seed=7)
    onnx.save(mlp_model(ws, bs, activations="relu", input_shape=(4,)), mlp / "net.onnx")
    (mlp / "never.vnnlib").write_text(vnnlib(4, 2, ["(assert (>= Y_0 1000000.0))"]))  # unreachable: unsat
    (mlp / "always.vnnlib").write_text(vnnlib(4, 2, ["(assert (<= Y_0 1000000.0))"]))  # every point: sat
    (mlp / "instances.csv").write_text("net.onnx,never.vnnlib,60\nnet.onnx,always.vnnlib,60\n")
    odd = root / "odd"
    odd.mkdir()
    onnx.save(make_model([helper.make_node("Erf", ["input"], ["output"], name="erf")], {}, (4,)), odd / "net.onnx")
    (odd / "p.vnnlib").write_text(vnnlib(4, 4, ["(assert (>= Y_0 1000000.0))"]))
    (odd / "instances.csv").write_text("net.onnx,p.vnnlib,60\n")
    out = tmp_path / "vnncomp.json"
    ref = tmp_path / "reference"  # other tools' answers: 'never' holds by majority, 'always' too (which we refute)
    ref.mkdir()
    (ref / "a.csv").write_text("mlp,./benchmarks/mlp/net.onnx,./benchmarks/mlp/never.vnnlib,0.1,holds,1.0\n"
                               "mlp,./benchmarks/mlp/net.onnx.gz,always.vnnlib,0.1,holds,1.0\n")
    (ref / "b.csv").write_text("mlp,net.onnx,never.vnnlib,0.1,holds,2.0\nmlp,net.onnx,always.vnnlib,0.1,timeout,2.0\n")
    (ref / "c.csv").write_text("mlp,net.onnx,never.vnnlib,0.1,violated,2.0\n")
    p = subprocess.run([sys.executable, str(REPO / "bench" / "vnncomp.py"), str(root), "--out", str(out),
                        "--reference", str(ref)], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    lines = {l.split()[0]: l for l in p.stdout.splitlines()[1:]}
    assert set(lines) == {"mlp", "odd"}
    d = {b["benchmark"]: b for b in json.loads(out.read_text())["benchmarks"]}
    assert (d["mlp"]["instances"], d["mlp"]["analysed"], d["mlp"]["unsat"], d["mlp"]["sat"]) == (2, 2, 1, 1)
    assert (d["odd"]["instances"], d["odd"]["analysed"], d["odd"]["error"]) == (1, 0, 1)
    assert list(d["odd"]["error_reasons"]) == ["unsupported ONNX op 'Erf'"]
    assert "unsupported ONNX op 'Erf'" in lines["odd"]
    assert np.isfinite(d["mlp"]["instances_s"])
    assert (d["mlp"]["reference"]["agree"], d["mlp"]["reference"]["disagree"]) == (1, 1)
    assert d["mlp"]["reference"]["disagreements"] == [{"onnx": "net.onnx", "vnnlib": "always.vnnlib", "ours": "sat",
                                                       "votes": {"unsat": 1}}]
    assert " 1/1 " in lines["mlp"]
    progress = [l.rsplit(" (", 1)[0] for l in p.stderr.splitlines()]  # one line per instance, as it ends
    assert progress == ["mlp [1/2] net.onnx never.vnnlib: unsat", "mlp [2/2] net.onnx always.vnnlib: sat",
                        "odd [1/1] net.onnx p.vnnlib: error"], p.stderr


def test_bench_refuses_a_folder_without_instances(tmp_path):
    p = subprocess.run([sys.executable, str(REPO / "bench" / "vnncomp.py"), str(tmp_path)], capture_output=True, text=True,
                       cwd=REPO)
    assert p.returncode == 1 and p.stderr.strip().startswith("error: ") and "instances.csv" in p.stderr


def test_reference_results_in_the_2024_layout(tmp_path):
    """``TOOL/2024_BENCHMARK/results.csv`` files (vnncomp2024_results) are read like 2021's ``*.csv``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_vnncomp", REPO / "bench" / "vnncomp.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for tool, result in (("alpha_beta_crown", "UNSAT"), ("neuralsat", "unsat"), ("pyrat", "sat")):
        d = tmp_path / tool / "2024_lsnc"
        d.mkdir(parents=True)
        (d / "results.csv").write_text(f"lsnc,vnncomp2024_benchmarks/benchmarks/lsnc/onnx/q.onnx,"
                                       f"vnncomp2024_benchmarks/benchmarks/lsnc/vnnlib/q_0.vnnlib,21.7,{result},33.9\n"
                                       f"lsnc,x/onnx/q.onnx,x/vnnlib/q_1.vnnlib,21.7,timeout,100.0\n")
    (tmp_path / "SCORING").mkdir()
    (tmp_path / "SCORING" / "results.csv").write_text("lsnc,q.onnx,q_0.vnnlib,0,sat,1\n")  # not a tool's
    assert len(bench.result_files(str(tmp_path))) == 3
    votes = bench.reference_verdicts(str(tmp_path))
    assert votes == {("lsnc", "onnx/q.onnx", "vnnlib/q_0.vnnlib"): {"unsat": 2, "sat": 1}}
    rows = [{"onnx": "onnx/q.onnx", "vnnlib": "vnnlib/q_0.vnnlib.gz", "verdict": "unsat"}]
    assert bench.compare(rows, "lsnc", votes) == {"agree": 1, "disagree": 0, "disagreements": []}


def test_cap_and_first_make_a_subset_with_the_competitions_limits_cut(tmp_path):
    """``--cap S --first N``: the first N lines, absolute paths, each timeout min(CSV's, S)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_vnncomp", REPO / "bench" / "vnncomp.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "instances.csv").write_text("onnx/a.onnx,vnnlib/p.vnnlib,116\n./onnx/a.onnx, vnnlib/q.vnnlib ,20.0\n"
                                          "onnx/a.onnx,vnnlib/r.vnnlib,300\n")
    out_dir = tmp_path / "tmp"
    out_dir.mkdir()
    assert bench.subset_csv(folder / "instances.csv", out_dir, None, None) == folder / "instances.csv"
    rows = (bench.subset_csv(folder / "instances.csv", out_dir, 30.0, 2)).read_text().splitlines()
    assert rows == [f"{folder / 'onnx/a.onnx'},{folder / 'vnnlib/p.vnnlib'},30",
                    f"{folder / './onnx/a.onnx'},{folder / 'vnnlib/q.vnnlib'},20"]
    rows = (bench.subset_csv(folder / "instances.csv", out_dir, None, 5)).read_text().splitlines()
    assert [r.split(",")[2] for r in rows] == ["116", "20.0", "300"]
    p = subprocess.run([sys.executable, str(REPO / "bench" / "vnncomp.py"), str(folder), "--cap", "0"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 2 and "--cap must be a positive number" in p.stderr


def test_optimize_is_passed_on_to_cf_run(tmp_path):
    """``--optimize N`` reaches cf-run (a parametric certifier optimised per instance: issue 25's 2021 counts);
    a negative count is refused in one line."""
    mlp = tmp_path / "benchmarks" / "mlp"
    mlp.mkdir(parents=True)
    ws, bs = random_mlp_weights([4, 8, 2], seed=7)
    onnx.save(mlp_model(ws, bs, activations="relu", input_shape=(4,)), mlp / "net.onnx")
    (mlp / "never.vnnlib").write_text(vnnlib(4, 2, ["(assert (>= Y_0 1000000.0))"]))
    (mlp / "instances.csv").write_text("net.onnx,never.vnnlib,60\n")
    out = tmp_path / "vnncomp.json"
    p = subprocess.run([sys.executable, str(REPO / "bench" / "vnncomp.py"), str(mlp), "--out", str(out),
                        "--certifier", "alpha_deeppoly", "--optimize", "3"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    assert d["optimize"] == 3 and d["certifier"] == "alpha_deeppoly"
    row = d["benchmarks"][0]
    assert (row["instances"], row["unsat"]) == (1, 1)
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import vnncomp as bench_vnncomp
    finally:
        sys.path.pop(0)
    args = argparse.Namespace(certifier="alpha_deeppoly", device="cpu", dtype="float64", split="auto", timeout=None,
                              optimize=3, bab="off")
    cmd = bench_vnncomp.cf_run_command(mlp / "instances.csv", out, args)
    assert cmd[cmd.index("--optimize") + 1] == "3" and cmd[cmd.index("--certifier") + 1] == "alpha_deeppoly"
    assert cmd[cmd.index("--bab") + 1] == "off"
    assert "--optimize" not in bench_vnncomp.cf_run_command(mlp / "instances.csv", out,
                                                            argparse.Namespace(**{**vars(args), "optimize": 0}))
    p = subprocess.run([sys.executable, str(REPO / "bench" / "vnncomp.py"), str(mlp), "--optimize", "-1"],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 2 and "--optimize must be at least 0" in p.stderr


def test_instances_are_told_apart_by_their_paths_within_the_benchmark(tmp_path):
    """safenlp has ``onnx/medical/perturbations_0.onnx`` and ``onnx/ruarobot/perturbations_0.onnx``, and
    properties of the same names in both folders: keyed by file names alone, the ruarobot votes (sat) were
    counted for the medical instance (unsat for every tool but one), and a run showed 4 "disagreements"
    that were none.  A results file whose paths name the folder otherwise is matched by the files' names
    where only one instance has them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_vnncomp", REPO / "bench" / "vnncomp.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    root = "vnncomp2024_benchmarks/benchmarks/safenlp/./"
    for tool, medical, ruarobot in (("a", "unsat", "sat"), ("b", "unsat", "sat"), ("c", "sat", "sat")):
        d = tmp_path / tool / "2024_safenlp"
        d.mkdir(parents=True)
        (d / "results.csv").write_text(
            f"safenlp,{root}onnx/medical/perturbations_0.onnx,{root}vnnlib/medical/hyperrectangle_1101.vnnlib,1,{medical},2\n"
            f"safenlp,{root}onnx/ruarobot/perturbations_0.onnx,{root}vnnlib/ruarobot/hyperrectangle_1101.vnnlib,1,{ruarobot},2\n"
            f"safenlp,elsewhere/onnx/x.onnx,elsewhere/vnnlib/y.vnnlib,1,unsat,2\n")
    votes = bench.reference_verdicts(str(tmp_path))
    assert votes[("safenlp", "onnx/medical/perturbations_0.onnx", "vnnlib/medical/hyperrectangle_1101.vnnlib")] == \
        {"unsat": 2, "sat": 1}
    rows = [{"onnx": "./onnx/medical/perturbations_0.onnx.gz", "vnnlib": "vnnlib/medical/hyperrectangle_1101.vnnlib.gz",
             "verdict": "unsat"},
            {"onnx": "/abs/safenlp/onnx/ruarobot/perturbations_0.onnx", "vnnlib": "./vnnlib/ruarobot/hyperrectangle_1101.vnnlib",
             "verdict": "sat"},
            {"onnx": "onnx/x.onnx", "vnnlib": "vnnlib/y.vnnlib", "verdict": "unsat"}]  # by its names: one instance
    assert bench.compare(rows, "safenlp", votes) == {"agree": 3, "disagree": 0, "disagreements": []}
    # names shared by two instances decide nothing on their own: no reference for a path matching neither
    assert bench.votes_for(votes, "safenlp", "other/perturbations_0.onnx", "other/hyperrectangle_1101.vnnlib") is None


def test_answers_the_organisers_withdrew_are_no_reference(tmp_path):
    """VNN-COMP 2021 withdrew RPM's mnistfc answers (a VNN-LIB parsing bug): its ``violated`` was the only
    answer of 14 mnistfc instances, which counted made them "officially sat".  Its answers elsewhere stay."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_vnncomp", REPO / "bench" / "vnncomp.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    (tmp_path / "RPM.csv").write_text("mnistfc,./b/mnistfc/n.onnx,./b/mnistfc/p1.vnnlib,0,violated,54\n"
                                      "mnistfc,./b/mnistfc/n.onnx,./b/mnistfc/p2.vnnlib,0,violated,54\n"
                                      "acasxu,./b/acasxu/a.onnx,./b/acasxu/p.vnnlib,0,violated,5\n")
    (tmp_path / "VeriNet.csv").write_text("mnistfc,./b/mnistfc/n.onnx,./b/mnistfc/p2.vnnlib,0,holds,3\n")
    assert bench.reference_verdicts(str(tmp_path)) == {("mnistfc", "n.onnx", "p2.vnnlib"): {"unsat": 1},
                                                       ("acasxu", "a.onnx", "p.vnnlib"): {"sat": 1}}
    rows = [{"onnx": "n.onnx", "vnnlib": "p2.vnnlib", "verdict": "unsat"},
            {"onnx": "n.onnx", "vnnlib": "p1.vnnlib", "verdict": "unsat"}]
    assert bench.compare(rows, "mnistfc", bench.reference_verdicts(str(tmp_path)))["agree"] == 1


def test_a_run_stopped_part_way_keeps_the_benchmarks_it_finished(tmp_path, monkeypatch):
    """The JSON is written after every benchmark: stopped in the second (a session's end, a kill), the first's
    rows are in the file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_vnncomp", REPO / "bench" / "vnncomp.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    folders = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "instances.csv").write_text("net.onnx,p.vnnlib,60\n")
        folders.append(str(tmp_path / name))
    done = {"benchmark": "first", "instances": 1, "analysed": 1, "unsat": 1, "sat": 0, "unknown": 0, "timeout": 0,
            "error": 0, "split": 0, "error_reasons": {}, "instances_s": 1.0, "rows": []}

    def run(folder, args):
        if folder.name == "second":
            raise KeyboardInterrupt
        return dict(done)

    monkeypatch.setattr(bench, "run_benchmark", run)
    out = tmp_path / "r.json"
    monkeypatch.setattr(sys, "argv", ["vnncomp.py", *folders, "--out", str(out)])
    try:
        bench.main()
    except KeyboardInterrupt:
        pass
    assert [b["benchmark"] for b in json.loads(out.read_text())["benchmarks"]] == ["first"]
