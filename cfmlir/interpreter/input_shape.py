"""What each shape member means, read off the shape constraints; the input layer's initial shape.

The input layer is initialised from the **shape constraints**, not from member names:

* ``curr[m] <= curr`` (or ``curr >= curr[m]``, or the strict forms): ``m`` is a *lower* bound;
* ``curr[m] >= curr`` (or ``curr <= curr[m]``): ``m`` is an *upper* bound;
* ``curr In curr[m]``: ``m`` is a *zonotope*.

(constraints joined with ``and`` are split.)  For an input neuron ``i`` with box ``[l_i, u_i]``:

=========================  ===============================================================
Float lower / upper        ``l_i`` / ``u_i``
PolyExp lower / upper      the constant PolyExp ``l_i`` / ``u_i`` (so ``L = l``, ``U = u``)
SymExp zonotope            ``(l_i + u_i)/2 + (u_i - l_i)/2 * eps_i``, one fresh symbol per neuron
                           (no symbol when ``l_i = u_i``)
=========================  ===============================================================

A member the constraints do not determine (or one whose role does not fit its type) is an error.
The bounds reported for the output layer are its Float lower and upper members (found the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

from cfmlir.dialects import cf_type_lattice as T
from cfmlir.interpreter import values as V
from cfmlir.interpreter.errors import InterpreterError
from cfmlir.syntax import ast
from cfmlir.typing.checker import CheckedProgram
from cfruntime import contract


@dataclass
class Roles:
    """Member name -> role (:mod:`cfruntime.contract`: lower, upper, zonotope); first constraint wins."""

    roles: dict[str, str]
    members: dict[str, T.Type]
    order: list[str]

    def float_member(self, role: str) -> str | None:
        for m in self.order:
            if self.roles.get(m) == role and T.is_subtype(self.members[m], T.FLOAT):
                return m
        return None


def _is_curr(e: ast.Expr) -> bool:
    return isinstance(e, ast.Var) and e.name == "curr"


def _curr_member(e: ast.Expr) -> str | None:
    if isinstance(e, ast.Access) and _is_curr(e.base):
        return e.member
    return None


def _determined(c: ast.Expr):
    """The ``(member, role)`` pairs a constraint determines (:func:`cfruntime.contract.constraint_role`)."""
    if isinstance(c, ast.Binary) and c.op == "and":
        yield from _determined(c.lhs)
        yield from _determined(c.rhs)
    elif isinstance(c, ast.Binary):
        yield contract.constraint_role(c.op, _curr_member(c.lhs), _is_curr(c.lhs), _curr_member(c.rhs), _is_curr(c.rhs))


def member_roles(checked: CheckedProgram) -> Roles:
    shape = checked.program.shape
    constraints = shape.constraints if shape is not None else ()
    out = contract.roles_from(r for c in constraints for r in _determined(c))
    return Roles(out, dict(checked.members), list(checked.member_order))


def input_initialisers(roles: Roles, file: str):
    """For every member (in shape order) a function ``(l, u, fresh_noise) -> value``."""
    inits = []
    for m in roles.order:
        ty, role = roles.members[m], roles.roles.get(m)
        if role is None:
            raise InterpreterError(
                f"cannot initialise shape member '{m}' of the input layer: no shape constraint "
                f"(curr[{m}] <= curr, curr[{m}] >= curr or curr In curr[{m}]) says what it is", file=file)
        if role in (contract.LOWER, contract.UPPER):
            pick_upper = role == contract.UPPER
            if T.is_subtype(ty, T.FLOAT):
                inits.append(lambda l, u, fresh, _up=pick_upper: float(u if _up else l))
            elif ty == T.POLYEXP:
                inits.append(lambda l, u, fresh, _up=pick_upper: V.Poly(float(u if _up else l), {}))
            else:
                raise InterpreterError(f"shape member '{m}' of type {ty} is constrained as a {role} bound; "
                                       "only Float and PolyExp members can be input bounds", file=file)
        else:
            if ty != T.SYMEXP:
                raise InterpreterError(f"shape member '{m}' of type {ty} is constrained by 'In'; it must be a SymExp",
                                       file=file)

            def zono(l, u, fresh):
                c, r = (l + u) / 2.0, (u - l) / 2.0
                return V.Sym(float(c), {int(fresh()): float(r)} if r != 0.0 else {})

            inits.append(zono)
    return inits
