"""Every bench script certifies through the public API (issue 15, point 2): no private batching loop,
engine branching or ``certified`` predicate in ``bench/``.

* statically: no bench script -- nor a Python source string inside one, such as ``bench/certify.py``'s
  child program -- imports or calls the engines below :mod:`cfmlir.api` (``run_certifier``,
  ``CompiledEngine``, ``InterpreterEngine``, the interpreter's ``analyze``), the non-API problem loader
  ``load_paper_problem``, or a private verdict (``one_hot`` of the labels, ``RobustnessProperty.verified``);
  the scripts that certify call ``cfmlir.certify`` or ``cfmlir.engine_for``;
* by running each converted script's smallest mode (needs ``../shared``): its verdicts are those of
  ``cfmlir.certify`` on the same problem.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cftest import REPO

BENCH = REPO / "bench"
SHARED = REPO.parent / "shared"
HAVE_SHARED = (SHARED / "nets" / "MANIFEST.json").is_file()

#: names below the public API: the engines, the problem loader that bypasses it, private verdicts
BELOW_API = {"run_certifier", "CompiledEngine", "InterpreterEngine", "analyze", "load_paper_problem", "one_hot",
             "verified"}

#: (script, function) -> names it may use below the API, with the reason in a comment (none today:
#: peer_compare's eager operation count uses ``cfmlir.engine_for(..., graph=False)``).
ALLOWED: dict[tuple[str, str], set[str]] = {}

#: the scripts that certify, and must do it through cfmlir.certify / cfmlir.engine_for
CERTIFYING = ("certify.py", "device_parity.py", "float32_widening.py", "peer_compare.py", "profile_ops.py")


def _embedded_programs(tree: ast.AST):
    """Python programs inside string constants (a child process's ``-c`` source)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "import " in node.value:
            try:
                sub = ast.parse(node.value)
            except SyntaxError:
                continue
            if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(sub)):
                yield sub


def _uses(tree: ast.AST, scope: str = ""):
    """``(function qualname, name)`` of every imported or called name (``f()`` and ``x.f()``)."""
    for node in ast.iter_child_nodes(tree):
        inner = scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{scope}.{node.name}" if scope else node.name
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                yield scope, alias.name
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name is not None:
                yield scope, name
        yield from _uses(node, inner)


def below_api_uses(path: Path) -> list[str]:
    """``"file:function: name"`` of each use of a name in :data:`BELOW_API` not in :data:`ALLOWED`."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for t in [tree, *_embedded_programs(tree)]:
        for scope, name in _uses(t):
            if name in BELOW_API and name not in ALLOWED.get((path.name, scope), set()):
                found.append(f"{path.name}:{scope or '<module>'}: {name}")
    return found


def test_the_check_sees_a_private_batching_loop(tmp_path):
    """What the old ``bench/certify.py`` child did: its own loop over run_certifier and its own verdict."""
    script = tmp_path / "old.py"
    script.write_text('CHILD = r"""\nimport torch\nfrom cfruntime.flow.engine import run_certifier\n'
                      'res = run_certifier(cert, mnet, lb, ub)\n'
                      'own = torch.nn.functional.one_hot(labels, 10).bool()\n"""\n'
                      "def analyse(cert, mnet, lb, ub):\n"
                      "    from cfmlir.engines import CompiledEngine\n"
                      "    return CompiledEngine(cert).bounds(mnet, lb, ub)\n")
    assert sorted(below_api_uses(script)) == ["old.py:<module>: one_hot", "old.py:<module>: run_certifier",
                                              "old.py:<module>: run_certifier", "old.py:analyse: CompiledEngine",
                                              "old.py:analyse: CompiledEngine"]


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_no_bench_script_certifies_below_the_api(script):
    assert below_api_uses(BENCH / script) == []


@pytest.mark.parametrize("script", CERTIFYING)
def test_certifying_scripts_call_the_api(script):
    calls = {name for _, name in _uses(ast.parse((BENCH / script).read_text()))}
    tree = ast.parse((BENCH / script).read_text())
    calls |= {name for sub in _embedded_programs(tree) for _, name in _uses(sub)}
    assert calls & {"certify", "engine_for"}, f"{script} neither calls cfmlir.certify nor cfmlir.engine_for"


# --- the scripts run ----------------------------------------------------------------------------------

needs_shared = pytest.mark.skipif(not HAVE_SHARED, reason="../shared (networks and data) not available")


def _run(script: str, *args: str, timeout: float = 120) -> str:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    p = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=timeout,
                       cwd=REPO, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def reference():
    """``cfmlir.certify`` of ibp on mnist_relu_3_50's first 3 images at the paper's epsilon (float64)."""
    import cfmlir
    from cfruntime.properties.paper_eps import PAPER_EPSILON

    net = cfmlir.load_network(SHARED / "nets" / "mnist_relu_3_50.onnx", manifest=SHARED / "nets" / "MANIFEST.json")
    prop = cfmlir.robustness_property(net, SHARED / "data" / "mnist_test.csv", PAPER_EPSILON["mnist_relu_3_50"], n=3)
    return cfmlir.certify(cfmlir.compile("ibp"), net, prop, batch_size=2)


