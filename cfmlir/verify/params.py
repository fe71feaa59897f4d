"""Parameters in a proof: ``n[a]`` is one more universally quantified variable, constrained to its domain.

A certifier with ``param a for Op, ... in [lo, hi] ... else d`` is sound when every rule preserves the
shape constraints *for every value of every parameter in its domain*.  Reading ``n[a]`` in the rule
being verified (whose neuron is ``curr``) gives, once per neuron ``n`` (two reads of ``n[a]`` in one rule
are one value: ``a_curr(n)``):

* ``n`` is ``curr``: ``curr``'s own operator is known (the rule's).  If ``a`` is declared for it, a
  fresh real ``v`` with the premise ``lo <= v <= hi`` (``lo``, ``hi`` evaluated with the rule's
  bindings; an empty domain reads ``hi``, as the engines' projection does); else the ``else`` value.
* ``n`` is any other neuron (``prev``, a neuron a traverse replaces...): its operator is unknown, so
  the proof covers every case.  For each elementwise operator ``Op`` the parameter is declared for, a
  fresh Bool ``is_Op`` and a fresh neuron ``x`` (``n``'s input, with its own shape and premises) with
  ``is_Op => value(n) = Op(value(x))`` and ``is_Op => lo(x) <= v_Op <= hi(x)`` (the domain evaluated with
  the bindings ``curr = n, prev = x``); at most one ``is_Op`` holds; the value is ``v_Op`` under ``is_Op``
  and the ``else`` value otherwise (no ``else``: some ``is_Op`` holds).  So a rule that, say, scales a
  ReLU neuron's lower polyhedron by ``a in [0, 1]`` is verified knowing that the neuron is non-negative.

A parameter of a non-elementwise operator (``Affine``, ``Maxpool``, ``Neuron_add``) read on a neuron
other than ``curr`` is outside the fragment.  :class:`ParamRead` records each read for the replay of a
counterexample (:mod:`cfmlir.verify.replay`), which checks the model's values against the domains with
the reference interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import z3

from cfmlir.verify.errors import FragmentError
from cfmlir.verify.operators import UNARY, WITH_ALPHA


@dataclass
class ParamRead:
    """One parameter value of the rule being verified: ``value`` (a z3 term) of ``name`` on ``neuron``.
    ``cases``: per operator, ``(is_op, input neuron or None, free value, lo, hi)`` (for ``curr``: one
    case whose ``is_op`` is True and whose input is None)."""

    name: str
    neuron: Any
    value: Any
    cases: dict = field(default_factory=dict)
    default: float | None = None


class Params:
    """The parameter reads of one rule's verification (made by :meth:`read`, memoised per neuron)."""

    def __init__(self, evaluator, decls: dict, op: str, rule_env: dict):
        self.ev = evaluator
        self.decls = decls
        self.op = op
        self.rule_env = rule_env
        self.reads: dict[tuple[str, int], ParamRead] = {}

    def read(self, name: str, n, loc) -> Any:
        key = (name, n.id)
        hit = self.reads.get(key)
        if hit is None:
            hit = self.reads[key] = self._make(name, n, loc)
        return hit.value

    def _domain(self, decl, env: dict):
        ev = self.ev
        lo, hi = ev.eval(decl.lo, env), ev.eval(decl.hi, env)
        return lo, hi

    def _free(self, name: str, n, op: str, lo, hi):
        """A fresh value of ``name`` on ``n`` in ``[lo, hi]`` (``hi`` when the domain is empty)."""
        w = self.ev.world
        v = w.real(f"{name}_{op}_{n.name}")
        w.premises.append(z3.Implies(lo <= hi, z3.And(lo <= v, v <= hi)))
        return z3.If(lo <= hi, v, hi)

    def _make(self, name: str, n, loc) -> ParamRead:
        decl = self.decls[name]
        w = self.ev.world
        read = ParamRead(name, n, None, default=decl.default)
        curr = self.rule_env.get("curr")
        if n is curr:
            if self.op in decl.ops:
                lo, hi = self._domain(decl, self.rule_env)
                read.value = self._free(name, n, self.op, lo, hi)
                read.cases[self.op] = (z3.BoolVal(True), None, read.value, lo, hi)
            else:  # the checker made sure there is an else value
                read.value = z3.RealVal(repr(float(decl.default)))
            return read
        value = None if decl.default is None else z3.RealVal(repr(float(decl.default)))
        flags = []
        for op in decl.ops:
            if op not in UNARY:
                raise FragmentError(loc, f"parameter '{name}' of the operator '{op}' read on a neuron other than curr",
                                    "its value depends on that neuron's inputs, which only elementwise operators name")
            is_op = z3.Bool(f"is_{op}_{name}_{n.name}")
            x = w.neuron(f"in{len(w.neurons)}", n.depth + 1)
            alpha = w.meta(n, "alpha") if op in WITH_ALPHA else None
            w.premises.append(z3.Implies(is_op, n.value == UNARY[op](x.value, alpha, self.ev.nl)))
            env = {"curr": n, "prev": x, "prev_0": None, "prev_1": None, "curr_list": None}
            lo, hi = self._domain(decl, env)
            v = w.real(f"{name}_{op}_{n.name}")
            w.premises.append(z3.Implies(z3.And(is_op, lo <= hi), z3.And(lo <= v, v <= hi)))
            v = z3.If(lo <= hi, v, hi)
            read.cases[op] = (is_op, x, v, lo, hi)
            flags.append(is_op)
            value = v if value is None else z3.If(is_op, v, value)
        for i, a in enumerate(flags):  # a neuron has one operator
            for b in flags[i + 1:]:
                w.premises.append(z3.Not(z3.And(a, b)))
        if decl.default is None:
            w.premises.append(z3.Or(flags))
        read.value = value
        return read
