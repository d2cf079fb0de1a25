"""`xg2ref bench long`: long generations, per token, beside xgrammar 0.2.8 in the same process
(Leo items, kernels/earley.py, and joined mutual tail calls, grammar/passes.py; specs/03).

Each workload is one long document of a grammar, encoded with a real vocabulary (`--vocab`) into
about `--tokens` tokens (100,000 by default) and read token by token by both engines, each
through `GrammarCompiler(info)` with its defaults:

    json-numbers, json-strings, json-arrays   the builtin JSON grammar: an array of numbers, of
                                              strings, of small arrays
    json-object                               the builtin JSON grammar: one object of many members
    json-nested                               the builtin JSON grammar: an array of values nested
                                              five deep (objects, arrays, strings, numbers, literals)
    schema-objects                            a JSON Schema array of objects {"id", "name", "tags"}
    gbnf-list                                 llama.cpp's style of list, `items ::= item ("," ws items)?`
    gbnf-mutual                               a list through two rules calling each other last, both
                                              with other callers (nothing joins them: Leo items do the work)
    lark-list                                 a Lark list, `list: item ("," list)?`

Correctness first: at every step both engines fill a mask, the two masks must be equal, and both
accept the token. Per token is a fill plus an accept, timed apart for each engine. The table
gives, per workload and engine, the p50 over the first and the last 10% of the tokens (10,000
each at the default size) and their ratio, the ratio of the two engines' p50 over the whole
document, and the memory a generation costs: RSS growth while a fresh matcher accepts the whole
document (each engine alone, in a process of its own, after a throwaway matcher has read the
first 1,000 tokens: kernels loaded, first entries built) and, for xg2ref, the chart's bytes per
token.
Then ROLLBACK: both engines roll back the last 10% of the tokens, and read them again, each
mask checked against the one of the first pass (a hash per step); the table gives the time of
the rollback and of the replay.

An engine that has spent `--seconds` (300 by default) on a workload stops there and the table
says so: xgrammar 0.2.8 reads a right-recursive Lark list in quadratic time.

The plot (`--plot`, default benchmarks/long/per_token.png) draws time per token against the
position, a moving median per engine and workload; the numbers go beside it as .json.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

import numpy as np

from ...compiler import GrammarCompiler
from ...grammar.grammar import Grammar
from ...matcher import GrammarMatcher
from ...tokenizer_info import TokenizerInfo
from .mask import _xgrammar_info

DEFAULT_PLOT = os.path.join("benchmarks", "long", "per_token.png")
EDGE = 0.1  # the share of tokens that "first" and "last" cover
WARM_TOKENS = 1000  # tokens a throwaway matcher reads before a memory run measures a fresh one

GBNF_LIST = r"""root ::= "[" items "]"
items ::= item ("," ws items)?
item ::= [0-9]+ | "\"" [a-z ]* "\""
ws ::= " "?
"""
GBNF_MUTUAL = r"""root ::= "[" elements "]" | "{" rest "}"
elements ::= item rest
rest ::= "" | "," ws elements
item ::= [0-9]+ | "[" elements "]"
ws ::= " "?
"""
LARK_LIST = r"""start: "[" list "]"
list: item ("," list)?
item: /[0-9]+/ | "\"" /[a-z ]*/ "\""
"""
SCHEMA = {"type": "array", "items": {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["id", "name", "tags"], "additionalProperties": False}}
WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")


def _nested(n: int) -> str:
    w = WORDS[n % len(WORDS)]
    return f'{{"k": [[{{"v": [{n}, "{w}", true, null]}}], {n * 7 % 1000}], "w": "{w}"}}'


# name -> (kind, source, element n -> text, opening, closing, separator)
WORKLOADS: dict = {
    "json-numbers": ("json", None, lambda n: str(n * 37 % 100003), "[", "]", ", "),
    "json-strings": ("json", None, lambda n: f'"{WORDS[n % 8]} {n}"', "[", "]", ", "),
    "json-arrays": ("json", None, lambda n: f"[{n}, {n % 97}]", "[", "]", ", "),
    "json-object": ("json", None, lambda n: f'"key{n}": {n % 1000}', "{", "}", ", "),
    "json-nested": ("json", None, _nested, "[", "]", ", "),
    "schema-objects": ("json_schema", SCHEMA,
                       lambda n: f'{{"id": {n}, "name": "{WORDS[n % 8]}", "tags": ["{WORDS[(n + 3) % 8]}"]}}',
                       "[", "]", ", "),
    "gbnf-list": ("ebnf", GBNF_LIST, lambda n: str(n) if n % 3 else f'"{WORDS[n % 8]}"', "[", "]", ", "),
    "gbnf-mutual": ("ebnf", GBNF_MUTUAL, lambda n: str(n) if n % 5 else f"[{n}, {n + 1}]", "[", "]", ", "),
    "lark-list": ("lark", LARK_LIST, lambda n: str(n) if n % 3 else f'"{WORDS[n % 8]}"', "[", "]", ","),
}


@dataclass
class Side:
    """One engine's figures on one workload."""

    first_us: float = 0.0  # p50 per token over the first EDGE of the tokens
    last_us: float = 0.0  # ... over the last EDGE
    p50_us: float = 0.0  # ... over all tokens
    p99_us: float = 0.0
    rss_mb: float = 0.0  # RSS growth while a fresh matcher accepts the document
    rollback_ms: float = 0.0
    replay_ms: float = 0.0
    stopped_at: int = -1  # the tokens read when the time budget ran out (-1: the whole document)
    curve: list = field(default_factory=list)  # moving median per token (us), for the plot


