"""``cf-run --dtype float32``: widened by default, so ``--check`` finds no bound beaten by rounding even at
``--check-tol 1e-9``; ``--widen off`` gives the raw float32 bounds, which the same check refutes
(exit 3); ``--widen on`` widens a float64 run too (issue 14, point 5)."""

from __future__ import annotations

import json

import pytest

from cfmlir.tools import cf_run
from cfruntime.default_data import default_data_path, default_network_path

NET, DATA = default_network_path(), default_data_path()


def run(capsys, tmp_path, *flags):
    out_json = tmp_path / "out.json"
    rc = cf_run.main(["--certifier", "deeppoly", "--net", str(NET), "--data", str(DATA), "--eps", "0.005", "--check",
                      "--check-tol", "1e-9", "--json", str(out_json), *flags])
    got = capsys.readouterr()
    return rc, got.out, got.err, json.loads(out_json.read_text())


def test_float32_is_widened_and_passes_the_check_at_1e_9(tmp_path, capsys):
    rc, out, err, d = run(capsys, tmp_path, "--dtype", "float32")
    assert rc == 0, err
    assert d["unsound"] is False and d["check"]["tol"] == 1e-9
    assert "float32 widened" in out


def test_raw_float32_is_refuted_by_the_check(tmp_path, capsys):
    rc, out, err, d = run(capsys, tmp_path, "--dtype", "float32", "--widen", "off")
    assert rc == 3 and d["unsound"] is True
    assert any(l.startswith("unsound: layer") for l in err.splitlines())
    assert "widened" not in out


@pytest.mark.parametrize("widen", ["auto", "on"])
def test_float64_passes_widened_or_not(tmp_path, capsys, widen):
    rc, out, err, d = run(capsys, tmp_path, "--widen", widen)
    assert rc == 0 and d["unsound"] is False
    assert ("float64 widened" in out) == (widen == "on")


def test_bad_widen_value_is_one_line_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cf_run.main(["--widen", "maybe"])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--widen" in err[0]
