"""The checks of argument values shared by the public API (:mod:`cfmlir.api`) and ``cf-run``.

Every public function of :mod:`cfmlir.api` calls one ``check_*`` function of this module first, and
``cf-run`` calls the same checks on its options before compiling anything, so a bad value is refused
once, with one message, whichever way it came in: the API names the keyword (``eps must be in [0, 1]
(pixel units), got 2``), ``cf-run`` the flag (``--eps must be ...``).  A bad value is an
:class:`ArgumentError`: a :class:`cfruntime.errors.UserError` (the root every tool reports as one
``error:`` line, exit status 1) and a :class:`ValueError` (what Python code expects of a bad argument).
The table of every error class, its exit status and its line is ``docs/errors.md``.

Imports nothing heavy at module level: ``import cfmlir`` stays cheap (torch is imported by the device
check only).
"""

from __future__ import annotations

import math
import os
from numbers import Integral, Real

from cfruntime.errors import UserError

#: The devices the compiled engine runs on (``cuda`` and ``cuda:N`` only where torch sees that GPU).
DEVICES = "cpu or cuda[:N]"
DTYPES = ("float64", "float32")
ENGINES = ("compiled", "interpreter")
WIDEN_VALUES = (None, True, False, "auto", "on", "off")
DATASET_NAMES = ("mnist", "cifar10")
LAYOUTS = ("NCHW", "NHWC")
FLATTEN_ORDERS = ("CHW", "HWC")
#: The longest time limit accepted, in seconds (~11.6 days): beyond it, timers overflow (a
#: ``--timeout 1e308`` is a mistake, not a limit); give no ``--timeout`` for none.
MAX_TIMEOUT_S = 1e6


class ArgumentError(UserError, ValueError):
    """A bad argument value or type (one line; ``cf-run`` prints it as ``error: ...``, exit status 1)."""


def _type(value) -> str:
    return type(value).__name__


def _show(value) -> str:
    """``value`` as a message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_number(value) -> bool:
    """A real number (int or float; numpy scalars too), not a bool."""
    return isinstance(value, Real) and not isinstance(value, bool)


def check_bool(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be True or False, got {_show(value)}")
    return value


def check_callable(value, name: str):
    if value is not None and not callable(value):
        raise ArgumentError(f"{name} must be a function or None, got {_type(value)} {_show(value)}")
    return value


def check_path(value, name: str) -> str:
    """A file name (``str`` or ``os.PathLike``), not empty."""
    if not isinstance(value, (str, os.PathLike)):
        raise ArgumentError(f"{name} must be a file name (str or pathlib.Path), got {_type(value)} {_show(value)}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise ArgumentError(f"{name} must be a file name, got {_show(value)}")
    return text


def check_choice(value, name: str, choices) -> str:
    """``value`` (case as given, or upper case for layouts) among ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ArgumentError(f"{name} must be one of {', '.join(map(str, choices))}, got {_show(value)}")
    return value


def check_choice_type(value, name: str) -> str:
    """A name (``str``) for a choice among names."""
    if not isinstance(value, str):
        raise ArgumentError(f"{name} must be a name (str), got {_type(value)} {_show(value)}")
    return value


def check_positive_int(value, name: str) -> int:
    """An ``int`` > 0 (a numeric string is refused in the API: ``n="3"``; ``cf-run`` parses its flags
    before calling this)."""
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise ArgumentError(f"{name} must be a positive integer, got {_type(value)} {_show(value)}")
    if value <= 0:
        raise ArgumentError(f"{name} must be a positive integer, got {value}")
    return int(value)


