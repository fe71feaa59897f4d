"""``cf-run --timeout``'s deadline is hard (issue 24, acceptance 5): the parent answers ``timeout`` at the limit
whatever its worker does -- answering half a message and sleeping (the parent would wait in ``recv`` forever),
never answering and ignoring SIGTERM (a worker stuck in a compilation or a C call) -- and the worker's whole
process group dies with it (a solver or compiler it started must not outlive the limit).  Whole ``cf-run``
processes with a branch and bound that does not end, with ``--bab`` and ``--optimize``, are held to
``T + 0.5`` s of wall time, start-up included."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from cfmlir.tools.instances import EXIT_RESERVE_S, Worker, WorkerTimeout, kill_time
from cfruntime.results import read_result
from cftest import hung_workers
from cftest.instances_folder import slow_instance
from cftest.timed_run import timed

SLACK_S = 0.5


def _gone(pid: int, within: float = 5.0) -> bool:
    """Has process ``pid`` ended (or become a zombie) within ``within`` seconds?"""
    t_end = time.monotonic() + within
    while time.monotonic() < t_end:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def _in_thread(fn, limit: float):
    """``fn()``'s result, failing the test (not hanging it) when it takes longer than ``limit`` seconds."""
    box = {}

    def go():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(limit)
    assert not t.is_alive(), f"no answer within {limit:g} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")
def test_a_half_written_answer_is_a_timeout_at_the_limit(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    w = Worker(str(pid_file), target=hung_workers.half_message)
    try:
        w.prepare(time.monotonic() + 60)
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.05)
        t0 = time.monotonic()
        out = _in_thread(lambda: w.run(None, tmp_path / "p.vnnlib", kill_time(1.0)), 10.0)
        wall = time.monotonic() - t0
        assert out.verdict == "timeout", out
        assert wall <= 1.0 - EXIT_RESERVE_S + 0.3, f"{wall:.3f} s"
        assert _gone(w.proc.pid) and _gone(int(pid_file.read_text())), "the worker or its child outlived the limit"
    finally:
        w.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")
def test_a_worker_that_never_answers_is_killed_with_its_children(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    w = Worker(str(pid_file), target=hung_workers.silent)
    try:
        t_end = time.monotonic() + 30
        while (not pid_file.exists() or not pid_file.read_text()) and time.monotonic() < t_end:
            time.sleep(0.05)
        assert pid_file.read_text()
        t0 = time.monotonic()
        with pytest.raises(WorkerTimeout):
            _in_thread(lambda: w.prepare(t0 + 0.5), 10.0)
        assert time.monotonic() - t0 <= 0.8
        assert _gone(w.proc.pid) and _gone(int(pid_file.read_text())), "the worker or its child outlived the limit"
    finally:
        w.kill()


@pytest.fixture(scope="module")
def endless(tmp_path_factory):
    """A net and a property (``Y_0 >= 10`` on [-1, 1]^30) whose branch and bound does not end."""
    return slow_instance(tmp_path_factory.mktemp("endless"))


@pytest.mark.parametrize("flags", [["--certifier", "deeppoly", "--bab", "on", "--max-boxes", "100000000"],
                                   ["--certifier", "alpha_deeppoly", "--optimize", "100000", "--bab", "on"]],
                         ids=["bab", "optimize-bab"])
def test_an_endless_branch_and_bound_answers_within_the_limit(endless, tmp_path, flags):
    res = tmp_path / "r.txt"
    limit = 3.0
    wall, rc, out, err = timed(tmp_path, *flags, "--net", endless / "mid.onnx", "--vnnlib", endless / "mid.vnnlib",
                               "--results", res, "--timeout", limit)
    assert rc == 0 and read_result(res)[0] in ("timeout", "unknown"), (out, err)
    assert wall <= limit + SLACK_S, f"{wall:.3f} s for --timeout {limit:g}"
    assert os.path.getsize(res) > 0