@needs_shared
def test_certify_script(tmp_path, reference):
    out = tmp_path / "certify.json"
    _run("certify.py", "--certifiers", "ibp", "--nets", "mnist_relu_3_50", "--modes", "CF", "--n", "3", "--batch", "2",
         "--no-compile-times", "--out", str(out))
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] == "ok", run
    assert (run["certified"], run["correct"], run["batch"]) == (int(reference.certified.sum()),
                                                                int(reference.correct.sum()), 2)


@needs_shared
def test_device_parity_script_on_the_cpu(tmp_path, reference):
    out = tmp_path / "parity.json"
    _run("device_parity.py", "--device", "cpu", "--certifiers", "ibp", "--nets", "mnist_relu_3_50", "--n", "3",
         "--repeat", "1", "--out", str(out))
    (row,) = json.loads(out.read_text())["runs"]
    assert row["verdict"] == "ok" and row["rel_diff_f64"] == 0.0
    assert row["certified_f64"] == int(reference.certified.sum()) and row["correct"] == int(reference.correct.sum())
    assert row["certified_f32"] <= row["certified_f64"]  # widened float32 is sound, so never more


@needs_shared
def test_float32_widening_script(tmp_path, reference):
    out = tmp_path / "widening.json"
    _run("float32_widening.py", "--n", "3", "--nets", "mnist_relu_3_50", "--certifiers", "ibp", "--repeat", "1",
         "--out", str(out))
    (row,) = json.loads(out.read_text())["rows"]
    assert row["certified_float64"] == int(reference.certified.sum())
    assert row["violations_widened_float32"] == 0 and row["ops_widened_float32"] > row["ops_raw_float32"] > 0
    assert row["margin_width_ratio_median"] >= 1.0  # the widening only widens


@needs_shared
def test_profile_ops_script():
    text = _run("profile_ops.py", "--certifier", "ibp", "--net", "mnist_relu_3_50", "--n", "3")
    lines = text.splitlines()
    assert any(line.startswith("ibp on mnist_relu_3_50, 3 images, float64: ") for line in lines)
    table = lines[lines.index(next(line for line in lines if line.split()[:2] == ["op", "calls"])) + 1:]
    assert table and all(int(line.split()[1]) > 0 for line in table)  # every op listed was called


@needs_shared
@pytest.mark.parametrize("argv", [["profile_ops.py", "--net", "no_such_net", "--n", "1"],
                                  ["device_parity.py", "--device", "cpu", "--nets", "no_such_net", "--n", "1"],
                                  ["float32_widening.py", "--nets", "no_such_net", "--n", "1"]])
def test_an_unknown_network_is_one_error_line(argv, tmp_path):
    p = subprocess.run([sys.executable, str(BENCH / argv[0]), *argv[1:], *(["--out", str(tmp_path / "o.json")]
                                                                       if argv[0] != "profile_ops.py" else [])],
                       capture_output=True, text=True, timeout=120, cwd=REPO)
    assert p.returncode == 1 and p.stderr.strip().splitlines() == [
        "error: no shared network 'no_such_net' with a paper epsilon (is ../shared there?)"]


@needs_shared
def test_certify_script_unknown_network_is_one_error_line(tmp_path):
    p = subprocess.run([sys.executable, str(BENCH / "certify.py"), "--nets", "no_such_net", "--no-compile-times",
                        "--out", str(tmp_path / "o.json")], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert p.stderr.startswith("error: no paper epsilon for network no_such_net (known: ")


@needs_shared
def test_an_unknown_certifier_is_one_error_line():
    p = subprocess.run([sys.executable, str(BENCH / "profile_ops.py"), "--certifier", "no_such", "--net",
                        "mnist_relu_3_50", "--n", "1"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert p.stderr.startswith("error: unknown certifier 'no_such'")


@needs_shared
def test_peer_compare_script_runs_or_says_why_not(tmp_path):
    """With auto_LiRPA set up (``../shared/peers``) one row is compared; without, one ``skipped:`` line."""
    out = tmp_path / "peer.json"
    text = _run("peer_compare.py", "--rows", "mnist_6x100_b1", "--certifiers", "ibp", "--n", "2", "--repeat", "1",
                "--out", str(out), timeout=300)
    if text.startswith("skipped: "):
        assert not out.exists()
        return
    (run,) = json.loads(out.read_text())["runs"]
    assert run["status"] == "ok" and run["certified_ours"] <= run["correct"], run
