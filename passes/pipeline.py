"""The compiler's passes by name, and the pipelines that ``cf-opt``/``cf-run`` use.

Every domain rewrite is a :class:`RewritePattern` in its own file; :class:`RewritePass` wraps a set of
them as an xDSL ``ModulePass`` applied greedily to a fixpoint.  ``DEFAULT_PIPELINE`` is what ``cf-run``
compiles with; ``NO_REWRITE_PIPELINE`` drops the domain rewrites (the paper's ablation) but keeps the
generic clean-ups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker, RewritePattern
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from cfmlir.passes.exactness_analysis import ExactnessPass
from cfmlir.passes.loop_invariant_code_motion import LoopInvariantCodeMotion
from cfmlir.passes.rewrite_broadcast_hoist import HoistBroadcast
from cfmlir.passes.rewrite_clamp import ClampRewrite, ExtremumClamp, ScaledClamp
from cfmlir.passes.rewrite_fold_constants import FoldConstants
from cfmlir.passes.rewrite_fold_parts import FoldParts
from cfmlir.passes.rewrite_guarded_compare import GuardedCompare
from cfmlir.passes.rewrite_interval_inner import IntervalInner, IntervalInnerOffset
from cfmlir.passes.rewrite_masked_reduce import MaskedReduce
from cfmlir.passes.rewrite_matmul import MatmulRewrite
from cfmlir.passes.rewrite_mult_assoc import AssociateProducts
from cfmlir.passes.rewrite_nonzero_mask import NonzeroAny, NonzeroMask
from cfmlir.passes.rewrite_reduce_distribute import DistributeReduce
from cfmlir.passes.rewrite_split_inner import SplitInner
from cfmlir.passes.rewrite_substitute import ScaledSubstitute, Substitute
from cfmlir.passes.rewrite_ternary_to_arith import TernaryToArith
from cfmlir.passes.shape_analysis import ShapeAnalysisPass
from cfmlir.passes.uniform_branch import UniformBranchPass


class RewritePass(ModulePass):
    """Apply the class's rewrite patterns greedily until none matches.  Each subclass below is one
    ``-p`` pass: its ``name`` and the pattern classes it applies (their files hold the algebra).

    Algorithm: walk the module, trying every pattern on every op (nested regions included); repeat
    while any pattern rewrote something (xDSL's ``PatternRewriteWalker``)."""

    name = "cftensor-rewrites"
    PATTERNS: ClassVar[tuple[Callable[[], RewritePattern], ...]] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [p() for p in self.PATTERNS]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns), apply_recursively=True).rewrite_module(op)


@dataclass(frozen=True)
class TernaryToArithPass(RewritePass):
    """Branch-free conditionals, so that the matmul rewrite can see products (:mod:`.rewrite_ternary_to_arith`)."""

    name = "ternary-to-arith"
    PATTERNS = (TernaryToArith, HoistBroadcast)


@dataclass(frozen=True)
class ClampRewritePass(RewritePass):
    """A value masked by its own sign, or max/min with a constant, is a clamp (:mod:`.rewrite_clamp`)."""

    name = "clamp-rewrite"
    PATTERNS = (ClampRewrite, ExtremumClamp, ScaledClamp, HoistBroadcast)


@dataclass(frozen=True)
class MatmulRewritePass(RewritePass):
    """A sum of a product of broadcast operands is an inner product (paper section 4.3; :mod:`.rewrite_matmul`)."""

    name = "matmul-rewrite"
    PATTERNS = (MatmulRewrite, DistributeReduce, AssociateProducts, HoistBroadcast, FoldParts)


@dataclass(frozen=True)
class GuardedComparePass(RewritePass):
    """A comparison only read where a mask holds need not look through the mask (:mod:`.rewrite_guarded_compare`)."""

    name = "guarded-compare"
    PATTERNS = (GuardedCompare,)


