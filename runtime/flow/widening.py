"""Sound concrete bounds in low precision: outward widening of what a float32 run stores.

A certifier's proof of soundness is in real arithmetic.  Run in float32 (unit roundoff
``u = 2**-24``) every sum, product and quotient is rounded, and a stored lower bound can end up a
few 1e-6 *above* the true minimum of its neuron (PGD finds such points on real networks).  This
module makes every stored float32 bound of a shipped certifier hold for the real-valued network:
the engine (:func:`cfruntime.flow.engine.run_certifier`) calls :class:`Widening` for every layer it
stores, in float32/float16/bfloat16 runs only; float64 runs never reach it (bit for bit unchanged).

Rounding model
--------------
IEEE round to nearest, no TF32 (the engine switches it off), no underflow (an absolute ``eta`` is
added to every widening for the rest).  For a sum of products with at most ``n`` non-zero summands,
in *any* order (blocked, pairwise, FMA, split-K: every BLAS, GEMM-based or direct convolution
kernel), the classical bound (Higham, *Accuracy and Stability of Numerical Algorithms*, 3.1, 3.5)::

    |fl(sum_i a_i x_i) - sum_i a_i x_i| <= gamma(n) sum_i |a_i| |x_i|,   gamma(n) = n u / (1 - n u)

(a zero summand rounds nothing: ``n`` counts non-zero ones, so a convolution's sums are as long as
its kernel, a diagonal's are one term).  ``sigmoid``/``tanh``/``exp``/``log`` are taken to be within
4 ulp (torch's kernels are within 1-3).  Winograd/FFT convolutions (cuDNN may pick them on CUDA) are outside the
model.

The error analysis (``m_j = max(|l_j|, |u_j|)``, the magnitude of layer ``j``'s *stored*, already
widened bounds: ``|v_j| <= m_j`` for the true values; ``S`` the number of layers)
-----------------------------------------------------------------------------------------------
0. **Input.**  The boxes are rounded outward to the dtype (:func:`box_to_dtype`).  The engine then
   analyses the network in coordinates centred on the box, ``x = x0 + d`` (:func:`centre_input`):
   ``x0`` (a float32 number) goes into the first layers' biases, ``b' = b + W x0``, computed in
   float64, and the analysis sees ``|d| <= eps`` instead of ``|x| ~ 1``.  Rounding errors are
   relative to magnitudes, so this alone shrinks the dominant error (sums over the input) by
   ``|x| / eps`` (~250x on CIFAR at eps 0.002).  ``b'`` is rounded to float32: ``u |b'|`` plus
   ``gamma_64(fan-in + 1) (rowsum|W| max|x0| + |b|)`` for its float64 computation.

1. **Concretisation against stored Float bounds** (IBP's interval products, a stopped traverse's
   ``map(simplify_lower)``): ``sum_p c_p^+ l_p + c_p^- u_p`` over the ``<= n_j`` neurons of the layer
   the expression lives on errs by ``<= gamma(n_j + .) sum_p |c_p| m_p``.  It is *pre-charged*:
   layer ``j``'s stored bounds are widened by ``rho_pre(j) m_j`` more than they need, and since
   ``sum_p c_p^+ (l_p - w_p) + c_p^- (u_p + w_p) = sum_p (c_p^+ l_p + c_p^- u_p) - sum_p |c_p| w_p``,
   every later concretisation against them subtracts ``rho_pre(j) sum_p |c_p| m_p``: its own rounding
   error, whatever code computes it.  (On a chain network every concretisation of the shipped
   certifiers is over one layer -- ``prev.dot(W)`` or a traverse stopped on one layer -- so ``n_j`` is
   that layer's size; on other graphs the network's neuron count.  When the compiler shows that no rule
   concretises against a hidden layer but through its successors' sums within their fan-in --
   ``@fan-in = "I R [T]"``, at most ``I`` fan-ins plus ``R`` terms, ``T`` traverses that never stop
   (stop = false: they substitute every layer down to the input's box, the one concretisation they
   make), :mod:`cfmlir.passes.fanin_analysis` -- ``n_j`` is the largest such count among ``j``'s
   successors, the input's size for the input (:func:`concretisation_terms`): IBP's convolutions sum
   48-512 terms where their input layers have thousands of neurons, and CROWN-IBP's and DeepPoly's
   hidden layers are concretised only by such sums, or not at all; a zonotope's own sums -- its product
   with the weight, its concretisation over the noise symbols -- are section 3's and do not count, so
   DeepZ's counts are its rules' reads.)

2. **Back-substitution.**  A traverse step replaces the summands ``c . v_k`` of layer ``k`` by
   ``c^+ L_k + c^- U_k``.  New coefficient ``(r, p)``: ``sum_i c_ri L_k[i, p]``, at most
   ``col(L_k, p)`` non-zero terms (one for an activation's diagonal, ``C_out ceil(kh/sh) ceil(kw/sw)``
   for a convolution, ``n_k`` for a dense matrix); new constant: a sum over ``n_k`` terms.  Evaluated
   at the true values (``|v_p| <= m_p``) the step errs by ``<= |c| . omega_k`` with ``omega_k =
   sum_p gamma(col + .) |L_k[., p]| m_p + gamma(n_k + .) |const(L_k)|`` (doubled, with ``|L| + |U|``,
   where the kernels form ``c U + c^+ (L - U)``).  It is pre-charged too: the stored constants are
   moved outward, ``const(L_k) -= omega_k``, ``const(U_k) += omega_k``, and ``c^+ (const(L) - omega) +
   c^- (const(U) + omega) = ... - |c| . omega``: every substitution through layer ``k`` subtracts its
   own rounding error.  The claim ``z >= e(v)`` thus holds exactly, in real arithmetic, for the float
   expression ``e`` the traverse holds at every step (its coefficients being the computed ones).  The
   ``<= S`` additions of one coefficient or constant across a traverse's steps add ``S`` to every
   count; the initial constant (the bias) is charged ``gamma(S + 2) |b|`` on the layer itself.  The
   input layer's polyhedra are its box (constants only): the last step of a full back-substitution
   *is* the concretisation against the input, charged the same way.

3. **Zonotopes.**  ``Z_k = W (x) Z_{k-1} + b`` errs per noise symbol by ``gamma(fan-in) |W| |Z_{k-1}|``,
   i.e. at any ``eps`` by ``<= |W| (gamma(fan-in + 2) Mag(Z_{k-1})) + gamma(.) |b|``, ``Mag(Z) =
   rowsum|coeff| + |const|``: a per-neuron *slack*, ``v_k in Z_k(eps) + [-s_k, s_k]``, carried through
   layers without fresh noise symbols (through ``|W|``) and absorbed at layers that make one fresh
   symbol per neuron (every shipped activation rule; the input's generators): the fresh coefficient
   ``a_i`` becomes ``a_i + sign(a_i) s_i`` (symbol ``i`` occurs in neuron ``i`` only, so the new
   zonotope contains the old one plus the slack).  A zonotope's concretisation ``const -/+ sum |coeff|``
   errs by ``<= gamma(K) rowsum|coeff| + gamma(4) |const|`` (``K`` the longest sum over noise symbols).
   A rule may build its zonotope from its own (not yet widened) bounds (zid's box zonotope), so the
   slack is the layer's whole Float widening, which covers the composition slack too.

4. **Relaxation construction** (ReLU's ``u/(u-l)``, the S-curves' chords and tangents, DeepZ's
   ``lambda``/``mu``, zid's box zonotope, reusecert's ``lambda n[U]``) errs by ``<= gamma(32) (Mag(new)
   + m_k + 2 s m_pred)`` (:meth:`Widening.construction_error` has the derivations; ``s`` bounds the
   relaxation's slopes: 1 for every shipped activation, ``|alpha|`` for a LeakyRelu/Elu with
   ``|alpha| > 1``, which also scales the zonotope slack passed through the layer).

5. **Weights.**  A layer whose float64 weights or bias do not survive the cast (a folded
   normalisation, the margin layer ``C W``, a centred bias) is not the network's own: the difference
   is ``<= u (|W| m_pred + |b|)``, added to the layer's bounds and expressions.  For a consumer of the
   centred input ``|W| m_0 <= rowsum|W| max_p m_0p`` is charged instead (two elementwise operations, no
   matrix product; the box's radii are all about ``eps``, so it is at most about twice as large).

6. **Last operations** (``+ bias``, ``sigmoid(l)``, DeepZ's closed forms, ``max`` of two bounds, the
   widening's own subtraction) err relative to the result: ``gamma(16) m~`` (``m~`` the rule's
   magnitude); the formulas that cancel (Softplus's ``log(1 + exp(-|x|))``, Elu's ``exp(x) - 1``) also
   absolutely, by ``u``-sized amounts however small the result (:func:`_absolute_error`).

7. **Exact values and shared terms** (certifiers without zonotopes; :class:`~cfruntime.flow.widening_plan.Plan`
   decides per layer from the compiler's exactness tags, :mod:`cfmlir.passes.exactness_analysis`).

   * *Nothing reads the last layer*: its Float bounds carry no pre-charge and its polyhedra are never
     substituted, so they are left as the rule made them (its Float bounds get their own rounding only).
   * *Exact Float bounds* (a clamp, max/min, selection, negation, power-of-two scaling of stored
     bounds; ``|v| <= F m_pred + K``) round nothing: only the pre-charge, ``w = rho/(1 - rho) (F m_pred + K)``.
   * *Transparent Float bounds* (per neuron 0 or ``F b`` with ``b`` the same neuron's stored bound of
     the same role, ``F`` a power of two; ReLU's ``max(l, 0)``) need not even that: the predecessor is
     pre-charged with ``rho`` at least this layer's, ``b = b0 - delta`` with ``delta >= rho m_pred``,
     and every later concretisation term against ``x = F b`` (the stored value) either meets ``x = 0``
     (an exact product, no rounding) or receives ``F delta >= rho |x|``: the term's own share of the
     sum's rounding, as section 1 needs; ``m_k = F m_pred`` bounds ``|x|`` and the true values.  With
     polyhedra (``F <= 1``) ``m_k = max(-l, u)`` of the stored bounds instead (2 operations): it bounds them
     and the true values too (sound bounds, ``l <= u``), is at most ``m_pred``, and is 0 for a ReLU that is
     off, whose neurons then add nothing to the next layer's ``|W| . m`` (mnist 9x200 DeepPoly: 93 -> 94
     certified of 95).
   * *Inexact Float bounds* use ``mt = max(-lo, hi)`` for ``max(|lo|, |hi|)``: the rule is sound, so
     ``lo - e <= v <= hi + e'`` with its own rounding ``e, e' <= rho_post M + A`` (``M = max(|lo|, |hi|)``),
     hence ``lo - hi <= e + e'`` and ``M <= mt + max(0, lo - hi) <= (mt + 2A) / (1 - 2 rho_post)``: the
     factor ``1 / (1 - 4 rho_post)`` on every term covers it.  ``m_k = mt + w >= max(-l, h)`` is exact
     for the widened bounds (``l <= h`` as they are rigorous).  An affine layer's terms that no
     magnitude scales (the bias's, ``eta``) are one tensor, made once per layer (per run for a centred
     bias, in float64, with its cast and float64 errors), shared by its Float bounds and its polyhedra.
   * *The input box* is exact (rounded outward in section 0): its Float bounds get the pre-charge only,
     and its polyhedra (constants: the box) are those pre-charged bounds -- substituting them *is* a
     concretisation against them, in the split, select or centre/radius form, each within section 1's
     bound (``|c| + w/2 = max(|l|, |u|)`` for the centre/radius form).
   * *An affine layer left to its successors*: when every successor of affine layer ``k`` is an
     element-wise layer whose rule substitutes nothing, and ``k``'s lower and upper polyhedra are one
     expression, its ``omega_k`` (section 2) is not subtracted from its constants (which would make a
     back-substitution through it split its coefficients by sign) but charged on each successor's
     diagonal relaxation pair ``a z + kL``, ``b z + kU``: a substitution through the successor makes the
     coefficients over ``k`` from ``x`` as ``x+ a + x- b`` (select form) or ``x+ (a - b) + x b`` (in
     place), or ``x (a + b)/2 + |x| (a - b)/2`` (centre/radius), each ``x+ a + x- b`` in real arithmetic
     up to a few roundings relative to ``|x| (|a| + 2|b|) <= 3 |x| max(|a|, |b|)``, so ``|c_k| <= |x|
     max(|a|, |b|) (1 + 8u)`` (``test_widening_left_term``), and moving both of the successor's
     constants by ``(1 + 8u) max(|a|, |b|) omega_k`` more subtracts at least ``|c_k| . omega_k`` in
     every traverse that reaches ``k`` (all pass through a successor): nothing where the successor's
     neuron is off (``a = b = 0``), ``omega_k`` where it is on (cifar ConvSmall PGD DeepPoly: the
     conv2 bounds' widening 1.9e-2 -> 3.5e-3 (median) against ``2 (1 + 4u) (|a| + |b|)``, 67 -> 70
     certified of 100, float32 unwidened's count).  A successor whose pair is not one diagonal over
     ``k`` makes the engine move ``k``'s constants after all (before any later rule runs).
   * *A diagonal relaxation pair* (section 2's diagonal case with section 4's construction error) is
     one per-neuron ``omega``, formed negative in place and added to both constants: ``(2 gamma(n + S + 4)
     + rc) (|kL| + |kU|)`` bounds the constant terms (``max + |difference| + rc (|kL| + |kU|)``), a 0/1
     lower relaxation (``unit``) has ``|a| <= 1``, and ``rc (m_k + 2 m_pred)`` is ``3 rc m_pred`` when
     ``m_k`` is the predecessor's.

Every quantity above is itself computed in float (a sum of at most ``K_max`` terms), so every
widening is multiplied by ``SAFETY = 1 + 2 gamma(K_max + 16)``.

Cost (section 7's forms, no zonotopes): a transparent layer (ReLU's bounds) none; an inexact affine
layer 6 elementwise operations for its Float bounds and one ``addmm`` (``|W|^T`` memoised) for its
polyhedra; a diagonal relaxation pair about 8; the input 5; the centring about 15 per batch (a consumer of
the centred input whose weights do not survive the cast charges section 5 as ``rowsum|W| max m``: no
matrix product).  With
zonotopes (section 3) every layer's widening is one linear combination of magnitudes
(:func:`_lincomb`), about 20 elementwise operations, one ``|coeff| . m`` product per stored polyhedron
pair and one ``|coeff|`` row sum per zonotope.  No host syncs, no change to the rules or the traverses.
"""

