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
    xg1  the real XGrammar-1, xgrammar 0.1.19, in its side environment (`make peers`), when it exists,
         given the EBNF of the grammar P and E compile (its own schema converter writes another
         language: no \\r in its whitespace); its masks along the walk are compared with P's (a
         difference is counted, not fatal: specs/08 lists what they come from)

P against E isolates the parser: same front end, same machines, same entries. What still differs
inside the pair is how uncertain tokens are filtered at build time (P: Alg. 2; E: CONTEXT,
ACCEPT-CTX, LOOKAHEAD), so the summed uncertain tokens are recorded for both.

Per schema: each engine's compile time (a `--timeout` counts as a failure; a refusal of P is
counted by reason), entries and uncertain tokens; then a seeded random walk over E's masks (the
walk of `xg2ref bench jsonschemabench`) makes an instance, checked with `jsonschema` (the schema's
own draft), and the walk is replayed through P and E (and xg1) with the time of every mask and
the masks compared at every step (a difference between P and E makes the command exit 1). One
JSON line per schema goes to `--results`, so a stopped run goes on where it left off; `--jobs`
worker processes share the schemas.

Reported: the share of schemas each of P and E wins (compile time; mean time per mask), compile
time and per-token p50 / p99 for every engine, the refusals and limits by reason, the instances'
validity, and a CDF of compile times and of per-token times (PNG).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from typing import Callable, Optional

import numpy as np

from .jsonschemabench import (SUBSETS, TimedOut, load_schemas, open_results, random_walk, time_limit, validation_error,
                              walk_tables)
from .workers import worker_records

