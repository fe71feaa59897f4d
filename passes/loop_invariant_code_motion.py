"""``--cftensor-licm``: hoist loop-invariant computations out of ``cftensor.while`` loops.

Algorithm: repeat until nothing moves: for every ``cftensor.while``, every op directly in its
``before`` or ``after`` block that has no regions, has the ``Pure`` trait (so no fresh noise symbols)
and whose operands are all defined outside the loop is moved in front of the loop.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.traits import Pure

from cfmlir.dialects import cftensor as ct


def _defined_inside(v, loop: Operation) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None:
        if op is loop:
            return True
        op = op.parent_op()
    return False


def hoist_invariants(module: ModuleOp) -> int:
    moved = 0
    changed = True
    while changed:
        changed = False
        for loop in [o for o in module.walk() if isinstance(o, ct.WhileOp)]:
            for block in (loop.before.block, loop.after.block):
                for op in list(block.ops):
                    if op.regions or not op.has_trait(Pure) or isinstance(op, ct.ReturnOp):
                        continue
                    if any(_defined_inside(v, loop) for v in op.operands):
                        continue
                    op.detach()
                    loop.parent_block().insert_op_before(op, loop)
                    moved += 1
                    changed = True
    return moved


class LoopInvariantCodeMotion(ModulePass):
    """``-p cftensor-licm``: pure loop-invariant ops out of ``cftensor.while`` (the module's Algorithm)."""

    name = "cftensor-licm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hoist_invariants(op)
