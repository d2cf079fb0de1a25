"""`xg2ref bench dynamic`: XGrammar-2 §4.1, Table 1 and Figure 6, grammars that change with
every request.

For 5, 20 and 50 tools, 100 requests in two workloads over ../shared/data/bfcl/tool_pool_100.json:
*static* (every request brings the same tools) and *dynamic* (each request samples its tools
uniformly from the pool, seeded). A request builds the tool-calling structural tag of a model
format (`--format`, default `llama`), compiles it with a compiler kept across the requests of
the workload (caches on, as a server runs), makes a matcher and fills the first mask. xg2ref
and xgrammar 0.2.8 run side by side in one process, one thread, after a warm-up request on
compilers of their own. Correctness first: every request's first masks must agree.

Reported per workload:

- structure reuse (Table 1): requests whose whole grammar the grammar-level cache held;
- substructure reuse (Table 1): hashed rules of the compiled grammars whose FSM hash
  (xg2ref/fsm/hashing.py) an earlier grammar already had, from the cross-grammar cache's
  statistics (a grammar found whole counts all its rules as reused);
- mean compile time (structural tag built and compiled) per request, both engines, and the
  mean time to first mask (also the matcher made and its first mask filled), with ratios.

Figure 6 (mean compile time against the number of tools, both workloads, both engines) is
written as a PNG with the numbers beside it as JSON.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional

import numpy as np

from .mask import _xgrammar_info
from ...bitmask import allocate_token_bitmask
from ...builtin_structural_tag import get_model_structural_tag
from ...compiler import GrammarCompiler
from ...matcher import GrammarMatcher
from ...tokenizer_info import TokenizerInfo

TOOL_COUNTS = (5, 20, 50)
WARM_UP = 10  # `bench targets`: requests that fill the caches before the timed ones
WORKLOADS = ("static", "dynamic")


@dataclass
class WorkloadRow:
    workload: str
    tools: int
    requests: int
    structure_reuse: float  # share of requests whose whole grammar was cached
    substructure_reuse: float  # share of hashed rules already known
    ours_compile_ms: float
    theirs_compile_ms: float
    ours_ttfm_ms: float  # time to first mask
    theirs_ttfm_ms: float


def load_tools(data_dir: str) -> list:
    path = os.path.join(data_dir, "bfcl", "tool_pool_100.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found (pass --data, the folder holding bfcl/)")
    with open(path, encoding="utf-8") as f:
        pool = json.load(f)
    return [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": t["parameters"]}} for t in pool]


def request_tools(pool: list, workload: str, n_tools: int, n_requests: int, seed: int = 0) -> list:
    """The tool lists of the requests of one workload."""
    rng = random.Random(f"{seed}/{workload}/{n_tools}")
    if workload == "static":
        fixed = rng.sample(pool, n_tools)
        return [fixed] * n_requests
    return [rng.sample(pool, n_tools) for _ in range(n_requests)]


def _first_mask(lib, compiler, fmt: str, tools: list, vocab_size: int, build_tag) -> tuple:
    """(compile seconds, time-to-first-mask seconds, the mask) of one request."""
    start = time.perf_counter()
    compiled = compiler.compile_structural_tag(build_tag(fmt, tools=tools))
    compiled_at = time.perf_counter()
    matcher = lib.GrammarMatcher(compiled)
    mask = lib.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(mask)
    done = time.perf_counter()
    return compiled_at - start, done - start, np.asarray(mask).copy()


def run_workload(workload: str, n_tools: int, requests: list, info: TokenizerInfo, xinfo, xgr, fmt: str,
                 jit: bool = True, warm_up: int = 0) -> WorkloadRow:
    """Run the requests through one compiler per engine; the first `warm_up` of them fill the
    caches and are left out of the times (not of the mask check)."""
    ours = GrammarCompiler(info, jit=jit)
    theirs = xgr.GrammarCompiler(xinfo, max_threads=1)
    lib = _Ours()
    times = {"oc": [], "ot": [], "tc": [], "tt": []}
    for k, tools in enumerate(requests):
        oc, ot, omask = _first_mask(lib, ours, fmt, tools, info.vocab_size, get_model_structural_tag)
        tc, tt, tmask = _first_mask(xgr, theirs, fmt, tools, info.vocab_size, xgr.get_model_structural_tag)
        if not np.array_equal(omask.reshape(-1), tmask.reshape(-1)):
            raise AssertionError(f"{workload}/{n_tools} tools, request {k}: the first masks differ")
        for key, value in zip(("oc", "ot", "tc", "tt"), (oc, ot, tc, tt)):
            if k >= warm_up:
                times[key].append(value * 1e3)
    stats = ours.cache_stats
    return WorkloadRow(workload, n_tools, len(requests) - warm_up,
                       ours.grammar_cache_hits / max(ours.grammar_cache_lookups, 1),
                       stats.rules_known / max(stats.rules_seen, 1),
                       *(float(np.mean(times[k])) for k in ("oc", "tc", "ot", "tt")))


class _Ours:
    """xg2ref's names, as `_first_mask` calls them on a library."""

    GrammarMatcher = GrammarMatcher

    @staticmethod
    def allocate_token_bitmask(batch: int, vocab_size: int):
        return allocate_token_bitmask(batch, vocab_size)


