"""``bench/bab_full_table.py`` joins ``bench/bab_compare*.json`` files into issue 26's full-limit table: per CSV
line and tool the latest CPU row at the line's own limit (ours in its default configuration), the decided
and one-sided counts, and the ``--only`` lists of the lines still without a row."""

from __future__ import annotations

import argparse
import json
import sys

from cftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import bab_compare  # noqa: E402 - the bench script
import bab_full_table  # noqa: E402 - the bench script

CPU = {"machine": {"cpus": 2, "device": "cpu", "gpu": None}, "ours_args": [], "certifier": "auto"}


def _benchmark(root, name, lines):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / f"{name}_instances.csv").write_text("".join(f"{o},{v},{t}\n" for o, v, t in lines))
    return [[o, v, str(t)] for o, v, t in lines]


def _results(folder, name, rows, benchmark="b", **report):
    """A results file of ``bab_compare.py``: ``rows`` are ``(onnx, vnnlib, timeout_s, {tool: verdict}, official)``."""
    folder.mkdir(exist_ok=True)
    out = [{"onnx": o, "vnnlib": v, "timeout_s": float(t), "official": off,
            **{tool: {"verdict": verdict, "wall_s": 2.0, "cpu_s": 2.0} for tool, verdict in tools.items()}}
           for o, v, t, tools, off in rows]
    (folder / name).write_text(json.dumps({**report, "benchmarks": {benchmark: {"rows": out, "complete": True}}}))


def test_the_latest_cpu_row_at_the_lines_own_limit_counts(tmp_path, monkeypatch):
    lines = _benchmark(tmp_path / "bm", "b", [("n1.onnx", "p1.vnnlib", 100), ("nets/n1.onnx", "s/p2.vnnlib", 100),
                                              ("n2.onnx", "p1.vnnlib", 300)])
    res = tmp_path / "results"
    # no date, no device, no ours_args (an old file): first in order, still CPU and ours' default configuration
    _results(res, "bab_compare_old.json", [("n1.onnx", "p1.vnnlib", 100, {"ours": "unsat", "abcrown": "unsat"}, None),
                                           ("n1.onnx", "p2.vnnlib", 100, {"abcrown": "sat"}, None)],
             machine={"cpus": 2}, certifier="auto")
    _results(res, "bab_compare_z_2026-12-01.json", [("n1.onnx", "p1.vnnlib", 100, {"ours": "sat"}, None),
                                                    ("nets/n1.onnx", "s/p2.vnnlib", 100, {"ours": "unknown"}, None),
                                                    ("nets/n1.onnx", "s/p2.vnnlib", 100, {"ours": "unsat"}, None),
                                                    ("n2.onnx", "p1.vnnlib", 300, {"ours": "unknown"}, None)], **CPU)
    # the same date, a name that sorts first, but added to git later: it wins over z
    _results(res, "bab_compare_a_2026-12-01.json", [("n2.onnx", "p1.vnnlib", 300, {"ours": "sat"}, None)], **CPU)
    monkeypatch.setattr(bab_full_table, "_added", lambda p: 200 if "_a_" in p.name else 100)
    # later files that do not count: a cap below the line's limit, other arguments for ours, a GPU, deeppoly
    _results(res, "bab_compare_cap_2026-12-05.json", [("n1.onnx", "p1.vnnlib", 60, {"ours": "timeout",
                                                                                     "abcrown": "timeout"}, None)], **CPU)
    _results(res, "bab_compare_args_2026-12-05.json", [("n1.onnx", "p1.vnnlib", 100, {"ours": "timeout",
                                                                                       "abcrown": "unknown"}, None)],
             **{**CPU, "ours_args": ["--bab-beta", "off"]})
    _results(res, "bab_compare_cuda_2026-12-06.json", [("n2.onnx", "p1.vnnlib", 300, {"ours": "timeout",
                                                                                       "abcrown": "timeout"}, None)],
             **{**CPU, "machine": {"device": "cuda", "gpu": "NVIDIA H200"}})
    _results(res, "bab_compare_dp_2026-12-06.json", [("n2.onnx", "p1.vnnlib", 300, {"ours": "timeout"}, None)],
             **{**CPU, "certifier": "deeppoly"})
    _results(res, "bab_compare_other_2026-12-07.json", [("n1.onnx", "p1.vnnlib", 100, {"ours": "timeout"}, None)],
             benchmark="other", **CPU)

    files = bab_full_table.result_files(res)
    assert files[0].name == "bab_compare_old.json"
    assert [f.name for f in files[1:3]] == ["bab_compare_z_2026-12-01.json", "bab_compare_a_2026-12-01.json"]
    chosen = bab_full_table.latest_rows(files, "b", lines)
    got = {t: {k: (r["verdict"], r["file"]) for k, r in rows.items()} for t, rows in chosen.items()}
    assert got == {
        "ours": {("n1.onnx", "p1.vnnlib"): ("sat", "bab_compare_z_2026-12-01.json"),
                 ("n1.onnx", "p2.vnnlib"): ("unsat", "bab_compare_z_2026-12-01.json"),
                 ("n2.onnx", "p1.vnnlib"): ("sat", "bab_compare_a_2026-12-01.json")},
        "abcrown": {("n1.onnx", "p1.vnnlib"): ("unknown", "bab_compare_args_2026-12-05.json"),
                    ("n1.onnx", "p2.vnnlib"): ("sat", "bab_compare_old.json")}}


