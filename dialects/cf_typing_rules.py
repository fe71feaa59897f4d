"""The ConstraintFlow typing rules: the one place they live.

Each function here is one typing rule over the semantic type lattice
(:mod:`cfmlir.dialects.cf_type_lattice`): given the types of an expression form's operands it returns
the type of the expression, or raises :class:`TypingError` with the one-line message a user sees.
Nothing here knows about syntax trees, source positions or IR; two callers apply the same rules:

* the frontend's type checker types the operands of an AST node, calls the rule and turns a
  :class:`TypingError` into a :class:`~cfmlir.diagnostics.CfError` at the position of the node, or
  of the operand that :attr:`TypingError.operand` names;
* the verifiers of the ``cf`` dialect's expression ops (:mod:`cfmlir.dialects.cf`) call the rule on
  their operands' types (converted with :func:`cfmlir.dialects.cf_types.to_semantic`), turn a
  :class:`TypingError` into a ``VerifyException`` with the same message, and require the op's result
  type to be exactly the type the rule returns.

So a ``cf`` module re-verifies precisely what the type checker guaranteed, and the dialect depends on
no part of the frontend (in MLIR's layering the frontend depends on the dialect, never the reverse).

Operand order.  A rule whose checks interleave with the typing of its operands (``select``, ``call``,
builtins, ``lp``, ``traverse``, list literals) takes its operand types as a sequence and reads them
in source order, each one when its first check needs it.  The checker passes a sequence that types
each sub-expression on first access, so of several errors in one program it reports the first in
that order; the dialect passes a plain list.

Typing highlights (ConstraintFlow semantics):

* ``+``/``-``: numeric -> numeric; otherwise both sides must be PolyExp-like (-> PolyExp) or
  SymExp-like (-> SymExp).  ``*``: one side must be a scalar.  ``/``: the divisor must be a scalar.
* comparisons: Float x Float -> Bool; PolyExp x PolyExp -> Ct.  ``e In z``: PolyExp x SymExp -> Ct.
* ``e.map(f)``: over a PolyExp ``f : (Neuron, Float) -> T``; over a SymExp ``f : (Noise, Float) -> T``;
  the result is ``lub(T, Float)`` (the summands and the constant term are added).
* ``l.dot(w)``: Neuron List . Float List -> PolyExp; SymExp List . Float List -> SymExp;
  Float List . Float List -> Float.
* ``e.traverse(d, p, s, f){c}``: ``p : (Neuron, Float) -> Float``, ``s : (Neuron, Float) -> Bool``,
  ``f : (Neuron, Float) -> PolyExp``, ``c : Ct``; the result is a PolyExp.

The language's tables the rules need (network operators and the names their rules bind, builtin
arities, metadata names and types) are here too, and only here: the frontend's parser reads them from
this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from cfmlir.dialects.cf_type_lattice import (
    BOOL, CT, FLOAT, INT, NEURON, NOISE, POLYEXP, SYMEXP,
    FuncType, ListType, TupleType, Type,
    is_numeric, is_poly_like, is_subtype, is_sym_like, lub,
)


class TypingError(Exception):
    """An ill-typed expression: ``message`` is the one-line diagnostic (whitespace collapsed, as
    every diagnostic is); ``operand`` is the index of the operand to blame (its position is the
    error's position), or ``None`` for the expression as a whole."""

    def __init__(self, message: str, operand: int | None = None):
        self.message = " ".join(message.split())
        self.operand = operand
        super().__init__(self.message)


# ----------------------------------------------------------------------------------------------
# Language tables
# ----------------------------------------------------------------------------------------------

#: Network operators a transformer can give rules for (canonical spellings), by the neurons they
#: read.  Each also exists as ``rev_<Op>`` for backward flows.
UNARY_OPERATORS = ("Relu", "Sigmoid", "Tanh", "Abs", "Relu6", "HardTanh", "HardSigmoid", "HardSwish", "LeakyRelu", "Elu",
                   "Softplus", "Sign", "Floor", "Sin", "Cos", "Exp", "Reciprocal")
LIST_OPERATORS = ("Affine", "Maxpool", "Minpool", "Avgpool")
BINARY_NEURON_OPERATORS = ("Neuron_add", "Neuron_mult", "Neuron_max", "Neuron_min")
FORWARD_OPERATORS = LIST_OPERATORS + UNARY_OPERATORS + BINARY_NEURON_OPERATORS
OPERATORS = FORWARD_OPERATORS + tuple("rev_" + op for op in FORWARD_OPERATORS)

#: Builtin functions and the number of arguments they accept.
BUILTIN_ARITIES: dict[str, tuple[int, ...]] = {
    "max": (1, 2),
    "min": (1, 2),
    "sum": (1,),
    "avg": (1,),
    "len": (1,),
    "argmax": (1, 2),
    "argmin": (1, 2),
    "concat": (2,),
    "map_list": (2,),
    "sigmoid": (1,),
    "tanh": (1,),
    "exp": (1,),
    "abs": (1,),
    "log": (1,),
    "sin": (1,),
    "cos": (1,),
    "floor": (1,),
}

#: Types of metadata accessible on every neuron.
METADATA_TYPES: dict[str, Type] = {
    "weight": ListType(FLOAT),
    "bias": FLOAT,
    "layer": INT,
    "last_layer": INT,
    "alpha": FLOAT,
}
#: Short spellings of metadata names (``curr[w]`` is ``curr[weight]``); no shape member may use them.
METADATA_ALIASES = {"w": "weight", "b": "bias"}


def operator_bindings(op: str) -> dict[str, Type]:
    """The names a transformer rule for ``op`` may use, with their types."""
    base = op[4:] if op.startswith("rev_") else op
    env: dict[str, Type] = {"curr": NEURON, "curr_list": ListType(NEURON)}
    if base in LIST_OPERATORS:
        env["prev"] = ListType(NEURON)
    elif base in UNARY_OPERATORS:
        env["prev"] = NEURON
    elif base in BINARY_NEURON_OPERATORS:
        env.update(prev=ListType(NEURON), prev_0=NEURON, prev_1=NEURON)
    else:  # pragma: no cover - the parser and the verifier only pass known operators
        raise AssertionError(op)
    return env


def is_metadata_name(name: str) -> bool:
    """Whether ``name`` names neuron metadata (so no shape member may be called that)."""
    return name in METADATA_TYPES or name in METADATA_ALIASES


# ----------------------------------------------------------------------------------------------
# Expression rules
# ----------------------------------------------------------------------------------------------


def _function(t: Type, what: str, operand: int) -> FuncType:
    if not isinstance(t, FuncType):
        raise TypingError(f"{what} must be a function, got {t}", operand)
    return t


def _linear(t: Type) -> Type | None:
    """The linear-expression type a PolyExp-like or SymExp-like operand scales or negates into (PolyExp,
    SymExp), None for any other type."""
    if is_poly_like(t):
        return POLYEXP
    if is_sym_like(t):
        return SYMEXP
    return None


def unary(op: str, t: Type) -> Type:
    """``-e`` (``op`` ``"-"``) or ``!e`` (``op`` ``"!"``) of an operand of type ``t``."""
    if op == "!":
        if t == BOOL or t == CT:
            return t
        raise TypingError(f"'!' needs a Bool, got {t}")
    if is_numeric(t):
        return t
    if (linear := _linear(t)) is not None:
        return linear
    raise TypingError(f"unary '-' cannot be applied to {t}")


def binary(op: str, a: Type, b: Type) -> Type:
    """``a op b`` for a binary operator symbol (``+``, ``<=``, ``and``, ``In``...); operand 1 is blamed
    for a non-scalar divisor."""
    if isinstance(a, (TupleType, FuncType)) or isinstance(b, (TupleType, FuncType)):
        bad = a if isinstance(a, (TupleType, FuncType)) else b
        raise TypingError(f"operator '{op}' cannot be applied to a value of type {bad}")
    if op in ("+", "-"):
        if is_numeric(a) and is_numeric(b):
            return lub(a, b)  # type: ignore[return-value]
        if is_poly_like(a) and is_poly_like(b):
            return POLYEXP
        if is_sym_like(a) and is_sym_like(b):
            return SYMEXP
        raise TypingError(f"operator '{op}' cannot be applied to {a} and {b}")
    if op == "*":
        if is_numeric(a) and is_numeric(b):
            return lub(a, b)  # type: ignore[return-value]
        scalar, other = (a, b) if is_numeric(a) else (b, a)
        if not is_numeric(scalar):
            raise TypingError(f"operator '*' needs a scalar operand, got {a} and {b} (the product would not be linear)")
        if (linear := _linear(other)) is not None:
            return linear
        raise TypingError(f"operator '*' cannot be applied to {a} and {b}")
    if op == "/":
        if not is_numeric(b):
            raise TypingError(f"the divisor must be a scalar, got {b}", 1)
        if is_numeric(a):
            return FLOAT
        if (linear := _linear(a)) is not None:
            return linear
        raise TypingError(f"operator '/' cannot be applied to {a} and {b}")
    if op in ("and", "or"):
        if a == BOOL and b == BOOL:
            return BOOL
        if is_subtype(a, CT) and is_subtype(b, CT):
            return CT
        raise TypingError(f"operator '{op}' needs Bool or Ct operands, got {a} and {b}")
    if op == "In":
        if is_poly_like(a) and is_sym_like(b):
            return CT
        raise TypingError(f"operator 'In' needs a PolyExp and a SymExp, got {a} and {b}")
    # comparisons
    if is_numeric(a) and is_numeric(b):
        return BOOL
    if op in ("==", "!=") and a == BOOL and b == BOOL:
        return BOOL
    if (is_poly_like(a) and is_poly_like(b)) or (is_sym_like(a) and is_sym_like(b)):
        return CT
    raise TypingError(f"operator '{op}' cannot compare {a} and {b}")


def select(operands: Sequence[Type]) -> Type:
    """``cond ? then : otherwise`` with ``operands`` the three types: the least upper bound of the
    branches (tuples included)."""
    c = operands[0]
    if c != BOOL:
        raise TypingError(f"the condition of a conditional must be Bool, got {c}", 0)
    a, b = operands[1], operands[2]
    t = lub(a, b)
    if t is None:
        raise TypingError(f"the branches of a conditional have incompatible types {a} and {b}")
    return t


def call(callee: Type, args: Sequence[Type]) -> Type:
    """A call of a function value of type ``callee`` with arguments of types ``args`` (operand ``i``
    is ``args[i]``): its result, or with fewer arguments (curried partial application) the function
    type of the remaining parameters."""
    if not isinstance(callee, FuncType):
        raise TypingError(f"called value is not a function (it has type {callee})")
    if len(args) > len(callee.params):
        raise TypingError(f"function takes {len(callee.params)} argument(s), got {len(args)}")
    for i, want in enumerate(callee.params[: len(args)]):
        got = args[i]
        if not is_subtype(got, want):
            raise TypingError(f"argument {i + 1} has type {got}, expected {want}", i)
    if len(args) < len(callee.params):
        return FuncType(callee.params[len(args):], callee.ret)  # curried partial application
    return callee.ret


def builtin(name: str, args: Sequence[Type]) -> Type:
    """The builtin function ``name`` (canonical spelling, a key of :data:`BUILTIN_ARITIES`) applied
    to arguments of types ``args`` (as many as its arity allows)."""
    n = name
    if n in ("sigmoid", "tanh", "exp", "log", "abs", "sin", "cos", "floor"):
        t = args[0]
        if not is_numeric(t):
            raise TypingError(f"'{n}' needs a Float, got {t}", 0)
        return INT if (n in ("abs", "floor") and t == INT) else FLOAT
    if n in ("max", "min") and len(args) == 2:
        a, b = args[0], args[1]
        if is_numeric(a) and is_numeric(b):
            return lub(a, b)  # type: ignore[return-value]
        raise TypingError(f"'{n}' of two values needs Floats, got {a} and {b}")
    lst = args[0]
    if not isinstance(lst, ListType):
        raise TypingError(f"'{n}' needs a list, got {lst}", 0)
    el = lst.elem
    if n in ("max", "min"):
        if not is_numeric(el):
            raise TypingError(f"'{n}' of a list needs a Float List, got {lst}", 0)
        return el
    if n == "len":
        return INT
    if n in ("sum", "avg"):
        if is_numeric(el):
            return FLOAT if n == "avg" else el
        if is_poly_like(el):
            return POLYEXP
        if is_sym_like(el):
            return SYMEXP
        raise TypingError(f"'{n}' cannot add up a {lst}", 0)
    if n in ("argmax", "argmin"):
        if len(args) == 1:
            if not is_numeric(el):
                raise TypingError(f"'{n}' of one list needs a Float List, got {lst}", 0)
            return INT
        f = _function(args[1], f"the comparison of '{n}'", 1)
        if len(f.params) != 2 or not all(is_subtype(el, p) for p in f.params) or f.ret != BOOL:
            raise TypingError(f"the comparison of '{n}' must have type ({el}, {el}) -> Bool, got {f}", 1)
        return lst
    if n == "concat":
        other = args[1]
        j = lub(lst, other)
        if j is None:
            raise TypingError(f"cannot concatenate {lst} and {other}")
        return j
    if n == "map_list":
        f = _function(args[1], "the function of 'map_list'", 1)
        if len(f.params) != 1 or not is_subtype(el, f.params[0]):
            raise TypingError(f"the function of 'map_list' must take one {el}, got {f}", 1)
        return ListType(f.ret)
    raise AssertionError(n)  # pragma: no cover


def lp(operands: Sequence[Type]) -> Type:
    """``lp(minimize|maximize, objective, constraints)`` with ``operands`` the types of the objective
    and the constraints: a Float."""
    o = operands[0]
    if not is_poly_like(o):
        raise TypingError(f"lp objective must be a PolyExp, got {o}", 0)
    c = operands[1]
    if not (is_subtype(c, CT) or is_subtype(c, ListType(CT))):
        raise TypingError(f"lp constraints must be Ct or a Ct List, got {c}", 1)
    return FLOAT


def member_type(member: str, members: Mapping[str, Type]) -> Type:
    """The type of ``member``: a shape member (``members``, name -> type) or metadata.  The error
    is about the member name itself, not an operand."""
    if member in members:
        return members[member]
    if member in METADATA_TYPES:
        return METADATA_TYPES[member]
    raise TypingError(f"unknown shape member or metadata '{member}'")


#: The type of a parameter's value (``param a for ... in [lo, hi]``): its domain, initial value and
#: ``else`` value are Floats, and so is every read ``n[a]``.
PARAMETER_TYPE: Type = FLOAT


def parameter_bound(what: str, t: Type) -> Type:
    """A parameter's ``lo``, ``hi`` or ``init`` (``what``) of type ``t``: must be a number."""
    if not is_numeric(t):
        raise TypingError(f"the {what} of a parameter must be a Float, got {t}")
    return PARAMETER_TYPE


def parameter(base: Type, name: str) -> Type:
    """``base[name]`` for a parameter ``name``: a Float on a Neuron, a Float List on a Neuron List."""
    return access(base, name, PARAMETER_TYPE)


def access(base: Type, member: str, mtype: Type) -> Type:
    """``base[member]`` where ``mtype`` is the member's type (:func:`member_type`): ``mtype`` on a
    Neuron, ``mtype List`` on a Neuron List."""
    if base == NEURON:
        return mtype
    if base == ListType(NEURON):
        return ListType(mtype)
    raise TypingError(f"'[{member}]' needs a Neuron or Neuron List, got {base}")


def map_(base: Type, func: Type) -> Type:
    """``base.map(func)``: ``func`` applied to every summand of a PolyExp (``(Neuron, Float) -> T``)
    or SymExp (``(Noise, Float) -> T``), the results added: ``lub(T, Float)``."""
    f = _function(func, "the argument of map", 1)
    if is_poly_like(base):
        elem, kind = NEURON, "PolyExp"
    elif is_sym_like(base):
        elem, kind = NOISE, "SymExp"
    else:
        raise TypingError(f"map needs a PolyExp or SymExp, got {base}", 0)
    if len(f.params) != 2 or not is_subtype(elem, f.params[0]) or not is_subtype(FLOAT, f.params[1]):
        raise TypingError(f"map over a {kind} needs a function ({elem}, Float) -> T, got {f}", 1)
    if not (is_poly_like(f.ret) or is_sym_like(f.ret)):
        raise TypingError(f"the mapped function must return a Float, PolyExp or SymExp, got {f.ret}", 1)
    return lub(f.ret, FLOAT)  # type: ignore[return-value]


def dot(base: Type, weights: Type) -> Type:
    """``base.dot(weights)``: ``sum_i weights[i] * base[i]``."""
    if not (isinstance(weights, ListType) and is_numeric(weights.elem)):
        raise TypingError(f"dot needs a Float List of coefficients, got {weights}", 1)
    if isinstance(base, ListType) and is_numeric(base.elem):
        return FLOAT  # an ordinary dot product of two Float Lists
    if isinstance(base, ListType) and is_poly_like(base.elem):
        return POLYEXP
    if isinstance(base, ListType) and is_sym_like(base.elem):
        return SYMEXP
    raise TypingError(f"dot needs a Neuron List, PolyExp List or SymExp List, got {base}", 0)


_TRAVERSE_FUNCTIONS: tuple[tuple[str, str, Callable[[Type], bool]], ...] = (
    ("priority", "Float", is_numeric),
    ("stop", "Bool", lambda t: t == BOOL),
    ("replacement", "PolyExp", is_poly_like),
)


def traverse(operands: Sequence[Type]) -> Type:
    """``e.traverse(direction, priority, stop, replace){invariant}`` with ``operands`` the types of
    ``e``, the three functions and the invariant: a PolyExp."""
    b = operands[0]
    if not is_poly_like(b):
        raise TypingError(f"traverse needs a PolyExp, got {b}", 0)
    for i, (role, want, ok) in enumerate(_TRAVERSE_FUNCTIONS, start=1):
        f = _function(operands[i], f"the traverse {role} function", i)
        if len(f.params) != 2 or not is_subtype(NEURON, f.params[0]) or not is_subtype(FLOAT, f.params[1]) or not ok(f.ret):
            raise TypingError(f"the traverse {role} function must have type (Neuron, Float) -> {want}, got {f}", i)
    inv = operands[4]
    if not is_subtype(inv, CT):
        raise TypingError(f"the traverse invariant must be a constraint (Ct), got {inv}", 4)
    return POLYEXP


def tuple_(elems: Sequence[Type]) -> Type:
    """``(e1, ..., en)``: the tuple of the elements' types."""
    return TupleType(tuple(elems[i] for i in range(len(elems))))


def list_literal(elems: Sequence[Type]) -> Type:
    """``[e1, ..., en]``: a list of the least upper bound of the elements' types."""
    if not len(elems):
        raise TypingError("empty list literals are not supported")
    t = elems[0]
    for i in range(1, len(elems)):
        u = elems[i]
        j = lub(t, u)
        if j is None:
            raise TypingError(f"list elements have incompatible types {t} and {u}", i)
        t = j
    return ListType(t)


__all__ = [
    "TypingError", "UNARY_OPERATORS", "LIST_OPERATORS", "BINARY_NEURON_OPERATORS", "FORWARD_OPERATORS", "OPERATORS",
    "BUILTIN_ARITIES", "METADATA_TYPES", "METADATA_ALIASES", "operator_bindings", "is_metadata_name",
    "PARAMETER_TYPE", "parameter_bound", "parameter",
    "unary", "binary", "select", "call", "builtin", "lp", "member_type", "access", "map_", "dot", "traverse",
    "tuple_", "list_literal",
]
