"""XGrammar-2 §3.3 (cross-grammar caching) carried from rules to whole sub-grammars: a grammar
assembled from compiled parts the compiler already holds.

A tool-calling grammar (§3.2, §4.1) is a small top grammar, the dispatch over the request's
tools, around one closed sub-grammar per tool: the JSON schema of its arguments. With tools
sampled per request, the grammar is new every time while nearly every tool was seen before.
The rule-level cache (xg2ref/mask/cross_grammar.py) then reuses mask entries, but normalizing,
building the machines of, analysing and hashing every rule of every tool would still be paid
per request. Here each sub-grammar is compiled once, alone, into a `Part`, and a request pays
only for its top grammar and a linking step that concatenates arrays.

A front end marks each embedded sub-grammar (`SubGrammar`: structural tags' json_schema, regex
and grammar contents) with a stub rule in the top grammar. Before the top is normalized, each
stub's body becomes a stand-in with the facts the top's analyses read from a referenced rule:

    stub ::= b1 | b2 | ... (| "")       the bytes of FIRST(root); "" when the root is nullable
    stub ::= stub                       when the root's language is empty (never productive)

and a `stub` option keeps the stand-in from being inlined or placed. After the top's machines are
built and analysed, linking (rule numbers: the top's, then each part's after an offset) redirects
every reference to a stub to its part's root and leaves the stub dead (a machine without edges).
Each fact stays exact (FIRST, nullable, productive) or sound (FOLLOW, lookahead) in the linked
grammar, since the parts are closed (they reference no rule outside) and reached only through
their stub:

    FIRST, nullable, productive, hash of a part's rule      |- the part's own
    FOLLOW(A), A in part P of stub S                          |- FOLLOW_P(A), and FOLLOW_top(S)
                                                                 when A may end where P's root
                                                                 ends (TAIL, lookahead.follow_bytes)
    lookahead of P's root                                     |- the top's inferred one for S,
                                                                 unless P references its root
    lookahead of A in P                                       |- the part's own: inferred ones are
                                                                 true anywhere; written ones are
                                                                 verified with the root's sequel
                                                                 unknown (`open_root`)
    written lookahead of a top rule                           |- verified with every stub opaque

and the hashes of top rules use the hash of each part's root for their stub (fsm/hashing.py's
`known`). Masks of a linked grammar equal those of the same grammar compiled as one IR
(tests/test_linking.py).

What it leaves out: parts are linked only for structural tags (the one front end that embeds
sub-grammars); a part is kept whole in a count-bounded LRU (`MAX_PARTS`) next to the byte-bounded
entry pool.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .analysis import AnalysedGrammar, analyse
from .fsm.build import FSMArrays, GrammarFSMs, leo_rules
from .fsm.fsm import FSM
from .fsm.hashing import KIND_UNHASHED, RuleHashes
from .fsm.shapes import relabel
from .grammar.ir import EPSILON, ByteString, Choice, Expr, GrammarIR, Rule, RuleRef
from .lookahead import LookaheadArrays, LookaheadReport
from .mask.state_classes import shareable_rules, state_classes

STUB = "stub"  # the rule option marking a stand-in for a linked sub-grammar's root
MAX_PARTS = 4096  # compiled sub-grammars a compiler keeps


@dataclass
class Part:
    """A closed sub-grammar compiled alone (rules numbered from 0, nothing after its root)."""

    fsms: GrammarFSMs
    arrays: FSMArrays
    first: np.ndarray  # bool[R, 256]
    follow: np.ndarray  # bool[R, 256]
    tail: np.ndarray  # bool[R]: may end where the root ends
    lookahead: LookaheadArrays
    report: LookaheadReport
    hashes: RuleHashes
    root_used: bool  # a rule of the part references its root
    _classes: dict = field(default_factory=dict, repr=False)  # steps -> state classes

    @property
    def root(self) -> int:
        return self.fsms.root

    def state_classes(self, steps: int) -> np.ndarray:
        """The classes of the part's states (xg2ref/mask/state_classes.py), computed once per depth:
        classes never join states of two rules and the part is closed, so they are its own
        wherever it is linked."""
        if steps not in self._classes:
            self._classes[steps] = state_classes(self.arrays, steps, shareable_rules(self.arrays))
        return self._classes[steps]


def compile_part(ir: GrammarIR, shapes=None, repetition_threshold: Optional[int] = None) -> Part:
    """Normalize, build, analyse and hash a closed sub-grammar, as `compile_ir_grammar` does
    for a whole grammar, with the root's sequel left open."""
    a = analyse(ir, shapes=shapes, repetition_threshold=repetition_threshold, hashed=True, tails=True, open_root=True)
    root_used = any(ref == a.fsms.root for f in a.fsms.fsms for _, ref, _ in f.rule_edges)
    return Part(a.fsms, a.fsms.to_arrays(), a.first, a.follow, a.tail, a.lookahead, a.report, a.hashes, root_used)


