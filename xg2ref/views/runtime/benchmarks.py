"""The papers' benchmarks as data for the notebooks: dynamic tool calling (XGrammar-2 §4.1, Table 1,
Figure 6), the ablation (§4.4, Table 4), JSONSchemaBench (Appendix E, Figure 11), and the records
of XGrammar's Table 3 and XGrammar-2's Figure 10 (the pushdown automaton, xg2ref/baselines/pda/)."""

from __future__ import annotations

import gzip
import json
import os
import random
import time
from typing import Optional, Sequence

import numpy as np

# The engine's modules this view reads (it is one of the places outside the engine that may).
from ...compiler import CompiledGrammar, GrammarCompiler
from ...matcher import GrammarMatcher
from ...tokenizer_info import TokenizerInfo
from ...util import read_json_lines
from .common import benchmarks_dir, data_dir


# ---- dynamic tool calling (§4.1, Table 1, Figure 6) ------------------------------------------------


def load_tools(n: Optional[int] = None) -> list:
    """The pool of 100 distinct BFCL tools (`data_dir()/bfcl/tool_pool_100.json`) in the
    OpenAI tool format that `get_model_structural_tag` takes; the first `n` of them.

    Example: load_tools(3)[0]["function"]["name"]
    """
    from ...tools.bench.dynamic import load_tools as load

    tools = load(data_dir())
    return tools if n is None else tools[:n]


