"""Views of FSM hashing (XGrammar-2 §3.3, Algorithms 1 and 2, Appendix C), the cross-grammar
cache (§3.3, Figure 4), JIT entries and their cost model (§3.5) and repetition state
compression (§3.6, Algorithm 3)."""

from __future__ import annotations

import contextlib
import time
from typing import Iterator, Optional, Sequence

import numpy as np

# The engine's modules this view reads (it is one of the places outside the engine that may).
from ...compiler import CompiledGrammar, GrammarCompiler
from ...fsm import hashing as H
from ...kernels import earley as K
from ...kernels import mask_fill as MF
from ...matcher import GrammarMatcher
from .common import ZONE_NAMES


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
    pool.settle()  # lookups made before the block are not its own
    log: list = []
    numbers: dict = {}  # id(view) -> the grammar's number in the block

    def seen(pv, state, count, outcome, candidates, accepted, uncertain):
        number = numbers.setdefault(id(pv), (len(numbers), pv))[0]  # (the view kept: its id stays its own)
        key = pv.key(state, count)
        log.append({"grammar": number, "rule": pv.fsms.rule_names[int(pv.state_rule[state])],
                    "state": None if key is None else key[1], "outcome": outcome, "candidates": int(candidates),
                    "vocab": pv.n_sorted, "accepted": int(accepted), "uncertain": int(uncertain)})

    pool.observe(seen)
    try:
        yield log
    finally:
        pool.settle()
        pool.unobserve(seen)


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
    classes = len(cache.class_representatives)
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
    follow1 = cache.classifier.follow1
    costs = cache.schedule.estimated_costs(follow1 != 0)
    starts = np.concatenate([[0], np.cumsum([f.num_states for f in compiled.fsms.fsms])])
    rows = []
    for c in np.argsort(-costs, kind="stable").tolist():
        s = int(cache.class_representatives[c])
        r = int(fsm.state_rule[s])
        rows.append({"class": c, "rule": compiled.fsms.rule_names[r], "state": s - int(starts[r]),
                     "cost": float(costs[c]), "built": bool(cache.state_entry[s] >= 0)})
    return rows


def mask_steps(compiled: CompiledGrammar, tokens: Sequence[int], matcher: Optional[GrammarMatcher] = None) -> list:
    """Fill a mask before each token of `tokens` and after the last, then accept the token:
    per step, the seconds `fill_next_token_bitmask` took, the entries it built (JIT), the
    allowed tokens and the classes still unbuilt after it. Raises ValueError at a token the
    mask does not allow.

    Example: [s["built"] for s in mask_steps(compiled, ids)]
    """
    from ...bitmask import allocate_token_bitmask
    from ...testing import bitmask_to_bool_mask

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
            "classes": len(compiled.mask_cache.class_representatives), "counted": counted}


def count_zones(lo: int, hi: Optional[int], longest: int, counts: Sequence[int]) -> list:
    """The zone of each copy count k of a counted repetition R{lo,hi} whose vocabulary's longest
    token has `longest` bytes: "FREE" (no bound within one token: one shared entry), "NOEXIT"
    (the minimum is more than a token away: one entry) or "exact" (within a token of a bound:
    an entry for that count). `hi` None: unbounded.

    Example: count_zones(0, 100, 4, [0, 94, 95, 99]) == ["FREE", "FREE", "exact", "exact"]
    """
    from ...fsm.fsm import REPEAT_UNBOUNDED

    top = REPEAT_UNBOUNDED if hi is None else hi
    return [ZONE_NAMES.get(int(MF.count_zone(lo, top, k, longest)), "exact") for k in counts]


def counted_items(matcher: GrammarMatcher) -> list:
    """The items of counted repetitions in the matcher's current Earley set: rule, the item's
    state within the rule, the copies completed (the k of (R{l,r}, k)) and the zone of that
    count (`count_zones`).

    Example: counted_items(matcher)  # [{"rule": "...", "state": 0, "count": 7, "zone": "FREE"}]
    """
    parser = matcher.parser
    compiled = matcher.compiled_grammar
    fsm, chart = compiled.arrays, parser.chart
    slack = int(compiled.mask_cache.arrays.count_slack[0])
    starts = np.concatenate([[0], np.cumsum([f.num_states for f in compiled.fsms.fsms])])
    k = int(chart.meta[K.META_N_SETS]) - 1
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