@dataclass(frozen=True)
class NonzeroMaskPass(RewritePass):
    """An "is non-zero" test of a value that is then masked or tested is redundant (:mod:`.rewrite_nonzero_mask`)."""

    name = "nonzero-mask"
    PATTERNS = (NonzeroMask, NonzeroAny)


@dataclass(frozen=True)
class SplitInnerPass(RewritePass):
    """Back-substitution's sign split of one coefficient tensor is one op (:mod:`.rewrite_split_inner`)."""

    name = "split-inner"
    PATTERNS = (SplitInner,)


@dataclass(frozen=True)
class MaskedReducePass(RewritePass):
    """The least or greatest value where a tensor is non-zero, as one op (:mod:`.rewrite_masked_reduce`)."""

    name = "masked-reduce"
    PATTERNS = (MaskedReduce,)


@dataclass(frozen=True)
class IntervalInnerPass(RewritePass):
    """The lower and upper bound of one product over a box share their products (:mod:`.rewrite_interval_inner`)."""

    name = "interval-inner"
    PATTERNS = (IntervalInner, IntervalInnerOffset)


@dataclass(frozen=True)
class SubstitutePass(RewritePass):
    """Replacing a layer's summands by their PolyExps is one op (:mod:`.rewrite_substitute`)."""

    name = "substitute"
    PATTERNS = (Substitute, ScaledSubstitute)


@dataclass(frozen=True)
class FoldPartsPass(RewritePass):
    """Copy propagation through PolyExp/SymExp packing (:mod:`.rewrite_fold_parts`)."""

    name = "fold-parts"
    PATTERNS = (FoldParts,)


@dataclass(frozen=True)
class FoldConstantsPass(RewritePass):
    """Constant folding and algebraic identities on compile-time scalars (:mod:`.rewrite_fold_constants`)."""

    name = "fold-constants"
    PATTERNS = (FoldConstants,)


@dataclass(frozen=True)
class DomainRewritesPass(RewritePass):
    """All domain rewrites together, to a fixpoint."""

    name = "domain-rewrites"
    PATTERNS = (FoldParts, FoldConstants, TernaryToArith, HoistBroadcast, ClampRewrite, ExtremumClamp, ScaledClamp, AssociateProducts,
                DistributeReduce, MatmulRewrite, GuardedCompare, NonzeroMask, NonzeroAny, SplitInner, MaskedReduce,
                IntervalInner, IntervalInnerOffset, Substitute, ScaledSubstitute)


#: Every pass the compiler and ``cf-opt`` know (``cf-opt`` derives its ``-p`` names and its
#: ``--NAME`` flags from this tuple).
ALL_PASSES: tuple[type[ModulePass], ...] = (
    ShapeAnalysisPass, TernaryToArithPass, ClampRewritePass, MatmulRewritePass, GuardedComparePass,
    NonzeroMaskPass, SplitInnerPass, MaskedReducePass, IntervalInnerPass, SubstitutePass, FoldPartsPass,
    FoldConstantsPass, DomainRewritesPass, UniformBranchPass, CommonSubexpressionElimination,
    DeadCodeElimination, LoopInvariantCodeMotion, ExactnessPass,
)

#: ``-p`` name -> pass class.
PASSES: dict[str, type[ModulePass]] = {p.name: p for p in ALL_PASSES}

DEFAULT_PIPELINE = ("shape-analysis", "fold-parts", "fold-constants", "cse", "uniform-branch", "domain-rewrites", "cse",
                    "cftensor-licm", "dce", "exactness")
NO_REWRITE_PIPELINE = ("shape-analysis", "fold-parts", "fold-constants", "cse", "uniform-branch", "cftensor-licm", "dce",
                       "exactness")


def run_pipeline(module: ModuleOp, names: tuple[str, ...] | list[str], ctx: Context | None = None) -> None:
    ctx = ctx or Context()
    for name in names:
        PASSES[name]().apply(ctx, module)
