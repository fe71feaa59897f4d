"""``--uniform-branch``: conditionals on uniform conditions become ``cftensor.if`` regions.

    # ternary(bcast(c), a, b) with c uniform -> if c then {slice(a); a} else {slice(b); b}

A uniform condition (all intrinsic sizes 1, such as ``curr[last_layer] == 1``) is one host-side
value per layer, so only the taken branch needs to run: CROWN-IBP back-substitutes at the last layer
only, ZID and ReuseCert run one of their per-layer variants.

Algorithm: for every block (rules and nested regions), collect the ``cftensor.ternary`` ops whose
condition is a broadcast chain (``repeat``/``add_dim``) of a uniform value, and group them by that
value.  A group is placed at its last ternary (earlier ternaries join it when none of their users
lies in between; otherwise they form groups of their own).  One ``cftensor.if`` replaces each group:
its results replace the ternaries' results, its ``then`` region returns the ``then`` operands and its
``else`` region the ``else`` operands.  Then every op before the ``if`` whose results are used only
inside one region (directly, or by ops already moved there, or by ops nested in those) moves into
that region, last op first, keeping their order.  Ops with side effects (``cftensor.sym``) stay.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import Pure, RecursiveMemoryEffect

from cfmlir.dialects import cftensor as ct
from cfmlir.dialects.cftensor_metadata import is_uniform
from cfmlir.passes.rewrite_utils import broadcast_chain


def uniform_source(cond: SSAValue) -> SSAValue | None:
    """The uniform value a (broadcast) condition is made from, or None."""
    src, _ = broadcast_chain(cond)
    return src if isinstance(src.type, ct.TensorType) and is_uniform(src.type.metadata) else None


def _ancestor_in(op: Operation, block: Block) -> Operation | None:
    """``op`` or the op enclosing it that lies directly in ``block``."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def _groups(block: Block) -> list[tuple[SSAValue, list[ct.TernaryOp]]]:
    """Ternaries on uniform conditions, grouped by condition; each group can move to its last member."""
    by_cond: dict[SSAValue, list[ct.TernaryOp]] = {}
    for op in block.ops:
        if isinstance(op, ct.TernaryOp):
            src = uniform_source(op.cond)
            if src is not None:
                by_cond.setdefault(src, []).append(op)
    order = {op: i for i, op in enumerate(block.ops)}
    out = []
    for src, ops in by_cond.items():
        group: list[ct.TernaryOp] = []  # latest first; group[0] is where the if goes
        for op in reversed(ops):
            if group:
                spot = order[group[0]]
                users = [_ancestor_in(u.operation, block) for u in op.result.uses]
                if any(u is not None and order[u] <= spot for u in users):
                    out.append((src, group[::-1]))
                    group = []
            group.append(op)
        out.append((src, group[::-1]))
    return out


def _movable(op: Operation) -> bool:
    if isinstance(op, ct.ReturnOp) or isinstance(op, ct.SymOp):
        return False
    return op.has_trait(Pure) or op.has_trait(RecursiveMemoryEffect)


def _sink(block: Block, anchor: ct.IfOp) -> None:
    """Move the ops before ``anchor`` that only its ``then`` (or only its ``else``) region uses there."""
    regions = (anchor.then, anchor.otherwise)
    inside: dict[Operation, int] = {}  # op -> index of the region it moved into

    def home(op: Operation) -> int | None:
        """The region of ``anchor`` that every use of ``op``'s results lies in (None: outside / both)."""
        where = set()
        for r in op.results:
            for use in r.uses:
                user = use.operation
                if user is anchor:
                    return None  # the condition itself
                found = None
                cur = user
                while cur is not None:
                    if cur in inside:
                        found = inside[cur]
                        break
                    parent = cur.parent_region()
                    if parent is not None and parent.parent_op() is anchor:
                        found = regions.index(parent)
                        break
                    cur = cur.parent_op()
                if found is None:
                    return None
                where.add(found)
        return where.pop() if len(where) == 1 else None

    op = anchor.prev_op
    while op is not None:
        prev = op.prev_op
        if _movable(op) and op.results:
            idx = home(op)
            if idx is not None:
                target = regions[idx].block
                op.detach()
                target.insert_op_before(op, target.first_op)
                inside[op] = idx
        op = prev


def convert_one(block: Block) -> bool:
    """Turn one group of uniform ternaries of ``block`` into a ``cftensor.if``; False if there is none."""
    for op in list(block.ops):  # c ? a : a is a
        if isinstance(op, ct.TernaryOp) and op.then is op.otherwise and op.then.type == op.result.type:
            op.result.replace_all_uses_with(op.then)
            op.detach()
            op.erase()
    groups = _groups(block)
    if not groups:
        return False
    src, group = groups[0]
    then_b, else_b = Block(), Block()
    then_b.add_op(ct.ReturnOp([t.then for t in group]))
    else_b.add_op(ct.ReturnOp([t.otherwise for t in group]))
    new = ct.IfOp(src, [t.result.type for t in group], Region(then_b), Region(else_b))
    block.insert_op_before(new, group[-1])
    for t, r in zip(group, new.results):
        t.result.replace_all_uses_with(r)
    for t in group:
        t.detach()
        t.erase()
    _sink(block, new)
    return True


class UniformBranchPass(ModulePass):
    """Conditionals on uniform conditions become ``cftensor.if`` regions (see the module docstring)."""

    name = "uniform-branch"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        while any(convert_one(b) for o in op.walk() for r in o.regions for b in r.blocks):
            pass
