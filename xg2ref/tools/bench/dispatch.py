"""`xg2ref bench WHAT`: the call each bench is run with, from the options xg2ref/tools/cli.py
parsed (one place for the defaults that depend on the bench)."""

from __future__ import annotations

import os
from typing import Optional

DYNAMIC_PLOT = os.path.join("benchmarks", "dynamic", "figure6.png")
RAY_BENCHES = ("jsonschemabench", "maskbench", "earley-vs-pda")


def _sample_size(sample, default: Optional[int]) -> Optional[int]:
    """A bench's sample size: None for `all`, its default when `--sample` is not given."""
    return None if sample == "all" else (sample if sample is not None else default)


def run_bench(args) -> int:
    """Run the bench `args.what` names, with the options cli.py parsed (xg2ref/tools/cli.py)."""
    if getattr(args, "ray", None) is not None or getattr(args, "ray_ship", False):  # on Ray actors (tools/cluster.py)
        from ..cluster import RaySpec

        if args.what not in RAY_BENCHES:
            raise SystemExit(f"--ray applies to the benches that run one job per schema: {', '.join(RAY_BENCHES)}")
        args.jobs = RaySpec.from_args(args)
    if args.what == "kernels":
        from .kernels import bench_kernels

        return bench_kernels()
    if args.what == "formats":
        from .formats import bench_formats

        results = args.results or os.path.join("benchmarks", "formats", "records.jsonl")
        os.makedirs(os.path.dirname(results) or ".", exist_ok=True)
        return bench_formats(args.data, turns=args.requests, tool_counts=args.tools or (20,),
                             slow_turns=args.slow_turns, slow_timeout=args.slow_timeout, results=results,
                             progress=not args.no_progress)
    if args.what == "schema-suite":
        from .schema_suite import ENGINES, bench_schema_suite

        return bench_schema_suite(engines=args.engines or ENGINES, update_ratchet=args.update_ratchet,
                                  progress=not args.no_progress, table=args.table,
                                  timeout=args.timeout if args.timeout != 60.0 else 30.0)
    if args.what == "dynamic":
        from .dynamic import bench_dynamic

        return bench_dynamic(args.data, vocab=args.vocab, requests=args.requests, tool_counts=args.tools or (5, 20, 50),
                             fmt=args.format, plot=args.plot)
    if args.what == "targets":
        from .targets import bench_targets

        return bench_targets(args.data, vocab=args.vocab, requests=args.requests, fmt=args.format)
    if args.what == "ablation":
        from .ablation import bench_ablation

        return bench_ablation(args.data, vocab=args.vocab, sample=_sample_size(args.sample, 3), subsets=args.subsets,
                              max_tokens=args.tokens or 40, timeout=args.timeout)
    if args.what == "earley-vs-pda":
        from .earley_vs_pda import bench_earley_vs_pda

        return bench_earley_vs_pda(args.data, sample=_sample_size(args.sample, 20), subsets=args.subsets,
                                   vocab=args.vocab,
                                   timeout=args.timeout, results=args.results, jobs=args.jobs,
                                   progress=not args.no_progress)
    if args.what == "xg1-ablation":
        from .xg1_ablation import bench_xg1_ablation

        return bench_xg1_ablation(args.data, vocab=args.vocab, texts=args.limit, slow_texts=args.slow_texts,
                                  slow_steps=args.slow_steps, grammar=(args.cases or ["json"])[0])
    if args.what == "tagdispatch":
        from .tagdispatch import bench_tagdispatch

        return bench_tagdispatch(args.data, vocab=args.vocab)
    if args.what == "maskbench":
        from .maskbench import bench_maskbench

        plot = args.plot if args.plot != DYNAMIC_PLOT else os.path.join("benchmarks", "maskbench", "cdf.png")
        results = args.results or os.path.join("benchmarks", "maskbench", "records.jsonl")
        os.makedirs(os.path.dirname(results) or ".", exist_ok=True)
        return bench_maskbench(args.data, sample=_sample_size(args.sample, 5), vocab=args.vocab, results=results,
                               plot=plot, jobs=args.jobs, timeout=args.timeout, subsets=args.subsets,
                               progress=not args.no_progress)
    if args.what == "jsonschemabench":
        from .jsonschemabench import bench_jsonschemabench

        return bench_jsonschemabench(args.data, sample=_sample_size(args.sample, None), subsets=args.subsets,
                                     vocab=args.vocab,
                                     jit=not args.eager, jobs=args.jobs, results=args.results,
                                     report_only=args.report_only, rerun=args.rerun,
                                     progress=not args.no_progress, timeout=args.timeout)
    if args.what == "wgrammar":
        from .wgrammar import ENGINES, bench_wgrammar

        plot = args.plot if args.plot != DYNAMIC_PLOT else os.path.join("benchmarks", "wgrammar", "figure6.png")
        return bench_wgrammar(args.data, vocab=args.vocab if args.vocab != "llama3" else "qwen3",
                              requests=args.requests, json_limit=args.limit, engines=tuple(args.engines or ENGINES),
                              slow=args.slow_turns, results=args.results, plot=plot, progress=not args.no_progress)
    if args.what == "concurrency":
        from .concurrency import bench_concurrency

        return bench_concurrency(args.data, vocab=args.vocab, threads=args.threads, seconds=args.seconds,
                                 limit=args.limit or 12)
    if args.what == "memory":
        from .memory import DEFAULT_PLOT as MEMORY_PLOT, bench_memory

        return bench_memory(args.data, vocab=args.vocab, n=300 if args.sample in (None, "all") else args.sample,
                            limit_mb=args.cache_limit_mb, matchers=args.matchers,
                            plot_path=args.plot if args.plot != DYNAMIC_PLOT else MEMORY_PLOT,
                            progress=not args.no_progress)
    if args.what == "long":
        from .long import DEFAULT_PLOT, bench_long

        return bench_long(vocab=args.vocab, tokens=args.tokens or 100_000, cases=args.cases,
                          plot_path=args.plot if args.plot != DYNAMIC_PLOT else DEFAULT_PLOT,
                          budget=args.seconds if args.seconds != 10.0 else 300.0, progress=not args.no_progress)
    if args.what == "token-classes":
        from .token_classes import GRAMMARS, bench_token_classes

        return bench_token_classes(args.data, vocabs=tuple(args.vocab.split(",")), grammars=args.cases or GRAMMARS,
                                   json_limit=args.limit, mask=args.mask, results=args.results)
    from .mask import bench_mask

    return bench_mask(vocab=args.vocab, data_dir=args.data, cases=args.cases, limit=args.limit)
