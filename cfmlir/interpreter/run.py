"""Public API of the reference interpreter (the semantic oracle).

::

    prog = load_certifier("deeppoly")                    # shipped name or path to a .cf file
    res = analyze(prog, network, lo, hi)                  # any network, one input box
    res.lower, res.upper                                  # Float bounds of the last layer
    res.layer_bounds()                                    # {layer: (lower list, upper list)}
    s = certify_sample(prog, network, lo, hi, label=3)    # local robustness of one sample
    s.margin_lb, s.margin_ub, s.certified                 # column j = bound on y_true - y_j

Everything runs in float64, neuron by neuron (see :mod:`cfmlir.interpreter.flow` for the flow,
:mod:`cfmlir.interpreter.traverse` for ``map``/``traverse``, :mod:`cfmlir.interpreter.evaluator` for
expressions and :mod:`cfmlir.interpreter.input_shape` for the input initialisation).

The output property is a final affine layer of margins: ``Network.with_margin_layer(C)`` with
``C[j] = e_true - e_j`` (the true label's row is 0, its bounds are reported as exactly 0), folded
into the network's last affine layer when there is one; the margin bounds are that layer's Float
lower/upper members, and the sample is certified iff every margin ``j != true`` has a lower bound
``> 0``.  For VNN-LIB properties (``cfmlir.certify`` on a ``VnnlibProperty``) the margin rows are the rows ``A`` of
the constraints ``A y <= b`` of every disjunct (the counterexample region); a disjunct is refuted
when some row has ``lower(A_r y) > b_r``, and the property is ``unsat`` when every disjunct of every
input box is refuted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from cfmlir.diagnostics import CfError, Loc
from cfmlir.interpreter.errors import InterpreterError
from cfmlir.interpreter.flow import CompiledProgram, NetView
from cfmlir.typing.checker import check
from cfmlir.syntax.parser import parse


def load_certifier(name_or_path: str | Path) -> CompiledProgram:
    """Parse, type-check and compile a shipped certifier (by name) or a ``.cf`` file.

    Raises :class:`~cfmlir.diagnostics.CfError` for bad sources, :class:`InterpreterError` if the
    name is neither a shipped certifier nor a readable file.
    """
    from cfmlir.certifiers import certifier_names, certifier_source

    s = str(name_or_path)
    if s in certifier_names():
        text, file = certifier_source(s)
        name = s
    else:
        p = Path(s)
        if not p.is_file():
            raise InterpreterError(
                f"unknown certifier '{s}': not a shipped certifier ({', '.join(certifier_names())}) nor a .cf file")
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CfError(Loc(str(p), 0, 0), f"cannot read file: {exc}") from None
        file, name = str(p), p.stem
    return compile_source(text, file, name)


def compile_source(text: str, file: str = "<input>", name: str | None = None) -> CompiledProgram:
    return CompiledProgram(check(parse(text, file)), name)


@dataclass
class Analysis:
    """The result of one flow run: the shape of every neuron."""

    program: CompiledProgram
    view: NetView
    store: dict[str, list]
    lower: list[float]
    upper: list[float]
    noise_symbols: int = 0

    def member(self, name: str, layer: int) -> list:
        lay = self.view.layers[layer]
        return self.store[name][lay.offset:lay.offset + lay.size]

    def layer_bounds(self) -> dict[int, tuple[list[float], list[float]]]:
        lm, um = self.program.lower_member, self.program.upper_member
        return {lay.index: (list(map(float, self.member(lm, lay.index))), list(map(float, self.member(um, lay.index))))
                for lay in self.view.layers}


def analyze(prog: CompiledProgram, network, lo: Sequence[float], hi: Sequence[float], sample: int = 0,
            params=None) -> Analysis:
    """Run ``prog`` on ``network`` for the input box ``[lo, hi]`` (flattened input order).  ``params``:
    the raw values of the certifier's parameters -- an object with ``value_at(name, sample, reader
    layer, reader position, layer, position)`` (a compiled run's
    :class:`~cfruntime.flow.param_store.ParamStore`: the interpreter then uses the values that run
    used) -- or None for their initial values."""
    view = NetView(network, sample)
    lo = _flat(lo)
    hi = _flat(hi)
    source = None
    if params is not None:
        def source(name, reader, n, init, _p=params, _v=view):
            return _p.value_at(name, sample, _v.layer_of[reader], _v.pos[reader], _v.layer_of[n], _v.pos[n])
    store = prog.run(view, lo, hi, source)
    lower, upper = prog.output_bounds(view)
    # Snapshot: the runtime's store is reused by the next run of the same program.
    snap = {m: list(v) for m, v in store.items()}
    return Analysis(prog, view, snap, lower, upper, prog.rt.noise_count)


def _flat(x) -> list[float]:
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu").double().reshape(-1).tolist()
    return np.asarray(x, dtype=np.float64).reshape(-1).tolist()


def margin_matrix(label: int, num_classes: int) -> torch.Tensor:
    """``C [K, K]``: row ``j`` = ``e_label - e_j`` (row ``label`` is zero)."""
    eye = torch.eye(num_classes, dtype=torch.float64)
    return eye[label].unsqueeze(0) - eye


@dataclass
class SampleResult:
    label: int
    margin_lb: list[float]
    margin_ub: list[float]
    certified: bool
    analysis: Analysis | None = field(default=None, repr=False)


def certify_sample(prog: CompiledProgram, network, lo, hi, label: int, keep_analysis: bool = False) -> SampleResult:
    """Local robustness of one sample: bounds on the margins ``y_label - y_j`` over ``[lo, hi]``."""
    k = network.output_size
    if not 0 <= int(label) < k:
        raise InterpreterError(f"label {label} out of range for a network with {k} outputs")
    C = margin_matrix(int(label), k)
    mnet = network.with_margin_layer(C)
    res = analyze(prog, mnet, lo, hi)
    lb, ub = list(res.lower), list(res.upper)
    lb[label] = 0.0
    ub[label] = 0.0
    certified = all(lb[j] > 0 for j in range(k) if j != label)
    return SampleResult(int(label), lb, ub, certified, res if keep_analysis else None)
