"""in_batches halves the batch on EngineOutOfMemory and keeps the smaller size; out_of_memory_at
turns an allocation failure anywhere (a rule, the input layer, the margins) into that error."""

import pytest

from cfruntime.flow.batching import in_batches
from cfruntime.flow.engine import EngineOutOfMemory, out_of_memory_at


def _alloc_error(nbytes):
    return RuntimeError(f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes")


def test_allocation_failure_is_located():
    def fail():
        raise _alloc_error(3 * 2 ** 30)
    with pytest.raises(EngineOutOfMemory) as info:
        out_of_memory_at(fail, 4, "margins", 16, "cpu")
    e = info.value
    assert (e.layer, e.kind, e.batch, e.nbytes) == (4, "margins", 16, 3 * 2 ** 30)
    assert str(e) == "out of cpu memory at layer 4 (margins): it needed 3.00 GiB more for a batch of 16"
    assert e.__context__ is None  # raised outside the handler: the failed frames can be freed


def test_other_errors_pass_through_and_results_return():
    def bad():
        raise ValueError("not memory")
    with pytest.raises(ValueError, match="not memory"):
        out_of_memory_at(bad, 1, "affine", 2, "cpu")
    assert out_of_memory_at(lambda: 7, 1, "affine", 2, "cpu") == 7


def test_batches_shrink_and_stay_small():
    calls = []

    def run(lo, hi):
        calls.append((lo, hi))
        if hi - lo > 3:
            out_of_memory_at(lambda: (_ for _ in ()).throw(_alloc_error(10)), 2, "relu", hi - lo, "cpu")
        return hi - lo

    shrinks = []
    out, report = in_batches(run, 10, 8, lambda old, new, e: shrinks.append((old, new)))
    assert [(a, b) for a, b, _ in out] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    assert (report.requested, report.used) == (8, 2) and shrinks == [(8, 4), (4, 2)]
    assert calls[:3] == [(0, 8), (0, 4), (0, 2)]


def test_one_input_that_does_not_fit_raises():
    def run(lo, hi):
        out_of_memory_at(lambda: (_ for _ in ()).throw(_alloc_error(10)), 2, "relu", hi - lo, "cpu")
    with pytest.raises(EngineOutOfMemory, match="for a batch of 1"):
        in_batches(run, 3, 4)
