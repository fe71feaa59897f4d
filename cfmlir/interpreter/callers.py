"""Fast Python callables for ConstraintFlow function values applied to their last arguments: the
functions given to ``map`` and ``traverse`` (``(neuron or noise symbol, coefficient) -> value``) and
one-argument ones.  Used by the evaluator and by :mod:`cfmlir.interpreter.traverse` (which the
evaluator calls), so they live apart from both."""

from __future__ import annotations

from typing import Any, Callable

from cfmlir.dialects import cf_type_lattice as T
from cfmlir.interpreter import values as V
from cfmlir.interpreter.errors import InterpreterError

_MISSING = object()


def binary_caller(fv: V.FuncVal) -> Callable[[Any, Any], Any]:
    """A fast Python callable ``(x, c) -> value`` for a function value expecting two more arguments
    (the functions given to ``map`` and ``traverse``)."""
    f = fv.func
    k = len(fv.args)
    if f.arity - k != 2:
        raise InterpreterError(f"function '{f.name}' needs {f.arity - k} more argument(s) here, expected 2")
    # The arguments are a Neuron/Noise and a float coefficient: only a PolyExp/SymExp parameter
    # (allowed by contravariance) needs a conversion.
    c0, c1 = (None if t in (T.NEURON, T.NOISE, T.FLOAT) else c
              for t, c in zip(f.param_types[k:k + 2], f.param_convs[k:k + 2]))
    body = f.body
    bound = fv.args
    rt = f.rt
    if f.pure and (k + 1) not in f.used and rt is not None and c0 is None:
        # Memoisation (cannot change results): a pure function that ignores the coefficient is a
        # function of the neuron (and the already-applied arguments) only, and the shapes it can read
        # never change once computed.  Typical: priority2(n, c) = -n[layer], stop(n, c) = false.
        try:
            memo = rt.memo.setdefault((id(f), bound), {})
        except TypeError:  # unhashable applied arguments (e.g. a PolyExp)
            memo = None
        if memo is not None:
            mget = memo.get

            def memo_call(x, c):
                v = mget(x, _MISSING)
                if v is _MISSING:
                    v = memo[x] = body(bound + (x, c))
                return v

            return memo_call
    if c0 is None and c1 is None:
        if not bound:
            return lambda x, c: body((x, c))
        return lambda x, c: body(bound + (x, c))
    c0 = c0 or (lambda v: v)
    c1 = c1 or (lambda v: v)
    return lambda x, c: body(bound + (c0(x), c1(c)))


def unary_caller(fv: V.FuncVal) -> Callable[[Any], Any]:
    f = fv.func
    k = len(fv.args)
    if f.arity - k != 1:
        raise InterpreterError(f"function '{f.name}' needs {f.arity - k} more argument(s) here, expected 1")
    c0 = f.param_convs[k] or (lambda v: v)
    body, bound = f.body, fv.args
    return lambda x: body(bound + (c0(x),))
