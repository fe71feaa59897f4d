"""``cf-opt``: frontends, flags, and one-line errors without tracebacks (run in-process)."""

from __future__ import annotations

import io
import sys

import pytest

from cfmlir.tools import cf_opt


def run(argv, capsys, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = cf_opt.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cf_file(tmp_path, capsys):
    src = tmp_path / "ok.cf"
    src.write_text("def Shape as (Float l){[curr[l] <= curr]};\nfunc f(Float x) = x * 2.0;\n")
    code, out, err = run([str(src)], capsys)
    assert code == 0 and err == ""
    assert "cf.func @f(%x: !cf.float) -> !cf.float {" in out


def test_certifier_flag_and_output_file(tmp_path, capsys):
    dst = tmp_path / "out.mlir"
    code, out, err = run(["--certifier", "deeppoly_5", "-o", str(dst)], capsys)
    assert code == 0 and out == "" and err == ""
    text = dst.read_text()
    assert "cf.transformer @deeppoly_5 {" in text
    code, out, err = run([str(dst)], capsys)
    assert code == 0 and out == text


def test_stdin(capsys, monkeypatch):
    ir = "builtin.module {\n  cf.func @f() -> !cf.int {\n    %0 = cf.const 1 : !cf.int\n    cf.yield %0 : !cf.int\n  }\n}\n"
    code, out, err = run(["-"], capsys, stdin=ir, monkeypatch=monkeypatch)
    assert code == 0 and out.rstrip("\n") == ir.rstrip("\n")


@pytest.mark.parametrize(
    "text, suffix, expected",
    [
        ("def Shape as (Float l){[curr[l] <= curr]};\nfunc f(Float x) = y;\n", ".cf", ":2:19: unknown name 'y'"),
        ("def Shape as (Float l){[curr[l] <= curr]}\n", ".cf", ":2:1: expected ';', found end of file"),
        ("builtin.module {\n  %0 = cf.const true : !cf.int\n}\n", ".mlir", ":2:3: 'cf.const' op a Bool literal must have type !cf.bool, got !cf.int"),
        ("builtin.module {\n  cf.bogus\n}\n", ".mlir", ": Operation cf.bogus is not registered"),
    ],
)
def test_errors_are_one_line(tmp_path, capsys, text, suffix, expected):
    src = tmp_path / f"bad{suffix}"
    src.write_text(text)
    code, out, err = run([str(src)], capsys)
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: " + str(src) + ":")
    assert expected in lines[0]
    assert "Traceback" not in err


def test_usage_errors(capsys):
    code, _, err = run(["--certifier", "nope"], capsys)
    assert code == 1 and err.startswith("error: unknown certifier 'nope'") and len(err.splitlines()) == 1
    code, _, err = run(["/does/not/exist.cf"], capsys)
    assert code == 1 and err.strip() == "error: /does/not/exist.cf: cannot open input file"
    code, _, err = run(["--certifier", "ibp", "-p", "no-such-pass"], capsys)
    assert code == 1 and "unknown pass 'no-such-pass'" in err and len(err.splitlines()) == 1
    assert "internal error" not in err


def test_pass_flags_append_to_the_pipeline(capsys, monkeypatch):
    from dataclasses import dataclass

    from xdsl.passes import ModulePass

    seen = []

    @dataclass(frozen=True)
    class Marker(ModulePass):
        name = "shape-analysis"

        def apply(self, ctx, op):
            seen.append(op)

    monkeypatch.setitem(cf_opt.PASSES, "shape-analysis", lambda: Marker)
    code, out, err = run(["--certifier", "ibp", "--shape-analysis"], capsys)
    assert code == 0, err
    assert len(seen) == 1
    code, out, err = run(["--certifier", "ibp", "-p", "shape-analysis"], capsys)
    assert code == 0 and len(seen) == 2


def test_only_our_dialects_are_registered():
    main = cf_opt.CfOptMain(args=["--certifier", "ibp"])
    names = set(main.ctx.registered_dialect_names)
    assert {"builtin", "cf"} <= names
    assert not names - {"builtin", "cf", "cftensor"}
