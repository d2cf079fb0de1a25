"""`xg2ref bench mask`: per-token mask time, compile time and cache size beside xgrammar 0.2.8.

Correctness comes first: along every trace, xg2ref's bitmask must equal xgrammar's on every id
below vocab_size (a disagreement is printed and makes the command exit 1), and only then are
the timings reported. Both engines run in this process, one thread each (xgrammar with
`max_threads=1` and its compiler cache off), on the same RAW vocabulary of decoded bytes.

Workloads (XGrammar-2 §4's mask benchmark, scaled to this repository's data):
(a) the builtin JSON grammar along the gold completions of json-mode-eval
    (`<data>/json_mode_eval/json_mode_eval_from_maskbench.jsonl`), serialized with
    `json.dumps` and tokenized with the vocabulary's own tokenizer;
(b) every grammar of the bundled suite along its sample sentences.

Times: per-token `fill_next_token_bitmask` p50 and p99 (µs), eager compile of the whole cache
(ms, the median of three compiles, after a warm-up that compiles the builtin JSON grammar and
fills one mask so that Numba's JIT is measured and printed apart), `memory_size_bytes`, and the
cache's accepted / rejected / uncertain totals.

What it leaves out: batched masks and the GPU (the kernels issue).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ...compiler import GrammarCompiler
from ...matcher import GrammarMatcher
from ...tokenizer_info import TokenizerInfo
from ...bitmask import get_bitmask_shape
from ...testing import bitmask_to_bool_mask

DEFAULT_DATA = os.path.join("..", "shared", "data")
COMPILE_REPEATS = 3


@dataclass
class Row:
    """One workload's figures for both engines."""

    name: str
    tokens: int = 0
    ours_us: list = field(default_factory=list)
    theirs_us: list = field(default_factory=list)
    ours_compile_ms: float = 0.0
    theirs_compile_ms: float = 0.0
    ours_memory: int = 0
    theirs_memory: int = 0
    counts: tuple = (0, 0, 0)
    mismatches: list = field(default_factory=list)
    known_differences: int = 0  # steps where xgrammar's mask differs but xg2ref's is its exact mask


