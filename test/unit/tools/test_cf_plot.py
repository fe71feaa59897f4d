"""``cf-plot``: precision against runtime per network from a benchmark JSON (bench/certify.py's shape).
A PNG is written for a small JSON (points, a DeepPoly_p sweep, a run that did not finish) and for the
shipped results; a bad JSON, a missing file, an unwritable output and a missing matplotlib are one
``error:`` line and exit status 1."""

from __future__ import annotations

import json
import sys

import pytest

from cfmlir.tools import cf_plot
from pathlib import Path

from cftest import REPO

PNG = b"\x89PNG\r\n\x1a\n"


def bench(tmp_path, runs, **meta) -> Path:
    p = tmp_path / "bench.json"
    p.write_text(json.dumps({"n": 100, "dtype": "float32", **meta, "runs": runs}))
    return p


def ok(cert, net, certified, seconds, mode="CF"):
    return {"status": "ok", "certifier": cert, "network": net, "mode": mode, "certified": certified, "correct": 98,
            "analysis_s": seconds, "peak_mib": 500.0, "eps": 0.004}


RUNS = ([ok("ibp", "mnist_relu_3_50", 71, 0.004), ok("deeppoly", "mnist_relu_3_50", 98, 0.03),
         ok("deepz", "mnist_relu_3_50", 98, 0.12), ok("ibp", "mnist_relu_6_100", 0, 0.005),
         ok("deeppoly", "mnist_relu_6_100", 97, 0.4), ok("deeppoly", "mnist_relu_6_100", 1, 9.0, mode="CF-S"),
         {"status": "timeout", "certifier": "deepz", "network": "mnist_relu_6_100", "mode": "CF", "eps": 0.004}]
        + [ok(f"deeppoly_{p}", "mnist_relu_6_100", 10 * p, 0.01 * (p + 1)) for p in range(4)])


def run_main(capsys, *args):
    rc = cf_plot.main([str(a) for a in args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG and len(data) > 20_000


@pytest.mark.parametrize("extra", [(), ("--percent", "--title", "a title"), ("--mode", "CF-S")])
def test_writes_a_png(tmp_path, capsys, extra):
    out = tmp_path / "fig.png"
    rc, _, err = run_main(capsys, bench(tmp_path, RUNS), "-o", out, *extra)
    assert rc == 0 and err == "", err
    assert_png(out)


def test_reads_the_runs_of_one_mode():
    runs, meta = cf_plot.read_runs(REPO / "bench" / "results" / "certify.json", "CF-R")
    assert meta["n"] == 100 and {r.network for r in runs} == {"mnist_relu_3_50", "mnist_relu_6_100"}
    assert any(r.status == "timeout" for r in runs) and all(r.seconds is not None for r in runs if r.status == "ok")


def test_shipped_results(tmp_path, capsys):
    out = tmp_path / "f32.png"
    rc, _, err = run_main(capsys, REPO / "bench" / "results" / "certify_float32.json", "-o", out)
    assert rc == 0, err
    assert_png(out)


@pytest.mark.parametrize("content,what", [
    ("{not json", "not JSON"),
    ('{"n": 3}', "not a benchmark JSON"),
    ('{"runs": [1]}', "run 0: not an object"),
    ('{"runs": [{"certifier": "ibp"}]}', 'run 0: no "network" name'),
    ('{"runs": [{"certifier": "ibp", "network": "n", "status": "ok", "certified": 3, "analysis_s": "fast"}]}',
     '"analysis_s" must be a number'),
    ('{"runs": [{"certifier": "ibp", "network": "n", "status": "timeout"}]}', "no finished run in mode CF"),
    ('{"runs": [{"certifier": "ibp", "network": "n", "mode": "CF-S", "certified": 1, "analysis_s": 1}]}',
     "modes in the file: CF-S"),
])
def test_bad_json_is_one_error_line(tmp_path, capsys, content, what):
    p = tmp_path / "bad.json"
    p.write_text(content)
    rc, _, err = run_main(capsys, p, "-o", tmp_path / "x.png")
    assert rc == 1 and len(err.strip().splitlines()) == 1 and err.startswith("error: ") and what in err, err
    assert not (tmp_path / "x.png").exists()


def test_other_errors(tmp_path, capsys, monkeypatch):
    good = bench(tmp_path, RUNS)
    for args, what in (([tmp_path / "missing.json", "-o", tmp_path / "x.png"], "cannot read"),
                       ([good, "-o", tmp_path / "no" / "dir" / "x.png"], "cannot write"),
                       ([good, "-o", tmp_path / "x.png", "--dpi", "0"], "--dpi must be positive")):
        rc, _, err = run_main(capsys, *args)
        assert rc == 1 and len(err.strip().splitlines()) == 1 and what in err, err
    with pytest.raises(SystemExit) as e:  # argparse: no -o
        cf_plot.main([str(good)])
    assert e.value.code == 1 and capsys.readouterr().err.startswith("error: cf-plot: ")
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # matplotlib not installed
    rc, _, err = run_main(capsys, good, "-o", tmp_path / "x.png")
    assert rc == 1 and "pip install 'cfmlir[plot]'" in err and len(err.strip().splitlines()) == 1
