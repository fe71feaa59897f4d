"""Bad inputs to cf-run and cf-opt (issue 24, point 4): each is one ``error:`` line (warnings aside) with
exit status 1, no traceback, no "internal error", nothing on stdout claiming a result -- or, where the
input is legal but was mishandled (a 5000-deep ``and``), the normal answer.  Run in this process (the
3000-parenthesis case and a flag case also as processes).  The error classes and exit statuses:
``docs/errors.md``."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

from cfmlir.certifiers import certifier_source
from cfmlir.tools import cf_opt, cf_run
from cftest import REPO
from cftest.nets import mlp_file


def run_main(capsys, *args):
    """``cf-run ARGS`` in this process: (exit status, stdout, stderr)."""
    try:
        rc = cf_run.main([str(a) for a in args])
    except SystemExit as e:  # argparse
        rc = e.code
    got = capsys.readouterr()
    return rc, got.out, got.err


def one_error(rc, out, err, code: int = 1) -> str:
    """The one error line of a failed run (other stderr lines may only be warnings; stdout is empty)."""
    assert rc == code, (rc, out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [line for line in err.strip().splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1 and "error: " in lines[0], err
    assert out == "", out
    return lines[0]


def _net(tmp_path, name, inputs=784, outputs=10, input_shape=(1, 28, 28)):
    return mlp_file(tmp_path / name, inputs, outputs, input_shape)


def _vnnlib(tmp_path, inputs: int, formula: str, boxes: str | None = None, name="p.vnnlib"):
    lines = [f"(declare-const X_{i} Real)" for i in range(inputs)] + [f"(declare-const Y_{j} Real)" for j in range(10)]
    lines += boxes.splitlines() if boxes is not None else \
        [a for i in range(inputs) for a in (f"(assert (>= X_{i} 0.4))", f"(assert (<= X_{i} 0.41))")]
    p = tmp_path / name
    p.write_text("\n".join(lines + [formula]) + "\n")
    return p


# -- VNN-LIB -------------------------------------------------------------------------------------------
def test_and_nested_5000_deep_is_answered_as_the_flat_property(tmp_path, tiny_net, capsys):
    """A chain of one operator is flattened (no recursion): the same verdict as the flat conjunction."""
    atoms = [f"(>= Y_{j} Y_0)" for j in (1, 2, 3)] * 1667
    deep = "(assert " + "".join(f"(and {a} " for a in atoms[:-1]) + atoms[-1] + ")" * (len(atoms) - 1) + ")"
    flat = "(assert (and " + " ".join(atoms) + "))"
    verdicts = []
    for name, formula in (("deep.vnnlib", deep), ("flat.vnnlib", flat)):
        p = _vnnlib(tmp_path, 784, formula, name=name)
        rc, out, err = run_main(capsys, "--certifier", "ibp", "--net", tiny_net, "--vnnlib", p)
        assert rc == 0 and "internal error" not in err, err
        verdicts.append(re.search(r"verdict:\s+(\w+)", out).group(1))
    assert verdicts[0] == verdicts[1]


def test_and_or_alternating_too_deep_is_one_line(tmp_path, tiny_net, capsys):
    formula = "(assert " + "(and (>= Y_1 Y_0) (or (>= Y_2 Y_0) " * 3000 + "(>= Y_0 Y_1)" + "))" * 3000 + ")"
    p = _vnnlib(tmp_path, 784, formula)
    line = one_error(*run_main(capsys, "--certifier", "ibp", "--net", tiny_net, "--vnnlib", p))
    assert re.match(rf"error: {re.escape(str(p))}:\d+: formula nested too deeply: more than 100 alternations", line), line


def test_empty_box_names_the_assert_lines(tmp_path, tiny_net, capsys):
    boxes = "\n".join(a for i in range(784) for a in (f"(assert (>= X_{i} 0.4))", f"(assert (<= X_{i} {0.3 if i == 5 else 0.5}))"))
    p = _vnnlib(tmp_path, 784, "(assert (>= Y_1 Y_0))", boxes=boxes)
    decl = 794  # 784 + 10 declarations; the asserts of X_5 are the lines after 2 * 5 others
    line = one_error(*run_main(capsys, "--certifier", "ibp", "--net", tiny_net, "--vnnlib", p))
    assert line == (f"error: {p}:{decl + 12}: empty input box: X_5 >= 0.4 (line {decl + 11}) and X_5 <= 0.3 "
                    f"(line {decl + 12}) cannot both hold")


# -- time limits and devices ---------------------------------------------------------------------------
def test_huge_timeout_flag(tmp_path, tiny_net, capsys):
    p = _vnnlib(tmp_path, 784, "(assert (>= Y_1 Y_0))")
    line = one_error(*run_main(capsys, "--net", tiny_net, "--vnnlib", p, "--timeout", "1e308"))
    assert line == "error: --timeout must be a positive number of seconds, at most 1000000, got '1e308'"


def test_huge_timeout_in_instances_csv(tmp_path, tiny_net, capsys):
    p = _vnnlib(tmp_path, 784, "(assert (>= Y_1 Y_0))")
    csv = tmp_path / "instances.csv"
    csv.write_text(f"{tiny_net.name},{p.name},60\n{tiny_net.name},{p.name},1e308\n")
    line = one_error(*run_main(capsys, "--instances", csv))
    assert line == f"error: {csv}:2: timeout must be a positive number of seconds, at most 1000000, got '1e308'"


DEVICES = [("mps", "--device 'mps' is not supported: cfmlir runs on cpu or cuda[:N]"),
           ("meta", "--device 'meta' is not supported"), ("bogus", "--device must be cpu or cuda[:N], got 'bogus'")]
if not torch.cuda.is_available():
    DEVICES += [("cuda", "--device 'cuda' is not available here"), ("cuda:3", "--device 'cuda:3' is not available here")]


@pytest.mark.parametrize("device,what", DEVICES)
def test_bad_device(capsys, device, what):
    line = one_error(*run_main(capsys, "--device", device, "--n", "1"))
    assert line.startswith(f"error: {what}"), line


# -- certifier sources ---------------------------------------------------------------------------------
def _spec(tmp_path, name: str, base: str, *edits) -> str:
    text = certifier_source(base)[0]
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    p = tmp_path / name
    p.write_text(text)
    return p


def _line_of(path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_rule_reads_its_own_member_first(tmp_path, tiny_net, csv, capsys, engine):
    spec = _spec(tmp_path, "selfread.cf", "ibp", ("Relu -> ((prev[l] >= 0 ? prev[l] : 0)", "Relu -> ((curr[u] >= 0 ? prev[l] : 0)"))
    line = one_error(*run_main(capsys, "--certifier", spec, "--net", tiny_net, "--data", csv, "--eps", "0.01",
                               "--engine", engine))
    row = _line_of(spec, "Relu -> ((curr[u]")
    assert re.match(rf"error: {re.escape(str(spec))}:{row}:\d+: ", line), line
    assert "'u'" in line and ("read before it is computed" in line or "read before the flow computed it" in line), line


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_traverse_that_never_ends(tmp_path, tiny_net, csv, capsys, engine):
    spec = _spec(tmp_path, "loop.cf", "deeppoly", ("func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[L]) : (coeff * n[U]);",
                                                   "func replace_lower(Neuron n, Float coeff) = coeff * n;"))
    line = one_error(*run_main(capsys, "--certifier", spec, "--net", tiny_net, "--data", csv, "--eps", "0.01",
                               "--engine", engine))
    # the compiled engine names the rule, the interpreter the traverse; both the file, line and column
    row = _line_of(spec, "Affine ->") if engine == "compiled" else _line_of(spec, "func backsubs_lower")
    assert re.match(rf"error: {re.escape(str(spec))}:{row}:\d+: ", line), line
    assert "did not" in line and "re-introduce" in line, line


def test_per_neuron_traverse_that_never_ends_stops_at_the_interpreters_cap(tmp_path):
    """A priority that reads a neuron's bounds gives the per-neuron loop; it stops after the interpreter's
    step cap (4 * neurons + 100), at the rule's position."""
    from cfmlir.compiler import compile_certifier
    from cfmlir.interpreter.errors import InterpreterError
    from cfmlir.interpreter.run import analyze, compile_source
    from cfruntime.errors import RuleError
    from cfruntime.flow.engine import run_certifier
    from cftest.nets import boxes, mlp

    spec = _spec(tmp_path, "loop2.cf", "deeppoly",
                 ("func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[L]) : (coeff * n[U]);",
                  "func replace_lower(Neuron n, Float coeff) = coeff * n;"),
                 ("func priority2(Neuron n, Float c) = -n[layer];", "func priority2(Neuron n, Float c) = -n[layer] + 0.0 * n[l];"))
    text = spec.read_text()
    net = mlp([2, 3, 2], seed=1)
    lb, ub = boxes(2, batch=1)
    cert = compile_certifier(text, str(spec), use_cache=False)
    assert not cert.layer_granular
    cap = 4 * sum(layer.size for layer in net.layers) + 100
    with pytest.raises(RuleError) as info:
        run_certifier(cert, net, lb, ub)
    assert str(info.value).startswith(f"{spec}:{_line_of(spec, 'Affine ->')}:")
    assert f"traverse did not terminate after {cap} steps" in str(info.value)
    with pytest.raises(InterpreterError, match=f"traverse did not terminate after {cap} steps"):
        analyze(compile_source(text, str(spec), "loop2"), net, lb[0], ub[0])


