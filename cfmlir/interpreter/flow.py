"""Running a certifier's flow over a network, neuron by neuron.

* **Bindings** per rule: ``Affine``/``Maxpool``/``Minpool``/``Avgpool``: ``prev`` = the list of the
  predecessor layer's neurons (for ``Maxpool``: the neurons of the neuron's pooling window, padding
  left out -- the whole layer would make a max-pool lower bound unsound); unary operators (``Relu``,
  ``Sigmoid``, ``Tanh``): ``prev`` = the neuron at the same position of the predecessor layer;
  ``Neuron_add``/``Neuron_mult`` (``add``/``mul`` layers): ``prev_0``, ``prev_1`` at the same position of each
  predecessor and ``prev = [prev_0, prev_1]``; always ``curr`` = the neuron, ``curr_list`` = its
  layer's neurons.  Layer kinds map to operators ``affine -> Affine``, ``relu -> Relu``,
  ``sigmoid -> Sigmoid``, ``tanh -> Tanh``, ``maxpool -> Maxpool``, ``add -> Neuron_add``; a layer
  whose operator has no rule is an error (``certifier 'deepz' has no rule for 'Maxpool' (layer 3 of
  net.onnx)``).
* **Metadata**: ``weight`` = the neuron's row of its affine layer's (dense, unrolled) weight matrix
  as a Float List aligned with ``prev``; ``bias``; ``layer`` = its layer index; ``last_layer`` = 1 in
  the final layer (the margin layer when a property is analysed), else 0; ``alpha`` = the layer's
  ``alpha`` (LeakyRelu's negative slope, Elu's scale), 0 for a layer without one.
* **Parameters** (``param a for Op in [lo, hi] init e else d``): ``n[a]`` read while the rule of
  neuron ``s`` runs is ``a_s(n)``: the raw value of the pair ``(s, n)`` -- the initial value ``e``,
  unless the run is given values (``analyze(..., params=...)``: an object with ``value_at(name,
  sample, reader layer, reader position, layer, position)``, such as a compiled run's
  :class:`cfruntime.flow.param_store.ParamStore`) -- projected into ``[lo, hi]``; ``lo``, ``hi`` and
  ``e`` are evaluated per neuron ``n`` with the bindings of ``n``'s own rule; on a neuron of another
  operator the read is ``d`` (an error without one).
* **Flow** ``flow(direction, priority, stop, T)``: the input layer is initialised from the property
  (:mod:`cfmlir.interpreter.input_shape`); every other neuron is then computed by T's rule for its
  layer, in increasing ``priority(n)`` (ties: by neuron index, i.e. topological order).  For the
  shipped certifiers (``priority = n[layer]``) this is layer by layer.  A rule body -- conditional
  ones included -- is evaluated per neuron and its values (converted to the member types) are stored
  as the neuron's shape.  The flow's ``stop`` function is evaluated per neuron but **does not cut the
  flow**: certification needs the output layer, and the shipped listings use both ``true`` (IBP,
  DeepZ) and ``false`` (DeepPoly) while every one of them analyses every layer.  Only ``forward``
  flows are supported; several flows run one after the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from cfmlir.dialects import cf_type_lattice as T
from cfmlir.interpreter import values as V
from cfmlir.interpreter.errors import InterpreterError
from cfmlir.interpreter.callers import unary_caller
from cfmlir.interpreter.evaluator import RULE_SLOTS, CompiledFunc, ExprCompiler, converter
from cfmlir.interpreter.input_shape import Roles, input_initialisers, member_roles
from cfmlir.typing.checker import CheckedProgram
from cfruntime import contract

KIND_TO_OP = contract.OPERATOR_OF_KIND


class NetView:
    """Per-neuron view of a :class:`cfruntime.network.Network` (global neuron numbering).

    ``sample`` selects the sample of per-sample (batched margin) layers.
    """

    def __init__(self, net, sample: int = 0):
        self.net = net
        self.sample = sample
        self.layers = list(net.layers)
        self.num_neurons = net.num_neurons
        self.layer_of: list[int] = [0] * self.num_neurons
        self.pos: list[int] = [0] * self.num_neurons
        last = len(self.layers) - 1
        self.last_layer: list[int] = [0] * self.num_neurons
        self.neurons: list[list[V.Neuron]] = []
        for layer in self.layers:
            ns = [V.Neuron(g) for g in range(layer.offset, layer.offset + layer.size)]
            self.neurons.append(ns)
            for p, g in enumerate(range(layer.offset, layer.offset + layer.size)):
                self.layer_of[g] = layer.index
                self.pos[g] = p
                if layer.index == last:
                    self.last_layer[g] = 1
        self._w: dict[int, np.ndarray] = {}
        self._b: dict[int, list[float]] = {}
        self._rows: dict[int, list[float]] = {}
        self._windows: dict[int, list[list[V.Neuron]]] = {}

    @property
    def source(self) -> str:
        return Path(str(getattr(self.net, "source", "<network>"))).name

    def _layer_weight(self, li: int) -> np.ndarray:
        w = self._w.get(li)
        if w is None:
            layer = self.layers[li]
            wt = layer.weight_matrix()
            if wt.dim() == 3:
                wt = wt[self.sample]
            w = self._w[li] = wt.detach().to("cpu").double().numpy()
        return w

    def weight_of(self, n: int) -> list[float]:
        row = self._rows.get(n)
        if row is None:
            li = self.layer_of[n]
            if self.layers[li].kind != "affine":
                raise InterpreterError(f"neuron {n} (layer {li}, {self.layers[li].kind}) has no weight")
            row = self._rows[n] = self._layer_weight(li)[self.pos[n]].tolist()
        return row

    def bias_of(self, n: int) -> float:
        li = self.layer_of[n]
        b = self._b.get(li)
        if b is None:
            layer = self.layers[li]
            if layer.kind != "affine":
                raise InterpreterError(f"neuron {n} (layer {li}, {layer.kind}) has no bias")
            bt = layer.bias
            if bt.dim() == 2:
                bt = bt[self.sample]
            b = self._b[li] = bt.detach().to("cpu").double().reshape(-1).tolist()
        return b[self.pos[n]]

    def alpha_of(self, n: int) -> float:
        """The ``alpha`` of ``n``'s layer (LeakyRelu's slope, Elu's scale), 0 for a layer without one."""
        return float(getattr(self.layers[self.layer_of[n]], "alpha", None) or 0.0)

    def window(self, li: int, p: int) -> list[V.Neuron]:
        ws = self._windows.get(li)
        if ws is None:
            layer = self.layers[li]
            pred = self.layers[layer.preds[0]]
            im = layer.maxpool.index_map.tolist()
            ws = self._windows[li] = [[V.Neuron(pred.offset + j) for j in row if j >= 0] for row in im]
        return ws[p]

    def bindings(self, li: int) -> list[tuple]:
        """The locals tuple ``(curr, prev, prev_0, prev_1, curr_list)`` of every neuron of layer ``li``."""
        layer = self.layers[li]
        curr_list = self.neurons[li]
        preds = [self.neurons[p] for p in layer.preds]
        k = layer.kind
        out = []
        for p, n in enumerate(curr_list):
            if k == "affine":
                out.append((n, preds[0], None, None, curr_list))
            elif k == "maxpool":
                out.append((n, self.window(li, p), None, None, curr_list))
            elif k in contract.BINARY_KINDS:
                a, b = preds[0][p], preds[1][p]
                out.append((n, [a, b], a, b, curr_list))
            else:
                out.append((n, preds[0][p], None, None, curr_list))
        return out


