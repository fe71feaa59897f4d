"""cf-run --optimize N [--lr LR] (issue 25): optimised margins are at least the non-optimised ones and
the JSON says how they were made; misuse is one error line with status 1."""

from __future__ import annotations

import json

import pytest

from cfmlir.tools import cf_run


def run(capsys, *args):
    try:
        rc = cf_run.main([str(a) for a in args])
    except SystemExit as exc:  # a usage error (argparse)
        rc = exc.code
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_optimize_tightens_and_is_recorded(tmp_path, tiny_net, csv, capsys):
    plain, opt = tmp_path / "plain.json", tmp_path / "opt.json"
    rc, out, err = run(capsys, "--certifier", "alpha_deeppoly", "--net", tiny_net, "--data", csv, "--eps", "0.02",
                       "--json", plain)
    assert rc == 0, err
    rc, out, err = run(capsys, "--certifier", "alpha_deeppoly", "--net", tiny_net, "--data", csv, "--eps", "0.02",
                       "--json", opt, "--optimize", "5", "--lr", "0.3")
    assert rc == 0, err
    assert "optimised (5 iterations)" in out
    a, b = json.loads(plain.read_text()), json.loads(opt.read_text())
    assert b["optimize"] == {"iterations": 5, "lr": 0.3} and "optimize" not in a
    for la, lb_ in zip(a["margin_lb"], b["margin_lb"]):
        assert all(y >= x - 1e-9 for x, y in zip(la, lb_))


@pytest.mark.parametrize("args, message", [
    (("--certifier", "deeppoly", "--optimize", "3"), "certifier 'deeppoly' has no parameters to optimise"),
    (("--certifier", "alpha_deeppoly", "--lr", "0.1"), "--lr needs --optimize N"),
    (("--certifier", "alpha_deeppoly", "--optimize", "3", "--engine", "interpreter"), "--optimize runs the compiled engine, not the interpreter"),
    (("--certifier", "alpha_deeppoly", "--optimize", "0"), "--optimize"),
])
def test_misuse_is_one_error_line(tiny_net, csv, args, message, capsys):
    rc, out, err = run(capsys, *args, "--net", tiny_net, "--data", csv, "--eps", "0.02", "--mean", "0", "--std", "1")
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], err
