"""Deciding a ReLU domain with a linear program: the triangle relaxation of its unstable neurons, exact on
the others -- and therefore exact once no ReLU of the domain is unstable.

Algorithm: the variables are the input ``x`` (in the domain's box) and every ReLU layer's output ``a``;
every other layer is an affine expression of earlier variables (affine layers, additions), so each ReLU's
pre-activation is ``z = E v + c``.  With the domain's pre-activation bounds ``[lo, hi]`` (its split signs
included), each neuron contributes

    lo <= z <= hi                              (the domain's bounds: sound on the domain)
    active (lo >= 0):    a = z,  z >= 0
    inactive (hi <= 0):  a = 0,  z <= 0
    unstable:            a >= 0, a >= z, a <= hi (z - lo) / (hi - lo)   (the triangle)

and for each open disjunct ``A y <= b`` of the property (each row scaled to ``|row|_1 = 1``):

    minimise t  subject to  A y - b <= t,  |t| <= T      (T bounds |A y - b|; it never binds)

``t* > 0`` refutes the disjunct on the domain -- not on the solver's word: for any multipliers ``y <= 0``
of the rows ``A v <= b``, Lagrangian duality gives

    t* >= sum_j min(g_j lo_j, g_j hi_j) + y . b,    g = c - A' y

over the variables' bounds ``[lo_j, hi_j]`` (every row, the domain's too, is relaxed by ``t``, so the LP
is always feasible and an empty domain is refuted the same way); this is evaluated here in float64 with the duals of HiGHS
(:func:`scipy.optimize.linprog`) and trusted only above a rounding margin.  ``t* <= 0`` gives a point
``x*``: on a domain without unstable neurons the relaxation is the network itself, so ``x*`` is a
counterexample once :func:`cfruntime.results.confirm_counterexample` confirms it (float32 rounding,
float64 evaluation); on other domains it is tried as a candidate.  When the LP decides nothing (``t*``
within the margin of 0 on a leaf) the domain is undecided and the search ends ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

#: a dual bound must exceed this times (1 + the magnitude of its terms) to refute a disjunct
DUAL_MARGIN = 1e-9
#: LPs with more nonzeros than this are not built (a ConvBig unrolled would not fit)
MAX_NONZEROS = 20_000_000


@dataclass
class LpOutcome:
    """``decided``: ``"refuted"`` (no counterexample in the domain), ``"sat"`` (``counterexample`` set) or
    ``"open"`` (nothing proved: a candidate point was not a counterexample, or the LP was inconclusive)."""

    decided: str
    counterexample: object = None


class TooBig(Exception):
    """The LP of this network would be too large to build."""


def decide(net, objective, prop, region: int, box, bounds: dict, open_disjuncts: list[int]) -> LpOutcome:
    """Decide the domain of ``net`` (affine, ReLU and add layers) with input ``box`` ``(lb, ub)`` (numpy) and
    pre-activation bounds ``bounds`` (``{pre layer: (lo, hi)}`` numpy, every ReLU's pre-activation) for
    the disjuncts ``open_disjuncts``; see the module docstring."""
    from cfruntime.results import confirm_counterexample

    lp = _Relaxation(net, box, bounds)
    A, b = objective.A.numpy(), objective.b.numpy()
    out_e, out_c = lp.expr[net.layers[-1].index]
    for k in open_disjuncts:
        g = objective.groups[k]
        kind, x = lp.solve(A[g] @ out_e, b[g] - A[g] @ out_c)
        if kind == "refuted":
            continue
        if kind == "point":
            cex = confirm_counterexample(net, prop, region, x)
            if cex is not None:
                return LpOutcome("sat", cex)
        return LpOutcome("open")
    return LpOutcome("refuted")


class _Relaxation:
    """The constraints of a domain shared by every disjunct's LP (see the module docstring)."""

    def __init__(self, net, box, bounds: dict):
        import scipy.sparse as sp

        lb, ub = (np.asarray(v, dtype=np.float64).reshape(-1) for v in box)
        n0 = lb.shape[0]
        lo_v, hi_v = [lb], [ub]
        nvars = n0
        expr = {0: (sp.hstack([sp.identity(n0, format="csr")]).tocsr(), np.zeros(n0))}
        ub_rows, ub_rhs = [], []
        nnz = 0
        for layer in net.layers[1:]:
            ins = [expr[p] for p in layer.preds]
            if layer.kind == "affine":
                w = sp.csr_matrix(layer.weight_matrix().to(torch.float64).numpy()) if layer.linear_kind != "dense" \
                    else sp.csr_matrix(layer.weight.to(torch.float64).numpy())
                e, c = ins[0]
                expr[layer.index] = ((w @ _widen(e, nvars)).tocsr(), w @ c + layer.bias.to(torch.float64).numpy())
            elif layer.kind == "add":
                (e0, c0), (e1, c1) = ins
                expr[layer.index] = ((_widen(e0, nvars) + _widen(e1, nvars)).tocsr(), c0 + c1)
            elif layer.kind == "relu":
                pre = layer.preds[0]
                e, c = ins[0]
                e = _widen(e, nvars)
                lo, hi = (np.asarray(v, dtype=np.float64).reshape(-1) for v in bounds[pre])
                n = lo.shape[0]
                first = nvars
                nvars += n
                e = _widen(e, nvars)
                a = sp.csr_matrix((np.ones(n), (np.arange(n), first + np.arange(n))), shape=(n, nvars))
                active, inactive = lo >= 0, hi <= 0
                unstable = ~active & ~inactive
                lo_v.append(np.where(inactive, 0.0, np.maximum(lo, 0.0)))
                hi_v.append(np.where(inactive, 0.0, np.maximum(hi, 0.0)))
                # lo <= z <= hi, with the sign of a stable neuron (z >= 0 active, z <= 0 inactive)
                ub_rows += [e, -e]
                ub_rhs += [np.where(inactive, np.minimum(hi, 0.0), hi) - c, -(np.where(active, np.maximum(lo, 0.0), lo) - c)]
                ub_rows += [(a - e)[active], (e - a)[active]]  # a = z
                ub_rhs += [c[active], -c[active]]
                # the triangle: a >= z, a <= s (z - lo)
                s = np.where(unstable, hi / np.where(unstable, hi - lo, 1.0), 0.0)
                ub_rows.append((e - a)[unstable])
                ub_rhs.append(-c[unstable])
                ub_rows.append((a - sp.diags(s) @ e)[unstable])
                ub_rhs.append((s * (c - lo))[unstable])
                expr[layer.index] = (a, np.zeros(n))
            else:
                raise TooBig(f"layer {layer.index} ({layer.kind}) is not piecewise linear")
            nnz += expr[layer.index][0].nnz
            if nnz > MAX_NONZEROS:
                raise TooBig(f"more than {MAX_NONZEROS} nonzeros")
        self.nvars = nvars
        self.expr = {k: (_widen(e, nvars), c) for k, (e, c) in expr.items()}
        self.lo, self.hi = np.concatenate(lo_v), np.concatenate(hi_v)
        self.ub_rows = [_widen(r, nvars) for r in ub_rows if r.shape[0]]
        self.ub_rhs = [v for r, v in zip(ub_rows, ub_rhs) if r.shape[0]]
        self.n0 = n0

    def solve(self, rows, rhs):
        """``("refuted", None)``, ``("point", x*)`` or ``("open", None)``: the LP of the module docstring with
        the disjunct's rows ``rows v <= rhs``; every constraint row is relaxed by ``t`` (``row v - t <=
        rhs``), so the LP is always feasible and ``t* > 0`` also covers a domain with no point."""
        import scipy.sparse as sp
        from scipy.optimize import linprog

        a_ub = sp.vstack([sp.csr_matrix(rows)] + self.ub_rows).tocsr()
        b_ub = np.concatenate([rhs] + self.ub_rhs)
        scale = np.asarray(abs(a_ub).sum(1)).reshape(-1)
        b_ub = b_ub / np.where(scale > 0, scale, 1.0)
        a_ub = sp.diags(1.0 / np.where(scale > 0, scale, 1.0)) @ a_ub
        mag = np.maximum(np.abs(self.lo), np.abs(self.hi))
        T = 1.0 + float(np.max(abs(a_ub) @ mag + np.abs(b_ub)))
        relaxed = np.ones(a_ub.shape[0])
        cost = np.zeros(self.nvars + 1)
        cost[-1] = 1.0
        lo, hi = np.append(self.lo, -T), np.append(self.hi, T)
        bounds = np.stack([lo, hi], 1)
        full = sp.hstack([a_ub, sp.csr_matrix(-relaxed.reshape(-1, 1))]).tocsr()
        res = linprog(cost, A_ub=full, b_ub=b_ub, bounds=bounds, method="highs")
        if res.status != 0 or res.x is None:
            return "open", None
        if res.fun <= 0:
            # the point: the disjunct's rows as deep as the domain's (hard) constraints allow
            relaxed[rows.shape[0]:] = 0.0
            deep = linprog(cost, A_ub=sp.hstack([a_ub, sp.csr_matrix(-relaxed.reshape(-1, 1))]).tocsr(), b_ub=b_ub,
                           bounds=bounds, method="highs")
            x = deep.x if deep.status == 0 and deep.x is not None else res.x
            return "point", np.clip(x[:self.n0], self.lo[:self.n0], self.hi[:self.n0])
        a_ub = full
        y = np.minimum(np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)  # <= 0: the rows' multipliers
        g = cost - a_ub.T @ y
        terms = np.minimum(g * lo, g * hi)
        dual = terms.sum() + y @ b_ub
        size = np.abs(terms).sum() + np.abs(y * b_ub).sum()
        if dual > DUAL_MARGIN * (1.0 + size):
            return "refuted", None
        return "open", None


def _widen(m, n: int):
    """A sparse matrix over the first variables, given ``n`` columns (the later variables' are 0)."""
    import scipy.sparse as sp

    if m.shape[1] == n:
        return m
    return sp.hstack([m, sp.csr_matrix((m.shape[0], n - m.shape[1]))]).tocsr()
