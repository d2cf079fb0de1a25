"""Views of the Earley chart (XGrammar-2 §3.4, App. D Table 6 left half), the adaptive token-mask
cache (Table 6 right half; XGrammar §3.1, Figs. 4 and 5) and context expansion with lookahead
(XGrammar §3.2)."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional

import numpy as np

# The engine's modules this view reads (it is the one place outside the engine that may).
from ...compiler import CompiledGrammar
from ...earley import EarleyParser, Item, ItemPrinter
from ...tools.explain import user_parser
from ...fsm.build import build_grammar_fsms
from ...kernels import classify as KC
from ...kernels import earley as KE
from ...mask.classifier import Classifier
from ...mask.entries import KIND_BITSET, KIND_NAMES, UNBUILT
from ...matcher import GrammarMatcher
from .grammar_fsm import _grammar, _ir, _symbol


# ---- the Earley chart (XGrammar-2 §3.4, App. D Table 6, left half) ------------------------------


def _set_items(parser: EarleyParser, k: int) -> list[Item]:
    return parser.items(k)


def _justify(parser: EarleyParser, printer: ItemPrinter, data: bytes, k: int, item: Item,
             finals_at: dict) -> list[tuple[str, str]]:
    """Which of Table 6's rules put `item` into set k, each with its premise(s), read off the
    chart: ("init" | "scan" | "predict" | "predict (nullable)" | "complete", premise text)."""
    a, fsms = parser.arrays, parser.fsms
    names = fsms.rule_names
    out = []
    s, i = item.state, item.origin
    if k == 0 and item.rule == fsms.root and s == int(a.rule_start[item.rule]) and i == 0:
        out.append(("init", f"[0, 0, {names[fsms.root]}' → • {names[fsms.root]}]"))
    if k > 0:
        x = data[k - 1]
        for p in _set_items(parser, k - 1):
            if p.origin != i:
                continue
            for e in range(a.byte_indptr[p.state], a.byte_indptr[p.state + 1]):
                if a.byte_dst[e] == s and a.byte_lo[e] <= x <= a.byte_hi[e]:
                    out.append(("scan", f"{printer.format(p)} in set {k - 1}, reads {_symbol(x, x)}"))
    here = _set_items(parser, k)
    if i == k and s == int(a.rule_start[item.rule]):
        for p in here:
            for e in range(a.ref_indptr[p.state], a.ref_indptr[p.state + 1]):
                if a.ref_rule[e] == item.rule:
                    out.append(("predict", printer.format(p)))
                    break
    for p in here:
        if p.origin != i:
            continue
        for e in range(a.ref_indptr[p.state], a.ref_indptr[p.state + 1]):
            if a.ref_dst[e] == s and fsms.nullable[a.ref_rule[e]]:
                out.append(("predict (nullable)", f"{printer.format(p)}, {names[a.ref_rule[e]]} may be empty"))
    for f in finals_at.get(k, []):
        if f.origin >= k:
            continue
        for p in _set_items(parser, f.origin):
            if p.origin != i:
                continue
            for e in range(a.ref_indptr[p.state], a.ref_indptr[p.state + 1]):
                if a.ref_rule[e] == f.rule and a.ref_dst[e] == s:
                    out.append(("complete", f"{printer.format(f)} ends; {printer.format(p)} in set {f.origin}"))
    out += _justify_leo(parser, printer, k, item, finals_at)
    return out


def _justify_leo(parser: EarleyParser, printer: ItemPrinter, k: int, item: Item, finals_at: dict) -> list:
    """LEO (kernels/earley.py): `item` is the last item of a completion chain that a final item
    of set k set off through a link waiting in its origin's set."""
    a, c = parser.arrays, parser.chart
    out = []
    for f in finals_at.get(k, []):
        if f.origin >= k:
            continue
        for q in range(int(c.set_start[f.origin]), int(c.set_start[f.origin + 1])):
            sq = int(c.item_state[q])
            if not any(a.ref_rule[e] == f.rule for e in range(a.ref_indptr[sq], a.ref_indptr[sq + 1])):
                continue
            if not KE.leo_link(a, c, q, f.origin):
                continue
            top = int(KE.leo_top(a, c, q))
            st = int(c.item_state[top])
            if top != q and int(c.item_origin[top]) == item.origin and int(a.ref_dst[a.ref_indptr[st]]) == item.state:
                out.append(("leo", f"{printer.format(f)} ends; {_item_text(parser, printer, q)} in set {f.origin} "
                                   f"is a link; its chain ends at {_item_text(parser, printer, top)}"))
    return out


