"""Unsound certifiers for the proof gate's tests (:mod:`cfmlir.proof_gate`), made from shipped sources by
one textual edit each, and the small 784-input networks (MNIST-shaped, so that ERAN CSV rows fit) that use
the edited rule -- or only the file's other, sound, rules.

:data:`MUTANTS`: name -> :class:`Mutant` (the shipped certifier, the text replaced and its replacement, the
operator whose rule it breaks, the network kind that runs that rule, and one that runs only sound rules of
the same file, None when there is none: every analysis runs ``Affine``).  :func:`network` builds a kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from cfruntime.network.builders import make_model


@dataclass(frozen=True)
class Mutant:
    base: str
    old: str
    new: str
    op: str
    net: str  # a network kind that runs the broken rule
    sound_net: str | None  # one that runs only the file's sound rules
    s_curve: bool = False  # a sigmoid/tanh rule (the prover's hard case)

    def text(self) -> str:
        from cfmlir.certifiers import certifier_source

        text = certifier_source(self.base)[0]
        assert text.count(self.old) == 1, (self.base, self.old)
        return text.replace(self.old, self.new)

    def rule_line(self) -> int:
        """The line of the broken rule (``    Op -> ...``) in :meth:`text`."""
        return next(i for i, line in enumerate(self.text().splitlines(), start=1) if line.startswith(f"    {self.op} ->"))


MUTANTS = {
    "deepz ReLU shifts the zonotope centre": Mutant(
        "deepz", "func relu_z(Float l, Float u, SymExp z) = l >= 0.0 ? z : (u <= 0.0 ? 0.0 : x(l, u, z));",
        "func relu_z(Float l, Float u, SymExp z) = l >= 0.0 ? z : (u <= 0.0 ? 0.0 : x(l, u, z) + 0.01);",
        "Relu", "relu", "maxpool"),
    "deeppoly ReLU upper slope halved": Mutant(
        "deeppoly", "(((n[u]) / ((n[u]) - (n[l]))) * ((n)))", "((0.5 * (n[u]) / ((n[u]) - (n[l]))) * ((n)))",
        "Relu", "relu", "maxpool"),
    "deeppoly ReLU chord intercept with the wrong sign": Mutant(
        "deeppoly", "- (((n[u]) * (n[l])) / ((n[u]) - (n[l]))));", "+ (((n[u]) * (n[l])) / ((n[u]) - (n[l]))));",
        "Relu", "relu", "maxpool"),
    "deeppoly sigmoid tangent taken at the wrong end": Mutant(
        "deeppoly", ": sigma(n[l]) + min(dsigma(n[l]), dsigma(n[u])) * (n - n[l]);",
        ": sigma(n[u]) + min(dsigma(n[l]), dsigma(n[u])) * (n - n[u]);", "Sigmoid", "sigmoid", "relu", True),
    "deeppoly tanh chord on the wrong side": Mutant(
        "deeppoly", "func tanh_lower(Neuron n) = n[l] > 0.0 ?", "func tanh_lower(Neuron n) = n[u] <= 0.0 ?",
        "Tanh", "tanh", "relu", True),
    "deeppoly Affine back-substitution with the wrong sign": Mutant(
        "deeppoly", "func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[L]) : (coeff * n[U]);",
        "func replace_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[U]) : (coeff * n[L]);",
        "Affine", "relu", None),
    "ibp ReLU upper bound without the clamp at 0": Mutant(
        "ibp", "(prev[u] >= 0 ? prev[u] : 0));", "prev[u]);", "Relu", "relu", "maxpool"),
    "ibp Maxpool takes the smallest upper bound": Mutant(
        "ibp", "Maxpool -> (max(prev[l]), max(prev[u]));", "Maxpool -> (max(prev[l]), min(prev[u]));",
        "Maxpool", "maxpool", "relu"),
    "ibp LeakyRelu with twice the slope below 0": Mutant(
        "ibp", "func leaky(Float a, Float x) = x >= 0.0 ? x : a * x;", "func leaky(Float a, Float x) = x >= 0.0 ? x : 2.0 * a * x;",
        "LeakyRelu", "leakyrelu", "relu"),
    "ibp Neuron_add upper bound forgets prev_1": Mutant(
        "ibp", "prev_0[u] + prev_1[u]", "prev_0[u]", "Neuron_add", "residual", "relu"),
    "ibp Sigmoid lower bound at u": Mutant(
        "ibp", "Sigmoid -> (sigma(prev[l]), sigma(prev[u]));", "Sigmoid -> (sigma(prev[u]), sigma(prev[u]));",
        "Sigmoid", "sigmoid", "relu", True),
    "crown_ibp ReLU lower bound is u": Mutant(
        "crown_ibp", "Relu -> (relu(prev[l]),", "Relu -> (prev[u],", "Relu", "relu", "maxpool"),
    "deepz Affine lower bound adds the radius": Mutant(
        "deepz", "func deepz_lower(Sym n, Float c) = (c > 0.0) ? c*(0.0 - 1.0) : c*(1.0);",
        "func deepz_lower(Sym n, Float c) = (c > 0.0) ? c*(1.0) : c*(0.0 - 1.0);", "Affine", "relu", None),
}

#: the kinds :func:`network` builds -> the operators an analysis of it runs
NETWORK_OPERATORS = {"relu": {"Affine", "Relu"}, "sigmoid": {"Affine", "Sigmoid"}, "tanh": {"Affine", "Tanh"},
                     "leakyrelu": {"Affine", "LeakyRelu"}, "maxpool": {"Affine", "Maxpool"},
                     "residual": {"Affine", "Relu", "Neuron_add"}}


def network(kind: str, path: Path, seed: int = 0) -> Path:
    """A small float32 ONNX network on ``[1, 28, 28]`` inputs saved at ``path``: Flatten - Gemm(8) - <kind> -
    Gemm(10) for an activation, Conv(1->2, k4, s4) - MaxPool(k2, s2) - Flatten - Gemm(10) for ``maxpool``,
    and a residual MLP (two Relu layers joined by an Add) for ``residual``."""
    rng = np.random.default_rng(seed)
    f = lambda *s, scale=1.0: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    if kind == "maxpool":
        inits = {"K": f(2, 1, 4, 4, scale=0.5), "B": f(2, scale=0.3), "W": f(10, 18, scale=0.5), "b": f(10, scale=0.1)}
        nodes = [helper.make_node("Conv", ["input", "K", "B"], ["c"], kernel_shape=[4, 4], strides=[4, 4], name="conv"),
                 helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
                 helper.make_node("Flatten", ["p"], ["fl"], name="flatten"),
                 helper.make_node("Gemm", ["fl", "W", "b"], ["output"], transB=1, name="fc")]
    elif kind == "residual":
        inits = {"W1": f(8, 784, scale=0.05), "b1": f(8, scale=0.3), "W2": f(8, 8, scale=0.5), "b2": f(8, scale=0.3),
                 "W3": f(10, 8, scale=0.5), "b3": f(10, scale=0.1)}
        nodes = [helper.make_node("Flatten", ["input"], ["x"], name="flatten"),
                 helper.make_node("Gemm", ["x", "W1", "b1"], ["a1"], transB=1, name="fc1"),
                 helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
                 helper.make_node("Gemm", ["r1", "W2", "b2"], ["a2"], transB=1, name="fc2"),
                 helper.make_node("Relu", ["a2"], ["r2"], name="relu2"),
                 helper.make_node("Add", ["r2", "r1"], ["s"], name="add"),
                 helper.make_node("Gemm", ["s", "W3", "b3"], ["output"], transB=1, name="fc3")]
    else:
        op = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "leakyrelu": "LeakyRelu"}[kind]
        act = helper.make_node(op, ["h"], ["a"], name=kind, **({"alpha": 0.2} if kind == "leakyrelu" else {}))
        inits = {"W1": f(8, 784, scale=0.05), "b1": f(8, scale=0.3), "W2": f(10, 8, scale=0.7), "b2": f(10, scale=0.1)}
        nodes = [helper.make_node("Flatten", ["input"], ["x"], name="flatten"),
                 helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1, name="fc1"), act,
                 helper.make_node("Gemm", ["a", "W2", "b2"], ["output"], transB=1, name="fc2")]
    onnx.save(make_model(nodes, inits, (1, 28, 28)), str(path))
    return path


def two_images(folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """An ERAN CSV of two random MNIST-sized rows (labels 3 and 7) in ``folder``, and a VNN-LIB robustness
    property of the first at eps 0.01 (label 3): ``(csv, vnnlib)``."""
    rng = np.random.default_rng(seed)
    rows = [[3] + rng.integers(0, 256, 784).tolist(), [7] + rng.integers(0, 256, 784).tolist()]
    (folder / "data.csv").write_text("\n".join(",".join(map(str, r)) for r in rows) + "\n")
    x = np.asarray(rows[0][1:], np.float64) / 255.0
    return folder / "data.csv", robustness_vnnlib(folder / "p.vnnlib", np.clip(x - 0.01, 0, 1), np.clip(x + 0.01, 0, 1), 3)


def robustness_vnnlib(path: Path, lb, ub, label: int, n_out: int = 10) -> Path:
    """A VNN-LIB robustness property: inputs in the box ``[lb, ub]``, and some output ``j != label`` at least
    the label's (the counterexample region)."""
    lb, ub = np.asarray(lb, np.float64).reshape(-1), np.asarray(ub, np.float64).reshape(-1)
    lines = [f"(declare-const X_{i} Real)" for i in range(len(lb))] + [f"(declare-const Y_{j} Real)" for j in range(n_out)]
    for i, (lo, hi) in enumerate(zip(lb, ub)):
        lines += [f"(assert (>= X_{i} {float(lo)!r}))", f"(assert (<= X_{i} {float(hi)!r}))"]
    lines.append("(assert (or " + " ".join(f"(and (>= Y_{j} Y_{label}))" for j in range(n_out) if j != label) + "))")
    path.write_text("\n".join(lines) + "\n")
    return path