def test_two_flows(tmp_path, tiny_net, csv, capsys):
    spec = tmp_path / "two.cf"
    spec.write_text(certifier_source("ibp")[0] + "flow(forward, priority, stop, ibp);\n")
    line = one_error(*run_main(capsys, "--certifier", spec, "--net", tiny_net, "--data", csv, "--eps", "0.01"))
    assert line.startswith(f"error: {spec}:") and ": a second 'flow' declaration (the first is at line" in line


@pytest.mark.parametrize("engine", ["compiled", "interpreter"])
def test_empty_certifier_names_the_file(tmp_path, tiny_net, csv, capsys, engine):
    spec = tmp_path / "empty.cf"
    spec.write_text("")
    line = one_error(*run_main(capsys, "--certifier", spec, "--net", tiny_net, "--data", csv, "--eps", "0.01",
                               "--engine", engine))
    assert str(spec) in line and "no 'flow' declaration" in line, line


# -- data that does not fit the network ----------------------------------------------------------------
def test_label_beyond_the_outputs_names_the_row(tmp_path, csv, capsys):
    net = _net(tmp_path, "three.onnx", outputs=3)
    line = one_error(*run_main(capsys, "--certifier", "ibp", "--net", net, "--data", csv, "--eps", "0.01"))
    assert line == f"error: {csv}:1: label 3 out of range 0..2: the network three.onnx has 3 outputs"


