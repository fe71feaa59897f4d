"""Run a compiled certifier over a network for a batch of input boxes.

Algorithm: the input layer's members are initialised from the box by their *roles* (derived by the
compiler from the shape constraints: a Float member with ``curr[m] <= curr`` is the lower bound, a
PolyExp member with ``curr[M] <= curr`` the constant lower PolyExp, a SymExp member with
``curr In curr[Z]`` the zonotope ``centre + radius * eps_i`` with one noise symbol per input neuron).
Then every other layer, in topological order, runs the rule of its operator (``affine`` -> ``Affine``,
``relu`` -> ``Relu``, ...) for the whole batch and stores the results.  Noise symbols that a rule may
create are allocated before the rule runs, so every SymExp in it has the same width.  The bounds of the
last layer (the robustness margins, when the network carries them) are the result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
import types
from dataclasses import dataclass, field

import torch

from cfruntime import contract
from cfruntime.errors import RuleError, UserError
from cfruntime import tensor as gb
from cfruntime.flow import finite
from cfruntime.flow import ops as rt
from cfruntime.flow import widening
from cfruntime.flow.context import LayerContext
from cfruntime.flow.deferred import deferred_layers
from cfruntime.flow.representation import Representation
from cfruntime.flow.specialise import rule_without
from cfruntime.flow.store import Pending, ShapeStore
from cfruntime.flow.straight_through import carry_values
from cfruntime.flow.values import Affine
from cfruntime.network.tensors import fresh_views, requires_grad

OPERATOR_OF_KIND = contract.OPERATOR_OF_KIND


class EngineError(UserError, RuntimeError):
    """A certifier/network combination the compiled engine cannot run (one-line message; a user error)."""


class EngineOutOfMemory(EngineError):
    """A rule's tensors did not fit in memory: the layer, its kind, and the allocation that failed
    (bytes, when the allocator said).  :func:`cfruntime.flow.batching.in_batches` retries with
    smaller batches."""

    def __init__(self, layer: int, kind: str, batch: int, nbytes: int | None, device):
        self.layer, self.kind, self.batch, self.nbytes, self.device = layer, kind, batch, nbytes, str(device)
        need = f"{nbytes / 2 ** 30:.2f} GiB more" if nbytes is not None else "more memory than is free"
        super().__init__(f"out of {self.device} memory at layer {layer} ({kind}): it needed {need} "
                         f"for a batch of {batch}")


class EnginePastDeadline(EngineError):
    """A layer computed a block of its neurons at a time (it did not fit in memory at once) would end after
    the caller's deadline (``blocks=<deadline>``), predicted from the blocks done: the pass stops there."""

    def __init__(self, layer: int, kind: str, done: int, n: int, predicted_s: float, left_s: float):
        self.layer, self.kind, self.predicted_s, self.left_s = layer, kind, predicted_s, left_s
        super().__init__(f"layer {layer} ({kind}) did not fit in memory at once and, a block of its neurons at a "
                         f"time, would take {predicted_s:.0f} s more after {done} of {n} neurons, with "
                         f"{max(left_s, 0.0):.0f} s left before the time limit")


_ALLOC_BYTES = re.compile(r"allocate (\d+) bytes|Tried to allocate ([\d.]+) ([KMGT]i?B)")
_UNITS = {"KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation failure (MemoryError, torch OOM, or the allocator's RuntimeError)."""
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return True
    msg = str(exc)
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in msg or "out of memory" in msg)