def format_table(rows: list) -> str:
    head = (f"{'workload':<9} {'tools':>5} {'req':>4} {'structure':>9} {'substr.':>8}   "
            f"{'compile ms (xg2ref / xgrammar)':>32}   {'first mask ms (xg2ref / xgrammar)':>36}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.workload:<9} {r.tools:>5} {r.requests:>4} {100 * r.structure_reuse:>8.1f}% "
                     f"{100 * r.substructure_reuse:>7.1f}%   {r.ours_compile_ms:>9.1f} / {r.theirs_compile_ms:>8.1f}"
                     f"  {r.ours_compile_ms / r.theirs_compile_ms:>6.2f}x   {r.ours_ttfm_ms:>9.1f} / "
                     f"{r.theirs_ttfm_ms:>8.1f}  {r.ours_ttfm_ms / r.theirs_ttfm_ms:>6.2f}x")
    lines.append("(reuse: xg2ref's caches; ratio = xg2ref / xgrammar 0.2.8; one thread, same process, warm-up excluded)")
    return "\n".join(lines)


def plot_figure6(rows: list, path: str) -> None:
    """Mean compile time per request against the number of tools (Figure 6), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for workload, style in (("static", "--"), ("dynamic", "-")):
        sub = sorted((r for r in rows if r.workload == workload), key=lambda r: r.tools)
        xs = [r.tools for r in sub]
        ax.plot(xs, [r.ours_compile_ms for r in sub], style, marker="o", color="tab:blue", label=f"xg2ref, {workload}")
        ax.plot(xs, [r.theirs_compile_ms for r in sub], style, marker="s", color="tab:orange",
                label=f"xgrammar 0.2.8, {workload}")
    ax.set_xlabel("tools per request")
    ax.set_ylabel("mean compile time per request (ms)")
    ax.set_yscale("log")
    ax.set_title("Compile time, static vs dynamic tool sets (XGrammar-2 Fig. 6)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def bench_dynamic(data_dir: str, vocab: str = "llama3", requests: int = 100, tool_counts=TOOL_COUNTS,
                  fmt: str = "llama", plot: Optional[str] = "benchmarks/dynamic/figure6.png",
                  out: Callable[[str], None] = print) -> int:
    try:
        import xgrammar as xgr
    except ImportError:
        out("xgrammar is not installed: `xg2ref bench dynamic` compares against xgrammar 0.2.8")
        return 2
    pool = load_tools(data_dir)
    info = TokenizerInfo.from_quicktok(vocab)
    xinfo = _xgrammar_info(xgr, info)
    warm = request_tools(pool, "dynamic", 3, 1, seed=99)
    run_workload("warm-up", 3, warm, info, xinfo, xgr, fmt)
    rows = []
    for n in tool_counts:
        for workload in WORKLOADS:
            row = run_workload(workload, n, request_tools(pool, workload, n, requests), info, xinfo, xgr, fmt)
            out(f"  {workload} {n} tools: compile {row.ours_compile_ms:.1f} / {row.theirs_compile_ms:.1f} ms")
            rows.append(row)
    out(format_table(rows))
    if plot:
        plot_figure6(rows, plot)
        with open(os.path.splitext(plot)[0] + ".json", "w", encoding="utf-8") as f:
            json.dump({"vocab": vocab, "format": fmt, "rows": [asdict(r) for r in rows]}, f, indent=1)
        out(f"Figure 6 written to {plot}")
    return 0
