"""Worker processes for the benches that run one job per schema (`xg2ref bench jsonschemabench`,
`earley-vs-pda`, `maskbench`; XGrammar-2 Appendix E, §4.4): each job's record, from this process
or from forked workers, with a memory cap, and a job whose worker dies recorded rather than lost.

A bench runs engines it does not own (xgrammar's C++, llguidance's and outlines-core's Rust) on
real schemas, and a few schemas make one of them allocate without bound. In one process the
operating system's out-of-memory killer then stops the whole run, or another process on the
machine; in a pool of workers a dead worker used to leave the pool waiting for ever. So:

    a worker's address space is capped (MEMORY_SHARE of the machine's memory, shared by the
    workers)                                      |-  a runaway allocation fails in that worker
    a worker dies with n > 1 jobs in flight       |-  each of them runs again, alone, in a fresh
                                                      worker
    it dies with its job alone in flight          |-  `factory.failed_record(args, job, why)`
                                                      is its record (a bench without one raises
                                                      RuntimeError naming the job)

At most `n_procs` jobs are in flight at once, so a death names at most that many suspects. A
factory with `isolated = True` runs in a worker even when `n_procs` is 1 (maskbench: its
engines are the native ones); the others run in this process then, as before.

Within a job, a native call that neither a signal nor the cap stops in time (outlines-core's
index build) is tried first in a forked child (`probe_in_fork`):

    the child returns within the time limit          |-  the call runs in the worker, timed
    the child is still running at the limit         |-  killed; that engine's record: "timeout"
    the child dies (memory past the cap, a crash)    |-  that engine's record says so; the other
                                                         engines of the job keep theirs
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Optional

from ...util import memory_cap
from ..cluster import RaySpec, ray_records

DIED = ("the worker process died with this job alone in flight: memory past its cap ({cap} GiB) or a crash "
        "in a native library")

_WORKER = None


def probe_in_fork(call, timeout: Optional[float]) -> Optional[str]:
    """Run `call()` in a forked child (module docstring). None when it returned or raised (the
    caller runs it again itself, and meets the same exception quickly); "timeout" when it ran
    past `timeout` seconds and was killed; "died: ..." when it died on its own."""
    pid = os.fork()
    if pid == 0:  # the child: no cleanup of the parent's state, only the call
        code = 0
        try:
            call()
        except BaseException:  # noqa: BLE001  (the parent runs it again and reports it)
            code = 1
        os._exit(code)
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if deadline is not None and time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(pause)
        pause = min(2 * pause, 0.05)
    if os.WIFSIGNALED(status):
        return (f"died: signal {os.WTERMSIG(status)} in a native call (memory past the worker's cap, or a crash); "
                "the other engines are unaffected")
    return None


def _init_worker(factory, args: tuple, cap: Optional[int]) -> None:
    global _WORKER
    if cap:
        import resource

        try:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        except (ValueError, OSError):  # a lower hard limit is already set: keep it
            pass
    _WORKER = factory(*args)


def _run_in_worker(job: tuple) -> dict:
    return _WORKER.run(*job)


def _pool(n: int, factory, args: tuple, cap: Optional[int]) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork"), initializer=_init_worker,
                               initargs=(factory, args, cap))


def _close(pool: ProcessPoolExecutor) -> None:
    """Stop the pool without waiting for jobs still running (a stopped bench stops now)."""
    processes = list(getattr(pool, "_processes", {}).values())  # (not a public attribute)
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()


def worker_records(factory, args: tuple, jobs: list, n_procs: int, out=None):
    """Yield `factory(*args).run(*job)` for each job: from this process when `n_procs` <= 1 and
    the factory is not `isolated`, else, unordered, from forked workers (module docstring), or
    from Ray actors when `n_procs` is a `RaySpec` (xg2ref/tools/cluster.py). A
    worker's `note` (a missing engine) is printed in this process's run; `close()` is called when
    it has one. No job, no worker."""
    if not jobs:
        return
    if isinstance(n_procs, RaySpec):  # a campaign on Ray (xg2ref/tools/cluster.py)
        yield from ray_records(factory, args, jobs, n_procs, out)
        return
    if n_procs <= 1 and not getattr(factory, "isolated", False):
        worker = factory(*args)
        if out and getattr(worker, "note", None):
            out(worker.note)
        try:
            for job in jobs:
                yield worker.run(*job)
        finally:
            if hasattr(worker, "close"):
                worker.close()
        return
    n = max(n_procs, 1)
    cap = memory_cap(n)
    queue, suspects = list(jobs), []
    while queue or suspects:
        if suspects:  # alone in a fresh worker: does this job kill it?
            job = suspects.pop(0)
            pool = _pool(1, factory, args, cap)
            try:
                record = pool.submit(_run_in_worker, job).result()
            except BrokenProcessPool:
                record = _dead(factory, args, job, cap)
            finally:
                _close(pool)
            yield record
            continue
        pool = _pool(n, factory, args, cap)
        inflight: dict = {}
        try:
            while queue or inflight:
                while queue and len(inflight) < n:
                    job = queue.pop(0)
                    inflight[pool.submit(_run_in_worker, job)] = job
                done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                broken = []
                for future in done:
                    job = inflight.pop(future)
                    try:
                        record = future.result()
                    except BrokenProcessPool:
                        broken.append(job)
                        continue
                    yield record
                if broken:  # every job in flight is a suspect: the pool is gone
                    named = broken + list(inflight.values())
                    inflight.clear()
                    if len(named) == 1:  # it was alone already: no need to run it again
                        yield _dead(factory, args, named[0], cap)
                    else:
                        suspects += named
                    break
        finally:
            _close(pool)


def _dead(factory, args: tuple, job: tuple, cap: Optional[int]) -> dict:
    why = DIED.format(cap=f"{cap / 2 ** 30:.1f}" if cap else "no")
    if hasattr(factory, "failed_record"):
        return factory.failed_record(args, job, why)
    raise RuntimeError(f"{why}: job {job[:2]!r}")
