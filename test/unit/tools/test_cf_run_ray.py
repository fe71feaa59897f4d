"""``cf-run --ray`` (cfmlir.distributed): on a local Ray cluster of 2 workers, dataset mode gives the
single-process run's certified flags, margins and layer bounds, and ``--instances`` its verdicts; without
Ray, ``--ray`` is one error line.  The Ray runs happen in a child process per test (one local cluster
each), so that nothing Ray does to its driver process (a crash, signal handlers, threads) can reach the
test session (skipped only when Ray is not installed; CI installs the extra ``cfmlir[ray]``)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cftest import REPO

from cfmlir.tools.cf_run import main as cf_run_main
from cfruntime.default_data import default_data_path, default_network_path

N_IMAGES = 100


#: the child: a local Ray cluster of 2 CPUs (as ``cf-run --ray`` starts one), then ``cf-run`` on each
#: argument list of argv[1] (JSON) in it; prints the exit statuses as JSON on its last line
_RAY_CHILD = """
import json, sys
import ray
from cfmlir import distributed
from cfmlir.tools.cf_run import main
assert distributed.connect("local") is True
assert ray.cluster_resources().get("CPU") == 2, ray.cluster_resources()
rcs = [main(args) for args in json.loads(sys.argv[1])]
ray.shutdown()
print(json.dumps(rcs))
"""


@pytest.fixture
def on_ray():
    """``on_ray(runs)``: the exit statuses of ``cf-run ARGS --ray`` for each ``ARGS`` of ``runs``, run on a local
    Ray cluster of 2 CPUs in a child process."""
    pytest.importorskip("ray")

    def run(runs: list[list]) -> list[int]:
        argv = json.dumps([[*map(str, args), "--ray"] for args in runs])
        p = subprocess.run([sys.executable, "-c", _RAY_CHILD, argv], capture_output=True, text=True, cwd=REPO,
                           timeout=900, env={**os.environ, "CFMLIR_RAY_CPUS": "2"})
        assert p.returncode == 0, f"the Ray child failed (status {p.returncode}):\n{p.stderr[-3000:]}"
        return json.loads(p.stdout.strip().splitlines()[-1])

    return run


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """100 MNIST rows: the 10 shipped images, each with 10 deterministic perturbations of its pixels."""
    rows = [list(map(int, line.split(","))) for line in Path(default_data_path()).read_text().splitlines() if line]
    rng = np.random.default_rng(7)
    out = []
    for r in rows:
        for _ in range(N_IMAGES // len(rows)):
            px = np.clip(np.array(r[1:]) + rng.integers(-20, 21, len(r) - 1), 0, 255)
            out.append(",".join(map(str, [r[0], *px.tolist()])))
    p = tmp_path_factory.mktemp("ray_data") / "mnist_100.csv"
    p.write_text("\n".join(out) + "\n")
    return p


def _args(tmp_path, name, *args) -> list[str]:
    return ["--quiet", "--json", str(tmp_path / f"{name}.json"), *map(str, args)]


def _json(tmp_path, name, *args) -> tuple[int, dict]:
    """``cf-run ARGS`` here: its status and JSON."""
    rc = cf_run_main(_args(tmp_path, name, *args))
    return rc, json.loads((tmp_path / f"{name}.json").read_text())


def _same_analysis(here: dict, there: dict, tol: float = 1e-6) -> None:
    assert there["certified"] == here["certified"] and there["correct"] == here["correct"]
    assert there["labels"] == here["labels"] and there["n"] == here["n"]
    for key in ("margin_lb", "margin_ub"):
        a, b = np.array(here[key]), np.array(there[key])
        assert a.shape == b.shape
        assert np.max(np.abs(a - b)) <= tol, key
    assert there["batch_size"] == here["batch_size"]
    if "layer_bounds" in here:
        assert sorted(there["layer_bounds"]) == sorted(here["layer_bounds"])
        for k, lb in here["layer_bounds"].items():
            for side in ("lower", "upper"):
                assert np.max(np.abs(np.array(lb[side]) - np.array(there["layer_bounds"][k][side]))) <= tol


def test_dataset_on_ray_equals_one_process(on_ray, images, tmp_path):
    common = ["--net", default_network_path(), "--data", images, "--eps", 0.01, "--batch-size", 10, "--layer-bounds"]
    rc, here = _json(tmp_path, "here", *common)
    assert rc == 0
    assert on_ray([_args(tmp_path, "there", *common)]) == [0]
    there = json.loads((tmp_path / "there.json").read_text())
    assert here["n"] == N_IMAGES
    assert 0 < sum(here["certified"]) < N_IMAGES  # both verdicts occur: the flags are a real comparison
    _same_analysis(here, there)


def test_dataset_on_ray_interpreter_and_check(on_ray, tmp_path):
    """The interpreter (its program built on the workers from the source text) and --check (run here on
    the layer bounds the tasks send back) give the single-process results."""
    common = ["--data", default_data_path(), "--net", default_network_path(), "--eps", 0.005, "--n", 4,
              "--batch-size", 2]
    extras = (["--engine", "interpreter"], ["--check"])
    assert on_ray([_args(tmp_path, f"there{i}", *common, *extra) for i, extra in enumerate(extras)]) == [0, 0]
    for i, extra in enumerate(extras):
        rc, here = _json(tmp_path, f"here{i}", *common, *extra)
        assert rc == 0
        there = json.loads((tmp_path / f"there{i}.json").read_text())
        _same_analysis(here, there, tol=1e-9)
        if "--check" in extra:
            assert there["unsound"] is False and there["check"]["batches"] == here["check"]["batches"] == 2


def test_instances_on_ray_give_the_same_verdicts(on_ray, bench, tmp_path):
    csv_path = bench["dir"] / "instances.csv"
    verdicts, status = {}, {}

    def args(mode):
        return ["--quiet", "--certifier", "deeppoly", "--instances", str(csv_path), "--results",
                str(tmp_path / f"{mode}.csv")]

    status["here"] = cf_run_main(args("here"))
    [status["there"]] = on_ray([args("there")])
    for mode in ("here", "there"):
        verdicts[mode] = [r[:3] for r in csv.reader((tmp_path / f"{mode}.csv").read_text().splitlines())]
    assert verdicts["there"] == verdicts["here"]
    assert status["there"] == status["here"] == 1  # at least the missing file is an error; the run went on
    # the folder has every kind of verdict: the comparison means something
    assert {"unsat", "sat", "timeout", "error"} <= {v[2] for v in verdicts["here"]}
    # the result files too (the sat one with its counterexample)
    files = sorted(f.name for f in (tmp_path / "here_results").iterdir())
    assert sorted(f.name for f in (tmp_path / "there_results").iterdir()) == files
    for name in files:
        assert (tmp_path / "there_results" / name).read_text() == (tmp_path / "here_results" / name).read_text(), name


def _cf_run_without_ray(*args):
    """cf-run in a fresh interpreter in which ``import ray`` fails."""
    code = "import sys; sys.modules['ray'] = None; from cfmlir.tools.cf_run import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, cwd=REPO,
                          timeout=300)


def test_ray_not_installed_is_one_line():
    for args in (["--ray"], ["--ray", "head:6379", "--instances", "x.csv"]):
        p = _cf_run_without_ray(*args)
        assert p.returncode == 1, p.stderr
        assert p.stderr.strip() == "error: --ray needs Ray, which is not installed: pip install 'cfmlir[ray]'"
        assert p.stdout == ""


def test_ray_with_one_vnnlib_is_a_usage_error(tmp_path):
    p = _cf_run_without_ray("--ray", "--vnnlib", tmp_path / "p.vnnlib")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip().startswith("error: --ray applies to dataset mode (--data) and --instances")


def test_cf_run_without_ray_does_not_import_it():
    code = ("import sys; from cfmlir.tools.cf_run import main; rc = main(['--quiet', '--n', '2']); "
            "import cfmlir.api; assert 'ray' not in sys.modules, 'ray imported'; sys.exit(rc)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stderr


def test_unreachable_cluster_is_one_line():
    pytest.importorskip("ray")
    p = subprocess.run([sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())",
                        "--quiet", "--n", "2", "--ray", "127.0.0.1:1"], capture_output=True, text=True, cwd=REPO,
                       timeout=300)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach the Ray cluster at 127.0.0.1:1 "), p.stderr


class _FakeRay:
    """``cfmlir.distributed`` without Ray: tasks are their arguments, results come at once, cancels are
    recorded."""

    def __init__(self):
        self.cancelled = []

    def session(self, address):
        import contextlib
        return contextlib.nullcontext()

    def submit(self, fn, args, cwd, onnx, vnnlib, limit):
        return onnx

    def result(self, ref):
        from cfmlir.tools.instances import Outcome
        return Outcome("unsat", 0.0), 0.0

    def cancel(self, refs):
        self.cancelled.append(list(refs))


def test_instances_on_ray_cancel_only_the_tasks_never_taken(monkeypatch):
    """A finished run cancels nothing, and a run stopped early cancels only the tasks whose results it never
    took: cancelling a task Ray is completing aborts the driver (the Ray 2.60 race that failed CI once)."""
    from argparse import Namespace

    from cfmlir import distributed
    from cfmlir.tools import instances as inst_mod

    fake = _FakeRay()
    for name in ("session", "submit", "result", "cancel"):
        monkeypatch.setattr(distributed, name, getattr(fake, name))
    rows = [inst_mod.Instance(i, f"n{i}", f"p{i}", Path(f"n{i}.onnx"), Path(f"p{i}.vnnlib"), 10.0,
                              missing="error: gone" if i == 2 else None) for i in range(1, 5)]
    args = Namespace(ray="local", timeout=None)
    verdicts = [o.verdict for _, _, o in inst_mod._outcomes_on_ray(args, rows, inst_mod._Startup())]
    assert verdicts == ["unsat", "error", "unsat", "unsat"]
    assert fake.cancelled == []
    run = inst_mod._outcomes_on_ray(args, rows, inst_mod._Startup())
    next(run)
    run.close()  # the consumer stops after the first instance
    assert fake.cancelled == [["n3.onnx", "n4.onnx"]]