def _item_text(parser: EarleyParser, printer: ItemPrinter, p: int) -> str:
    s = int(parser.chart.item_state[p])
    rule = int(parser.arrays.state_rule[s])
    return printer.format(Item(rule, s, s - int(parser._global_to_local[rule]), int(parser.chart.item_origin[p])))


def _parser(grammar, inline: bool, leo: bool = True) -> EarleyParser:
    parser = EarleyParser(build_grammar_fsms(_ir(grammar, True))) if inline else user_parser(_grammar(grammar))
    if not leo:
        parser = EarleyParser(parser.fsms, parser.arrays._replace(rule_leo=np.zeros_like(parser.arrays.rule_leo)))
    return parser


def earley_trace(grammar, data, inline: bool = False, leo: bool = True) -> list[dict]:
    """The Earley chart after reading `data` byte by byte, one row per item, each with the
    rules of Table 6 (left half) that put it there and their premises.

    Row keys: set (k), item (dotted rule, `@origin`), rule, origin, final (the rule may end
    here), how (the rules that derive it: "init", "scan", "predict", "predict (nullable)" for
    the Aycock-Horspool advance over a nullable rule, "complete", "leo" for the last item of a
    completion chain completed in one step (kernels/earley.py, "Leo items"; `leo=False`: the
    plain COMPLETE, every item of the chain); "other" for items of counted or unordered rules), premises (one line per derivation), next_bytes (the bytes the
    item may scan next). Stops at the first byte the grammar rejects (the rows then end with
    the last set reached).

    Example: [r["how"] for r in earley_trace('root ::= "a" b\\nb ::= "c"', "ac") if r["set"] == 1]
             == [["scan"], ["predict"]]
    """
    data = data.encode() if isinstance(data, str) else bytes(data)
    parser = _parser(grammar, inline, leo)
    printer = ItemPrinter(parser.fsms)
    read = 0
    for b in data:
        if not parser.advance(bytes((b,))):
            break
        read += 1
    a, names = parser.arrays, parser.fsms.rule_names
    finals_at: dict[int, list[Item]] = {}
    for k in range(read + 1):
        finals_at[k] = [it for it in _set_items(parser, k) if a.is_final[it.state]]
    rows = []
    for k in range(read + 1):
        for it in _set_items(parser, k):
            why = _justify(parser, printer, data, k, it, finals_at)
            how = sorted({w for w, _ in why}, key=["init", "scan", "predict", "predict (nullable)",
                                                    "complete", "leo"].index) or ["other"]
            reads = sorted({b for e in range(a.byte_indptr[it.state], a.byte_indptr[it.state + 1])
                            for b in range(int(a.byte_lo[e]), int(a.byte_hi[e]) + 1)})
            rows.append({"set": k, "item": printer.format(it), "rule": names[it.rule], "origin": it.origin,
                         "final": bool(a.is_final[it.state]), "how": how, "premises": [p for _, p in why],
                         "next_bytes": reads})
    return rows


def chart_sets(matcher: GrammarMatcher) -> list[list[str]]:
    """The Earley sets a matcher holds now, set 0 first, items as dotted rules in the compiled
    grammar's rule names. Rolling back drops the last sets and leaves the others as they were.

    Example: m.accept_string("ab"); len(chart_sets(m)) == 3
    """
    parser = matcher.parser
    printer = ItemPrinter(parser.fsms)
    return [[printer.format(it) for it in parser.items(k)] for k in range(parser.position + 1)]