def test_decided_wrong_and_one_sided_counts(tmp_path, capsys):
    root = tmp_path / "bm"
    _benchmark(root, "b", [("n.onnx", f"p{i}.vnnlib", 60) for i in range(5)])
    _benchmark(root, "c", [("n.onnx", "q.vnnlib", 60)])
    res = tmp_path / "results"
    _results(res, "bab_compare_2026-12-01.json", [
        ("n.onnx", "p0.vnnlib", 60, {"ours": "unsat", "abcrown": "unsat"}, "unsat"),
        ("n.onnx", "p1.vnnlib", 60, {"ours": "sat", "abcrown": "timeout"}, "unsat"),  # ours wrong, and alone
        ("n.onnx", "p2.vnnlib", 60, {"ours": "unknown", "abcrown": "sat"}, None),  # abcrown alone
        ("n.onnx", "p3.vnnlib", 60, {"ours": "unsat"}, None)], **CPU)  # abcrown has no row: not one-sided
    _results(res, "bab_compare_c_2026-12-01.json", [("n.onnx", "q.vnnlib", 60, {"ours": "unsat"}, None)],
             benchmark="c", **CPU)
    out = tmp_path / "table.json"
    assert bab_full_table.main([str(root), "--results", str(res), "--benchmarks", "b,c", "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    b = d["benchmarks"]["b"]
    assert b["lines"] == 5
    assert {t: (s["instances"], s["decided"], s["unsat"], s["sat"], s["wrong"]) for t, s in b["summary"].items()} == {
        "ours": (4, 3, 2, 1, 1), "abcrown": (3, 2, 1, 1, 0)}
    assert b["only"] == {"ours": ["n.onnx:p1.vnnlib"], "abcrown": ["n.onnx:p2.vnnlib"]}
    assert b["both"] == {"lines": 3, "ours": 2, "abcrown": 2}
    assert d["benchmarks"]["c"]["summary"]["ours"]["wrong"] is None  # no official answers: blank
    assert d["bar"]["at_least_as_many"] == [] and not d["bar"]["holds_on_covered_part"]  # b: 2 = 2 on 3 of 5 lines
    assert d["bar"]["not_fully_covered"] == ["b", "c"]
    text = capsys.readouterr().out
    assert "  ours only (1): n.onnx:p1.vnnlib" in text and "  abcrown only (1): n.onnx:p2.vnnlib" in text
    assert "holds on the covered part: no (not fully covered: b, c)" in text


def test_missing_prints_the_only_lists_bab_compare_takes(tmp_path, capsys):
    root = tmp_path / "bm"
    lines = _benchmark(root, "b", [("nets/n1.onnx", "specs/p1.vnnlib", 120), ("nets/n1.onnx", "specs/p2.vnnlib", 300),
                                   ("nets/n2.onnx", "specs/p1.vnnlib", 300)])
    res = tmp_path / "results"
    _results(res, "bab_compare_2026-12-01.json", [
        ("nets/n1.onnx", "specs/p1.vnnlib", 120, {"ours": "unsat", "abcrown": "unsat"}, None),
        ("nets/n1.onnx", "specs/p2.vnnlib", 60, {"ours": "unsat", "abcrown": "unsat"}, None),  # capped: missing
        ("nets/n2.onnx", "specs/p1.vnnlib", 300, {"abcrown": "timeout"}, None)], **CPU)
    assert bab_full_table.main([str(root), "--results", str(res), "--benchmarks", "b", "--missing"]) == 0
    text = capsys.readouterr().out
    listed = {line.split()[1]: line.split("--only ")[1] for line in text.splitlines() if "--only " in line}
    assert listed == {"ours": "n1.onnx:p2.vnnlib,n2.onnx:p1.vnnlib", "abcrown": "n1.onnx:p2.vnnlib"}
    picked = bab_compare.instance_lines(root / "b", argparse.Namespace(skip=0, every=1, first=None, only=listed["ours"]))
    assert picked == lines[1:]