def _xgrammar():
    """xgrammar, when installed (its import of tqdm.auto warns outside a widget-enabled Jupyter)."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import xgrammar
    except ImportError:
        return None
    return xgrammar


def _xgrammar_info(xgr, info: TokenizerInfo):
    return xgr.TokenizerInfo([bytes(t) for t in info.decoded_vocab], xgr.VocabType.RAW, vocab_size=info.vocab_size,
                             stop_token_ids=list(info.stop_token_ids))


def _rows_equal(a, b, vocab_size: int) -> bool:
    from ...testing import bitmask_to_bool_mask

    return bool(np.array_equal(bitmask_to_bool_mask(np.asarray(a), vocab_size),
                               bitmask_to_bool_mask(np.asarray(b), vocab_size)))


def dynamic_workload(info: TokenizerInfo, workload: str, n_tools: int, n_requests: int, fmt: str = "llama",
                     seed: int = 0, against_xgrammar: bool = True, tools: Optional[list] = None) -> dict:
    """`xg2ref bench dynamic` for one workload, returned as data: `n_requests` requests with
    `n_tools` tools each, the same tools every time ("static") or a seeded uniform sample of the
    tool pool per request ("dynamic"), through one `GrammarCompiler(info)` kept across requests
    (and one of xgrammar 0.2.8, when installed and `against_xgrammar`). A request builds the
    structural tag of model format `fmt`, compiles it, makes a matcher and fills its first mask;
    both engines' first masks are checked equal before anything is reported.

    Returns: workload, tools, requests, structure_reuse (requests found whole in the grammar
    cache), substructure_reuse (hashed rules an earlier grammar already had), and per request
    compile_ms and first_mask_ms (structural tag to first mask), with xgrammar_compile_ms and
    xgrammar_first_mask_ms (None without xgrammar).

    Example: dynamic_workload(sub_vocabulary(1000), "dynamic", 5, 10)["substructure_reuse"]
    """
    from ...tools.bench.dynamic import request_tools
    from ...bitmask import allocate_token_bitmask
    from ...builtin_structural_tag import get_model_structural_tag

    pool = tools if tools is not None else load_tools()
    requests = request_tools(pool, workload, n_tools, n_requests, seed=seed)
    xgr = _xgrammar() if against_xgrammar else None
    ours = GrammarCompiler(info)
    theirs = xgr.GrammarCompiler(_xgrammar_info(xgr, info), max_threads=1) if xgr is not None else None
    times: dict = {"compile_ms": [], "first_mask_ms": [], "xgrammar_compile_ms": [], "xgrammar_first_mask_ms": []}
    for k, request in enumerate(requests):
        start = time.perf_counter()
        compiled = ours.compile_structural_tag(get_model_structural_tag(fmt, tools=request))
        compiled_at = time.perf_counter()
        mask = allocate_token_bitmask(1, info.vocab_size)
        GrammarMatcher(compiled).fill_next_token_bitmask(mask)
        done = time.perf_counter()
        times["compile_ms"].append((compiled_at - start) * 1e3)
        times["first_mask_ms"].append((done - start) * 1e3)
        if theirs is not None:
            start = time.perf_counter()
            xcompiled = theirs.compile_structural_tag(xgr.get_model_structural_tag(fmt, tools=request))
            compiled_at = time.perf_counter()
            xmask = xgr.allocate_token_bitmask(1, info.vocab_size)
            xgr.GrammarMatcher(xcompiled).fill_next_token_bitmask(xmask)
            done = time.perf_counter()
            times["xgrammar_compile_ms"].append((compiled_at - start) * 1e3)
            times["xgrammar_first_mask_ms"].append((done - start) * 1e3)
            if not _rows_equal(mask, xmask.numpy(), info.vocab_size):
                raise AssertionError(f"{workload}, {n_tools} tools, request {k}: "
                                     "the first masks differ from xgrammar's")
    stats = ours.cache_stats
    out = {"workload": workload, "tools": n_tools, "requests": n_requests,
           "structure_reuse": ours.grammar_cache_hits / max(ours.grammar_cache_lookups, 1),
           "substructure_reuse": stats.rules_known / max(stats.rules_seen, 1)}
    for key, values in times.items():
        out[key] = values if (values or not key.startswith("xgrammar")) else None
    return out


def json_mode_eval(n: Optional[int] = None) -> list:
    """The json-mode-eval items (`data_dir()/json_mode_eval/`): dicts with id, schema and
    completion (the gold answer as JSON text, `json.dumps`'s default separators); the first `n`.

    Example: item = json_mode_eval(1)[0]; compiler.compile_json_schema(item["schema"])
    """
    path = os.path.join(data_dir(), "json_mode_eval", "json_mode_eval_from_maskbench.jsonl")
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out.append({"id": row["id"], "schema": row["schema"], "completion": json.dumps(row["completion"])})
    return out if n is None else out[:n]


# ---- the ablation (§4.4, Table 4) ------------------------------------------------------------------


def _walk(compiled: CompiledGrammar, stops: np.ndarray, rng: random.Random, max_tokens: int) -> list:
    """A seeded walk over the compiled grammar's masks: the token ids (no stop token)."""
    m = GrammarMatcher(compiled)
    ids: list = []
    for _ in range(max_tokens):
        allowed = np.flatnonzero(m.compute_bool_mask() & ~stops)
        if not len(allowed):
            break
        t = int(allowed[rng.randrange(len(allowed))])
        m.accept_token(t)
        ids.append(t)
    return ids


def ablation(schemas: Sequence, info: TokenizerInfo, max_tokens: int = 20, seed: int = 0) -> dict:
    """`xg2ref bench ablation` on `schemas` (a list of (name, JSON schema)), returned as data:
    the four configurations of Table 4 (Baseline: every entry at compile time, no sharing,
    repetitions unrolled; then + JIT, + cross-grammar cache, + repetition compression), one
    compiler each for the whole sample. Per schema, every configuration compiles it (timed) and
    replays the same seeded walk of at most `max_tokens` tokens, timing each mask; every mask
    must equal the baseline's (AssertionError otherwise).

    Returns {"rows": per configuration, in Table 4's order: name, preprocess_ms (mean compile
    time per schema), mask_us (mean time per mask), schemas, masks;
    "schemas": per schema: name and compile_ms per configuration}.

    Example: ablation([("s", {"type": "string", "maxLength": 100})], sub_vocabulary(500))["rows"][0]["name"]
    """
    from ...tools.bench.ablation import CONFIGS
    from ...bitmask import allocate_token_bitmask

    stops = np.zeros(info.vocab_size, dtype=np.bool_)
    stops[list(info.stop_token_ids)] = True
    compilers = [(name, GrammarCompiler(info, **cfg)) for name, cfg in CONFIGS]
    compile_ms: dict = {name: [] for name, _ in CONFIGS}
    mask_s: dict = {name: [] for name, _ in CONFIGS}
    per_schema = []
    for uid, schema in schemas:
        compiled = []
        for name, compiler in compilers:
            start = time.perf_counter()
            compiled.append(compiler.compile_json_schema(schema))
            compile_ms[name].append((time.perf_counter() - start) * 1e3)
        per_schema.append({"schema": uid, "compile_ms": {name: compile_ms[name][-1] for name, _ in CONFIGS}})
        ids = _walk(compiled[0], stops, random.Random(f"{seed}/{uid}"), max_tokens)
        want = None
        for (name, _), c in zip(compilers, compiled):
            m = GrammarMatcher(c)
            bitmask = allocate_token_bitmask(1, info.vocab_size)
            have = []
            for step in range(len(ids) + 1):
                start = time.perf_counter()
                m.fill_next_token_bitmask(bitmask)
                mask_s[name].append(time.perf_counter() - start)
                have.append(np.asarray(bitmask).copy())
                if step < len(ids):
                    m.accept_token(ids[step])
            if want is None:
                want = have
            elif not all(np.array_equal(a, b) for a, b in zip(have, want)):
                raise AssertionError(f"{name}: schema {uid}: a mask differs from the baseline's")
    rows = [{"name": name, "preprocess_ms": float(np.mean(compile_ms[name])) if compile_ms[name] else float("nan"),
             "mask_us": float(np.mean(mask_s[name])) * 1e6 if mask_s[name] else float("nan"),
             "schemas": len(compile_ms[name]), "masks": len(mask_s[name])} for name, _ in CONFIGS]
    return {"rows": rows, "schemas": per_schema}


# ---- JSONSchemaBench (Appendix E, Figure 11) --------------------------------------------------------


def jsonschemabench_sample(per_subset: Optional[int] = 2, subsets: Optional[Sequence[str]] = None, seed: int = 0,
                           full: bool = False, max_chars: Optional[int] = None) -> list:
    """A seeded sample of JSONSchemaBench: (subset, unique_id, schema) triples, `per_subset`
    of each subset (all ten by default; None: all), drawn from the 20-schema samples of
    `data_dir()/jsonschemabench/sample20/` or, with `full`, from the whole subsets; with
    `max_chars`, only among the schemas whose JSON text is at most that long.

    Example: jsonschemabench_sample(1, ["Kubernetes"])[0][0] == "Kubernetes"
    """
    from ...tools.bench.jsonschemabench import SUBSETS, load_schemas

    names = list(subsets or SUBSETS)
    if full:
        out = []
        for name, rows in load_schemas(data_dir(), names, None, seed).items():
            rows = [(uid, schema) for uid, schema in rows if max_chars is None or len(json.dumps(schema)) <= max_chars]
            if per_subset is not None and per_subset < len(rows):
                rows = random.Random(f"{seed}/{name}").sample(rows, per_subset)
            out.extend((name, uid, schema) for uid, schema in rows)
        return out
    out = []
    for name in names:
        path = os.path.join(data_dir(), "jsonschemabench", "sample20", f"{name}.jsonl")
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        rows = [(r["unique_id"], json.loads(r["json_schema"]) if isinstance(r["json_schema"], str)
                 else r["json_schema"]) for r in rows]
        rows = [(uid, schema) for uid, schema in rows if max_chars is None or len(json.dumps(schema)) <= max_chars]
        if per_subset is not None and per_subset < len(rows):
            rows = random.Random(f"{seed}/{name}").sample(rows, per_subset)
        out.extend((name, uid, schema) for uid, schema in rows)
    return out


def jsonschemabench_run(schemas: Sequence, info: TokenizerInfo, timeout: Optional[float] = 20.0, seed: int = 0,
                        against_xgrammar: bool = True) -> list:
    """`xg2ref bench jsonschemabench` on `schemas` ((subset, uid, schema) triples) over `info`,
    returned as records: each schema compiled by xgrammar 0.2.8 (when installed) and by xg2ref
    (JIT, one compiler without caches, `timeout` seconds at most), then one seeded random walk
    over xg2ref's masks that leans toward finishing, validated by `jsonschema` (formats
    checked). Record: subset, uid, theirs (xgrammar compiled it; None: not run), ours,
    timed_out, failure (class of xg2ref's error), compile_ms, xgrammar_compile_ms, finished,
    valid (None: not finished), text and why (for an invalid output).

    Example: jsonschemabench_run(jsonschemabench_sample(1, ["Kubernetes"]), sub_vocabulary(1000))[0]["ours"]
    """
    from ...tools.bench.jsonschemabench import TimedOut, failure_class, random_walk, time_limit, validation_error, walk_tables
    from ...grammar.grammar import Grammar

    xgr = _xgrammar() if against_xgrammar else None
    theirs = xgr.GrammarCompiler(_xgrammar_info(xgr, info), max_threads=1, cache_enabled=False) if xgr else None
    ours = GrammarCompiler(info, cache_enabled=False)
    stops, first_bytes, lengths = walk_tables(info)
    decoded = info.decoded_vocab
    records = []
    for subset, uid, schema in schemas:
        rec = {"subset": subset, "uid": uid, "theirs": None, "ours": False, "timed_out": False, "failure": None,
               "compile_ms": None, "xgrammar_compile_ms": None, "finished": False, "valid": None, "text": None,
               "why": None}
        if theirs is not None:
            start = time.perf_counter()
            try:
                theirs.compile_json_schema(json.dumps(schema))
                rec["theirs"] = True
            except Exception:  # noqa: BLE001  (xgrammar's refusals are counted, not explained)
                rec["theirs"] = False
            rec["xgrammar_compile_ms"] = (time.perf_counter() - start) * 1e3
        records.append(rec)
        start = time.perf_counter()
        try:
            with time_limit(timeout):
                compiled = ours.compile_grammar(Grammar.from_json_schema(schema))
        except TimedOut:
            rec["timed_out"] = True
            continue
        except Exception as err:  # noqa: BLE001  (every failure is counted by its class)
            rec["failure"] = failure_class(err)
            continue
        rec["ours"], rec["compile_ms"] = True, (time.perf_counter() - start) * 1e3
        try:
            with time_limit(timeout):
                text = random_walk(GrammarMatcher(compiled), decoded, stops, random.Random(f"{seed}/{uid}"),
                                   first_bytes, lengths)
        except TimedOut:
            text = None
        if text is None:
            continue
        rec["finished"] = True
        why = validation_error(schema, text)
        rec["valid"] = why is None
        if why is not None:
            rec["text"], rec["why"] = text[:200].decode("utf-8", "replace"), why[:200]
    return records


def jsonschemabench_records(path: Optional[str] = None) -> list:
    """The committed per-schema records of the full `xg2ref bench jsonschemabench` run
    (benchmarks/jsonschemabench/llama3-results.jsonl; the last line of a schema counts), as
    dicts with the bench's fields (subset, uid, theirs, ours, timed_out, failure, finished,
    valid, their_seconds, compile_seconds, ...).

    Example: len(jsonschemabench_records())  # one per schema of the benchmark
    """
    if path is None:
        path = os.path.join(benchmarks_dir(), "jsonschemabench", "llama3-results.jsonl")
    opener = gzip.open if path.endswith(".gz") else open
    last: dict = {}
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a stopped run
            last[(rec["subset"], rec["uid"])] = rec
    return list(last.values())


def jsonschemabench_summary(records: Sequence[dict]) -> list:
    """Per subset (in JSONSchemaBench's order, then a "total" row): schemas, compiled by
    xgrammar (None when it was not run) and by xg2ref, timeouts, finished walks, valid,
    invalid, and the compile and validity rates.

    Example: jsonschemabench_summary(jsonschemabench_records())[-1]["compile_rate"]
    """
    from ...tools.bench.jsonschemabench import SUBSETS

    order = [s for s in SUBSETS if any(r["subset"] == s for r in records)]
    order += sorted({r["subset"] for r in records} - set(order))
    rows = []
    for name in order + ["total"]:
        sub = [r for r in records if name == "total" or r["subset"] == name]
        ran_theirs = [r for r in sub if r.get("theirs") is not None]
        finished = sum(bool(r["finished"]) for r in sub)
        valid = sum(r["valid"] is True for r in sub)
        ours = sum(bool(r["ours"]) for r in sub)
        rows.append({"subset": name, "schemas": len(sub),
                     "xgrammar": sum(bool(r["theirs"]) for r in ran_theirs) if ran_theirs else None,
                     "xg2ref": ours, "timed_out": sum(bool(r["timed_out"]) for r in sub), "finished": finished,
                     "valid": valid, "invalid": sum(r["valid"] is False for r in sub),
                     "compile_rate": ours / len(sub) if sub else float("nan"),
                     "xgrammar_compile_rate": (sum(bool(r["theirs"]) for r in ran_theirs) / len(ran_theirs)
                                               if ran_theirs else None),
                     "validity": valid / finished if finished else float("nan")})
    return rows


# ---- XGrammar-1's pushdown automaton (XGrammar §4.3, Table 3; XGrammar-2 §4.4, Figure 10) --------


def xg1_ablation_table(path: Optional[str] = None) -> list:
    """The committed rows of `xg2ref bench xg1-ablation` (benchmarks/xg1_ablation/table3.json):
    dicts with name, paper_ms (None for the rows beside the table), slow (the row ran on the
    subset without a cache), compile_ms, masks, mean_ms, p50_ms, p99_ms and the cache's stats.

    Example: [r["name"] for r in xg1_ablation_table()][:2]  # ['PDA baseline', '+ node merging']
    """
    if path is None:
        path = os.path.join(benchmarks_dir(), "xg1_ablation", "table3.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def earley_vs_pda_records(path: Optional[str] = None) -> list:
    """The committed per-schema records of `xg2ref bench earley-vs-pda`
    (benchmarks/earley_vs_pda/records.jsonl; the last line of a schema counts): dicts with
    subset, id, schema_bytes, and per engine ("P", "E", "E+", "xgrammar", "xg1") either ms (the
    compile) or failed (the reason), with entries, uncertain and mask_us (µs per mask along the
    walk) for the engines that walked; valid when the walk's instance finished.

    Example: sum("ms" in r["P"] for r in earley_vs_pda_records())  # schemas the PDA compiled
    """
    if path is None:
        path = os.path.join(benchmarks_dir(), "earley_vs_pda", "records.jsonl")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found (`xg2ref bench earley-vs-pda --results` writes it)")
    return list({(rec["subset"], rec["id"]): rec for rec in read_json_lines(path)}.values())


# ---- tool calling per token and compile time (XGrammar-2 §4.2, Figures 7, 8) ----------------------
# ---- static JSON schemas (Appendix E, Figure 11) ----------------------------------------------------


def formats_records(path: Optional[str] = None) -> list:
    """The committed per-turn records of `xg2ref bench formats` (benchmarks/formats/records.jsonl):
    one dict per turn and engine with seed, run ("llama", "harmony", "harmony-tokens"), tools,
    turn, engine, status ("done", "refused", "timeout") and, when done, us (µs per token), args
    (the token in a call's arguments), compile and first mask warm and cold (ms), difference.

    Example: {r["engine"] for r in formats_records()}  # the engines of the run
    """
    if path is None:
        path = os.path.join(benchmarks_dir(), "formats", "records.jsonl")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found (`xg2ref bench formats` writes it)")
    return list({(r["seed"], r["run"], r["tools"], r["turn"], r["engine"]): r for r in read_json_lines(path)}.values())


def formats_rows(records: Sequence[dict]) -> list:
    """The bench's table as dicts, one per run, tool count and engine (as `xg2ref bench formats`
    prints them): turns, tokens, mean_us, p50_us, p99_us, text_us, args_us, compile and first
    mask warm and cold (ms), token_vs_* and ttfm_vs_* (ratios to xgrammar 0.2.8 and llguidance
    over the turns both read), differ and differences (the first differing step per turn, by kind).
    """
    from ...tools.bench.formats import RUNS, _accumulate, _row

    rows = []
    keys = sorted({(r["run"], r["tools"]) for r in records}, key=lambda k: (list(RUNS).index(k[0]), k[1]))
    for run, n_tools in keys:
        mine = [r for r in records if r["run"] == run and r["tools"] == n_tools]
        names = list(dict.fromkeys(r["engine"] for r in mine))
        acc = _accumulate(mine, names)
        rows += [_row(run, n_tools, name, acc) for name in names]
    return rows


def maskbench_records(path: Optional[str] = None) -> list:
    """The committed per-schema records of `xg2ref bench maskbench`
    (benchmarks/maskbench/records.jsonl): dicts with subset, uid, engines, tokens (the instance
    walked), mask_check and timing (per engine: compile and ttfm in seconds or None, steps in
    seconds per token, error). `xg2ref.tools.bench.maskbench_report.summarize` makes the table.

    Example: len(maskbench_records())  # schemas on record
    """
    if path is None:
        path = os.path.join(benchmarks_dir(), "maskbench", "records.jsonl")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found (`xg2ref bench maskbench` writes it)")
    return list({(r["subset"], r["uid"]): r for r in read_json_lines(path)}.values())


def maskbench_summary(records: Sequence[dict]) -> dict:
    """Per engine, Figure 11's figures from maskbench records (`maskbench_report.summarize`):
    schemas, compiled, compile_p50 / compile_p99 (s), within_1ms / within_10ms (shares of all
    schemas), ttfm_p50 / ttfm_p99 (s), tbm_avg and tbm_p* (s between masks), timeouts, failed."""
    from ...tools.bench.maskbench_report import summarize

    return summarize(list(records))


def formats_small_case(info: TokenizerInfo, n_tools: int = 3, seed: int = 1,
                       engines: Sequence[str] = ("xg2ref", "xgrammar", "llguidance")) -> dict:
    """One synthetic turn of `xg2ref bench formats` in Llama's format on `info` (with a call in
    it), read by the bench's `engines` and timed as the bench does: a dict with tools, text,
    tokens (greedy over `info`), rows (as `formats_rows`) and table (the bench's printout).

    Example: formats_small_case(sub_vocabulary(300))["rows"][0]["engine"]  # 'xg2ref'
    """
    from ...tools.bench.formats import ArgumentMaker, _accumulate, _row, format_table, make_engines, make_turns, run_turn
    from .common import encode

    turn = next(t for t in make_turns("llama", load_tools(), 6, n_tools, ArgumentMaker(info), seed=seed) if t.spans)
    enc = (lambda data: encode(info, data))
    live = make_engines(info, enc, tuple(engines), None, lambda _: None)
    records = run_turn(live, turn, enc, info, dict(seed=seed, run="llama", tools=n_tools, turn=0))
    acc = _accumulate(list(records.values()), [e.name for e in live])
    rows = [_row("llama", n_tools, e.name, acc) for e in live]
    return dict(tools=turn.tools, text=turn.text, tokens=enc(turn.text.encode("utf-8")), rows=rows,
                table=format_table(rows))
