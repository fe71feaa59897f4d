"""auto_LiRPA's bounds of pickled problems, run in the peer environment (``../peer-venv-grad``, auto_LiRPA
0.7.1 from ``../shared/peers`` on ``PYTHONPATH``): no project import here.

    python lirpa_reference.py IN.pt OUT.pt

``IN.pt``: ``{"model": nn.Module, "cases": {name: {"lb", "ub", "C", "method"}}}``; ``OUT.pt``:
``{name: (lower, upper)}`` of ``compute_bounds`` with the L-inf box ``[lb, ub]`` and ``C``, intermediate
bounds dense (pure DeepPoly/CROWN-IBP semantics: by default auto_LiRPA keeps IBP bounds where tighter).
"""

import sys

import torch
from auto_LiRPA import BoundedModule, BoundedTensor, PerturbationLpNorm


def main(src: str, dst: str) -> None:
    problem = torch.load(src, weights_only=False)
    model = problem["model"].eval()
    out = {}
    for name, case in problem["cases"].items():
        lo, hi = case["lb"], case["ub"]
        x = (lo + hi) / 2
        opts = {"sparse_intermediate_bounds": False, "sparse_conv_intermediate_bounds": False, "conv_mode": "matrix"}
        bounded = BoundedModule(model, torch.zeros_like(x), bound_opts=opts)
        bx = BoundedTensor(x, PerturbationLpNorm(norm=float("inf"), x_L=lo, x_U=hi))
        with torch.no_grad():
            out[name] = bounded.compute_bounds(x=(bx,), method=case["method"], C=case["C"])
    torch.save(out, dst)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
