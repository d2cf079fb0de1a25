"""`xg2ref bench earley-vs-pda`: the comparison XGrammar-2 §4.4 describes for its Figure 10, the
Earley parser against a pushdown-automaton parser, both compiling JSON schemas ahead of time, on
JSONSchemaBench. The figure itself is lost from the paper; this is our reading of its text.

Engines, every entry built at compile time, one thread, one process:

    P    XGrammar-1's pushdown automaton (xg2ref/baselines/pda/) over the Earley engine's own
         machines (stage "dfa", the default inlining), its cache with one entry per scannable state
    E    xg2ref's Earley engine with the same parity: no JIT, no cross-grammar cache, repetitions
         unrolled, one entry per scannable state (no state classes)
    E+   xg2ref's Earley engine ahead of time as XGrammar-2 ships it: state classes and
         repetition compression on
    xgrammar 0.2.8 (Earley, ahead of time)

P against E isolates the parser: same front end, same machines, same entries. What still differs
inside the pair is how uncertain tokens are filtered at build time (P: Alg. 2; E: CONTEXT,
ACCEPT-CTX, LOOKAHEAD), so the summed uncertain tokens are recorded for both.

Per schema: each engine's compile time (a `--timeout` counts as a failure; a refusal of P is
counted by reason), entries and uncertain tokens; then a seeded random walk over E's masks (the
walk of `xg2ref bench jsonschemabench`), replayed through P and E with the time of every mask and
the masks compared at every step (a difference makes the command exit 1). One JSON line per
schema goes to `--results`, so a stopped run goes on where it left off.

Reported: the share of schemas each of P and E compiles faster, compile time and per-token
p50 / p99 for every engine, the refusals and limits by reason, and a CDF of compile times and of
per-token times (PNG).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from typing import Callable, Optional

import numpy as np

from .jsonschemabench import SUBSETS, TimedOut, load_schemas, random_walk, time_limit, walk_tables

DEFAULT_OUT = os.path.join("benchmarks", "earley_vs_pda")
ENGINES = ("P", "E", "E+", "xgrammar")


class _Recorder:
    """A matcher that remembers the tokens it accepted (to replay a walk)."""

    def __init__(self, matcher):
        self.matcher, self.tokens = matcher, []

    def compute_bool_mask(self):
        return self.matcher.compute_bool_mask()

    def accept_token(self, token: int) -> bool:
        ok = self.matcher.accept_token(token)
        if ok:
            self.tokens.append(token)
        return ok


class _Worker:
    """The engines over one vocabulary (one per process)."""

    def __init__(self, vocab: str, timeout: Optional[float], seed: int):
        from ...oracle.engines import import_xgrammar
        from ...tokenizer_info import TokenizerInfo
        from .mask import _xgrammar_info

        self.info = TokenizerInfo.from_quicktok(vocab)
        self.timeout, self.seed = timeout, seed
        self.xgr = import_xgrammar()
        self.xinfo = _xgrammar_info(self.xgr, self.info)
        self.tables = walk_tables(self.info)
        v = self.info.vocab_arrays()
        self.decoded = [v.token_bytes[v.token_offsets[t]:v.token_offsets[t + 1]].tobytes()
                        for t in range(self.info.vocab_size)]
        # warm-up outside the measured set: Numba's kernels compiled or loaded from its cache
        self.run("warm-up", "warm-up", {"type": "object", "properties": {"a": {"type": "array", "items": {
            "type": "number"}}, "b": {"enum": ["x", "y"]}}, "required": ["a"]})

    def compile(self, engine: str, schema):
        from ...baselines.pda import PDACompiler
        from ...compiler import GrammarCompiler, compile_ir_grammar
        from ...grammar.grammar import Grammar

        if engine == "xgrammar":
            return self.xgr.GrammarCompiler(self.xinfo, max_threads=1, cache_enabled=False).compile_json_schema(
                json.dumps(schema))
        grammar = Grammar.from_json_schema(schema)
        if engine == "P":
            return PDACompiler(self.info, inline="xg2ref").compile_grammar(grammar)
        if engine == "E":
            return compile_ir_grammar(grammar, self.info, repetition_threshold=None, share_entries=False)
        return GrammarCompiler(self.info, jit=False, cross_grammar_cache=False, cache_enabled=False).compile_grammar(
            grammar)

    def run(self, subset: str, uid: str, schema) -> dict:
        from ...baselines.pda import PDAMatcher, UnsupportedByBaseline
        from ...exceptions import GrammarLimitError
        from ...matcher import GrammarMatcher

        rec = dict(subset=subset, id=uid, schema_bytes=len(json.dumps(schema)))
        compiled = {}
        for engine in ENGINES:
            start = time.perf_counter()
            try:
                with time_limit(self.timeout):
                    compiled[engine] = self.compile(engine, schema)
                rec[engine] = dict(ms=(time.perf_counter() - start) * 1e3)
            except TimedOut:
                rec[engine] = dict(failed="timeout")
            except UnsupportedByBaseline as err:
                rec[engine] = dict(failed="refused: " + str(err).split(":")[0])
            except GrammarLimitError:
                rec[engine] = dict(failed="limit")
            except Exception as err:  # a front-end refusal, counted by class
                rec[engine] = dict(failed=f"error: {type(err).__name__}")
        if "P" in compiled:
            s = compiled["P"].mask_cache.stats
            rec["P"].update(entries=s.entries, uncertain=s.uncertain)
        if "E" in compiled:
            s = compiled["E"].mask_cache.stats
            rec["E"].update(entries=s.entries, uncertain=s.uncertain)
        if "P" not in compiled or "E" not in compiled:
            return rec
        walker = _Recorder(GrammarMatcher(compiled["E"]))
        stops, closers, lengths = self.tables
        random_walk(walker, self.decoded, stops, random.Random(f"{self.seed}/{uid}"), closers, lengths)
        times: dict = {"P": [], "E": []}
        matchers = dict(P=PDAMatcher(compiled["P"]), E=GrammarMatcher(compiled["E"]))
        try:
            with time_limit(self.timeout):
                for k in range(len(walker.tokens) + 1):
                    masks = {}
                    for engine, m in matchers.items():
                        t0 = time.perf_counter()
                        masks[engine] = m.compute_bool_mask()
                        times[engine].append((time.perf_counter() - t0) * 1e6)
                    if not np.array_equal(masks["P"], masks["E"]):
                        rec["mismatch"] = k
                        break
                    if k < len(walker.tokens):
                        for m in matchers.values():
                            m.accept_token(walker.tokens[k])
        except (TimedOut, GrammarLimitError) as err:
            rec["walk_stopped"] = type(err).__name__
        rec["P"]["mask_us"], rec["E"]["mask_us"] = times["P"], times["E"]
        rec["P"]["peak_stacks"] = matchers["P"].stack.peak_stacks
        return rec


def bench_earley_vs_pda(data_dir: str, sample: Optional[int] = 20, subsets=None, vocab: str = "llama3", seed: int = 0,
                        timeout: Optional[float] = 60.0, results: Optional[str] = None,
                        out_dir: Optional[str] = DEFAULT_OUT, out: Callable[[str], None] = print) -> int:
    """Run the comparison (module docstring) on `sample` seeded schemas per subset (None: all);
    print its table and write the CDFs. Returns 1 when P's and E's masks differ somewhere."""
    schemas = load_schemas(data_dir, subsets or SUBSETS, sample, seed)
    done = {}
    if results and os.path.exists(results):
        with open(results, encoding="utf-8") as f:
            done = {(r["subset"], r["id"]): r for r in map(json.loads, f) if r}
    jobs = [(s, uid, schema) for s, rows in schemas.items() for uid, schema in rows if (s, uid) not in done]
    records = list(done.values())
    worker = _Worker(vocab, timeout, seed) if jobs else None
    sink = open(results, "a", encoding="utf-8") if results else None
    try:
        for n, job in enumerate(jobs):
            rec = worker.run(*job)
            records.append(rec)
            if sink:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
            out(f"[{n + 1}/{len(jobs)}] {job[0]} {job[1]}: " + ", ".join(
                f"{e} {rec[e]['ms']:.0f} ms" if "ms" in rec[e] else f"{e} {rec[e]['failed']}" for e in ENGINES))
    finally:
        if sink:
            sink.close()
    out(format_table(records))
    if out_dir:
        plot(records, out_dir)
        out(f"wrote {out_dir}/fig10.png")
    return 1 if any("mismatch" in r for r in records) else 0


def format_table(records: list) -> str:
    lines = [f"{len(records)} schemas"]
    both = [r for r in records if "ms" in r["P"] and "ms" in r["E"]]
    if both:
        wins = sum(r["E"]["ms"] < r["P"]["ms"] for r in both)
        lines.append(f"compiled by both P and E: {len(both)}; E compiles faster on {wins} ({wins / len(both):.0%}), "
                     f"P on {len(both) - wins}")
    head = f"{'engine':<10}{'compiled':>9}  {'compile p50 ms':>14}  {'p90':>9}  {'max':>9}  {'mask p50 µs':>11}  {'p99':>9}"
    lines += [head, "-" * len(head)]
    for e in ENGINES:
        ms = [r[e]["ms"] for r in records if "ms" in r[e]]
        us = [u for r in records for u in r[e].get("mask_us", [])]
        pct = (lambda v, q: f"{np.percentile(v, q):.1f}" if v else "-")
        lines.append(f"{e:<10}{len(ms):>9}  {pct(ms, 50):>14}  {pct(ms, 90):>9}  {pct(ms, 100):>9}  "
                     f"{pct(us, 50):>11}  {pct(us, 99):>9}")
    failures = Counter((e, r[e]["failed"]) for r in records for e in ENGINES if "failed" in r[e])
    for (e, why), n in sorted(failures.items()):
        lines.append(f"  {e} failed: {why} x{n}")
    unc = [(r["P"]["uncertain"], r["E"]["uncertain"]) for r in both]
    if unc:
        lines.append(f"uncertain tokens summed over the entries: P {sum(u[0] for u in unc):,}, "
                     f"E {sum(u[1] for u in unc):,}")
    bad = [r for r in records if "mismatch" in r]
    lines.append(f"masks of P and E compared along the walks: {len(bad)} schemas differ" if bad
                 else "masks of P and E equal at every step of every walk")
    return "\n".join(lines)


def plot(records: list, out_dir: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for e in ENGINES:
        ms = np.sort([r[e]["ms"] for r in records if "ms" in r[e]])
        if len(ms):
            a.plot(ms, np.arange(1, len(ms) + 1) / len(records), label=e)
        us = np.sort([u for r in records for u in r[e].get("mask_us", [])])
        if len(us):
            b.plot(us, np.arange(1, len(us) + 1) / len(us), label=e)
    a.set_xscale("log"), a.set_xlabel("compile time, every entry (ms)"), a.set_ylabel("share of schemas")
    b.set_xscale("log"), b.set_xlabel("time per mask (µs)"), b.set_ylabel("share of masks")
    a.legend(), b.legend()
    fig.suptitle("Earley (E, E+, xgrammar) against the pushdown automaton (P) on JSONSchemaBench")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "fig10.png"), dpi=120)
