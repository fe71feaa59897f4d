"""``--certifier auto``: the shipped certifier for the network's activations.

``deeppoly`` (ERAN's lines) unless the network has a sigmoid or tanh, then ``alpha_deeppoly``, whose
S-curve lines are CROWN's (tighter where an input interval straddles 0: one pass verifies 20 of the 36
VNN-COMP 2021 eran sigmoid instances against DeepPoly's 9; docs/bab.md).  On ReLU networks
``alpha_deeppoly`` starts from DeepPoly's bounds too, but optimises its slopes (slower per subdomain in
branch and bound), so ``deeppoly`` stays their choice.  The network is read once more for its operator
types only (an unreadable file is left to the loader, which names the problem).

Example: ``cf-run --certifier auto --net ffnnSIGMOID__Point_6x200.onnx --vnnlib P`` runs ``alpha_deeppoly``.
"""

from __future__ import annotations

from pathlib import Path

from cfmlir.tools.run_args import DEFAULT_CERTIFIER

AUTO = "auto"
#: ONNX operators whose relaxation alpha_deeppoly makes tighter than deeppoly
S_CURVES = frozenset({"Sigmoid", "Tanh"})


def resolve(certifier: str | None, net: str | None) -> str:
    """The certifier to run: ``certifier`` itself, the default when none, the choice above for ``auto``."""
    if certifier is None:
        return DEFAULT_CERTIFIER
    if certifier != AUTO:
        return certifier
    if net is None:  # the shipped default network: ReLU
        return DEFAULT_CERTIFIER
    return "alpha_deeppoly" if operator_types(Path(net)) & S_CURVES else DEFAULT_CERTIFIER


def operator_types(path: Path) -> set[str]:
    """The operator types of the ONNX graph at ``path`` (empty when it cannot be read here)."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - the network loader reports it with its own message
        return set()
    return {node.op_type for node in model.graph.node}