# ---- the adaptive token-mask cache (Table 6 right half; XGrammar §3.1) --------------------------


def _state_item(compiled: CompiledGrammar, state: int, printer: Optional[ItemPrinter] = None) -> str:
    """The dotted rule of a global FSM state, without an origin."""
    fsms = compiled.fsms
    rule = int(compiled.arrays.state_rule[state])
    local = state - int(fsms.state_offsets()[rule])
    text = (printer or ItemPrinter(fsms)).format(Item(rule, state, local, 0))
    return text.rsplit("  @", 1)[0]


def _all_entries(compiled: CompiledGrammar):
    """The cache's flat arrays with every entry built (JIT builds them on first use)."""
    cache = compiled.mask_cache
    states = np.flatnonzero(cache.arrays.state_entry == UNBUILT).astype(np.int32)
    if len(states):
        cache.ensure_entries(states)
    return cache.arrays


def _entry_sets(compiled: CompiledGrammar, e: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(accepted, rejected, uncertain) regular token ids of entry e, each sorted."""
    cache = compiled.mask_cache
    arr, vocab = cache.arrays, cache.vocab
    regular = np.sort(vocab.sorted_ids)
    uncertain = np.sort(vocab.sorted_ids[arr.unc_sorted[arr.unc_indptr[e]:arr.unc_indptr[e + 1]]])
    listed = arr.list_ids[arr.list_indptr[e]:arr.list_indptr[e + 1]]
    kind = int(arr.entry_kind[e])
    if kind == KIND_BITSET:
        words = arr.bitset_words[arr.bitset_offset[e]:arr.bitset_offset[e] + (cache.vocab_size + 31) // 32]
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:cache.vocab_size].astype(bool)
        accepted = np.flatnonzero(bits)
    elif KIND_NAMES[kind] == "accepted list":
        accepted = np.sort(listed)
    else:
        accepted = np.setdiff1d(np.setdiff1d(regular, listed), uncertain)
    rejected = np.setdiff1d(np.setdiff1d(regular, accepted), uncertain)
    return accepted.astype(np.int64), rejected.astype(np.int64), uncertain.astype(np.int64)


def mask_cache_entries(compiled: CompiledGrammar) -> list[dict]:
    """One row per entry of the compiled grammar's token-mask cache (building any entry JIT has
    not built yet): the FSM state it was built for, that state as a dotted rule, its storage form
    ("accepted list", "rejected list" or "bitset", the smallest, XGrammar §3.1 Figure 5), the
    numbers of accepted, rejected and uncertain tokens, the states that share it and its bytes.

    Example: rows = mask_cache_entries(compiled); sum(r["uncertain"] for r in rows)
    """
    arr = _all_entries(compiled)
    printer = ItemPrinter(compiled.fsms)
    words = (compiled.mask_cache.vocab_size + 31) // 32
    sharing = Counter(int(e) for e in arr.state_entry if e >= 0)
    rows = []
    for e in range(len(arr.entry_state)):
        kind = int(arr.entry_kind[e])
        listed = int(arr.list_indptr[e + 1] - arr.list_indptr[e])
        n_unc = int(arr.unc_indptr[e + 1] - arr.unc_indptr[e])
        acc, rej, unc = (int(c) for c in arr.counts[e])
        state = int(arr.entry_state[e])
        rows.append({"entry": e, "state": state, "item": _state_item(compiled, state, printer),
                     "form": KIND_NAMES[kind], "accepted": acc, "rejected": rej, "uncertain": unc,
                     "states": sharing.get(e, 0),
                     "bytes": 4 * (listed + n_unc) + (4 * words if kind == KIND_BITSET else 0)})
    return rows


def entry_forms(compiled: CompiledGrammar) -> dict[str, int]:
    """How many entries take each storage form (XGrammar Figure 5's three cases).

    Example: sum(entry_forms(compiled).values()) == len(mask_cache_entries(compiled))
    """
    counts = Counter(r["form"] for r in mask_cache_entries(compiled))
    return {name: counts.get(name, 0) for name in KIND_NAMES}


def entry_tokens(compiled: CompiledGrammar, state: int) -> dict[str, list[int]]:
    """The accepted, rejected and uncertain regular token ids of the entry of FSM state `state`
    (XGrammar Figure 4; Table 6's (A, R, U)). Stop and special tokens are in none of them.

    Example: entry_tokens(compiled, mask_cache_entries(compiled)[0]["state"])["uncertain"]
    """
    arr = _all_entries(compiled)
    e = int(arr.state_entry[state])
    if e < 0:
        raise ValueError(f"state {state} reads no byte: it has no entry")
    acc, rej, unc = _entry_sets(compiled, e)
    return {"accepted": acc.tolist(), "rejected": rej.tolist(), "uncertain": unc.tolist()}


def mask_from_cache(matcher: GrammarMatcher) -> dict:
    """Table 6 (right half) at the matcher's current position, step by step:

        1. retrieve    the entry (A, R, U) of every scannable item of the current set
        2. check       the uncertain tokens no entry accepts, run through the full chart:
                       U_A (they may follow) and U_R (they may not)
        3. output      A' = the union of the A's with U_A (and the stop tokens when the input
                       is a sentence)

    Returns a dict: items (one row per scannable item: item, accepted, rejected, uncertain
    counts), accepted (ids in some A), uncertain (the candidates checked), uncertain_accepted
    (U_A), uncertain_rejected (U_R), stop (stop ids allowed), mask (bool[vocab_size], A').
    For grammars without token sets, token budgets or counted repetitions (the matcher adds
    what those allow or forbid on top).

    Example: steps = mask_from_cache(m); (steps["mask"] == m.compute_bool_mask()).all()
    """
    compiled = matcher.compiled_grammar
    parser = matcher.parser
    c, k = parser.chart, parser.position
    states = c.item_state[c.set_start[k]:c.set_start[k + 1]]
    arr = compiled.mask_cache.arrays
    if (arr.state_entry[states] == UNBUILT).any():
        compiled.mask_cache.ensure_entries(states.astype(np.int32), c.item_count[c.set_start[k]:c.set_start[k + 1]])
        arr = compiled.mask_cache.arrays
    printer = ItemPrinter(parser.fsms)
    items, accepted, uncertain = [], set(), set()
    for it in parser.items(k):
        e = int(arr.state_entry[it.state])
        if e < 0:
            continue
        acc, rej, unc = _entry_sets(compiled, e)
        items.append({"item": printer.format(it), "accepted": len(acc), "rejected": len(rej), "uncertain": len(unc)})
        accepted.update(acc.tolist())
        uncertain.update(unc.tolist())
    candidates = sorted(uncertain - accepted)
    info = compiled.tokenizer_info
    u_a, u_r = [], []
    for t in candidates:
        data = info.token_bytes(t)
        if parser.advance(data):
            parser.rollback(len(data))
            u_a.append(t)
        else:
            u_r.append(t)
    mask = np.zeros(info.vocab_size, dtype=bool)
    mask[sorted(accepted)] = True
    mask[u_a] = True
    stop = list(matcher.stop_token_ids) if parser.is_completed() else []
    mask[stop] = True
    return {"items": items, "accepted": sorted(accepted), "uncertain": candidates, "uncertain_accepted": u_a,
            "uncertain_rejected": u_r, "stop": stop, "mask": mask}


def every_token_mask(matcher: GrammarMatcher) -> np.ndarray:
    """bool[vocab_size]: the mask without the cache, every regular token run through the Earley
    chart (in byte order, sharing prefixes), stop tokens allowed at a sentence.

    Example: (every_token_mask(m) == m.compute_bool_mask()).all()
    """
    return matcher.every_token_bool_mask()


# ---- context expansion and lookahead (XGrammar §3.2) -----------------------------------------


def lookahead_assertions(compiled: CompiledGrammar) -> dict[str, dict[str, str]]:
    """The lookahead assertions the cache uses, by kind: "inferred" (xgrammar's inference),
    "verified" (written in the grammar and proved), "unverified" (written, not provable: not
    used), each rule name -> the assertion's text.

    Example: "characters_and_embrace" in lookahead_assertions(compiled_builtin_json)["unverified"]
    """
    report = compiled.lookahead_report
    return {"inferred": dict(report.inferred), "verified": dict(report.verified),
            "unverified": dict(report.unverified)}


def context_expansion(compiled: CompiledGrammar, states: Optional[Iterable[int]] = None) -> list[dict]:
    """What each refinement of XGrammar §3.2 leaves uncertain, state by state (default: the
    state each cache entry was built for; counted and unordered rules are skipped).

    For the entry of FSM state s of rule A, lists of regular token ids:

        ends_inside   A may end inside the token (read from s, the token is not read inside A
                      but A reaches a final state before it dies): XGrammar §3.1's
                      context-dependent tokens, uncertain without context
        after_lookahead   those whose rest agrees with A's lookahead assertion (all of them
                      when A has none)
        after_context     those that context expansion (CONTEXT, Algorithm 2: some occurrence
                      of A, or of a rule that ends with A, reads the rest) keeps
        uncertain         those that ACCEPT-CTX (every occurrence of A reads the rest: accepted
                      in every context) does not accept: the entry's uncertain tokens
        accepted_by_context   after_context less uncertain

    plus `state`, `item` (dotted rule), `lookahead` (A has an assertion) and `same_entry`
    (the classes with and without the assertion agree with the cache's entry: assertions only
    save work).

    Example: sum(len(r["ends_inside"]) for r in rows), sum(len(r["uncertain"]) for r in rows)
    """
    cache = compiled.mask_cache
    fsm, vocab = compiled.arrays, cache.vocab
    arr = _all_entries(compiled)
    if states is None:
        states = [int(s) for s in arr.entry_state]
    lookahead = cache.classifier.lookahead
    plain = Classifier(fsm, vocab)  # no assertion, no FOLLOW table: every question by expansion
    asserted = Classifier(fsm, vocab, lookahead)
    printer = ItemPrinter(compiled.fsms)
    ids = vocab.sorted_ids.astype(np.int64)
    rows = []
    for s in states:
        rule = int(fsm.state_rule[s])
        if fsm.rule_rep_lo[rule] >= 0 or fsm.rule_required[rule] >= 0 or arr.state_entry[s] < 0:
            continue
        out0 = plain.classify(s, record=True).copy()
        d0 = plain.detail.copy()
        out1 = asserted.classify(s, record=True).copy()
        d1 = asserted.detail.copy()
        ends = d0 >= KC.D_ENDS_LOOKAHEAD_REJECTS
        agree = d1 == KC.D_ENDS
        kept = agree & (out1 != KC.REJECTED)
        unc = out1 == KC.UNCERTAIN
        acc, _, unc_cached = _entry_sets(compiled, int(arr.state_entry[s]))
        same = (np.array_equal(out0, out1) and np.array_equal(np.sort(ids[unc]), unc_cached)
                and np.array_equal(np.sort(ids[out1 == KC.ACCEPTED]), acc))
        rows.append({"state": int(s), "item": _state_item(compiled, int(s), printer),
                     "lookahead": bool(lookahead.la_start[rule] >= 0),
                     "ends_inside": np.sort(ids[ends]).tolist(), "after_lookahead": np.sort(ids[agree]).tolist(),
                     "after_context": np.sort(ids[kept]).tolist(), "uncertain": np.sort(ids[unc]).tolist(),
                     "accepted_by_context": np.sort(ids[kept & ~unc]).tolist(), "same_entry": bool(same)})
    return rows