from __future__ import annotations

import math

import torch

from cfruntime import contract
from cfruntime.errors import UserError
from cfruntime import tensor as gb
from cfruntime.flow import parameters, widening_plan
from cfruntime.flow.values import Affine
from cfruntime.tensor import ConvBlock, DiagonalBlock, PatchesBlock, Segmented
from cfruntime.tensor.segmented_ops import _abs_of, _dot_last
from cfruntime.tensor.scalars import scalar_like
from cfruntime.tensor.shape_ops import broadcast_shape

#: dtypes whose runs are widened (float64 runs are left exactly as they are)
WIDENED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
#: roundings in a relaxation's coefficients (with 4-ulp transcendental functions), see construction_error
CONSTRUCTION_OPS = 32
#: roundings in the last operations before a bound is stored
POST_OPS = 16
U64 = 2.0 ** -53


class WideningError(UserError, RuntimeError):
    """No sound widening exists (the dtype is too coarse for sums this long): a user error (run in a wider dtype)."""


def unit_roundoff(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps / 2


def gamma(n: float, u: float) -> float:
    """``n u / (1 - n u)``: the relative error bound of a sum of ``n`` rounded products."""
    nu = n * u
    if nu >= 0.25:
        raise WideningError(f"sums of {int(n)} terms: no useful error bound at unit roundoff {u:.3g} "
                            "(run in float32 or float64)")
    return nu / (1 - nu)


def widened(dtype: torch.dtype) -> bool:
    return dtype in WIDENED_DTYPES


def box_to_dtype(lb: torch.Tensor, ub: torch.Tensor, dtype: torch.dtype, device=None):
    """``lb``/``ub`` cast to ``dtype`` on ``device`` rounded outward (one step down/up from the
    nearest), so that the cast box contains the given one; a plain cast when no rounding can happen
    (same or narrower source)."""
    lo = lb.to(device=device, dtype=dtype)
    hi = ub.to(device=device, dtype=dtype)
    if not lb.dtype.is_floating_point or torch.finfo(lb.dtype).bits <= torch.finfo(dtype).bits:
        return lo, hi
    return _outward(lo, hi)


def box_to_dtype_exact(lb: torch.Tensor | None, ub: torch.Tensor | None, dtype: torch.dtype, device=None):
    """``lb``/``ub`` (either may be None) cast to ``dtype`` on ``device``, a step outward only where the cast
    rounded inward: a value the dtype holds exactly stays (a split neuron's bound 0 stays 0, so the neuron
    stays stable in a float32 run; :func:`box_to_dtype` would make it ``-1.4e-45``, an unstable ReLU whose
    relaxation -- and, in ``alpha_deeppoly``, whose free slope -- a float32 optimisation then moves).  The
    cast bounds still contain the given ones."""
    lo = None if lb is None else lb.to(device=device, dtype=dtype)
    hi = None if ub is None else ub.to(device=device, dtype=dtype)
    src = lb if lb is not None else ub
    if not src.dtype.is_floating_point or torch.finfo(src.dtype).bits <= torch.finfo(dtype).bits:
        return lo, hi
    if lo is not None:  # rounded up past lb: one step down
        up = (lo.to(device=lb.device, dtype=lb.dtype) > lb).to(lo.device)
        lo = torch.where(up, torch.nextafter(lo, scalar_like(-math.inf, lo)), lo)
    if hi is not None:  # rounded down past ub: one step up
        down = (hi.to(device=ub.device, dtype=ub.dtype) < ub).to(hi.device)
        hi = torch.where(down, torch.nextafter(hi, scalar_like(math.inf, hi)), hi)
    return lo, hi


def _outward(lo: torch.Tensor, hi: torch.Tensor):
    """``lo`` one representable number down, ``hi`` one up (a value rounded to nearest is then on the
    right side of what it was rounded from)."""
    return torch.nextafter(lo, scalar_like(-math.inf, lo)), torch.nextafter(hi, scalar_like(math.inf, hi))


# -- the input centred on its box ---------------------------------------------------------------------
def _kept_per_version(t: torch.Tensor, slot: str, key: tuple, make, versions=()):
    """``make()`` kept on ``t`` under ``key`` and the in-place versions of ``t`` and ``versions`` (made
    again after any of them is written in place; the stale value of the same ``key`` is dropped)."""
    memo = t.__dict__.setdefault(slot, {})
    full = key + (t._version,) + tuple(v._version for v in versions)
    if full not in memo:
        for old in [k for k in memo if k[:len(key)] == key]:
            del memo[old]
        memo[full] = make()
    return memo[full]


def _f64_source(layer, device):
    """The layer's float64 weight source on ``device``, ``(w, rowsum |w|, w^T)`` (``w^T`` a view, dense
    only), made once per device and in-place version, kept on the tensor: a CUDA graph's capture must
    not copy from the host."""
    src = _weight_source(layer)

    def make():
        w = src.to(device=device, dtype=torch.float64)
        rs = (src.abs().reshape(src.shape[0], -1).sum(1).to(device=device, dtype=torch.float64)
              if layer.linear_kind != "gather" else src.abs().to(device=device, dtype=torch.float64))
        # w^T from w.detach(): w may be src itself, and a view of it kept on it is a cycle never freed
        return w, rs, w.detach().t() if layer.linear_kind == "dense" and w.dim() == 2 else None

    return _kept_per_version(src, "_cf_f64_on", (str(device),), make)


def _dense64(layer, device, g: float):
    """A dense layer's float64 ``(W^T, b [1, n], g |b|, rowsum |W| [1, n])`` on ``device`` (made once,
    kept on its weight)."""
    return (_f64_source(layer, device)[2],) + _bias_terms64(layer, device, g)


def _bias_terms64(layer, device, g: float):
    """A layer's float64 ``(b [1 or B, n], g |b|, rowsum |W| [1 or B, n])`` on ``device``: what
    :func:`centre_input` adds and charges per consumer of the input (made once per bias and weight
    version, kept on the bias; see :func:`_bias64`)."""
    def make():
        b = _bias64(layer, device)
        b = b if b.dim() == 2 else b.unsqueeze(0)
        return b, b.abs() * g, _row_abs_sum64(layer, device)

    if layer.linear_kind == "dense" and layer.weight.dim() == 3:  # a batch's own weights: not kept
        return make()
    return _kept_per_version(layer.bias, "_cf_terms64", (str(device), g), make, (_weight_source(layer),))


def _bias64(layer, device) -> torch.Tensor:
    """A layer's bias in float64 on ``device`` (made once per in-place version, kept on the bias: a CUDA
    graph's capture must not copy from the host; a batched bias is on the device already)."""
    return _kept_per_version(layer.bias, "_cf_f64_on", (str(device),),
                             lambda: layer.bias.to(device=device, dtype=torch.float64))


def _gather_index(layer, device) -> torch.Tensor:
    """A gather layer's index on ``device`` (made once, kept on the index; see :func:`_bias64`)."""
    index = layer.gather.index
    memo = index.__dict__.setdefault("_cf_on", {})
    if str(device) not in memo:
        memo[str(device)] = index.to(device)
    return memo[str(device)]


def _matvec64(layer, x: torch.Tensor) -> torch.Tensor:
    """``W x`` in float64 on ``x``'s device (``x`` ``[B, in]`` float64)."""
    w = _f64_source(layer, x.device)[0]
    if layer.linear_kind == "dense":
        return torch.einsum("bkp,bp->bk", w, x) if w.dim() == 3 else x @ w.T
    if layer.linear_kind == "gather":
        g = layer.gather
        return x[:, _gather_index(layer, x.device)] * w
    cv = layer.conv
    b = x.shape[0]
    t, l, bo, r = cv.padding
    xi = x.reshape(b, *cv.in_shape)
    if any(cv.padding):
        xi = torch.nn.functional.pad(xi, (l, r, t, bo))
    return torch.nn.functional.conv2d(xi, w, stride=cv.stride, dilation=cv.dilation).reshape(b, -1)


def _row_abs_sum64(layer, device) -> torch.Tensor:
    """``rowsum |W|`` per output neuron, float64 ``[1 or B, n]`` (conv: per output channel, spread)."""
    rs = _f64_source(layer, device)[1]
    if layer.linear_kind == "dense":
        return rs.reshape(1, -1) if layer.weight.dim() == 2 else layer.weight.abs().sum(-1).to(device=device, dtype=torch.float64)
    if layer.linear_kind == "gather":
        return rs.reshape(1, -1)
    oc, oh, ow = layer.conv.out_shape
    return rs.reshape(1, oc, 1).expand(1, oc, oh * ow).reshape(1, -1)


def _row_abs_sum_up(layer, device, dtype) -> torch.Tensor:
    """``rowsum |W|`` ``[1, n]`` in ``dtype``, rounded up (kept per device, dtype and weight version)."""
    def make():
        rs = _row_abs_sum64(layer, device).to(dtype)
        return torch.nextafter(rs, scalar_like(math.inf, rs))

    return _kept_per_version(_weight_source(layer), "_cf_rowsum_up", (str(device), dtype), make)


def can_centre(network) -> bool:
    """Whether every consumer of the input is an affine layer (whose bias can take the shift)."""
    consumers = [l for l in network.layers[1:] if 0 in l.preds]
    return bool(consumers) and all(l.kind == "affine" and l.preds == [0] for l in consumers)


def centre_input(network, lb: torch.Tensor, ub: torch.Tensor, dtype: torch.dtype):
    """``(network', d_lb, d_ub, bias_error)``: the network with ``x0`` (the box centres, in
    ``dtype``) folded into the biases of the input's consumers, the boxes ``lb - x0 <= d <= ub - x0``
    rounded outward, and per consumer layer the float64 error bound of its new bias (``{index:
    [B, n]}``)."""
    from cfruntime.network.graph import Layer, Network

    x0 = ((lb + ub) * 0.5).to(dtype)
    dl, du = _outward(lb - x0, ub - x0)  # exact (Sterbenz) or half an ulp off
    x64 = x0.to(torch.float64)
    xmax = None
    errs, layers = {}, []
    for l in network.layers:
        if l.index > 0 and 0 in l.preds:
            fan = l.size if l.linear_kind == "gather" else (
                l.conv.kernel.shape[1:].numel() if l.linear_kind == "conv" else l.weight.shape[-1])
            g = gamma(fan + 2, U64)
            xmax = x64.abs().amax(1, keepdim=True) if xmax is None else xmax
            if l.linear_kind == "dense" and l.weight.dim() == 2 and l.bias.dim() == 1:
                wt, b, gb_abs, rs = _dense64(l, x64.device, g)
                nb = torch.addmm(b, x64, wt)  # b + W x0
            else:
                b, gb_abs, rs = _bias_terms64(l, x64.device, g)
                nb = _matvec64(l, x64) + b
            errs[l.index] = torch.addcmul(gb_abs, rs, xmax, value=g)  # g (rowsum|W| max|x0| + |b|)
            l = Layer(index=l.index, kind=l.kind, shape=l.shape, preds=list(l.preds), name=l.name,
                      linear_kind=l.linear_kind, weight=l.weight, bias=nb, conv=l.conv, gather=l.gather,
                      maxpool=l.maxpool)
        layers.append(l)
    net = Network(layers, source=network.source, notices=network.notices, input_name=network.input_name,
                  margin=network.margin, margin_folded=network.margin_folded)
    return net, dl, du, errs


# -- magnitudes -------------------------------------------------------------------------------------
def _pieces(x):
    """``[(start, part)]`` of a coefficient tensor ``[B or 1, n, W]`` whose parts can be read one by
    one (segmented along ``W``, or a plain tensor), else None."""
    if isinstance(x, Segmented) and not x.fill and x.sdim == len(x.shape) - 1:
        return list(x.parts.items())
    if isinstance(x, torch.Tensor):
        return [(0, x)]
    return None


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def col_count(p) -> int:
    """The most non-zero entries of one column of a part ``[.., n, w]`` (a sum ``c @ part`` per entry)."""
    if isinstance(p, DiagonalBlock) and p.delta == len(p.shape) - 2:
        return 1
    if isinstance(p, (ConvBlock, PatchesBlock)):
        co = p.out_chw[0]
        (kh, kw), (sh, sw) = p.k_hw, p.stride
        return min(p.shape[-2], co * _cdiv(kh, sh) * _cdiv(kw, sw))
    return p.shape[-2]


def row_count(p) -> int:
    """The most non-zero entries of one row of a part (a sum ``part @ x`` per entry: the fan-in)."""
    if isinstance(p, DiagonalBlock) and p.delta == len(p.shape) - 2:
        return 1
    if isinstance(p, (ConvBlock, PatchesBlock)):
        return min(p.shape[-1], p.in_chw[0] * p.k_hw[0] * p.k_hw[1])
    return p.shape[-1]


def abs_dot(x, v: torch.Tensor, factor=None) -> torch.Tensor:
    """``sum_p f(part) |x[..., i, p]| v[b, p]`` -> ``[B or 1, n]`` for coefficients ``x`` ``[B or 1, n, W]``
    (segmented, plain or g-BSCR), ``v >= 0`` ``[B, W]`` and ``f = factor`` of each part (1 without;
    ``factor(None)`` for a tensor that cannot be read by parts)."""
    v3 = v.unsqueeze(1)
    pieces = _pieces(x)
    if pieces is None:
        out = gb.to_dense(gb.reduce_sum(gb.binary(gb.unary(x, "abs"), v3, "mul"), len(x.shape) - 1))
        return out if factor is None else factor(None) * out
    out = None
    for s, p in pieces:
        t = _dot_last(_abs_of(p), v3.narrow(-1, s, p.shape[-1]))
        if factor is not None:
            t = factor(p) * t
        out = t if out is None else out + t
    if out is None:
        return torch.zeros(v.shape[0], x.shape[-2], dtype=v.dtype, device=v.device)
    return out


def abs_rowsum(x) -> torch.Tensor:
    """``sum_p |x[..., i, p]|`` -> ``[B or 1, n]`` (a zonotope's radius)."""
    pieces = _pieces(x)
    if pieces is None:
        return gb.to_dense(gb.reduce_sum(gb.unary(x, "abs"), len(x.shape) - 1))
    out = None
    for _, p in pieces:
        if isinstance(p, torch.Tensor):
            t = torch.linalg.vector_norm(p, 1, -1)
        elif isinstance(p, DiagonalBlock) and p.delta == len(p.shape) - 2:
            t = p.core.abs()
        else:
            t = gb.to_dense(gb.reduce_sum(Segmented(p.shape, len(p.shape) - 1, {0: _abs_of(p)}, x.dtype, x.device),
                                          len(p.shape) - 1))
        out = t if out is None else out + t
    if out is None:
        return torch.zeros(x.shape[0], x.shape[-2], dtype=x.dtype, device=x.device)
    return out


def _abs_diff(a, b, ka, kb):
    """``|a - b|`` of two constants whose magnitudes are ``ka``/``kb`` (no operation when one is 0)."""
    if isinstance(a, (int, float)) and a == 0:
        return kb
    if isinstance(b, (int, float)) and b == 0:
        return ka
    return _abs_const(_const(a) - _const(b))


def _memo_t_abs(part: torch.Tensor) -> torch.Tensor:
    """``|W|^T`` ``[pred, n]`` of a dense weight part ``[1, n, pred]`` (made once, kept on it)."""
    memo = part.__dict__.setdefault("_cf_abs", {})
    if "t" not in memo:
        memo["t"] = part[0].abs().t()
    return memo["t"]


def _memo_abs(t: torch.Tensor) -> torch.Tensor:
    """``|t|`` of a parameter tensor kept for the whole network (made once, kept on it)."""
    memo = t.__dict__.setdefault("_cf_abs", {})
    if "abs" not in memo:
        memo["abs"] = t.abs()
    return memo["abs"]


def _slope(layer) -> float:
    """A bound of the slopes of an activation layer's relaxations: 1 for every shipped activation
    (ReLU, the S-curves, Abs, Relu6, HardTanh, Softplus), ``|alpha|`` for LeakyRelu/Elu with
    ``|alpha| > 1``."""
    alpha = getattr(layer, "alpha", None)
    return max(1.0, abs(alpha)) if alpha is not None else 1.0


def _absolute_error(layer) -> float:
    """``A`` such that ``(gamma(16) + gamma(32)) A`` bounds the *absolute* rounding error of an activation
    whose formula cancels: Softplus's ``log(1 + exp(-|x|))`` (``fl(1 + t)`` errs by ``u (1 + t)``, and
    ``log`` turns that into an absolute ``<= 1.01 u``, however small the result) and Elu's
    ``alpha (exp(x) - 1)`` (``<= 2u |alpha|`` near 0); their chords' slopes inherit it (``<= 2u A / (u -
    l)``, times ``|z - l| <= u - l``).  0 for the other kinds, whose errors are relative (section 6)."""
    if layer.kind == "softplus":
        return 1.0
    if layer.kind == "elu":
        return max(1.0, abs(layer.alpha if layer.alpha is not None else 1.0))
    return 0.0


def _diagonal_pair(a, b):
    """``(start, core_a, core_b)`` when ``a`` and ``b`` are each one diagonal part at the same columns
    (an activation's lower/upper relaxation ``[B, n, W]``), else None."""
    pa = _pieces(a) if a is not None else None
    pb = _pieces(b) if b is not None else None
    if not pa or not pb or len(pa) != 1 or len(pb) != 1 or pa[0][0] != pb[0][0]:
        return None
    (s, p), (_, q) = pa[0], pb[0]
    for x in (p, q):
        if not (isinstance(x, DiagonalBlock) and x.delta == len(x.shape) - 2):
            return None
    if p.shape[-1] != q.shape[-1]:
        return None
    return s, p.core, q.core


def _abs_const(c):
    if isinstance(c, (int, float)):
        return abs(float(c))
    return gb.to_dense(c).abs()


def _exact_in(t: torch.Tensor | None, dtype: torch.dtype) -> bool:
    """Whether a (float64, host) parameter survives the cast to ``dtype`` unchanged; kept on the tensor."""
    if t is None:
        return True
    memo = t.__dict__.setdefault("_cf_exact_in", {})
    if dtype not in memo:
        memo[dtype] = bool(torch.equal(t.to(dtype).to(t.dtype), t))
    return memo[dtype]


def _weight_source(layer):
    return layer.weight if layer.linear_kind == "dense" else (
        layer.conv.kernel if layer.linear_kind == "conv" else layer.gather.scale)


def exact_parameters(layer, dtype: torch.dtype) -> bool:
    """Whether the layer's weights and bias are the same numbers in ``dtype`` (a per-batch margin
    layer or bias is never checked: it changes with every batch, a CUDA graph's buffer included)."""
    if layer.batched or layer.bias.dim() != 1 or layer.bias.device.type != "cpu":
        return False
    src = _weight_source(layer)
    return src.device.type == "cpu" and _exact_in(src, dtype) and _exact_in(layer.bias, dtype)


def _max(a, b):
    """``max(a, b)`` of magnitudes (numbers or tensors, all ``>= 0``)."""
    if isinstance(a, (int, float)) and a == 0:
        return b
    if isinstance(b, (int, float)) and b == 0:
        return a
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return torch.maximum(a, b)
    if isinstance(a, torch.Tensor):
        return a.clamp(min=b)
    if isinstance(b, torch.Tensor):
        return b.clamp(min=a)
    return max(a, b)


def _lincomb(terms):
    """``sum_i c_i v_i`` for ``(c_i, v_i)`` with numbers ``c_i`` and numbers or tensors ``v_i``, in as
    few operations as the terms allow: one multiply for the largest tensor, one fused ``add(alpha=c)``
    per other tensor, one add for all the numbers together (a number when no term is a tensor)."""
    number, factor, value = 0.0, {}, {}
    for c, v in terms:
        if isinstance(v, torch.Tensor):
            if c != 0:  # one term per tensor: a magnitude named twice (|kU| in a select form) is scaled once
                factor[id(v)] = factor.get(id(v), 0.0) + c
                value[id(v)] = v
        else:
            number += c * float(v)
    if not factor:
        return number
    tensors = sorted(((factor[i], value[i]) for i in factor), key=lambda cv: -cv[1].numel())
    c0, v0 = tensors[0]
    acc = v0 * c0  # a new tensor: the adds below may work in place
    for c, v in tensors[1:]:
        if broadcast_shape(acc.shape, v.shape) == tuple(acc.shape):  # (torch.broadcast_shapes: ~0.1 ms a call)
            acc.add_(v, alpha=c)
        else:
            acc = torch.add(acc, v, alpha=c)
    return acc.add_(number) if number else acc


def _const(c):
    return float(c) if isinstance(c, (int, float)) else gb.to_dense(c)


def _move(c, w, sign: int):
    """A constant (number or tensor) moved by ``w`` (a tensor): ``c + w`` (``sign`` 1) or ``c - w`` (-1),
    one operation (``c - w`` is exactly ``c + (-w)``: negation does not round)."""
    if isinstance(c, (int, float)):
        return w + c if sign > 0 else torch.rsub(w, c)
    c = gb.to_dense(c)
    return c + w if sign > 0 else c - w


class _Lazy:
    """A value made on first call (the weight terms, which the fast forms do not need)."""

    def __init__(self, make) -> None:
        self.make, self.value = make, None

    def __call__(self):
        if self.value is None:
            self.value = self.make()
        return self.value


class _Mags(dict):
    """layer -> ``m_k``; a :class:`_Lazy` entry is made on its first read (an inexact affine layer's
    ``m_k`` is read only by what substitutes through it or multiplies it by inexact weights: IBP with
    exact weights never reads it)."""

    def __getitem__(self, k):
        v = super().__getitem__(k)
        if isinstance(v, _Lazy):
            v = v()
            super().__setitem__(k, v)
        return v


#: The layer kinds the rounding argument above covers (relaxation slopes at most ``_slope``, one
#: predecessor or a sum): a network with another kind (``mul``: slopes are the other operand's
#: bounds, unbounded; the step and periodic functions of issue 27) is refused in a widened run.
COVERED_KINDS = frozenset({"input", "affine", "maxpool", "add", "relu", "sigmoid", "tanh", "leakyrelu", "elu",
                           "softplus", "abs", "relu6", "hardtanh"})


def fan_in(layer) -> int:
    """The most predecessor values one neuron of ``layer`` combines: the non-zero weights of a row (a
    convolution's kernel, a dense row, a gather's one entry), a max-pool's window, else 1."""
    if layer.kind == "maxpool":
        return layer.maxpool.index_map.shape[1]
    if layer.kind != "affine":
        return 1
    if layer.linear_kind == "conv":
        k = layer.conv.kernel
        return k.shape[1] * k.shape[2] * k.shape[3]
    if layer.linear_kind == "gather":
        return 1
    return layer.weight.shape[-1]


def _rule_tags(cert, network) -> list[dict]:
    """The compiler's tags (``EXACT``) of the rule of every layer but the input."""
    exact = getattr(cert, "exact", None) or {}
    return [exact.get(contract.OPERATOR_OF_KIND.get(l.kind), {}) for l in network.layers[1:]]


def substitutes(cert, network) -> bool:
    """Whether a rule of the network may substitute polyhedra (a traverse's constants and sums,
    sections 2 and 6); True without the compiler's tags."""
    return any(contract.EXACT_FANIN not in t or contract.EXACT_SUBSTITUTES in t for t in _rule_tags(cert, network))


def concretisation_terms(cert, network) -> list[int] | None:
    """Per layer ``j``: the most terms over ``j``'s stored values in one sum of a later rule (section
    1's ``n_j``), when every rule of the network is tagged ``@fan-in = "I R [T]"`` by the compiler
    (:mod:`cfmlir.passes.fanin_analysis`: at most ``I * fan-in + R`` terms over a predecessor, and
    ``T`` traverses that never stop, whose one concretisation is the input box's substitution, over all
    the input's neurons): the largest count of ``j``'s successors (at most ``j``'s size plus ``R``),
    the input's size for the input when a rule traverses.  None without the tags (a traverse that may
    stop concretises a dense expression over any layer)."""
    layers = network.layers
    terms = [0] * len(layers)
    for l, tags in zip(layers[1:], _rule_tags(cert, network)):
        tag = tags.get(contract.EXACT_FANIN)
        if tag is None:
            return None
        inner, reads, traverses = ([int(x) for x in tag.split()] + [0])[:3]
        for p in l.preds:
            terms[p] = max(terms[p], min(inner * fan_in(l), inner * layers[p].size) + reads)
        if traverses:
            terms[0] = max(terms[0], layers[0].size + reads)
    return terms


#: at most this many network structures per certifier keep their :class:`_Structure` (then all are dropped)
STRUCTURES_KEPT = 32


def _signature(network) -> tuple:
    """What :class:`_Structure` reads from a network: per layer its kind, size, offset, predecessors
    and fan-in (the index is the position, :class:`~cfruntime.network.graph.Network` checks it)."""
    return tuple((l.kind, l.size, l.offset, tuple(l.preds), fan_in(l)) for l in network.layers)


def _structure(cert, network, rep) -> "_Structure":
    """The :class:`_Structure` of ``cert`` on ``network`` in ``rep``'s dtype and kind: made once per
    network structure and kept on the certifier (whose tables are fixed once compiled; one that is
    given new ones -- ``noise``, ``flow``, ``exact`` -- gets a new entry), so that the runs of one
    certifier on the networks of one structure (every batch's margin network and its centred copy)
    share it; never a network's tensors (it holds numbers and names only)."""
    cache = cert.__dict__.setdefault("_cf_widening", {})
    tables = (cert.noise, cert.flow, cert.exact)
    key = (rep.dtype, rep.planned, cert.layer_granular, tuple(map(id, tables)), _signature(network))
    hit = cache.get(key)
    if hit is None:
        made = _Structure(cert, network, rep)
        if len(cache) >= STRUCTURES_KEPT:
            cache.clear()
        hit = cache[key] = (made, tables)  # (the tables kept: their ids stay theirs while the entry lives)
    return hit[0]


class _Structure:
    """What the widening of one certifier reads from the network's structure alone (its layers' kinds,
    sizes, offsets, predecessors and fan-ins: :func:`_signature`) and the dtype: counts, rounding
    factors, the pairs of members and the :class:`~cfruntime.flow.widening_plan.Plan`.  Made once per
    certifier and structure (:func:`_structure`) and shared, read only, by every :class:`Widening` of
    such a network; its memo of ``gamma`` (a pure function) fills as the runs ask."""

    def __init__(self, cert, network, rep) -> None:
        uncovered = next((l for l in network.layers if l.kind not in COVERED_KINDS), None)
        if uncovered is not None:
            raise WideningError(f"the {rep.dtype} widening has no rounding argument for layer kind '{uncovered.kind}' "
                                f"(layer {uncovered.index}): run in float64 (--dtype float64), or unwidened "
                                f"(--widen off, bounds not rigorous under rounding)")
        self.u = u = unit_roundoff(rep.dtype)
        self._gammas: dict[float, float] = {}
        layers = network.layers
        self.sizes = sizes = [l.size for l in layers]
        self.S = len(layers)
        self.total = sum(sizes)
        # terms of a constant's sum in a substitution through each layer (a per-neuron traverse
        # substitutes over all neurons)
        self.sum_lens = sizes if cert.layer_granular else [self.total] * len(layers)
        self.chain = all(l.preds == [l.index - 1] for l in layers[1:])
        fresh = [noise * l.size for l in layers[1:] for noise in [cert.noise.get(contract.OPERATOR_OF_KIND.get(l.kind), 0)]]
        self.sym_total = sizes[0] + sum(fresh)
        if rep.planned:  # sums over noise symbols: per segment (the input's, each fresh block), then across
            self.k_sym = max([sizes[0]] + [l.size for l, f in zip(layers[1:], fresh) if f]) + 1 + sum(
                cert.noise.get(contract.OPERATOR_OF_KIND.get(l.kind), 0) for l in layers[1:])
        else:
            self.k_sym = self.sym_total
        members = cert.members
        self.lo = cert.member_with_role(contract.NUMBER_LETTERS, contract.LOWER)
        self.hi = cert.member_with_role(contract.NUMBER_LETTERS, contract.UPPER)
        plo = [n for n, l, r in members if l == "P" and r == contract.LOWER]
        pup = [n for n, l, r in members if l == "P" and r == contract.UPPER]
        # polyhedra in lower/upper pairs (every shipped certifier has one pair); one without a partner
        # is paired with itself
        self.pairs = list(zip(plo, pup)) + [(n, n) for n in plo[len(pup):]] + [(n, n) for n in pup[len(plo):]]
        self.zono = [n for n, l, r in members if l == "S" and r == contract.ZONOTOPE]
        self.sum_terms = concretisation_terms(cert, network)
        # a rule may substitute polyhedra (a traverse's constants and sums: sections 2 and 6)
        self.substitutes = substitutes(cert, network)
        self.k_max = max(self.total, 2 * max(sizes) + self.S, self.sym_total) + 32
        self.safety = 1 + 2 * gamma(self.k_max + 16, u)
        self.rho_post = gamma(POST_OPS, u)
        self.rho_c = gamma(CONSTRUCTION_OPS, u)
        self.eta = torch.finfo(rep.dtype).tiny * 2.0 ** 26
        # with zonotopes, every layer's m_k lives in one [B, N] buffer (the general path, section 3);
        # without, per layer (:class:`~cfruntime.flow.widening_plan.Plan`: exact values, shared tensors)
        self.plan = None if self.zono else widening_plan.Plan(cert, network, self.rho_pre)
        # the factor of every term of a layer's inexact Float widening (section 7)
        self.float_cs = None if self.plan is None else [
            self.safety / ((1 - self.plan.rho[k]) * (1 - 4 * self.rho_post)) for k in range(self.S)]

    # -- counts ---------------------------------------------------------------------------------------
    def _g(self, n: float) -> float:
        g = self._gammas.get(n)
        if g is None:
            g = self._gammas[n] = gamma(n, self.u)
        return g

    def rho_pre(self, k: int) -> float:
        if self.sum_terms is not None:
            n = self.sum_terms[k]
        else:
            n = self.sizes[k] if self.chain else self.total
        return self._g(n + self.S + 8)


class Widening(_Structure):
    """The widening of one run: per layer, the magnitudes of the stored bounds and expressions (the
    counts and factors of its certifier on this network's structure, :class:`_Structure`, made once)."""

    def __init__(self, cert, network, rep, batch: int, bias_errors: dict | None = None):
        # the structure's fields (not its __init__: made once, :func:`_structure`), then this run's own
        self.__dict__.update(_structure(cert, network, rep).__dict__)
        self.cert, self.network, self.rep, self.batch = cert, network, rep, batch
        self.dtype, self.device = rep.dtype, rep.device
        self.bias_errors = bias_errors or {}
        self.mag_z: dict[int, torch.Tensor] = {}  # layer -> Mag(Z) (slack included)
        self.slack: dict[int, torch.Tensor] = {}  # layer -> zonotope slack not absorbed
        self.m = torch.zeros(batch, self.total, dtype=self.dtype, device=self.device) if self.plan is None else None
        self.mags: dict[int, torch.Tensor] = _Mags()  # layer -> m_k [B, n] (fast path)
        self.pending: dict[int, tuple] = {}  # affine layer -> (omega, L, U) left to its successors' polyhedra
        self.fixups: list[tuple[int, str, object]] = []  # (layer, member, value) the engine stores again
        self._bases: dict[int, torch.Tensor | None] = {}  # affine layer -> its widening's bias terms (this run)
        self._m_views: dict[int, torch.Tensor] = {}
        self.within_pred: set[int] = set()  # layers whose m_k is at most their predecessor's

    def _sum_len(self, k: int) -> int:
        """Terms of a constant's sum in a substitution through layer ``k`` (a per-neuron traverse
        substitutes over all neurons)."""
        return self.sum_lens[k]

    def _col(self, p) -> int:
        return col_count(p) if (p is not None and self.cert.layer_granular) else self.total

    def _m(self, k: int) -> torch.Tensor:
        """``m_k`` ``[B, n_k]``: layer ``k``'s columns of :attr:`m` (one view per layer, made once), or its
        own tensor (fast path)."""
        if self.m is None:
            return self.mags[k]
        view = self._m_views.get(k)
        if view is None:
            l = self.network.layers[k]
            view = self._m_views[k] = self.m[:, l.offset:l.offset + l.size]
        return view

    def _cols(self, start: int, width: int) -> torch.Tensor:
        """Every ``m_j`` of the columns ``[start, start + width)`` (of all neurons), ``[B, width]``."""
        if self.m is not None:
            return self.m[:, start:start + width]
        k = self.plan.layer_at.get((start, width))
        if k is not None and k in self.mags:
            return self.mags[k]
        return self._m_all()[:, start:start + width]

    def _m_all(self) -> torch.Tensor:
        """``[B, N]``: every layer's ``m_j`` side by side (0 for layers not analysed yet)."""
        if self.m is not None:
            return self.m
        return torch.cat([self._full(self.mags[l.index]) if l.index in self.mags else
                          torch.zeros(self.batch, l.size, dtype=self.dtype, device=self.device)
                          for l in self.network.layers], 1)

    def _full(self, t):
        if not isinstance(t, torch.Tensor):
            return torch.full((self.batch, 1), float(t), dtype=self.dtype, device=self.device)
        return t if t.shape[0] == self.batch else t.expand(self.batch, *t.shape[1:])

    # -- one layer --------------------------------------------------------------------------------------
    def input(self, values: dict, n0: int) -> dict:
        """The input layer: Float bounds pre-charged, the box polyhedra's constants moved outward, the
        box zonotope enlarged by its own rounding (centre and radius)."""
        return self.apply(self.network.layers[0], values, 0, n0, True)

    def apply(self, layer, values: dict, sym_start: int, sym_end: int, fresh: bool) -> dict:
        """The widened member values of ``layer`` (``values``: name -> materialised value).  ``fresh``:
        the rule made one fresh noise symbol per neuron, the first at ``sym_start`` (the input layer's
        generators count as such)."""
        if self.plan is not None:
            return self._apply_planned(layer, values)
        k = layer.index
        lo, hi = values[self.lo], values[self.hi]
        mt = torch.maximum(lo.abs(), hi.abs())  # m~: the rule's own (unwidened) magnitude
        extra = self._weight_terms(layer) if k > 0 else []  # sections 2 (the bias) and 5, as terms
        rp = self.rho_pre(k)
        # w = safety / (1 - rp) * ((rp + rho_post) mt + eta + extra + the zonotopes' terms)
        c = self.safety / (1 - rp)
        terms = [(c * (rp + self.rho_post), mt), (c, self.eta + (self.rho_post + self.rho_c) * _absolute_error(layer))]
        terms += [(c * f, v) for f, v in extra]
        zs = {}
        for name in self.zono:
            z = values[name]
            rad = abs_rowsum(z.coeff) if z.coeff is not None else 0.0
            cabs = _abs_const(z.const)
            zs[name] = (rad, cabs)
            if k > 0:  # (the input's Float bounds are its box, not a concretisation of its zonotope)
                terms += [(c * self._g(self.k_sym + 8), rad), (c * self._g(4), cabs),
                          (c, self._zonotope_slack(layer, _lincomb([(1, rad), (1, cabs)]), mt))]
        w = self._full(_lincomb(terms))
        l, h = lo - w, hi + w
        out = dict(values)
        out[self.lo], out[self.hi] = l, h
        mk = self._m(k)
        torch.add(mt, w, out=mk)  # >= max(|l|, |h|) (rounding is monotone): a magnitude bound is all m_k must be
        for lname, uname in self.pairs:
            out[lname], out[uname] = self._polyhedra(layer, values[lname], values[uname], mk, extra)
        for name, (rad, cabs) in zs.items():
            # section 3: the slack is the whole widening (it covers the composition slack, and a
            # zonotope made from the rule's own bounds); at the input only the box's rounding
            s = _lincomb([(self.safety * self._g(4), rad), (self.safety * self._g(4), cabs)]) if k == 0 \
                else self.safety * w
            z = values[name]
            if fresh:
                out[name] = Affine(self._absorb(z.coeff, self._full(s), sym_start, layer.size), z.const)
            else:
                self.slack[k] = s
            self.mag_z[k] = _lincomb([(1, rad), (1, cabs), (1, s)])
        return out

    # -- the planned path (no zonotopes): exact values, shared terms ----------------------------------
    def _apply_planned(self, layer, values: dict) -> dict:
        """Section 7: Float bounds by their kind in the plan, polyhedra by their form."""
        k = layer.index
        out = dict(values)
        out[self.lo], out[self.hi] = l, h = self._float_bounds(layer, values[self.lo], values[self.hi])
        extra = _Lazy(lambda: self._weight_terms(layer) if k > 0 else [])
        for lname, uname in self.pairs:
            L, U = values[lname], values[uname]
            if not self.plan.succ[k]:  # the last layer: nothing substitutes its polyhedra
                continue
            if k == 0 and L.coeff is None and U.coeff is None:
                # the box: substituting it is a concretisation against the pre-charged Float bounds
                out[lname], out[uname] = Affine(None, l), Affine(None, h)
                continue
            out[lname], out[uname] = self._pair(layer, lname, uname, L, U, extra)
        return out

    def _float_bounds(self, layer, lo, hi):
        """The stored Float bounds of ``layer`` and its ``m_k`` (kept in :attr:`mags`)."""
        k = layer.index
        kind, f, K = self.plan.float_kind[k]
        rho = self.plan.rho[k]
        if kind == "transparent":  # the predecessor's pre-charge passes through (section 7)
            if self.pairs and f <= 1 and self.plan.succ[k]:
                # the stored bounds' own magnitude (sound bounds, lo <= hi: >= |v| and >= |lo|, |hi|;
                # <= m_pred): 0 for a ReLU that is off, so the substitutions through the next layer
                # charge nothing for it (section 2's |W| . m_pred)
                self.mags[k] = torch.maximum(-lo, hi)
                self.within_pred.add(k)
            else:
                p = layer.preds[0]
                self.mags[k] = _Lazy(lambda: self._m(p) if f <= 1 else self._m(p) * f)
            return lo, hi
        if kind in ("input", "exact"):  # no rounding of their own: the pre-charge only
            src = torch.maximum(-lo, hi) if kind == "input" else self._pred_m(layer)
            c = rho / (1 - rho)  # of the widened magnitude: w = rho (m + w)
            if c == 0:
                l, h = lo, hi
            elif K == 0:
                f = 1.0 if kind == "input" else f
                l, h = torch.sub(lo, src, alpha=c * f), torch.add(hi, src, alpha=c * f)
            else:
                w = torch.add(src * (c * f), c * K)
                l, h = lo - w, hi + w
            if self.plan.succ[k]:
                self.mags[k] = src * (1 + c) if kind == "input" else torch.maximum(-l, h)
            return l, h
        # inexact: the rule's own rounding (sections 2, 5, 6) and the pre-charge; mt = max(-lo, hi)
        # bounds max(|lo|, |hi|) up to the rule's own error (section 7), hence the factor 1/(1 - 4 rho_post)
        mt = torch.maximum(-lo, hi)
        c = self._float_c(k)
        base = self._affine_base(layer) if layer.kind == "affine" else None
        if base is None:
            a = c * (self.eta + (self.rho_post + self.rho_c) * _absolute_error(layer))
            terms = [(c * (rho + self.rho_post), mt), (1.0, a)]
            terms += [(c * f2, v) for f2, v in (self._weight_terms(layer) if k > 0 else [])]
            w = self._full(_lincomb(terms))
        else:
            w = torch.add(base, mt, alpha=c * (rho + self.rho_post))
        l, h = lo - w, hi + w
        if self.plan.succ[k]:
            # >= max(-l, h) >= max(|l|, |h|) (rounding is monotone; l <= h); made when read
            self.mags[k] = _Lazy(lambda: mt + w)
        return l, h

    def _float_c(self, k: int) -> float:
        """The factor of every term of layer ``k``'s inexact Float widening (section 7)."""
        return self.float_cs[k]

    def _affine_base(self, layer):
        """Every term of an affine layer's widening that no magnitude of this run scales, as one
        tensor ``[1 or B, n]``: ``c ((gamma(S + 2) + gamma(n + S + 4)) |b| + eta)`` (sections 2 and 6:
        the bias, a traverse's constants, a substitution's constant sum), for a centred bias (section
        0) also its cast and float64 errors -- one tensor for the Float bounds and the polyhedra
        (``c``: :meth:`_float_c`, at least ``safety``).  None when the terms are more (weights that
        do not survive the cast, a batch's own margin layer).  Made once per layer and run (the Float
        bounds and the polyhedra both read it)."""
        k = layer.index
        if k in self._bases:
            return self._bases[k]
        base = self._bases[k] = self._make_affine_base(layer)
        return base

    def _make_affine_base(self, layer):
        """:meth:`_affine_base`, made."""
        k = layer.index
        c = self._float_c(k)
        gsum = self._g(self.S + 2) + self._g(self._sum_len(k) + self.S + 4) if self.substitutes else 0.0
        if k in self.bias_errors:
            if _weight_source(layer).device.type != "cpu" or not _exact_in(_weight_source(layer), self.dtype):
                return None
            # computed in float64, rounded up by the 1 / (1 - u) (the cast's rounding)
            f = c / (1 - self.u)
            t = layer.bias.abs().mul_(f * (gsum + self._g(2))).add_(self.bias_errors[k], alpha=f * (1 + 4 * self.u))
            return t.add_(f * self.eta).to(self.dtype)
        if layer.batched or not exact_parameters(layer, self.dtype):
            return None
        b = parameters.bias(layer, self.rep)
        memo = b.__dict__.setdefault("_cf_wide_bias", {})
        key = (c, gsum, self.eta)
        if key not in memo:
            memo[key] = _memo_abs(b).mul(c * gsum).add_(c * self.eta)
        return memo[key]

    def _pair(self, layer, lname: str, uname: str, L: Affine, U: Affine, extra):
        """A lower/upper polyhedron pair of a layer with successors (section 2, with section 7's
        forms): an affine layer's one expression left to its element-wise successors when the plan
        allows, a diagonal relaxation's constants moved by one per-neuron term (its predecessor's left
        term included), any other pair by :meth:`_polyhedra`."""
        k = layer.index
        if self.plan.pushable[k] and len(self.pairs) == 1 and L.coeff is U.coeff and L.const is U.const:
            self.pending[k] = [self._affine_omega(layer, L, extra), lname, uname, L, U, set(self.plan.succ[k])]
            return L, U
        pred = layer.preds[0] if len(layer.preds) == 1 else None
        left = self.pending.get(pred)
        diag = _diagonal_pair(L.coeff, U.coeff)
        if diag is not None and self._elementwise(layer) and pred is not None:  # (no weight terms)
            p = self.network.layers[pred]
            if diag[0] == p.offset and diag[1].shape[-1] == p.size:
                out = self._diagonal(layer, L, U, diag, left[0] if left is not None else None,
                                     self.plan.unit(layer, lname))
                if left is not None:
                    self._taken(pred, k)
                return out
        if left is not None:
            self._settle(pred)
        return self._polyhedra(layer, L, U, self._m(k), extra())

    def _affine_omega(self, layer, L: Affine, extra):
        """Section 2's ``omega_k`` of an affine layer's one expression: ``safety (gamma(n + S + 4)
        |b| + sum_p gamma(col_p + S + 4) |W_p| . m_pred + eta + extra)``, ``[B, n]`` (one ``addmm``
        for a dense layer with the network's own parameters)."""
        S = self.S
        w = parameters.weight(layer, self.rep)
        pieces = _pieces(L.coeff) if L.const is parameters.bias(layer, self.rep) else None
        p = layer.preds[0]
        if pieces is not None and len(pieces) == 1 and pieces[0][1] is w and w.shape[0] == 1 \
                and pieces[0][0] == self.network.layers[p].offset:
            part = pieces[0][1]
            base = self._affine_base(layer)
            if base is not None:
                wt = _memo_t_abs(part)
                g = self._g(self._col(part) + S + 4)
                return torch.addmm(base, self._full(self._m(p)), wt, alpha=self.safety * g)
        gn = self._g(self._sum_len(layer.index) + S + 4)
        terms = [(gn, _abs_const(L.const)), (1.0, self.eta)] + list(extra())
        if L.coeff is not None:
            terms += self._dots(L.coeff, lambda p: self._g(self._col(p) + S + 4))
        return self._full(_lincomb([(self.safety * f, v) for f, v in terms]))

    def _diagonal(self, layer, L: Affine, U: Affine, diag, left, unit: bool):
        """Section 2 for an activation's relaxation pair ``a z + kL``, ``b z + kU`` over its predecessor
        ``z`` (section 4's construction error included), plus the predecessor's left term ``omega_p``
        (section 7): one per-neuron ``omega``, made negative in place, both constants moved by it."""
        k = layer.index
        S = self.S
        _, a, b = diag
        mp = self._m(layer.preds[0])
        gn, rc = self._g(self._sum_len(k) + S + 4), self.rho_c
        kl = L.const
        kl_zero = isinstance(kl, (int, float)) and kl == 0
        # sum |a|, |b| (|a| <= 1 for 0/1 coefficients), max(|a|, |b|) (a >= 0 for 0/1 ones) for a left
        # term, |kL| + |kU| (or |kU| alone for kL = 0)
        b_abs = b.abs()
        a_abs = a if unit else a.abs()
        ab = torch.add(b_abs, 1.0) if unit else torch.add(a_abs, b_abs)
        big = None if left is None else torch.maximum(a_abs, b_abs)
        kabs = _abs_const(U.const) if kl_zero else _abs_const(kl) + _abs_const(U.const)
        mk = self._m(k)
        c_m = 2 * self._g(S + 5) + rc  # the diagonal substitution and the construction, per |a| + |b|
        c_w = 1 + 8 * self.u  # |c_k| <= |x| max(|a|, |b|) (1 + 8u) for the left term
        sf = self.safety
        # section 4's rc (m_k + 2 m_pred): 3 rc m_pred when m_k is the predecessor's, inside the
        # (|a| + |b|) product when that is at least 1 (a 0/1 lower relaxation)
        small = mk is mp or k in self.within_pred  # m_k <= m_pred
        c_p = c_m + (3 * rc if unit and small else 0.0)
        floor = sf * (self.eta + (self.rho_post + rc) * _absolute_error(layer))
        if isinstance(kabs, torch.Tensor):
            neg = self._full(torch.rsub(kabs, -floor, alpha=sf * (2 * gn + rc)))  # -floor - c |k|: one op
        else:
            neg = torch.full((self.batch, layer.size), -sf * (2 * gn + rc) * kabs - floor, dtype=self.dtype,
                             device=self.device)
        if not (unit and small):
            neg.add_(mk, alpha=-sf * rc).add_(mp, alpha=-sf * 2 * rc)
        neg.addcmul_(ab, mp, value=-sf * c_p)
        if left is not None:
            neg.addcmul_(big, left, value=-sf * c_w)
        lo = neg if kl_zero else _move(kl, neg, 1)
        return Affine(L.coeff, lo), Affine(U.coeff, _move(U.const, neg, -1))

    def _taken(self, k: int, j: int) -> None:
        """Successor ``j`` carried layer ``k``'s left term."""
        entry = self.pending.get(k)
        if entry is not None:
            entry[5].discard(j)
            if not entry[5]:
                del self.pending[k]

    def _settle(self, k: int) -> None:
        """A successor cannot carry layer ``k``'s left term: move ``k``'s constants after all (the
        engine stores them again before any later rule reads them)."""
        omega, lname, uname, L, U, _ = self.pending.pop(k)
        self.fixups += [(k, lname, Affine(L.coeff, _move(L.const, omega, -1))),
                        (k, uname, Affine(U.coeff, _move(U.const, omega, 1)))]

    def take_fixups(self) -> list:
        out, self.fixups = self.fixups, []
        return out

    # -- pieces ---------------------------------------------------------------------------------------
    def _weight_terms(self, layer) -> list:
        """Affine: ``gamma(S + 2) |b|`` (a traverse's constant sums its steps' constants onto the bias)
        and, when the parameters do not survive the cast, ``gamma(2) (|W| m_pred + |b|)`` plus a
        centred bias's float64 error; add (residual): ``gamma(S + 2) (m_0 + m_1)`` (a traverse may add
        into the initial one-hot coefficients of the lower predecessor).  As ``(factor, value)`` terms
        (:func:`_lincomb`); none for other layers."""
        if layer.kind == "affine":
            b = parameters.bias(layer, self.rep)
            b = _memo_abs(b) if not layer.batched and layer.index not in self.bias_errors else b.abs()
            t = [(self._g(self.S + 2), b)] if self.substitutes else []
            if layer.index in self.bias_errors and _exact_in(_weight_source(layer), self.dtype):
                t += [(self._g(2), b)]  # the network's weights; the centred bias rounded to the dtype
            elif not exact_parameters(layer, self.dtype):
                t += [(self._g(2), self._weights_times_m(layer)), (self._g(2), b)]
            if layer.index in self.bias_errors:
                t.append((1 + 4 * self.u, self.bias_errors[layer.index].to(self.dtype)))
            return t
        if layer.kind == "add" and self.substitutes:
            return [(self._g(self.S + 2), self._m(p)) for p in layer.preds]
        return []

    def _weights_times_m(self, layer) -> torch.Tensor:
        """Section 5's ``|W| . m_pred`` ``[B, n]``.  For a consumer of the centred input (section 0) the
        bound ``rowsum|W| max_p m_p`` instead: the input's magnitudes are the box's radii, all about
        ``eps``, so it is at most about twice the product (a term ``u``-sized against the bounds), and
        it costs a maximum and a product where ``|W| . m`` is a matrix product as large as the layer's
        own (mnist's first layers: a folded normalisation makes every one inexact)."""
        p = layer.preds[0]
        m = self._m(p)
        if p == 0 and layer.index in self.bias_errors and not layer.batched:
            return _row_abs_sum_up(layer, m.device, self.dtype) * m.amax(1, keepdim=True)
        return abs_dot(parameters.weight(layer, self.rep), m)

    def _elementwise(self, layer) -> bool:
        return layer.kind not in ("affine", "add") and len(layer.preds) == 1

    def construction_error(self, layer, own, mk):
        """Section 4: ``gamma(32) (own + m_k + 2 m_pred)`` for an activation layer (``own`` the new
        expression's magnitude), None for others.  Derivations (``z`` the predecessor neuron, ``|z| <=
        m_pred``; every line need only be checked at the true ``z``):

        * ReLU upper ``lambda z + delta`` (``lambda = u/(u-l) <= 1``, ``delta = -u l/(u-l)``, ``|delta| <=
          m_pred``): 2-3 roundings each, so the line is off by ``<= gamma(4) (|lambda| m_pred + |delta|)``.
          With ``n[U]`` in place of ``z`` (reusecert) the coefficients ``lambda U_pred`` are off by ``u``
          relatively (``<= u Mag(new)``), the constant ``lambda c - delta`` by ``<= 2u Mag(new) + u m_pred``,
          and since ``U_pred(v) >= z`` and ``lambda >= 0`` the line need only hold at ``z``: as above.
        * S-curve chord ``f(l) + (f(u) - f(l))/(u - l) (z - l)``: the numerator cancels, its absolute
          error ``<= 9u max|f| <= 9u m_k``, times ``|z - l|/(u - l) <= 1``; the tangent slopes ``f(1 - f)``
          / ``1 - f^2`` err absolutely by ``<= 10u``, times ``|z - l| <= 2 m_pred``; the constant ``f(l) -
          s l`` by ``<= 3u (m_k + |s| m_pred)``; in all ``<= 20u (m_k + m_pred)`` (``|s| <= 1``), plus
          tangents used for ``u - l <= 1e-6``, off by ``<= |f''| (u - l)^2 / 2 < 1e-13``.
        * DeepZ's ReLU zonotope ``lambda Z + mu + mu eps`` (``|mu| <= m_pred``) and S-curve zonotope,
          zid's box zonotope ``(l + u)/2 + (u - l)/2 eps``: coefficients off by ``<= 3u`` relatively
          (``<= 3u Mag(new)``), centres and radii by ``<= 6u (Mag(new) + m_k + 2 m_pred)`` (the only
          cancellation, ``lambda c + mu``, is against ``|mu| <= m_pred``)."""
        if not self._elementwise(layer):
            return None
        return _lincomb([(self.rho_c, own), (self.rho_c, mk), (2 * self.rho_c * _slope(layer), self._pred_m(layer))])

    def _pred_m(self, layer):
        """An activation's predecessor magnitudes ``[B, n]`` (a pooling's: its largest input, ``[B, 1]``)."""
        mp = self._m(layer.preds[0])
        return mp if mp.shape[-1] == layer.size else mp.amax(-1, keepdim=True)

    def _polyhedra(self, layer, L: Affine, U: Affine, mk, extra: list):
        """Section 2 (and 4, 5): the constants of a lower/upper polyhedron pair moved outward by
        ``omega = safety (gamma(n + S + 4) |consts| + sum_p gamma(col_p + S + 4) |coeff_p| . m + eta + extra
        + construction)``, the construction error (section 4) ``gamma(32) (own + m_k + 2 m_pred)`` for
        activation layers only (``own``: the expression's magnitude); every ``|coeff| . m`` product is
        formed once and the sum in one :func:`_lincomb`."""
        k = layer.index
        S = self.S
        gn = self._g(self._sum_len(k) + S + 4)
        act = self._elementwise(layer)
        rc = self.rho_c if act else 0.0
        kc = _abs_const(L.const)
        ku = kc if U.const is L.const else _abs_const(U.const)
        if L.coeff is U.coeff:
            # one coefficient tensor (an affine layer's W, the input box's none): one product per
            # entry, the constants in one centre/radius or select form
            if L.const is U.const:
                terms = [(gn + rc, kc)]
            else:
                terms = [(gn, _max(kc, ku)), (rc, kc), (rc, ku)]
            if L.coeff is not None:
                terms += [(f + rc, t) for f, t in self._dots(L.coeff, lambda p: self._g(self._col(p) + S + 4))]
        else:
            # two: a constant is summed over n_k terms, as c+ kL + c- kU, or centre/radius (both <=
            # max(|kL|, |kU|) a term) or c kU + c+ (kL - kU) (<= max(|kL|, |kU|) + |kL - kU|); a
            # coefficient entry over col(part) terms as c+ L + c- U (<= max(|L|, |U|)), a diagonal's as
            # c U + c+ (L - U) (3 roundings of <= |L| + |U|, twice)
            terms = [(gn, _max(kc, ku)), (gn, _abs_diff(L.const, U.const, kc, ku)), (rc, kc), (rc, ku)]
            diagonal = _diagonal_pair(L.coeff, U.coeff)
            if diagonal is not None:  # an activation's relaxation: everything elementwise on [B, n]
                start, a, b = diagonal
                terms.append((2 * self._g(S + 5) + rc, (a.abs() + b.abs()) * self._cols(start, a.shape[-1])))
            else:
                terms.append((1.0, self._parts_pair(L.coeff, U.coeff)))
                if act:
                    terms += [(rc, abs_dot(x, self._m_all())) for x in (L.coeff, U.coeff) if x is not None]
        terms += [(1.0, self.eta)] + extra
        if act:
            terms += [(rc, mk), (2 * rc, self._pred_m(layer)), (self.rho_post + rc, _absolute_error(layer))]
        omega = _lincomb([(self.safety * f, v) for f, v in terms])
        if not isinstance(omega, torch.Tensor) or omega.shape[0] != self.batch:
            omega = self._full(omega)
        return Affine(L.coeff, _move(L.const, omega, -1)), Affine(U.coeff, _move(U.const, omega, 1))

    def _dots(self, x, factor) -> list:
        """``[(factor(part), |x_part| . m)]`` over the parts of coefficients ``x`` ``[B or 1, n, W]``
        (``factor(None)`` for a tensor that cannot be read by parts)."""
        pieces = _pieces(x)
        if pieces is None:
            return [(factor(None), abs_dot(x, self._m_all()))]
        return [(factor(p), _dot_last(_abs_of(p), self._cols(s, p.shape[-1]).unsqueeze(1))) for s, p in pieces]

    def _parts_pair(self, a, b):
        """``sum_p g(part) M_p m_p`` over the parts of two coefficient tensors ``a``/``b`` (lower/upper):
        ``M = max(|a|, |b|)`` where the parts are plain tensors of one shape, ``|a| + |b|`` otherwise;
        ``g = gamma(col + S + 4)``, for diagonals ``2 gamma(S + 5)``."""
        S = self.S

        def g(p):
            if isinstance(p, DiagonalBlock) and p.delta == len(p.shape) - 2:
                return 2 * self._g(S + 5)
            return self._g(self._col(p) + S + 4)

        pa, pb = (_pieces(x) if x is not None else [] for x in (a, b))
        if pa is None or pb is None:
            out = 0.0
            for x in (a, b):
                if x is not None:
                    out = abs_dot(x, self._m_all(), lambda p: self._g(self.total + S + 4)) + out
            return out
        da, db = dict(pa), dict(pb)
        out = 0.0
        for s in sorted(set(da) | set(db)):
            p, q = da.get(s), db.get(s)
            if isinstance(p, torch.Tensor) and isinstance(q, torch.Tensor) and p.shape == q.shape:
                mx = torch.maximum(_abs_of(p), _abs_of(q))
                out = _dot_last(mx, self._cols(s, p.shape[-1]).unsqueeze(1)) * g(p) + out
                continue
            for x in (p, q):
                if x is not None:
                    out = _dot_last(_abs_of(x), self._cols(s, x.shape[-1]).unsqueeze(1)) * g(x) + out
        return out

    def _zonotope_slack(self, layer, mz, mt):
        """Section 3: the composition/construction slack of ``layer``'s zonotope (before absorption)."""
        if layer.kind == "affine":
            p = layer.preds[0]
            w = parameters.weight(layer, self.rep)
            pieces = _pieces(w)
            fan = max((row_count(q) for _, q in pieces), default=1) if pieces else self.network.layers[p].size
            g = self._g(fan + 4)
            s = g * parameters.bias(layer, self.rep).abs()
            v = None
            if p in self.mag_z:
                v = self._full(self.mag_z[p]) * g
            if p in self.slack:
                v = self.slack[p] if v is None else v + self.slack[p]
            if v is not None:
                s = abs_dot(w, v) + s
            return self._full(s)
        if layer.kind == "add":
            s = self._g(2) * sum(self._full(self.mag_z.get(p, 0.0)) for p in layer.preds)
            for p in layer.preds:
                if p in self.slack:
                    s = s + self.slack[p]
            return s
        # an activation (its relaxations' slopes are at most _slope(layer)) or a pooling (max: 1-Lipschitz)
        s = self.construction_error(layer, mz, mt)
        s = torch.zeros_like(mt) if s is None else s
        p = layer.preds[0]
        if p in self.slack:
            sp = self.slack[p]
            s = torch.add(s, sp if sp.shape[-1] == layer.size else sp.amax(-1, keepdim=True), alpha=_slope(layer))
        return s

    def _absorb(self, coeff, s, start: int, n: int):
        """The fresh generator ``a_i`` of neuron ``i`` (symbol ``start + i``) made ``a_i + sign(a_i) s_i``."""
        if isinstance(coeff, Segmented) and not coeff.fill and coeff.sdim == len(coeff.shape) - 1:
            parts = dict(coeff.parts)
            p = parts.get(start)
            shape = (self.batch,) + tuple(coeff.shape[1:])
            if p is None and all(not (st < start + n and start < st + q.shape[-1]) for st, q in parts.items()):
                parts[start] = DiagonalBlock(-s, 1)
                return Segmented(shape, coeff.sdim, parts, coeff.dtype, coeff.device)
            if isinstance(p, DiagonalBlock) and p.delta == len(p.shape) - 2 and p.shape[-1] == n:
                core = p.core
                parts[start] = DiagonalBlock(torch.where(core > 0, core + s, core - s), p.delta)
                return Segmented(shape, coeff.sdim, parts, coeff.dtype, coeff.device)
            if isinstance(p, torch.Tensor) and p.shape[-1] == n:
                d = torch.diagonal(p, 0, -2, -1)
                parts[start] = p + torch.diag_embed(torch.where(d > 0, s, -s))
                return Segmented(shape, coeff.sdim, parts, coeff.dtype, coeff.device)
        # general: read the diagonal, add a scaled one-hot
        width = coeff.shape[-1]
        d = torch.diagonal(gb.to_dense(gb.slice_range(coeff, len(coeff.shape) - 1, start, start + n)), 0, -2, -1)
        delta = self.rep.scaled_one_hot(torch.where(d > 0, s, -s), start, width)
        if isinstance(coeff, Segmented):
            coeff = coeff.to_sparse()
        return gb.binary(coeff, delta, "add")