def test_images_that_do_not_fit_name_the_files(tmp_path, csv, capsys):
    net = _net(tmp_path, "cifar_like.onnx", inputs=3072, input_shape=(3, 32, 32))
    line = one_error(*run_main(capsys, "--certifier", "ibp", "--net", net, "--data", csv, "--eps", "0.01"))
    assert line == (f"error: {csv}: mnist images of 784 values do not fit the network cifar_like.onnx's input shape "
                    "(3, 32, 32) (3072 values)")


def test_n_beyond_the_file_warns_and_runs_the_rows(tiny_net, csv, capsys):
    rc, out, err = run_main(capsys, "--certifier", "ibp", "--net", tiny_net, "--data", csv, "--eps", "0.01", "--n", "200")
    assert rc == 0 and f"warning: {csv} has 2 row(s), fewer than the 200 asked for: certifying those 2" in err
    assert "2 samples" in out


# -- flags that would be ignored -----------------------------------------------------------------------
IGNORED = [
    (["--layer-bounds"], "--layer-bounds adds every layer's bounds to the JSON: give --json OUT too"),
    (["--check", "--no-check"], "--check and --no-check contradict each other"),
    (["--no-check", "--check"], "--check and --no-check contradict each other"),
    (["--engine", "interpreter", "--dtype", "float32"], "--dtype float32 applies to the compiled engine only"),
    (["--engine", "interpreter", "--widen", "on"], "--widen on applies to the compiled engine only"),
    (["--engine", "interpreter", "--no-sparse"], "--no-sparse applies to the compiled engine only"),
    (["--split", "on"], "--split applies to VNN-LIB properties"),
    (["--max-boxes", "10"], "--max-boxes applies to VNN-LIB properties"),
    (["--bab-batch", "8", "--bab-beta", "off"], "--bab-beta, --bab-batch apply to VNN-LIB properties"),
    (["--check-tol", "1e-3"], "--check-tol applies to the soundness check, which is off here"),
    (["--no-check", "--check-tol", "1e-3", "--certifier", "x.cf"], "--check-tol applies to the soundness check"),
]


@pytest.mark.parametrize("args,what", IGNORED)
def test_flag_that_would_be_ignored(capsys, args, what):
    line = one_error(*run_main(capsys, *args, "--n", "1"))
    assert line.startswith(f"error: {what}"), line