DEFAULT_OUT = os.path.join("benchmarks", "earley_vs_pda")
ENGINES = ("P", "E", "E+", "xgrammar", "xg1")


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

    def __init__(self, vocab: str, timeout: Optional[float], seed: int, peer: bool = True):
        from ...oracle.engines import import_xgrammar
        from ...tokenizer_info import TokenizerInfo
        from .mask import _xgrammar_info
        from .xg1_peer import peer_available

        self.info = TokenizerInfo.from_quicktok(vocab)
        self.timeout, self.seed = timeout, seed
        self.xgr = import_xgrammar()
        self.xinfo = _xgrammar_info(self.xgr, self.info)
        self.tables = walk_tables(self.info)
        self.decoded = self.info.decoded_vocab
        self.use_peer, self.peer = peer and peer_available(), None
        self.note = None if self.use_peer else "xgrammar 0.1.19 not set up (`make peers`): its column stays empty"
        # warm-up outside the measured set: Numba's kernels compiled or loaded from its cache
        self.run("warm-up", "warm-up", {"type": "object", "properties": {"a": {"type": "array", "items": {
            "type": "number"}}, "b": {"enum": ["x", "y"]}}, "required": ["a"]})

    def close(self) -> None:
        if self.peer is not None:
            self.peer.close()
            self.peer = None

    def compile(self, engine: str, schema):
        from ...baselines.pda import PDACompiler
        from ...compiler import GrammarCompiler, compile_ir_grammar
        from ...grammar.grammar import Grammar

        if engine == "xgrammar":
            return self.xgr.GrammarCompiler(self.xinfo, max_threads=1, cache_enabled=False).compile_json_schema(
                json.dumps(schema))
        if engine == "xg1":
            if self.peer is None:
                from .xg1_peer import XG1Peer

                self.peer = XG1Peer(self.info)
            self.peer.compile("ebnf", str(Grammar.from_json_schema(schema)))
            return self.peer
        grammar = Grammar.from_json_schema(schema)
        if engine == "P":
            return PDACompiler(self.info, inline="xg2ref").compile_grammar(grammar)
        if engine == "E":
            return compile_ir_grammar(grammar, self.info, repetition_threshold=None, share_entries=False)
        return GrammarCompiler(self.info, jit=False, cross_grammar_cache=False, cache_enabled=False).compile_grammar(
            grammar)

    def run(self, subset: str, uid: str, schema) -> dict:
        from ...baselines.pda import UnsupportedByBaseline
        from ...exceptions import GrammarLimitError

        rec = dict(subset=subset, id=uid, schema_bytes=len(json.dumps(schema)))
        compiled = {}
        for engine in ENGINES:
            if engine == "xg1" and not self.use_peer:
                continue
            start = time.perf_counter()
            try:
                with time_limit(self.timeout):
                    compiled[engine] = self.compile(engine, schema)
                rec[engine] = dict(ms=(time.perf_counter() - start) * 1e3)
            except TimedOut:
                rec[engine] = dict(failed="timeout")
                if engine == "xg1":  # the side process is still compiling: start a fresh one
                    self.peer.proc.kill()
                    self.peer = None
            except UnsupportedByBaseline as err:
                rec[engine] = dict(failed="refused: " + str(err).split(":")[0])
            except GrammarLimitError:
                rec[engine] = dict(failed="limit")
            except Exception as err:  # a front-end refusal, counted by class (xg1's by its message's end)
                why = str(err).rsplit(": ", 1)[-1].strip()[:80] if engine == "xg1" else type(err).__name__
                rec[engine] = dict(failed=f"error: {why}")
        for engine in ("P", "E"):
            if engine in compiled:
                s = compiled[engine].mask_cache.stats
                rec[engine].update(entries=s.entries, uncertain=s.uncertain)
        if "P" in compiled and "E" in compiled:
            self._walk(rec, schema, compiled)
        return rec

    def _walk(self, rec: dict, schema, compiled: dict) -> None:
        """One seeded walk over E's masks, its instance validated, replayed through every engine
        that compiled: `fill_next_token_bitmask` timed, the words compared with E's (P and E+
        must agree: a difference is a mismatch; xgrammar's and xg1's are counted)."""
        from ...baselines.pda import PDAMatcher
        from ...bitmask import allocate_token_bitmask
        from ...exceptions import GrammarLimitError
        from ...matcher import GrammarMatcher

        walker = _Recorder(GrammarMatcher(compiled["E"]))
        stops, closers, lengths = self.tables
        text = random_walk(walker, self.decoded, stops, random.Random(f"{self.seed}/{rec['id']}"), closers, lengths)
        if text is not None:
            error = validation_error(schema, text)
            rec["valid"] = error is None
            if error is not None:
                rec["why"] = error[:200]
        tokens = walker.tokens
        n = self.info.vocab_size
        matchers = dict(E=GrammarMatcher(compiled["E"]), P=PDAMatcher(compiled["P"]))
        if "E+" in compiled:
            matchers["E+"] = GrammarMatcher(compiled["E+"])
        if "xgrammar" in compiled:
            matchers["xgrammar"] = self.xgr.GrammarMatcher(compiled["xgrammar"])
        rows = {e: (self.xgr.allocate_token_bitmask(1, n) if e == "xgrammar" else allocate_token_bitmask(1, n))
                for e in matchers}
        times: dict = {e: [] for e in matchers}
        differs: dict = {}
        reference = []  # E's words per step, for xg1
        try:
            with time_limit(self.timeout):
                for k in range(len(tokens) + 1):
                    words = {}
                    for engine, m in matchers.items():
                        t0 = time.perf_counter()
                        m.fill_next_token_bitmask(rows[engine])
                        times[engine].append((time.perf_counter() - t0) * 1e6)
                        row = rows[engine]
                        words[engine] = np.array(row.numpy()[0] if hasattr(row, "numpy") else row[0])
                    reference.append(words["E"])
                    for engine, w in words.items():
                        if engine != "E" and engine not in differs and not np.array_equal(w, words["E"]):
                            differs[engine] = k
                    if "P" in differs or "E+" in differs:
                        rec["mismatch"] = k
                        break
                    if k < len(tokens):
                        for m in matchers.values():
                            m.accept_token(tokens[k])
        except (TimedOut, GrammarLimitError) as err:
            rec["walk_stopped"] = type(err).__name__
        for engine, us in times.items():
            rec[engine]["mask_us"] = [round(u, 1) for u in us]
            if engine not in ("E", "P", "E+"):
                rec[engine]["differs_at"] = differs.get(engine)
        rec["P"]["peak_stacks"] = matchers["P"].stack.peak_stacks
        if "xg1" in compiled:
            us, masks = compiled["xg1"].masks(tokens[:len(reference) - 1] if reference else [])
            rec["xg1"]["mask_us"] = [round(u, 1) for u in us]
            packed = [np.packbits(m.view(np.uint8), bitorder="little") for m in masks]
            want = [w.view(np.uint8)[:len(p)] for w, p in zip(reference, packed)]
            rec["xg1"]["differs_at"] = next((k for k, (a, b) in enumerate(zip(packed, want))
                                             if not np.array_equal(a, b)), None)
            if rec["xg1"]["differs_at"] is None and len(masks) < len(reference):
                rec["xg1"]["differs_at"] = len(masks)  # it rejected a token of the walk


