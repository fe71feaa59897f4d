"""``--certifier auto``: the shipped certifier for the network's activations.

``alpha_deeppoly`` with the root of branch and bound optimised (:data:`BAB_OPTIMIZE` iterations, or
:data:`BAB_OPTIMIZE_PRODUCTS` on a network with products of two computed values; not the first pass, not when
the search splits the input box), except on networks with residual joins and no sigmoid, tanh or product of two
computed values, where ``deeppoly`` (ERAN's lines).  Measured on the VNN-COMP 2021 subsets of
``bench/bab_compare.py`` (60 s, 2026-11-29, docs/bab.md):

* sigmoid/tanh: CROWN's S-curve lines (one pass verifies 20 of the 36 eran sigmoid instances, DeepPoly 9);
* ReLU without residual joins: oval21 3 decided of 5 against deeppoly's 2 (the root's slopes, carried and
  optimised per subdomain), mnistfc, eran and ACAS Xu the same counts (a little slower per instance: the
  slopes cost time per subdomain);
* residual ReLU nets (cifar10_resnet): 3 of 6 against deeppoly's 4 -- the root optimisation over the residual
  graph takes 20-40 s there, and resnet_4b ran out of time;
* products of two computed values (attention: vit_2023, residual joins and all): ``alpha_deeppoly`` mixes
  McCormick's two planes by parameters; with 5 iterations at the root it decides ``pgd_2_3_16_8835`` in the
  competition's 100 s, deeppoly does not, and 20 iterations (~6.5 s each there) use up the limit at the root
  (docs/vnncomp.md, 2026-12-01).

On ReLU networks ``alpha_deeppoly``'s first pass equals ``deeppoly``'s.  The network is read once more for its
graph only (an unreadable file is left to the loader, which names the problem).

Example: ``cf-run --certifier auto --net ffnnSIGMOID__Point_6x200.onnx --vnnlib P`` runs ``alpha_deeppoly``,
``--net resnet_2b.onnx`` ``deeppoly``.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from cfmlir.tools.run_args import DEFAULT_CERTIFIER

AUTO = "auto"
#: ONNX operators whose relaxation alpha_deeppoly makes tighter than deeppoly
S_CURVES = frozenset({"Sigmoid", "Tanh"})
#: with ``auto`` choosing a certifier with parameters: iterations of alpha-CROWN's loop at the root of branch
#: and bound (not in the first pass: a property one pass decides costs no optimisation)
BAB_OPTIMIZE = 20
#: the same on a network with products of two computed values (attention), where one iteration costs more than
#: a pass of the whole network (vit_2023: ~6.5 s against 4.4 s) and the limits are short (100 s)
BAB_OPTIMIZE_PRODUCTS = 5
#: ONNX operators that multiply or divide (:func:`products`: those of two computed values)
PRODUCTS = frozenset({"Mul", "MatMul", "Div"})
#: the shipped certifiers ``auto`` may choose that have parameters
PARAMETRIC = frozenset({"alpha_deeppoly"})


def apply(args) -> str:
    """Resolve ``args.certifier`` in place (every later reading of it -- a shipped certifier or a user's
    ``.cf`` file -- sees the one chosen) and, when ``auto`` chose a certifier with parameters and no
    ``--optimize`` was given, set ``args.bab_optimize`` (:data:`BAB_OPTIMIZE`, :data:`BAB_OPTIMIZE_PRODUCTS`
    on a network with products of two computed values); the certifier chosen."""
    chosen, facts = _choose(args.certifier, args.net)
    if args.certifier == AUTO and chosen in PARAMETRIC and getattr(args, "optimize", None) is None:
        args.bab_optimize = BAB_OPTIMIZE_PRODUCTS if facts is not None and facts.products else BAB_OPTIMIZE
    args.certifier = chosen
    return chosen


def resolve(certifier: str | None, net: str | None) -> str:
    """The certifier to run: ``certifier`` itself, the default when none, the choice above for ``auto``."""
    return _choose(certifier, net)[0]


class _Facts(NamedTuple):
    """What ``auto`` reads from a graph: its operator types and its joins and products of computed values."""

    op_types: frozenset
    residual_joins: int
    products: int


def _choose(certifier: str | None, net: str | None) -> tuple[str, _Facts | None]:
    """:func:`resolve`'s answer, with the :class:`_Facts` of the network when ``auto`` read it."""
    if certifier is None:
        return DEFAULT_CERTIFIER, None
    if certifier != AUTO:
        return certifier, None
    if net is None:  # the shipped default network: ReLU
        return DEFAULT_CERTIFIER, None
    facts = _facts(Path(net))
    return ("alpha_deeppoly" if _parametric_pays(facts) else DEFAULT_CERTIFIER), facts


def _parametric_pays(facts: _Facts | None) -> bool:
    """Whether ``alpha_deeppoly`` is the choice for a graph: it has a sigmoid or tanh, a product of two computed
    values, or no residual join (an ``Add``/``Sum`` of two computed values); False when it could not be read."""
    if facts is None:
        return False
    return bool(facts.op_types & S_CURVES) or facts.products > 0 or not facts.residual_joins


def _facts(path: Path) -> _Facts | None:
    """:class:`_Facts` of the ONNX graph at ``path``, or None when it cannot be read here."""
    model = _load(path)
    if model is None:
        return None
    return _Facts(frozenset(node.op_type for node in model.graph.node), residual_joins(model), products(model))


def residual_joins(model) -> int:
    """How many ``Add``/``Sum`` nodes of ``model`` add two or more computed values (not weights or constants)."""
    return _of_two_values(model, ("Add", "Sum"))


def products(model) -> int:
    """How many ``Mul``/``MatMul``/``Div`` nodes of ``model`` take two computed values (shape computations
    count too: the graph is not folded here)."""
    return _of_two_values(model, PRODUCTS)


def _of_two_values(model, op_types) -> int:
    """How many nodes of ``model`` whose type is in ``op_types`` take two or more computed values (not weights
    or constants)."""
    constant = {t.name for t in model.graph.initializer}
    constant |= {out for node in model.graph.node if node.op_type == "Constant" for out in node.output}
    return sum(1 for node in model.graph.node
               if node.op_type in op_types and sum(1 for i in node.input if i and i not in constant) >= 2)


def _load(path: Path):
    """The ONNX model at ``path`` (gzip-compressed or not, ``path.gz`` when only that exists: VNN-COMP's
    ``.onnx.gz``), or None when it cannot be read."""
    import onnx

    from cfruntime.gzio import existing, read_bytes

    try:
        return onnx.load_from_string(read_bytes(existing(path)))
    except Exception:  # noqa: BLE001 - the network loader reports it with its own message
        return None
