"""Sizing a Ray campaign (docs/cluster.md): the same three campaigns on a local Ray with 1 CPU and
with 2, timed from the first job to the last record (Ray's own start timed apart), as jobs per
core-hour, and the hours JSONSchemaBench's 9,557 schemas would take against three engines on 100
nodes at the measured rate.

    python benchmarks/cluster/sizing.py [--data ../shared/data] [--out benchmarks/cluster/sizing.json]

The campaigns: `xg2ref fuzz --against xgrammar --cases 40 --seed 11`; `bench jsonschemabench` on 3
seeded schemas per subset (xg2ref beside xgrammar, each output validated); `bench maskbench` on 1
schema per subset and 1 json-mode-eval item (xg2ref, xgrammar, llguidance, outlines-core and the
pushdown automaton: masks compared, then timed). Each run's records are checked equal to the
other run's (timings aside) before its time counts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

from xg2ref.tools import cluster

TIMINGS = {"seconds", "replay", "their_seconds", "compile_seconds", "peak_mib", "timing"}
SCHEMAS = 9557


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMINGS and not k.endswith(("_ms", "_us", "_s"))}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _records(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        return sorted(json.dumps(_strip(json.loads(line)), sort_keys=True) for line in f if line.strip())


def campaigns(data: str) -> dict:
    from xg2ref.tools.bench.jsonschemabench import bench_jsonschemabench
    from xg2ref.tools.bench.maskbench import bench_maskbench
    from xg2ref.tools.fuzz.runner import run_fuzz

    def fuzz(jobs, results):
        run_fuzz(["xgrammar"], None, seed=11, results_path=results, progress=False, max_cases=40, jobs=jobs)
        return 40

    def jsb(jobs, results):
        bench_jsonschemabench(data, sample=3, out=lambda line: None, progress=False, jobs=jobs, results=results)
        return sum(1 for _ in open(results))

    def mask(jobs, results):
        bench_maskbench(data, sample=1, out=lambda line: None, progress=False, jobs=jobs, results=results)
        return sum(1 for _ in open(results))

    return {"fuzz (cases, against xgrammar)": fuzz, "jsonschemabench (schemas, xg2ref + xgrammar)": jsb,
            "maskbench (schemas, five engines)": mask}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join("..", "shared", "data"))
    parser.add_argument("--out", default=os.path.join("benchmarks", "cluster", "sizing.json"))
    parser.add_argument("--only", help="the campaigns whose name starts with this (fuzz, jsonschemabench, maskbench)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, run in campaigns(args.data).items():
            if args.only and not name.startswith(args.only):
                continue
            row = {"campaign": name}
            for cpus in (1, 2):
                began = time.monotonic()
                ray, _ = cluster.start(cluster.RaySpec(cpus=cpus))
                row[f"ray_start_s_{cpus}"] = round(time.monotonic() - began, 1)
                results = os.path.join(scratch, f"{len(rows)}-{cpus}.jsonl")
                began = time.monotonic()
                jobs = run(cluster.RaySpec(cpus=cpus), results)
                seconds = time.monotonic() - began
                ray.shutdown()
                row["jobs"] = jobs
                row[f"wall_s_{cpus}"] = round(seconds, 1)
                row[f"per_core_hour_{cpus}"] = round(jobs * 3600 / seconds / cpus)
                row[f"records_{cpus}"] = _records(results)
            row["records_equal"] = row.pop("records_1") == row.pop("records_2")
            row["speedup_2_vs_1"] = round(row["wall_s_1"] / row["wall_s_2"], 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.only:
        return
    mask = rows[-1]
    per_core_hour = mask["per_core_hour_2"]
    projection = {f"{cores} cores per node": round(SCHEMAS / (per_core_hour * cores * 100), 2)
                  for cores in (2, 16, 64)}
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
           "date": time.strftime("%Y-%m-%d"), "rows": rows,
           "hours_for_jsonschemabench_on_100_nodes (maskbench rate, 2 CPUs)": projection}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2)
    print(json.dumps(out["hours_for_jsonschemabench_on_100_nodes (maskbench rate, 2 CPUs)"]))


if __name__ == "__main__":
    main()
