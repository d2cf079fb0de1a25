"""`xg2ref bench wgrammar`: WGrammar's overhead breakdown (its Fig. 6) and the components of its
Table 1 (WGrammar §4; ../shared/SEED_SYSTEMS.md §4.3), on json-mode-eval and the synthetic
Outline-Generation and Reference-Lookup stand-ins (wgrammar_workloads.py).

Engines, one request after another, one thread, each keeping what it keeps across requests:

    wgrammar          the template factory (built once, offline: timed apart), per request
                      `Factory.instantiate` + `compile_program`; OperatorMatcher with the global cache
    wgrammar-online   the request's constraint as a regex, translated at request time (compile_regex)
    xg2ref            GrammarCompiler(info) with its defaults: the JSON schema, or the written-out EBNF
    xg2ref-linked     the same compiler, the request as a structural tag whose repeated parts are
                      sub-grammars linked in (XGrammar-2's answer to the same reuse; `structural_tag`)
    xgrammar          0.2.8, GrammarCompiler(max_threads=1), the same constraint
    llguidance        1.9.1, the schema, or the EBNF through its GBNF converter
    pda               XGrammar-1's pushdown automaton (xg2ref/baselines/pda), defaults; the first
                      `slow` requests of each workload (it compiles in seconds)

Measured per request (WGrammar Fig. 6): compile or instantiate (ms), state tracking (`accept_token`,
µs per token), mask creation (`fill_next_token_bitmask`, µs per token); and Table 1's components:
time to first mask (compile + first fill) and accept + fill per token. WGrammar's engines are fed
the text's WGrammar-compatible tokenization, the byte-level engines its canonical one (quicktok),
each stop token last. Checked first: every engine accepts every token of its tokenization and ends
complete, and on W2 and W3 (one language for all) xg2ref's masks, plain and linked, equal xgrammar's
at every step; a request where a check fails is listed and left out of the times. (On W1 each
engine's own JSON Schema converter reads the schema, and they differ where xgrammar's formats are
looser: xgrammar lets "2023-06-31" through a "date", xg2ref does not.) Each engine first compiles
one small constraint, untimed, so that loading its library is not a request's. Also: the global
cache's hit rate as requests accumulate, and the price of token-level semantics (the share of
canonical tokenizations WGrammar's program takes, the token-count ratio, the online path's
coverage).

How it differs from WGrammar's setting: CPU-side components only (no model, no vLLM, no overlap
with the GPU), synthetic W2 and W3, and our reading of WGrammar's operators; masks are token-level
on one side and byte-level on the other, so only times are compared.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from . import wgrammar_workloads as W
from .wgrammar_report import ENGINES, WORKLOADS, report

@dataclass
class Run:
    engine: str
    workload: str
    label: str
    compile_ms: float = float("nan")
    first_ms: float = float("nan")
    accept_us: list = field(default_factory=list)
    fill_us: list = field(default_factory=list)
    error: str = ""
    hits: int = 0
    misses: int = 0


class _Engines:
    """Each engine's compiler, kept across requests, and its matcher calls."""

    def __init__(self, info, engines: tuple):
        self.info, self.engines = info, engines
        self.words = (info.vocab_size + 31) // 32
        self.xgr = self.llg = None
        if "xgrammar" in engines:
            from ...oracle.engines import import_xgrammar

            self.xgr = import_xgrammar()
            xinfo = self.xgr.TokenizerInfo(info.decoded_vocab, self.xgr.VocabType.RAW, vocab_size=info.vocab_size,
                                           stop_token_ids=list(info.stop_token_ids))
            self.xcompiler = self.xgr.GrammarCompiler(xinfo, max_threads=1)
        if "xg2ref" in engines or "xg2ref-linked" in engines:
            from ...compiler import GrammarCompiler

            self.compiler = GrammarCompiler(info)
        if "llguidance" in engines:
            import llguidance
            import llguidance.numpy as lnp

            from ...oracle.other_engines import LLGuidanceEngine
            from ..diff.checks import quicktok_encoder

            self.llg, self.lnp = llguidance, lnp
            self.llg_engine = LLGuidanceEngine.from_tokenizer_info(info, encoder=quicktok_encoder(info.name))
        if "pda" in engines:
            from ...baselines.pda import PDACompiler

            self.pda = PDACompiler(info)

    def matcher(self, engine: str, inst: "W.Instance"):
        """(matcher, fill(bitmask), bitmask) with the constraint compiled (the caller times it)."""
        if engine == "xg2ref-linked":
            from ...matcher import GrammarMatcher

            m = GrammarMatcher(self.compiler.compile_structural_tag(W.structural_tag(inst)))
            return m, m.fill_next_token_bitmask, np.zeros((1, self.words), dtype=np.int32)
        if engine in ("xg2ref", "pda"):
            from ...baselines.pda import PDAMatcher
            from ...matcher import GrammarMatcher

            compiler = self.compiler if engine == "xg2ref" else self.pda
            compiled = (compiler.compile_json_schema(json.dumps(inst.schema)) if inst.schema is not None
                        else compiler.compile_grammar(inst.ebnf))
            m = (GrammarMatcher if engine == "xg2ref" else PDAMatcher)(compiled)
            return m, m.fill_next_token_bitmask, np.zeros((1, self.words), dtype=np.int32)
        if engine == "xgrammar":
            compiled = (self.xcompiler.compile_json_schema(json.dumps(inst.schema)) if inst.schema is not None
                        else self.xcompiler.compile_grammar(inst.ebnf))
            m = self.xgr.GrammarMatcher(compiled)
            return m, m.fill_next_token_bitmask, self.xgr.allocate_token_bitmask(1, self.info.vocab_size)
        if engine == "llguidance":
            from llguidance.gbnf_to_lark import gbnf_to_lark

            cls = self.llg.LLMatcher
            grammar = (cls.grammar_from_json_schema(json.dumps(inst.schema)) if inst.schema is not None
                       else cls.grammar_from_lark(gbnf_to_lark(inst.ebnf)))
            m = _LLG(cls(self.llg_engine.tokenizer, grammar, log_level=0), self.lnp, self.llg_engine.stop_set)
            return m, m.fill_next_token_bitmask, self.lnp.allocate_token_bitmask(1, self.info.vocab_size)
        raise ValueError(f"unknown engine {engine!r}")


