"""``--certifier auto``: the shipped certifier for the network's activations.

``alpha_deeppoly`` with the root of branch and bound optimised (:data:`BAB_OPTIMIZE` iterations; not the
first pass, not when the search splits the input box), except on networks with residual joins and no
sigmoid or tanh, where ``deeppoly`` (ERAN's lines).  Measured on the VNN-COMP 2021 subsets of
``bench/bab_compare.py`` (60 s, 2026-11-29, docs/bab.md):

* sigmoid/tanh: CROWN's S-curve lines (one pass verifies 20 of the 36 eran sigmoid instances, DeepPoly 9);
* ReLU without residual joins: oval21 3 decided of 5 against deeppoly's 2 (the root's slopes, carried and
  optimised per subdomain), mnistfc, eran and ACAS Xu the same counts (a little slower per instance: the
  slopes cost time per subdomain);
* residual ReLU nets (cifar10_resnet): 3 of 6 against deeppoly's 4 -- the root optimisation over the residual
  graph takes 20-40 s there, and resnet_4b ran out of time.

On ReLU networks ``alpha_deeppoly``'s first pass equals ``deeppoly``'s.  The network is read once more for its
graph only (an unreadable file is left to the loader, which names the problem).

Example: ``cf-run --certifier auto --net ffnnSIGMOID__Point_6x200.onnx --vnnlib P`` runs ``alpha_deeppoly``,
``--net resnet_2b.onnx`` ``deeppoly``.
"""

from __future__ import annotations

from pathlib import Path

from cfmlir.tools.run_args import DEFAULT_CERTIFIER

AUTO = "auto"
#: ONNX operators whose relaxation alpha_deeppoly makes tighter than deeppoly
S_CURVES = frozenset({"Sigmoid", "Tanh"})
#: with ``auto`` choosing a certifier with parameters: iterations of alpha-CROWN's loop at the root of branch
#: and bound (not in the first pass: a property one pass decides costs no optimisation)
BAB_OPTIMIZE = 20
#: the shipped certifiers ``auto`` may choose that have parameters
PARAMETRIC = frozenset({"alpha_deeppoly"})


def apply(args) -> str:
    """Resolve ``args.certifier`` in place (every later reading of it -- a shipped certifier or a user's
    ``.cf`` file -- sees the one chosen) and, when ``auto`` chose a certifier with parameters and no
    ``--optimize`` was given, set ``args.bab_optimize`` (:data:`BAB_OPTIMIZE`); the certifier chosen."""
    chosen = resolve(args.certifier, args.net)
    if args.certifier == AUTO and chosen in PARAMETRIC and getattr(args, "optimize", None) is None:
        args.bab_optimize = BAB_OPTIMIZE
    args.certifier = chosen
    return chosen


def resolve(certifier: str | None, net: str | None) -> str:
    """The certifier to run: ``certifier`` itself, the default when none, the choice above for ``auto``."""
    if certifier is None:
        return DEFAULT_CERTIFIER
    if certifier != AUTO:
        return certifier
    if net is None:  # the shipped default network: ReLU
        return DEFAULT_CERTIFIER
    return "alpha_deeppoly" if parametric_pays(Path(net)) else DEFAULT_CERTIFIER


def parametric_pays(path: Path) -> bool:
    """Whether ``alpha_deeppoly`` is the choice for the ONNX graph at ``path``: it has a sigmoid or tanh, or
    it has no residual join (an ``Add``/``Sum`` of two computed values); False when it cannot be read here."""
    model = _load(path)
    if model is None:
        return False
    ops = {node.op_type for node in model.graph.node}
    return bool(ops & S_CURVES) or not residual_joins(model)


def residual_joins(model) -> int:
    """How many ``Add``/``Sum`` nodes of ``model`` add two or more computed values (not weights or constants)."""
    constant = {t.name for t in model.graph.initializer}
    constant |= {out for node in model.graph.node if node.op_type == "Constant" for out in node.output}
    return sum(1 for node in model.graph.node
               if node.op_type in ("Add", "Sum") and sum(1 for i in node.input if i and i not in constant) >= 2)


def _load(path: Path):
    """The ONNX model at ``path`` (gzip-compressed or not, ``path.gz`` when only that exists: VNN-COMP's
    ``.onnx.gz``), or None when it cannot be read."""
    import onnx

    from cfruntime.gzio import existing, read_bytes

    try:
        return onnx.load_from_string(read_bytes(existing(path)))
    except Exception:  # noqa: BLE001 - the network loader reports it with its own message
        return None
