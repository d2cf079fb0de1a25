"""`xg2ref bench memory`: what a long-lived compiler and many live matchers cost, beside
xgrammar 0.2.8 (the memory model of README's "Memory" section; the account is xg2ref/memory.py).

Two measurements, each engine in a process of its own (RSS read from /proc; in one process,
memory one engine freed would be reused by the other and hide its growth):

    schemas    one `GrammarCompiler(info)` kept while `--sample` JSONSchemaBench schemas (a
               seeded sample over the subsets, the same for both engines) are compiled one after
               another, each with a matcher and its first mask, as a server's first request;
               RSS above the start and `get_cache_size_bytes()` at ten points; with the
               default compiler and with `cache_limit_bytes` (`--cache-limit-mb`, 200 by default)
    matchers   `--matchers` live matchers of one schema (2,000 by default), each having accepted
               the first 30 tokens of one document: RSS growth per matcher

Correctness first: each run records a digest of every first mask, and the two engines' digests
are compared schema by schema (the table gives how many agree); every token of the matcher run
is accepted by both engines.

The plot (`--plot`, default benchmarks/memory/memory.png) draws RSS and the reported cache size
against the number of schemas compiled; the numbers go beside it as .json.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import random
import subprocess
import sys
from typing import Optional

import numpy as np

from ...tokenizer_info import TokenizerInfo
from ..diff.checks import quicktok_encoder
from .jsonschemabench import SUBSETS, load_schemas
from .long import _rss
from .mask import _xgrammar_info

DEFAULT_PLOT = os.path.join("benchmarks", "memory", "memory.png")
MATCHER_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
    "address": {"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "string"}}}},
    "required": ["name", "age"]}
MATCHER_DOCUMENT = ('{"name": "Ada Lovelace", "age": 36, "tags": ["mathematics", "poetry", "engines"], '
                    '"address": {"street": "St James Square", "zip": "SW1Y 4JH"}}')
MATCHER_TOKENS = 30  # of the document's tokens, read by each matcher
POINTS = 10  # checkpoints of a schema run


def sample(data: str, n: int, seed: int = 0) -> list:
    """`n` JSONSchemaBench schemas, seeded, drawn over every subset: [(unique_id, schema)]."""
    rows = [r for subset in load_schemas(data, SUBSETS, None).values() for r in subset]
    rows.sort(key=lambda r: r[0])
    return random.Random(seed).sample(rows, min(n, len(rows)))


def _engine(engine: str, vocab: str):
    """(module, tokenizer info) of `engine` for the quicktok vocabulary `vocab`."""
    info = TokenizerInfo.from_quicktok(vocab)
    if engine == "xg2ref":
        import xg2ref

        return xg2ref, info
    from ...oracle.engines import import_xgrammar

    xgr = import_xgrammar()
    return xgr, _xgrammar_info(xgr, info)


def _first_mask(xgr, compiled, vocab_size: int) -> tuple:
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    words = (bitmask.numpy() if hasattr(bitmask, "numpy") else bitmask).view(np.uint32).ravel()
    return matcher, words


def schema_run(engine: str, vocab: str, data: str, n: int, limit_mb: float, seed: int) -> dict:
    """The child of a schema run: RSS and reported size at POINTS points, each first mask's digest."""
    xgr, info = _engine(engine, vocab)
    rows = sample(data, n, seed)
    options = {} if limit_mb < 0 else {"cache_limit_bytes": int(limit_mb * 2**20)}
    warm = xgr.GrammarCompiler(info)  # (kernels loaded before the start is read)
    _first_mask(xgr, warm.compile_json_schema(MATCHER_SCHEMA), info.vocab_size)
    del warm
    gc.collect()
    compiler = xgr.GrammarCompiler(info, **options)
    start, points, digests = _rss(), [], {}
    marks = {max(1, round(n * k / POINTS)) for k in range(1, POINTS + 1)}
    for i, (uid, schema) in enumerate(rows, 1):
        try:
            compiled = compiler.compile_json_schema(schema)
            _, words = _first_mask(xgr, compiled, info.vocab_size)
            digests[uid] = hashlib.blake2b(words.tobytes(), digest_size=8).hexdigest()
        except Exception:  # (a schema an engine refuses: no digest, the run goes on)
            pass
        if i in marks:
            gc.collect()
            point = {"schemas": i, "rss_mb": (_rss() - start) / 2**20}
            if hasattr(compiler, "memory_account"):  # (xg2ref: get_cache_size_bytes() by part, in one walk)
                lines = compiler.memory_account()
                point["reported_mb"], point["vocabulary_mb"] = sum(lines.values()) / 2**20, lines["vocabulary"] / 2**20
            else:
                point["reported_mb"] = compiler.get_cache_size_bytes() / 2**20
            points.append(point)
    return {"points": points, "digests": digests}


def matcher_run(engine: str, vocab: str, count: int) -> dict:
    """The child of a matcher run: RSS growth per live matcher, and the tokens read."""
    xgr, info = _engine(engine, vocab)
    compiled = xgr.GrammarCompiler(info).compile_json_schema(MATCHER_SCHEMA)
    tokens = list(quicktok_encoder(vocab)(MATCHER_DOCUMENT.encode())[:MATCHER_TOKENS])
    guide, _ = _first_mask(xgr, compiled, info.vocab_size)
    for t in tokens:  # (the document is one the schema takes: every token accepted)
        if not guide.accept_token(t):
            raise RuntimeError(f"{engine} refused token {t} of the matcher run's document")
    matchers = []
    gc.collect()
    before = _rss()
    for _ in range(count):
        m = xgr.GrammarMatcher(compiled)
        for t in tokens:
            m.accept_token(t)
        matchers.append(m)
    gc.collect()
    return {"kb_per_matcher": (_rss() - before) / 1024 / count, "tokens": tokens}