class _LLG:
    """llguidance's matcher with the calls the bench makes (a stop token: accepted iff complete)."""

    def __init__(self, matcher, lnp, stops):
        self.m, self.lnp, self.stops = matcher, lnp, stops
        if matcher.is_error():
            raise ValueError(f"llguidance rejects the grammar: {matcher.get_error()}")

    def accept_token(self, t: int) -> bool:
        if t in self.stops:
            return bool(self.m.is_accepting())
        return self.m.validate_tokens([t]) == 1 and self.m.consume_token(t)

    def fill_next_token_bitmask(self, bitmask) -> None:
        self.lnp.fill_next_token_bitmask(self.m, bitmask, 0)


def _words(bitmask) -> np.ndarray:
    return np.array(bitmask.numpy()[0] if hasattr(bitmask, "numpy") else bitmask[0])


def time_request(engines: _Engines, engine: str, inst, tokens: list, factory=None, keep_words: bool = False):
    """One request on one engine: a Run (and the masks, with `keep_words`)."""
    from ...baselines.wgrammar import GlobalMaskCache, OperatorMatcher, compile_program, compile_regex

    run, words = Run(engine, inst.workload, inst.label), []
    try:
        start = time.perf_counter()
        if engine == "wgrammar":
            m = OperatorMatcher(compile_program(factory.instantiate(inst.request), factory.sets))
        elif engine == "wgrammar-online":
            m = OperatorMatcher(compile_regex(inst.regex, engines.info))
        else:
            m, fill, bitmask = engines.matcher(engine, inst)
        compiled = time.perf_counter()
        if engine.startswith("wgrammar"):
            bitmask, fill = np.zeros((1, engines.words), dtype=np.int32), m.fill_next_token_bitmask
            cache = GlobalMaskCache.for_vocabulary(m.program.sets)
            hits, misses = cache.hits, cache.misses
        fill(bitmask)
        run.compile_ms, run.first_ms = (compiled - start) * 1e3, (time.perf_counter() - start) * 1e3
        if keep_words:
            words.append(_words(bitmask))
        for k, t in enumerate(tokens):
            a = time.perf_counter()
            ok = m.accept_token(t)
            b = time.perf_counter()
            if not ok:
                run.error = f"token {k} ({t}) refused"
                break
            run.accept_us.append((b - a) * 1e6)
            if k == len(tokens) - 1:  # the stop token: nothing to fill after it
                break
            fill(bitmask)
            run.fill_us.append((time.perf_counter() - b) * 1e6)
            if keep_words:
                words.append(_words(bitmask))
        if engine.startswith("wgrammar"):
            run.hits, run.misses = cache.hits - hits, cache.misses - misses
    except Exception as err:  # (a constraint an engine refuses: recorded, not timed)
        run.error = f"{type(err).__name__}: {str(err)[:120]}"
    return run, words


