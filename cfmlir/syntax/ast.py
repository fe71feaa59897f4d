"""The ConstraintFlow abstract syntax tree.

Every node records its source location (``loc``).  Expression nodes have a ``ty`` slot that the type
checker (:mod:`cfmlir.typing.checker`) fills in; after checking, the tree is a *typed AST* that the
lowering to the ``cf`` dialect and the reference interpreter both consume.

Surface-syntax variants are normalised here, by the parser, so later stages see one spelling:
``Real`` -> ``Float`` type, ``Sym`` -> ``Noise`` type, ``eps`` -> :class:`SymLit`, ``curr[w]`` ->
member ``weight``, ``curr[b]`` -> ``bias``, ``ReLU`` -> ``Relu``, ``if c then a else b fi`` ->
:class:`Ternary`, ``sigma`` -> builtin ``sigmoid``, ``x.mapList(f)`` -> builtin ``map_list``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Union

from cfmlir.diagnostics import Loc

if TYPE_CHECKING:  # pragma: no cover - typing only
    from cfmlir.dialects.cf_type_lattice import Type


# ----------------------------------------------------------------------------------------------
# Types as written in the source
# ----------------------------------------------------------------------------------------------

#: Canonical base type names.  ``Real`` is read as ``Float`` and ``Sym`` as ``Noise``.
BASE_TYPE_NAMES = ("Int", "Float", "Bool", "Neuron", "Noise", "PolyExp", "SymExp", "Ct")
TYPE_NAME_ALIASES = {"Real": "Float", "Sym": "Noise", "Double": "Float"}


@dataclass
class TypeRef:
    """A written type: a base name and a list depth (``Float List List`` is depth 2)."""

    name: str
    list_depth: int
    loc: Loc

    def __str__(self) -> str:
        return self.name + " List" * self.list_depth


# ----------------------------------------------------------------------------------------------
# Expressions
# ----------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class ExprBase:
    loc: Loc
    ty: "Type | None" = field(default=None, compare=False, repr=False)


@dataclass(kw_only=True)
class IntLit(ExprBase):
    value: int


@dataclass(kw_only=True)
class FloatLit(ExprBase):
    value: float


@dataclass(kw_only=True)
class BoolLit(ExprBase):
    value: bool


@dataclass(kw_only=True)
class SymLit(ExprBase):
    """A fresh noise symbol (``sym`` or ``eps``); each evaluation creates a new one per neuron."""


@dataclass(kw_only=True)
class Var(ExprBase):
    """A name: a function parameter, a user function, or an operator binding (``curr``, ``prev``...)."""

    name: str


#: Binary operators.  ``In`` is zonotope membership (``curr In curr[Z]``).
BINARY_OPS = ("+", "-", "*", "/", "and", "or", "<", "<=", ">", ">=", "==", "!=", "In")
ARITHMETIC_OPS = ("+", "-", "*", "/")
COMPARISON_OPS = ("<", "<=", ">", ">=", "==", "!=")
LOGICAL_OPS = ("and", "or")


@dataclass(kw_only=True)
class Binary(ExprBase):
    op: str
    lhs: "Expr"
    rhs: "Expr"


@dataclass(kw_only=True)
class Unary(ExprBase):
    """``-e`` (op ``"-"``) or ``!e`` (op ``"!"``)."""

    op: str
    operand: "Expr"


@dataclass(kw_only=True)
class Ternary(ExprBase):
    cond: "Expr"
    then: "Expr"
    otherwise: "Expr"


@dataclass(kw_only=True)
class Call(ExprBase):
    """A call of a user function value: ``f(a, b)``; curried calls nest: ``f(a)(b)``."""

    callee: "Expr"
    args: list["Expr"]


BUILTIN_ALIASES = {"sigma": "sigmoid", "mapList": "map_list", "compare": "argmax"}


@dataclass(kw_only=True)
class Builtin(ExprBase):
    name: str
    args: list["Expr"]


@dataclass(kw_only=True)
class Lp(ExprBase):
    """``lp(minimize|maximize, objective, constraints)``: optimum of a linear program."""

    sense: str
    objective: "Expr"
    constraints: "Expr"


#: Metadata names and their canonical spellings (``curr[w]`` is ``curr[weight]``).
#: ``alpha`` is the parameter of a ``LeakyRelu`` (negative slope) or ``Elu`` layer, the same for every neuron of the
#: layer, and 0 for neurons of layers without one.
METADATA_NAMES = ("weight", "bias", "layer", "last_layer", "alpha")


@dataclass(kw_only=True)
class Access(ExprBase):
    """``base[member]``: a shape member (``curr[L]``) or metadata (``curr[weight]``, ``n[layer]``)."""

    base: "Expr"
    member: str
    member_loc: Loc


@dataclass(kw_only=True)
class Map(ExprBase):
    """``base.map(f)``: apply ``f(neuron_or_noise, coeff)`` to every summand and add the results."""

    base: "Expr"
    func: "Expr"


@dataclass(kw_only=True)
class Dot(ExprBase):
    """``base.dot(weights)``: ``sum_i weights[i] * base[i]`` as a PolyExp or SymExp."""

    base: "Expr"
    arg: "Expr"


@dataclass(kw_only=True)
class Traverse(ExprBase):
    """``base.traverse(direction, priority, stop, replace){invariant}``."""

    base: "Expr"
    direction: str
    priority: "Expr"
    stop: "Expr"
    replace: "Expr"
    invariant: "Expr"


@dataclass(kw_only=True)
class TupleExpr(ExprBase):
    """``(e1, ..., ek)``: the values of all shape members, returned by a transformer rule."""

    elems: list["Expr"]


@dataclass(kw_only=True)
class ListLit(ExprBase):
    elems: list["Expr"]


Expr = Union[
    IntLit, FloatLit, BoolLit, SymLit, Var, Binary, Unary, Ternary, Call, Builtin, Lp, Access, Map,
    Dot, Traverse, TupleExpr, ListLit,
]


def children(e: "Expr") -> list["Expr"]:
    """The sub-expressions of ``e`` in field order, derived from its dataclass fields (an expression field
    or a list of expressions), so a new node class needs no hand-written child list."""
    out: list[Expr] = []
    for f in fields(e):
        v = getattr(e, f.name)
        if isinstance(v, ExprBase):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, ExprBase))
    return out


def walk(e: "Expr"):
    """``e`` and every expression inside it (a traverse's invariant included), depth first."""
    yield e
    for c in children(e):
        yield from walk(c)


# ----------------------------------------------------------------------------------------------
# Declarations
# ----------------------------------------------------------------------------------------------


@dataclass
class Param:
    type: TypeRef
    name: str
    loc: Loc


@dataclass
class ShapeDecl:
    """``def Shape as (Float l, ...){[constraint, ...]};``"""

    members: list[Param]
    constraints: list[Expr]
    loc: Loc


@dataclass
class FuncDecl:
    """``func name(T a, ...) = body;``"""

    name: str
    params: list[Param]
    body: Expr
    loc: Loc
    ret: "Type | None" = field(default=None, compare=False, repr=False)




@dataclass
class ParamDecl:
    """``param a for Relu, ... in [lo, hi] init e else d;``: an optimisable parameter.

    The parameter has a value on every neuron of the operators ``ops`` (their rules' bindings --
    ``curr``, ``prev``... -- are in scope in ``lo``, ``hi`` and ``init``, evaluated per neuron); on
    other neurons it reads as the number ``default`` (``else``; ``None`` when not given, then reading
    it there is an error).  It is read like a member, ``n[a]``: read in the rule of neuron ``s`` it is
    ``a_s(n)``, one value per pair (reader ``s``, neuron ``n``) -- so ``curr[a]`` is one value per
    neuron and ``n[a]`` inside a map or traverse one per neuron for each neuron whose rule runs it
    (alpha-CROWN's per-bound slopes).  The value used is always projected into ``[lo, hi]``;
    ``init`` (default: the midpoint ``(lo + hi) / 2``) is where an optimisation starts.
    """

    name: str
    ops: list[str]
    lo: "Expr"
    hi: "Expr"
    init: "Expr"
    default: float | None
    loc: Loc
    ops_loc: list[Loc] = field(default_factory=list)
    #: ``init`` was not written (it is the synthesised midpoint)
    init_given: bool = True


@dataclass
class Rule:
    """``Op -> body;`` inside a transformer."""

    op: str
    body: Expr
    loc: Loc


@dataclass
class TransformerDecl:
    name: str
    rules: list[Rule]
    loc: Loc


@dataclass
class FlowDecl:
    """``flow(forward|backward, priority, stop, transformer);``"""

    direction: str
    priority: str
    stop: str
    transformer: str
    loc: Loc


Decl = Union[ShapeDecl, FuncDecl, ParamDecl, TransformerDecl, FlowDecl]


@dataclass
class Program:
    file: str
    decls: list[Decl]

    @property
    def shape(self) -> ShapeDecl | None:
        return next((d for d in self.decls if isinstance(d, ShapeDecl)), None)

    @property
    def funcs(self) -> list[FuncDecl]:
        return [d for d in self.decls if isinstance(d, FuncDecl)]

    @property
    def params(self) -> list[ParamDecl]:
        return [d for d in self.decls if isinstance(d, ParamDecl)]

    @property
    def transformers(self) -> list[TransformerDecl]:
        return [d for d in self.decls if isinstance(d, TransformerDecl)]

    @property
    def flows(self) -> list[FlowDecl]:
        return [d for d in self.decls if isinstance(d, FlowDecl)]