@pytest.mark.parametrize("args,what", [
    (["--dataset", "mnist"], "--vnnlib cannot be combined with --dataset"),
    (["--max-boxes", "10", "--split", "off"], "--max-boxes applies to input splitting, which --split off turns off"),
    (["--bab-batch", "8", "--bab", "off"], "--bab-batch applies to branch and bound, which --bab off turns off"),
    (["--bab-branching", "relu", "--bab", "off"], "--bab-branching applies to branch and bound, which --bab off"),
    (["--layer-bounds", "--json", "o.json"], "--vnnlib cannot be combined with --layer-bounds"),
])
def test_vnnlib_flag_that_would_be_ignored(tmp_path, tiny_net, capsys, args, what):
    p = _vnnlib(tmp_path, 784, "(assert (>= Y_1 Y_0))")
    line = one_error(*run_main(capsys, "--net", tiny_net, "--vnnlib", p, *args))
    assert line.startswith(f"error: {what}"), line


def test_flags_are_checked_before_the_certifier_is_read(capsys):
    """A usage error comes first, whatever else is wrong (the .cf file does not exist)."""
    line = one_error(*run_main(capsys, "--certifier", "no_such.cf", "--check", "--no-check"))
    assert "contradict" in line


# -- progress without a terminal -----------------------------------------------------------------------
def test_progress_lines_without_a_terminal(tiny_net, csv, capsys, monkeypatch):
    monkeypatch.setattr(cf_run, "PROGRESS_EVERY_S", 0.0)
    rc, out, err = run_main(capsys, "--certifier", "ibp", "--net", tiny_net, "--data", csv, "--eps", "0.01",
                            "--batch-size", "1")
    assert rc == 0
    progress = [line for line in err.splitlines() if line.startswith("progress: ")]
    assert [p.split(",")[0] for p in progress] == ["progress: 1/2 samples (50.0%)", "progress: 2/2 samples (100.0%)"]
    rc, out, err = run_main(capsys, "--certifier", "ibp", "--net", tiny_net, "--data", csv, "--eps", "0.01",
                            "--batch-size", "1", "--quiet")
    assert rc == 0 and "progress" not in err and out == ""


# -- cf-opt --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["no_such_dir/out.mlir", "."])
def test_cf_opt_output_that_cannot_be_written(tmp_path, capsys, target):
    rc = cf_opt.main(["--certifier", "ibp", "-o", str(tmp_path / target)])
    err = capsys.readouterr().err
    line = one_error(rc, "", err)
    assert line.startswith(f"error: {tmp_path / target}: cannot write the output file"), line


def test_as_a_process(tmp_path):
    """The real process: a bad flag combination exits 1 with one line."""
    p = subprocess.run([sys.executable, "-c", "import sys; from cfmlir.tools.cf_run import main; sys.exit(main())",
                        "--device", "meta", "--layer-bounds"], capture_output=True, text=True, cwd=REPO, timeout=300)
    one_error(p.returncode, p.stdout, p.stderr)


@pytest.mark.parametrize("argv,want", [(["--batch-size", "7"], {"batch_size": 7}), ([], {})])
def test_batch_size_reaches_input_splitting(monkeypatch, argv, want):
    """With --vnnlib, --batch-size is the sub-boxes of input splitting per batch (not ignored); without it
    splitting keeps its own default."""
    import cfmlir.input_splitting as splitting
    from cfmlir.tools import run_args, vnnlib_mode

    got = {}
    monkeypatch.setattr(splitting, "should_split", lambda mode, prop: True)
    monkeypatch.setattr(splitting, "decide_by_splitting", lambda *a, **kw: got.update(kw))
    monkeypatch.setattr(vnnlib_mode, "make_engine", lambda args, prog: None)
    monkeypatch.setattr("cfruntime.properties.vnnlib.region_verified", lambda reg, lo: False)
    args = run_args.build_parser().parse_args(["--vnnlib", "p.vnnlib", *argv])
    args.argv = ["--vnnlib", "p.vnnlib", *argv]
    run_args.check_options(args)
    prop = type("P", (), {"regions": [object()]})()
    vnnlib_mode._split(args, None, None, prop, [None], None)
    assert {k: v for k, v in got.items() if k == "batch_size"} == want


def test_batch_size_with_split_off_is_refused(tmp_path, tiny_net, capsys):
    p = _vnnlib(tmp_path, 784, "(assert (>= Y_1 Y_0))")
    line = one_error(*run_main(capsys, "--net", tiny_net, "--vnnlib", p, "--batch-size", "5", "--split", "off"))
    assert line.startswith("error: --batch-size applies to input splitting"), line
