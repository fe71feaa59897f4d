"""``map`` and ``traverse`` over polynomial values.

``e.map(f)``
    ``const + sum_i f(x_i, c_i)`` over the summands ``c_i * x_i`` of ``e`` (neurons of a PolyExp, noise
    symbols of a SymExp), in the order the summands were created.  Summands with coefficient exactly
    ``0.0`` are skipped (a zero coefficient is an absent summand).  The results are added with the
    PolyExp/SymExp addition (Floats add as numbers).

``e.traverse(direction, prio, stop, f){inv}``
    A worklist over the expression::

        repeat:
            S = [(n, c) in e with c != 0 and not stop(n, c)]
            if S is empty: return e
            p* = min over S of prio(n, c)
            e  = (e without the summands of S with prio = p*) + sum of f(n, c) over those summands

    so with ``prio = -n[layer]`` the highest layer is substituted first, all its neurons in one step.
    Neurons of the input layer are substituted like any other (their L/U are constants), so a full
    DeepPoly back-substitution ends with a constant.  ``stop`` and ``prio`` are re-evaluated on every
    step (the coefficient of a kept neuron can change when other substitutions add to it).  The
    invariant ``inv`` and the direction are not evaluated (the direction is implied by ``f``).  A
    traverse that has not finished after :func:`step_cap` steps is an error (e.g. a replacement that
    re-introduces the neuron it replaces).
"""

from __future__ import annotations

from cfmlir.interpreter import values as V
from cfruntime import contract
from cfmlir.interpreter.errors import InterpreterError
from cfmlir.interpreter.callers import binary_caller


def map_expr(e, fv: V.FuncVal, poly: bool, result: str):
    """``e.map(fv)``; ``poly``: the base is a PolyExp (else a SymExp); ``result``: the static type of
    the result, ``'num'`` (Float: the fast path), ``'poly'`` or ``'sym'``."""
    if poly:
        e = V.to_poly(e)
        wrap = V.Neuron
    else:
        e = V.to_sym(e)
        wrap = V.Noise
    f = binary_caller(fv)
    if result == "num":
        s = e.const
        for k, c in e.coeffs.items():
            if c != 0.0:
                s += f(wrap(k), c)
        return s
    lift = V.to_poly if result == "poly" else V.to_sym
    const = e.const
    out: dict = {}
    get = out.get
    for k, c in e.coeffs.items():
        if c == 0.0:
            continue
        r = f(wrap(k), c)
        t = type(r)
        if t is float or t is int:
            const += r
            continue
        r = lift(r)
        const += r.const
        for kk, v in r.coeffs.items():
            out[kk] = get(kk, 0.0) + v
    return (V.Poly if result == "poly" else V.Sym)(const, out)


def step_cap(rt) -> int:
    """The traverse step cap of the network (:func:`cfruntime.contract.traverse_step_cap`)."""
    return contract.traverse_step_cap(rt.num_neurons)


def traverse(rt, e: V.Poly, prio_fv: V.FuncVal, stop_fv: V.FuncVal, repl_fv: V.FuncVal, loc=None) -> V.Poly:
    prio = binary_caller(prio_fv)
    stop = binary_caller(stop_fv)
    repl = binary_caller(repl_fv)
    cur = dict(e.coeffs)
    const = e.const
    Neuron = V.Neuron
    cap = step_cap(rt)
    for _ in range(cap):
        best = None
        chosen: list = []
        for n, c in cur.items():
            if c == 0.0:
                continue
            nn = Neuron(n)
            if stop(nn, c):
                continue
            p = prio(nn, c)
            if best is None or p < best:
                best = p
                chosen = [(nn, c)]
            elif p == best:
                chosen.append((nn, c))
        if not chosen:
            return V.Poly(const, cur)
        for nn, _c in chosen:
            del cur[nn]
        get = cur.get
        for nn, c in chosen:
            r = repl(nn, c)
            t = type(r)
            if t is float or t is int:
                const += r
                continue
            if t is not V.Poly:
                r = V.to_poly(r)
            const += r.const
            for k, v in r.coeffs.items():
                cur[k] = get(k, 0.0) + v
    where = f"{loc}: " if loc is not None else ""
    raise InterpreterError(
        f"{where}traverse did not terminate after {cap} steps (does the replacement function re-introduce the neurons it replaces?)"
    )
