"""Count the torch operations and host-device synchronisations a piece of code performs.

::

    with OpCounter() as c:
        run_certifier(...)
    c.ops, c.syncs, c.by_name

Every ATen call that reaches the dispatcher counts as one operation (views included); a call of
``_local_scalar_dense`` (``tensor.item()``, ``float(t)``) or ``is_nonzero`` (``bool(t)``) counts as a
host sync.  The counts are deterministic, so they can be measured on any machine, and they predict
GPU time: every operation is a kernel launch or dispatcher work, every sync stalls the host until the
device has finished.
"""

from __future__ import annotations

from collections import Counter

from torch.utils._python_dispatch import TorchDispatchMode

SYNC_OPS = ("_local_scalar_dense", "is_nonzero")


class OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.syncs = 0
        self.by_name: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.ops += 1
        self.by_name[name] += 1
        if name in SYNC_OPS:
            self.syncs += 1
        return func(*args, **(kwargs or {}))
