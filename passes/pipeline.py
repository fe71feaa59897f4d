"""The compiler's passes by name, and the pipelines that ``cf-opt``/``cf-run`` use.

Every domain rewrite is a :class:`RewritePattern` in its own file; :class:`RewritePass` wraps a set of
them as an xDSL ``ModulePass`` applied greedily to a fixpoint.  ``DEFAULT_PIPELINE`` is what ``cf-run``
compiles with; ``NO_REWRITE_PIPELINE`` drops the domain rewrites (the paper's ablation) but keeps the
generic clean-ups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker, RewritePattern
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from cfmlir.passes.loop_invariant_code_motion import LoopInvariantCodeMotion
from cfmlir.passes.rewrite_broadcast_hoist import HoistBroadcast
from cfmlir.passes.rewrite_clamp import ClampRewrite
from cfmlir.passes.rewrite_fold_constants import FoldConstants
from cfmlir.passes.rewrite_fold_parts import FoldParts
from cfmlir.passes.rewrite_guarded_compare import GuardedCompare
from cfmlir.passes.rewrite_interval_inner import IntervalInner
from cfmlir.passes.rewrite_masked_reduce import MaskedReduce
from cfmlir.passes.rewrite_matmul import MatmulRewrite
from cfmlir.passes.rewrite_mult_assoc import AssociateProducts
from cfmlir.passes.rewrite_nonzero_mask import NonzeroAny, NonzeroMask
from cfmlir.passes.rewrite_reduce_distribute import DistributeReduce
from cfmlir.passes.rewrite_split_inner import SplitInner
from cfmlir.passes.rewrite_substitute import Substitute
from cfmlir.passes.rewrite_ternary_to_arith import TernaryToArith
from cfmlir.passes.shape_analysis import ShapeAnalysisPass
from cfmlir.passes.uniform_branch import UniformBranchPass


class RewritePass(ModulePass):
    """Apply the class's rewrite patterns greedily until none matches."""

    name = "cftensor-rewrites"
    PATTERNS: tuple[Callable[[], RewritePattern], ...] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [p() for p in self.PATTERNS]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns), apply_recursively=True).rewrite_module(op)


def _rewrite(name: str, *patterns: Callable[[], RewritePattern], doc: str | None = None) -> type[ModulePass]:
    """A pass class named ``name`` applying ``patterns`` (by default the first one's module names it)."""
    doc = doc or (__import__(patterns[0].__module__, fromlist=["_"]).__doc__ or name).strip().splitlines()[0]
    return dataclass(frozen=True)(type(
        "".join(p.title() for p in name.split("-")) + "Pass", (RewritePass,),
        {"name": name, "PATTERNS": patterns, "__doc__": doc, "__annotations__": {}, "__module__": __name__},
    ))


#: ``-p`` name -> pass class.
PASSES: dict[str, type[ModulePass]] = {
    "shape-analysis": ShapeAnalysisPass,
    "ternary-to-arith": _rewrite("ternary-to-arith", TernaryToArith, HoistBroadcast),
    "clamp-rewrite": _rewrite("clamp-rewrite", ClampRewrite, HoistBroadcast),
    "matmul-rewrite": _rewrite("matmul-rewrite", MatmulRewrite, DistributeReduce, AssociateProducts, HoistBroadcast, FoldParts),
    "guarded-compare": _rewrite("guarded-compare", GuardedCompare),
    "nonzero-mask": _rewrite("nonzero-mask", NonzeroMask, NonzeroAny),
    "split-inner": _rewrite("split-inner", SplitInner),
    "masked-reduce": _rewrite("masked-reduce", MaskedReduce),
    "interval-inner": _rewrite("interval-inner", IntervalInner),
    "substitute": _rewrite("substitute", Substitute),
    "fold-parts": _rewrite("fold-parts", FoldParts),
    "fold-constants": _rewrite("fold-constants", FoldConstants),
    "domain-rewrites": _rewrite(
        "domain-rewrites", FoldParts, FoldConstants, TernaryToArith, HoistBroadcast, ClampRewrite, AssociateProducts,
        DistributeReduce, MatmulRewrite, GuardedCompare, NonzeroMask, NonzeroAny, SplitInner, MaskedReduce, IntervalInner,
        Substitute, doc="All domain rewrites together, to a fixpoint.",
    ),
    "uniform-branch": UniformBranchPass,
    "cse": CommonSubexpressionElimination,
    "dce": DeadCodeElimination,
    "cftensor-licm": LoopInvariantCodeMotion,
}

DEFAULT_PIPELINE = ("shape-analysis", "fold-parts", "fold-constants", "cse", "uniform-branch", "domain-rewrites", "cse",
                    "cftensor-licm", "dce")
NO_REWRITE_PIPELINE = ("shape-analysis", "fold-parts", "fold-constants", "cse", "uniform-branch", "cftensor-licm", "dce")


def run_pipeline(module: ModuleOp, names: tuple[str, ...] | list[str], ctx: Context | None = None) -> None:
    ctx = ctx or Context()
    for name in names:
        PASSES[name]().apply(ctx, module)
