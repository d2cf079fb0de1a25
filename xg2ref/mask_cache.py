"""XGrammar-2 §3.4 and XGrammar §3.1-§3.2: the adaptive token-mask cache.

Most of a token mask does not depend on the parse stack. For every scannable FSM state (a state
with byte edges) the vocabulary splits, from that state alone, into

- **accepted** tokens: their bytes can be read without leaving the state's rule;
- **rejected** tokens: they die inside the rule, and wherever the rule may end first, no
  parent of the rule can read what is left (context expansion, XGrammar §3.2);
- **uncertain** tokens: the rule may end inside them and a parent might go on; only these
  need the full Earley chart at run time.

The inference rules and the loops sit in `xg2ref/kernels/mask_cache.py` (building entries)
and `xg2ref/kernels/mask_fill.py` (using them); lookahead assertions, inferred or verified,
filter tokens while entries are built (`xg2ref/lookahead.py`). This module builds
one entry per class of scannable states that read every token alike (xg2ref/state_classes.py:
the states of a long repetition share one), eagerly, and stores it in the smallest of three forms
(XGrammar §3.1, Figure 5): the list of accepted ids, the list of rejected ids, or a bitset of
the accepted ids (int32 words, the bitmask layout). Uncertain tokens are kept as indices into
the byte-sorted vocabulary so that the run-time check can reuse shared prefixes.

At run time (`AdaptiveTokenMaskCache.fill`, XGrammar Algorithm 1) the accepted sets of the
current set's scannable states are OR-ed into the bitmask, and their uncertain tokens not
already accepted are run through the full chart.

Example: for `root ::= "[" item ("," item)* "]"; item ::= [a-z]+` and the state of `item` after
one letter, `"ab"` is accepted, `"1"` rejected, and `"a,"` uncertain (item may end after `a`,
and `,` can follow it); `"a)"` is rejected: no parent of item reads `)`.

Entries are built eagerly, or with JIT (§3.5) on the first visit of a state, the K classes of
highest estimated cost first (`estimated_costs`); with a cross-grammar cache (§3.3,
xg2ref/cross_grammar_cache.py) an entry another grammar built for the same rule machine is
reused and only the tokens its context decides are classified again.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

import numpy as np

from .earley import EarleyParser, grown_chart
from .exceptions import GrammarLimitError
from .fsm.build import FSMArrays
from .fsm.fsm import REPEAT_UNBOUNDED
from .kernels import earley as K
from .kernels import mask_cache as MK
from .kernels import mask_fill as MF
from .lookahead import LookaheadArrays, no_lookahead
from .state_classes import shareable_rules, state_classes
from .tokenizer_info import VocabArrays
from .util import bound_kernel

KIND_ACCEPTED, KIND_REJECTED, KIND_BITSET = 0, 1, 2
UNBUILT = MF.UNBUILT  # state_entry of a state whose entry is not built yet (JIT)
KIND_NAMES = ("accepted list", "rejected list", "bitset")
# States given a row of the pure-state DFA table while building entries (1 KiB each).
MAX_PURE_ROWS = 16384
# The cost model of JIT (XGrammar-2 §3.5) when the caller names no K. §3.5 builds the K costliest
# entries while the model prefills; with no prefill to hide behind, the budget is a share of the
# grammar's own compile time: the costliest classes are built now, at most AUTO_EAGER_MAX, while
# their predicted build time (estimated cost times SECONDS_PER_COST, the slow end of what entries
# take on the Llama-3 vocabulary: 0.02-0.4 us per unit) fits in AUTO_EAGER_SHARE of that time.
# The others wait for their first visit. So compile time and first mask grow by at most half.
# Only entries whose estimate is at least MIN_EAGER_COST of the regular tokens are worth building
# early (a cheaper one costs a step little); a budget too small for one is not even estimated.
AUTO_EAGER_SHARE = 0.5
AUTO_EAGER_MAX = 2
SECONDS_PER_COST = 4e-7
MIN_EAGER_COST = 0.2


class MaskCacheArrays(NamedTuple):
    """All entries in flat arrays (S states, E entries, W = ceil(vocab_size / 32) words).

    state_entry : int32[S]       entry of each state, -1 for states without byte edges
    entry_state : int32[E]
    entry_kind : int8[E]         KIND_ACCEPTED / KIND_REJECTED / KIND_BITSET
    list_indptr : int64[E+1]     accepted or rejected token ids of entry e (per its kind)
    list_ids : int32[...]
    bitset_offset : int64[E]     first word of entry e's accepted bitset (KIND_BITSET only)
    bitset_words : int32[...]
    unc_indptr : int64[E+1]      uncertain tokens of entry e, as sorted-vocabulary indices
    unc_sorted : int32[...]
    regular_words : int32[W]     bitset of the regular tokens
    counts : int64[E, 3]         accepted / rejected / uncertain counts of each entry
    noexit_entry : int32[S]      entry of a counted repetition's state for counts in the NOEXIT
                                 zone (state_entry serves the FREE zone; kernels/mask_fill.py)
    ex_key, ex_entry             sorted (state << 32 | count) -> entry, for counts near a bound
    count_slack : int64[1]       the longest token's bytes (how near a bound is "near")
    """

    state_entry: np.ndarray
    entry_state: np.ndarray
    entry_kind: np.ndarray
    list_indptr: np.ndarray
    list_ids: np.ndarray
    bitset_offset: np.ndarray
    bitset_words: np.ndarray
    unc_indptr: np.ndarray
    unc_sorted: np.ndarray
    regular_words: np.ndarray
    counts: np.ndarray
    noexit_entry: np.ndarray
    ex_key: np.ndarray
    ex_entry: np.ndarray
    count_slack: np.ndarray


@dataclass(frozen=True)
class CacheStats:
    """What a cache holds, for reports (`xg2ref bench mask`)."""

    entries: int
    accepted: int
    rejected: int
    uncertain: int
    kinds: tuple  # number of entries stored as each KIND_*
    build_seconds: float
    memory_bytes: int

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {name}" for n, name in zip(self.kinds, KIND_NAMES))
        return (f"{self.entries} entries ({kinds}); tokens: {self.accepted:,} accepted, "
                f"{self.rejected:,} rejected, {self.uncertain:,} uncertain; "
                f"{self.memory_bytes / 1024:.1f} KiB, built in {self.build_seconds:.3f} s")


def rule_occurrences(fsm: FSMArrays) -> tuple[np.ndarray, np.ndarray]:
    """(occ_indptr, occ_dst): for each rule, the targets of the FSM edges that reference it."""
    n_rules = len(fsm.rule_start)
    rules = fsm.ref_rule.astype(np.int64)
    order = np.argsort(rules, kind="stable")
    occ_dst = fsm.ref_dst[order].astype(np.int32)
    occ_indptr = np.zeros(n_rules + 1, dtype=np.int64)
    np.cumsum(np.bincount(rules, minlength=n_rules), out=occ_indptr[1:])
    return occ_indptr, occ_dst


def pack_ids(ids: np.ndarray, words: np.ndarray) -> None:
    """Set the bits of `ids` in int32 `words`."""
    bits = np.zeros(len(words) * 32, dtype=np.bool_)
    bits[ids] = True
    words |= np.packbits(bits, bitorder="little").view(np.int32)


_TRIES: dict = {}  # id(sorted_offsets) -> (weak reference to it, VocabFacts)


class VocabFacts(NamedTuple):
    """What every mask cache over one vocabulary reads, computed once per vocabulary."""

    identity: np.ndarray  # 0..m-1 (the sorted tokens' own positions)
    subtree_end: np.ndarray  # end of each sorted token's trie subtree (MK.trie_subtree_end)
    longest: int  # bytes of the longest token
    heads: np.ndarray  # float64[256]: the regular tokens whose first byte is b (cost estimates)


def _vocab_facts(vocab: VocabArrays) -> VocabFacts:
    """The `VocabFacts` of a vocabulary, computed once (its arrays are read-only)."""
    key = id(vocab.sorted_offsets)
    held = _TRIES.get(key)
    if held is None or held[0]() is not vocab.sorted_offsets:
        identity = np.arange(len(vocab.sorted_ids), dtype=np.int32)
        first = vocab.sorted_bytes[vocab.sorted_offsets[:-1][np.diff(vocab.sorted_offsets) > 0]]
        facts = VocabFacts(identity, MK.trie_subtree_end(vocab.sorted_offsets, identity, vocab.sorted_lcp),
                           int(np.diff(vocab.token_offsets).max(initial=0)),
                           np.bincount(first, minlength=256).astype(np.float64))
        held = (weakref.ref(vocab.sorted_offsets), facts)
        for k in [k for k, v in _TRIES.items() if v[0]() is None]:
            del _TRIES[k]
        _TRIES[key] = held
    return held[1]


class _Classifier:
    """Runs `classify_tokens` for one state after another, growing the two charts on demand."""

    def __init__(self, fsm: FSMArrays, vocab: VocabArrays, lookahead: Optional[LookaheadArrays] = None,
                 follow: Optional[np.ndarray] = None):
        self.fsm, self.vocab = fsm, vocab
        self.lookahead = lookahead if lookahead is not None else no_lookahead(len(fsm.rule_start))
        self.occ_indptr, self.occ_dst = rule_occurrences(fsm)
        # the kernel walks the vocabulary in sorted order: give it the bytes in that order, with
        # sorted position k as the token's "id", so memory is read front to back
        facts = _vocab_facts(vocab)
        self.identity, self.subtree_end, longest = facts.identity, facts.subtree_end, facts.longest
        self.comp = np.zeros(longest + 2, dtype=np.int8)
        self.path = np.zeros(longest + 2, dtype=np.int32)  # the pure walk's states (TRIE-SHARE)
        self.work = np.zeros(2 * MK.MAX_CONTEXT_RUNS + 2 * (longest + 2) + 4, dtype=np.int64)
        self.seen = np.zeros(len(fsm.rule_start) * (longest + 1) + 1, dtype=np.int64)
        # FOLLOW1: -1 = ask context expansion, 0 = the byte never follows the rule (grammar analysis)
        self.follow1 = np.full((len(fsm.rule_start), 256), -1, dtype=np.int8)
        if follow is not None:
            self.follow1[~follow] = 0
        self.loop = np.zeros(256, dtype=np.bool_)
        # the pure-state table, filled one rule at a time before a state of it is classified (a
        # pure walk never leaves the rule of the state it starts from)
        self.pure_row = np.full(len(fsm.state_rule), -1, dtype=np.int32)
        self.pure_next = np.zeros((0, 256), dtype=np.int32)
        self._pure_rows = 0
        self._pure_done = np.zeros(len(fsm.rule_start), dtype=np.bool_)
        ordered = bool(np.all(fsm.state_rule[1:] >= fsm.state_rule[:-1]))
        rules = np.arange(len(fsm.rule_start))
        self._rule_lo = np.searchsorted(fsm.state_rule, rules, "left") if ordered else None
        self._rule_hi = np.searchsorted(fsm.state_rule, rules, "right") if ordered else None
        self.chart = K.new_chart()
        self.ctx_chart = K.new_chart()
        m = len(vocab.sorted_ids)
        self.acc_idx = np.zeros(m, dtype=np.int32)
        self.unc_idx = np.zeros(m, dtype=np.int32)
        self.n_list = np.zeros(2, dtype=np.int64)
        self._kernel = None  # classify_tokens' entry for these argument types (util.bound_kernel)

    def classify(self, state: int, marked: Optional[np.ndarray] = None, record: bool = False,
                 count: int = 0) -> np.ndarray:
        """The class of every sorted token; afterwards `accepted()` and `uncertain()` list the
        sorted indices of those two classes.

        `marked` (sorted indices): classify only those; the others come back rejected and are
        not listed. `record`: also fill `detail` with what each class owes to the state's rule
        alone (MK.D_*, for the cross-grammar cache). `count`: the seed item's count (a zone's
        stand-in or one count) when the state is in a counted repetition.
        """
        v = self.vocab
        self._ensure_pure(int(self.fsm.state_rule[state]))
        out = np.zeros(len(v.sorted_ids), dtype=np.int8)
        if marked is not None:
            out[marked] = MK.TODO
        self.detail = np.zeros(len(v.sorted_ids) if record else 1, dtype=np.int8)
        track = record and count >= K.STRICT_BASE  # a counted repetition's zone stand-in
        self.loops = np.full(len(v.sorted_ids) if track else 1, -1, dtype=np.int32)
        self.exits = np.zeros(len(v.sorted_ids) if track else 1, dtype=np.int8)
        self.n_list[:] = 0
        state, count, only_marked, record, track = int(state), int(count), marked is not None, bool(record), bool(track)
        while (status := MK.init_chart_at_state(self.fsm, self.chart, state, count)) != K.OK:
            self.chart = grown_chart(self.chart, status)
        j = 0
        while True:
            args = (self.fsm, self.chart, self.ctx_chart, state, self.occ_indptr, self.occ_dst, v.sorted_bytes,
                    v.sorted_offsets, self.identity, v.sorted_lcp, self.subtree_end, j, self.comp, self.work,
                    self.seen, self.follow1, self.loop, self.pure_row, self.pure_next, *self.lookahead, out,
                    self.acc_idx, self.unc_idx, self.n_list, only_marked, record, self.detail, track, self.loops,
                    self.exits, self.path)
            if self._kernel is None:  # every call passes these types (its own arrays, ints and bools)
                self._kernel = bound_kernel(MK.classify_tokens, *args)
            status, j, which = self._kernel(*args)
            if status == K.OK:
                return out
            if which == 0:
                self.chart = grown_chart(self.chart, status)
            else:
                self.ctx_chart = grown_chart(self.ctx_chart, status)
            if j == 0:  # the kernel restarts from the state's own sets
                while (st := MK.init_chart_at_state(self.fsm, self.chart, state, count)) != K.OK:
                    self.chart = grown_chart(self.chart, st)


    def _ensure_pure(self, rule: int) -> None:
        """Rows of the pure-state table for the states of `rule` (all states at once when the
        states are not grouped by rule)."""
        if self._pure_done[rule]:
            return
        lo, hi = (int(self._rule_lo[rule]), int(self._rule_hi[rule])) if self._rule_lo is not None \
            else (0, len(self.pure_row))
        if self._rule_lo is None:
            self._pure_done[:] = True
        self._pure_done[rule] = True
        rows = MK.mark_pure_states(self.fsm, lo, hi, self._pure_rows, MAX_PURE_ROWS, self.pure_row)
        if rows > len(self.pure_next):
            grown = np.zeros((max(rows, 2 * len(self.pure_next)), 256), dtype=np.int32)
            grown[:self._pure_rows] = self.pure_next[:self._pure_rows]
            self.pure_next = grown
        MK.fill_pure_next(self.fsm, lo, hi, self.pure_row, self.pure_next)
        self._pure_rows = rows

    def accepted(self) -> np.ndarray:
        return self.acc_idx[:self.n_list[0]]

    def uncertain(self) -> np.ndarray:
        return self.unc_idx[:self.n_list[1]]


class AdaptiveTokenMaskCache:
    """The cache of one compiled grammar: an entry per class of scannable states, and the
    run-time fill.

    With `jit` (XGrammar-2 §3.5), entries are built on the first visit of one of their states
    (when a mask is filled there), except the `eager` classes named up front; masks are the same
    either way. A state of a counted repetition (§3.6) has an entry per zone of counts
    (xg2ref/grammar/repetition.py): the FREE one is built like any other; the NOEXIT one and
    those of single counts near a bound are built on first use, JIT or not.
    """

    def __init__(self, fsm: FSMArrays, vocab: VocabArrays, vocab_size: int,
                 progress: Optional[Callable[[int, int], None]] = None, lookahead: Optional[LookaheadArrays] = None,
                 follow: Optional[np.ndarray] = None, share_entries: bool = True, jit: bool = False,
                 pool=None, eager_entries: Optional[int] = 0, first_rows: Optional[np.ndarray] = None,
                 classes: Optional[Callable[[int], np.ndarray]] = None, max_bytes: int = -1,
                 compile_seconds: float = 0.0):
        start = time.perf_counter()
        self.max_bytes = max_bytes  # entries past this many bytes raise GrammarLimitError (negative: no limit)
        self._entry_bytes = 0
        self.vocab = vocab
        self.vocab_size = vocab_size
        self._words = (vocab_size + 31) // 32
        scannable = np.flatnonzero(np.diff(fsm.byte_indptr) > 0).astype(np.int32)
        longest = _vocab_facts(vocab).longest
        if share_entries and len(scannable):
            # one entry per class of states that read every token alike (xg2ref/state_classes.py)
            # (`classes(steps)`: the same partition from a caller that holds it in pieces, linking.py)
            labels = (classes(longest + 1) if classes is not None
                      else state_classes(fsm, longest + 1, shareable_rules(fsm)))[scannable]
            _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
            rank = np.empty(len(first), dtype=np.int64)
            rank[np.argsort(first)] = np.arange(len(first))  # classes numbered in state order
            member_class = rank[inverse.reshape(-1)]
        else:
            member_class = np.arange(len(scannable))
        n_classes = int(member_class.max(initial=-1)) + 1
        self._class_rep = np.zeros(n_classes, dtype=np.int32)
        self._class_rep[member_class[::-1]] = scannable[::-1]  # the first state of each class
        order = np.argsort(member_class, kind="stable")
        self._members_flat = scannable[order]  # the states of class c: _members(c), CSR over this
        self._members_ptr = np.concatenate([[0], np.cumsum(np.bincount(member_class, minlength=n_classes))])
        self._state_entry = np.full(len(fsm.state_rule), -1, dtype=np.int32)
        self._state_entry[scannable] = UNBUILT
        # counted repetitions (§3.6): a seed count per class for the FREE zone, other zones apart
        self._fsm, self._slack = fsm, longest
        counted_rule = fsm.rule_rep_lo >= 0
        self._counted = bool(counted_rule.any())
        self._class_counted = counted_rule[fsm.state_rule[self._class_rep]]
        self._class_unordered = (fsm.rule_required >= 0)[fsm.state_rule[self._class_rep]]
        self._noexit_entry = np.full(len(fsm.state_rule), -1, dtype=np.int32)
        self._noexit_entry[scannable[counted_rule[fsm.state_rule[scannable]]]] = UNBUILT
        self._exact: dict = {}  # state << 32 | count -> entry
        self._shallow = _shallow_counted_rules(fsm)
        self._records: dict = {}  # class -> (loops, exits, FREE classes): entries near a bound derived
        self._classifier = _Classifier(fsm, vocab, lookahead, follow)
        self._pool = pool  # a cross_grammar_cache.PoolView, or None
        self._first = first_rows  # FIRST(r) as bool[R, 256], for cost estimates (lookahead.first_bytes)
        self._regular_words = np.zeros(self._words, dtype=np.int32)
        pack_ids(vocab.sorted_ids, self._regular_words)
        self._buffer = np.zeros(len(vocab.sorted_ids), dtype=np.int32)
        self._parts: dict[str, list] = {"state": [], "kind": [], "list": [], "bitset": [], "unc": [], "count": []}
        self._packed = 0  # entries already in the flat arrays (`_pack` appends the others)
        self._tallies = [0, 0, 0, 0, 0, 0]  # accepted, rejected, uncertain; entries of each kind
        self._columns = {"state": _Column(np.int32), "kind": _Column(np.int8), "list_indptr": _Column(np.int64),
                         "list_ids": _Column(np.int32), "bitset_offset": _Column(np.int64),
                         "bitset_words": _Column(np.int32), "unc_indptr": _Column(np.int64),
                         "unc_sorted": _Column(np.int32), "counts": _Column(np.int64, 3)}
        self._columns["list_indptr"].extend([0])
        self._columns["unc_indptr"].extend([0])
        self._exact_packed = (-1, None)
        self._cand = np.zeros(1, dtype=np.int32)  # the fill kernel's candidates (room for every uncertain id)
        self._cand_tmp = np.zeros_like(self._cand)
        self._unbuilt = n_classes
        self._entry_mark = np.zeros(1, dtype=np.int64)  # the fill kernel's marks, one per entry + a counter
        self._scratch = np.zeros(self._words, dtype=np.int32)
        self._fill = None  # the fill kernel's entry, bound on first use
        self._state_class = np.full(len(fsm.state_rule), -1, dtype=np.int64)  # class of each state
        self._state_class[scannable] = member_class
        self.build_seconds = time.perf_counter() - start  # grows with every entry built
        if not jit:
            self._build(range(n_classes), progress)
        elif eager_entries is None:  # K chosen by the cost model
            self._build(self.auto_eager(fsm, follow, AUTO_EAGER_SHARE * compile_seconds), progress)
        else:  # the K entries estimated to cost most are built now, the others when first met
            self._build(self.costliest(eager_entries, fsm, follow) if eager_entries > 0 else [], progress)

    def estimated_costs(self, fsm: FSMArrays, follow: Optional[np.ndarray] = None) -> np.ndarray:
        """The estimated cost of each class's entry (XGrammar-2 §3.5): the regular tokens whose
        first byte its state may read (its byte edges, FIRST of its rule edges, and what may
        follow its rule when the state is final), a quarter for a pure state (a table walk)."""
        per_byte = _vocab_facts(self.vocab).heads
        first = self._first if self._first is not None else np.zeros((len(fsm.rule_start), 256), dtype=np.bool_)
        pure = np.full(len(fsm.state_rule), -1, dtype=np.int32)
        MK.mark_pure_states(fsm, 0, len(pure), 0, len(pure), pure)
        reps = self._class_rep.astype(np.int64)
        n = len(reps)
        # byte edges: +1 at lo, -1 after hi, per class row; a running sum > 0 marks the bytes read
        starts, ends = fsm.byte_indptr[reps], fsm.byte_indptr[reps + 1]
        count = (ends - starts).astype(np.int64)
        edges = np.repeat(starts - np.concatenate([[0], np.cumsum(count)[:-1]]), count) + np.arange(count.sum())
        rows = np.repeat(np.arange(n), count)
        marks = np.zeros((n, 257), dtype=np.int64)
        np.add.at(marks, (rows, fsm.byte_lo[edges].astype(np.int64)), 1)
        np.add.at(marks, (rows, fsm.byte_hi[edges].astype(np.int64) + 1), -1)
        readable = np.cumsum(marks, axis=1)[:, :256] > 0
        # rule edges: FIRST of the referenced rule
        starts, ends = fsm.ref_indptr[reps], fsm.ref_indptr[reps + 1]
        count = (ends - starts).astype(np.int64)
        edges = np.repeat(starts - np.concatenate([[0], np.cumsum(count)[:-1]]), count) + np.arange(count.sum())
        np.logical_or.at(readable, np.repeat(np.arange(n), count), first[fsm.ref_rule[edges]])
        if follow is not None:  # a final state: what may follow its rule
            final = np.flatnonzero(fsm.is_final[reps])
            readable[final] |= follow[fsm.state_rule[reps[final]]]
        costs = readable.astype(np.float64) @ per_byte
        costs[pure[reps] >= 0] *= 0.25
        return costs

    def costliest(self, k: int, fsm: FSMArrays, follow: Optional[np.ndarray] = None) -> list:
        """The k classes of highest estimated cost, most expensive first."""
        costs = self.estimated_costs(fsm, follow)
        return np.argsort(-costs, kind="stable")[:k].tolist()

    def auto_eager(self, fsm: FSMArrays, follow: Optional[np.ndarray], budget: float) -> list:
        """The classes the cost model builds at compile time: costliest first, at most
        AUTO_EAGER_MAX, each estimated at MIN_EAGER_COST of the vocabulary or more, while their
        predicted build time fits in `budget` seconds."""
        floor = MIN_EAGER_COST * len(self.vocab.sorted_ids)
        if not len(self._class_rep) or budget < floor * SECONDS_PER_COST:
            return []
        costs = self.estimated_costs(fsm, follow)
        chosen = []
        for c in np.argsort(-costs, kind="stable")[:AUTO_EAGER_MAX].tolist():
            predicted = costs[c] * SECONDS_PER_COST
            if costs[c] >= floor and predicted <= budget:
                chosen.append(int(c))
                budget -= predicted
        return chosen

    def _build(self, classes, progress=None) -> None:
        """Build the entries of `classes` (class numbers, or (class, zone) pairs for a counted
        repetition's other zones: ZONE_NOEXIT or a count) and repack the flat arrays."""
        start = time.perf_counter()
        parts, vocab, words = self._parts, self.vocab, self._words
        classes = list(classes)
        n_sorted = len(vocab.sorted_ids)
        done = 0
        while done < len(classes):
            job = classes[done]
            done += 1
            c, zone = job if isinstance(job, tuple) else (job, MF.ZONE_FREE)
            if zone != MF.ZONE_FREE and self._has_zone(c, zone):
                continue
            s = int(self._class_rep[c])
            seed = 0 if not self._class_counted[c] else (
                K.FREE_BASE if zone == MF.ZONE_FREE else K.NOEXIT_BASE if zone == MF.ZONE_NOEXIT else int(zone))
            if self._class_unordered[c]:
                acc, unc = self._unordered_entry(s)
            elif c in self._records and zone != MF.ZONE_FREE:
                acc, unc = self._derived(c, zone)
            elif self._class_counted[c] and zone == MF.ZONE_FREE and self._shallow[self._fsm.state_rule[s]]:
                cls = self._classifier.classify(s, record=True, count=seed)
                acc, unc = self._classifier.accepted().copy(), self._classifier.uncertain().copy()
                self._records[c] = (self._classifier.loops, self._classifier.exits.astype(np.bool_), cls)
                classes.extend((c, z) for z in self._bound_zones(c))  # cheap now: all in this repack
            elif self._pool is not None:  # through the cross-grammar cache (cross_grammar_cache.py)
                acc, unc = self._pool.build(s, self._members(c), self._classifier, seed)
            else:
                self._classifier.classify(s, count=seed)
                acc, unc = self._classifier.accepted(), self._classifier.uncertain()
            n_acc, n_unc = len(acc), len(unc)
            parts["count"].append((n_acc, n_sorted - n_acc - n_unc, n_unc))
            # the smallest form: a list of 4-byte ids, or a bitset of `words` 4-byte words
            kind = int(np.argmin([n_acc, n_sorted - n_acc - n_unc, words]))
            parts["kind"].append(kind)
            if kind == KIND_BITSET:
                bits = np.zeros(words, dtype=np.int32)
                MK.pack_sorted(acc, vocab.sorted_ids, bits)
                parts["bitset"].append(bits)
                parts["list"].append(self._buffer[:0].copy())
            elif kind == KIND_ACCEPTED:
                parts["list"].append(np.sort(vocab.sorted_ids[acc]))
            else:
                rejected = np.ones(n_sorted, dtype=np.bool_)
                rejected[acc] = False
                rejected[unc] = False
                parts["list"].append(np.sort(vocab.sorted_ids[rejected]))
            parts["unc"].append(unc.copy())
            parts["state"].append(s)
            self._entry_bytes += parts["list"][-1].nbytes + 4 * n_unc + (4 * words if kind == KIND_BITSET else 0) + 64
            if 0 <= self.max_bytes < self._entry_bytes:
                raise GrammarLimitError(f"the grammar's mask-cache entries need more than {self.max_bytes:,} bytes "
                                        f"(what GrammarCompiler's max_grammar_bytes leaves after the FSM arrays)")
            e = self._packed + len(parts["kind"]) - 1
            members = self._members(c)
            if zone == MF.ZONE_FREE:
                self._state_entry[members] = e
                self._unbuilt -= 1
            elif zone == MF.ZONE_NOEXIT:
                self._noexit_entry[members] = e
            else:
                for m in members.tolist():
                    self._exact[(m << 32) | int(zone)] = e
            if progress is not None:
                progress(done, len(classes))
        self.build_seconds += time.perf_counter() - start
        self._pack()

    def _unordered_entry(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """The entry of state s of an unordered rule (kernels/earley.py), whose items differ in
        the set of members seen: built with the stand-in sets NONE (every guard fails) and ALL
        (every guard passes). A token NONE accepts is accepted whatever the set, one ALL rejects
        is rejected whatever the set; the rest are uncertain (checked on the real chart)."""
        self._classifier.classify(s, count=K.STRICT_BASE)
        sure = self._classifier.accepted().copy()
        self._classifier.classify(s, count=K.FREE_BASE)
        maybe = np.union1d(self._classifier.accepted(), self._classifier.uncertain())
        return sure, np.setdiff1d(maybe, sure, assume_unique=True).astype(sure.dtype)

    def _members(self, c: int) -> np.ndarray:
        """The scannable states of class c."""
        return self._members_flat[self._members_ptr[c]:self._members_ptr[c + 1]]

    def _has_zone(self, c: int, zone: int) -> bool:
        s = int(self._class_rep[c])
        if zone == MF.ZONE_NOEXIT:
            return self._noexit_entry[s] >= 0
        return ((s << 32) | int(zone)) in self._exact

    def _bound_zones(self, c: int) -> list:
        """The zones other than FREE that counts of class c's repetition fall in: NOEXIT, and
        every count within the longest token of a bound (at most 2L + 2 of them)."""
        rule = self._fsm.state_rule[self._class_rep[c]]
        lo, hi, slack = int(self._fsm.rule_rep_lo[rule]), int(self._fsm.rule_rep_hi[rule]), self._slack
        near = set(range(max(lo - 2 - slack, 0), max(lo - 1, 0)))
        if hi < REPEAT_UNBOUNDED:
            near |= set(range(max(hi - 2 - slack, 0), hi))
        zones = {int(MF.count_zone(lo, hi, k, slack)) for k in near}
        if lo - 1 - slack > 0:
            zones.add(MF.ZONE_NOEXIT)
        return sorted(z for z in zones if z != MF.ZONE_FREE)

    def _derived(self, c: int, zone: int) -> tuple[np.ndarray, np.ndarray]:
        """The entry of class c for a zone other than FREE, from the FREE entry's record (a
        shallow counted repetition, see `_shallow_counted_rules`). With cap copies still allowed
        (r - 1 - count; unbounded in the NOEXIT zone, where no token can reach a bound):

            t read inside, fewest copies <= cap                        |- accepted
            t read inside otherwise, the rule may not end inside it    |- rejected
            t read inside otherwise, it may                            |- uncertain
            t not read inside, FREE rejects it                         |- rejected (FREE allows more)
            t not read inside, FREE does not reject it                 |- uncertain
        """
        loops, exits, cls = self._records[c]
        inside = loops >= 0
        if zone == MF.ZONE_NOEXIT:
            return np.flatnonzero(inside).astype(np.int32), np.zeros(0, np.int32)
        rule = self._fsm.state_rule[self._class_rep[c]]
        cap = int(self._fsm.rule_rep_hi[rule]) - 1 - int(zone)
        fits = inside & (loops <= cap)
        unc = (inside & ~fits & exits) | (~inside & (cls != MK.REJECTED))
        return np.flatnonzero(fits).astype(np.int32), np.flatnonzero(unc).astype(np.int32)

    def _pack(self) -> None:
        """Append the entries built since the last call to the flat arrays (amortized: a JIT
        build costs its own entry, not a copy of every entry before it)."""
        parts, cols = self._parts, self._columns
        tallies = self._tallies
        for k, kind in enumerate(parts["kind"]):
            for i, c in enumerate(parts["count"][k]):
                tallies[i] += c
            tallies[3 + kind] += 1
            cols["state"].extend([parts["state"][k]])
            cols["kind"].extend([kind])
            cols["list_ids"].extend(parts["list"][k])
            cols["list_indptr"].extend([cols["list_ids"].n])
            cols["bitset_offset"].extend([cols["bitset_words"].n if kind == KIND_BITSET else -1])
            if kind == KIND_BITSET:
                cols["bitset_words"].extend(parts["bitset"].pop(0))
            cols["unc_sorted"].extend(parts["unc"][k])
            cols["unc_indptr"].extend([cols["unc_sorted"].n])
            cols["counts"].extend([parts["count"][k]])
        self._packed += len(parts["kind"])
        for key in parts:
            parts[key].clear()
        if self._exact_packed[0] != len(self._exact):
            order = sorted(self._exact)
            self._exact_packed = (len(self._exact), (np.array(order, dtype=np.int64),
                                                     np.array([self._exact[k] for k in order], dtype=np.int32)))
        ex_key, ex_entry = self._exact_packed[1]
        self.arrays = MaskCacheArrays(
            state_entry=self._state_entry, entry_state=cols["state"].view(), entry_kind=cols["kind"].view(),
            list_indptr=cols["list_indptr"].view(), list_ids=cols["list_ids"].view(),
            bitset_offset=cols["bitset_offset"].view(), bitset_words=cols["bitset_words"].view(),
            unc_indptr=cols["unc_indptr"].view(), unc_sorted=cols["unc_sorted"].view(),
            regular_words=self._regular_words, counts=cols["counts"].view(), noexit_entry=self._noexit_entry,
            ex_key=ex_key, ex_entry=ex_entry, count_slack=np.array([self._slack], dtype=np.int64),
        )
        n = self._packed
        self.stats = CacheStats(n, *tallies[:3], tuple(tallies[3:]), self.build_seconds, self.memory_size_bytes)
        if len(self._entry_mark) < n + 1:  # room for the new entries' marks; the counter goes last
            marks = np.zeros(max(n + 1, 2 * len(self._entry_mark)), dtype=np.int64)
            marks[-1] = self._entry_mark[-1]
            self._entry_mark = marks
        if len(self._cand) < max(len(self.arrays.unc_sorted), 1):
            self._cand = np.zeros(max(len(self.arrays.unc_sorted), 2 * len(self._cand)), dtype=np.int32)
            self._cand_tmp = np.zeros_like(self._cand)

    @property
    def unbuilt_entries(self) -> int:
        """Entries not built yet (JIT); 0 once every class has one."""
        return self._unbuilt

    def ensure_entries(self, states: np.ndarray, counts: Optional[np.ndarray] = None) -> int:
        """Build the entries that items in `states` (with `counts`, for counted repetitions)
        lack (JIT, and a counted repetition's other zones). Returns how many were built."""
        jobs = set(self._state_class[states[self._state_entry[states] == UNBUILT]].tolist())
        if self._counted and counts is not None:
            fsm = self._fsm
            for s, k in zip(states.tolist(), counts.tolist()):
                rule = fsm.state_rule[s]
                if fsm.rule_rep_lo[rule] < 0 or self._state_entry[s] == -1:
                    continue
                zone = int(MF.count_zone(fsm.rule_rep_lo[rule], fsm.rule_rep_hi[rule], k, self._slack))
                c = int(self._state_class[s])
                if zone != MF.ZONE_FREE and not self._has_zone(c, zone):
                    jobs.add((c, zone))
                    if self._shallow[rule] and c not in self._records:
                        jobs.add(c)  # its FREE entry first: the others derive from its record
        if not jobs:
            return 0
        self._build(sorted(jobs, key=lambda j: j if isinstance(j, tuple) else (j, -3)))
        return len(jobs)

    @property
    def memory_size_bytes(self) -> int:
        """Bytes of the entries (every array of `MaskCacheArrays`)."""
        return int(sum(a.nbytes for a in self.arrays))

    def _fill_args(self, parser: EarleyParser, not_regular, stop_ids, words) -> tuple:
        return (parser.arrays, parser.chart, self.arrays, self.vocab, self._entry_mark, self._scratch, self._cand,
                self._cand_tmp, not_regular, stop_ids, words)

    def fill(self, parser: EarleyParser, words: np.ndarray, not_regular: np.ndarray,
             stop_ids: np.ndarray) -> tuple[int, bool]:
        """Write the tokens allowed now into int32 `words` (cleared first): the regular tokens
        allowed by the grammar less `not_regular`, plus `stop_ids` when the input is a sentence.

        Callers pass the same arrays on every call (the kernel entry is bound to their types).
        Returns the number of uncertain tokens checked against the full chart, and whether
        every id is allowed.
        """
        args = self._fill_args(parser, not_regular, stop_ids, words)
        if self._fill is None:
            self._fill = bound_kernel(MF.fill_mask, *args)
            self._fill_layout = _layout(self.arrays)
        status, j, n_cand, full = self._fill(*args)
        if status == MF.NEED_ENTRY:  # JIT (§3.5): build what this set needs, then fill
            c = parser.chart
            k = int(c.meta[0]) - 1
            items = slice(c.set_start[k], c.set_start[k + 1])
            self.ensure_entries(c.item_state[items], c.item_count[items])
            args = self._fill_args(parser, not_regular, stop_ids, words)
            if _layout(self.arrays) != self._fill_layout:  # the bound entry takes these types only
                self._fill = bound_kernel(MF.fill_mask, *args)
                self._fill_layout = _layout(self.arrays)
            status, j, n_cand, full = self._fill(*args)
        if status != K.OK:
            v = self.vocab
            while status != K.OK:
                parser._grow(status)
                status, j = MF.check_candidates(parser.arrays, parser.chart, v.token_bytes, v.token_offsets,
                                                v.sorted_ids, self._cand, n_cand, j, words)
            MF.finish_mask(parser.arrays, parser.chart, not_regular, stop_ids, words)
            full = MF.all_allowed(words, self.vocab_size)
        return n_cand, bool(full)


class _Column:
    """A numpy array grown by appending (its capacity doubles); `view()` is the filled part, a
    C-contiguous view, so kernels bound to the type stay valid as it grows."""

    def __init__(self, dtype, width: Optional[int] = None):
        self.buf = np.zeros((16,) if width is None else (16, width), dtype=dtype)
        self.n = 0

    def extend(self, values) -> None:
        values = np.asarray(values, dtype=self.buf.dtype)
        k = len(values)
        if self.n + k > len(self.buf):
            grown = np.zeros((max(2 * len(self.buf), self.n + k),) + self.buf.shape[1:], dtype=self.buf.dtype)
            grown[:self.n] = self.buf[:self.n]
            self.buf = grown
        self.buf[self.n:self.n + k] = values
        self.n += k

    def view(self) -> np.ndarray:
        return self.buf[:self.n]


def _layout(arrays: MaskCacheArrays) -> tuple:
    """What a bound kernel entry's types depend on: each array's dtype, rank and layout."""
    return tuple((a.dtype, a.ndim, a.flags.c_contiguous, a.flags.writeable) for a in arrays)


def _shallow_counted_rules(fsm: FSMArrays) -> np.ndarray:
    """bool[R]: counted repetitions whose machine references only rules that reference none
    (a JSON string's characters): `MK.copies_completed` can read their copy count off the
    chart, so their entries near a bound are derived from the FREE one (`_derived`)."""
    src_rule = fsm.state_rule[np.repeat(np.arange(len(fsm.state_rule)), np.diff(fsm.ref_indptr))]
    references = np.bincount(src_rule, minlength=len(fsm.rule_start)) > 0
    out = fsm.rule_rep_lo >= 0
    out[src_rule[references[fsm.ref_rule]]] = False
    return out
