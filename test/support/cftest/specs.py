"""Small certifier texts that tests build on: an interval shape with its back-substitution helpers and its
Affine rule, into which a test puts its own Relu rule (and, where it needs them, more transformers)."""

from __future__ import annotations

#: an interval shape (``l <= x <= u``), the sign-split helpers of its Affine rule, and the flow's functions
INTERVAL_PRELUDE = """def Shape as (Float l, Float u){[(curr[l]<=curr),(curr[u]>=curr)]};
func simplify_lower(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[l]) : (coeff * n[u]);
func simplify_upper(Neuron n, Float coeff) = (coeff >= 0.0) ? (coeff * n[u]) : (coeff * n[l]);
func priority(Neuron n) = n[layer];
func stop(Neuron n) = true;
"""

#: the interval Affine rule: the dot product with each coefficient's sign choosing the bound it reads
INTERVAL_AFFINE = ("    Affine -> ((prev.dot(curr[weight]) + curr[bias]).map(simplify_lower), "
                   "(prev.dot(curr[weight]) + curr[bias]).map(simplify_upper));\n")


def interval_spec(name: str, relu: str, *, extra: str = "") -> str:
    """The certifier text of transformer ``name``: the interval Affine rule and ``Relu -> relu;``, then the
    transformers ``extra`` (unused by the flow), and a forward flow of ``name``."""
    return (INTERVAL_PRELUDE + f"transformer {name}{{\n" + INTERVAL_AFFINE + f"    Relu -> {relu};\n}}\n" + extra
            + f"flow(forward, priority, stop, {name});\n")