def bench_earley_vs_pda(data_dir: str, sample: Optional[int] = 20, subsets=None, vocab: str = "llama3", seed: int = 0,
                        timeout: Optional[float] = 60.0, results: Optional[str] = None, jobs: int = 1,
                        out_dir: Optional[str] = DEFAULT_OUT, progress: bool = True, peer: bool = True,
                        out: Callable[[str], None] = print) -> int:
    """Run the comparison (module docstring) on `sample` seeded schemas per subset (None: all)
    in `jobs` processes; print its table and write the CDFs. Returns 1 when P's and E's masks
    differ somewhere."""
    from ...util import read_json_lines
    from ..diff.report import ProgressBar

    schemas = load_schemas(data_dir, subsets or SUBSETS, sample, seed)
    wanted = {(s, uid) for s, rows in schemas.items() for uid, _ in rows}
    # (a line cut short by a stopped run is skipped: that schema runs again)
    done = {(r["subset"], r["id"]): r for r in read_json_lines(results) if (r["subset"], r["id"]) in wanted}
    todo = [(s, uid, schema) for s, rows in schemas.items() for uid, schema in rows if (s, uid) not in done]
    random.Random(seed).shuffle(todo)  # a stopped run is still a fair sample of every subset
    records = list(done.values())
    bar = ProgressBar(len(wanted), enabled=progress)
    bar.update(len(records))
    sink = open_results(results)
    try:
        for rec in worker_records(_Worker, (vocab, timeout, seed, peer), todo, jobs, out):
            records.append(rec)
            if sink:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
            bar.update(len(records), f"{rec['subset']} {rec['id']}")
    finally:
        if sink:
            sink.close()
        bar.close()
    out(format_table(records))
    if out_dir:
        plot(records, out_dir)
        out(f"wrote {out_dir}/fig10.png")
    return 1 if any("mismatch" in r for r in records) else 0