def _pct(values: list, q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def json_mode_eval_texts(data_dir: str, limit: Optional[int] = None) -> list:
    path = os.path.join(data_dir, "json_mode_eval", "json_mode_eval_from_maskbench.jsonl")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"json-mode-eval not found at {path}; pass --data DIR (the folder that holds "
                                "json_mode_eval/)")
    with open(path, encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    texts = [json.dumps(item["completion"]) for item in items]
    return texts[:limit] if limit else texts


def _xgrammar_info(xgr, info: TokenizerInfo):
    v = info.vocab_arrays()
    decoded = [v.token_bytes[v.token_offsets[t]: v.token_offsets[t + 1]].tobytes() for t in range(info.vocab_size)]
    return xgr.TokenizerInfo(decoded, stop_token_ids=list(info.stop_token_ids))


def run_workload(row: Row, ebnf: Optional[str], root: str, texts: list, info: TokenizerInfo, xinfo, xgr,
                 encode) -> None:
    """Compile in both engines (`ebnf` None: the builtin JSON grammar), then replay each text
    token by token, comparing and timing the masks."""
    def compile_ours():
        compiler = GrammarCompiler(info, cache_enabled=False)
        return (compiler.compile_builtin_json_grammar() if ebnf is None
                else compiler.compile_grammar(ebnf, root_rule_name=root))

    def compile_theirs():
        compiler = xgr.GrammarCompiler(xinfo, max_threads=1, cache_enabled=False)
        return (compiler.compile_builtin_json_grammar() if ebnf is None
                else compiler.compile_grammar(ebnf, root_rule_name=root))

    ours, row.ours_compile_ms = _median_time(compile_ours)
    theirs, row.theirs_compile_ms = _median_time(compile_theirs)
    row.ours_memory, row.theirs_memory = ours.memory_size_bytes, theirs.memory_size_bytes
    stats = ours.mask_cache.stats
    row.counts = (stats.accepted, stats.rejected, stats.uncertain)
    n = info.vocab_size
    a, x = np.full(get_bitmask_shape(1, n), -1, dtype=np.int32), xgr.allocate_token_bitmask(1, n)
    for text in texts:
        ids = encode(text.encode("utf-8"))
        if ids is None:
            continue
        m, xm = GrammarMatcher(ours), xgr.GrammarMatcher(theirs)
        for step, t in enumerate(ids + [None]):
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(a)
            t1 = time.perf_counter()
            xm.fill_next_token_bitmask(x)
            t2 = time.perf_counter()
            row.ours_us.append((t1 - t0) * 1e6)
            row.theirs_us.append((t2 - t1) * 1e6)
            row.tokens += 1
            have = bitmask_to_bool_mask(a[0], n)
            if not np.array_equal(have, bitmask_to_bool_mask(x.numpy()[0], n)):
                # xgrammar is not exact everywhere (specs/01-ebnf.md, "Differences"): only a
                # mask that also differs from xg2ref's every-token mask is an error
                if np.array_equal(have, m._every_token_bool_mask()):
                    row.known_differences += 1
                else:
                    row.mismatches.append(f"{row.name}: cached mask != every-token mask at token {step} "
                                          f"of {text[:60]!r}")
                    break
            if t is None:
                break
            ok, xok = m.accept_token(t), xm.accept_token(t)
            if ok != xok or not ok:
                row.mismatches.append(f"{row.name}: accept_token({t}) xg2ref {ok}, xgrammar {xok}")
                break


def _median_time(build, repeats: int = COMPILE_REPEATS):
    """(result, median milliseconds) of `repeats` calls of `build` (the machines are noisy)."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = build()
        times.append((time.perf_counter() - start) * 1e3)
    return result, float(np.median(times))


def format_table(rows: list) -> str:
    head = (f"{'workload':<16}{'tokens':>7}  {'p50 µs':>16}  {'ratio':>5}  {'p99 µs':>16}  {'ratio':>5}  "
            f"{'compile ms':>18}  {'ratio':>5}  {'memory KiB':>16}  {'ratio':>5}  acc / rej / unc")
    lines = [head, "-" * len(head)]
    for r in rows:
        p50, x50 = _pct(r.ours_us, 50), _pct(r.theirs_us, 50)
        p99, x99 = _pct(r.ours_us, 99), _pct(r.theirs_us, 99)
        lines.append(
            f"{r.name:<16}{r.tokens:>7}  {p50:>7.1f} / {x50:>6.1f}  {p50 / x50:>5.1f}  {p99:>7.1f} / {x99:>6.1f}  "
            f"{p99 / x99:>5.1f}  {r.ours_compile_ms:>8.1f} / {r.theirs_compile_ms:>7.1f}  "
            f"{r.ours_compile_ms / r.theirs_compile_ms:>5.1f}  {r.ours_memory / 1024:>7.0f} / {r.theirs_memory / 1024:>6.0f}  "
            f"{r.ours_memory / max(r.theirs_memory, 1):>5.2f}  {r.counts[0]:,} / {r.counts[1]:,} / {r.counts[2]:,}")
    lines.append("(each cell: xg2ref / xgrammar 0.2.8; ratio = xg2ref ÷ xgrammar; one thread, same process)")
    for r in rows:
        if r.known_differences:
            lines.append(f"{r.name}: xgrammar's mask differs at {r.known_differences} steps where xg2ref's equals "
                         "its every-token mask (a documented xgrammar inexactness; `xg2ref diff` asks the oracle)")
    return "\n".join(lines)


def bench_mask(vocab: str = "llama3", data_dir: str = DEFAULT_DATA, cases: Optional[list] = None,
               limit: Optional[int] = None, out=print) -> int:
    """Run the mask benchmark and print its table. Returns the exit status (1 on a mismatch)."""
    from ..diff.checks import quicktok_encoder
    from ...oracle.engines import import_xgrammar
    from ...suite import ebnf_case_names, load_cases

    xgr = import_xgrammar()
    info = TokenizerInfo.from_quicktok(vocab)
    xinfo = _xgrammar_info(xgr, info)
    encode = quicktok_encoder(vocab)
    start = time.perf_counter()
    warm = GrammarMatcher(GrammarCompiler(info, cache_enabled=False).compile_builtin_json_grammar())
    warm.fill_next_token_bitmask(np.zeros(get_bitmask_shape(1, info.vocab_size), dtype=np.int32))
    out(f"JIT warm-up (Numba compile or cache load of every kernel, one JSON compile and mask): "
        f"{time.perf_counter() - start:.2f} s")
    rows = []
    if cases is None or "json" in cases:
        row = Row("json (jme)")
        run_workload(row, None, "root", json_mode_eval_texts(data_dir, limit), info, xinfo, xgr, encode)
        rows.append(row)
    for case in load_cases([c for c in (cases or ebnf_case_names()) if c != "json"]):
        row = Row(case.name)
        run_workload(row, case.text, case.root, list(case.samples), info, xinfo, xgr, encode)
        rows.append(row)
    out(format_table(rows))
    bad = [m for r in rows for m in r.mismatches]
    for m in bad[:20]:
        out("MISMATCH " + m)
    return 1 if bad else 0