def out_of_memory_at(fn, layer: int, kind: str, batch: int, device):
    """``fn()``, with an allocation failure raised as :class:`EngineOutOfMemory` at ``layer``
    (outside the handler, so the failed attempt's frames and tensors can be freed)."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - only allocation failures are converted
        if not is_out_of_memory(exc):
            raise
        nbytes = _requested_bytes(exc)
    raise EngineOutOfMemory(layer, kind, batch, nbytes, device)


def _requested_bytes(exc: BaseException) -> int | None:
    m = _ALLOC_BYTES.search(str(exc))
    if m is None:
        return None
    if m.group(1):
        return int(m.group(1))
    return int(float(m.group(2)) * _UNITS.get(m.group(3), 1))


@dataclass
class CompiledCertifier:
    """An emitted Python module, loaded."""

    name: str
    flow: dict
    rules: dict
    noise: dict
    source: str

    layer_granular: bool = False
    local_members: tuple[str, ...] = ()
    #: operator -> (line, column) of its rule in the certifier's source, and that source's file name
    rule_locations: dict = field(default_factory=dict)
    file: str | None = None
    exact: dict = None  # {operator: {member: tag}} (contract.MODULE_EXACT): values computed without rounding
    #: the optimisable parameters (``PARAMS`` of the module; empty for a certifier without any)
    params: dict = field(default_factory=dict)

    @classmethod
    def from_source(cls, name: str, source: str, file: str | None = None) -> "CompiledCertifier":
        """Load an emitted module; ``file`` is the certifier's source file, for the positions of errors."""
        module = types.ModuleType(f"cfmlir_compiled_{name}")
        exec(compile(source, f"<compiled {name}>", "exec"), module.__dict__)  # noqa: S102 - our own output
        space = module.__dict__
        return cls(name, space[contract.MODULE_FLOW], space[contract.MODULE_RULES], space.get(contract.MODULE_NOISE, {}),
                   source, space.get(contract.MODULE_LAYER_GRANULAR, False),
                   tuple(space.get(contract.MODULE_LOCAL_MEMBERS, ())),
                   dict(space.get(contract.MODULE_RULE_LOCATIONS, {})), file,
                   dict(space.get(contract.MODULE_EXACT, {})),
                   space.get(contract.MODULE_PARAMS, {}))

    def where(self, op: str, layer) -> str:
        """Where a rule failed: ``file:line:col: rule 'Relu' (layer 2, relu)`` (the certifier's name when its
        position is unknown)."""
        pos = self.rule_locations.get(op)
        at = f"{self.file or self.name + '.cf'}:{pos[0]}:{pos[1]}: " if pos else f"certifier '{self.name}': "
        return f"{at}rule '{op}' (layer {layer.index}, {layer.kind})"

    @property
    def members(self) -> list[tuple[str, str, str]]:
        return [tuple(m) if len(m) == 3 else (m[0], m[1], contract.NO_ROLE) for m in self.flow["members"]]

    def member_with_role(self, letter_set: str, role: str) -> str | None:
        return next((n for n, l, r in self.members if l in letter_set and r == role), None)


@dataclass
class EngineResult:
    lower: torch.Tensor  # [B, n_last]
    upper: torch.Tensor
    store: ShapeStore | None  # every layer's members (None for a replayed CUDA graph)
    finite: torch.Tensor | None = None  # 0-d: 0 when every stored Float member is finite (cfruntime.flow.finite)