def stub_rule(name: str, index: int, part: Part) -> Rule:
    """The stand-in for `part`'s root in the top grammar (module docstring)."""
    root = part.root
    if not part.fsms.productive[root]:
        body: Expr = RuleRef(name)
    else:
        alternatives = [ByteString(bytes([b])) for b in np.flatnonzero(part.first[root]).tolist()]
        if part.fsms.nullable[root]:
            alternatives.append(EPSILON)
        body = Choice(tuple(alternatives)) if len(alternatives) > 1 else alternatives[0]
    return Rule(name, body, None, ((STUB, index),))


class PartCache:
    """Compiled sub-grammars by source key, least recently used dropped beyond `MAX_PARTS`."""

    def __init__(self, limit: int = MAX_PARTS):
        self.limit = limit
        self._parts: "OrderedDict[tuple, Part]" = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key: Optional[tuple], make, shapes, repetition_threshold: Optional[int]) -> Part:
        part = self._parts.get(key) if key is not None else None
        if part is not None:
            self._parts.move_to_end(key)
            self.hits += 1
            return part
        self.misses += 1
        part = compile_part(make(), shapes, repetition_threshold)
        if key is not None:
            self._parts[key] = part
            while len(self._parts) > self.limit:
                self._parts.popitem(last=False)
        return part

    def __len__(self) -> int:
        return len(self._parts)

    def keyed(self) -> dict:
        """Source key -> part, a copy (for the compiler's memory tally)."""
        return dict(self._parts)

    def evict_to(self, n: int) -> None:
        """Keep the `n` most recently used parts."""
        while len(self._parts) > max(n, 0):
            self._parts.popitem(last=False)

    def clear(self) -> None:
        self._parts.clear()


@dataclass(frozen=True)
class LinkedClasses:
    """The state classes of a linked grammar (`AnalysedGrammar.state_classes`), from its pieces."""

    arrays: FSMArrays
    top_states: int  # the top's states come first, then each part's in `parts` order
    parts: tuple

    def __call__(self, steps: int) -> np.ndarray:
        """`state_classes(arrays, steps, shareable_rules(arrays))` up to renaming: the top's
        states refined here, each part's classes from the part, numbered apart."""
        top = state_classes(self.arrays, steps, shareable_rules(self.arrays), 0, self.top_states)
        chunks, base = [top], int(top.max(initial=-1)) + 1
        for part in self.parts:
            labels = part.state_classes(steps)
            chunks.append(labels + base)
            base += int(labels.max(initial=-1)) + 1
        return np.concatenate(chunks)


