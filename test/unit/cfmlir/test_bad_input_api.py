"""Misuses of the public Python API (issue 24, point 4): every public function validates its arguments and
raises a :class:`cfruntime.errors.UserError` (the API's :class:`cfmlir.api_args.ArgumentError`, a
``ValueError``; or the runtime's/compiler's located errors) with a one-line message -- never an
``AttributeError``/``KeyError``/``TypeError``/``AssertionError`` from deep inside -- and a value refused by
``cf-run`` too is refused with the same message (the API names the keyword, cf-run the flag)."""

from __future__ import annotations

import warnings

import pytest
import torch

import cfmlir
from cfmlir.api_args import ArgumentError
from cfruntime.default_data import default_data_path, default_network_path
from cfruntime.errors import UserError
from cftest.nets import mlp_file


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    """A compiled certifier, the shipped MNIST net and a 2-image property of it, a CIFAR-shaped net, a net
    with 5 outputs, a VNN-LIB file of the MNIST net."""
    tmp = tmp_path_factory.mktemp("api")
    cifar = mlp_file(tmp / "cifar_like.onnx", 3072, 10, (3, 32, 32))
    five = mlp_file(tmp / "five.onnx", 784, 5, (1, 28, 28))
    vnnlib = tmp / "p.vnnlib"
    lines = [f"(declare-const X_{i} Real)" for i in range(784)] + [f"(declare-const Y_{j} Real)" for j in range(10)]
    lines += [a for i in range(784) for a in (f"(assert (>= X_{i} 0.0))", f"(assert (<= X_{i} 0.01))")]
    vnnlib.write_text("\n".join(lines + ["(assert (>= Y_0 Y_1))"]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = cfmlir.load_network(default_network_path())
        nets = {"cifar": cfmlir.load_network(cifar), "five": cfmlir.load_network(five)}
    prop = cfmlir.robustness_property(net, default_data_path(), 0.005, n=2)
    return {"cert": cfmlir.compile("ibp"), "net": net, "prop": prop, "vnnlib": vnnlib, **nets}


CSV = str(default_data_path())
NET = str(default_network_path())


def _certify_kw(**kw):
    """``certify`` of the good certifier, network and property with the keywords ``kw``."""
    return lambda c: cfmlir.certify(c["cert"], c["net"], c["prop"], **kw)


#: (case, call, a phrase of the message): every public function and keyword, misused
MISUSES = [
    # compile
    ("compile(None)", lambda c: cfmlir.compile(None), "compile() takes a shipped certifier's name"),
    ("compile(3)", lambda c: cfmlir.compile(3), "got int 3"),
    ("compile('')", lambda c: cfmlir.compile(""), "got an empty string"),
    ("compile(unknown name)", lambda c: cfmlir.compile("no_such"), "unknown certifier 'no_such'"),
    ("compile(rewrite='no')", lambda c: cfmlir.compile("ibp", rewrite="no"), "rewrite must be True or False"),
    # load_network
    ("load_network(None)", lambda c: cfmlir.load_network(None), "path must be a file name"),
    ("load_network(3)", lambda c: cfmlir.load_network(3), "path must be a file name"),
    ("load_network(no file)", lambda c: cfmlir.load_network("no_such.onnx"), "no such network file"),
    ("load_network(mean=object)", lambda c: cfmlir.load_network(NET, mean=object()), "mean must be a number"),
    ("load_network(std=[None])", lambda c: cfmlir.load_network(NET, std=[None]), "std must be a number"),
    ("load_network(std=0)", lambda c: cfmlir.load_network(NET, std=0), "must be positive"),
    ("load_network(layout=3)", lambda c: cfmlir.load_network(NET, layout=3), "layout must be one of NCHW, NHWC"),
    ("load_network(flatten_order='x')", lambda c: cfmlir.load_network(NET, flatten_order="x"),
     "flatten_order must be one of CHW, HWC"),
    ("load_network(manifest=3)", lambda c: cfmlir.load_network(NET, manifest=3), "manifest must be a file name"),
    # robustness_property
    ("robustness_property(network=None)", lambda c: cfmlir.robustness_property(None, CSV, 0.01),
     "network must be what cfmlir.load_network returns"),
    ("robustness_property(network=path)", lambda c: cfmlir.robustness_property(NET, CSV, 0.01),
     "call cfmlir.load_network("),
    ("robustness_property(network=certifier)", lambda c: cfmlir.robustness_property(c["cert"], CSV, 0.01),
     "network must be what cfmlir.load_network returns"),
    ("robustness_property(csv=None)", lambda c: cfmlir.robustness_property(c["net"], None, 0.01),
     "images_or_csv must be a file name"),
    ("robustness_property(eps=2)", lambda c: cfmlir.robustness_property(c["net"], CSV, 2),
     "eps must be in [0, 1] (pixel units), got 2"),
    ("robustness_property(eps=-0.1)", lambda c: cfmlir.robustness_property(c["net"], CSV, -0.1),
     "eps must be in [0, 1] (pixel units), got -0.1"),
    ("robustness_property(eps=nan)", lambda c: cfmlir.robustness_property(c["net"], CSV, float("nan")),
     "eps must be in [0, 1]"),
    ("robustness_property(eps=None)", lambda c: cfmlir.robustness_property(c["net"], CSV, None), "eps must be a number"),
    ("robustness_property(n='3')", lambda c: cfmlir.robustness_property(c["net"], CSV, 0.01, n="3"),
     "n must be a positive integer, got str '3'"),
    ("robustness_property(n=0)", lambda c: cfmlir.robustness_property(c["net"], CSV, 0.01, n=0),
     "n must be a positive integer, got 0"),
    ("robustness_property(n=1.5)", lambda c: cfmlir.robustness_property(c["net"], CSV, 0.01, n=1.5),
     "n must be a positive integer"),
    ("robustness_property(dataset='x')", lambda c: cfmlir.robustness_property(c["net"], CSV, 0.01, dataset="x"),
     "dataset must be one of mnist, cifar10"),
    ("robustness_property(MNIST on a CIFAR net)", lambda c: cfmlir.robustness_property(c["cifar"], CSV, 0.01),
     "mnist images of 784 values do not fit the network cifar_like.onnx's input shape (3, 32, 32)"),
    ("robustness_property(labels beyond 5 outputs)", lambda c: cfmlir.robustness_property(c["five"], CSV, 0.01),
     "out of range 0..4: the network five.onnx has 5 outputs"),
    # load_vnnlib
    ("load_vnnlib(None)", lambda c: cfmlir.load_vnnlib(None, c["net"]), "path must be a file name"),
    ("load_vnnlib(network=None)", lambda c: cfmlir.load_vnnlib(c["vnnlib"], None),
     "network must be what cfmlir.load_network returns"),
    ("load_vnnlib(network=path)", lambda c: cfmlir.load_vnnlib(c["vnnlib"], NET), "call cfmlir.load_network("),
    ("load_vnnlib(on a CIFAR net)", lambda c: cfmlir.load_vnnlib(c["vnnlib"], c["cifar"]), "784 inputs"),
    # certify
    ("certify(certifier='ibp')", lambda c: cfmlir.certify("ibp", c["net"], c["prop"]), "call cfmlir.compile('ibp') first"),
    ("certify(certifier=None)", lambda c: cfmlir.certify(None, c["net"], c["prop"]),
     "certifier must be what cfmlir.compile returns"),
    ("certify(certifier=nn.Module)", lambda c: cfmlir.certify(torch.nn.Linear(2, 2), c["net"], c["prop"]),
     "certifier must be what cfmlir.compile returns"),
    ("certify(network=None)", lambda c: cfmlir.certify(c["cert"], None, c["prop"]),
     "network must be what cfmlir.load_network returns"),
    ("certify(network=nn.Module)", lambda c: cfmlir.certify(c["cert"], torch.nn.Linear(2, 2), c["prop"]),
     "network must be what cfmlir.load_network returns"),
    ("certify(prop=None)", lambda c: cfmlir.certify(c["cert"], c["net"], None),
     "prop must be what cfmlir.robustness_property or cfmlir.load_vnnlib returns"),
    ("certify(MNIST property on a CIFAR net)", lambda c: cfmlir.certify(c["cert"], c["cifar"], c["prop"]),
     "the property's boxes have 784 values, but the network cifar_like.onnx takes inputs of shape (3, 32, 32)"),
    ("certify(engine='x')", _certify_kw(engine="x"), "engine must be one of compiled, interpreter"),
    ("certify(engine=3)", _certify_kw(engine=3), "engine must be 'compiled', 'interpreter' or an object"),
    ("certify(device='mps')", _certify_kw(device="mps"), "device 'mps' is not supported: cfmlir runs on cpu or cuda[:N]"),
    ("certify(device='meta')", _certify_kw(device="meta"), "device 'meta' is not supported"),
    ("certify(device='bogus')", _certify_kw(device="bogus"), "device must be cpu or cuda[:N], got 'bogus'"),
    ("certify(device=3)", _certify_kw(device=3), "device must be cpu or cuda[:N]"),
    ("certify(dtype='float16')", _certify_kw(dtype="float16"), "dtype must be one of float64, float32, got 'float16'"),
    ("certify(dtype=None)", _certify_kw(dtype=None), "dtype must be one of float64, float32"),
    ("certify(widen='yes')", _certify_kw(widen="yes"), "widen must be None, True, False, 'auto', 'on' or 'off'"),
    ("certify(batch_size='3')", _certify_kw(batch_size="3"), "batch_size must be a positive integer, got str '3'"),
    ("certify(batch_size=0)", _certify_kw(batch_size=0), "batch_size must be a positive integer, got 0"),
    ("certify(layer_bounds='no')", _certify_kw(layer_bounds="no"), "layer_bounds must be True, False or 'computed', got 'no'"),
    ("certify(sparse='no')", _certify_kw(sparse="no"), "sparse must be True or False"),
    ("certify(check=3)", _certify_kw(check=3), "check must be a function or None"),
    ("certify(on_batch=3)", _certify_kw(on_batch=3), "on_batch must be a function or None"),
    ("certify(on_shrink=3)", _certify_kw(on_shrink=3), "on_shrink must be a function or None"),
    ("certify(ray=3)", _certify_kw(ray=3), "ray must be None, True or a cluster address"),
    ("certify(interpreter, float32)", _certify_kw(engine="interpreter", dtype="float32"),
     "dtype float32 applies to the compiled engine only"),
    # engine_for, bounds_in_batches
    ("engine_for('deeppoly')", lambda c: cfmlir.engine_for("deeppoly"), "call cfmlir.compile('deeppoly') first"),
    ("engine_for(engine='x')", lambda c: cfmlir.engine_for(c["cert"], "x"), "engine must be one of compiled, interpreter"),
    ("engine_for(dtype='float16')", lambda c: cfmlir.engine_for(c["cert"], dtype="float16"), "dtype must be one of"),
    ("engine_for(device='mps')", lambda c: cfmlir.engine_for(c["cert"], device="mps"), "device 'mps' is not supported"),
    ("engine_for(graph='no')", lambda c: cfmlir.engine_for(c["cert"], graph="no"), "graph must be True or False"),
    ("bounds_in_batches(eng=None)", lambda c: cfmlir.api.bounds_in_batches(None, c["net"].network, c["prop"].lb,
                                                                            c["prop"].ub, c["prop"].C, 10),
     "eng must be an engine"),
    ("bounds_in_batches(batch_size=0)", lambda c: cfmlir.api.bounds_in_batches(
        cfmlir.engine_for(c["cert"]), c["net"].network, c["prop"].lb, c["prop"].ub, c["prop"].C, 0),
     "batch_size must be a positive integer, got 0"),
]
if not torch.cuda.is_available():
    MISUSES.append(("certify(device='cuda') without CUDA", _certify_kw(device="cuda"), "device 'cuda' is not available here"))


@pytest.mark.parametrize("case,call,phrase", MISUSES, ids=[m[0] for m in MISUSES])
def test_misuse_is_one_user_error_line(ctx, case, call, phrase):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(UserError) as info:
            call(ctx)
    msg = str(info.value)
    assert "\n" not in msg and phrase in msg, f"{case}: {msg}"
    assert not isinstance(info.value, (AttributeError, KeyError, TypeError, AssertionError, IndexError))


def test_argument_errors_are_value_errors(ctx):
    with pytest.raises(ValueError):
        cfmlir.certify(ctx["cert"], ctx["net"], ctx["prop"], batch_size=0)
    assert issubclass(ArgumentError, UserError) and issubclass(ArgumentError, ValueError)


def test_n_beyond_the_file_warns(ctx):
    with pytest.warns(UserWarning, match="has 10 row\\(s\\), fewer than the 200 asked for: certifying those 10"):
        prop = cfmlir.robustness_property(ctx["net"], CSV, 0.01, n=200)
    assert len(prop) == 10


@pytest.mark.parametrize("flag,value", [("eps", "2"), ("eps", "-0.5"), ("n", "0"), ("batch-size", "0"),
                                        ("device", "mps"), ("device", "bogus")])
def test_the_api_and_cf_run_give_one_message(ctx, capsys, flag, value):
    """A value both refuse: cf-run's line is ``error: --FLAG ...``, the API's message ``FLAG ...`` (the
    keyword's name), the rest equal."""
    from cfmlir.tools.cf_run import main

    assert main([f"--{flag}", value, "--quiet"]) == 1
    cli = capsys.readouterr().err.strip()
    key = flag.replace("-", "_")
    if key == "eps":
        call = lambda: cfmlir.robustness_property(ctx["net"], CSV, float(value))  # noqa: E731
    elif key == "n":
        call = lambda: cfmlir.robustness_property(ctx["net"], CSV, 0.01, n=int(value))  # noqa: E731
    else:
        call = lambda: cfmlir.certify(ctx["cert"], ctx["net"], ctx["prop"], **{key: int(value) if key == "batch_size" else value})  # noqa: E731
    with pytest.raises(ArgumentError) as info:
        call()
    assert cli == f"error: --{flag}{str(info.value)[len(key):]}", (cli, str(info.value))
