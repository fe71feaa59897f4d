"""The contract between the compiler, the compiled engine and the reference interpreter, defined once.

* **Type letters** of the ``cftensor`` metadata and of the shape members a compiled module lists.
* **Roles** of shape members, read off the shape constraints: ``curr[m] <= curr`` (or ``<``, or the
  mirror ``curr >= curr[m]``) makes ``m`` a ``lower`` bound, the mirror images an ``upper`` bound, and
  ``curr In curr[m]`` a ``zonotope``; constraints joined with ``and`` count separately and the first
  constraint on a member wins.  The engines initialise the input layer from the roles and report the
  last layer's Float ``lower``/``upper`` members.
* **Operators** of layer kinds: the transformer rule that handles each kind of network layer.
* **The compiled module**: what the Python emission writes and the engine reads (``FLOW``, ``RULES``,
  ``NOISE``, ``LAYER_GRANULAR``, ``LOCAL_MEMBERS``).

Plain Python, imported by the compiler (``cfmlir``), the runtime (``cfruntime``) and the interpreter.
"""

from __future__ import annotations

#: Type letter -> ConstraintFlow type.
TYPE_LETTERS = {"I": "Int", "R": "Float", "B": "Bool", "N": "Neuron", "E": "Noise", "P": "PolyExp", "S": "SymExp", "C": "Ct"}
#: ConstraintFlow type -> type letter.
LETTER_OF_TYPE = {v: k for k, v in TYPE_LETTERS.items()}
#: Letters of the numeric (Float-like) members, whose values are plain tensors.
NUMBER_LETTERS = "IRB"

LOWER, UPPER, ZONOTOPE = "lower", "upper", "zonotope"
#: The role a member without a determining constraint has.
NO_ROLE = "-"

#: Comparison operator -> the role of a member ``m`` in ``curr[m] <op> curr``.
_MEMBER_LEFT = {"<=": LOWER, "<": LOWER, ">=": UPPER, ">": UPPER}
#: ... and in ``curr <op> curr[m]``.
_MEMBER_RIGHT = {">=": LOWER, ">": LOWER, "<=": UPPER, "<": UPPER}


def constraint_role(op: str, left_member: str | None, left_is_curr: bool, right_member: str | None,
                    right_is_curr: bool) -> tuple[str, str] | None:
    """``(member, role)`` that one shape constraint ``left <op> right`` determines, or None.  A side is
    ``curr`` itself (``*_is_curr``) or ``curr[member]`` (``*_member``); ``op`` is ``<= < >= > In``."""
    if op == "In":
        return (right_member, ZONOTOPE) if left_is_curr and right_member else None
    if left_member and right_is_curr and op in _MEMBER_LEFT:
        return left_member, _MEMBER_LEFT[op]
    if right_member and left_is_curr and op in _MEMBER_RIGHT:
        return right_member, _MEMBER_RIGHT[op]
    return None


def roles_from(determined) -> dict[str, str]:
    """Member -> role from the ``(member, role)`` pairs of the constraints in order; the first wins."""
    out: dict[str, str] = {}
    for found in determined:
        if found is not None:
            out.setdefault(*found)
    return out


#: Network layer kind -> the transformer rule (operator) that handles it.
OPERATOR_OF_KIND = {
    "affine": "Affine",
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "leakyrelu": "LeakyRelu",
    "elu": "Elu",
    "softplus": "Softplus",
    "abs": "Abs",
    "relu6": "Relu6",
    "hardtanh": "HardTanh",
    "maxpool": "Maxpool",
    "add": "Neuron_add",
    "mul": "Neuron_mult",
    "sign": "Sign",
    "floor": "Floor",
    "sin": "Sin",
    "cos": "Cos",
    "exp": "Exp",
    "reciprocal": "Reciprocal",
}
#: The layer kinds whose rule reads two predecessors (``prev_0``, ``prev_1``, ``prev = [both]``).
BINARY_KINDS = ("add", "mul")

#: Names a compiled module defines: ``FLOW = {'direction', 'transformer', 'members': [(name, letter,
#: role), ...]}``, ``RULES = {operator: rule function (rt, ctx) -> member values}``, ``NOISE =
#: {operator: fresh noise symbols per neuron}``, ``LAYER_GRANULAR = bool``, ``LOCAL_MEMBERS = [name,
#: ...]`` (members every rule reads through its own layer's predecessors only, never through a map over
#: all neurons or a traverse: the engine may free them once a layer's successors are analysed).
MODULE_FLOW, MODULE_RULES, MODULE_NOISE, MODULE_LAYER_GRANULAR = "FLOW", "RULES", "NOISE", "LAYER_GRANULAR"
MODULE_LOCAL_MEMBERS = "LOCAL_MEMBERS"
#: ``EXACT = {operator: {member: tag}}``: which member values a rule computes without rounding (the
#: compiler's exactness analysis; tags ``transparent``, ``exact F K``, ``unit``, ``exact``, ``inexact``;
#: a member or module without a tag is inexact)
MODULE_EXACT = "EXACT"
#: the ``EXACT`` key of a rule that substitutes polyhedra (a traverse or a loop): value ``"yes"``
EXACT_SUBSTITUTES = "@substitutes"
#: the ``EXACT`` key of a rule whose linear expressions over a predecessor's stored values have at
#: most ``I * fan-in + R`` non-zero terms per neuron (``I`` inner products with the layer's weight or
#: one-hot coefficients, ``R`` reads; no sum reduction, no traverse but ``T`` that never stop and end at
#: the input's box): value ``"I R"`` or ``"I R T"``.  The float32
#: widening then pre-charges a layer whose successors all carry it for that count instead of its own
#: size (:mod:`cfruntime.flow.widening`, section 1; :mod:`cfmlir.passes.fanin_analysis`)
EXACT_FANIN = "@fan-in"
#: ``RULE_LOCATIONS = {operator: (line, column)}``: where each rule is in the certifier's source (the
#: engine names it when a rule cannot run: a member read before it is computed, a runaway traverse).
MODULE_RULE_LOCATIONS = "RULE_LOCATIONS"


def traverse_step_cap(num_neurons: int) -> int:
    """The most steps a traverse may take on a network of ``num_neurons`` neurons (a step substitutes the
    summands of least priority); more means its replacement re-introduces what it replaces.  The same cap
    in the reference interpreter and the compiled engine's per-neuron loop."""
    return 4 * num_neurons + 100


#: ``PARAMS = {name: {'default': else value or None, 'domains': {operator: function (rt, ctx) -> (lo,
#: hi, init) per neuron of a layer}}}``: the certifier's optimisable parameters (absent: none).
MODULE_PARAMS = "PARAMS"
#: The rule inputs that name a layer's predecessors (``cftensor.input``).
PREDECESSOR_INPUTS = ("prev", "prev_0", "prev_1")