def link(top: GrammarFSMs, first: np.ndarray, follow: np.ndarray, lookahead: LookaheadArrays,
         report: LookaheadReport, hashes: Optional[RuleHashes], stubs: dict[int, Part]) -> AnalysedGrammar:
    """Join the analysed top grammar and the parts its stub rules (top rule -> part) stand for."""
    n_top = len(top.fsms)
    order = sorted(stubs)
    offsets, at = {}, n_top
    for s in order:
        offsets[s] = at
        at += len(stubs[s].fsms.fsms)
    rule_map = list(range(n_top))
    for s in order:
        rule_map[s] = offsets[s] + stubs[s].root
    token_sets: dict = {t: k for k, t in enumerate(top.token_sets)}
    dead = FSM(1, 0, frozenset())
    fsms = [dead if s in stubs else (relabel(f, rule_map, [], token_sets) if any(e[1] in stubs for e in f.rule_edges)
                                     else f) for s, f in enumerate(top.fsms)]
    names = list(top.rule_names)
    nullable, productive = list(top.nullable), list(top.productive)
    for s in stubs:
        nullable[s] = productive[s] = False
    top_arrays = GrammarFSMs(top.rule_names, tuple(fsms), top.root, tuple(nullable), tuple(productive),
                             top.token_sets, top.max_tokens, top.max_chars, top.repeats,
                             unordered=top.unordered).to_arrays()
    # (arrays, first global state, global rule of each local rule, global token set of each local
    # one, global rule of each referenced local rule: None where references are global already)
    pieces = [(top_arrays, 0, np.arange(n_top, dtype=np.int32), np.arange(len(top.token_sets), dtype=np.int32), None)]
    budgets = [_per_rule(top.max_tokens, n_top, -1)]
    char_budgets = [_per_rule(top.max_chars, n_top, -1)]
    repeats = [_per_rule(top.repeats, n_top, None)]
    captures, temperatures = [_per_rule(top.captures, n_top, None)], [_per_rule(top.temperatures, n_top, None)]
    unordered = [_per_rule(top.unordered, n_top, None)]
    first_rows, follow_rows = [first], [follow]
    top_start = lookahead.la_start.copy()
    top_start[order] = -1  # the stubs are dead; their filters go to the parts' roots below
    la_start = [top_start]
    la_next, la_final, la_rows = [lookahead.la_next], [lookahead.la_final], len(lookahead.la_final)
    hash_parts = [_top_hashes(hashes, stubs, n_top)] if hashes is not None else None
    scc_base = (max(hashes.scc, default=-1) + 1) if hashes is not None else 0
    state_base = len(top_arrays.state_rule)
    for s in order:
        part, base, pf = stubs[s], offsets[s], stubs[s].fsms
        local_rules = list(range(base, base + len(pf.fsms)))
        tokens = list(pf.token_sets)
        fsms.extend(relabel(f, local_rules, tokens, token_sets) for f in pf.fsms)
        names.extend(names[s] if r == pf.root else f"{names[s]}.{name}" for r, name in enumerate(pf.rule_names))
        nullable.extend(pf.nullable)
        productive.extend(pf.productive)
        rules = np.arange(base, base + len(pf.fsms), dtype=np.int32)
        pieces.append((part.arrays, state_base, rules, np.array([token_sets[t] for t in tokens], dtype=np.int32), rules))
        state_base += len(part.arrays.state_rule)
        budgets.append(_per_rule(pf.max_tokens, len(pf.fsms), -1))
        char_budgets.append(_per_rule(pf.max_chars, len(pf.fsms), -1))
        repeats.append(_per_rule(pf.repeats, len(pf.fsms), None))
        captures.append(_per_rule(pf.captures, len(pf.fsms), None))
        temperatures.append(_per_rule(pf.temperatures, len(pf.fsms), None))
        unordered.append(_per_rule(pf.unordered, len(pf.fsms), None))
        first_rows.append(part.first)
        follow_rows.append(part.follow | (part.tail[:, None] & follow[s]))
        start = part.lookahead.la_start.copy()
        start[start >= 0] += la_rows
        if not part.root_used:
            start[part.root] = lookahead.la_start[s]  # the top's rows come first: numbers unchanged
        la_start.append(start)
        nxt = part.lookahead.la_next.copy()
        nxt[nxt >= 0] += la_rows
        la_next.append(nxt)
        la_final.append(part.lookahead.la_final)
        la_rows += len(part.lookahead.la_final)
        for kind in ("inferred", "verified", "unverified"):
            getattr(report, kind).update({f"{names[s]}.{k}": v for k, v in getattr(part.report, kind).items()})
        if hash_parts is not None:
            h = part.hashes
            hash_parts.append((h.hashes, h.canonical, h.kinds, tuple(c + scc_base for c in h.scc)))
            scc_base += max(h.scc, default=-1) + 1
    budgets_t, chars_t, repeats_t, captures_t, temperatures_t, unordered_t = (
        tuple(x for chunk in lists for x in chunk)
        for lists in (budgets, char_budgets, repeats, captures, temperatures, unordered))
    linked = GrammarFSMs(tuple(names), tuple(fsms), top.root, tuple(nullable), tuple(productive), tuple(token_sets),
                         budgets_t if any(b >= 0 for b in budgets_t) else (),
                         chars_t if any(b >= 0 for b in chars_t) else (),
                         repeats_t if any(r is not None for r in repeats_t) else (),
                         captures_t if any(c is not None for c in captures_t) else (),
                         temperatures_t if any(t is not None for t in temperatures_t) else (),
                         unordered_t if any(u is not None for u in unordered_t) else ())
    arrays = _join_arrays(pieces, linked)
    la = LookaheadArrays(np.concatenate(la_start), np.concatenate(la_next), np.concatenate(la_final))
    joined = None
    if hash_parts is not None:
        joined = RuleHashes(*(tuple(x for p in hash_parts for x in p[k]) for k in range(4)))
    classes = LinkedClasses(arrays, len(top_arrays.state_rule), tuple(stubs[s] for s in order))
    return AnalysedGrammar(linked, arrays, np.concatenate(first_rows), np.concatenate(follow_rows), la, report,
                           joined, classes)