@dataclass
class LongRow:
    name: str
    tokens: int = 0
    ours: Side = field(default_factory=Side)
    theirs: Side = field(default_factory=Side)
    chart_bytes_per_token: float = 0.0
    error: str = ""


def document(name: str, encode: Callable, tokens: int) -> tuple[str, list]:
    """The workload's document, with at least `tokens` tokens once encoded: (text, ids)."""
    _, _, element, opening, closing, sep = WORKLOADS[name]
    sample = len(encode((opening + sep.join(element(n) for n in range(100)) + closing).encode("utf-8")))
    count = max(int(tokens * 100 / sample), 8)
    while True:
        text = opening + sep.join(element(n) for n in range(count)) + closing
        ids = encode(text.encode("utf-8"))
        if len(ids) >= tokens:
            return text, ids
        count = int(count * tokens / max(len(ids), 1) * 1.02) + 8


def chart_bytes(parser) -> int:
    """The bytes a parser's chart holds for what it has read: per item its six int32 fields
    (kernels/chart.py `Chart`), per set its start, code-point count and pool mark."""
    c = parser.chart
    sets = parser.position + 1
    per_item = sum(a.itemsize for a in (c.item_state, c.item_origin, c.item_deadline, c.item_char_deadline,
                                       c.item_count, c.item_leo))
    per_set = c.set_start.itemsize + c.set_chars.itemsize + c.set_pool.itemsize
    return int(c.set_start[sets]) * per_item + sets * per_set


def _rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _array(bitmask) -> np.ndarray:
    return bitmask.numpy() if hasattr(bitmask, "numpy") else bitmask


def _mask_hash(bitmask) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(bitmask).tobytes(), digest_size=8).digest()


