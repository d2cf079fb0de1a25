"""Views of the run-time half of the engine, as plain data for people and notebooks.

Each function looks inside one mechanism of XGrammar-2 and returns dicts, lists or numpy
arrays; none changes what the engine computes:

    FSM hashing (§3.3, Algorithms 1-2, Appendix C)     rule_hashes, same_structure
    the cross-grammar cache (§3.3, Figure 4)            pool_lookups, cache_counters
    JIT entries and their cost model (§3.5)             entry_summary, entry_costs, mask_steps
    repetition state compression (§3.6, Algorithm 3)    grammar_size, count_zones, counted_items
    dynamic tool calling (§4.1, Table 1, Figure 6)      load_tools, dynamic_workload
    JSON schemas with gold answers (json-mode-eval)     json_mode_eval
    the ablation (§4.4, Table 4)                        ablation
    JSONSchemaBench (Appendix E, Figure 11)             jsonschemabench_sample, jsonschemabench_run,
                                                        jsonschemabench_records, jsonschemabench_summary
    walks for checks against the oracle                 random_walk
    vocabularies, data and the command line             sub_vocabulary, encode, data_dir, benchmarks_dir,
                                                        run_cli

The benchmark views are the `xg2ref bench ...` commands cut down to a caller's sample and
vocabulary, with their results returned instead of printed; each checks masks before it times
(against xgrammar 0.2.8 where it runs it, against the baseline configuration in `ablation`).

What it leaves out: the Earley chart, the mask cache's entries and TagDispatch, which
`xg2ref.views.parsing` covers; Figure 10 (Earley against a PDA parser), whose PDA baseline does
not exist in xg2ref.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import os
import random
import time
from typing import Iterator, Optional, Sequence

import numpy as np

# The engine's modules this view reads (it is one of the places outside the engine that may).
from ..compiler import CompiledGrammar, GrammarCompiler
from ..fsm import hashing as H
from ..kernels import mask_fill as MF
from ..matcher import GrammarMatcher
from ..tokenizer_info import TokenizerInfo

__all__ = [
    "rule_hashes", "same_structure", "pool_lookups", "cache_counters",
    "entry_summary", "entry_costs", "mask_steps",
    "grammar_size", "count_zones", "counted_items",
    "load_tools", "dynamic_workload", "json_mode_eval", "ablation",
    "jsonschemabench_sample", "jsonschemabench_run", "jsonschemabench_records", "jsonschemabench_summary",
    "random_walk", "sub_vocabulary", "encode", "data_dir", "benchmarks_dir", "run_cli",
]

ZONE_NAMES = {MF.ZONE_FREE: "FREE", MF.ZONE_NOEXIT: "NOEXIT"}  # other zones: "exact"


# ---- vocabularies, data, the command line --------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _quicktok(name: str) -> TokenizerInfo:
    return TokenizerInfo.from_quicktok(name)


def sub_vocabulary(n: int = 2000, name: str = "llama3", extra: Sequence[bytes] = (),
                   stop: bytes = b"<|eot_id|>") -> TokenizerInfo:
    """The first `n` tokens of a bundled vocabulary (BPE order: bytes and the commonest pieces
    first; llama3's first 256 hold every byte), then the `extra` tokens, then one stop token
    `stop`.

    Example: info = sub_vocabulary(500, extra=[b"!]"]); info.vocab_size == 502 and info.stop_token_ids == [501]
    """
    full = _quicktok(name)
    regular = [bytes(t) for t in full.decoded_vocab[:n]] + [bytes(t) for t in extra]
    return TokenizerInfo(regular + [bytes(stop)], stop_token_ids=[len(regular)])


_ENCODERS: dict = {}  # id(info) -> (info, its greedy encoder)


def encode(info: TokenizerInfo, text) -> list:
    """Token ids for `text` (str or bytes) by greedy longest match over `info`'s regular tokens
    (not the model's own tokenizer, but a tokenization whose bytes are the text's); ValueError
    when some byte has no token.

    Example: encode(xgr.TokenizerInfo(["a", "ab", "b"]), "abb") == [1, 2]
    """
    from ..tools.diff.checks import greedy_encoder

    held = _ENCODERS.get(id(info))
    if held is None or held[0] is not info:
        held = _ENCODERS[id(info)] = (info, greedy_encoder(info))
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    ids = held[1](data)
    if ids is None:
        raise ValueError(f"{data[:40]!r}... has a byte no token covers")
    return ids


def benchmarks_dir() -> str:
    """The repository's benchmarks/ folder, where the benchmark commands keep their records.

    Example: os.path.join(benchmarks_dir(), "dynamic", "figure6.json")
    """
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(repo, "benchmarks")


def data_dir() -> str:
    """The folder holding the shared data (bfcl/, jsonschemabench/): $XG2REF_DATA, else the
    `shared/data` folder beside the repository.

    Example: os.path.isdir(os.path.join(data_dir(), "bfcl"))
    """
    env = os.environ.get("XG2REF_DATA")
    if env:
        return env
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.normpath(os.path.join(repo, "..", "shared", "data"))


def run_cli(argv: Sequence[str], cwd: Optional[str] = None) -> dict:
    """Run one `xg2ref ...` command in this process (`xg2ref.tools.cli.main`), in folder `cwd`:
    {"exit": its status, "stdout": what it printed}.

    Example: run_cli(["check", "root ::= \\"a\\"", "a"])["exit"] == 0
    """
    from ..tools.cli import main

    out = io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out):
            status = main(list(argv))
    finally:
        os.chdir(here)
    return {"exit": status, "stdout": out.getvalue()}


# ---- FSM hashing (§3.3, Algorithms 1 and 2, Appendix C) -------------------------------------------


def _hashes(compiled: CompiledGrammar) -> H.RuleHashes:
    """The FSM hashes of a compiled grammar: those its compiler made, else computed now."""
    return compiled.rule_hashes if compiled.rule_hashes is not None else H.hash_rules(compiled.fsms)


def rule_hashes(compiled: CompiledGrammar) -> list:
    """Per rule of a compiled grammar: its name, its 64-bit FSM hash as hex (None: unhashed),
    how it was hashed ("leaf", "acyclic", "self", "cycle", "unhashed"), its number of states and
    the canonical number of each state (Algorithm 1's breadth-first numbering; -1: unreached).

    Example: rule_hashes(compiler.compile_grammar('root ::= "a" b\\nb ::= [0-9]+'))[1]["kind"] == "leaf"
    """
    h = _hashes(compiled)
    out = []
    for r, name in enumerate(compiled.fsms.rule_names):
        canonical = h.canonical[r]
        out.append({"rule": name, "hash": None if h.hashes[r] is None else f"{h.hashes[r]:016x}",
                    "kind": h.kinds[r], "states": compiled.fsms.fsms[r].num_states,
                    "canonical": None if canonical is None else [int(x) for x in canonical]})
    return out


def _rule_index(compiled: CompiledGrammar, rule: str) -> int:
    names = compiled.fsms.rule_names
    if rule not in names:
        raise KeyError(f"no rule {rule!r} in the compiled grammar (rules: {', '.join(names)})")
    return names.index(rule)


def same_structure(a: CompiledGrammar, rule_a: str, b: CompiledGrammar, rule_b: str) -> bool:
    """Whether rule `rule_a` of `a` and `rule_b` of `b` have equal hashes and machines that are
    the same under their canonical numberings, with the rules they reference paired the same
    way: the check the cross-grammar cache makes before it trusts a hash (Appendix C).

    Example: same_structure(g1, "s", g2, "t")  # the same body under two names
    """
    return H.same_structure(a.fsms, _hashes(a), _rule_index(a, rule_a), b.fsms, _hashes(b), _rule_index(b, rule_b))


# ---- the cross-grammar cache (§3.3, Figure 4) -------------------------------------------------------


@contextlib.contextmanager
def pool_lookups(compiler: GrammarCompiler) -> Iterator[list]:
    """Record every lookup in `compiler`'s cross-grammar cache made inside the `with` block
    (at compile time, and with JIT when a mask first needs an entry). Each record:

        grammar     the number of the compiled grammar in the block (0, 1, ...)
        rule        the rule of the state looked up, in that grammar's names
        state       the state's canonical number in its rule (the pool key's second half)
        outcome     "perfect", "partial", "miss", "collision" (a hash match the structural
                    check refused: a miss) or "unhashed" (the rule has no hash: built alone)
        candidates  the tokens the entry kernel classified for this grammar: pass[L] for a
                    perfect hit, the tokens the rule may end inside for a partial one, every
                    token for a miss
        vocab       the tokens of the vocabulary it could have classified
        accepted, uncertain   the sizes of the entry that came out

    Example: with pool_lookups(compiler) as log: compiler.compile_grammar(text)
    """
    pool = compiler.pool
    if pool is None:
        raise ValueError("this compiler has no cross-grammar cache (cross_grammar_cache=False)")
    log: list = []
    active = [True]
    patched = pool.__dict__.get("view")  # an enclosing pool_lookups block's, if any
    original_view = pool.view
    views = [0]

    def view(fsms, hashes, lookahead):
        pv = original_view(fsms, hashes, lookahead)
        number = views[0]
        views[0] += 1
        build = pv.build

        def recorded_build(state, members, classifier, count=0):
            if not active[0]:
                return build(state, members, classifier, count)
            before = dict(pool._counts)
            accepted, uncertain = build(state, members, classifier, count)
            key = pv.key(state, count)
            rule = int(pv.state_rule[state])
            grown = {k: pool._counts[k] - before[k] for k in ("perfect", "partial", "misses", "collisions")}
            entry = pool._entries.get(pool._alias.get(key)) if key is not None else None
            vocab = len(classifier.vocab.sorted_ids)
            if key is None:
                outcome, candidates = "unhashed", vocab
            elif grown["perfect"]:
                outcome, candidates = "perfect", len(entry.passes[pv.lookahead_key(rule)])
            elif grown["partial"]:
                outcome, candidates = "partial", len(entry.ends)
            else:
                outcome, candidates = ("collision" if grown["collisions"] else "miss"), vocab
            log.append({"grammar": number, "rule": fsms.rule_names[rule],
                        "state": None if key is None else key[1], "outcome": outcome, "candidates": candidates,
                        "vocab": vocab, "accepted": int(len(accepted)), "uncertain": int(len(uncertain))})
            return accepted, uncertain

        pv.build = recorded_build
        return pv

    pool.view = view
    try:
        yield log
    finally:
        active[0] = False
        if patched is not None:
            pool.view = patched
        else:
            del pool.view  # the class's method again


def cache_counters(compiler: GrammarCompiler) -> dict:
    """What `compiler`'s caches have done so far: grammar-level lookups and hits (whole
    structures), the cross-grammar cache's lookups by outcome, its entries and bytes, hashed rules
    seen and already known (substructures), rule machines found by shape, and sub-grammars
    (tools) compiled once and linked. Counts of a cache that is off are None.

    Example: cache_counters(compiler)["perfect"]
    """
    out = {"grammar_lookups": compiler.grammar_cache_lookups, "grammar_hits": compiler.grammar_cache_hits}
    stats = compiler.cache_stats
    names = ("perfect", "partial", "misses", "collisions", "entries", "bytes", "rules_seen", "rules_known")
    for name in names:
        out[name] = getattr(stats, name) if stats is not None else None
    shapes = compiler.pool.shapes if compiler.pool is not None else None
    out["shape_hits"] = shapes.hits if shapes is not None else None
    out["shape_misses"] = shapes.misses if shapes is not None else None
    out["part_hits"] = compiler.parts.hits if compiler.parts is not None else None
    out["part_misses"] = compiler.parts.misses if compiler.parts is not None else None
    return out


# ---- JIT entries and their cost model (§3.5) -------------------------------------------------------


def entry_summary(compiled: CompiledGrammar) -> dict:
    """The mask cache's entries now: classes of scannable states (one entry each, built or
    not), classes built, entries packed (with a counted repetition's entries for its NOEXIT zone
    and for counts near a bound), their bytes and the seconds spent building them.

    Example: entry_summary(compiled)["built"] <= entry_summary(compiled)["classes"]
    """
    cache = compiled.mask_cache
    classes = len(cache._class_rep)
    return {"classes": classes, "built": classes - cache.unbuilt_entries, "entries": cache.stats.entries,
            "bytes": cache.memory_size_bytes, "build_seconds": cache.build_seconds}


def entry_costs(compiled: CompiledGrammar) -> list:
    """The cost model of §3.5 for each class of scannable states, costliest first: the regular
    tokens whose first byte the class's state may read (its byte edges, FIRST of its rule
    edges, what may follow its rule when it is final), a quarter of that for a pure state.
    Each row: class, rule, state (its number within the rule), cost, built (has an entry now).

    Example: entry_costs(compiled)[0]["cost"] >= entry_costs(compiled)[-1]["cost"]
    """
    cache = compiled.mask_cache
    fsm = compiled.arrays
    follow1 = cache._classifier.follow1
    costs = cache.estimated_costs(fsm, follow1 != 0)
    starts = np.concatenate([[0], np.cumsum([f.num_states for f in compiled.fsms.fsms])])
    rows = []
    for c in np.argsort(-costs, kind="stable").tolist():
        s = int(cache._class_rep[c])
        r = int(fsm.state_rule[s])
        rows.append({"class": c, "rule": compiled.fsms.rule_names[r], "state": s - int(starts[r]),
                     "cost": float(costs[c]), "built": bool(cache._state_entry[s] >= 0)})
    return rows


def mask_steps(compiled: CompiledGrammar, tokens: Sequence[int], matcher: Optional[GrammarMatcher] = None) -> list:
    """Fill a mask before each token of `tokens` and after the last, then accept the token:
    per step, the seconds `fill_next_token_bitmask` took, the entries it built (JIT), the
    allowed tokens and the classes still unbuilt after it. Raises ValueError at a token the
    mask does not allow.

    Example: [s["built"] for s in mask_steps(compiled, ids)]
    """
    from ..bitmask import allocate_token_bitmask
    from ..testing import bitmask_to_bool_mask

    m = matcher if matcher is not None else GrammarMatcher(compiled)
    cache = compiled.mask_cache
    bitmask = allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    out = []
    for step in range(len(tokens) + 1):
        before = cache.stats.entries
        start = time.perf_counter()
        m.fill_next_token_bitmask(bitmask)
        seconds = time.perf_counter() - start
        allowed = bitmask_to_bool_mask(bitmask, compiled.tokenizer_info.vocab_size)[0]
        out.append({"step": step, "seconds": seconds, "built": cache.stats.entries - before,
                    "allowed": int(allowed.sum()), "unbuilt": cache.unbuilt_entries})
        if step == len(tokens):
            break
        t = int(tokens[step])
        if not allowed[t] or not m.accept_token(t):
            raise ValueError(f"step {step}: token {t} is not allowed")
    return out


# ---- repetition state compression (§3.6, Algorithm 3) ----------------------------------------------


def grammar_size(compiled: CompiledGrammar) -> dict:
    """How big a compiled grammar is: rules, FSM states, scannable states, classes of them
    (mask-cache entries), and each counted repetition (rule, min, max, its machine's states;
    max None: unbounded).

    Example: grammar_size(compiler.compile_grammar('root ::= [a-z]{0,1000}'))["states"]
    """
    fsms, fsm = compiled.fsms, compiled.arrays
    counted = [{"rule": fsms.rule_names[r], "min": rep[0], "max": rep[1], "states": fsms.fsms[r].num_states}
               for r, rep in enumerate(fsms.repeats) if rep is not None]
    scannable = int((np.diff(fsm.byte_indptr) > 0).sum())
    return {"rules": len(fsms.rule_names), "states": fsms.num_states, "scannable": scannable,
            "classes": len(compiled.mask_cache._class_rep), "counted": counted}


def count_zones(lo: int, hi: Optional[int], longest: int, counts: Sequence[int]) -> list:
    """The zone of each copy count k of a counted repetition R{lo,hi} whose vocabulary's longest
    token has `longest` bytes: "FREE" (no bound within one token: one shared entry), "NOEXIT"
    (the minimum is more than a token away: one entry) or "exact" (within a token of a bound:
    an entry for that count). `hi` None: unbounded.

    Example: count_zones(0, 100, 4, [0, 94, 95, 99]) == ["FREE", "FREE", "exact", "exact"]
    """
    from ..kernels.earley import REPEAT_UNBOUNDED

    top = REPEAT_UNBOUNDED if hi is None else hi
    return [ZONE_NAMES.get(int(MF.count_zone(lo, top, k, longest)), "exact") for k in counts]


def counted_items(matcher: GrammarMatcher) -> list:
    """The items of counted repetitions in the matcher's current Earley set: rule, the item's
    state within the rule, the copies completed (the k of (R{l,r}, k)) and the zone of that
    count (`count_zones`).

    Example: counted_items(matcher)  # [{"rule": "...", "state": 0, "count": 7, "zone": "FREE"}]
    """
    parser = matcher._parser
    compiled = matcher.compiled_grammar
    fsm, chart = compiled.arrays, parser.chart
    slack = int(compiled.mask_cache.arrays.count_slack[0])
    starts = np.concatenate([[0], np.cumsum([f.num_states for f in compiled.fsms.fsms])])
    k = int(chart.meta[0]) - 1
    out = []
    for i in range(int(chart.set_start[k]), int(chart.set_start[k + 1])):
        s = int(chart.item_state[i])
        r = int(fsm.state_rule[s])
        lo = int(fsm.rule_rep_lo[r])
        if lo < 0:
            continue
        count = int(chart.item_count[i])
        zone = int(MF.count_zone(lo, int(fsm.rule_rep_hi[r]), count, slack))
        item = {"rule": compiled.fsms.rule_names[r], "state": s - int(starts[r]), "count": count,
                "zone": ZONE_NAMES.get(zone, "exact")}
        if item not in out:
            out.append(item)
    return out


# ---- dynamic tool calling (§4.1, Table 1, Figure 6) ------------------------------------------------


def load_tools(n: Optional[int] = None) -> list:
    """The pool of 100 distinct BFCL tools (`data_dir()/bfcl/tool_pool_100.json`) in the
    OpenAI tool format that `get_model_structural_tag` takes; the first `n` of them.

    Example: load_tools(3)[0]["function"]["name"]
    """
    from ..tools.bench.dynamic import load_tools as load

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
    from ..testing import bitmask_to_bool_mask

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
    from ..tools.bench.dynamic import request_tools
    from ..bitmask import allocate_token_bitmask
    from ..builtin_structural_tag import get_model_structural_tag

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
    from ..tools.bench.ablation import CONFIGS
    from ..bitmask import allocate_token_bitmask

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
    from ..tools.bench.jsonschemabench import SUBSETS, load_schemas

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
    from ..tools.bench.jsonschemabench import TimedOut, failure_class, random_walk, time_limit, validation_error, walk_tables
    from ..grammar.grammar import Grammar

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
    from ..tools.bench.jsonschemabench import SUBSETS

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


# ---- walks, for checks against the oracle ------------------------------------------------------------


def random_walk(compiled: CompiledGrammar, steps: int, seed: int = 0, matcher: Optional[GrammarMatcher] = None) -> list:
    """A seeded walk of at most `steps` tokens over the compiled grammar's own masks (stop
    tokens are not taken): per step, the bytes accepted so far ("prefix"), the bool mask there
    ("mask") and the token taken next ("token", None at the last step).

    Example: [s["mask"].sum() for s in random_walk(compiled, 5)]
    """
    info = compiled.tokenizer_info
    m = matcher if matcher is not None else GrammarMatcher(compiled)
    stops = np.zeros(info.vocab_size, dtype=np.bool_)
    stops[list(info.stop_token_ids)] = True
    rng = random.Random(seed)
    prefix = b""
    out = []
    for step in range(steps + 1):
        mask = m.compute_bool_mask().copy()
        allowed = np.flatnonzero(mask & ~stops)
        token = int(allowed[rng.randrange(len(allowed))]) if step < steps and len(allowed) else None
        out.append({"prefix": prefix, "mask": mask, "token": token})
        if token is None:
            break
        if not m.accept_token(token):
            raise AssertionError(f"the matcher refused token {token}, which its own mask allowed")
        prefix += bytes(info.decoded_vocab[token])
    return out