def _child(call: str) -> dict:
    code = f"import json; from xg2ref.tools.bench.memory import *; print(json.dumps({call}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=6 * 3600)
    if done.returncode != 0:
        raise RuntimeError(f"{call} failed: {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_memory(data: str, vocab: str = "llama3", n: int = 300, limit_mb: float = 200.0, matchers: int = 2000,
                 seed: int = 0, plot_path: Optional[str] = DEFAULT_PLOT, progress: bool = True) -> int:
    runs = {}
    for engine in ("xg2ref", "xgrammar"):
        for name, limit in (("default", -1.0), (f"limit {limit_mb:g} MB", limit_mb)):
            if progress:
                print(f"{engine}, {name}: {n} schemas...", file=sys.stderr, flush=True)
            runs[engine, name] = _child(f"schema_run({engine!r}, {vocab!r}, {data!r}, {n}, {limit}, {seed})")
        if progress:
            print(f"{engine}: {matchers} matchers...", file=sys.stderr, flush=True)
        runs[engine, "matchers"] = _child(f"matcher_run({engine!r}, {vocab!r}, {matchers})")
    print(report(runs, vocab, n, matchers))
    if plot_path:
        plot(runs, plot_path)
        print(f"plot: {plot_path}")
    return 0


def report(runs: dict, vocab: str, n: int, matchers: int) -> str:
    ours, theirs = runs["xg2ref", "default"]["digests"], runs["xgrammar", "default"]["digests"]
    both = set(ours) & set(theirs)
    differ = sorted(u for u in both if ours[u] != theirs[u])
    same = len(both) - len(differ)
    lines = [f"# bench memory: {vocab}, {n} JSONSchemaBench schemas (seeded), one kept compiler; "
             f"{platform.machine()}, {os.cpu_count()} cores",
             f"first masks: {same} of {len(both)} equal (schemas both engines compiled; xg2ref "
             f"{len(ours)}, xgrammar {len(theirs)})" + (f"; differing: {', '.join(differ[:8])}" if differ else "")
             + " (`xg2ref diff` tells whose mask is right)", "",
             "| configuration | schemas | RSS MB xg2ref | RSS MB xgrammar | x | reported MB xg2ref "
             "(vocabulary tables) | reported MB xgrammar |", "|---|---|---|---|---|---|---|"]
    names = [k[1] for k in runs if k[0] == "xg2ref" and k[1] != "matchers"]
    for name in names:
        for p, q in zip(runs["xg2ref", name]["points"], runs["xgrammar", name]["points"]):
            lines.append(f"| {name} | {p['schemas']} | {p['rss_mb']:.0f} | {q['rss_mb']:.0f} | "
                         f"{p['rss_mb'] / max(q['rss_mb'], 1.0):.2f} | {p['reported_mb']:.1f} ({p.get('vocabulary_mb', 0):.1f}) | "
                         f"{q['reported_mb']:.1f} |")
    for name in names:
        p, q = runs["xg2ref", name]["points"], runs["xgrammar", name]["points"]
        if len(p) >= 2 and len(q) >= 2:
            half = len(p) // 2
            rate = [(s[-1]["rss_mb"] - s[half - 1]["rss_mb"]) / max(s[-1]["schemas"] - s[half - 1]["schemas"], 1)
                    for s in (p, q)]
            lines.append(f"{name}: RSS growth per schema over the second half, xg2ref {rate[0] * 1024:.0f} KB, "
                         f"xgrammar {rate[1] * 1024:.0f} KB")
    a, b = runs["xg2ref", "matchers"], runs["xgrammar", "matchers"]
    lines.append(f"{matchers} live matchers, {len(a['tokens'])} tokens each: xg2ref {a['kb_per_matcher']:.1f} KB, "
                 f"xgrammar {b['kb_per_matcher']:.1f} KB per matcher "
                 f"({a['kb_per_matcher'] / max(b['kb_per_matcher'], 0.1):.2f}x)")
    return "\n".join(lines)


def plot(runs: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = {"xg2ref": "tab:blue", "xgrammar": "tab:orange"}
    for (engine, name), run in runs.items():
        if name == "matchers":
            continue
        xs = [p["schemas"] for p in run["points"]]
        style = "-" if name == "default" else "--"
        ax.plot(xs, [p["rss_mb"] for p in run["points"]], style, color=colors[engine], label=f"{engine} RSS, {name}")
        ax.plot(xs, [p["reported_mb"] for p in run["points"]], style, color=colors[engine], alpha=0.4,
                marker=".", label=f"{engine} reported, {name}")
    ax.set_xlabel("schemas compiled")
    ax.set_ylabel("MB above the start")
    ax.set_title("One kept GrammarCompiler: RSS and get_cache_size_bytes()")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    with open(os.path.splitext(path)[0] + ".json", "w", encoding="utf-8") as f:
        json.dump({f"{e}/{n}": r for (e, n), r in runs.items()}, f, indent=1)
