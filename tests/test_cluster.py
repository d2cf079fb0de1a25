"""Campaigns on Ray (xg2ref/tools/cluster.py) on a local two-CPU Ray: the records of a local run,
a job that kills its worker recorded and the campaign going on, a worker killed mid-campaign
costing nothing, a runaway allocation stopped by the cap, and a clear message without ray."""

import os
import signal
import sys

import numpy as np
import pytest

from test_fuzz import _Crashy
from xg2ref.tools import cluster
from xg2ref.tools.bench import workers
from xg2ref.tools.fuzz.case import CaseChecker
from xg2ref.tools.fuzz.runner import CaseRunner

ray = pytest.importorskip("ray")
# `make test` runs them on their own, on one local Ray, after the compiled run (in a run spread by
# file, one worker takes them all); compiled only (the campaigns' orchestration is what is tested here,
# and actors inherit NUMBA_DISABLE_JIT)
pytestmark = pytest.mark.jit_only
TESTS = os.path.dirname(os.path.abspath(__file__))


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


# ---- xg2ref fuzz and xg2ref diff FILE... on Ray -------------------------------------------------


def _records(path) -> list:
    """A fuzz results file's lines, the seconds and the replay paths aside."""
    import json

    out = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        entry.pop("seconds", None)
        entry.pop("replay", None)
        out.append(entry)
    return out


@pytest.mark.xgrammar
def test_a_fuzz_campaign_on_ray_records_what_one_process_does(local_ray, tmp_path):
    """The same eight cases of a seed, in this process and on two Ray actors: the same results
    file, line for line (findings included, in the same order)."""
    pytest.importorskip("xgrammar")
    from xg2ref.tools.fuzz.runner import run_fuzz

    here = run_fuzz(["xgrammar"], None, seed=5, results_path=str(tmp_path / "here.jsonl"), progress=False,
                    max_cases=8)
    there = run_fuzz(["xgrammar"], None, seed=5, results_path=str(tmp_path / "ray.jsonl"), progress=False,
                     max_cases=8, jobs=cluster.RaySpec(cpus=2))
    assert _records(tmp_path / "ray.jsonl") == _records(tmp_path / "here.jsonl")
    assert there.cases_tried + there.skipped == 8 and there.findings and not there.errors
    assert [f["class"] for f in there.findings] == [f["class"] for f in here.findings]


def _crashy_make_engine():
    """In this process, engine "crashy" is xg2ref that dies compiling a grammar with "b"
    (test_fuzz._Crashy)."""
    import xg2ref.oracle.other_engines as other

    if getattr(other.make_engine, "crashy", False):
        return
    real = other.make_engine

    def make_engine(name, info):
        return _Crashy(info) if name == "crashy" else real(name, info)

    make_engine.crashy = True
    other.make_engine = make_engine


class CrashyChecker(CaseChecker):
    """A checker whose processes know engine "crashy": its worker and probe processes start by
    forkserver on Ray, unpickle it, and so import this module (its folder is on their path)."""

    def __setstate__(self, state):
        self.__dict__.update(state)
        _crashy_make_engine()


class CrashyRunner(CaseRunner):
    def __init__(self, *args):
        import importlib

        sys.path.insert(0, TESTS)  # (for the processes this actor starts)
        _crashy_make_engine()
        super().__init__(*args)
        # the class by its module, as the processes that unpickle it will find it (this actor
        # holds a copy of this module's code, sent by value)
        self.worker.checker.__class__ = importlib.import_module("test_cluster").CrashyChecker


def test_a_case_that_kills_its_worker_on_ray_is_a_finding_and_the_campaign_goes_on(local_ray, tmp_path):
    from xg2ref.tools.fuzz.runner import run_fuzz

    ray.cloudpickle.register_pickle_by_value(sys.modules["test_fuzz"])
    _crashy_make_engine()  # (the campaign asks for each engine here first)
    result = run_fuzz(["crashy"], None, seed=2, kinds=("ebnf",), results_path=str(tmp_path / "r.jsonl"),
                      progress=False, shrink_seconds=10, max_cases=4, jobs=cluster.RaySpec(cpus=2),
                      runner=CrashyRunner, case_timeout=3600)
    [crash] = [f for f in result.findings if f["question"] == "crash"]
    assert crash["engine"] == "crashy" and crash["class"] == "crashy: ebnf crash"
    assert '"b"' in crash["source"] and crash["replay"].startswith("xg2ref diff")
    lines = _records(tmp_path / "r.jsonl")
    progress = [e for e in lines if e["type"] == "progress"]
    assert [e["index"] for e in progress] == [0, 1, 2, 3]  # the cases after the crash ran too
    assert any(e.get("failure") == "crash" for e in progress) and result.exit_status() == 0


# the interrupted run: cases from the third on hold their actors until the signal comes
INTERRUPTED = """
import sys, time
from xg2ref.tools.cluster import RaySpec
from xg2ref.tools.fuzz.runner import CaseRunner, run_fuzz

class Held(CaseRunner):
    def run(self, index, *rest):
        if index >= 3:
            time.sleep(600)
        return super().run(index, *rest)

run_fuzz(["xgrammar"], None, seed=5, results_path=sys.argv[1], progress=False, max_cases=8,
         jobs=RaySpec("auto"), runner=Held, case_timeout=3600)
"""


