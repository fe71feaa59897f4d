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
Maxpool     ``prev = [p_1..p_K]``                  ``y = max_i x_i``
========== ====================================== ===================================
"""

from __future__ import annotations

import z3

from cfmlir.verify.nonlinear import Nonlinear
from cfmlir.verify.world import World

OPERATORS = ("Affine", "Relu", "Sigmoid", "Tanh", "Neuron_add", "Maxpool")


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
    elif op in ("Relu", "Sigmoid", "Tanh"):
        p = world.neuron("p", 1)
        env["prev"] = p
        x = p.value
        if op == "Relu":
            y = z3.If(x >= 0, x, 0)
        else:
            y = nl.apply("sigmoid" if op == "Sigmoid" else "tanh", x)
    elif op == "Neuron_add":
        a, b = world.neuron("p0", 1), world.neuron("p1", 1)
        env.update(prev=[a, b], prev_0=a, prev_1=b)
        y = a.value + b.value
    else:
        raise KeyError(op)
    return env, curr, y
