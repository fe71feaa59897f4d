"""The bounded world a rule is verified in: symbolic neurons, their shapes, noise symbols, premises.

A neuron's shape is made on first use (:meth:`World.shape`): a Float/Int member is a fresh real, a
PolyExp member is ``c0 + sum_j c_j * q_j`` over the ``K`` neurons ``q_j`` of the neuron's *pool*
(fresh neurons one level further back, shared by all neurons of one level, so that two members may
mention the same neurons), a SymExp member is ``c0 + sum_i a_i * eps_i`` over the world's ``M``
shared noise symbols (``-1 <= eps_i <= 1``, the witness of the zonotope concretisation).  Making a
shape adds the *premise* that the shape's constraints hold for the neuron's concrete value
(``l <= x``, ``L(q) <= x``, ``x = Z(eps)``, ...).  Every coefficient, bound and value is a free
variable, so a formula valid in this world holds for every network whose neurons have at most
``K`` summands per polyhedral expression and ``M`` noise symbols.

Example (DeepPoly, K=2): ``prev`` of an Affine rule is ``[p0, p1]``; reading ``p0[L]`` makes ``p0``'s
shape ``l_p0, u_p0, L_p0 = cL0 + cL1*q0 + cL2*q1, U_p0 = ...`` with premises
``l_p0 <= x_p0 <= u_p0, L_p0(x_q0, x_q1) <= x_p0 <= U_p0(...)``.
"""

from __future__ import annotations

from typing import Any, Callable

import z3

from cfmlir.dialects import cf_type_lattice as T
from cfmlir.verify.errors import Deadline
from cfmlir.verify.values import SNeuron, SNoise, SPoly, SSym


class World:
    def __init__(self, members: dict[str, T.Type], K: int, M: int, deadline: Deadline | None = None):
        #: checked while the world grows (a large K must not outlive the rule's time limit)
        self.deadline = deadline or Deadline()
        self.members = members
        self.K = K
        self.M = M
        self.neurons: list[SNeuron] = []
        self.premises: list[Any] = []
        self.eps = [z3.Real(f"eps_{i}") for i in range(M)]
        self.noise = [SNoise(i) for i in range(M)]
        for e in self.eps:
            self.premises += [e >= -1, e <= 1]
        self._pools: dict[int, list[SNeuron]] = {}
        self._fresh = 0
        self._var = 0
        #: set by the evaluator: the truth (z3 Bool) of the shape constraints for neuron n
        self.constraints_of: Callable[[SNeuron], Any] | None = None
        #: rule outputs of neurons being computed (their members are these, not a premise shape)
        self.outputs: dict[SNeuron, dict[str, Any]] = {}
        #: values z3 should report in a counterexample, in order of creation
        self.shaped: list[SNeuron] = []

    # -- names ----------------------------------------------------------------------------------
    def real(self, prefix: str):
        self._var += 1
        return z3.Real(f"{prefix}_{self._var}")

    def neuron(self, name: str, depth: int, pool: list[SNeuron] | None = None) -> SNeuron:
        self.deadline.check()
        n = SNeuron(self, len(self.neurons), name, depth)
        n.pool = pool
        self.neurons.append(n)
        return n

    def pool(self, depth: int) -> list[SNeuron]:
        """The ``K`` shared neurons of level ``depth`` (made on first use)."""
        p = self._pools.get(depth)
        if p is None:
            p = self._pools[depth] = [self.neuron(f"d{depth}_{j}", depth) for j in range(self.K)]
        return p

    def fresh_pool(self, tag: str, depth: int) -> list[SNeuron]:
        self._fresh += 1
        return [self.neuron(f"{tag}{self._fresh}_{j}", depth) for j in range(self.K)]

    def fresh_noise(self) -> SNoise:
        self._fresh += 1
        return SNoise(self.M + self._fresh, fresh=True)

    def free_poly(self, prefix: str, over: list[SNeuron]) -> SPoly:
        return SPoly(self.real(f"{prefix}_c"), {q: self.real(f"{prefix}_a") for q in over})

    # -- shapes ---------------------------------------------------------------------------------
    def shape(self, n: SNeuron) -> dict[str, Any]:
        """The member values of ``n`` (made, with their premises, on first use)."""
        if n in self.outputs:
            return self.outputs[n]
        if n._shape is None:
            if n.pool is None:
                n.pool = self.pool(n.depth + 1)
            shape: dict[str, Any] = {}
            for m, ty in self.members.items():
                shape[m] = self._member(n, m, ty)
            n._shape = shape
            self.shaped.append(n)
            self.premises.append(self.constraints_of(n))
        return n._shape

    def _member(self, n: SNeuron, m: str, ty: T.Type):
        self.deadline.check()
        if ty in (T.FLOAT, T.INT):
            v = z3.Real(f"{m}_{n.name}")
            if ty == T.INT:
                self.premises.append(z3.IsInt(v))
            return v
        if ty == T.BOOL:
            return z3.Bool(f"{m}_{n.name}")
        if ty == T.POLYEXP:
            # Parametrised by its concrete value v: const = v - sum c_j x_qj, so that the value of
            # L is the one variable v (a premise L <= x is then v <= x, and a rule using L's value
            # needs no pool variables; the map (const, c) <-> (v, c) is a bijection).
            coeffs = {q: z3.Real(f"{m}_{n.name}_{q.name}") for q in n.pool}
            v = z3.Real(f"{m}_{n.name}_v")
            return SPoly(v - z3.Sum([c * q.value for q, c in coeffs.items()]) if coeffs else v, coeffs)
        if ty == T.SYMEXP:
            # Parametrised by the neuron's value: const = x - sum a_i eps_i, so that Z(eps) = x is
            # an identity (z3 then sees Z's value as x instead of solving for it).
            a = {e: z3.Real(f"{m}_{n.name}_e{e.index}") for e in self.noise}
            const = n.value - z3.Sum([c * self.eps[e.index] for e, c in a.items()]) if a else n.value
            return SSym(const, a)
        raise TypeError(f"shape member '{m}' of type {ty}")

    def meta(self, n: SNeuron, key: str):
        """Network metadata of ``n``: ``layer`` (integral, >= 0), ``last_layer`` (0 or 1), ``bias``."""
        v = n.meta.get(key)
        if v is None:
            v = n.meta[key] = z3.Real(f"{key}_{n.name}")
            if key == "layer":
                self.premises += [z3.IsInt(v), v >= 0]
            elif key == "last_layer":
                self.premises.append(z3.Or(v == 0, v == 1))
        return v
