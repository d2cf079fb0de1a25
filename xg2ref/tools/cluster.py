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
import time
from typing import NamedTuple, Optional

INSTALL = "--ray needs the ray package: pip install 'xg2ref[cluster]' (or pip install ray)"
WAIT_SLICE = 0.25  # seconds: how long the driver may go without handling a signal
DIED = "the Ray actor died twice with this job in flight ({why}): a crash or memory past its cap ({cap} GiB)"


class RaySpec(NamedTuple):
    """Where a campaign runs: `address` of an existing cluster ("auto", "ray://host:10001", ...)
    or None for a local Ray with `cpus` cores (None: the machine's); `ship`: send this xg2ref
    and the quicktok vocabularies to the workers in the job's `runtime_env` (`shipped`)."""

    address: Optional[str] = None
    cpus: Optional[int] = None
    ship: bool = False

    @classmethod
    def from_argument(cls, value: Optional[str], ship: bool = False) -> Optional["RaySpec"]:
        """`--ray` (value "local": a local Ray) or `--ray ADDRESS`; None without the option."""
        if value is None:
            if ship:
                raise SystemExit("--ray-ship goes with --ray")
            return None
        return cls(None if value == "local" else value, ship=ship)

    @classmethod
    def from_args(cls, args) -> Optional["RaySpec"]:
        """The spec of a command line's `--ray` and `--ray-ship` (`add_arguments`)."""
        return cls.from_argument(args.ray, args.ray_ship)


def add_arguments(p, what: str) -> None:
    """`--ray [ADDRESS]` and `--ray-ship` on a command line (`what`: the jobs it runs)."""
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help=f"{what} on Ray actors, one per CPU, on the cluster at ADDRESS or, without it, a local Ray "
                        "with the machine's cores (docs/cluster.md; needs pip install 'xg2ref[cluster]')")
    p.add_argument("--ray-ship", action="store_true",
                   help="with --ray: send this xg2ref and the quicktok vocabularies to the cluster's workers "
                        "(runtime_env py_modules), for nodes that have the engines but not xg2ref")


def shipped() -> dict:
    """The `runtime_env` that sends xg2ref's package and quicktok's (its vocabularies inside) to
    every worker of the job: copied from this machine, so a node needs no network for them;
    compiled caches stay behind (each node compiles its own kernels)."""
    import quicktok

    import xg2ref

    folders = [os.path.dirname(os.path.abspath(m.__file__)) for m in (xg2ref, quicktok)]
    return {"py_modules": folders, "excludes": ["__pycache__", "*.pyc", "*.nbi", "*.nbc"]}


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
    if spec.ship:
        options["runtime_env"] = shipped()
    try:
        if spec.address is None:
            ray.init(num_cpus=spec.cpus or os.cpu_count() or 1, **options)
        else:
            ray.init(address=spec.address, **options)
    except Exception as err:  # noqa: BLE001  (Ray raises plain Exceptions: a node that did not start, ...)
        where = f"the Ray cluster at {spec.address}" if spec.address else "a local Ray"
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SystemExit(f"--ray: could not start or join {where}: {first}") from err
    return ray, True


class ActorPool:
    """Actors that each hold `factory(*args)` and run one job at a time (module docstring):
    `submit` a job to an idle actor, `next` the record of the first to finish. The driver
    chooses what to submit and when, so a campaign can draw its jobs as it goes (`xg2ref fuzz`)
    or hand over a list (`ray_records`). `size` caps the actors (default: one per CPU)."""

    def __init__(self, factory, args: tuple, spec: RaySpec, out=None, size: Optional[int] = None):
        self.ray, self.started = start(spec)
        self.factory, self.args = factory, args
        self.remote = self.ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Actor)
        n = int(self.ray.cluster_resources().get("CPU", 1))
        self.actors = [self.remote.remote(factory, args) for _ in range(max(1, min(n, size or n)))]
        self.idle = list(self.actors)
        self.inflight: dict = {}  # object ref -> (actor, key, job)
        self.tries: dict = {}  # key -> actors its job has killed
        if out and (note := self.ray.get(self.actors[0].note.remote())):
            out(note)

    def submit(self, key, job: tuple) -> None:
        """Run `job` on an idle actor (there must be one: `self.idle`); `key` names it in `next`."""
        actor = self.idle.pop()
        self.inflight[actor.run.remote(job)] = (actor, key, job)

    def busy(self) -> int:
        return len(self.inflight)

    def next(self, timeout: Optional[float] = None):
        """(key, record) of the next job to finish, or None when `timeout` seconds pass first.
        A job whose actor dies runs again in a fresh actor; one that kills two gets
        `factory.failed_record`."""
        ray = self.ray
        until = None if timeout is None else time.monotonic() + timeout
        while self.inflight:
            ready = self._wait(until)
            if not ready:
                return None
            actor, key, job = self.inflight.pop(ready[0])
            try:
                record = ray.get(ready[0])
            except ray.exceptions.RayActorError as err:
                self.actors.remove(actor)
                fresh = self.remote.remote(self.factory, self.args)
                self.actors.append(fresh)
                self.tries[key] = self.tries.get(key, 0) + 1
                if self.tries[key] < 2:  # a job whose worker was killed comes back
                    self.inflight[fresh.run.remote(job)] = (fresh, key, job)
                    continue
                self.idle.append(fresh)
                return key, _failed(self.factory, self.args, job, type(err).__name__)
            self.idle.append(actor)
            return key, record
        return None

    def _wait(self, until: Optional[float]) -> list:
        """The first finished job's reference, or [] at `until`: waited for in slices of
        WAIT_SLICE seconds, since a signal (Ctrl-C) reaches the driver only between them."""
        while True:
            left = WAIT_SLICE if until is None else min(WAIT_SLICE, until - time.monotonic())
            ready, _ = self.ray.wait(list(self.inflight), num_returns=1, timeout=max(0.0, left))
            if ready or (until is not None and time.monotonic() >= until):
                return ready

    def close(self) -> None:
        """Close the idle actors' workers, stop every actor (one still running a job, as after
        Ctrl-C, at once: its job is not recorded), and Ray when this pool started it."""
        for actor in self.actors:
            if actor in self.idle:
                try:
                    self.ray.get(actor.close.remote(), timeout=30)
                except Exception:  # noqa: BLE001  (a dead actor has nothing to close)
                    pass
            self.ray.kill(actor)
        self.actors, self.idle, self.inflight = [], [], {}
        if self.started:
            self.ray.shutdown()


def ray_records(factory, args: tuple, jobs: list, spec: RaySpec, out=None):
    """Yield `factory(*args).run(*job)` for each job, from Ray actors (module docstring)."""
    if not jobs:
        return
    pool = ActorPool(factory, args, spec, out, size=len(jobs))
    try:
        queue = list(range(len(jobs)))
        while queue or pool.busy():
            while queue and pool.idle:
                k = queue.pop(0)
                pool.submit(k, jobs[k])
            yield pool.next()[1]
    finally:
        pool.close()


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
