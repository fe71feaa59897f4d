"""Plan once, run many on the CPU: a certification's torch operations recorded once, replayed per batch.

The planned engine makes the same operations on every call for a given certifier, network and batch
shape, and never reads a value back (no host syncs) -- the premise of the CUDA graphs of
:mod:`cfruntime.flow.graphs`.  On the CPU there is no graph to capture, but most of a small batch's
time is Python: the rules, the layouts and the widening decide, per operation, what the dispatcher
then runs in microseconds (mnist 6x100 CROWN-IBP, one image: ~560 operations, ~6 ms, ~2 ms of them
torch's).  :class:`Tape` records the operations of one run at the dispatcher (a
``TorchDispatchMode``: every ``aten`` call, its operands and results) and turns them into one
straight-line Python function of the run's inputs (:func:`compile_tape`): replaying it runs the
same kernels on the same operands in the same order -- bit for bit the eager run's results -- with
none of the deciding.

What a replay may not change, the recording refuses (:class:`NotReplayable`, the caller stays eager):

* a *host sync* (``_local_scalar_dense``, ``is_nonzero``, ``equal``) or an operation whose result is
  not a tensor: a value read back may steer the Python, and the tape would keep one run's choice;
* every tensor an operation reads is an input of the run (the boxes, the batched layers' weights),
  made by an earlier operation of the tape, or a *constant*: made before the recording (the
  network's parameters and what the engine keeps of them, the same objects at replay; a tensor made
  from Python data, ``torch.tensor(0.5)``, which no operation makes), and no operation writes to a
  constant's storage (in place or ``out=``): the next replay would read the written value.

Algorithm (:func:`compile_tape`): slots ``i<k>`` (inputs), ``t<n>`` (the ``n``-th result) and ``C[j]``
(constants and literal operands) name every operand; each recorded call becomes one line ``t7 =
F[3](t5, C[2])`` of a generated function, which returns the slots of the run's results::

    tape = Tape([lo, hi])
    with tape:
        lower, upper = run(lo, hi)
    replay = compile_tape(tape, (lower, upper))
    replay(lo2, hi2)      # the same operations on other boxes of the same shape

:mod:`cfruntime.flow.graphs` decides when a recording pays (a key seen a few times) and checks the
first replay against an eager run before trusting it.
"""

from __future__ import annotations

import math
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

#: operations that read a value back to the host (their result may steer the Python)
_SYNCS = frozenset({torch.ops.aten._local_scalar_dense.default, torch.ops.aten.is_nonzero.default,
                    torch.ops.aten.equal.default})


_DETACH = torch.ops.aten.detach.default


class NotReplayable(RuntimeError):
    """The recorded run read a value back or made a result that is not a tensor."""


