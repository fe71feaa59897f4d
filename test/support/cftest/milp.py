"""Exact answers for small ReLU MLPs, independent of cfmlir: a big-M mixed-integer program (scipy's HiGHS
MILP) and brute-force enumeration of activation patterns, used to test that branch and bound decides what
is true.

:func:`min_violation` is ``min over x in [lb, ub] of max_r (A_r f(x) - b_r)``: ``<= 0`` exactly when some
input's output satisfies every row (a counterexample to the property whose violation is ``A y <= b``).
"""

from __future__ import annotations

import itertools

import numpy as np


def interval_bounds(ws, bs, lb, ub):
    """Pre-activation intervals ``[(l, u), ...]`` of every layer (interval arithmetic)."""
    lo, hi = np.asarray(lb, np.float64), np.asarray(ub, np.float64)
    out = []
    for i, (w, b) in enumerate(zip(ws, bs)):
        w, b = np.asarray(w, np.float64), np.asarray(b, np.float64)
        c, r = (lo + hi) / 2, (hi - lo) / 2
        l, u = w @ c + b - np.abs(w) @ r, w @ c + b + np.abs(w) @ r
        out.append((l, u))
        lo, hi = np.maximum(l, 0), np.maximum(u, 0)
    return out


def min_violation(ws, bs, lb, ub, A, b) -> tuple[float, np.ndarray]:
    """``(min_x max_r (A_r f(x) - b_r), the minimising x)`` by a big-M MILP (ReLU after every layer but
    the last)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    ws = [np.asarray(w, np.float64) for w in ws]
    bs = [np.asarray(v, np.float64) for v in bs]
    A, b = np.asarray(A, np.float64), np.asarray(b, np.float64)
    pre = interval_bounds(ws, bs, lb, ub)
    n0 = ws[0].shape[1]
    # variables: x, then per hidden layer (z, a, d), then y, then t
    names, lo, hi, integ = [], [], [], []

    def add(n, l, u, kind=0):
        start = len(lo)
        lo.extend(np.broadcast_to(l, n).tolist())
        hi.extend(np.broadcast_to(u, n).tolist())
        integ.extend([kind] * n)
        return np.arange(start, start + n)

    x = add(n0, lb, ub)
    rows, rlo, rhi = [], [], []

    def row(coeffs, l, u):
        rows.append(coeffs)
        rlo.append(l)
        rhi.append(u)

    prev = x
    layers = []
    for i, (w, bb) in enumerate(zip(ws, bs)):
        last = i == len(ws) - 1
        l, u = pre[i]
        z = add(w.shape[0], l if not last else -np.inf, u if not last else np.inf)
        layers.append(z)
        for j in range(w.shape[0]):  # z_j = w_j . prev + b_j
            coeffs = {int(z[j]): 1.0}
            for k, p in enumerate(prev):
                coeffs[int(p)] = coeffs.get(int(p), 0.0) - w[j, k]
            row(coeffs, bb[j], bb[j])
        if last:
            prev = z
            break
        a = add(w.shape[0], 0.0, np.maximum(u, 0))
        d = add(w.shape[0], 0.0, 1.0, kind=1)
        for j in range(w.shape[0]):
            if u[j] <= 0:
                row({int(a[j]): 1.0}, 0.0, 0.0)
            elif l[j] >= 0:
                row({int(a[j]): 1.0, int(z[j]): -1.0}, 0.0, 0.0)
            else:
                row({int(a[j]): 1.0, int(z[j]): -1.0}, 0.0, np.inf)  # a >= z
                row({int(a[j]): 1.0, int(z[j]): -1.0, int(d[j]): -l[j]}, -np.inf, -l[j])  # a <= z - l (1 - d)
                row({int(a[j]): 1.0, int(d[j]): -u[j]}, -np.inf, 0.0)  # a <= u d
        prev = a
    y = prev
    t = add(1, -np.inf, np.inf)
    for r in range(A.shape[0]):  # A_r y - b_r <= t
        coeffs = {int(t[0]): -1.0}
        for k, v in enumerate(y):
            coeffs[int(v)] = coeffs.get(int(v), 0.0) + A[r, k]
        row(coeffs, -np.inf, b[r])
    n = len(lo)
    M = np.zeros((len(rows), n))
    for i, coeffs in enumerate(rows):
        for k, v in coeffs.items():
            M[i, k] = v
    cost = np.zeros(n)
    cost[t[0]] = 1.0
    res = milp(cost, constraints=LinearConstraint(M, rlo, rhi), integrality=np.array(integ),
               bounds=Bounds(np.array(lo), np.array(hi)), options={"mip_rel_gap": 0.0})
    if res.status != 0:
        raise RuntimeError(f"MILP failed: {res.message}")
    return float(res.fun), res.x[x]


def min_violation_by_enumeration(ws, bs, lb, ub, A, b) -> float:
    """The same minimum by enumerating every activation pattern and solving its LP (tiny nets only)."""
    from scipy.optimize import linprog

    ws = [np.asarray(w, np.float64) for w in ws]
    bs = [np.asarray(v, np.float64) for v in bs]
    A, b = np.asarray(A, np.float64), np.asarray(b, np.float64)
    hidden = [w.shape[0] for w in ws[:-1]]
    best = np.inf
    n0 = ws[0].shape[1]
    for bits in itertools.product([0, 1], repeat=sum(hidden)):
        M, c = np.eye(n0), np.zeros(n0)
        cons, rhs = [], []
        pos = 0
        for w, bb, h in zip(ws[:-1], bs[:-1], hidden):
            M, c = w @ M, w @ c + bb
            on = np.array(bits[pos:pos + h], dtype=bool)
            pos += h
            sign = np.where(on, -1.0, 1.0)  # active: -(Mx + c) <= 0; inactive: Mx + c <= 0
            cons.append(sign[:, None] * M)
            rhs.append(-sign * c)
            M, c = M * on[:, None], c * on
        M, c = ws[-1] @ M, ws[-1] @ c + bs[-1]
        G, h = A @ M, b - A @ c
        a_ub = np.vstack([np.hstack([G, -np.ones((G.shape[0], 1))])] + [np.hstack([p, np.zeros((p.shape[0], 1))]) for p in cons])
        b_ub = np.concatenate([h] + rhs)
        cost = np.zeros(n0 + 1)
        cost[-1] = 1.0
        res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=list(zip(lb, ub)) + [(None, None)], method="highs")
        if res.status == 0:
            best = min(best, res.fun)
    return float(best)
