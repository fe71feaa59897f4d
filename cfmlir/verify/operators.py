"""The operators a rule can be verified for: the bindings of a rule and the concrete output.

For each operator, :func:`bind` makes the rule's ``curr`` and ``prev`` neurons in the world and
returns the rule's locals and the concrete value ``y`` the network computes for ``curr``:

========== ====================================== ===================================
operator    bindings                               concrete output
========== ====================================== ===================================
Affine      ``prev = [p_1..p_K]``, weight ``w``    ``y = sum w_i x_i + b``
Relu        ``prev = p``                           ``y = max(x, 0)``
Sigmoid     ``prev = p``                           ``y = sigmoid(x)`` (see nonlinear)
Tanh        ``prev = p``                           ``y = tanh(x)``
Neuron_add  ``prev_0, prev_1``, ``prev = [both]``  ``y = x_0 + x_1``
Neuron_mult ``prev_0, prev_1``, ``prev = [both]``  ``y = x_0 x_1`` (polynomial: exact)
Maxpool     ``prev = [p_1..p_K]``                  ``y = max_i x_i``
LeakyRelu   ``prev = p``, ``alpha`` (any real)      ``y = x`` (x >= 0), ``alpha x``
Abs         ``prev = p``                           ``y = |x|``
Relu6       ``prev = p``                           ``y = min(max(x, 0), 6)``
HardTanh    ``prev = p``                           ``y = min(max(x, -1), 1)``
Elu         ``prev = p``, ``alpha`` (any real)      ``y = x`` (x > 0), ``alpha (exp(x) - 1)``
Softplus    ``prev = p``                           ``y = max(x, 0) + log(1 + exp(-|x|))``
Sign        ``prev = p``                           ``y = 1`` (x > 0), ``-1`` (x < 0), ``0``
Floor       ``prev = p``                           ``y = floor(x)`` (z3's ``ToInt``: exact)
Exp         ``prev = p``                           ``y = exp(x)`` (see nonlinear)
Reciprocal  ``prev = p``                           ``y = 1/x`` (exact; 0 where x = 0: the
                                                   network has no value there)
========== ====================================== ===================================

Sin         ``prev = p``                           ``y = sin(x)`` (see nonlinear)
Cos         ``prev = p``                           ``y = cos(x)``

Softplus is written as the certifiers write it (``log(1 + exp(x))`` is the same real number); the
piecewise-linear operators are exact, Elu and Softplus use the facts of :mod:`cfmlir.verify.nonlinear`.
"""

from __future__ import annotations

import math

import z3

from cfruntime.scalar import exp as fexp, sigmoid
from cfmlir.verify.nonlinear import Nonlinear
from cfmlir.verify.world import World


def _clip(x, lo, hi):
    return z3.If(x < lo, lo, z3.If(x > hi, hi, x))


def _abs(x):
    return z3.If(x >= 0, x, -x)


#: Elementwise operator -> its output ``(x, alpha, nl) -> y`` as a z3 term (``alpha``: curr's metadata).
UNARY = {
    "Relu": lambda x, a, nl: z3.If(x >= 0, x, 0),
    "Sigmoid": lambda x, a, nl: nl.apply("sigmoid", x),
    "Tanh": lambda x, a, nl: nl.apply("tanh", x),
    "LeakyRelu": lambda x, a, nl: z3.If(x >= 0, x, a * x),
    "Abs": lambda x, a, nl: _abs(x),
    "Relu6": lambda x, a, nl: _clip(x, 0, 6),
    "HardTanh": lambda x, a, nl: _clip(x, -1, 1),
    "Elu": lambda x, a, nl: z3.If(x > 0, x, a * (nl.apply("exp", x) - 1)),
    "Softplus": lambda x, a, nl: z3.If(x >= 0, x, 0) + nl.apply("log", 1 + nl.apply("exp", -_abs(x))),
    "Sign": lambda x, a, nl: z3.If(x > 0, 1, z3.If(x < 0, -1, 0)),
    "Floor": lambda x, a, nl: z3.ToReal(z3.ToInt(x)),
    "Exp": lambda x, a, nl: nl.apply("exp", x),
    "Sin": lambda x, a, nl: nl.apply("sin", x),
    "Cos": lambda x, a, nl: nl.apply("cos", x),
    "Reciprocal": lambda x, a, nl: z3.If(x == 0, 0, 1 / x),
}
#: The operators of UNARY that read ``alpha``.
WITH_ALPHA = ("LeakyRelu", "Elu")

