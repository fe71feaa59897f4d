"""The checks of argument values shared by the public API (:mod:`cfmlir.api`) and ``cf-run``.

Every public function of :mod:`cfmlir.api` validates its arguments first (:mod:`cfmlir.api_validation`,
with these checks of the values), and ``cf-run`` calls the same checks on its options before compiling
anything, so a bad value is refused once, with one message, whichever way it came in: the API names the
keyword (``eps must be in [0, 1] (pixel units), got 2``), ``cf-run`` the flag (``--eps must be ...``).
A bad value is an
:class:`ArgumentError`: a :class:`cfruntime.errors.UserError` (the root every tool reports as one
``error:`` line, exit status 1) and a :class:`ValueError` (what Python code expects of a bad argument).
The table of every error class, its exit status and its line is ``docs/errors.md``.

Imports nothing of cfmlir and nothing heavy at module level (the bottom of the API's layers;
``import cfmlir`` stays cheap: torch is imported by the device and dtype checks only).
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


def shown(value) -> str:
    """``value`` as a message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def described(value) -> str:
    """``value``'s type and :func:`shown` value: ``str 'deeppoly'``."""
    return f"{type(value).__name__} {shown(value)}"


def is_number(value) -> bool:
    """A real number (int or float; numpy scalars too), not a bool."""
    return isinstance(value, Real) and not isinstance(value, bool)


def check_bool(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(f"{name} must be True or False, got {shown(value)}")
    return value


def check_callable(value, name: str):
    if value is not None and not callable(value):
        raise ArgumentError(f"{name} must be a function or None, got {described(value)}")
    return value


def check_path(value, name: str) -> str:
    """A file name (``str`` or ``os.PathLike``), not empty."""
    if not isinstance(value, (str, os.PathLike)):
        raise ArgumentError(f"{name} must be a file name (str or pathlib.Path), got {described(value)}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise ArgumentError(f"{name} must be a file name, got {shown(value)}")
    return text


def check_choice(value, name: str, choices) -> str:
    """``value`` (case as given, or upper case for layouts) among ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ArgumentError(f"{name} must be one of {', '.join(map(str, choices))}, got {shown(value)}")
    return value


def check_choice_type(value, name: str) -> str:
    """A name (``str``) for a choice among names."""
    if not isinstance(value, str):
        raise ArgumentError(f"{name} must be a name (str), got {described(value)}")
    return value


def check_positive_int(value, name: str) -> int:
    """An ``int`` > 0 (a numeric string is refused in the API: ``n="3"``; ``cf-run`` parses its flags
    before calling this)."""
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise ArgumentError(f"{name} must be a positive integer, got {described(value)}")
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
        raise ArgumentError(f"{name} must be a number, got {described(value)}")
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
        got = f"'{value}'" if isinstance(value, str) else shown(value)
        raise ArgumentError(f"{name} must be a positive number of seconds, at most {MAX_TIMEOUT_S:.0f}, got {got}")
    return t


def check_device(value, name: str = "device") -> str:
    """A torch device the compiled engine can use here: ``cpu``, or ``cuda``/``cuda:N`` when torch sees
    that GPU.  Returns its canonical text."""
    if isinstance(value, str) and value == "cpu":  # the default: no torch import (cf-run's start-up)
        return value
    import torch

    if not isinstance(value, (str, torch.device)):
        raise ArgumentError(f"{name} must be {DEVICES} (a str or torch.device), got {described(value)}")
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
    raise ArgumentError(f"{name} must be one of {', '.join(DTYPES)}, got {shown(value)}")


def check_widen(value, name: str = "widen"):
    if not any(value is v or (isinstance(value, str) and value == v) for v in WIDEN_VALUES):
        raise ArgumentError(f"{name} must be None, True, False, 'auto', 'on' or 'off', got {shown(value)}")
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
                        f"'0.5,0.5,0.5', got {described(value)}")


def short_data_note(path, asked: int, got: int) -> str | None:
    """The warning when ``--n``/``n`` asks for more rows than the data file has (None when it has them)."""
    if got >= asked:
        return None
    return f"{path} has {got} row(s), fewer than the {asked} asked for: certifying those {got}"


def check_kind(value, kinds, name: str, maker: str):
    """``value`` is an instance of ``kinds``; else an :class:`ArgumentError` saying which function makes one
    (``maker``, e.g. ``cfmlir.compile``), with the call to make when a file name or name was given."""
    if isinstance(value, kinds):
        return value
    hint = f": call {maker}({os.fspath(value)!r}) first" if isinstance(value, (str, os.PathLike)) else ""
    raise ArgumentError(f"{name} must be what {maker} returns, got {described(value)}{hint}")