def run_certifier(cert: CompiledCertifier, network, lb: torch.Tensor, ub: torch.Tensor, *,
                  sparse: bool = True, dtype: torch.dtype = torch.float64, device="cpu",
                  representation: str | None = None, graph: bool | None = None,
                  widen: bool | None = None, check_finite: bool = True, params=None,
                  bound_overrides: dict | None = None, bound_upper: bool = True,
                  blocks: bool | float = True) -> EngineResult:
    """Analyse ``network`` for the boxes ``[lb, ub]`` (``[B, input_size]``).

    ``representation`` (see :mod:`cfruntime.flow.representation`): ``planned``, ``gbscr`` or
    ``dense``; by default ``dense`` when ``sparse`` is false, else ``planned`` for certifiers whose
    traverses are all layer-granular and ``gbscr`` for the others.

    ``graph`` (default: on CUDA with planned tensors): replay the certification as a CUDA graph
    captured on the first call for this certifier, network and batch shape
    (:mod:`cfruntime.flow.graphs`); the result then carries the last layer's bounds only
    (``store`` is None).  ``graph=True`` on the CPU (planned tensors): the run's operations are
    recorded once the batch shape recurs and replayed from then on (:mod:`cfruntime.flow.tape`; bit
    for bit the eager results, checked on the first replay); callers that read only the last layer ask
    for it (:class:`cfmlir.engines.CompiledEngine`).

    g-BSCR runs with absent-zero semantics: a coefficient outside every block is an absent summand,
    as in ConstraintFlow, so blocks need not be scanned for inf/NaN before the sparse kernels.
    TensorFloat-32 is switched off for the run: on CUDA, cuDNN convolutions use it by default, and
    its 10-bit mantissa moves float32 bounds by ~1e-3 relative, far more than float32 rounding.

    ``widen`` (default: on for float32/float16/bfloat16, off for float64): make every stored bound
    hold for the real-valued network despite rounding -- the input box cast outward, every layer's
    bounds and expressions widened by a rigorous bound of the rounding errors they (and later
    concretisations and substitutions through them) incur (:mod:`cfruntime.flow.widening`).
    ``widen=False`` gives the raw low-precision bounds (for measuring the widening's cost);
    ``widen=True`` in float64 gives rigorous float64 bounds (off by default there: float64 bounds are
    compared bit for bit with the reference interpreter's, and their rounding, ~1e-13 relative, is
    far below float32's).

    A NaN or infinite value in any layer's Float members is a
    :class:`~cfruntime.flow.finite.NonFiniteBoundsError` naming the first such layer (one reduction and
    one host sync per call, :mod:`cfruntime.flow.finite`; ``check_finite=False``: the caller reads
    ``result.finite`` itself).

    Gradients: the bounds are differentiable (torch autograd) with respect to ``lb``, ``ub`` and every
    tensor of ``network`` (:mod:`cfruntime.network.tensors`) that has ``requires_grad``, whenever
    grad mode is on.  Such a run is eager (never a replayed CUDA graph, whose outputs carry no
    gradient) and derives its converted weights afresh (:func:`cfruntime.network.tensors.fresh_views`);
    a run that wants no gradient is exactly the forward-only run.  Widening (float32) stays on and
    sound: the returned bounds are the widened ones, and the widening terms (~1e-6 relative) are
    constants for the gradient (:mod:`cfruntime.flow.straight_through`).

    ``params`` (a :class:`cfruntime.flow.param_store.ParamStore`): the values of the certifier's
    optimisable parameters for this batch (made on first read from their initial values; default: a
    fresh store, i.e. every parameter at its initial value); with ``params.requires_grad`` the bounds
    are differentiable with respect to them too.  A run with parameters never replays a CUDA graph.

    ``bound_overrides`` (``{layer: BoundOverride}``, :mod:`cfruntime.flow.overrides`): per-row bounds that
    tighten (or replace) a layer's Float lower/upper members right after its rule, as a branch-and-bound
    search fixes a split neuron's sign or reuses a parent domain's bounds; never replayed as a CUDA graph.

    ``bound_upper=False`` (auto_LiRPA's option of that name): the last layer's Float upper member is
    reported as ``+inf``, trivially sound, and, without widening, not computed (its rule runs without
    it, :func:`cfruntime.flow.specialise.rule_without`: CROWN-IBP's upper back-substitution is half its
    work; the widening of the lower bound reads the upper one, so a widened run computes it); every
    other member and layer is as with ``True``, so the lower bounds are the same.  For a loss that reads only
    the lower bounds (certified training); never replayed as a CUDA graph.

    A layer whose rule does not fit in memory at once is computed a block of its neurons at a time
    (:func:`cfruntime.flow.row_subset.bounds_in_blocks`: the same bounds, back-substitution ``[B, block, W]``
    instead of ``[B, n, W]``) in a run without overrides, widening or gradients, for certifiers whose Float
    members are the bounds and whose expressions do not depend on the rows computed (DeepPoly,
    alpha_deeppoly, SkipPoly; not ReuseCert); only when no block fits (down to one neuron) is the run
    out of memory (:class:`EngineOutOfMemory`).  ``blocks=False``: out of memory at once; ``blocks=<a
    time.monotonic() deadline>``: blocks while the layer's end, predicted after each block from the time
    per neuron so far, is before the deadline, else :class:`EnginePastDeadline` (a caller with a deadline
    that would rather spend the time otherwise)."""
    if not bound_upper:
        graph = False
    if bound_overrides:
        from cfruntime.flow.overrides import check_overrides

        check_overrides(bound_overrides, network, lb.shape[0])
        graph = False
    grad = _wants_grad(network, lb, ub) or (params is not None and params.requires_grad and torch.is_grad_enabled())
    if grad:
        network = fresh_views(network)
        graph = False
    if widen is None:
        widen = widening.widened(dtype)
    if representation is None:
        representation = "dense" if not sparse else ("planned" if cert.layer_granular else "gbscr")
    device = torch.device(device)
    if graph is None:
        graph = device.type == "cuda" and representation == "planned" and not cert.params
    replayed = device.type == "cuda" or (device.type == "cpu" and representation == "planned")
    if graph and replayed and not cert.params:
        from cfruntime.flow.graphs import graphed_bounds

        b = lb.shape[0]
        dlb, dub = _box(lb.reshape(b, -1), ub.reshape(b, -1), dtype, device, widen)
        with _full_precision_float32():
            out = graphed_bounds(lambda *a, **kw: run_certifier(*a, widen=widen, check_finite=False, **kw), cert,
                                 network, dlb, dub, dtype, representation, widen)
        if out is not None:
            if check_finite and not finite.is_finite(out[2]):  # located by the eager engine (the graph keeps no store)
                return run_certifier(cert, network, lb, ub, sparse=sparse, dtype=dtype, device=device,
                                     representation=representation, graph=False, widen=widen)
            return EngineResult(out[0], out[1], None, out[2])
    with gb.absent_zero_semantics(), _full_precision_float32(), _default_dtype(dtype):
        res = _run(cert, network, lb, ub, representation, dtype, device, widen, grad, params,
                   bound_overrides or None, bound_upper, blocks)
    if check_finite and not finite.is_finite(res.finite):
        raise finite.locate(res.store, network, finite.float_members(cert.members), dtype)
    return res


