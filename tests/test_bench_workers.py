"""The benches' worker processes (xg2ref/tools/bench/workers.py): records from forked workers,
a runaway allocation stopped by the memory cap, and a job whose worker dies recorded, not a
hang and not the end of the run."""

import os
import signal

import numpy as np
import pytest

from xg2ref.tools.bench import workers


class Jobs:
    """A bench's worker: `run(name, n)` returns a record; "die" kills its process, "hog" asks for
    more memory than the cap allows."""

    isolated = True

    def __init__(self, tag: str):
        self.tag = tag

    def run(self, name: str, n: int) -> dict:
        if name == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if name == "hog":
            try:
                np.ones(2 * workers.memory_cap(2) // 8)
            except MemoryError:
                return {"name": name, "n": n, "error": "MemoryError", "pid": os.getpid()}
        return {"name": name, "n": n, "tag": self.tag, "pid": os.getpid()}

    @staticmethod
    def failed_record(args: tuple, job: tuple, why: str) -> dict:
        return {"name": job[0], "n": job[1], "failed": why, "tag": args[0]}


@pytest.mark.parametrize("n_procs", [1, 2])
def test_a_dead_worker_costs_its_job_only(n_procs):
    jobs = [("a", 1), ("die", 2), ("b", 3), ("c", 4), ("hog", 5)]
    got = {r["name"]: r for r in workers.worker_records(Jobs, ("t",), jobs, n_procs)}
    assert sorted(got) == ["a", "b", "c", "die", "hog"]
    assert all(got[k]["tag"] == "t" and got[k]["pid"] != os.getpid() for k in "abc")  # isolated: in workers
    assert got["die"]["failed"].startswith("the worker process died")
    assert got["hog"]["error"] == "MemoryError"  # the cap stopped it inside the worker


def test_without_a_failed_record_a_dead_worker_is_a_clear_error():
    class Plain:
        isolated = True

        def __init__(self):
            self.tag = "p"

        run = Jobs.run

    with pytest.raises(RuntimeError, match="worker process died.*'die'"):
        list(workers.worker_records(Plain, (), [("a", 1), ("die", 2)], 1))


def test_in_process_when_not_isolated():
    class Here(Jobs):
        isolated = False

    got = list(workers.worker_records(Here, ("h",), [("a", 1), ("b", 2)], 1))
    assert [r["name"] for r in got] == ["a", "b"] and all(r["pid"] == os.getpid() for r in got)


def test_a_native_call_is_probed_in_a_child_first():
    import time

    assert workers.probe_in_fork(lambda: sum(range(1000)), 5) is None
    assert workers.probe_in_fork(lambda: 1 / 0, 5) is None  # the caller meets the exception itself
    start = time.monotonic()
    assert workers.probe_in_fork(lambda: time.sleep(30), 0.3) == "timeout"
    assert time.monotonic() - start < 5
    assert workers.probe_in_fork(lambda: os.kill(os.getpid(), signal.SIGKILL), 5).startswith("died: signal 9")
