"""The evaluation's epsilon for each shared network (the paper's appendix table), used by the
benchmarks and the soundness tests.

MNIST standard fully-connected nets 0.004 (0.005 for PGD-trained ones), ConvSmall DiffAI 0.1,
CIFAR10 standard 4e-5, PGD 5e-4, ConvBig DiffAI 0.002.  Epsilons are radii of the L-inf ball in
[0, 1] pixel space (before the network's own normalisation).
"""

from __future__ import annotations

from pathlib import Path

PAPER_EPSILON: dict[str, float] = {
    "mnist_relu_3_50": 0.004, "mnist_relu_3_100": 0.004, "mnist_relu_5_100": 0.004, "mnist_relu_6_100": 0.004,
    "mnist_relu_6_200": 0.004, "mnist_relu_9_200": 0.004, "mnist_relu_6_500": 0.004, "mnist_relu_6_500_pgd": 0.005,
    "mnist_relu_4_1024": 0.004, "mnist_convSmallRELU__Point": 0.004, "mnist_convSmallRELU__PGDK": 0.005,
    "mnist_convSmallRELU__DiffAI": 0.1, "mnist_convMedRELU": 0.004, "mnist_convBigRELU": 0.2,
    "mnist_ffnnSIGMOID__Point_6x200": 0.004, "mnist_nln_logsig_200_50": 0.004, "mnist_nln_logsig_200_100_50": 0.004,
    "mnist_nln_tansig_200_50": 0.004, "cifar_relu_4_100": 4e-5, "cifar_relu_6_100": 4e-5,
    "cifar_relu_4_100.nchwfix": 4e-5, "cifar_relu_6_100.nchwfix": 4e-5, "cifar_relu_6_500": 4e-5,
    "cifar_relu_7_1024": 4e-5, "cifar10_convSmallRELU__Point": 4e-5, "cifar10_convSmallRELU__PGDK": 5e-4,
    "cifar10_convMedRELU": 5e-4, "cifar10_convBigRELU": 0.002,
}


def dataset_csv(net_name: str) -> str:
    """The ERAN CSV (in ``../shared/data``) a shared network is evaluated on."""
    return "cifar10_test.csv" if net_name.startswith("cifar") else "mnist_test.csv"


def load_paper_problem(net_name: str, n: int, shared: Path | None = None):
    """``(network, robustness property)`` of a shared network (by manifest name) on the first ``n``
    images of its dataset at the paper's epsilon, with the manifest's default semantics."""
    from cfruntime.network import load_onnx
    from cfruntime.properties.dataset import load_eran_csv, robustness_property
    from cfruntime.properties.manifest import load_manifest, shared_dir

    shared = shared or shared_dir()
    entry = None if shared is None else next((e for e in load_manifest() if e.path.stem == net_name), None)
    if entry is None:
        raise FileNotFoundError(f"no shared network '{net_name}' (is ../shared there?)")
    sem = entry.default_semantics()
    net = load_onnx(entry.path, **entry.load_kwargs(sem))
    prop = robustness_property(load_eran_csv(shared / "data" / dataset_csv(net_name), stop=n), PAPER_EPSILON[net_name],
                               entry.convention(sem), net.input_shape, num_classes=net.output_size)
    return net, prop