def _widened(fn, values: dict, grad: bool, *args) -> dict:
    """``fn(values, *args)`` (a :class:`~cfruntime.flow.widening.Widening` step); when the run wants
    gradients, computed unrecorded and carrying the unwidened values' gradient
    (:mod:`cfruntime.flow.straight_through`)."""
    if not grad:
        return fn(values, *args)
    with torch.no_grad():
        new = fn(values, *args)
    return carry_values(new, values)


def _wants_grad(network, lb, ub) -> bool:
    """Whether this run must record an autograd graph: grad mode on and a tensor it reads asks for one."""
    return torch.is_grad_enabled() and (lb.requires_grad or ub.requires_grad or requires_grad(network))


def _box(lb, ub, dtype, device, widen: bool):
    """The boxes in ``dtype`` on ``device``: rounded outward when widening, else cast to nearest."""
    if widen:
        return widening.box_to_dtype(lb, ub, dtype, device)
    return lb.to(device=device, dtype=dtype), ub.to(device=device, dtype=dtype)


@contextlib.contextmanager
def _default_dtype(dtype: torch.dtype):
    """Numbers in rules (``0.0``) meet bool masks as the analysis dtype, not torch's default."""
    saved = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(saved)


@contextlib.contextmanager
def _full_precision_float32():
    """No TF32 in matrix products or cuDNN convolutions while the block runs (restored after)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _run(cert, network, lb, ub, representation, dtype, device, widen: bool = False, grad: bool = False,
         params=None, overrides=None, bound_upper: bool = True, blocks: bool | float = True) -> EngineResult:
    rep = Representation(representation, dtype, device)
    b = lb.shape[0]
    lb, ub = _box(*(v if v.dim() == 2 else v.reshape(b, -1) for v in (lb, ub)), dtype, rep.device, widen)  # (a view is an operation)
    box, bias_errors = (lb, ub), None
    if widen and widening.can_centre(network):
        # analysed in coordinates centred on the box (see cfruntime.flow.widening, section 0)
        network, lb, ub, bias_errors = widening.centre_input(network, lb, ub, dtype)
    layers = network.layers
    for layer in layers[1:]:
        op = OPERATOR_OF_KIND.get(layer.kind)
        if op is None or op not in cert.rules:
            raise EngineError(f"certifier '{cert.name}' has no rule for '{op or layer.kind}' (layer {layer.index})")
    lo_name = cert.member_with_role(contract.NUMBER_LETTERS, contract.LOWER)
    hi_name = cert.member_with_role(contract.NUMBER_LETTERS, contract.UPPER)
    if lo_name is None or hi_name is None:
        raise EngineError(f"certifier '{cert.name}' has no Float lower/upper bound members to report")
    members = cert.members
    store = ShapeStore(members, [l.size for l in layers], b, rep)
    if cert.params:
        from cfruntime.flow.param_store import ParamStore

        store.param_specs = cert.params
        store.params = params if params is not None else ParamStore(fixed=True)  # its values never change
        store.params.begin_run()
    n0 = layers[0].size
    has_sym = any(letter == "S" for _, letter, _ in members)
    sym = n0 if has_sym else 0
    wide = out_of_memory_at(lambda: widening.Widening(cert, network, rep, b, bias_errors), 0, "input", b,
                            rep.device) if widen else None
    inits = {}
    for name, letter, role in members:
        inits[name] = out_of_memory_at(lambda: _initial(letter, role, name, lb, ub, rep, cert.name), 0, "input", b, rep.device)
    if wide is not None:
        inits = out_of_memory_at(lambda: _widened(wide.input, inits, grad, n0), 0, "input", b, rep.device)
    for name, _, _ in members:
        store.put(0, name, inits[name])
    names = [n for n, _, _ in members]
    bound_pos = (names.index(lo_name), names.index(hi_name))
    if overrides is not None:
        overrides = {k: ov.cast(dtype, rep.device) for k, ov in overrides.items()}
    given = set()  # (layer, member) replaced by the caller's bounds: theirs, not checked (inf = not wanted)
    last = layers[-1].index
    freeable = [n for n, letter, _ in members if letter in "PS" and n in cert.local_members]
    last_reader = _last_readers(layers) if freeable else {}
    deferred = deferred_layers(cert, network, plain_run=rep.planned and not (grad or wide is not None or overrides or freeable))
    for layer in layers[1:]:
        op = OPERATOR_OF_KIND[layer.kind]
        new_sym = sym + cert.noise.get(op, 0) * layer.size
        ctx = LayerContext(network, layer, store, b, sym, new_sym)
        failed = None
        ov = overrides.get(layer.index) if overrides is not None else None
        no_upper = not bound_upper and layer.index == last and ov is None
        # the widening of the lower bound reads the rule's upper one: computed then, only reported +inf
        skip_upper = no_upper and wide is None
        try:
            if ov is not None and ov.rows is not None:  # the rule's bounds of some rows, the others given
                values = _row_values(cert, op, ctx, ov, bound_pos, members, wide is not None, layer)
            elif ov is not None and ov.replace:  # the rule without the Float bounds given, then those
                sides = [(pos, v) for pos, v, side in zip(bound_pos, (ov.lower, ov.upper), ("lower", "upper"))
                         if ov.replaces(side)]
                values = list(rule_without(cert, op, tuple(pos for pos, _ in sides))(rt, ctx))
                for pos, v in sides:
                    values[pos] = v
            elif layer.index in deferred:  # bounds no later rule may read: computed when read (flow.deferred)
                values = list(rule_without(cert, op, bound_pos)(rt, ctx))
                values[bound_pos[0]] = values[bound_pos[1]] = Pending(_bounds_later(
                    cert, op, network, layer, store, b, sym, new_sym, bound_pos, rep, _deadline(blocks)))
            elif skip_upper:  # the upper bound is not wanted: not computed, +inf (given below)
                values = list(rule_without(cert, op, (bound_pos[1],))(rt, ctx))
                values[bound_pos[1]] = float("inf")
            else:
                values = cert.rules[op](rt, ctx)
            mats = {name: v if isinstance(v, Pending) else _materialise(v, letter, b, layer.size, rep)
                    for (name, letter, _), v in zip(members, values)}
            if wide is not None:
                mats = _widened(lambda v, *a: wide.apply(layer, v, *a), mats, grad, sym, new_sym,
                                cert.noise.get(op, 0) >= 1)
                for k, name, value in wide.take_fixups():  # a predecessor's constants moved after all
                    store.replace(k, name, carry_values({name: value}, {name: store.get(k, name)})[name] if grad else value)
            if no_upper:  # +inf whatever the widening made of it
                mats[hi_name] = torch.full((b, layer.size), float("inf"), dtype=rep.dtype, device=rep.device)
                given.add((layer.index, hi_name))
            if ov is not None:
                mats[lo_name], mats[hi_name] = ov.apply(mats[lo_name], mats[hi_name])
                given.update((layer.index, name) for name, side in ((lo_name, "lower"), (hi_name, "upper"))
                             if ov.replaces(side))
            for name, _, _ in members:
                store.put(layer.index, name, mats[name])
        except RuleError as exc:  # the rule's fault, on every input: at the rule's position in the source
            raise exc.located(cert.where(op, layer)) from None
        except Exception as exc:  # an allocation failure becomes a located, retryable error
            if not is_out_of_memory(exc):
                raise
            failed = _requested_bytes(exc), True
        if failed is not None and blocks is not False and ov is None and wide is None and not grad and not no_upper:
            # the layer's bounds a block of its neurons at a time (cfruntime.flow.row_subset.bounds_in_blocks)
            del ctx
            failed = out_of_memory_at(lambda: _in_blocks(cert, op, network, layer, store, b, sym, new_sym, members,
                                                         bound_pos, rep, failed, _deadline(blocks)),
                                      layer.index, layer.kind, b, rep.device)
        if failed is not None:  # raised outside the handler: no frame (and no tensor) stays referenced
            del store
            raise EngineOutOfMemory(layer.index, layer.kind, b, failed[0], rep.device)
        sym = new_sym
        for k in last_reader.get(layer.index, ()):  # no later rule reads them: free the expressions
            store.release(k, freeable)
    lower = gb.to_dense(store.get(last, lo_name))
    upper = gb.to_dense(store.get(last, hi_name))
    if bias_errors is not None:  # the input layer's reported bounds: the box, not its centred version
        store.put(0, lo_name, box[0])
        store.put(0, hi_name, box[1])
    ok = finite.finite_flag(store, finite.float_members(members), b, given)
    return EngineResult(lower.expand(b, -1), upper.expand(b, -1), store, ok)


#: after a layer's rule did not fit in memory at once: its Float bounds computed for blocks of
#: ``ceil(n / blocks)`` neurons, ``blocks`` from the first value, times the factor after every block size
#: that did not fit either, down to one neuron a block
FIRST_BLOCKS, BLOCKS_FACTOR = 4, 4


def _deadline(blocks: bool | float) -> float | None:
    """The deadline in ``run_certifier``'s ``blocks`` (None: True or False)."""
    return None if isinstance(blocks, bool) else float(blocks)


