"""Certified training: a CROWN-IBP loss computed by a compiled ConstraintFlow certifier.

    python examples/certified_training.py                       # MLP and CNN with crown_ibp, MLP with deepz
    python examples/certified_training.py --runs mlp:crown_ibp --epochs 4
    python examples/certified_training.py --data synthetic      # without ../shared

Every training step bounds the margins ``y_true - y_j`` of the batch over L-inf balls (clipped to the
pixel range [0, 1]) with ``cfmlir.BoundedNetwork(model, certifier)`` and back-propagates a robust
loss through the bounds into the model's parameters (auto_LiRPA's CROWN-IBP training loss)::

    loss = kappa * CE(model(x), y) + (1 - kappa) * CE(-[0, lb(margins)], 0)

with ``eps`` and ``kappa`` ramped linearly from ``0`` and ``kappa_start`` after ``warmup`` natural
epochs, over ``ramp`` epochs, step by step.  After training, the verified accuracy on held-out images
at the target ``eps`` is the fraction whose every margin has a positive lower bound, by the compiled
``crown_ibp`` (float32, widened: sound for the real-valued model).  Any certifier works as the loss:
``mlp:deepz`` trains with DeepZ's zonotopes, a domain auto_LiRPA does not have.

Data: the ERAN CSV ``../shared/data/mnist_test_1000.csv`` (MNIST test images; the first 800 train,
the last 200 are held out), or ``--data synthetic``: ten random 28x28 prototypes with noise (what the
example falls back to without the file).  ``bench/training_compare.py`` runs this loop (the same
functions) against auto_LiRPA's bounds and times one epoch of each.

The training loop (:func:`training`) takes the bounds as a function, ``bounds_for(model) -> (trainee,
f)``: ``f(lo, hi, C)`` gives the margins' lower bounds and ``trainee`` is the module to train (ours:
``model`` itself, whose parameters the bounds read by reference; a tool that copies the weights into
its own module returns that), so the same loop runs with any bounding tool; this module imports
cfmlir only in :func:`cfmlir_bounds`.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "mnist_test_1000.csv"


# -- data -------------------------------------------------------------------------------------------------
def load_mnist(path=DEFAULT_DATA, n_train: int = 800, seed: int = 0):
    """``(x_train, y_train, x_test, y_test)``: ``[N, 1, 28, 28]`` float32 pixels in [0, 1] and int64
    labels; from an ERAN CSV (``n_train`` first rows train, the rest test) or, for ``"synthetic"`` or a
    missing file, :func:`synthetic_digits`."""
    if str(path) == "synthetic" or not Path(path).is_file():
        if str(path) != "synthetic":
            print(f"note: {path} not found: synthetic data instead", file=sys.stderr)
        return synthetic_digits(n_train, 200, seed)
    from cfruntime.properties import load_eran_csv

    images = load_eran_csv(path, "mnist")
    x = torch.as_tensor(images.pixels, dtype=torch.float32).reshape(-1, 1, 28, 28) / 255.0
    y = images.labels.to(torch.int64)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def synthetic_digits(n_train: int, n_test: int, seed: int = 0):
    """Ten random smooth 28x28 prototypes, samples = a prototype plus noise, clipped to [0, 1]."""
    g = torch.Generator().manual_seed(seed)
    protos = F.avg_pool2d(torch.rand(10, 1, 28, 28, generator=g), 5, stride=1, padding=2)
    protos = (protos - protos.mean()) * 4 + 0.5

    def draw(n):
        y = torch.randint(0, 10, (n,), generator=g)
        x = (protos[y] + 0.15 * torch.randn(n, 1, 28, 28, generator=g)).clamp(0, 1)
        return x, y
    return (*draw(n_train), *draw(n_test))


# -- models -----------------------------------------------------------------------------------------------
def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 100), nn.ReLU(), nn.Linear(100, 100), nn.ReLU(), nn.Linear(100, 10))


def cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 8, 4, stride=2, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 4, stride=2, padding=1),
                         nn.ReLU(), nn.Flatten(), nn.Linear(16 * 7 * 7, 100), nn.ReLU(), nn.Linear(100, 10))


MODELS = {"mlp": mlp, "cnn": cnn}


def initial_model(name: str, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return MODELS[name]()


# -- the loss and its schedule ---------------------------------------------------------------------------
@dataclass
class Schedule:
    """Epochs, batch size, Adam's learning rate, and the ramps: ``eps`` from 0 to ``eps`` and ``kappa``
    from ``kappa_start`` to ``kappa_end``, linearly per step over ``ramp`` epochs after ``warmup``."""

    epochs: int = 12
    eps: float = 0.1
    warmup: int = 1
    ramp: int = 6
    kappa_start: float = 1.0
    kappa_end: float = 0.5
    lr: float = 1e-3
    batch_size: int = 32
    seed: int = 0

    def at(self, step: int, steps_per_epoch: int) -> tuple[float, float]:
        """``(eps, kappa)`` at training step ``step``."""
        t = (step - self.warmup * steps_per_epoch) / max(1, self.ramp * steps_per_epoch)
        t = min(max(t, 0.0), 1.0)
        return t * self.eps, self.kappa_start + t * (self.kappa_end - self.kappa_start)


def margin_matrix(labels: torch.Tensor, classes: int = 10) -> torch.Tensor:
    """``[B, classes - 1, classes]``: row ``j`` is ``e_y - e_j`` for the other classes ``j``."""
    eye = torch.eye(classes, dtype=torch.float32, device=labels.device)
    C = eye[labels].unsqueeze(1) - eye.unsqueeze(0)  # [B, classes, classes], the own row 0
    others = (torch.arange(classes, device=labels.device).unsqueeze(0) != labels.unsqueeze(1))
    return C[others].reshape(labels.shape[0], classes - 1, classes)


def ball(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The L-inf ball of radius ``eps`` around ``x``, clipped to the pixel range [0, 1]."""
    return (x - eps).clamp(0.0, 1.0), (x + eps).clamp(0.0, 1.0)