@pytest.mark.xgrammar
def test_an_interrupted_ray_campaign_resumes_from_its_results_file(local_ray, tmp_path):
    """A fuzz campaign on Ray (the cluster of this module) stopped with SIGINT once its first
    three cases are recorded, while the next two hold their actors, then run again with the same
    results file (`xg2ref fuzz --ray auto`): the cases in flight not recorded, each case once in
    the end, and the lines of an uninterrupted local run."""
    import subprocess
    import time

    pytest.importorskip("xgrammar")
    from xg2ref.tools.fuzz.runner import run_fuzz

    # (a case limit no case comes near even on a loaded machine: the records must not depend on load)
    run_fuzz(["xgrammar"], None, seed=5, results_path=str(tmp_path / "here.jsonl"), progress=False, max_cases=8,
             case_timeout=3600)
    results = tmp_path / "ray.jsonl"
    env = {**os.environ, "RAY_ADDRESS": local_ray.get_runtime_context().gcs_address}
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED, str(results)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and results.read_text().count('"type": "progress"') >= 3:
                break
            time.sleep(0.05)
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        output = proc.communicate(timeout=120)[0].decode()
    finally:  # (a driver left running would hold the cluster's CPUs for the tests after this one)
        proc.kill()
    assert time.monotonic() - began < 30, "the driver waited for the cases in flight"
    assert "KeyboardInterrupt" in output, output
    assert [e["index"] for e in _records(results) if e["type"] == "progress"] == [0, 1, 2]
    command = [sys.executable, "-m", "xg2ref.tools.cli", "fuzz", "--against", "xgrammar", "--seed", "5", "--cases", "8",
               "--results", str(results), "--no-progress", "--ray", "auto", "--case-timeout", "3600"]
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    lines = _records(results)
    assert sorted(e["index"] for e in lines if e["type"] == "progress") == list(range(8))
    assert sorted(map(str, lines)) == sorted(map(str, _records(tmp_path / "here.jsonl")))


@pytest.mark.xgrammar
def test_a_diff_of_files_on_ray_reports_what_one_process_does(local_ray, tmp_path):
    pytest.importorskip("xgrammar")
    from xg2ref.tools.diff.user import run_user_diff
    from xg2ref.tools.fuzz.case import default_vocabulary
    from xg2ref.tools.user_cases import case_from_text

    cases = [case_from_text("list", 'root ::= "[" ([0-9]+ ("," [0-9]+)*)? "]"', "ebnf"),
             case_from_text("key", '{"type": "object", "properties": {"k": {"enum": ["x", "yz"]}}}', "json_schema"),
             case_from_text("words", "(ab|c)+d?", "regex")]
    info = default_vocabulary()
    runs = {}
    for name, jobs in (("here", 1), ("ray", cluster.RaySpec(cpus=2))):
        diff = run_user_diff(cases, ["xgrammar"], info, "fuzz", seed=3, jobs=jobs, progress=False).to_json()
        for per in [diff["cases"]] + list(diff["per_engine"].values()):
            for case in per:
                case.pop("seconds")
        diff.pop("seconds")
        runs[name] = diff
    assert runs["ray"] == runs["here"]
    assert [c["name"] for c in runs["ray"]["cases"]] == ["list", "key", "words"]
    assert not any(c["error"] for c in runs["ray"]["cases"])


def test_the_ray_option_on_fuzz_and_diff():
    from xg2ref.tools.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["fuzz", "--cases", "3", "--ray"]).ray == "local"
    assert parser.parse_args(["fuzz", "--budget", "9", "--ray", "auto"]).ray == "auto"
    assert parser.parse_args(["diff", "a.ebnf", "--ray"]).ray == "local"
    assert parser.parse_args(["diff", "a.ebnf"]).ray is None
    args = parser.parse_args(["fuzz", "--cases", "3", "--ray", "auto", "--ray-ship"])
    assert cluster.RaySpec.from_args(args) == cluster.RaySpec("auto", ship=True)
    with pytest.raises(SystemExit, match="--ray-ship goes with --ray"):
        cluster.RaySpec.from_args(parser.parse_args(["diff", "a.ebnf", "--ray-ship"]))


SHIPPED = """
import sys
from xg2ref.tools import cluster

class Where:
    def run(self):
        import quicktok, xg2ref
        from xg2ref.tokenizer_info import TokenizerInfo
        return xg2ref.__file__, quicktok.__file__, TokenizerInfo.from_quicktok("llama3").vocab_size

[record] = cluster.ray_records(Where, (), [()], cluster.RaySpec(cpus=1, ship=True))
print(*record)
"""


def test_ray_ship_sends_xg2ref_and_the_vocabularies_to_the_workers(tmp_path):
    """`--ray-ship`: the workers import xg2ref and quicktok from the copies in the job's
    runtime_env, not from this machine's install (a Ray of its own, in a process of its own)."""
    import subprocess

    import quicktok

    import xg2ref

    (tmp_path / "shipped.py").write_text(SHIPPED)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    got = subprocess.run([sys.executable, str(tmp_path / "shipped.py")], capture_output=True, text=True, timeout=600,
                         env=env, cwd=tmp_path)
    assert got.returncode == 0, got.stderr[-3000:]
    xg2ref_file, quicktok_file, size = got.stdout.split()
    assert "runtime_resources" in xg2ref_file and "runtime_resources" in quicktok_file
    assert xg2ref_file != xg2ref.__file__ and quicktok_file != quicktok.__file__ and size == "128256"