#: The piecewise-linear ones on exact rationals (a counterexample's replay): ``(x, alpha) -> y``.
PIECEWISE_LINEAR = {
    "Relu": lambda x, a: max(x, 0),
    "LeakyRelu": lambda x, a: x if x >= 0 else a * x,
    "Abs": lambda x, a: abs(x),
    "Relu6": lambda x, a: min(max(x, 0), 6),
    "HardTanh": lambda x, a: min(max(x, -1), 1),
    "Sign": lambda x, a: (x > 0) - (x < 0),
    "Floor": lambda x, a: math.floor(x),
    "Reciprocal": lambda x, a: 1 / x if x != 0 else 0,
}


def _softplus(x: float) -> float:
    return max(x, 0.0) + math.log1p(fexp(-abs(x)))


#: The others in float64, as the reference interpreter computes them: ``(x, alpha) -> y``.
_FLOAT = {
    "Sigmoid": lambda x, a: sigmoid(x),
    "Tanh": lambda x, a: math.tanh(x),
    "Elu": lambda x, a: x if x > 0 else a * math.expm1(x),
    "Softplus": lambda x, a: _softplus(x),
    "Exp": lambda x, a: fexp(x),
    "Sin": lambda x, a: math.sin(x),
    "Cos": lambda x, a: math.cos(x),
}


def concrete_value(op: str, x: float, alpha: float = 0.0) -> float:
    """The output of the elementwise operator ``op`` at ``x`` in float64."""
    return _FLOAT[op](x, alpha)


#: Operators of two neurons -> their output ``(x_0, x_1) -> y``, for z3 terms and exact rationals alike.
BINARY = {
    "Neuron_add": lambda a, b: a + b,
    "Neuron_mult": lambda a, b: a * b,
}

OPERATORS = ("Affine", "Maxpool") + tuple(BINARY) + tuple(UNARY)


def bind(op: str, world: World, nl: Nonlinear):
    """``(locals, curr, y)`` for operator ``op`` (locals: curr, prev, prev_0, prev_1, curr_list)."""
    curr = world.neuron("curr", 0)
    curr.meta["computing"] = True
    K = world.K
    env = {"curr": curr, "prev": None, "prev_0": None, "prev_1": None, "curr_list": None}
    if op in ("Affine", "Maxpool"):
        prev = [world.neuron(f"p{i}", 1) for i in range(K)]
        env["prev"] = prev
        xs = [p.value for p in prev]
        if op == "Affine":
            w = [z3.Real(f"w_{i}") for i in range(K)]
            curr.meta["weight"] = w
            y = z3.Sum([wi * xi for wi, xi in zip(w, xs)]) + world.meta(curr, "bias")
        else:
            y = xs[0]
            for x in xs[1:]:
                y = z3.If(x > y, x, y)
    elif op in UNARY:
        p = world.neuron("p", 1)
        env["prev"] = p
        alpha = world.meta(curr, "alpha") if op in WITH_ALPHA else None
        y = UNARY[op](p.value, alpha, nl)
    elif op in BINARY:
        a, b = world.neuron("p0", 1), world.neuron("p1", 1)
        env.update(prev=[a, b], prev_0=a, prev_1=b)
        y = BINARY[op](a.value, b.value)
    else:
        raise KeyError(op)
    return env, curr, y
