"""Run an analysis over many inputs in batches, and with smaller batches when one does not fit.

``in_batches(run, n, batch_size)`` calls ``run(start, stop)`` on consecutive slices of ``n`` inputs.
When a slice runs out of memory (:class:`~cfruntime.flow.engine.EngineOutOfMemory`), the batch size is
halved and the same slice is tried again, down to one input; the smaller size is kept for the rest.
An input that does not fit on its own is the error it raised (it names the layer and the size).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from cfruntime.flow.engine import EngineOutOfMemory


@dataclass
class BatchReport:
    """The batch sizes that were tried and the one that every later slice used."""

    requested: int
    used: int
    shrinks: list[EngineOutOfMemory] = field(default_factory=list)


def in_batches(run: Callable[[int, int], object], n: int, batch_size: int,
               on_shrink: Callable[[int, int, EngineOutOfMemory], None] | None = None):
    """``[(start, stop, run(start, stop)), ...]`` covering ``range(n)`` in order, and a
    :class:`BatchReport`."""
    report = BatchReport(batch_size, batch_size)
    out = []
    start, size = 0, batch_size
    while start < n:
        stop = min(n, start + size)
        oom = None
        try:
            out.append((start, stop, run(start, stop)))
        except EngineOutOfMemory as exc:
            if stop - start <= 1:
                raise
            oom = exc.with_traceback(None)  # its frames hold the failed attempt's tensors
            oom.__context__ = oom.__cause__ = None
        if oom is not None:
            _release()
            smaller = max(1, (stop - start) // 2)
            report.shrinks.append(oom)
            if on_shrink is not None:
                on_shrink(stop - start, smaller, oom)
            size = report.used = smaller
            continue
        start = stop
    return out, report


def _release() -> None:
    """Give the failed attempt's memory back before the next one."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
