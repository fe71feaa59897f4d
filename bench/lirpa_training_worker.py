"""auto_LiRPA's side of ``bench/training_compare.py``: the training loop of
``examples/certified_training.py`` with auto_LiRPA's CROWN-IBP bounds, one epoch per request (not a test).

Runs in auto_LiRPA's environment (``../peer-venv-grad``, ``../shared/peers/auto_LiRPA`` on
``PYTHONPATH``); imports nothing of the project but the example (``examples/``) and the operation counter
(``runtime/op_count.py``, torch only, loaded from its file).  Protocol: ``argv[1]`` is a ``torch.save``d
problem ``{"model", "data", "schedule", "threads"}``; then one request per stdin line, one JSON answer
per stdout line:

* ``epoch``: train one epoch (:func:`certified_training.training`), answer its record;
* ``count``: the torch operations and host syncs of one bounds + backward step on the first batch;
* ``verify``: the held-out accuracy and verified accuracy at the target eps (CROWN-IBP);
* ``quit``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))

import certified_training as ct  # noqa: E402
from auto_LiRPA import BoundedModule, BoundedTensor, PerturbationLpNorm  # noqa: E402


def lirpa_bounds(method: str = "CROWN-IBP"):
    """``bounds_for`` of the example's loop: auto_LiRPA's module (its own copy of the weights, which is
    what trains) and its margins' lower bounds over the box."""
    def bounds_for(model):
        bounded = BoundedModule(model, torch.zeros(1, 1, 28, 28))

        def bound(lo, hi, C):
            x = BoundedTensor((lo + hi) / 2, PerturbationLpNorm(norm=float("inf"), x_L=lo, x_U=hi))
            lb, _ = bounded.compute_bounds(x=(x,), C=C, method=method, bound_upper=False)
            return lb
        return bounded, bound
    return bounds_for


def _counter():
    spec = importlib.util.spec_from_file_location("op_count", REPO / "runtime" / "op_count.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.OpCounter


def main() -> int:
    problem = torch.load(sys.argv[1], weights_only=False)
    torch.set_num_threads(problem["threads"])
    data, schedule = problem["data"], ct.Schedule(**problem["schedule"])
    model = problem["model"]
    epochs = ct.training(model, data, schedule, lirpa_bounds())
    trainee = None
    for line in sys.stdin:
        request = line.strip()
        if request == "epoch":
            rec = next(epochs)
            trainee = rec.pop("trainee")
            answer = rec
        elif request == "count":
            answer = count_step(model, data, schedule)
        elif request == "verify":
            nat, ver = ct.verified_accuracy(trainee, data[2], data[3], schedule.eps, _own)
            answer = {"accuracy": nat, "verified_accuracy": ver}
        elif request == "quit":
            return 0
        else:
            answer = {"error": f"unknown request '{request}'"}
        print(json.dumps(answer), flush=True)
    return 0


def _own(bounded):
    """The trained auto_LiRPA module's own bounds (it is already a ``BoundedModule``)."""
    def bound(lo, hi, C):
        x = BoundedTensor((lo + hi) / 2, PerturbationLpNorm(norm=float("inf"), x_L=lo, x_U=hi))
        return bounded.compute_bounds(x=(x,), C=C, method="CROWN-IBP", bound_upper=False)[0]
    return bounded, bound


def count_step(model, data, schedule) -> dict:
    """Operations and syncs of one bounds + backward step (first batch, target eps) on a copy (the
    ``BoundedTensor`` is made before counting: a tensor subclass cannot be made under the counter)."""
    import copy

    bounded = BoundedModule(copy.deepcopy(model), torch.zeros(1, 1, 28, 28))
    xb, yb = data[0][:schedule.batch_size], data[1][:schedule.batch_size]
    lo, hi = ct.ball(xb, schedule.eps)
    C = ct.margin_matrix(yb)
    x = BoundedTensor((lo + hi) / 2, PerturbationLpNorm(norm=float("inf"), x_L=lo, x_U=hi))
    bounded.compute_bounds(x=(x,), C=C, method="CROWN-IBP", bound_upper=False)  # warm
    x = BoundedTensor((lo + hi) / 2, PerturbationLpNorm(norm=float("inf"), x_L=lo, x_U=hi))
    with _counter()() as c:
        lb = bounded.compute_bounds(x=(x,), C=C, method="CROWN-IBP", bound_upper=False)[0]
        ct.robust_loss(lb).backward()
    return {"ops": c.ops, "syncs": c.syncs}


if __name__ == "__main__":
    sys.exit(main())
