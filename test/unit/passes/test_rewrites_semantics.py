"""Each rewrite preserves meaning: the emitted program gives the same bounds with and without it
(issue 5, acceptance 2), on small networks built here, with dense, general g-BSCR and planned
g-BSCR tensors.  Each case also checks that the rewrite changed the program, so the comparison is not
vacuous.  The rewrites of the per-neuron traverse loop are checked on a DeepPoly whose priority reads
the coefficient (``specs/deeppoly_coeff_priority.cf``): the shipped certifiers' traverses substitute
whole layers, without that loop."""

from pathlib import Path

import pytest
import torch

from cfmlir.certifiers import certifier_source
from cfmlir.dialects import cftensor as ct
from cfmlir.frontend import compile_to_cf
from cfmlir.passes.emit_python import emit_python
from cfmlir.passes.pipeline import run_pipeline
from cfruntime.flow.engine import CompiledCertifier, run_certifier

from cftest.nets import boxes, mlp, small_conv

BASE = ("shape-analysis", "fold-parts", "fold-constants", "cse", "dce")
PER_NEURON = str(Path(__file__).parent / "specs" / "deeppoly_coeff_priority.cf")


def ops_of(cls, where=lambda op: True):
    """Counter of the ops of class ``cls`` that satisfy ``where``."""
    return lambda module: sum(1 for op in module.walk() if isinstance(op, cls) and where(op))


def _owner_is(v, cls, name=None) -> bool:
    return isinstance(v.owner, cls) and (name is None or v.owner.op.data == name)


# rewrite -> (passes run before it, certifier it must change, counter that must grow with it)
CASES = {
    "ternary-to-arith": (BASE, "deeppoly", ops_of(ct.MultOp)),
    "clamp-rewrite": (BASE + ("ternary-to-arith",), "deeppoly", ops_of(ct.ClampOp)),
    "matmul-rewrite": (BASE + ("ternary-to-arith", "clamp-rewrite"), "ibp", ops_of(ct.InnerOp)),
    # the priority comparison no longer reads the where-masked copy
    "guarded-compare": (BASE, PER_NEURON, ops_of(ct.BinaryOp, lambda op: op.op.data == "eq" and not any(
        _owner_is(v, ct.TernaryOp) for v in op.operands))),
    # the loop test reads the coefficients themselves, not a != 0 mask
    "nonzero-mask": (BASE + ("ternary-to-arith",), PER_NEURON, ops_of(ct.AnyOp, lambda op: not _owner_is(
        op.operands[0], ct.BinaryOp, "ne"))),
    # the sign split of back-substitution's coefficients becomes one op
    # (clamp-rewrite fires on map summands once matmul-rewrite has re-associated the products)
    "split-inner": (BASE + ("ternary-to-arith", "matmul-rewrite", "clamp-rewrite", "matmul-rewrite", "cse"), "ibp",
                    ops_of(ct.SplitInnerOp)),
    # the traverse's least priority among the referred neurons is one op, without the != 0 mask
    "masked-reduce": (BASE, PER_NEURON, ops_of(ct.MaskedReduceOp)),
    # the lower and upper bound of one product over a box share the centre and radius products
    "interval-inner": (BASE + ("ternary-to-arith", "matmul-rewrite", "clamp-rewrite", "matmul-rewrite", "cse",
                               "split-inner"), "ibp", ops_of(ct.IntervalInnerOp)),
    # a layer's substitution (both parts of c+ L + c- U) is one op
    "substitute": (BASE + ("ternary-to-arith", "matmul-rewrite", "clamp-rewrite", "matmul-rewrite", "cse",
                           "split-inner", "fold-parts", "cse"), "deeppoly", ops_of(ct.SubstituteOp)),
    # conditions on the layer (CROWN-IBP's last layer) are host branches that run one side
    "uniform-branch": (BASE, "crown_ibp", ops_of(ct.IfOp)),
    "domain-rewrites": (BASE, "deeppoly", ops_of((ct.InnerOp, ct.SplitInnerOp))),
}