def _per_rule(values: tuple, n: int, default) -> tuple:
    return values if values else (default,) * n


def _top_hashes(hashes: RuleHashes, stubs: dict, n_top: int) -> tuple:
    """The top's hashes with its (dead) stubs unhashed."""
    values, canonical, kinds = list(hashes.hashes), list(hashes.canonical), list(hashes.kinds)
    for s in stubs:
        values[s], canonical[s], kinds[s] = None, None, KIND_UNHASHED
    return tuple(values), tuple(canonical), tuple(kinds), hashes.scc


def _join_arrays(pieces: list, linked: GrammarFSMs) -> FSMArrays:
    """Concatenate the flat arrays of the pieces (see `link`)."""
    def cat(field, fn=None):
        return np.concatenate([getattr(p[0], field) if fn is None else fn(*p) for p in pieces]).astype(
            getattr(pieces[0][0], field).dtype)

    def csr(field):
        counts = np.concatenate([np.diff(getattr(p[0], field)) for p in pieces])
        return np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)

    return FSMArrays(
        state_rule=cat("state_rule", lambda a, base, rules, toks, refs: rules[a.state_rule]),
        rule_start=cat("rule_start", lambda a, base, rules, toks, refs: a.rule_start + base),
        is_final=cat("is_final"),
        byte_indptr=csr("byte_indptr"),
        byte_lo=cat("byte_lo"),
        byte_hi=cat("byte_hi"),
        byte_dst=cat("byte_dst", lambda a, base, rules, toks, refs: a.byte_dst + base),
        ref_indptr=csr("ref_indptr"),
        ref_rule=cat("ref_rule", lambda a, base, rules, toks, refs: a.ref_rule if refs is None else refs[a.ref_rule]),
        ref_dst=cat("ref_dst", lambda a, base, rules, toks, refs: a.ref_dst + base),
        rule_nullable=np.array(linked.nullable, dtype=np.bool_),
        root_rule=np.array([linked.root], dtype=np.int32),
        tok_indptr=csr("tok_indptr"),
        tok_set=cat("tok_set", lambda a, base, rules, toks, refs: toks[a.tok_set]),
        tok_dst=cat("tok_dst", lambda a, base, rules, toks, refs: a.tok_dst + base),
        rule_budget=cat("rule_budget"),
        rule_char_budget=cat("rule_char_budget"),
        rule_rep_lo=cat("rule_rep_lo"),
        rule_rep_hi=cat("rule_rep_hi"),
        rule_required=cat("rule_required"),
        rule_member=cat("rule_member"),
        rule_leo=leo_rules(linked),
    )
