"""Campaigns past one machine: the jobs of a bench (one per schema) as tasks of Ray actors
(`--ray [ADDRESS]`; docs/cluster.md), with the contract of the local worker processes
(xg2ref/tools/bench/workers.py `worker_records`): one record per job, unordered, the bench's
worker (`factory(*args)`: its engines and vocabulary) built once per actor, not per job.

An actor is a process that holds one worker and runs one job at a time. Without ADDRESS a
local Ray is started with the machine's cores (one actor per core); with one, the campaign
joins that cluster and starts one actor per CPU it has. Each actor caps its address space as
a local worker does (MEMORY_SHARE of its node's memory, shared by the node's cores, on top of
what Ray's worker process holds already), so a runaway allocation fails in its job. Faults:

    an actor dies with its job in flight (a crash, memory past the cap, its node lost)
                              |-  the job runs again in a fresh actor (a killed worker loses nothing)
    the job's second actor dies too
                              |-  `factory.failed_record(args, job, why)` is its record (a
                                  bench without one raises RuntimeError naming the job)

Records come back as jobs finish, so the caller streams them into its results file as a local
run does; the jobs carry their seeds, so a cluster run and a local run give the same records
(the timings aside). `ray` is an optional extra (`pip install xg2ref[cluster]`).
"""

from __future__ import annotations

import os
from typing import NamedTuple, Optional

INSTALL = "--ray needs the ray package: pip install 'xg2ref[cluster]' (or pip install ray)"
DIED = "the Ray actor died twice with this job in flight ({why}): a crash or memory past its cap ({cap} GiB)"


class RaySpec(NamedTuple):
    """Where a campaign runs: `address` of an existing cluster ("auto", "ray://host:10001", ...)
    or None for a local Ray with `cpus` cores (None: the machine's)."""

    address: Optional[str] = None
    cpus: Optional[int] = None

    @classmethod
    def from_argument(cls, value: Optional[str]) -> Optional["RaySpec"]:
        """`--ray` (value "local": a local Ray) or `--ray ADDRESS`; None without the option."""
        if value is None:
            return None
        return cls(None if value == "local" else value)


def import_ray():
    """The ray module, or SystemExit saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SystemExit(INSTALL) from None
    return ray


class _Actor:
    """One worker in a Ray actor (the class is made remote in `ray_records`)."""

    def __init__(self, factory, args: tuple):
        from ..util import memory_cap

        cap = memory_cap(os.cpu_count() or 1)
        if cap:  # on top of what Ray's own worker holds already (its address space is large)
            import resource

            limit = cap + _address_space()
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ValueError, OSError):  # a lower hard limit is already set: keep it
                pass
        self.worker = factory(*args)

    def note(self) -> Optional[str]:
        return getattr(self.worker, "note", None)

    def run(self, job: tuple) -> dict:
        return self.worker.run(*job)

    def close(self) -> None:
        if hasattr(self.worker, "close"):
            self.worker.close()


def _address_space() -> int:
    """Bytes of address space this process holds (0 where unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def start(spec: RaySpec):
    """Ray, started locally or joined (module docstring); returns (ray, whether this call started it)."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    options = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
    if spec.address is None:
        ray.init(num_cpus=spec.cpus or os.cpu_count() or 1, **options)
    else:
        ray.init(address=spec.address, **options)
    return ray, True


def ray_records(factory, args: tuple, jobs: list, spec: RaySpec, out=None):
    """Yield `factory(*args).run(*job)` for each job, from Ray actors (module docstring)."""
    if not jobs:
        return
    ray, started = start(spec)
    remote = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Actor)
    n = max(1, min(len(jobs), int(ray.cluster_resources().get("CPU", 1))))
    actors: list = []
    try:
        actors = [remote.remote(factory, args) for _ in range(n)]
        if out and (note := ray.get(actors[0].note.remote())):
            out(note)
        idle, queue, inflight, tries = list(actors), list(range(len(jobs))), {}, [0] * len(jobs)
        while queue or inflight:
            while queue and idle:
                k = queue.pop(0)
                actor = idle.pop()
                inflight[actor.run.remote(jobs[k])] = (actor, k)
            (ref,), _ = ray.wait(list(inflight), num_returns=1)
            actor, k = inflight.pop(ref)
            job = jobs[k]
            try:
                record = ray.get(ref)
            except ray.exceptions.RayActorError as err:
                actors.remove(actor)
                fresh = remote.remote(factory, args)
                actors.append(fresh)
                idle.append(fresh)
                tries[k] += 1
                if tries[k] < 2:
                    queue.insert(0, k)  # in a fresh actor: a job whose worker was killed comes back
                    continue
                yield _failed(factory, args, job, type(err).__name__)
                continue
            idle.append(actor)
            yield record
    finally:
        for actor in actors:
            try:
                ray.get(actor.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001  (a dead actor has nothing to close)
                pass
            ray.kill(actor)
        if started:
            ray.shutdown()


def _failed(factory, args: tuple, job: tuple, why: str) -> dict:
    from ..util import MEMORY_SHARE

    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        cap = f"{MEMORY_SHARE * total / (os.cpu_count() or 1) / 2 ** 30:.1f}"
    except (AttributeError, ValueError, OSError):
        cap = "no"
    text = DIED.format(why=why, cap=cap)
    if hasattr(factory, "failed_record"):
        return factory.failed_record(args, job, text)
    raise RuntimeError(f"{text}: job {job[:2]!r}")
