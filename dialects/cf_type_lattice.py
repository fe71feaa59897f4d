"""ConstraintFlow's semantic type lattice: the types, subtyping and least upper bounds.

This is the ``cf`` dialect's own model of ConstraintFlow types: :mod:`cfmlir.dialects.cf_types`
maps each ``cf`` type to one of these (``to_semantic``/``to_cf``), the typing rules
(:mod:`cfmlir.dialects.cf_typing_rules`) are written over them, and the frontend's type checker,
the interpreter and ``cf-verify`` use them too.  It imports nothing from the project.

Base types::

    Int <: Float <: PolyExp        Neuron <: PolyExp
             Float <: SymExp        Noise  <: SymExp
                                    Bool   <: Ct

plus ``T List`` (covariant), function types ``(T1, ..., Tn) -> T`` (for user functions and their
curried partial applications) and tuple types (what a transformer rule returns).
"""

from __future__ import annotations

from dataclasses import dataclass


class Type:
    """Base class of all semantic types."""


@dataclass(frozen=True)
class BaseType(Type):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ListType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"{self.elem} List"


@dataclass(frozen=True)
class FuncType(Type):
    params: tuple[Type, ...]
    ret: Type

    def __str__(self) -> str:
        return f"({', '.join(map(str, self.params))}) -> {self.ret}"


@dataclass(frozen=True)
class TupleType(Type):
    elems: tuple[Type, ...]

    def __str__(self) -> str:
        return f"({', '.join(map(str, self.elems))})"


INT = BaseType("Int")
FLOAT = BaseType("Float")
BOOL = BaseType("Bool")
NEURON = BaseType("Neuron")
NOISE = BaseType("Noise")
POLYEXP = BaseType("PolyExp")
SYMEXP = BaseType("SymExp")
CT = BaseType("Ct")

BASE_TYPES = {t.name: t for t in (INT, FLOAT, BOOL, NEURON, NOISE, POLYEXP, SYMEXP, CT)}

# Direct supertypes; subtyping is the reflexive-transitive closure.
_PARENTS: dict[BaseType, tuple[BaseType, ...]] = {
    INT: (FLOAT,),
    FLOAT: (POLYEXP, SYMEXP),
    NEURON: (POLYEXP,),
    NOISE: (SYMEXP,),
    BOOL: (CT,),
    POLYEXP: (),
    SYMEXP: (),
    CT: (),
}


def _ancestors(t: BaseType) -> list[BaseType]:
    """``t`` and all its supertypes, nearest first (breadth-first)."""
    out, frontier = [t], [t]
    while frontier:
        nxt = []
        for s in frontier:
            for p in _PARENTS[s]:
                if p not in out:
                    out.append(p)
                    nxt.append(p)
        frontier = nxt
    return out


def is_subtype(a: Type, b: Type) -> bool:
    """``a <: b``."""
    if a == b:
        return True
    if isinstance(a, BaseType) and isinstance(b, BaseType):
        return b in _ancestors(a)
    if isinstance(a, ListType) and isinstance(b, ListType):
        return is_subtype(a.elem, b.elem)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elems) == len(b.elems) and all(is_subtype(x, y) for x, y in zip(a.elems, b.elems))
    if isinstance(a, FuncType) and isinstance(b, FuncType):
        return (
            len(a.params) == len(b.params)
            and all(is_subtype(y, x) for x, y in zip(a.params, b.params))
            and is_subtype(a.ret, b.ret)
        )
    return False


def lub(a: Type, b: Type) -> Type | None:
    """The least upper bound of ``a`` and ``b``, or ``None`` if they have none."""
    if is_subtype(a, b):
        return b
    if is_subtype(b, a):
        return a
    if isinstance(a, BaseType) and isinstance(b, BaseType):
        bs = _ancestors(b)
        for cand in _ancestors(a):
            if cand in bs:
                return cand
        return None
    if isinstance(a, ListType) and isinstance(b, ListType):
        e = lub(a.elem, b.elem)
        return ListType(e) if e is not None else None
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems):
        elems = [lub(x, y) for x, y in zip(a.elems, b.elems)]
        return None if any(e is None for e in elems) else TupleType(tuple(elems))  # type: ignore[arg-type]
    return None


def is_numeric(t: Type) -> bool:
    """Int or Float."""
    return is_subtype(t, FLOAT)


def is_poly_like(t: Type) -> bool:
    """A subtype of PolyExp (Int, Float, Neuron, PolyExp)."""
    return is_subtype(t, POLYEXP)


def is_sym_like(t: Type) -> bool:
    """A subtype of SymExp (Int, Float, Noise, SymExp)."""
    return is_subtype(t, SYMEXP)