def robust_loss(lb: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the worst-case logits ``-[0, lb]`` against class 0 (the true one)."""
    z = torch.cat([torch.zeros_like(lb[:, :1]), lb], dim=1)
    return F.cross_entropy(-z, torch.zeros(lb.shape[0], dtype=torch.int64, device=lb.device))


# -- training and verification ------------------------------------------------------------------------------
def training(model: nn.Module, data, schedule: Schedule, bounds_for):
    """Train ``model`` on ``data`` (``x_train, y_train, ...``) with ``schedule``, one epoch per
    iteration; ``bounds_for(model) -> (trainee, f)`` with ``f(lo, hi, C) -> lower bounds [B, K]``.
    Yields one record per epoch (``seconds``: the epoch's wall time: logits, bounds, losses, backward
    passes and optimizer steps; ``trainee``: the trained module)."""
    x, y = data[0], data[1]
    trainee, bound = bounds_for(model)
    opt = torch.optim.Adam(trainee.parameters(), lr=schedule.lr)
    g = torch.Generator().manual_seed(schedule.seed)
    steps = math.ceil(len(x) / schedule.batch_size)
    step = 0
    for epoch in range(schedule.epochs):
        order = torch.randperm(len(x), generator=g)
        trainee.train()
        t0 = time.perf_counter()
        totals = {"loss": 0.0, "robust": 0.0, "correct": 0}
        for i in range(steps):
            idx = order[i * schedule.batch_size:(i + 1) * schedule.batch_size]
            xb, yb = x[idx], y[idx]
            eps, kappa = schedule.at(step, steps)
            logits = trainee(xb)
            loss = F.cross_entropy(logits, yb)
            if kappa < 1.0:
                lb = bound(*ball(xb, eps), margin_matrix(yb))
                rob = robust_loss(lb)
                loss = kappa * loss + (1.0 - kappa) * rob
                totals["robust"] += float(rob.detach()) * len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            totals["loss"] += float(loss.detach()) * len(idx)
            totals["correct"] += int((logits.argmax(1) == yb).sum())
        trainee.eval()
        yield {"epoch": epoch + 1, "seconds": time.perf_counter() - t0, "eps": eps, "kappa": kappa,
               "loss": totals["loss"] / len(x), "robust_loss": totals["robust"] / len(x),
               "train_accuracy": totals["correct"] / len(x), "trainee": trainee}


def train(model: nn.Module, data, schedule: Schedule, bounds_for, *, log=print) -> list[dict]:
    """:func:`training` to the end, each epoch logged; the records without ``trainee``."""
    records = []
    for rec in training(model, data, schedule, bounds_for):
        rec = {k: v for k, v in rec.items() if k != "trainee"}
        records.append(rec)
        log(f"  epoch {rec['epoch']:2d}  eps {rec['eps']:.3f}  kappa {rec['kappa']:.2f}  loss {rec['loss']:.4f}  "
            f"train acc {rec['train_accuracy']:.3f}  {rec['seconds']:.2f} s")
    return records


def verified_accuracy(model: nn.Module, x, y, eps: float, bounds_for, batch_size: int = 100) -> tuple[float, float]:
    """``(natural accuracy, verified accuracy)`` at ``eps``: verified = every margin's lower bound > 0."""
    module, bound = bounds_for(model)
    correct = verified = 0
    with torch.no_grad():
        for i in range(0, len(x), batch_size):
            xb, yb = x[i:i + batch_size], y[i:i + batch_size]
            correct += int((module(xb).argmax(1) == yb).sum())
            lb = bound(*ball(xb, eps), margin_matrix(yb))
            verified += int((lb > 0).all(1).sum())
    return correct / len(x), verified / len(x)


def cfmlir_bounds(certifier: str, **options):
    """``bounds_for`` of :func:`train` with our compiled ``certifier`` (``options``: those of
    :class:`cfmlir.BoundedNetwork`, e.g. ``widen=False`` for a training loss, which needs no rigour)."""
    import cfmlir

    def bounds_for(model):
        bounded = cfmlir.BoundedNetwork(model, certifier, **options)
        # the lower bounds only (as auto_LiRPA's bound_upper=False): the loss reads no upper bound
        return model, lambda lo, hi, C: bounded.bounds(box=(lo, hi), C=C, bound_upper=False)[0]
    return bounds_for


# -- command line ---------------------------------------------------------------------------------------------
def run(model_name: str, certifier: str, data, schedule: Schedule, log=print) -> dict:
    """Train one model with one certifier's loss and verify it with ``crown_ibp``."""
    model = initial_model(model_name, schedule.seed)
    log(f"{model_name} trained with {certifier} (CROWN-IBP loss), eps {schedule.eps}:")
    records = train(model, data, schedule, cfmlir_bounds(certifier, widen=False), log=log)
    nat, ver = verified_accuracy(model, data[2], data[3], schedule.eps, cfmlir_bounds("crown_ibp"))
    log(f"  held-out: accuracy {nat:.3f}, verified accuracy {ver:.3f} (crown_ibp, float32 widened)")
    return {"model": model_name, "certifier": certifier, "epochs": records, "accuracy": nat, "verified_accuracy": ver}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="mlp:crown_ibp,cnn:crown_ibp,mlp:deepz",
                    help="comma-separated model:certifier pairs (models: mlp, cnn)")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="an ERAN CSV of MNIST images, or 'synthetic'")
    ap.add_argument("--epochs", type=int, default=Schedule.epochs)
    ap.add_argument("--eps", type=float, default=Schedule.eps)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    schedule = Schedule(epochs=args.epochs, eps=args.eps)
    data = load_mnist(args.data)
    print(f"data: {len(data[0])} training, {len(data[2])} held-out images; schedule {asdict(schedule)}")
    rows = []
    for pair in args.runs.split(","):
        model_name, _, certifier = pair.partition(":")
        if model_name not in MODELS or not certifier:
            ap.error(f"bad run '{pair}' (model:certifier, models {', '.join(MODELS)})")
        rows.append(run(model_name, certifier, data, schedule))
    print("\n| model | loss certifier | accuracy | verified accuracy (eps %g) | mean epoch s |" % schedule.eps)
    print("|---|---|---|---|---|")
    for r in rows:
        mean = sum(e["seconds"] for e in r["epochs"]) / len(r["epochs"])
        print(f"| {r['model']} | {r['certifier']} | {r['accuracy']:.3f} | {r['verified_accuracy']:.3f} | {mean:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