def bench_wgrammar(data_dir: str, vocab: str = "qwen3", requests: int = 100, json_limit: Optional[int] = None,
                   engines=ENGINES, workloads=WORKLOADS, slow: int = 5, results: Optional[str] = None,
                   plot: Optional[str] = None, progress: bool = True) -> int:
    """Run the bench (module docstring); print the tables; exit 1 when a check fails."""
    from ...baselines.wgrammar import GlobalMaskCache, OperatorMatcher, TokenSets, compile_regex
    from ...tokenizer_info import TokenizerInfo
    from ..diff.checks import quicktok_encoder

    info = TokenizerInfo.from_quicktok(vocab, vocab_size=151936 if vocab == "qwen3" else None)
    encode = quicktok_encoder(vocab)
    start = time.perf_counter()
    factories = W.factories(info)
    factory_s = time.perf_counter() - start
    sets = TokenSets.for_vocabulary(info)
    GlobalMaskCache.for_vocabulary(sets).clear()
    index, longest = W.token_index(sets), max(len(sets.info.token_bytes(int(t))) for t in sets.regular_ids)
    available = _Engines(info, tuple(e for e in engines if not e.startswith("wgrammar")))
    warm = W.Instance("warm-up", "warm-up", None, "", ebnf='root ::= "a" [0-9]*')
    for engine in engines:
        if not engine.startswith("wgrammar") and engine != "xg2ref-linked":
            available.matcher(engine, warm)
    runs, checks, price = [], [], {}
    for workload in workloads:
        instances = (W.json_mode_eval(data_dir, json_limit) if workload == "json"
                     else W.outline(requests) if workload == "outline" else W.lookup(requests))
        factory = factories[workload]
        W.complete(instances, factory)
        stats = price[workload] = {"instances": len(instances), "outside": [i.label for i in instances if i.request is None],
                                   "wg_untokenizable": [], "canonical_taken": 0, "token_ratio": [], "online_covered": 0}
        for n, inst in enumerate(instances):
            if progress:
                print(f"\r{workload} {n + 1}/{len(instances)}", end="", flush=True)
            if inst.request is None:
                continue
            canonical = (encode(inst.text.encode("utf-8")) or []) + [int(info.stop_token_ids[0])]
            program = OperatorMatcher(factory.compile(inst.request), use_cache=False)
            wg = W.wg_tokenize(program, inst.text.encode("utf-8"), index, longest)
            program.reset()
            stats["canonical_taken"] += all(program.accept_token(t) for t in canonical)
            if wg is None:
                stats["wg_untokenizable"].append(inst.label)
                continue
            stats["token_ratio"].append(len(wg) / len(canonical))
            try:
                online = W.wg_tokenize(OperatorMatcher(compile_regex(inst.regex, info), use_cache=False),
                                       inst.text.encode("utf-8"), index, longest)
            except Exception:
                online = None
            stats["online_covered"] += online is not None
            masks = {}
            for engine in engines:
                if engine == "pda" and n >= slow:
                    continue
                tokens = wg if engine == "wgrammar" else online if engine == "wgrammar-online" else canonical
                if tokens is None:
                    continue
                run, words = time_request(available, engine, inst, tokens, factory,
                                          keep_words=engine in ("xg2ref", "xg2ref-linked", "xgrammar")
                                          and workload != "json")
                runs.append(run)
                if run.error:
                    checks.append(f"{workload} {inst.label} {engine}: {run.error}")
                masks[engine] = words
            for mine in ("xg2ref", "xg2ref-linked"):
                if workload != "json" and masks.get(mine) and masks.get("xgrammar"):
                    differ = [k for k, (a, b) in enumerate(zip(masks[mine], masks["xgrammar"]))
                              if not np.array_equal(a, b)]
                    if differ:
                        checks.append(f"{workload} {inst.label}: {mine}'s and xgrammar's masks differ at step {differ[0]}")
        if progress:
            print()
    return report(runs, checks, price, factory_s, vocab, results=results, plot=plot)