def compiled(name: str, pipeline):
    source = (Path(name).read_text(), name) if name.endswith(".cf") else certifier_source(name)
    module = compile_to_cf(*source)
    run_pipeline(module, pipeline)
    module.verify()
    return module, CompiledCertifier.from_source(name, emit_python(module, name))


def network(kind):
    """A small MLP, or a conv net (the compiled engine keeps its conv layers as convolution blocks)."""
    if kind == "mlp":
        return mlp([3, 5, 4, 3], seed=2), boxes(3, batch=3, seed=3)
    net = small_conv(seed=2)
    return net, boxes(net.layers[0].size, batch=2, seed=3, radius=0.1)


@pytest.mark.parametrize("net_kind", ["mlp", "conv"])
@pytest.mark.parametrize("rewrite", sorted(CASES))
@pytest.mark.parametrize("certifier", ["ibp", "deeppoly", "deepz", "crown_ibp", PER_NEURON, "alpha_deeppoly"],
                         ids=lambda c: Path(c).stem)
def test_rewrite_preserves_bounds(rewrite, certifier, net_kind):
    net, (lb, ub) = network(net_kind)
    before, want, counter = CASES[rewrite]
    m_without, c_without = compiled(certifier, before)
    m_with, c_with = compiled(certifier, before + (rewrite,))
    if certifier == want:
        assert counter(m_with) > counter(m_without), f"{rewrite} did not fire on {certifier}"
    for rep in ("dense", "gbscr", "planned"):
        r1 = run_certifier(c_without, net, lb, ub, representation=rep)
        r2 = run_certifier(c_with, net, lb, ub, representation=rep)
        torch.testing.assert_close(r2.lower, r1.lower, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(r2.upper, r1.upper, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("net_kind", ["mlp", "conv"])
@pytest.mark.parametrize("certifier", ["ibp", "crown_ibp"])
def test_interval_inner_offset_preserves_bounds(certifier, net_kind):
    """``lo + b, hi + b`` of ``interval_inner(x, l, u)`` -> ``interval_inner(x, l, u, b)`` (interval-inner):
    the affine layers' bias goes onto the centre before the split, in float64 the same bounds up to
    rounding; the rewrite fires (every affine rule's pair of additions is gone)."""
    net, (lb, ub) = network(net_kind)
    before = CASES["interval-inner"][0] + ("interval-inner",)
    with_offset = ops_of(ct.IntervalInnerOp, lambda op: op.offset is not None)
    m_with, c_with = compiled(certifier, before)
    assert with_offset(m_with) >= 1
    m_without, c_without = compiled(certifier, CASES["interval-inner"][0])
    assert with_offset(m_without) == 0
    for rep in ("dense", "gbscr", "planned"):
        r1 = run_certifier(c_without, net, lb, ub, representation=rep)
        r2 = run_certifier(c_with, net, lb, ub, representation=rep)
        torch.testing.assert_close(r2.lower, r1.lower, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(r2.upper, r1.upper, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("net_kind", ["mlp", "conv"])
def test_extremum_clamp_preserves_bounds_with_random_parameters(net_kind):
    """``max(x, c) -> clamp(x, min=c)``, ``min(x, c) -> clamp(x, max=c)`` (clamp-rewrite): alpha-DeepPoly
    scales its coefficients with max/min against 0 in every back-substitution step; same bounds with
    its slopes at random values (the same raw values in both programs)."""
    from cfruntime.flow.param_store import ParamStore

    net, (lb, ub) = network(net_kind)
    extremum = ops_of(ct.BinaryOp, lambda op: op.op.data in ("max", "min"))
    m_without, c_without = compiled("alpha_deeppoly", BASE)
    m_with, c_with = compiled("alpha_deeppoly", BASE + ("clamp-rewrite",))
    assert extremum(m_with) < extremum(m_without)
    for rep in ("dense", "gbscr", "planned"):
        g = torch.Generator().manual_seed(4)
        ps = ParamStore(fill=lambda lo, hi, init: lo + (hi - lo) * torch.rand(lo.shape, generator=g, dtype=lo.dtype))
        r1 = run_certifier(c_without, net, lb, ub, representation=rep, params=ps)
        r2 = run_certifier(c_with, net, lb, ub, representation=rep, params=ps)
        assert ps.raw
        torch.testing.assert_close(r2.lower, r1.lower, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(r2.upper, r1.upper, rtol=1e-9, atol=1e-9)


#: alpha-DeepPoly up to the substitution: its scaled sides are made (clamp-rewrite's ScaledClamp), not fused
_ALPHA_SIDES = BASE + ("ternary-to-arith", "matmul-rewrite", "clamp-rewrite", "matmul-rewrite", "cse", "split-inner",
                       "fold-parts", "cse")


def _random_slopes(seed: int):
    from cfruntime.flow.param_store import ParamStore

    g = torch.Generator().manual_seed(seed)
    return ParamStore(fill=lambda lo, hi, init: lo + (hi - lo) * torch.rand(lo.shape, generator=g, dtype=lo.dtype),
                      requires_grad=True)


@pytest.mark.parametrize("net_kind", ["mlp", "conv"])
def test_scaled_substitute_preserves_bounds_and_gradients(net_kind):
    """``combine_poly(inner(add_dim(c+ a), coeff(L)) + inner(add_dim(c- b), coeff(U)), ...) ->
    substitute_scaled(c, a, b, L, U)`` (substitute): alpha-DeepPoly's scaled back-substitution step as
    one op.  Same bounds with the slopes at random values in their domains, and the same gradients of
    the bounds with respect to every slope (the scale multiplies the sign part, as before)."""
    net, (lb, ub) = network(net_kind)
    m_without, c_without = compiled("alpha_deeppoly", _ALPHA_SIDES)
    m_with, c_with = compiled("alpha_deeppoly", _ALPHA_SIDES + ("substitute",))
    scaled = ops_of(ct.SubstituteScaledOp)
    assert scaled(m_without) == 0 and scaled(m_with) == 6  # lower and upper, in the Affine, Neuron_add and Neuron_mult rules
    for rep in ("dense", "gbscr", "planned"):
        grads = []
        for c in (c_without, c_with):
            ps = _random_slopes(5)
            r = run_certifier(c, net, lb, ub, representation=rep, params=ps)
            keys = sorted(ps.raw)
            assert keys
            g = torch.autograd.grad(r.lower.sum() - 0.5 * r.upper.sum(), [ps.raw[k] for k in keys], allow_unused=True)
            grads.append((r, keys, g))
        (r1, k1, g1), (r2, k2, g2) = grads
        torch.testing.assert_close(r2.lower, r1.lower, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(r2.upper, r1.upper, rtol=1e-9, atol=1e-9)
        assert k1 == k2
        for a, b in zip(g1, g2):
            assert (a is None) == (b is None)
            if a is not None:
                torch.testing.assert_close(b, a, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("net_kind", ["mlp", "conv"])
def test_scaled_clamp_preserves_bounds(net_kind):
    """``mult(ge(x, 0), mult(x, a)) -> mult(clamp(x, min=0), a)`` (clamp-rewrite's ScaledClamp; also the
    ``not(ge)`` side): alpha-DeepPoly's sides are products of a clamp; same bounds with random slopes."""
    net, (lb, ub) = network(net_kind)
    before = BASE + ("ternary-to-arith",)
    m_without, c_without = compiled("alpha_deeppoly", before)
    m_with, c_with = compiled("alpha_deeppoly", before + ("clamp-rewrite",))
    clamp_times = ops_of(ct.MultOp, lambda op: any(isinstance(v.owner, ct.ClampOp) for v in op.operands))
    assert clamp_times(m_without) == 0 and clamp_times(m_with) >= 4
    for rep in ("dense", "gbscr", "planned"):
        r1 = run_certifier(c_without, net, lb, ub, representation=rep, params=_random_slopes(6))
        r2 = run_certifier(c_with, net, lb, ub, representation=rep, params=_random_slopes(6))
        torch.testing.assert_close(r2.lower, r1.lower, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(r2.upper, r1.upper, rtol=1e-9, atol=1e-9)
