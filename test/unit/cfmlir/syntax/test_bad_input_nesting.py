"""Deeply nested ``.cf`` sources (issue 24, point 4): refused with one located line beyond the stated
limits (:mod:`cfmlir.syntax.nesting`), and every later stage copes with the deepest nesting accepted.

Each form of nesting (parentheses, a right-nested and a left-assoc chain of operators, unary minus,
conditionals, nested builtin calls, a chain of functions) is put at its deepest accepted depth into the
ReLU rule of IBP as an identity, and the source is compiled (frontend, passes, emission), interpreted,
run by both engines on a small network (equal bounds) and proved by cf-verify; one level deeper is a
``file:line:col: error:`` line.  The 3000-parenthesis source of the issue goes through ``cf-run`` and
``cf-opt`` as processes: one line, exit status 1.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cfmlir.certifiers import certifier_source
from cfmlir.diagnostics import CfError
from cfmlir.syntax.nesting import MAX_EXPANDED_NESTING, MAX_NESTING
from cfmlir.syntax.parser import parse
from cfmlir.typing.checker import check
from cftest.nets import boxes, mlp

IBP = certifier_source("ibp")[0]
ANCHOR = "    Relu -> ((prev[l] >= 0 ? prev[l] : 0)"


def _nest(form: str, d: int) -> str:
    """An expression of ``x`` equal to ``x``, nested ``d`` times in the way ``form`` says."""
    return {
        "paren": "(" * d + "x" + ")" * d,
        "right": "(0.0 + " * d + "x" + ")" * d,
        "left": "x" + " + 0.0" * d,
        "unary": "-" * (2 * (d // 2)) + " x",  # an even count of minus signs
        "ternary": "x >= 0.0 ? x : " * d + "x",
        "builtin": "max(x, " * d + "x" + ")" * d,
    }[form]


def source(form: str, d: int) -> str:
    """IBP whose ReLU lower bound goes through the nested identity (or, ``chain``, ``d`` functions each
    calling the previous one inside an 8-deep expression)."""
    if form == "chain":
        funcs = ["func deep0(Float x) = " + _nest("right", 8) + ";"]
        funcs += [f"func deep{i}(Float x) = deep{i - 1}({_nest('right', 8)});" for i in range(1, d + 1)]
        top = f"deep{d}"
    else:
        funcs, top = [f"func deep(Float x) = {_nest(form, d)};"], "deep"
    text = IBP.replace("transformer ibp{", "\n".join(funcs) + "\n\ntransformer ibp{")
    assert ANCHOR in text
    return text.replace(ANCHOR, f"    Relu -> (({top}(prev[l]) >= 0 ? {top}(prev[l]) : 0)")


def _accepted(form: str, d: int) -> bool:
    try:
        check(parse(source(form, d), "deep.cf"))
        return True
    except CfError as err:
        assert "nested too deeply" in str(err), str(err)
        return False


def deepest_accepted(form: str) -> int:
    lo, hi = 1, 3 * MAX_EXPANDED_NESTING
    assert _accepted(form, lo) and not _accepted(form, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _accepted(form, mid) else (lo, mid)
    return lo


FORMS = ["paren", "right", "left", "unary", "ternary", "builtin", "chain"]


@pytest.mark.parametrize("form", FORMS)
def test_deepest_accepted_nesting_runs_in_every_stage(form, compiled_matches_interpreter):
    from cfmlir.compiler import compile_certifier
    from cfmlir.interpreter.run import compile_source
    from cfmlir.verify import verify_source

    d = deepest_accepted(form)
    # the limit is the stated one, not something smaller: the form reaches it (chain: expanded)
    assert d >= (MAX_EXPANDED_NESTING // 2 - 16 if form == "chain" else MAX_NESTING - 2), d
    text = source(form, d)
    compiled = compile_certifier(text, "deep.cf", use_cache=False)
    prog = compile_source(text, "deep.cf", "deep")
    lb, ub = boxes(3, batch=2, seed=2)
    compiled_matches_interpreter(f"{form} {d}", mlp([3, 4, 2], seed=1), lb, ub, prog, lambda _rewrite: compiled,
                                 [("gbscr", True)])
    (relu,) = verify_source(text, "deep.cf", K=1, M=1, timeout=20, ops={"Relu"})
    assert relu.status == "verified", relu.line()


@pytest.mark.parametrize("form", FORMS)
def test_one_level_deeper_is_a_located_error(form):
    d = deepest_accepted(form) + 1
    with pytest.raises(CfError) as info:
        check(parse(source(form, d), "deep.cf"))
    msg = str(info.value)
    assert msg.startswith("error: deep.cf:") and ": expression nested too deeply" in msg and "\n" not in msg
    limit = MAX_EXPANDED_NESTING if form == "chain" else MAX_NESTING
    assert f"more than {limit} levels" in msg


def test_the_parser_refuses_before_python_runs_out_of_stack():
    """Far past the limit (3000 and 100000 levels) the error is the same located line, at the first
    parenthesis beyond the limit, and the parser's recursion never reaches Python's limit."""
    for d in (3000, 100_000):
        with pytest.raises(CfError) as info:
            parse(f"func f(Float x) = {'(' * d}x{')' * d};", "p.cf")
        assert str(info.value).startswith(f"error: p.cf:1:{len('func f(Float x) = ') + MAX_NESTING + 1}: expression nested too deeply")


@pytest.mark.parametrize("tool", ["cf-run", "cf-opt"])
def test_3000_parentheses_through_the_tools(tmp_path, tool):
    spec = tmp_path / "paren.cf"
    spec.write_text(source("paren", 3000))
    if tool == "cf-run":
        code = "import sys; from cfmlir.tools.cf_run import main; sys.exit(main(sys.argv[1:]))"
        argv = ["--certifier", str(spec), "--n", "1", "--quiet"]
    else:
        code = "from cfmlir.tools.cf_opt import main; main()"
        argv = [str(spec)]
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "CF_RUN_TRACEBACK": "", "CF_OPT_TRACEBACK": ""})
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1 and len(lines) == 1, p.stderr
    assert lines[0].startswith(f"error: {spec}:") and ": expression nested too deeply" in lines[0], lines
    assert p.stdout == ""


def test_a_second_flow_is_a_located_error():
    text = IBP + "\nflow(forward, priority, stop, ibp);\n"
    first = next(i for i, line in enumerate(IBP.splitlines(), 1) if line.startswith("flow("))
    last = len(text.rstrip("\n").splitlines())
    with pytest.raises(CfError) as info:
        check(parse(text, "two.cf"))
    assert str(info.value) == (f"error: two.cf:{last}:1: a second 'flow' declaration (the first is at line {first}, "
                               "column 1); a certifier has one flow")
