"""Campaigns on Ray (xg2ref/tools/cluster.py) on a local two-CPU Ray: the records of a local run,
a job that kills its worker recorded and the campaign going on, a worker killed mid-campaign
costing nothing, a runaway allocation stopped by the cap, and a clear message without ray."""

import os
import signal
import sys

import numpy as np
import pytest

from xg2ref.tools import cluster
from xg2ref.tools.bench import workers

ray = pytest.importorskip("ray")


class Jobs:
    """A bench's worker: `run(name, n)` returns a record. "die" kills its process every time;
    "killed-once" kills it the first time only (a marker file remembers), as a worker killed from
    outside would be; "hog" asks for more memory than the cap allows."""

    isolated = True

    def __init__(self, tag: str, marker_dir: str):
        self.tag, self.marker_dir = tag, marker_dir

    def run(self, name: str, n: int) -> dict:
        if name == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if name == "killed-once":
            marker = os.path.join(self.marker_dir, "killed")
            if not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        if name == "hog":
            try:
                np.ones(2 * workers.memory_cap(os.cpu_count() or 1) // 8)
            except MemoryError:
                return {"name": name, "n": n, "error": "MemoryError"}
        return {"name": name, "n": n, "tag": self.tag, "square": n * n}

    @staticmethod
    def failed_record(args: tuple, job: tuple, why: str) -> dict:
        return {"name": job[0], "n": job[1], "failed": why, "tag": args[0]}


@pytest.fixture(scope="module")
def local_ray():
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # (the workers need not import tests/)
    started, _ = cluster.start(cluster.RaySpec(cpus=2))
    yield started
    started.shutdown()


def test_records_equal_a_local_runs(local_ray, tmp_path):
    jobs = [(f"j{k}", k) for k in range(12)]
    local = sorted(workers.worker_records(Jobs, ("t", str(tmp_path)), jobs, 1), key=lambda r: r["n"])
    remote = sorted(workers.worker_records(Jobs, ("t", str(tmp_path)), jobs, cluster.RaySpec(cpus=2)),
                    key=lambda r: r["n"])
    assert remote == local and len(remote) == 12


def test_faults_cost_only_the_job_that_causes_them(local_ray, tmp_path):
    jobs = [("a", 1), ("die", 2), ("b", 3), ("killed-once", 4), ("hog", 5), ("c", 6)]
    got = {r["name"]: r for r in cluster.ray_records(Jobs, ("t", str(tmp_path)), jobs, cluster.RaySpec(cpus=2))}
    assert sorted(got) == ["a", "b", "c", "die", "hog", "killed-once"]
    assert got["die"]["failed"].startswith("the Ray actor died twice")
    assert got["killed-once"] == {"name": "killed-once", "n": 4, "tag": "t", "square": 16}  # run again
    assert got["hog"]["error"] == "MemoryError"  # the cap stopped it inside the actor
    assert all(got[k]["square"] == got[k]["n"] ** 2 for k in "abc")


def test_without_a_failed_record_a_dying_job_is_a_clear_error(local_ray, tmp_path):
    class Plain:
        isolated = True

        def __init__(self):
            self.tag, self.marker_dir = "p", str(tmp_path)

        run = Jobs.run

    with pytest.raises(RuntimeError, match="Ray actor died twice.*'die'"):
        list(cluster.ray_records(Plain, (), [("a", 1), ("die", 2)], cluster.RaySpec(cpus=2)))


def test_without_ray_the_option_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(SystemExit, match=r"pip install 'xg2ref\[cluster\]'"):
        cluster.import_ray()


TIMINGS = ("their_seconds", "compile_seconds", "seconds", "peak_mib")


@pytest.mark.jit_only
def test_a_jsonschemabench_campaign_on_ray_records_what_one_process_does(local_ray, tmp_path):
    """`xg2ref bench jsonschemabench --ray` on a local two-CPU Ray: its results file holds the
    records of `--jobs 1`, timings aside (each schema's walk is seeded by its uid)."""
    import json

    from test_bench import _bench_data
    from xg2ref.tools.bench import jsonschemabench as bj

    ray.cloudpickle.register_pickle_by_value(sys.modules["test_bench"])
    schemas = {"small": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
               "enum": {"enum": ["red", "green"]},
               "list": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
               "bad": {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}, "required": ["x"]}}
    data = _bench_data(tmp_path, schemas)
    runs = {}
    for name, jobs in (("local", 1), ("ray", cluster.RaySpec(cpus=2))):
        results = tmp_path / f"{name}.jsonl"
        assert bj.bench_jsonschemabench(data, subsets=["Glaiveai2K"], out=lambda line: None, progress=False,
                                        results=str(results), jobs=jobs) == 0
        runs[name] = {r["uid"]: {k: v for k, v in r.items() if k not in TIMINGS}
                      for r in map(json.loads, results.read_text().splitlines())}
    assert runs["ray"] == runs["local"] and set(runs["ray"]) == set(schemas)
    assert runs["ray"]["small"]["valid"] and "InvalidJSONError" in runs["ray"]["bad"]["failure"]


def test_the_ray_option():
    from xg2ref.tools.bench.dispatch import run_bench
    from xg2ref.tools.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["bench", "maskbench", "--ray"]).ray == "local"
    assert parser.parse_args(["bench", "maskbench", "--ray", "ray://head:10001"]).ray == "ray://head:10001"
    assert parser.parse_args(["bench", "maskbench"]).ray is None
    assert cluster.RaySpec.from_argument("local") == cluster.RaySpec(None)
    assert cluster.RaySpec.from_argument("auto") == cluster.RaySpec("auto")
    with pytest.raises(SystemExit, match="--ray applies to .*jsonschemabench"):
        run_bench(parser.parse_args(["bench", "kernels", "--ray"]))