def _in_blocks(cert, op: str, network, layer, store, b: int, sym: int, new_sym: int, members, bound_pos: tuple,
               rep: Representation, failed: tuple, deadline: float | None = None):
    """Store ``layer``'s members with its Float bounds computed a block of rows at a time
    (:func:`cfruntime.flow.row_subset.bounds_in_blocks`) after the whole layer did not fit (``failed``:
    ``(requested bytes, True)``): None, or an allocation failure like ``failed`` when no block size fits or
    blocks cannot help (a Float member other than the bounds; no bound computed on the rows alone; a
    PolyExp member that depends on the rows computed, as ReuseCert's back-substituted expressions).
    ``deadline`` (``time.monotonic()``): before each block after the first, the time the remaining rows
    would take at the rate of the rows done so far (at this block size) must end before it, else
    :class:`EnginePastDeadline`."""
    from cfruntime.flow.row_subset import bounds_in_blocks  # noqa: PLC0415 - only a layer too big at once needs it

    if not _floats_are_bounds(members, bound_pos):
        return failed
    n = layer.size

    pad = [False]  # whether the rule needs its traverses' results laid back into the layer's rows

    def run_rule(rows):
        ctx = LayerContext(network, layer, store, b, sym, new_sym)
        ctx.rows, ctx.pad_rows = rows, pad[0]
        return ctx, list(cert.rules[op](rt, ctx))

    def rule_on_rows(rows):
        try:
            ctx, values = run_rule(rows)
        except RuntimeError as exc:
            # a rule that combines a block's traverse with values of the whole layer (a product's
            # ``max(interval bound, back-substituted bound)``) fails on the shapes: again, padded
            # (row_subset.pad_rows), and so for the next blocks
            if pad[0] or is_out_of_memory(exc) or isinstance(exc, EngineError):
                raise
            pad[0] = True
            ctx, values = run_rule(rows)
        if not ctx.rows_traversed:  # no layer-granular traverse: blocks would save nothing
            return None
        return None if _row_dependent(members, values, n, padded=pad[0]) else values

    def timed(rule):  # rule_on_rows, refusing a block that the deadline leaves no time for
        started, done = time.monotonic(), [0]

        def run(rows):
            now = time.monotonic()
            if done[0]:
                predicted = (now - started) / done[0] * (n - done[0])
                if now + predicted > deadline:
                    raise EnginePastDeadline(layer.index, layer.kind, done[0], n, predicted, deadline - now)
            values = rule(rows)
            done[0] += rows.numel()
            return values

        return run

    blocks = FIRST_BLOCKS
    while True:
        size = -(-n // blocks)
        rule = rule_on_rows if deadline is None else timed(rule_on_rows)
        try:
            values = bounds_in_blocks(rule, n, size, bound_pos, b, rep.dtype, rep.device)
            break
        except Exception as exc:  # noqa: BLE001 - only allocation failures are retried
            if not is_out_of_memory(exc):
                raise
            failed = _requested_bytes(exc), True
        if size == 1:
            return failed
        blocks *= BLOCKS_FACTOR
    if values is None:
        return failed
    for (name, letter, _), v in zip(members, values):
        store.put(layer.index, name, _materialise(v, letter, b, n, rep))
    return None


def _row_values(cert, op: str, ctx, ov, bound_pos: tuple, members, widened: bool, layer) -> list:
    """The rule's values with its Float bounds computed for ``ov.rows`` only and written into the
    override's (:mod:`cfruntime.flow.row_subset`)."""
    from cfruntime.flow.row_subset import scatter  # noqa: PLC0415

    if widened or not _floats_are_bounds(members, bound_pos):
        raise EngineError(f"certifier '{cert.name}': bounds of some rows only (layer {layer.index}) need an unwidened run "
                          f"and Float members that are the bounds only")
    ctx.rows = ov.rows
    values = list(cert.rules[op](rt, ctx))
    ctx.rows = None
    for pos, given in zip(bound_pos, (ov.lower, ov.upper)):
        values[pos] = scatter(values[pos], given, ov.rows)
    name = _row_dependent(members, values, layer.size)
    if name is not None:
        raise EngineError(f"certifier '{cert.name}': member '{name}' of layer {layer.index} depends on the rows "
                          f"whose bounds are computed: bounds of some rows only are not supported")
    return values


def _bounds_later(cert, op: str, network, layer, store, b: int, sym: int, new_sym: int, bound_pos: tuple,
                  rep: Representation, deadline: float | None = None):
    """What computes ``layer``'s deferred Float bounds when they are first read (:mod:`cfruntime.flow.deferred`):
    its rule for the bounds alone, in the layer's own context, and stores them; a block of its neurons at a time
    when the whole layer does not fit (as :func:`_run` does)."""
    members = cert.members

    def compute() -> None:
        others = tuple(i for i in range(len(members)) if i not in bound_pos)
        try:
            values = list(rule_without(cert, op, others)(rt, LayerContext(network, layer, store, b, sym, new_sym)))
            for pos in bound_pos:
                name, letter, _ = members[pos]
                store.put(layer.index, name, _materialise(values[pos], letter, b, layer.size, rep))
            return
        except Exception as exc:  # an allocation failure: in blocks of neurons
            if not is_out_of_memory(exc):
                raise
            failed = _requested_bytes(exc), True
        failed = _in_blocks(cert, op, network, layer, store, b, sym, new_sym, members, bound_pos, rep, failed, deadline)
        if failed is not None:
            raise EngineOutOfMemory(layer.index, layer.kind, b, failed[0], rep.device)

    return compute


def _floats_are_bounds(members, bound_pos: tuple) -> bool:
    """Whether the certifier's Float members are its lower and upper bounds only (what a rule run on some
    rows can give per row)."""
    floats = [i for i, (_, letter, _) in enumerate(members) if letter in contract.NUMBER_LETTERS]
    return sorted(floats) == sorted(bound_pos)


def _row_dependent(members, values, n: int, padded: bool = False) -> str | None:
    """The first PolyExp/SymExp member whose value, computed on some rows of an ``n``-neuron layer, has those
    rows only (it depends on the rows, as a back-substituted expression does), else None; ``padded``: the
    traverses' results were laid into the whole layer with NaN (:func:`cfruntime.flow.row_subset.pad_rows`),
    so a member with NaN depends on the rows too."""
    for (name, letter, _), v in zip(members, values):
        if letter not in "PS":
            continue
        if getattr(getattr(v, "coeff", None), "shape", (0, n))[1] not in (1, n):
            return name
        if padded and any(_has_nan(t) for t in (getattr(v, "coeff", None), getattr(v, "const", None))):
            return name
    return None


def _has_nan(t) -> bool:
    """Whether a value has a NaN (its sum is NaN: a reduction, no copy of an expanded tensor; a sum of
    infinities of both signs counts too, and only refuses blocks)."""
    if t is None or isinstance(t, (int, float)):
        return False
    t = t if isinstance(t, torch.Tensor) else gb.to_dense(t)
    return bool(torch.isnan(t.sum()))


def _last_readers(layers) -> dict[int, list[int]]:
    """``{j: layers whose last successor is j}`` (the last layer is kept: its bounds are the result)."""
    last: dict[int, int] = {}
    for layer in layers[1:]:
        for k in layer.preds:
            last[k] = max(last.get(k, layer.index), layer.index)
    out: dict[int, list[int]] = {}
    for k, j in last.items():
        if k != layers[-1].index:
            out.setdefault(j, []).append(k)
    return out


def _initial(letter: str, role: str, name: str, lb, ub, rep: Representation, cert: str):
    if letter in contract.NUMBER_LETTERS:
        if role == contract.LOWER:
            return lb
        if role == contract.UPPER:
            return ub
    if letter == "P":
        if role == contract.LOWER:
            return Affine(None, lb)
        if role == contract.UPPER:
            return Affine(None, ub)
    if letter == "S" and role == contract.ZONOTOPE:
        centre, radius = (lb + ub) / 2, (ub - lb) / 2
        return Affine(rep.scaled_one_hot(radius, 0, lb.shape[1]), centre)
    raise EngineError(f"certifier '{cert}': cannot initialise shape member '{name}' of the input layer from its constraints")


def _materialise(v, letter: str, b: int, n: int, rep: Representation):
    """A rule result as a stored value: Float members full ``[B, n]``; a PolyExp/SymExp keeps a
    number as its constant (the same for every neuron: ReLU's lower polyhedron has constant 0), and
    its parts may keep a broadcast batch dimension (an affine layer's are shared by the batch)."""
    if isinstance(v, Affine):  # its constant may broadcast over the batch, like its coefficients
        const = v.const
        return Affine(v.coeff, float(const) if isinstance(const, (int, float)) else gb.to_dense(const))
    if isinstance(v, (int, float)):
        return torch.full((b, n), float(v), dtype=rep.dtype, device=rep.device)
    return _full(gb.to_dense(v).to(rep.dtype), b, n)


def _full(t: torch.Tensor, b: int, n: int) -> torch.Tensor:
    return t if tuple(t.shape) == (b, n) else t.expand(b, n)
