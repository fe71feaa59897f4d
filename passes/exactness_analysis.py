"""``--exactness``: which member values a rule computes without rounding (for the float32 widening).

    # Relu -> (clamp(prev[l], 0), clamp(prev[u], 0), ...)  ->  cftensor.rule ... attributes {exact = {l = "transparent 1.0", ...}}

A low-precision run widens every stored bound by a bound of its rounding errors
(:mod:`cfruntime.flow.widening`).  Many rule outputs incur none: a clamp, a max/min, a selection,
a negation, a product with a power of two or a copy of stored (already widened) bounds is computed
exactly in any binary floating-point format.  This analysis finds them, so that the engine gives only
inexact values a widening term.

Algorithm: abstract interpretation of each ``cftensor.rule`` body, op by op in order (one function per
op class, :func:`transfer`), over the lattice

* ``zero``, ``const c``: compile-time numbers, exact when every widened dtype represents them
  (:func:`representable`; another constant is inexact: it is rounded where it is used);
* ``transparent(role, f)``: per neuron, either 0 or ``f * b`` with ``b`` the same neuron's stored bound
  of ``role`` (lower/upper) in the single predecessor and ``f`` a positive power of two, selected by
  exact conditions -- the widening a predecessor's stored bounds carry passes through such a value
  (for every later sum over it, see the widening's docstring);
* ``exact(f, K)``: computed without rounding from stored bounds and constants, ``|v| <= f M + K`` with
  ``M`` the magnitude of the predecessors' stored bounds;
* ``signed``: rounded, but its sign is exact (``fl(a + b)`` or ``fl(a - b)`` of exact ``a``, ``b``: round
  to nearest keeps the sign, and a non-zero sum of two floats never rounds to 0), so a comparison of it
  with 0 is exact;
* ``inexact``;

truth values are exact (a comparison of exact values, or of a ``signed`` value with 0; connectives
of exact ones) or not; coefficients of PolyExps are ``unit`` (every entry 0 or 1: a one-hot neuron,
masked by exact conditions), exact or inexact, the layer's parameters (``dot``, ``bias``) count as
exact values.  A selection is exact only under an exact condition; sums, quotients, products (but by
a power of two or a 0/1 mask), transcendental functions, inner products and traverses are inexact.
The padding constant of a window list (``-inf`` for a max) is kept apart and dropped by the reduction
whose identity it is.  ``cftensor.if`` joins its regions' results; loops are inexact.

The rule's returned values become one tag per shape member, an attribute ``exact`` on the rule
(with ``"@substitutes" = "yes"`` for a rule that substitutes polyhedra: a traverse or a loop, and
``"@fan-in" = "I R [T]"`` for one whose sums stay within ``I`` times the layer's fan-in plus ``R`` and
whose ``T`` traverses never stop, :mod:`cfmlir.passes.fanin_analysis`):
Float members ``"transparent F"`` (a transparent value of the member's own role), ``"exact F K"`` or
``"inexact"``; PolyExp/SymExp members ``"unit"`` (unit coefficients, constant 0), ``"exact"`` or
``"inexact"``.  The Python emission writes them as the module's ``EXACT`` table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import singledispatch

from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from cfmlir.dialects import cftensor as ct
from cfmlir.passes import fanin_analysis
from cfruntime import contract

#: the attribute on ``cftensor.rule`` that holds the member tags
EXACT_ATTR = "exact"
#: the tag key of a rule that substitutes polyhedra (the compiler-runtime contract's)
SUBSTITUTES = contract.EXACT_SUBSTITUTES
SUBSTITUTING_OPS = (ct.LayerTraverseOp, ct.WhileOp, ct.SubstituteOp, ct.SubstituteScaledOp)


@dataclass(frozen=True)
class Val:
    """An abstract value (see the module docstring).  ``kind``: zero, const, transparent, exact,
    signed, inexact, bool (``ok``: exact truth value), unit (0/1 coefficients), neurons (``single``:
    one predecessor neuron per current neuron), poly (``coeff``/``const``), other."""

    kind: str
    role: str | None = None
    f: float = 0.0
    k: float = 0.0
    value: float | None = None
    ok: bool = False
    single: bool = False
    pad: float | None = None  # a reduction identity (+-inf) standing in for absent window entries
    coeff: "Val | None" = None
    const: "Val | None" = None


INEXACT = Val("inexact")
ZERO = Val("zero")
EXACT_KINDS = ("zero", "const", "transparent", "exact", "unit")


def _exact(v: Val) -> bool:
    return v.kind in EXACT_KINDS and v.pad is None


def _mag(v: Val) -> tuple[float, float]:
    """``(f, K)`` with ``|v| <= f M + K`` for an exact value."""
    if v.kind == "zero":
        return 0.0, 0.0
    if v.kind == "const":
        return 0.0, abs(v.value)
    if v.kind == "unit":
        return 0.0, 1.0
    return v.f, v.k


def _as_exact(v: Val) -> Val:
    f, k = _mag(v)
    return Val("exact", f=f, k=k)


def _pow2(c: float) -> bool:
    """A non-zero finite power of two (a product with it is exact, barring overflow and underflow)."""
    if c == 0 or not math.isfinite(c):
        return False
    m, _ = math.frexp(abs(c))
    return m == 0.5 and representable(c)


def join(a: Val, b: Val) -> Val:
    """The value that is one of ``a``, ``b`` (a selection under an exact condition, an ``if``)."""
    if a == b:
        return a
    for x, y in ((a, b), (b, a)):
        if x.kind == "const" and x.value is not None and math.isinf(x.value) and _exact(y):
            return replace(y, pad=x.value)  # absent window entries: the reduction's identity
    if a.pad is not None or b.pad is not None:
        return INEXACT
    if a.kind == "poly" and b.kind == "poly":
        return Val("poly", coeff=join(a.coeff, b.coeff), const=join(a.const, b.const))
    if a.kind == "bool" and b.kind == "bool":
        return Val("bool", ok=a.ok and b.ok)
    for x, y in ((a, b), (b, a)):
        if x.kind == "zero" and y.kind in ("transparent", "unit"):
            return y
    if a.kind == b.kind == "transparent" and a.role == b.role:
        return replace(a, f=max(a.f, b.f))
    if _exact(a) and _exact(b):
        (fa, ka), (fb, kb) = _mag(a), _mag(b)
        return Val("exact", f=max(fa, fb), k=max(ka, kb))
    return INEXACT


class Env:
    """The abstract values of a rule's SSA values; ``roles``: the Float members that are a lower or
    an upper bound, by name."""

    def __init__(self, roles: dict[str, str]) -> None:
        self.values: dict[SSAValue, Val] = {}
        self.roles = roles

    def __getitem__(self, v: SSAValue) -> Val:
        return self.values.get(v, INEXACT)

    def set(self, op: Operation, *vals: Val) -> None:
        for r, v in zip(op.results, vals):
            self.values[r] = v


@singledispatch
def transfer(op: Operation, env: Env) -> None:
    """The abstract results of ``op`` (default: inexact)."""
    env.set(op, *(INEXACT for _ in op.results))


def representable(c: float) -> bool:
    """Whether ``c`` is the same number in every dtype the engine widens (float32, float16 and
    bfloat16: at most 8 significant bits, a normal float16 exponent), or infinite: only such a
    constant keeps a clamp, max/min or selection with it exact (``max(x, 0.1)`` runs as
    ``max(x, fl(0.1))``, above the real ``0.1``)."""
    if c == 0 or math.isinf(c):
        return True
    m, e = math.frexp(abs(c))
    return (m * 256).is_integer() and -13 <= e <= 16


@transfer.register
def _(op: ct.ConstOp, env: Env) -> None:
    c = op.value.value.data
    env.set(op, ZERO if c == 0 else Val("const", value=c) if representable(c) else INEXACT)


@transfer.register
def _(op: ct.InputOp, env: Env) -> None:
    name = op.input_name.data
    if name in contract.PREDECESSOR_INPUTS:
        # one predecessor neuron per current neuron: ``prev`` of an element-wise rule (a window list
        # has a further dimension)
        single = name == "prev" and ct.meta(op.result).height == 1 and len(ct.meta(op.result).shape) == 2
        env.set(op, Val("neurons", single=single))
    elif name in ("weight", "bias", "alpha"):
        env.set(op, Val("exact", f=math.inf, k=math.inf))  # the layer's parameters: exact numbers
    elif name == "prev_mask":
        env.set(op, Val("bool", ok=True))
    else:
        env.set(op, Val("other"))


@transfer.register
def _(op: ct.AccessOp, env: Env) -> None:
    src = env[op.input]
    member = op.member.data
    letter = ct.meta(op.result).top.type
    if src.kind != "neurons" or member in ("layer", "last_layer"):
        env.set(op, Val("exact", f=0.0, k=math.inf) if member in ("layer", "last_layer") else INEXACT)
    elif letter == "R" and member in env.roles:
        role = env.roles[member]
        env.set(op, Val("transparent", role=role, f=1.0) if src.single else Val("exact", f=1.0))
    elif letter in ("P", "S"):
        env.set(op, Val("poly", coeff=INEXACT, const=INEXACT))  # a stored expression, used by the rule
    else:
        env.set(op, INEXACT)


def _shape_preserving(op: Operation, env: Env) -> None:
    env.set(op, env[op.operands[0]])


for _cls in (ct.AddDimOp, ct.RemoveDimOp, ct.RepeatOp, ct.MergeTopOp):
    transfer.register(_cls)(_shape_preserving)


def _compare(a: Val, b: Val) -> Val:
    ok = (_exact(a) and _exact(b)) or (a.kind == "signed" and b.kind == "zero") or (b.kind == "signed" and a.kind == "zero")
    return Val("bool", ok=ok)


def _minmax(a: Val, b: Val) -> Val:
    """``max``/``min``: one of the operands, exactly."""
    if a.pad is not None or b.pad is not None:
        return INEXACT
    return join(a, b) if (_exact(a) and _exact(b)) else INEXACT


def _addsub(a: Val, b: Val) -> Val:
    if a.kind == "zero" and _exact(b):
        return b
    if b.kind == "zero" and _exact(a):
        return a
    return Val("signed") if _exact(a) and _exact(b) else INEXACT


def _scaled(x: Val, c: float) -> Val:
    """``x * c`` for a power of two ``c`` (exact)."""
    if x.kind == "zero":
        return ZERO
    if x.kind == "const":
        return Val("const", value=x.value * c)
    if x.kind == "transparent" and c > 0:
        return replace(x, f=x.f * c)
    f, k = _mag(x)
    return Val("exact", f=f * abs(c), k=k * abs(c))


def _div(a: Val, b: Val) -> Val:
    if b.kind == "const" and _pow2(b.value) and _exact(a):
        return _scaled(a, 1.0 / b.value)
    return INEXACT


_BINARY = {
    "add": _addsub, "sub": _addsub, "div": _div, "min": _minmax, "max": _minmax,
    **{c: _compare for c in ("lt", "le", "gt", "ge", "eq", "ne")},
    "and": lambda a, b: Val("bool", ok=a.ok and b.ok), "or": lambda a, b: Val("bool", ok=a.ok and b.ok),
}


@transfer.register
def _(op: ct.BinaryOp, env: Env) -> None:
    env.set(op, _BINARY[op.op.data](env[op.lhs], env[op.rhs]))


def _product(a: Val, b: Val) -> Val:
    for x, y in ((a, b), (b, a)):
        if x.kind == "zero" and y.pad is None:
            return ZERO
        if x.kind == "bool":  # a mask: where(mask, y, 0)
            return join(y, ZERO) if x.ok and _exact(y) else INEXACT
        if x.kind == "const" and _pow2(x.value) and _exact(y):
            return _scaled(y, x.value)
        if x.kind == "unit" and _exact(y) and y.kind != "unit":
            return _as_exact(y)  # every entry y * 1 or y * 0
    if a.kind == "unit" and b.kind == "unit":
        return a
    return INEXACT


@transfer.register
def _(op: ct.MultOp, env: Env) -> None:
    env.set(op, _product(env[op.lhs], env[op.rhs]))


@transfer.register
def _(op: ct.UnaryOp, env: Env) -> None:
    a = env[op.input]
    kind = op.op.data
    if kind == "not":
        env.set(op, Val("bool", ok=a.ok))
    elif kind in ("neg", "abs") and _exact(a):
        env.set(op, Val("const", value=-a.value if kind == "neg" else abs(a.value)) if a.kind == "const" else
                ZERO if a.kind == "zero" else _as_exact(a))
    else:
        env.set(op, INEXACT)


@transfer.register
def _(op: ct.TernaryOp, env: Env) -> None:
    c = env[op.cond]
    env.set(op, join(env[op.then], env[op.otherwise]) if c.kind == "bool" and c.ok else INEXACT)


@transfer.register
def _(op: ct.ClampOp, env: Env) -> None:
    x = env[op.input]
    bounds = [b.value.data for b in (op.min, op.max) if b is not None]
    if x.kind == "transparent" and all(b == 0 for b in bounds):
        env.set(op, x)
    elif _exact(x) and all(representable(b) for b in bounds):
        f, k = _mag(x)
        env.set(op, Val("exact", f=f, k=max([k] + [abs(b) for b in bounds])))
    else:
        env.set(op, INEXACT)


def _extremum(x: Val, kind: str) -> Val:
    """A min/max over a dimension: one of the entries (a window's padding identity dropped)."""
    identity = math.inf if kind == "min" else -math.inf
    if x.pad is not None and x.pad != identity:
        return INEXACT
    x = replace(x, pad=None)
    return _as_exact(x) if _exact(x) else INEXACT


@transfer.register
def _(op: ct.ReduceOp, env: Env) -> None:
    kind = op.kind.data
    env.set(op, INEXACT if kind == "sum" else _extremum(env[op.input], kind))


@transfer.register
def _(op: ct.MaskedReduceOp, env: Env) -> None:
    env.set(op, _extremum(env[op.operands[1]], op.kind.data))


@transfer.register
def _(op: ct.NeuronToPolyOp, env: Env) -> None:
    env.set(op, Val("poly", coeff=Val("unit"), const=ZERO))


@transfer.register(ct.ExtractPolyCoeffOp)
@transfer.register(ct.ExtractSymCoeffOp)
def _(op: Operation, env: Env) -> None:
    p = env[op.operands[0]]
    env.set(op, p.coeff if p.kind == "poly" else INEXACT)


@transfer.register(ct.ExtractPolyConstOp)
@transfer.register(ct.ExtractSymConstOp)
def _(op: Operation, env: Env) -> None:
    p = env[op.operands[0]]
    env.set(op, p.const if p.kind == "poly" else INEXACT)


@transfer.register(ct.CombineToPolyOp)
@transfer.register(ct.CombineToSymOp)
def _(op: Operation, env: Env) -> None:
    env.set(op, Val("poly", coeff=env[op.operands[0]], const=env[op.operands[1]]))


@transfer.register(ct.ConstToPolyOp)
@transfer.register(ct.ConstToSymOp)
def _(op: Operation, env: Env) -> None:
    env.set(op, Val("poly", coeff=ZERO, const=env[op.operands[0]]))


@transfer.register
def _(op: ct.DotOp, env: Env) -> None:
    # neurons . weights: the weights as coefficients, constant 0
    env.set(op, Val("poly", coeff=Val("exact", f=math.inf, k=math.inf), const=ZERO))


@transfer.register
def _(op: ct.IfOp, env: Env) -> None:
    outs = [run_block(r.block, env) for r in (op.then, op.otherwise)]
    env.set(op, *(join(a, b) for a, b in zip(*outs)))


def run_block(block: Block, env: Env) -> list[Val]:
    """Interpret a block's ops; the abstract values it returns."""
    for op in block.ops:
        if isinstance(op, ct.ReturnOp):
            return [env[v] for v in op.operands]
        transfer(op, env)
    return []


def member_tag(v: Val, letter: str, role: str) -> str:
    """The tag of one returned member value (see the module docstring)."""
    if letter in contract.NUMBER_LETTERS:
        if v.kind == "transparent" and v.role == role and v.pad is None:
            return f"transparent {v.f!r}"
        if _exact(v) and v.kind != "unit":
            f, k = _mag(v)
            return f"exact {f!r} {k!r}" if math.isfinite(f) and math.isfinite(k) else "inexact"
        return "inexact"
    if v.kind != "poly":
        return "inexact"
    c, k = v.coeff, v.const
    if c.kind in ("unit", "zero") and k.kind == "zero":
        return "unit"
    return "exact" if _exact(c) and _exact(k) else "inexact"


def rule_tags(rule: ct.RuleOp, members: list[tuple[str, str, str]]) -> dict[str, str]:
    """``{member: tag}`` for one rule."""
    roles = {n: r for n, letter, r in members if letter in contract.NUMBER_LETTERS and r in (contract.LOWER, contract.UPPER)}
    vals = run_block(rule.body.block, Env(roles))
    tags = {name: member_tag(v, letter, role) for (name, letter, role), v in zip(members, vals)}
    if any(isinstance(o, SUBSTITUTING_OPS) for o in rule.walk()):
        tags[SUBSTITUTES] = "yes"
    terms = fanin_analysis.fanin_terms(rule)
    if terms is not None:
        tags[contract.EXACT_FANIN] = " ".join(map(str, terms if terms[2] else terms[:2]))
    return tags


class ExactnessPass(ModulePass):
    """Tag every rule's member values exact or inexact (see the module docstring)."""

    name = "exactness"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        flow = next((o for o in op.ops if isinstance(o, ct.FlowOp)), None)
        if flow is None:
            return  # not lifted: nothing to tag
        members = flow.member_list()
        for rule in op.ops:
            if isinstance(rule, ct.RuleOp):
                tags = rule_tags(rule, members)
                rule.attributes[EXACT_ATTR] = DictionaryAttr({k: StringAttr(v) for k, v in tags.items()})