def format_table(records: list) -> str:
    engines = [e for e in ENGINES if any(e in r for r in records)]
    lines = [f"{len(records)} schemas"]
    both = [r for r in records if "ms" in r["P"] and "ms" in r["E"]]
    if both:
        wins = sum(r["E"]["ms"] < r["P"]["ms"] for r in both)
        lines.append(f"compiled by both P and E: {len(both)}; E compiles faster on {wins} ({wins / len(both):.0%}), "
                     f"P on {len(both) - wins}")
        walked = [r for r in both if r["P"].get("mask_us") and r["E"].get("mask_us")]
        if walked:
            faster = sum(np.mean(r["E"]["mask_us"]) < np.mean(r["P"]["mask_us"]) for r in walked)
            lines.append(f"walked by both: {len(walked)}; E's mean time per mask is lower on {faster} "
                         f"({faster / len(walked):.0%}), P's on {len(walked) - faster}")
    head = (f"{'engine':<10}{'compiled':>9}  {'compile p50 ms':>14}  {'p90':>9}  {'max':>9}  {'÷ xgrammar':>10}  "
            f"{'mask p50 µs':>11}  {'p99':>9}  {'÷ xgrammar':>10}")
    lines += [head, "-" * len(head)]
    for e in engines:
        ms = [r[e]["ms"] for r in records if "ms" in r.get(e, {})]
        us = [u for r in records for u in r.get(e, {}).get("mask_us", [])]
        pct = (lambda v, q: f"{np.percentile(v, q):.1f}" if v else "-")
        lines.append(f"{e:<10}{len(ms):>9}  {pct(ms, 50):>14}  {pct(ms, 90):>9}  {pct(ms, 100):>9}  "
                     f"{_ratio(records, e, 'ms'):>10}  {pct(us, 50):>11}  {pct(us, 99):>9}  "
                     f"{_ratio(records, e, 'mask_us'):>10}")
    lines.append("÷ xgrammar: the median over schemas of the engine's compile time, or of its mean time per mask "
                 "along the walk, over xgrammar 0.2.8's, both measured in this process")
    failures = Counter((e, r[e]["failed"]) for r in records for e in engines if "failed" in r.get(e, {}))
    for (e, why), n in sorted(failures.items()):
        lines.append(f"  {e} failed: {why} x{n}")
    stopped = Counter(r["walk_stopped"] for r in records if "walk_stopped" in r)
    for why, n in sorted(stopped.items()):
        lines.append(f"  walk replay stopped: {why} x{n}")
    unc = [(r["P"]["uncertain"], r["E"]["uncertain"]) for r in both]
    if unc:
        lines.append(f"uncertain tokens summed over the entries: P {sum(u[0] for u in unc):,}, "
                     f"E {sum(u[1] for u in unc):,}")
    finished = [r for r in records if "valid" in r]
    if finished:
        valid = sum(r["valid"] for r in finished)
        lines.append(f"instances: {len(finished)} walks finished, {valid} valid under jsonschema")
    bad = [r for r in records if "mismatch" in r]
    lines.append(f"masks of P and E compared along the walks: {len(bad)} schemas differ" if bad
                 else "masks of P and E equal at every step of every walk")
    x = [r for r in records if "differs_at" in r.get("xgrammar", {})]
    if x:
        differ = sum(r["xgrammar"]["differs_at"] is not None for r in x)
        lines.append(f"xgrammar 0.2.8's masks against E's: equal along {len(x) - differ} of {len(x)} walks "
                     f"(specs/01 lists its inexactness)")
    peer = [r for r in records if "mask_us" in r.get("xg1", {})]
    if peer:
        differ = sum(r["xg1"]["differs_at"] is not None for r in peer)
        lines.append(f"xgrammar 0.1.19's masks against P's: equal along {len(peer) - differ} of {len(peer)} walks "
                     f"(the same EBNF; specs/08 §4 lists the differences)")
    return "\n".join(lines)


def _ratio(records: list, engine: str, key: str) -> str:
    """The median over schemas of engine / xgrammar 0.2.8: compile ms (`key` "ms") or mean µs per
    mask ("mask_us"); "-" when no schema has both."""
    values = []
    for r in records:
        a, b = r.get(engine, {}).get(key), r.get("xgrammar", {}).get(key)
        if a and b:
            values.append(np.mean(a) / np.mean(b))
    return f"{np.median(values):.2f}x" if values else "-"


def plot(records: list, out_dir: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for e in ENGINES:
        ms = np.sort([r[e]["ms"] for r in records if "ms" in r.get(e, {})])
        if len(ms):
            a.plot(ms, np.arange(1, len(ms) + 1) / len(records), label=e)
        us = np.sort([u for r in records for u in r.get(e, {}).get("mask_us", [])])
        if len(us):
            b.plot(us, np.arange(1, len(us) + 1) / len(us), label=e)
    a.set_xscale("log"), a.set_xlabel("compile time, every entry (ms)"), a.set_ylabel("share of schemas")
    b.set_xscale("log"), b.set_xlabel("time per mask (µs)"), b.set_ylabel("share of masks")
    a.legend(), b.legend()
    fig.suptitle("Earley (E, E+, xgrammar) against the pushdown automaton (P) on JSONSchemaBench")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "fig10.png"), dpi=120)