class Runtime:
    """Mutable state the compiled closures read: the shape store, metadata, the noise counter."""

    def __init__(self, member_order: Sequence[str]):
        self.member_order = list(member_order)
        self.store: dict[str, list] = {m: [] for m in member_order}
        self.cse: dict = {}
        self.memo: dict = {}
        self.view: NetView | None = None
        self.layer_of: list[int] = []
        self.last_layer: list[int] = []
        self.num_neurons = 0
        self._noise = 0
        #: the neuron whose rule is running (the reader of a parameter)
        self.reader: int = -1
        #: parameter name -> (default, {operator: (lo, hi, init) closures}); set by CompiledProgram
        self.param_specs: dict = {}
        #: ``(name, reader, neuron, init) -> raw value``, or None for the initial values
        self.param_source = None
        self._param_domains: dict = {}
        self._bindings: dict = {}

    def reset(self, view: NetView) -> None:
        self.view = view
        self.num_neurons = view.num_neurons
        self.layer_of = view.layer_of
        self.last_layer = view.last_layer
        for m in self.member_order:
            self.store[m] = [None] * view.num_neurons
        self._noise = 0
        self.cse = {}
        self.memo = {}
        self.reader = -1
        self._param_domains = {}
        self._bindings = {}

    def param(self, name: str, n: int, loc) -> float:
        """``n[name]`` for a parameter, read by the rule of ``self.reader`` (see the module docstring)."""
        default, domains = self.param_specs[name]
        li = self.layer_of[n]
        op = KIND_TO_OP.get(self.view.layers[li].kind)
        fns = domains.get(op)
        if fns is None:
            if default is None:
                raise InterpreterError(f"{loc}: parameter '{name}' has no value on neuron {n} (layer {li}, "
                                       f"{self.view.layers[li].kind}): it is declared for {', '.join(domains)} and has no 'else' value")
            return default
        dom = self._param_domains.get((name, n))
        if dom is None:
            binds = self._bindings.get(li)
            if binds is None:
                binds = self._bindings[li] = self.view.bindings(li)
            a = binds[self.view.pos[n]]
            dom = self._param_domains[(name, n)] = tuple(float(f(a)) for f in fns)
        lo, hi, init = dom
        raw = init if self.param_source is None else float(self.param_source(name, self.reader, n, init))
        return min(max(raw, lo), hi)

    def fresh_noise(self) -> V.Noise:
        self._noise += 1
        return V.Noise(self._noise - 1)

    @property
    def noise_count(self) -> int:
        return self._noise

    def bias_of(self, n: int) -> float:
        return self.view.bias_of(n)

    def weight_of(self, n: int) -> list[float]:
        return self.view.weight_of(n)

    def alpha_of(self, n: int) -> float:
        return self.view.alpha_of(n)

    def unset_member(self, n: int, m: str, loc) -> None:
        li = self.layer_of[n]
        raise InterpreterError(
            f"{loc}: member '{m}' of neuron {n} (layer {li}) is read before the flow computed it")


