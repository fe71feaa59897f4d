"""``--masked-reduce``: the least (or greatest) value over the positions where a tensor is non-zero
is one op.

    # reduce(where(ne(c, 0), p, inf), min) -> masked_reduce(c, p, min)     (ne(0, c) too)
    # reduce(where(ne(c, 0), p, -inf), max) -> masked_reduce(c, p, max)

Where ``c`` is 0 the ``where`` gives the reduction's identity, which changes no minimum (maximum);
elsewhere it gives ``p``.  This is the traverse's priority selection (``min over the neurons still
referred to of prio``): the rewritten form builds neither the ``c != 0`` mask nor the masked copy of
``p`` -- both as large as the coefficients -- and at run time reads each block of ``c`` once, taking a
layer's priority for every row that still refers to that layer.
"""

from __future__ import annotations

import math

from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from cfmlir.dialects import cftensor as ct
from cfmlir.passes.rewrite_utils import const_value, nonzero_tested

IDENTITY = {"min": math.inf, "max": -math.inf}


class MaskedReduce(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ct.ReduceOp, rewriter: PatternRewriter) -> None:
        kind = op.kind.data
        select = op.input.owner
        if kind not in IDENTITY or not isinstance(select, ct.TernaryOp) \
                or const_value(select.otherwise) != IDENTITY[kind]:
            return
        c = nonzero_tested(select.cond)
        if c is None or len(ct.meta(c).shape) != len(ct.meta(select.then).shape):
            return
        rewriter.replace(op, [ct.MaskedReduceOp(c, select.then, op.dim.data, kind, op.result.type)])
