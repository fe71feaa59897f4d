"""``--certifier auto``: the shipped certifier for the network's activations.

``alpha_deeppoly`` with the root of branch and bound optimised (:data:`BAB_OPTIMIZE` iterations, or
:data:`BAB_OPTIMIZE_PRODUCTS` on a network with products of two computed values; not the first pass; where the
search splits the input box the root's parameters are not carried into its children), except on networks with residual joins and no sigmoid, tanh or product of two
computed values, where ``deeppoly`` (ERAN's lines), and on *wide networks of few inputs*, where ``crown_ibp``.
Measured on the VNN-COMP 2021 subsets of ``bench/bab_compare.py`` (60 s, 2026-11-29, docs/bab.md):

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

* wide networks of few inputs (at most :data:`FEW_INPUTS`, so branch and bound splits the input box, and a
  layer of at least :data:`WIDE_LAYER` neurons): ``crown_ibp``.  Its intermediate bounds are intervals, which
  the input splits tighten, and it back-substitutes the output rows only, where DeepPoly back-substitutes every
  neuron of every layer: on cgan_2023's generators (5 inputs, transposed convolutions up to 32x30x30 = 28,800
  neurons) deeppoly's first pass runs out of memory (2.7 GiB more) and ``cGAN_imgSz32_nCh_1`` prop_3 stays
  unknown in the competition's 900 s, where crown_ibp's branch and bound proves it in 236 s (2026-12-02,
  docs/vnncomp.md).  Among the VNN-COMP 2024 networks only cgan_2023's are such (ACAS Xu: 5 inputs, layers of
  50; tllverifybench: 2 inputs, 2,048; nn4sys lindex: 1 input, 128).

On ReLU networks ``alpha_deeppoly``'s first pass equals ``deeppoly``'s.  The network is read once more for its
graph only (an unreadable file is left to the loader, which names the problem).

Example: ``cf-run --certifier auto --net ffnnSIGMOID__Point_6x200.onnx --vnnlib P`` runs ``alpha_deeppoly``,
``--net resnet_2b.onnx`` ``deeppoly``, ``--net cGAN_imgSz32_nCh_1.onnx`` ``crown_ibp``.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from cfmlir.bab.options import AUTO_MAX_FREE_INPUTS
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
#: on residual ReLU networks, branch and bound's certifier (the first pass stays ``deeppoly``, whose pass
#: computes no bounds that no rule reads: TinyYOLO's 16x52x52 convolutions feeding joins), its root's rows
#: optimised from the pass's layer bounds (seconds) instead of a whole-network optimisation (20-40 s on
#: cifar10_resnet, which cost a decided instance)
RESIDUAL_SEARCH = "alpha_deeppoly"
#: a network of at most this many inputs (branch and bound splits its input box: ``cfmlir.bab.options``) ...
FEW_INPUTS = AUTO_MAX_FREE_INPUTS
#: ... with a layer of at least this many neurons gets :data:`WIDE_FEW_INPUTS` (module docstring)
WIDE_LAYER = 8192
WIDE_FEW_INPUTS = "crown_ibp"


def apply(args) -> str:
    """Resolve ``args.certifier`` in place (every later reading of it -- a shipped certifier or a user's
    ``.cf`` file -- sees the one chosen) and, when no ``--optimize`` was given: where ``auto`` chose a
    certifier with parameters, set ``args.bab_optimize`` (:data:`BAB_OPTIMIZE`, :data:`BAB_OPTIMIZE_PRODUCTS`
    on a network with products of two computed values); where it chose ``deeppoly`` for residual joins, set
    branch and bound's own certifier (``args.bab_certifier``: :data:`RESIDUAL_SEARCH`, its root's rows optimised
    from the first pass's bounds, ``args.bab_root_optimize = "rows"``).  The certifier chosen."""
    chosen, facts = _choose(args.certifier, args.net)
    if args.certifier == AUTO and getattr(args, "optimize", None) is None:
        if chosen in PARAMETRIC:
            args.bab_optimize = BAB_OPTIMIZE_PRODUCTS if facts is not None and facts.products else BAB_OPTIMIZE
        elif chosen == DEFAULT_CERTIFIER and facts is not None and facts.residual_joins:
            args.bab_certifier, args.bab_optimize, args.bab_root_optimize = RESIDUAL_SEARCH, BAB_OPTIMIZE, "rows"
    args.certifier = chosen
    return chosen


def resolve(certifier: str | None, net: str | None) -> str:
    """The certifier to run: ``certifier`` itself, the default when none, the choice above for ``auto``."""
    return _choose(certifier, net)[0]


class _Facts(NamedTuple):
    """What ``auto`` reads from a graph: its operator types, its joins and products of computed values, the
    size of its input and of its widest computed value (0 where the shapes cannot be inferred)."""

    op_types: frozenset
    residual_joins: int
    products: int
    inputs: int = 0
    widest: int = 0


def _choose(certifier: str | None, net: str | None) -> tuple[str, _Facts | None]:
    """:func:`resolve`'s answer, with the :class:`_Facts` of the network when ``auto`` read it."""
    if certifier is None:
        return DEFAULT_CERTIFIER, None
    if certifier != AUTO:
        return certifier, None
    if net is None:  # the shipped default network: ReLU
        return DEFAULT_CERTIFIER, None
    facts = _facts(Path(net))
    if _wide_few_inputs(facts):
        return WIDE_FEW_INPUTS, facts
    return ("alpha_deeppoly" if _parametric_pays(facts) else DEFAULT_CERTIFIER), facts


def _wide_few_inputs(facts: _Facts | None) -> bool:
    """Whether a graph has at most :data:`FEW_INPUTS` inputs and a computed value of at least
    :data:`WIDE_LAYER` entries (False when it could not be read or its shapes not inferred)."""
    return facts is not None and 0 < facts.inputs <= FEW_INPUTS and facts.widest >= WIDE_LAYER


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
    return _Facts(frozenset(node.op_type for node in model.graph.node), residual_joins(model), products(model),
                  *input_and_widest(model))


def input_and_widest(model) -> tuple[int, int]:
    """``(inputs, widest)``: the number of entries of ``model``'s first graph input that is not a weight, and of
    its largest value whose shape ONNX's shape inference gives (a batch dimension of unknown size counts 1);
    ``(0, 0)`` where either cannot be read."""
    import math

    import onnx

    weights = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in weights]
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - a graph ONNX cannot infer: no facts about sizes
        return 0, 0

    def size(value) -> int:
        return math.prod(d.dim_value or 1 for d in value.type.tensor_type.shape.dim)

    values = list(inferred.graph.value_info) + list(inferred.graph.output)
    return (size(inputs[0]) if inputs else 0), max((size(v) for v in values), default=0)


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