class CompiledProgram:
    """A type-checked certifier compiled for the interpreter (network independent)."""

    def __init__(self, checked: CheckedProgram, name: str | None = None):
        self.checked = checked
        self.file = checked.program.file
        self.name = name or Path(self.file).stem
        self.members = dict(checked.members)
        self.member_order = list(checked.member_order)
        self.member_convs = [converter(self.members[m]) for m in self.member_order]
        self.roles: Roles = member_roles(checked)
        self.rt = Runtime(self.member_order)
        self.funcs: dict[str, CompiledFunc] = {n: CompiledFunc(d, ft) for n, (d, ft) in checked.funcs.items()}
        comp = ExprCompiler(self.rt, self.funcs, self.members, checked.params)
        # Purity of a function depends on the functions it names, which are declared before it.
        for n, (d, _ft) in checked.funcs.items():
            comp.compile_function(self.funcs[n])
        self.rt.param_specs = {
            name: (d.default, {op: tuple(comp.compile(e, dict(RULE_SLOTS), None) for e in (d.lo, d.hi, d.init))
                               for op in d.ops})
            for name, d in checked.params.items()}
        self.rules: dict[str, dict[str, Any]] = {}
        for tname, tdecl in checked.transformers.items():
            self.rules[tname] = {r.op: comp.compile_rule(r.body) for r in tdecl.rules}
        self.flows = list(checked.program.flows)
        if not self.flows:
            raise InterpreterError("the certifier has no 'flow' declaration; nothing to run", file=self.file)
        for fl in self.flows:
            if fl.direction != "forward":
                raise InterpreterError(f"{fl.loc}: only forward flows are supported by the interpreter")
        self.input_inits = input_initialisers(self.roles, self.file)
        self.lower_member = self.roles.float_member(contract.LOWER)
        self.upper_member = self.roles.float_member("upper")

    def check_network(self, view: NetView) -> None:
        """Every layer kind must have a rule in every flow's transformer."""
        for fl in self.flows:
            rules = self.rules[fl.transformer]
            for layer in view.layers[1:]:
                op = KIND_TO_OP.get(layer.kind)
                if op is None or op not in rules:
                    raise InterpreterError(
                        f"certifier '{self.name}' has no rule for '{op or layer.kind}' (layer {layer.index} of {view.source})")

    def run(self, view: NetView, lo: Sequence[float], hi: Sequence[float], params=None) -> dict[str, list]:
        """Run the flow(s) on ``view`` with the input box ``[lo, hi]``; returns the shape store
        (member -> per-neuron values, global numbering).  ``params``: the raw parameter values,
        ``(name, reader, neuron, init) -> value`` (None: every parameter at its initial value)."""
        rt = self.rt
        self.check_network(view)
        rt.reset(view)
        rt.param_source = params
        inp = view.layers[0]
        if len(lo) != inp.size or len(hi) != inp.size:
            raise InterpreterError(f"input box has {len(lo)} values but the network input has {inp.size} neurons")
        for i in range(inp.size):
            l, u = float(lo[i]), float(hi[i])
            if not (l <= u):
                raise InterpreterError(f"input box is empty at position {i}: [{l}, {u}]")
            g = inp.offset + i
            for m, init in zip(self.member_order, self.input_inits):
                rt.store[m][g] = init(l, u, rt.fresh_noise)
        for fl in self.flows:
            self._run_flow(fl, view)
        return rt.store

    def _run_flow(self, fl, view: NetView) -> None:
        rt = self.rt
        rules = self.rules[fl.transformer]
        prio = unary_caller(V.FuncVal(self.funcs[fl.priority]))
        stop = unary_caller(V.FuncVal(self.funcs[fl.stop]))
        work = []
        binds: dict[int, list[tuple]] = {}
        for layer in view.layers[1:]:
            binds[layer.index] = view.bindings(layer.index)
            for p, n in enumerate(view.neurons[layer.index]):
                work.append((prio(n), int(n), layer.index, p))
        work.sort(key=lambda t: (t[0], t[1]))
        store = [rt.store[m] for m in self.member_order]
        convs = self.member_convs
        nmem = len(self.member_order)
        for _p, g, li, p in work:
            layer = view.layers[li]
            rule = rules[KIND_TO_OP[layer.kind]]
            a = binds[li][p]
            stop(a[0])  # evaluated, but does not cut the flow (see the module docstring)
            rt.cse = {}
            rt.reader = g
            try:
                val = rule(a)
            except InterpreterError:
                raise
            except (TypeError, ValueError, OverflowError, RecursionError, IndexError) as exc:
                raise InterpreterError(
                    f"certifier '{self.name}' failed on neuron {g} (layer {li}, {layer.kind}): {exc}") from exc
            if nmem == 1 or not isinstance(val, tuple):
                val = (val,)
            for s, c, v in zip(store, convs, val):
                s[g] = c(v) if c is not None else v
        rt.cse = {}

    def output_bounds(self, view: NetView) -> tuple[list[float], list[float]]:
        """Float lower/upper members of the last layer."""
        if self.lower_member is None or self.upper_member is None:
            raise InterpreterError(
                "the shape has no Float lower and upper bound members (curr[l] <= curr, curr[u] >= curr); "
                "cannot report bounds", file=self.file)
        last = view.layers[-1]
        lo = self.rt.store[self.lower_member][last.offset:last.offset + last.size]
        hi = self.rt.store[self.upper_member][last.offset:last.offset + last.size]
        return [float(x) for x in lo], [float(x) for x in hi]