def check_eps(value, name: str = "eps") -> float:
    """An L-infinity radius in pixel units: a finite number in [0, 1] (a string as ``cf-run`` gives it is
    parsed)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ArgumentError(f"{name} must be a number, got '{value}'") from None
    if not is_number(value):
        raise ArgumentError(f"{name} must be a number, got {_type(value)} {_show(value)}")
    eps = float(value)
    if not math.isfinite(eps) or not 0 <= eps <= 1:
        raise ArgumentError(f"{name} must be in [0, 1] (pixel units), got {value:g}")
    return eps


def check_timeout(value, name: str = "--timeout") -> float:
    """A time limit in seconds: a number in (0, :data:`MAX_TIMEOUT_S`] (a string is parsed)."""
    t = math.nan
    if isinstance(value, str):
        try:
            t = float(value)
        except ValueError:
            pass
    elif is_number(value):
        t = float(value)
    if not 0 < t <= MAX_TIMEOUT_S:  # NaN too
        shown = f"'{value}'" if isinstance(value, str) else _show(value)
        raise ArgumentError(f"{name} must be a positive number of seconds, at most {MAX_TIMEOUT_S:.0f}, got {shown}")
    return t


def check_device(value, name: str = "device") -> str:
    """A torch device the compiled engine can use here: ``cpu``, or ``cuda``/``cuda:N`` when torch sees
    that GPU.  Returns its canonical text."""
    if isinstance(value, str) and value == "cpu":  # the default: no torch import (cf-run's start-up)
        return value
    import torch

    if not isinstance(value, (str, torch.device)):
        raise ArgumentError(f"{name} must be {DEVICES} (a str or torch.device), got {_type(value)} {_show(value)}")
    text = str(value)
    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError, ValueError):
        raise ArgumentError(f"{name} must be {DEVICES}, got '{text}'") from None
    if dev.type == "cpu":
        return "cpu" if dev.index is None else str(dev)
    if dev.type != "cuda":
        raise ArgumentError(f"{name} '{text}' is not supported: cfmlir runs on {DEVICES}")
    if not torch.cuda.is_available():
        why = "this torch has no CUDA support" if torch.version.cuda is None else "no CUDA device is visible"
        raise ArgumentError(f"{name} '{text}' is not available here ({why}); use cpu")
    count = torch.cuda.device_count()
    if dev.index is not None and dev.index >= count:
        raise ArgumentError(f"{name} '{text}' is not available here: {count} CUDA device(s), cuda:0..cuda:{count - 1}")
    return text


def check_dtype(value, name: str = "dtype") -> str:
    """``"float64"``/``"float32"`` (or the torch dtype) -> its name."""
    if isinstance(value, str) and value in DTYPES:
        return value
    import torch

    if isinstance(value, torch.dtype) and str(value).removeprefix("torch.") in DTYPES:
        return str(value).removeprefix("torch.")
    raise ArgumentError(f"{name} must be one of {', '.join(DTYPES)}, got {_show(value)}")


def check_widen(value, name: str = "widen"):
    if not any(value is v or (isinstance(value, str) and value == v) for v in WIDEN_VALUES):
        raise ArgumentError(f"{name} must be None, True, False, 'auto', 'on' or 'off', got {_show(value)}")
    return value


def check_interpreter_options(engine: str, device: str, dtype: str, flags: tuple[str, str] = ("device", "dtype")) -> None:
    """The reference interpreter runs in float64 on the CPU: another device or dtype is refused, not
    ignored (``flags``: how the caller names them)."""
    if engine != "interpreter":
        return
    if device != "cpu":
        raise ArgumentError(f"{flags[0]} {device} applies to the compiled engine only: the interpreter runs on the cpu")
    if dtype != "float64":
        raise ArgumentError(f"{flags[1]} {dtype} applies to the compiled engine only: the interpreter runs in float64")


def check_values(value, name: str):
    """``mean``/``std``: a number, a sequence of numbers or a ``"M,M,M"`` string (parsed later)."""
    if value is None or isinstance(value, str) or is_number(value):
        return value
    if isinstance(value, (list, tuple)) and value and all(is_number(v) for v in value):
        return value
    raise ArgumentError(f"{name} must be a number, a list of numbers (one per channel) or a string such as "
                        f"'0.5,0.5,0.5', got {_type(value)} {_show(value)}")


def short_data_note(path, asked: int, got: int) -> str | None:
    """The warning when ``--n``/``n`` asks for more rows than the data file has (None when it has them)."""
    if got >= asked:
        return None
    return f"{path} has {got} row(s), fewer than the {asked} asked for: certifying those {got}"


# -- the objects the API passes between its functions --------------------------------------------------
def check_certifier(value):
    """What :func:`cfmlir.compile` returns (a name or path is refused, with the call that makes one)."""
    from cfmlir.engines import Certifier

    if isinstance(value, Certifier):
        return value
    hint = f": call cfmlir.compile({os.fspath(value)!r}) first" if isinstance(value, (str, os.PathLike)) else ""
    raise ArgumentError(f"certifier must be what cfmlir.compile returns (a cfmlir.Certifier), got {_type(value)} "
                        f"{_show(value)}{hint}")


def network_of(value, name: str = "network"):
    """The :class:`cfruntime.network.Network` of ``value``: what :func:`cfmlir.load_network` returns, or
    a cfruntime network itself (a file name or a torch module is refused)."""
    from cfmlir.api import Network
    from cfruntime.network import Network as RawNetwork

    if isinstance(value, Network):
        return value.network
    if isinstance(value, RawNetwork):
        return value
    hint = f": call cfmlir.load_network({os.fspath(value)!r}) first" if isinstance(value, (str, os.PathLike)) else ""
    raise ArgumentError(f"{name} must be what cfmlir.load_network returns (a cfmlir.Network), got {_type(value)} "
                        f"{_show(value)}{hint}")


def _network_name(network) -> str:
    path = getattr(network, "path", None) if not isinstance(network, (str, os.PathLike)) else None
    return f"the network {os.path.basename(str(path))}" if path is not None else "the network"


def check_property(prop, network) -> None:
    """``prop`` is a robustness or VNN-LIB property whose boxes and outputs fit ``network``."""
    from cfruntime.properties import RobustnessProperty, VnnlibProperty

    net = network_of(network)
    where = _network_name(network)
    if isinstance(prop, VnnlibProperty):
        if (prop.num_inputs, prop.num_outputs) != (net.input_size, net.output_size):
            raise ArgumentError(f"the property {prop.source} has {prop.num_inputs} inputs and {prop.num_outputs} outputs, "
                                f"{where} {net.input_size} and {net.output_size}")
        return
    if not isinstance(prop, RobustnessProperty):
        raise ArgumentError(f"prop must be what cfmlir.robustness_property or cfmlir.load_vnnlib returns, got "
                            f"{_type(prop)} {_show(prop)}")
    size = int(prop.lb[0].numel()) if len(prop) else net.input_size
    if size != net.input_size:
        raise ArgumentError(f"the property's boxes have {size} values, but {where} takes inputs of shape "
                            f"{tuple(net.input_shape)} ({net.input_size} values): make the property for this network")
    if prop.C.shape[-1] != net.output_size:
        raise ArgumentError(f"the property compares {prop.C.shape[-1]} classes, but {where} has {net.output_size} "
                            "outputs: make the property for this network")


# -- one validator per public function of cfmlir.api ---------------------------------------------------
def compile_args(spec, rewrite) -> None:
    if not isinstance(spec, (str, os.PathLike)):
        raise ArgumentError(f"compile() takes a shipped certifier's name, a path to a .cf file or .cf source text, "
                            f"got {_type(spec)} {_show(spec)}")
    if not os.fspath(spec).strip():
        raise ArgumentError("compile() takes a shipped certifier's name, a path to a .cf file or .cf source text, "
                            "got an empty string")
    check_bool(rewrite, "rewrite")


def load_network_args(path, mean, std, layout, flatten_order, manifest) -> None:
    check_path(path, "path")
    check_values(mean, "mean")
    check_values(std, "std")
    for value, name, choices in ((layout, "layout", LAYOUTS), (flatten_order, "flatten_order", FLATTEN_ORDERS)):
        if value is not None:
            check_choice(value.strip().upper() if isinstance(value, str) else value, name, choices)
    if manifest is not None:
        check_path(manifest, "manifest")


def robustness_property_args(network, images_or_csv, eps, n, dataset) -> None:
    from cfruntime.properties import EranImages

    network_of(network)
    if not isinstance(images_or_csv, EranImages):
        check_path(images_or_csv, "images_or_csv")
    check_eps(eps, "eps")
    if n is not None:
        check_positive_int(n, "n")
    if dataset is not None:
        from cfruntime.errors import PropertyError
        from cfruntime.properties import normalize_dataset_name

        try:  # the names cfruntime reads (cifar, CIFAR-10, ...)
            normalize_dataset_name(check_choice_type(dataset, "dataset"))
        except PropertyError:
            raise ArgumentError(f"dataset must be one of {', '.join(DATASET_NAMES)}, got {_show(dataset)}") from None


def load_vnnlib_args(path, network) -> None:
    check_path(path, "path")
    network_of(network)


def certify_args(certifier, network, prop, *, engine, device, dtype, batch_size, widen, layer_bounds, sparse, check,
                 on_batch, on_shrink, ray) -> None:
    if isinstance(engine, str):
        check_choice(engine, "engine", ENGINES)
        check_certifier(certifier)
    elif not callable(getattr(engine, "bounds", None)):
        raise ArgumentError(f"engine must be 'compiled', 'interpreter' or an object with a bounds() method, got "
                            f"{_type(engine)} {_show(engine)}")
    elif certifier is not None:  # an engine object runs its own certifier
        check_certifier(certifier)
    check_property(prop, network)
    device = check_device(device, "device")
    dtype = check_dtype(dtype, "dtype")
    if engine == "interpreter":
        check_interpreter_options(engine, device, dtype)
    check_positive_int(batch_size, "batch_size")
    check_widen(widen, "widen")
    check_bool(layer_bounds, "layer_bounds")
    check_bool(sparse, "sparse")
    for value, name in ((check, "check"), (on_batch, "on_batch"), (on_shrink, "on_shrink")):
        check_callable(value, name)
    if not (ray is None or isinstance(ray, (bool, str))):
        raise ArgumentError(f"ray must be None, True or a cluster address (str), got {_type(ray)} {_show(ray)}")


def engine_for_args(certifier, engine, device, dtype, widen, sparse, graph) -> None:
    check_certifier(certifier)
    check_choice(engine, "engine", ENGINES)
    device, dtype = check_device(device, "device"), check_dtype(dtype, "dtype")
    check_interpreter_options(engine, device, dtype)
    check_widen(widen, "widen")
    check_bool(sparse, "sparse")
    if graph is not None:
        check_bool(graph, "graph")


def bounds_in_batches_args(eng, net, batch_size, on_slice, on_shrink) -> None:
    if not callable(getattr(eng, "bounds", None)):
        raise ArgumentError(f"eng must be an engine (cfmlir.engine_for), got {_type(eng)} {_show(eng)}")
    network_of(net, "net")
    check_positive_int(batch_size, "batch_size")
    check_callable(on_slice, "on_slice")
    check_callable(on_shrink, "on_shrink")