class _Slot:
    """An operand of a recorded call: ``i<k>`` an input, ``t<n>`` a result, ``C[j]`` a constant."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class Tape(TorchDispatchMode):
    """Records every dispatched operation of the code run inside it (``with tape: ...``)."""

    def __init__(self, inputs):
        super().__init__()
        self.slots: dict[int, _Slot] = {id(t): _Slot(f"i{k}") for k, t in enumerate(inputs)}
        self.n_inputs = len(inputs)
        # inputs and constants stay alive (their ids are never reused); a result's slot is forgotten when
        # the tensor dies (a later tensor may get its id), so the recording holds what the eager run holds
        self.alive: list = list(inputs)
        self.constants: list = []
        self.constant_storages: set[int] = set()  # a write to one would change the constant for every replay
        self.calls: list[tuple] = []  # (function, encoded args, encoded kwargs, result slots or None)
        self._results = 0

    def _encode(self, x):
        if isinstance(x, torch.Tensor):
            slot = self.slots.get(id(x))
            if slot is None:  # made before the recording: a constant (the same object at replay)
                self.constants.append(x)
                self.constant_storages.add(x.untyped_storage().data_ptr())
                slot = self.slots[id(x)] = _Slot(f"C[{len(self.constants) - 1}]")
                self.alive.append(x)
            return slot
        if isinstance(x, (list, tuple)):
            return type(x)(self._encode(v) for v in x)
        if isinstance(x, dict):
            return {k: self._encode(v) for k, v in x.items()}
        return self._constant(x)

    def _name(self, t: torch.Tensor, slot: _Slot) -> None:
        """``t`` is ``slot`` from now until it dies."""
        key = id(t)
        self.slots[key] = slot
        slots = self.slots

        def forget(_, key=key, slot=slot):
            if slots.get(key) is slot:
                del slots[key]

        weakref.finalize(t, forget, None)

    def _constant(self, value):
        if value is None or type(value) in (bool, int) or type(value) is float and math.isfinite(value):
            return value  # a literal of the generated line
        self.constants.append(value)
        return _Slot(f"C[{len(self.constants) - 1}]")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SYNCS:
            raise NotReplayable(f"the run reads a value back ({func})")
        if func is _DETACH and isinstance(args[0], torch.Tensor):
            # an alias without autograd: the operand itself at replay (no replay records gradients).
            # (torch's factories detach what they return when the mode still holds it: Tape does.)
            out = func(*args, **kwargs)
            self._name(out, self._encode(args[0]))
            return out
        enc_args, enc_kwargs = self._encode(args), self._encode(kwargs)
        for written in _written(func, args, kwargs):
            if written.untyped_storage().data_ptr() in self.constant_storages:
                raise NotReplayable(f"{func} writes to a tensor made before the recording")
        out = func(*args, **kwargs)
        single = isinstance(out, torch.Tensor)
        if not (single or out is None or isinstance(out, (tuple, list))
                and all(isinstance(o, torch.Tensor) for o in out)):
            raise NotReplayable(f"{func} returns {type(out).__name__}, not tensors")
        leaves, _ = tree_flatten(out)
        names = []
        for leaf in leaves:
            if not isinstance(leaf, torch.Tensor):
                raise NotReplayable(f"{func} returns {type(leaf).__name__}, not a tensor")
            slot = _Slot(f"t{self._results}")
            self._results += 1
            self._name(leaf, slot)
            names.append(slot)
        self.calls.append((func, enc_args, enc_kwargs, names, single))
        return out


def _written(func, args, kwargs):
    """The tensors ``func`` writes to (in-place and ``out=`` operands, from its schema)."""
    for k, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            v = args[k] if k < len(args) else kwargs.get(a.name)
            if isinstance(v, torch.Tensor):
                yield v


def _source(x) -> str:
    if isinstance(x, _Slot):
        return x.name
    if x is None or type(x) in (bool, int, float):
        return repr(x)  # a literal (:meth:`Tape._constant`; repr round-trips a finite float exactly)
    if isinstance(x, list):
        return "[" + ", ".join(_source(v) for v in x) + "]"
    if isinstance(x, tuple):
        return "(" + "".join(_source(v) + ", " for v in x) + ")"
    raise TypeError(f"cannot name operand {x!r}")


def _slots_in(x, into: list) -> list:
    if isinstance(x, _Slot):
        into.append(x.name)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _slots_in(v, into)
    elif isinstance(x, dict):
        for v in x.values():
            _slots_in(v, into)
    return into


def compile_tape(tape: Tape, results):
    """The straight-line function ``replay(*inputs)`` of ``tape`` returning the slots of ``results``
    (tensors of the recorded run); each result slot is dropped after its last use (as the eager run
    frees its temporaries: the allocator reuses their memory); the recorded intermediates are released."""
    outs = []
    for r in results:
        slot = tape.slots.get(id(r))
        if slot is None or slot.name.startswith("C["):
            raise NotReplayable("a result of the run was not made by its operations")
        outs.append(slot.name)
    last: dict[str, int] = {}  # a result slot's last reading (or making) call
    for k, (_, args, kwargs, names, _) in enumerate(tape.calls):
        used = [n for n in _slots_in((args, kwargs), []) if n.startswith("t")]
        for n in used + [s.name for s in names]:
            last[n] = k
    drop: dict[int, list[str]] = {}
    for n, k in last.items():
        if n not in outs:
            drop.setdefault(k, []).append(n)
    lines = ["def replay(" + "".join(f"i{k}, " for k in range(tape.n_inputs)) + "):"]
    functions = []
    for k, (func, args, kwargs, names, single) in enumerate(tape.calls):
        functions.append(func)
        operands = [_source(a) for a in args] + [f"{key}={_source(v)}" for key, v in kwargs.items()]
        call = f"F[{len(functions) - 1}](" + ", ".join(operands) + ")"
        if single:
            lines.append(f"    {names[0].name} = {call}")
        elif names:
            lines.append("    " + "".join(s.name + ", " for s in names) + f"= {call}")
        else:
            lines.append(f"    {call}")
        if k in drop:
            lines.append("    del " + ", ".join(sorted(drop[k])))
    lines.append("    return (" + "".join(o + ", " for o in outs) + ")")
    scope = {"F": functions, "C": tape.constants}
    exec(compile("\n".join(lines), "<cfmlir tape>", "exec"), scope)  # noqa: S102 - our own generated code
    tape.alive.clear()
    tape.calls.clear()
    return scope["replay"]
