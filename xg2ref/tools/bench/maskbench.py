"""`xg2ref bench maskbench`: XGrammar-2 App. E, Figure 11 ("most JSON Schemas within 1 ms"):
compile time, time to first mask and time between masks on JSON schemas, for xg2ref, xgrammar
0.2.8, llguidance 1.9.1, outlines-core 0.2.14 and XGrammar-1's pushdown automaton
(xg2ref/baselines/pda), as a user meets them (`GrammarCompiler(info)` and nothing else; each
engine's defaults).

The sample: `--sample N` schemas per JSONSchemaBench subset (seeded; `all`: the 9,557), and N
json-mode-eval items. An instance is a JSON text the schema accepts, tokenized with the
vocabulary's own encoder: the gold completion of a json-mode-eval item, or for a JSONSchemaBench
schema a seeded random walk over xg2ref's masks (`bench_jsonschema.random_walk`) that `jsonschema`
validates (schemas without one get their compile and first mask only).

Correctness first, nothing timed: along each instance, xg2ref's mask and xgrammar's are compared
at every step (fresh compilers, caches off). A step that differs is *documented* when it is
specs/05's difference 3 or 8 by its tokens (every token only xg2ref allows holds a backslash,
every token only xgrammar allows a byte below 0x20; or after `\\u` xgrammar alone takes a lone
surrogate), or *attributed* when the schema uses a keyword of another difference specs/05 lists
(`pattern`; `properties` without `type`; number bounds; `patternProperties`, `propertyNames`,
`enum`, `const`, `multipleOf`; `format`; `oneOf`, `anyOf`); any other is
*undocumented*, printed with its tokens, and makes the exit status 1. Attributed ones are
recorded with the keywords that explain them, so that a reader can check them one by one.

Then, per schema and engine, with one compiler per engine kept across the worker's schemas (caches
on, as a server keeps them; cold first requests included; each worker has warmed its kernels once
on a schema outside the sample), under `--timeout` seconds per engine:

- compile: the engine's compile call alone (xg2ref, xgrammar, the PDA: `compile_json_schema`;
  llguidance: the grammar and its matcher, where llguidance builds its parser; outlines: the
  schema's regex and its token index);
- time to first mask: the compile, a matcher and the first bitmask;
- time between masks: for each token of the instance, accept it and fill the next bitmask.

The time limit is an alarm, taken between calls: a compile inside one native call (xgrammar's)
is stopped when that call returns. outlines-core's index build can run for tens of minutes and
grow without bound, so it is first tried in a forked child that is killed at the limit
(workers.probe_in_fork): past it, or dead, only outlines' column says so. The engines run in a
worker process with a memory cap (workers.py), so a schema costs at most its worker, not the run.

`--jobs N` worker processes share the schemas; `--results` keeps one JSON line per schema, and a
run stopped midway goes on where it left off (a record made with fewer engines runs again);
xg2ref/tools/bench/maskbench_report.py reads them.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Callable, Optional

import numpy as np

from .jsonschemabench import (SUBSETS, TimedOut, load_schemas, open_results, random_walk, time_limit, validation_error,
                              walk_tables)
from .workers import probe_in_fork, worker_records
from .maskbench_report import ENGINES, format_report, plot_cdf, summarize
from ...bitmask import unpack_bitmask

JSON_MODE_EVAL = "json-mode-eval"
# engines whose compile is native code that an alarm cannot interrupt and that may allocate without
# bound (outlines-core's token index): tried in a forked child first (workers.probe_in_fork)
PROBED = ("outlines",)
WARM_UP_SCHEMA = {"type": "object", "properties": {"w": {"type": "string"}}}


def load_sample(data_dir: str, sample: Optional[int], seed: int, subsets=None) -> list:
    """[(subset, uid, schema, instance text or None)]: `sample` schemas per JSONSchemaBench subset
    (of `subsets`, default all ten) and `sample` json-mode-eval items (their gold completions as
    instances; when `subsets` names it, or by default); None: all."""
    subsets = list(subsets or SUBSETS + (JSON_MODE_EVAL,))
    unknown = set(subsets) - set(SUBSETS) - {JSON_MODE_EVAL}
    if unknown:
        raise ValueError(f"unknown subsets {sorted(unknown)}; choose from {list(SUBSETS) + [JSON_MODE_EVAL]}")
    out = [(subset, uid, schema, None) for subset, rows in
           load_schemas(data_dir, [s for s in subsets if s in SUBSETS], sample, seed).items() for uid, schema in rows]
    if JSON_MODE_EVAL not in subsets:
        return out
    path = os.path.join(data_dir, "json_mode_eval", "json_mode_eval_from_maskbench.jsonl")
    with open(path, encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    count = len(items) if sample is None else min(sample, len(items))  # None: all of them
    for item in random.Random(f"{seed}/{JSON_MODE_EVAL}").sample(items, count):
        out.append((JSON_MODE_EVAL, item["id"], item["schema"], json.dumps(item["completion"])))
    return out


class _Worker:
    """The engines over one vocabulary, one compiler each kept across this process's schemas;
    `run` checks and times one schema. It runs in worker processes (workers.py), one at least:
    the engines are native code, and a schema that makes one allocate without bound costs its
    worker, not the run (`failed_record`)."""

    isolated = True

    @staticmethod
    def failed_record(args: tuple, job: tuple, why: str) -> dict:
        """The record of a schema whose worker died, alone, on it: every engine failed with `why`."""
        engines = list(args[3])
        return {"subset": job[0], "uid": job[1], "engines": engines, "tokens": None, "mask_check": {"error": why},
                "timing": {e: {"compile": None, "ttfm": None, "steps": [], "error": why} for e in engines}}

    def __init__(self, vocab: str, seed: int, timeout: Optional[float], engines=ENGINES):
        import xgrammar

        from .mask import _xgrammar_info
        from ..diff.checks import quicktok_encoder
        from ...oracle.engines import EngineUnavailable
        from ...oracle.other_engines import LLGuidanceEngine, OutlinesEngine
        from ...tokenizer_info import TokenizerInfo

        self.seed, self.timeout, self.asked = seed, timeout, list(engines)
        self.info = TokenizerInfo.from_quicktok(vocab)
        self.encode = quicktok_encoder(vocab)
        self.xgr = xgrammar
        self.xinfo = _xgrammar_info(xgrammar, self.info)
        self.walk_tables = walk_tables(self.info)  # for the instances' random walks
        self.engines, missing, self.peers = [], [], {}
        for name, make in (("llguidance", LLGuidanceEngine), ("outlines", OutlinesEngine)):
            if name in engines:
                try:
                    self.peers[name] = make.from_tokenizer_info(self.info, encoder=self.encode)
                except (ImportError, EngineUnavailable):
                    missing.append(name)
        self.engines = [e for e in engines if e not in missing]
        self.note = f"not installed, their columns stay empty: {', '.join(missing)}" if missing else None
        self.compilers = self.make_compilers()
        self.time_schema(json.dumps(WARM_UP_SCHEMA), self.encode(b'{"w": "x"}'), self.make_compilers())

    def make_compilers(self) -> dict:
        """A fresh compiler per engine, defaults on (llguidance and outlines compile per matcher)."""
        from ...baselines.pda import PDACompiler
        from ...compiler import GrammarCompiler

        made = {"xg2ref": lambda: GrammarCompiler(self.info),
                "xgrammar": lambda: self.xgr.GrammarCompiler(self.xinfo, max_threads=1),
                "pda": lambda: PDACompiler(self.info)}
        return {e: made[e]() if e in made else self.peers[e] for e in self.engines}

    def compile(self, engine: str, compiler, schema_text: str):
        """The engine's compile call alone (module docstring)."""
        if engine == "llguidance":
            llg = compiler.llg
            grammar = llg.LLMatcher.grammar_from_json_schema(schema_text, defaults={"whitespace_flexible": True})
            matcher = llg.LLMatcher(compiler.tokenizer, grammar, log_level=0)
            if matcher.is_error():
                raise ValueError(matcher.get_error())
            return matcher
        if engine == "outlines":
            return compiler.oc.Index(compiler.json_schema_regex(schema_text), compiler.vocabulary)
        return compiler.compile_json_schema(schema_text)

    def first_mask(self, engine: str, compiler, compiled) -> Callable[[int], bool]:
        """A matcher of `compiled` and its first bitmask; the step function (accept a token, fill the
        next bitmask)."""
        if engine == "llguidance":
            lnp, matcher = compiler.llg_numpy, compiled
            bitmask = lnp.allocate_token_bitmask(1, self.info.vocab_size)
            lnp.fill_next_token_bitmask(matcher, bitmask, 0)

            def step(token: int) -> bool:
                ok = matcher.consume_token(token)
                lnp.fill_next_token_bitmask(matcher, bitmask, 0)
                return ok and not matcher.is_error()
            return step
        if engine == "outlines":
            guide = compiler.oc.Guide(compiled)
            words = np.zeros((self.info.vocab_size + 31) // 32, np.int32)
            guide.write_mask_into(words.ctypes.data, words.size, 4)

            def step(token: int) -> bool:
                if not guide.accepts_tokens([token]):
                    return False
                guide.advance(token, return_tokens=False)
                guide.write_mask_into(words.ctypes.data, words.size, 4)
                return True
            return step
        if engine == "xgrammar":
            lib = self.xgr
        else:
            import xg2ref as lib
        if engine == "pda":
            from ...baselines.pda import PDAMatcher as make_matcher
        else:
            make_matcher = lib.GrammarMatcher
        matcher = make_matcher(compiled)
        bitmask = lib.allocate_token_bitmask(1, self.info.vocab_size)
        matcher.fill_next_token_bitmask(bitmask)

        def step(token: int) -> bool:
            ok = matcher.accept_token(token)
            matcher.fill_next_token_bitmask(bitmask)
            return ok
        return step

    def time_schema(self, schema_text: str, tokens: Optional[list], compilers: dict) -> dict:
        """Each engine's compile time, time to first mask and time between masks along `tokens`,
        each engine under the time limit."""
        rec = {}
        for engine, compiler in compilers.items():
            row = {"compile": None, "ttfm": None, "steps": [], "error": None}
            if engine in PROBED:  # native code no alarm interrupts: first in a child (workers.py)
                why = probe_in_fork(lambda: self.compile(engine, compiler, schema_text), self.timeout)
                if why is not None:
                    row["error"] = why
                    rec[engine] = row
                    continue
            try:
                with time_limit(self.timeout):
                    start = time.perf_counter()
                    compiled = self.compile(engine, compiler, schema_text)
                    row["compile"] = time.perf_counter() - start
                    step = self.first_mask(engine, compiler, compiled)
                    row["ttfm"] = time.perf_counter() - start
                    for k, t in enumerate(tokens or []):
                        start = time.perf_counter()
                        ok = step(t)
                        row["steps"].append(time.perf_counter() - start)
                        if not ok:
                            row["error"] = f"refused token {k} of the instance"
                            break
            except TimedOut:
                row["error"] = "timeout"
            except Exception as err:  # noqa: BLE001  (an engine's refusal of a schema is recorded, not fatal)
                row["error"] = f"{type(err).__name__}: {err}".splitlines()[0][:200]
            rec[engine] = row
        return rec

    def run(self, subset: str, uid: str, schema, instance: Optional[str]) -> dict:
        if instance is None:
            instance = make_instance(self, uid, schema, self.seed)
        tokens = self.encode(instance.encode()) if instance is not None else None
        check = None
        if tokens is not None:
            try:
                with time_limit(self.timeout):
                    check = compare_masks(self, json.dumps(schema), tokens)
            except TimedOut:
                check = {"error": "timeout"}
            except Exception as err:  # noqa: BLE001  (an engine refusing the schema: no comparison)
                check = {"error": f"{type(err).__name__}: {err}".splitlines()[0][:200]}
        return {"subset": subset, "uid": uid, "engines": self.asked,
                "tokens": len(tokens) if tokens is not None else None, "mask_check": check,
                "timing": self.time_schema(json.dumps(schema), tokens, self.compilers)}


def make_instance(engines: "_Worker", uid: str, schema, seed: int) -> Optional[str]:
    """A seeded random walk over xg2ref's masks that `jsonschema` validates, or None."""
    from ...compiler import GrammarCompiler
    from ...matcher import GrammarMatcher

    info = engines.info
    stops, closers, lengths = engines.walk_tables
    try:
        compiled = GrammarCompiler(info, cache_enabled=False).compile_json_schema(json.dumps(schema))
        text = random_walk(GrammarMatcher(compiled), info.decoded_vocab, stops, random.Random(f"{seed}/{uid}"),
                           closers, lengths)
    except Exception:  # noqa: BLE001  (a schema xg2ref refuses has no instance; its refusal shows when timed)
        return None
    if text is None or validation_error(schema, text) is not None:
        return None
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        return None


def compare_masks(engines: "_Worker", schema_text: str, tokens: list) -> dict:
    """xg2ref's and xgrammar's masks at every step of `tokens` (fresh compilers, caches off):
    {"steps", "documented", "undocumented", "example"} (module docstring)."""
    import xg2ref

    info, xgr = engines.info, engines.xgr
    ours = xg2ref.GrammarMatcher(xg2ref.GrammarCompiler(info, cache_enabled=False).compile_json_schema(schema_text))
    theirs = xgr.GrammarMatcher(xgr.GrammarCompiler(engines.xinfo, max_threads=1, cache_enabled=False)
                                .compile_json_schema(schema_text))
    a = xg2ref.allocate_token_bitmask(1, info.vocab_size)
    b = xgr.allocate_token_bitmask(1, info.vocab_size)
    out = {"steps": 0, "documented": 0, "attributed": 0, "undocumented": 0, "example": None}
    keywords = sorted(documented_keywords(json.loads(schema_text)))
    prefix = bytearray()
    for k in range(len(tokens) + 1):
        ours.fill_next_token_bitmask(a)
        theirs.fill_next_token_bitmask(b)
        out["steps"] += 1
        kind, only = difference_kind(np.asarray(a), np.asarray(b), info, keywords, bytes(prefix))
        if kind is not None:
            out[kind] += 1
            if kind != "documented" and out["example"] is None:
                out["example"] = {"step": k, "tokens_only_in": only, "keywords": keywords}
        if k == len(tokens):
            break
        if not (ours.accept_token(tokens[k]) and theirs.accept_token(tokens[k])):
            out["refused_at"] = k
            break
        prefix += bytes(info.decoded_vocab[tokens[k]])
    return out


def difference_kind(ours: np.ndarray, theirs: np.ndarray, info, keywords, prefix: bytes) -> tuple:
    """(None, []) when two bitmasks agree; else (kind, a few (engine, token) pairs allowed by one
    engine alone), kind as the module docstring says: "documented" for specs/05's difference 3
    (escapes against raw control characters) and difference 8 (after `\\u`, xgrammar alone takes
    the escape of a lone surrogate, `d800`-`dfff`), "attributed" when the schema uses a keyword of
    another listed difference, else "undocumented"."""
    v, n = info.vocab_arrays(), info.vocab_size
    mine, other = unpack_bitmask(ours.reshape(-1), n), unpack_bitmask(theirs.reshape(-1), n)
    diff = np.flatnonzero(mine != other)
    if not len(diff):
        return None, []
    texts = [(bool(mine[t]), v.token_bytes[v.token_offsets[t]:v.token_offsets[t + 1]].tobytes()) for t in diff.tolist()]
    escapes = all((b"\\" in data) if only_ours else any(c < 0x20 for c in data) for only_ours, data in texts)
    surrogates = prefix.endswith(b"\\u") and all(not only_ours and data[:1] in (b"d", b"D") and
                                                   (len(data) < 2 or data[1:2] in b"89abcdefABCDEF")
                                                   for only_ours, data in texts)
    kind = "documented" if escapes or surrogates else "attributed" if keywords else "undocumented"
    only = [("xg2ref" if o else "xgrammar", d.decode("utf-8", "replace")) for o, d in texts[:5]]
    return kind, only


# keywords of the differences specs/05 lists (other than difference 3, recognized by its tokens)
DIFFERENCE_KEYWORDS = frozenset({"pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                 "patternProperties", "propertyNames", "enum", "const", "multipleOf", "oneOf",
                                 "anyOf", "not", "if", "$id", "allOf"})


def documented_keywords(schema) -> set:
    """The keywords of documented differences anywhere in `schema` (and "properties without
    type" for specs/05's difference 2)."""
    found, stack = set(), [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found |= DIFFERENCE_KEYWORDS & node.keys()
            if "properties" in node and "type" not in node:
                found.add("properties without type")
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def bench_maskbench(data_dir: str, sample: Optional[int] = 5, subsets=None, vocab: str = "llama3", seed: int = 0,
                    results: Optional[str] = None, plot: Optional[str] = None, jobs: int = 1,
                    timeout: Optional[float] = 60.0, engines=ENGINES, progress: bool = True,
                    out: Callable[[str], None] = print) -> int:
    """Run the benchmark (module docstring) on `sample` schemas per subset (None: all) in `jobs`
    processes; exit status 1 when a mask difference is undocumented."""
    from ...util import read_json_lines
    from ..diff.report import ProgressBar

    try:
        import xgrammar  # noqa: F401
    except ImportError:
        out("xgrammar is not installed: `xg2ref bench maskbench` compares against xgrammar 0.2.8")
        return 2
    rows = load_sample(data_dir, sample, seed, subsets)
    wanted = {(subset, uid) for subset, uid, _, _ in rows}
    # (a line cut short by a stopped run is skipped: that schema runs again)
    done = {(r["subset"], r["uid"]): r for r in read_json_lines(results)
            if (r["subset"], r["uid"]) in wanted and set(engines) <= set(r.get("engines", ()))}
    todo = [row for row in rows if (row[0], row[1]) not in done]
    random.Random(seed).shuffle(todo)  # a stopped run is still a fair sample of every subset
    records = list(done.values())
    bar = ProgressBar(len(wanted), enabled=progress)
    bar.update(len(records))
    sink = open_results(results)
    try:
        for rec in worker_records(_Worker, (vocab, seed, timeout, tuple(engines)), todo, jobs, out):
            records.append(rec)
            if sink:
                sink.write(json.dumps(rec) + "\n")
                sink.flush()
            bar.update(len(records), f"{rec['subset']} {rec['uid']}")
    finally:
        if sink:
            sink.close()
        bar.close()
    checked = [r["mask_check"] for r in records if r["mask_check"] and "steps" in r["mask_check"]]
    undocumented = [r for r in records if r["mask_check"] and r["mask_check"].get("undocumented")]
    out(f"{len(records)} schemas ({'all' if sample is None else sample} per subset, seed {seed}, {vocab}); masks "
        f"compared at {sum(c['steps'] for c in checked)} steps of {len(checked)} instances: "
        f"{sum(c['documented'] for c in checked)} steps differ as specs/05's difference 3, "
        f"{sum(c['attributed'] for c in checked)} in schemas using the keywords of its other differences, "
        f"{sum(c['undocumented'] for c in checked)} otherwise")
    for r in undocumented:
        out(f"  undocumented difference: {r['subset']} {r['uid']}: {r['mask_check']['example']}")
    out(format_report(records))
    if plot:
        plot_cdf(records, plot)
        with open(os.path.splitext(plot)[0] + ".json", "w", encoding="utf-8") as f:
            json.dump({"sample": sample, "seed": seed, "vocab": vocab, "summary": summarize(records)}, f, indent=1)
        out(f"CDFs: {plot}")
    return 1 if undocumented else 0