def _stats(times: np.ndarray, side: Side) -> None:
    n = len(times)
    edge = max(int(n * EDGE), 1)
    us = times * 1e6
    side.first_us, side.last_us = float(np.median(us[:edge])), float(np.median(us[-edge:]))
    side.p50_us, side.p99_us = float(np.median(us)), float(np.percentile(us, 99))
    window = max(n // 200, 1)
    side.curve = [round(float(np.median(us[k:k + window])), 2) for k in range(0, n, window)]


def run_workload(name: str, info: TokenizerInfo, xgr, xinfo, encode, tokens: int, budget: float = 300.0,
                 progress=None, vocab: str = "llama3") -> LongRow:
    """Both engines along the workload's document (module docstring). An engine that has spent
    `budget` seconds stops where it is (`Side.stopped_at`); the other reads on alone."""
    from ...bitmask import allocate_token_bitmask

    row = LongRow(name)
    _, ids = document(name, encode, tokens)
    row.tokens = n = len(ids)
    kind, source = WORKLOADS[name][:2]
    ours_compiled = _ours(kind, source, info)
    theirs_compiled = _theirs(kind, source, xgr, xinfo)
    ours, theirs = GrammarMatcher(ours_compiled), xgr.GrammarMatcher(theirs_compiled)
    a, b = allocate_token_bitmask(1, info.vocab_size), xgr.allocate_token_bitmask(1, info.vocab_size)
    times = {"ours": np.zeros(n), "theirs": np.zeros(n)}
    sides = {"ours": (ours, a, row.ours), "theirs": (theirs, b, row.theirs)}
    tail = n - max(int(n * EDGE), 1)
    hashes = []
    clock = time.perf_counter
    for step, t in enumerate(ids):
        for key, (matcher, bitmask, side) in sides.items():
            if side.stopped_at >= 0:
                continue
            start = clock()
            matcher.fill_next_token_bitmask(bitmask)
            ok = matcher.accept_token(t)
            times[key][step] = clock() - start
            if not ok:
                row.error = f"token {step} refused by {'xg2ref' if key == 'ours' else 'xgrammar'}"
                return row
            if step % 256 == 0 and times[key][:step + 1].sum() > budget:
                side.stopped_at = step + 1
        if row.theirs.stopped_at < 0 and not np.array_equal(_array(a), _array(b)):
            row.error = f"the masks differ at token {step}"
            return row
        if step >= tail:
            hashes.append(_mask_hash(_array(a)))
        if progress is not None and step % 1000 == 0:
            progress(step, n)
        if row.ours.stopped_at >= 0:
            break
    for key, (matcher, bitmask, side) in sides.items():
        reached = side.stopped_at if side.stopped_at >= 0 else n
        _stats(times[key][:reached], side)
        if side.stopped_at < 0:
            _rollback(matcher, bitmask, ids, tail, hashes, side)
            if side.rollback_ms < 0:
                row.error = f"a mask of {'xg2ref' if key == 'ours' else 'xgrammar'} differs after rolling back"
    row.chart_bytes_per_token = chart_bytes(ours._parser) / n
    row.theirs.rss_mb = _growth("xgrammar", name, vocab, tokens)
    row.ours.rss_mb = _growth("xg2ref", name, vocab, tokens)
    return row


def _rollback(matcher, bitmask, ids: list, tail: int, hashes: list, side: Side) -> None:
    """ROLLBACK (module docstring): rollback_ms < 0 marks a replayed mask that differs."""
    start = time.perf_counter()
    matcher.rollback(len(ids) - tail)
    side.rollback_ms = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    for k, t in enumerate(ids[tail:]):
        matcher.fill_next_token_bitmask(bitmask)
        if _mask_hash(_array(bitmask)) != hashes[k] or not matcher.accept_token(t):
            side.rollback_ms = -1.0
            return
    side.replay_ms = (time.perf_counter() - start) * 1e3


def _growth(engine: str, name: str, vocab: str, tokens: int) -> float:
    """RSS growth (MB) while a fresh matcher of `engine` ("xg2ref" or "xgrammar") accepts the
    workload's document, the matcher still alive, measured in a process of its own (in this one,
    memory freed by the timed walks would be reused and hide the growth)."""
    import subprocess
    import sys

    code = f"from xg2ref.tools.bench.long import growth; print(growth({engine!r}, {name!r}, {vocab!r}, {tokens}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"the memory run of {engine} on {name} failed: {done.stderr[-500:]}")
    return float(done.stdout.split()[-1])


def growth(engine: str, name: str, vocab: str, tokens: int, budget: float = 300.0) -> float:
    """`_growth`'s child: compile, read the first WARM_TOKENS tokens with a throwaway matcher (so
    that loading or compiling kernels is not counted), then accept the document's tokens with a
    fresh matcher (for at most `budget` seconds) and return the RSS growth in MB: what the
    generation itself costs (xg2ref's builder
    thread is off, so that no mask-cache entry is built meanwhile; xgrammar builds them all
    while compiling)."""
    from ..diff.checks import quicktok_encoder
    from ...oracle.engines import import_xgrammar

    info = TokenizerInfo.from_quicktok(vocab)
    _, ids = document(name, quicktok_encoder(vocab), tokens)
    kind, source = WORKLOADS[name][:2]
    if engine == "xg2ref":  # (no builder thread: the entries it would build are the compiler's memory)
        compiled = _ours(kind, source, info, background_builds=False)
        make = GrammarMatcher
    else:
        xgr = import_xgrammar()
        compiled, make = _theirs(kind, source, xgr, _xgrammar_info(xgr, info)), xgr.GrammarMatcher
    warm = make(compiled)  # (kernels loaded or compiled and the first entries built before measuring)
    for t in ids[:WARM_TOKENS]:
        warm.accept_token(t)
    del warm
    matcher = make(compiled)
    gc.collect()
    before, start = _rss(), time.perf_counter()
    for n, t in enumerate(ids):
        if not matcher.accept_token(t) or (n % 256 == 0 and time.perf_counter() - start > budget):
            break
    return (_rss() - before) / 2**20


def _ours(kind: str, source, info: TokenizerInfo, **options):
    compiler = GrammarCompiler(info, **options)
    if kind == "json":
        return compiler.compile_builtin_json_grammar()
    if kind == "json_schema":
        return compiler.compile_json_schema(json.dumps(source))
    if kind == "lark":
        return compiler.compile_grammar(Grammar.from_lark(source))
    return compiler.compile_grammar(source)


def _theirs(kind: str, source, xgr, xinfo):
    compiler = xgr.GrammarCompiler(xinfo, max_threads=1)
    if kind == "json":
        return compiler.compile_builtin_json_grammar()
    if kind == "json_schema":
        return compiler.compile_json_schema(json.dumps(source))
    if kind == "lark":
        return compiler.compile_grammar(xgr.Grammar.from_lark(source))
    return compiler.compile_grammar(source)


def format_table(rows: list, vocab: str) -> str:
    lines = [f"long generations, vocabulary {vocab}, {platform.machine()} {os.cpu_count()} cores, one thread; "
             f"first / last = p50 per token (fill + accept) over the first / last {EDGE:.0%} of the tokens",
             f"{'workload':<15}{'tokens':>8}  {'xg2ref first/last us':>21} {'ratio':>6}  "
             f"{'xgrammar first/last':>20} {'ratio':>6}  {'p50 ours/theirs':>16} {'x':>5}  {'RSS MB ours/theirs':>19} "
             f"{'x':>5}  {'chart B/tok':>11}  {'rollback ms':>12} {'replay ms':>10}"]
    for r in rows:
        if r.error:
            lines.append(f"{r.name:<15}{r.tokens:>8}  FAILED: {r.error}")
            continue
        o, t = r.ours, r.theirs
        if t.stopped_at >= 0:
            lines.append(f"{r.name:<15}  xgrammar stopped after {t.stopped_at:,} tokens (its time budget); its "
                         f"figures below cover those tokens, without rollback")
        lines.append(
            f"{r.name:<15}{r.tokens:>8}  {o.first_us:>9.1f} / {o.last_us:>9.1f} {o.last_us / o.first_us:>6.2f}  "
            f"{t.first_us:>8.1f} / {t.last_us:>9.1f} {t.last_us / t.first_us:>6.2f}  "
            f"{o.p50_us:>7.1f} / {t.p50_us:>6.1f} {o.p50_us / t.p50_us:>5.2f}  "
            f"{o.rss_mb:>8.1f} / {t.rss_mb:>8.1f} {o.rss_mb / max(t.rss_mb, 1.0):>5.2f}  "
            f"{r.chart_bytes_per_token:>11.0f}  {o.rollback_ms:>5.1f} / {t.rollback_ms:>4.1f} "
            f"{o.replay_ms:>5.0f} / {t.replay_ms:>4.0f}")
    lines.append("(x = xg2ref ÷ xgrammar 0.2.8; RSS ratio over max(xgrammar's growth, 1 MB); rollback and replay "
                 "of the last 10% of the tokens, xg2ref / xgrammar)")
    return "\n".join(lines)


def plot(rows: list, path: str) -> None:
    """Time per token against the position, a moving median per engine, one panel per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    good = [r for r in rows if not r.error]
    if not good:
        return
    cols = 3
    fig, axes = plt.subplots((len(good) + cols - 1) // cols, cols, figsize=(4 * cols, 2.6 * ((len(good) + 2) // 3)),
                             squeeze=False)
    for ax, r in zip(axes.flat, good):
        for side, label in ((r.ours, "xg2ref"), (r.theirs, "xgrammar 0.2.8")):
            reached = side.stopped_at if side.stopped_at >= 0 else r.tokens
            xs = np.linspace(0, reached, len(side.curve), endpoint=False)
            ax.plot(xs, side.curve, label=label + (" (stopped)" if side.stopped_at >= 0 else ""))
        ax.set_title(r.name, fontsize=9)
        ax.set_xlabel("token position", fontsize=8)
        ax.set_ylabel("us per token", fontsize=8)
        ax.set_xlim(0, r.tokens)
        values = [v for v in r.ours.curve + r.theirs.curve if v > 0]
        if values and max(values) > 50 * min(values):  # (one engine far above the other: a log scale)
            ax.set_yscale("log")
            ax.legend(fontsize=7)
        else:
            ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(good):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    with open(os.path.splitext(path)[0] + ".json", "w", encoding="utf-8") as f:
        json.dump([asdict(r) for r in rows], f)


def bench_long(vocab: str = "llama3", tokens: int = 100_000, cases: Optional[list] = None, plot_path: str = DEFAULT_PLOT,
               budget: float = 300.0, progress: bool = True, out=print) -> int:
    """Run the workloads (`cases`: their names, default all), print the table and draw the
    plot. Returns 1 when a workload fails its correctness checks."""
    from ..diff.checks import quicktok_encoder
    from ..diff.report import ProgressBar
    from ...oracle.engines import import_xgrammar

    unknown = sorted(set(cases or ()) - set(WORKLOADS))
    if unknown:
        raise ValueError(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    xgr = import_xgrammar()
    info = TokenizerInfo.from_quicktok(vocab)
    xinfo = _xgrammar_info(xgr, info)
    encode = quicktok_encoder(vocab)
    rows = []
    for name in cases or WORKLOADS:
        bar = ProgressBar(tokens, enabled=progress)
        rows.append(run_workload(name, info, xgr, xinfo, encode, tokens, budget, lambda d, n: bar.update(d, name),
                                 vocab))
        bar.close()
    out(format_table(rows, vocab))
    plot(rows, plot_path)
    out(f"plot: {plot_path}")
    return 1 if any(r.error for r in rows) else 0
