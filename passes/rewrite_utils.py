"""Helpers shared by the ``cftensor`` rewrite patterns: broadcast chains and value predicates."""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from cfmlir.dialects import cftensor as ct

BROADCAST_OPS = (ct.RepeatOp, ct.AddDimOp)


def broadcast_chain(v: SSAValue) -> tuple[SSAValue, list[Operation]]:
    """``v`` as ``chain(source)`` where chain is a sequence of repeat/add_dim ops (outermost last)."""
    ops: list[Operation] = []
    while isinstance(v.owner, BROADCAST_OPS):
        ops.append(v.owner)
        v = v.owner.operands[0]
    ops.reverse()
    return v, ops


def chain_key(ops: list[Operation]) -> tuple:
    return tuple((type(o).__name__, o.dim.data, o.size.data if isinstance(o, ct.RepeatOp) else None) for o in ops)


def strip_repeats(v: SSAValue) -> SSAValue:
    """``v`` without its outermost repeat ops (add_dims are kept: they change the rank)."""
    while isinstance(v.owner, ct.RepeatOp):
        v = v.owner.operands[0]
    return v


def rebuild_chain(source: SSAValue, ops: list[Operation]) -> tuple[list[Operation], SSAValue]:
    """Re-apply a broadcast chain to ``source`` (the ops infer their types from it)."""
    new_ops: list[Operation] = []
    v = source
    for o in ops:
        if isinstance(o, ct.RepeatOp):
            n = ct.RepeatOp(v, o.dim.data, o.size.data)
        else:
            n = ct.AddDimOp(v, o.dim.data, *o.choice())
        new_ops.append(n)
        v = n.results[0]
    return new_ops, v


def is_scalar_const(v: SSAValue) -> bool:
    return isinstance(v.type, ct.TensorType) and ct.is_scalar_const(v.type.metadata)


def const_value(v: SSAValue) -> float | None:
    return v.owner.value.value.data if isinstance(v.owner, ct.ConstOp) else None


def may_divide_or_be_infinite(v: SSAValue, depth: int = 64) -> bool:
    """Conservatively: whether ``v``'s computation contains a division, an exponential, a logarithm or
    an infinite constant (so that ``0 * v`` could be NaN).  Truth values are always finite, so the
    search stops at them."""
    seen: set[int] = set()
    stack = [(v, 0)]
    while stack:
        x, d = stack.pop()
        op = x.owner
        if not isinstance(op, Operation) or id(op) in seen:
            continue
        seen.add(id(op))
        if isinstance(x.type, ct.TensorType) and x.type.metadata.top.type == "B":
            continue  # a truth value is 0 or 1, whatever it was computed from
        if d > depth:
            return True
        if _MAY_MAKE_INFINITY.get(type(op), _never)(op):
            return True
        if type(op) in _OPAQUE:
            continue
        stack.extend((o, d + 1) for o in op.operands)
    return False


def _never(op: Operation) -> bool:
    return False


#: Ops that can make an infinity (or a division's NaN) from finite operands: a division, exp/log, an infinite constant.
_MAY_MAKE_INFINITY = {
    ct.BinaryOp: lambda op: op.op.data == "div",
    ct.UnaryOp: lambda op: op.op.data in ("exp", "log"),
    ct.ConstOp: lambda op: abs(op.value.value.data) == float("inf"),
}
#: Ops whose operands the search does not enter (a loop's carried values, a fresh noise symbol).
_OPAQUE = (ct.WhileOp, ct.SymOp)


def nonzero_tested(v: SSAValue) -> SSAValue | None:
    """``c`` if ``v`` is the test ``ne(c, 0)`` or ``ne(0, c)`` of a non-scalar ``c``."""
    op = v.owner
    if not isinstance(op, ct.BinaryOp) or op.op.data != "ne":
        return None
    for c, zero in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if const_value(zero) == 0.0 and not is_scalar_const(c):
            return c
    return None
