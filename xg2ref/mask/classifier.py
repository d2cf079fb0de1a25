"""The Python side of entry building: `Classifier` runs the classify kernel
(xg2ref/kernels/classify.py: ACCEPT / REJECT / UNCERTAIN, XGrammar-2 §3.4) for one state after
another, growing its two Earley charts on demand, and holds what the kernel reads: the
vocabulary trie (`vocab_facts`), the rules' occurrences for context expansion (XGrammar §3.2,
`rule_occurrences`), the FOLLOW1 memo and the pure-state table.
"""

from __future__ import annotations

import threading
import weakref
from typing import NamedTuple, Optional

import numpy as np

from ..fsm.build import FSMArrays
from ..kernels import classify as KC
from ..kernels import context_expansion as CX
from ..kernels import cross_grammar as KX
from ..kernels import earley as K
from ..kernels import entry_build as EB
from ..kernels import pure_walk as PW
from ..kernels import slices as KS
from ..kernels import trie_walk as TW
from ..lookahead import LookaheadArrays, no_lookahead
from ..tokenizer_info import VocabArrays
from ..util import bound_kernel, fixed_layout, per_vocabulary
from .slices import json_string_slice

# States given a row of the pure-state DFA table while building entries (1 KiB each).
MAX_PURE_ROWS = 16384

def rule_occurrences(fsm: FSMArrays) -> tuple[np.ndarray, np.ndarray]:
    """(occ_indptr, occ_dst): for each rule, the targets of the FSM edges that reference it."""
    n_rules = len(fsm.rule_start)
    rules = fsm.ref_rule.astype(np.int64)
    order = np.argsort(rules, kind="stable")
    occ_dst = fsm.ref_dst[order].astype(np.int32)
    occ_indptr = np.zeros(n_rules + 1, dtype=np.int64)
    np.cumsum(np.bincount(rules, minlength=n_rules), out=occ_indptr[1:])
    return occ_indptr, occ_dst


_TRIES: dict = {}  # id(sorted_offsets) -> (weak reference to it, VocabFacts)


class VocabFacts(NamedTuple):
    """What every mask cache over one vocabulary reads, computed once per vocabulary."""

    identity: np.ndarray  # 0..m-1 (the sorted tokens' own positions)
    subtree_end: np.ndarray  # end of each sorted token's trie subtree (TW.trie_subtree_end)
    longest: int  # bytes of the longest token
    heads: np.ndarray  # float64[256]: the regular tokens whose first byte is b (cost estimates)


def vocab_facts(vocab: VocabArrays) -> VocabFacts:
    """The `VocabFacts` of a vocabulary, computed once (its arrays are read-only)."""
    def make() -> VocabFacts:
        identity = np.arange(len(vocab.sorted_ids), dtype=np.int32)
        first = vocab.sorted_bytes[vocab.sorted_offsets[:-1][np.diff(vocab.sorted_offsets) > 0]]
        return VocabFacts(identity, TW.trie_subtree_end(vocab.sorted_offsets, identity, vocab.sorted_lcp),
                          int(np.diff(vocab.token_offsets).max(initial=0)),
                          np.bincount(first, minlength=256).astype(np.float64))

    return per_vocabulary(_TRIES, vocab, make)


class BuildBuffers(NamedTuple):
    """The vocabulary-sized arrays of a build: the classify kernel's chart and context charts,
    its outputs (ClassifyOutputs, n sorted tokens), the merged list (int32[n]) and the pool's
    outbox (PoolRecords). Nothing in them outlives a build except the outbox, which a lease
    that ends with it untaken copies out (`Classifier.lease`); so a process needs one set per
    build running at once, not one per grammar (XGrammar-2 §3.5's builds, any thread)."""

    chart: tuple
    charts: tuple
    outs: tuple
    merged: np.ndarray
    records: tuple

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for part in (self.chart, *self.charts, self.outs, self.records) for a in part) \
            + self.merged.nbytes


def _new_records() -> KX.PoolRecords:
    return KX.PoolRecords(np.zeros((4, KX.EV_COLUMNS), dtype=np.int64), np.zeros(256, dtype=np.int32),
                          np.zeros(4, dtype=np.int64))


def _new_buffers(n: int) -> BuildBuffers:
    outs = KC.ClassifyOutputs(np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32),
                              np.zeros(KC.N_LISTS, dtype=np.int64), np.zeros(n, dtype=np.int32),
                              np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32), np.full(1, -1, dtype=np.int32),
                              np.zeros(1, dtype=np.int8))
    return BuildBuffers(K.new_chart(), KC.ContextCharts(K.new_chart(), K.new_chart()), outs,
                        np.zeros(n, dtype=np.int32), _new_records())


# A chart or outbox that one large build grew past this goes when its lease ends, not back to
# the free list (made anew, small, for the next build): the free list is kept for the process,
# and one batch of thousands of entries (`jit=False`) grows the outbox to gigabytes.
KEEP_BYTES = 16 << 20


def _kept(b: BuildBuffers) -> BuildBuffers:
    """`b` with each chart and the outbox larger than KEEP_BYTES replaced by a new one."""
    if _chart_bytes(b.chart) > KEEP_BYTES:
        b = b._replace(chart=K.new_chart())
    union, every = b.charts
    if _chart_bytes(union) > KEEP_BYTES or _chart_bytes(every) > KEEP_BYTES:
        b = b._replace(charts=KC.ContextCharts(*(K.new_chart() if _chart_bytes(c) > KEEP_BYTES else c
                                                  for c in b.charts)))
    if b.records.event.nbytes + b.records.data.nbytes > KEEP_BYTES:
        b = b._replace(records=_new_records())
    return b


def _chart_bytes(c) -> int:
    """About the bytes of chart `c` (its arrays grow with three capacities; a lease ends
    faster than a sum over every array)."""
    return 32 * len(c.item_state) + 24 * len(c.tbl_key) + 20 * len(c.set_start)


_IDLE: list = []  # the stand-ins a classifier holds between leases (never written: no kernel runs then)
_FREE: dict = {}  # id(sorted_offsets) -> (weak reference to it, the free BuildBuffers of that vocabulary)
_PARKED: dict = {}  # id(sorted_offsets) -> (weak reference to it, {token: weak reference to a parked Classifier})
PARKED_SWEEP = 64  # parked references past which the dead ones are swept
_LEASES = threading.Lock()  # free lists and parked sets change hands under it (a few list and dict steps)


def _idle_buffers() -> BuildBuffers:
    if not _IDLE:
        small = K.new_chart(1, 1, 1)
        _IDLE.append(_new_buffers(1)._replace(chart=small, charts=KC.ContextCharts(small, small)))
    return _IDLE[0]


def _free_list(vocab: VocabArrays) -> list:
    return per_vocabulary(_FREE, vocab, list)


def _parked_sets(vocab: VocabArrays) -> dict:
    return per_vocabulary(_PARKED, vocab, dict)


def _take_set(vocab: VocabArrays) -> Optional[BuildBuffers]:
    """A set for a build (holding _LEASES): a free one, else the one parked longest, else None
    (the caller makes one, outside the lock)."""
    free = _free_list(vocab)
    if free:
        return free.pop()
    parked = _parked_sets(vocab)
    while parked:
        holder = parked.pop(next(iter(parked)))()
        if holder is not None:
            return holder._unpark()
    return None


def _give_back(free: list, slot: list) -> None:
    """A parked set whose grammar is deleted goes to the free list (list.append: no lock, so it
    may run in whatever thread the collector does)."""
    if slot[0] is not None:
        free.append(slot[0])
        slot[0] = None


def shared_build_bytes() -> int:
    """Bytes of the build buffers idle in every vocabulary's free list (the memory account's
    line for them: made once per build running at once, kept for the process)."""
    lists = [held[1] for held in list(_FREE.values())]  # (list(): a snapshot, whatever another thread adds)
    return sum(b.nbytes for free in lists for b in list(free))


def _copied(records: KX.PoolRecords) -> Optional[KX.PoolRecords]:
    """The used part of `records` in an outbox of its own size (None when it is empty);
    `records` is emptied. (Each lease's part is kept apart: joining them would copy what earlier
    leases left on every later one.)"""
    z = records.sizes
    n_ev, n_data = int(z[KX.R_EVENTS]), int(z[KX.R_DATA])
    if n_ev == 0:
        return None
    event, data = records.event[:n_ev].copy(), records.data[:n_data].copy()
    z[KX.R_EVENTS] = z[KX.R_DATA] = 0
    return KX.PoolRecords(event, data, np.array([n_ev, n_data, 0, 0], dtype=np.int64))


class Classifier:
    """Owns what building entries reads and writes: the inputs of the classify kernel
    (`inputs`: trie, context, pure-state table, lookahead filters), its work arrays (`work`) and
    its two charts, grown on demand (`grow`). `classify` runs one state from Python (the
    cross-grammar cache, counted zones, unordered rules); `build_entries` batches run through
    the same arrays (mask/cache.py)."""

    def __init__(self, fsm: FSMArrays, vocab: VocabArrays, lookahead: Optional[LookaheadArrays] = None,
                 follow: Optional[np.ndarray] = None, shared: bool = False):
        """`shared`: the vocabulary-sized arrays are leased from the vocabulary's free list for
        each build (`lease`, a mask cache's classifier); else this classifier holds a set of
        its own from the first classification on (the teaching views)."""
        self.fsm, self.vocab = fsm, vocab
        self.lookahead = lookahead if lookahead is not None else no_lookahead(len(fsm.rule_start))
        self.occ_indptr, self.occ_dst = rule_occurrences(fsm)
        # the kernel walks the vocabulary in sorted order: give it the bytes in that order, with
        # sorted position k as the token's "id", so memory is read front to back
        facts = vocab_facts(vocab)
        self.identity, self.subtree_end, longest = facts.identity, facts.subtree_end, facts.longest
        # FOLLOW1: -1 = ask context expansion, 0 = the byte never follows the rule (grammar analysis)
        self.follow1 = np.full((len(fsm.rule_start), 256), CX.FOLLOW_UNKNOWN, dtype=np.int8)
        if follow is not None:
            self.follow1[~follow] = CX.FOLLOW_NEVER
        # the pure-state table, filled one rule at a time before a state of it is classified (a
        # pure walk never leaves the rule of the state it starts from: EB.ensure_pure)
        n_rules, n_states = len(fsm.rule_start), len(fsm.state_rule)
        ordered = bool(np.all(fsm.state_rule[1:] >= fsm.state_rule[:-1]))
        rules = np.arange(n_rules)
        lo = np.searchsorted(fsm.state_rule, rules, "left") if ordered else np.zeros(n_rules, np.int64)
        hi = np.searchsorted(fsm.state_rule, rules, "right") if ordered else np.full(n_rules, n_states, np.int64)
        self._pure_build = EB.PureBuild(lo.astype(np.int64), hi.astype(np.int64), np.zeros(n_rules, np.int8),
                                        np.array([0, MAX_PURE_ROWS, 0 if ordered else 1], dtype=np.int64))
        byte_class = PW.byte_classes(fsm.byte_lo, fsm.byte_hi)
        self._pure = PW.PureTable(np.full(n_states, -1, dtype=np.int32),
                                  np.zeros((0, int(byte_class[-1]) + 1), dtype=np.int32), byte_class)
        # the vocabulary-sized arrays (charts, outputs, the merged list, the pool's outbox) are
        # leased for a build and parked with it until another grammar's build takes them (`lease`)
        self._depth = 0
        self._leased: Optional[BuildBuffers] = None
        self._token = object()  # its key among the parked (a weak reference to it is the value)
        self._slot: list = [None]  # [its set while parked] (PARKED, `lease`), for `_give_back` if deleted then
        self._finalizer = None
        self._owed: list = []  # the outbox's parts copied out when a lease ended untaken (`_copied`)
        scratch = KC.ClassifyScratch(np.zeros(longest + 2, dtype=np.int8),
                                     np.full(CX.CTX_CLIMBED + longest + 2, -1, dtype=np.int64),
                                     np.zeros(n_rules + 1, dtype=np.int64),
                                     np.zeros(256, dtype=np.bool_), np.zeros(longest + 2, dtype=np.int32),
                                     np.array([0, KC.WORK_BUDGET], dtype=np.int64))
        idle = _idle_buffers()
        self.chart, self.charts, self._outs = idle.chart, idle.charts, idle.outs
        self.work = EB.EntryWork(scratch, idle.outs, self._pure_build, np.zeros(EB.N_QUEUE, dtype=np.int64),
                                 idle.merged, idle.records, np.zeros(2 * KS.MAX_SLICE_PAIRS, dtype=np.int64))
        self._idle_work = self.work  # (between leases; its other fields never change)
        trie = TW.TrieArrays(vocab.sorted_bytes, vocab.sorted_offsets, self.identity, vocab.sorted_lcp,
                             self.subtree_end)
        memo = CX.MEMO_SLOTS  # the answers of context expansion, asked once per grammar
        context = CX.ContextArrays(self.occ_indptr, self.occ_dst, self.follow1, np.full(memo, -1, dtype=np.int64),
                                   np.zeros(memo, dtype=np.int64), np.zeros(memo, dtype=np.int32),
                                   np.zeros(memo, dtype=np.int64))
        self.inputs = EB.EntryInputs(trie, context, self._pure, self.lookahead, vocab.sorted_ids,
                                     json_string_slice(vocab))
        self.loops = self.exits = None
        if not shared:
            self._attach()
            self._depth = 1  # (held for good)
        self._no_marks = np.zeros(0, dtype=np.int32)
        self._kernel = None  # classify_tokens' entry for these argument types (util.bound_kernel)

    def lease(self) -> "Classifier":
        """The vocabulary-sized arrays for a build, given back when the outermost lease ends
        (`with clf.lease():`). Builds of one grammar hold its cache's lock, so one thread at a
        time leases through a classifier.

        PARKED: a lease that ends leaves its set with the classifier, parked, and the next lease
        of the same classifier takes it back at once (a decode builds entries on step after
        step: each would otherwise trade buffers with the free list). A build of another grammar
        takes a free set first, else the set parked longest (`_unpark`: its holder is between
        builds, so nothing reads it), else a new one: a process still has one set per build
        running at once, not one per grammar."""
        return self

    def __enter__(self) -> "Classifier":
        if self._depth == 0:
            self._attach()
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._detach()

    @property
    def _parked(self) -> bool:
        """It keeps its set between builds (PARKED)."""
        return self._slot[0] is not None

    def leased(self) -> Optional[BuildBuffers]:
        """The vocabulary's build buffers this classifier holds, in a build or parked, else None
        (the memory account counts them with the vocabulary's tables)."""
        b = self._leased
        return None if b is None else b._replace(chart=self.chart, charts=self.charts, records=self.work.records)

    def _attach(self) -> None:
        with _LEASES:
            if self._parked:  # its own set, which no other build needed meanwhile
                self._slot[0] = None
                del _parked_sets(self.vocab)[self._token]
                return
            b = _take_set(self.vocab)
        if b is None:
            b = _new_buffers(len(self.vocab.sorted_ids))
        self._leased = b
        self.chart, self.charts, self._outs = b.chart, b.charts, b.outs
        self.work = self._idle_work._replace(outs=b.outs, merged=b.merged, records=b.records)
        self.work.scratch.work[CX.CTX_RULE] = -1  # the union chart holds another grammar's question now

    def _detach(self) -> None:
        work = self.work
        part = _copied(work.records)  # (a parked set owes nothing: whoever takes it need not look)
        if part is not None:
            self._owed.append(part)
        b = self._leased
        if self.chart is not b.chart or self.charts is not b.charts or work.records is not b.records:
            b = _kept(b._replace(chart=self.chart, charts=self.charts, records=work.records))  # (grown meanwhile)
            self._leased, self.chart, self.charts = b, b.chart, b.charts
            self.work = work._replace(records=b.records)
        with _LEASES:
            parked = _parked_sets(self.vocab)
            if len(parked) >= PARKED_SWEEP:  # (grammars deleted while parked leave dead references)
                for token in [t for t, ref in parked.items() if ref() is None]:
                    del parked[token]
            self._slot[0] = b
            parked[self._token] = weakref.ref(self)
        if self._finalizer is None:  # (once: a grammar deleted while parked gives its set back)
            self._finalizer = weakref.finalize(self, _give_back, _free_list(self.vocab), self._slot)
            self._finalizer.atexit = False

    def _unpark(self) -> BuildBuffers:
        """Its parked set, for another build (holding _LEASES); it keeps the idle stand-ins."""
        b, idle = self._leased, _idle_buffers()
        self._leased, self._slot[0] = None, None
        self.chart, self.charts, self._outs, self.work = idle.chart, idle.charts, idle.outs, self._idle_work
        return b

    def drop_pure_table(self) -> None:
        """Let the pure-state table go (COMPACT): its rows are filled again, a rule at a time, if
        a later build needs them (EB.ensure_pure)."""
        self._pure_build.done[:] = EB.PURE_NONE
        self._pure_build.rows[EB.PURE_ROWS] = 0
        self._pure.pure_row[:] = -1
        self._pure = self._pure._replace(pure_next=np.zeros((0, self._pure.pure_next.shape[1]), dtype=np.int32))
        self.inputs = self.inputs._replace(pure=self._pure)

    def owed_records(self) -> list:
        """The pool's outboxes not taken yet: the parts copied out when leases ended, then the
        leased one (`CrossGrammarCache.take` empties each)."""
        out, self._owed = self._owed, []
        if self._leased is not None and self.work.records.sizes[KX.R_EVENTS]:
            out.append(self.work.records)
        return out

    @property
    def pure_row(self) -> np.ndarray:
        return self._pure.pure_row

    @property
    def pure_next(self) -> np.ndarray:
        return self._pure.pure_next

    def grow(self, status: int, which: int = KC.CHART_MAIN) -> None:
        """Room for what a kernel's NEED_* status asked: a chart (`which`) or the pure table
        (nothing for PAUSED: the kernel gave way with its work budget spent)."""
        if status == KC.PAUSED:
            return
        if status == KX.NEED_RECORD:
            rec = self.work.records
            z = rec.sizes
            event, data = rec.event, rec.data
            if z[KX.R_NEED_EVENTS] > len(event):
                event = np.zeros((max(2 * len(event), int(z[KX.R_NEED_EVENTS])), KX.EV_COLUMNS), dtype=np.int64)
                event[:len(rec.event)] = rec.event
            if z[KX.R_NEED_DATA] > len(data):
                data = np.zeros(max(2 * len(data), int(z[KX.R_NEED_DATA])), dtype=np.int32)
                data[:len(rec.data)] = rec.data
            self.work = self.work._replace(records=KX.PoolRecords(event, data, z))
        elif status == EB.NEED_PURE:
            rows = int(self._pure_build.rows[EB.PURE_ROWS])
            old = self._pure.pure_next
            grown = np.zeros((max(rows, 2 * len(old)), old.shape[1]), dtype=np.int32)
            grown[:len(old)] = old
            self._pure = self._pure._replace(pure_next=grown)
            self.inputs = self.inputs._replace(pure=self._pure)
        elif which == KC.CHART_MAIN:
            self.chart = K.grown_chart(self.chart, status)
        elif which == KC.CHART_CONTEXT:
            self.charts = self.charts._replace(union=K.grown_chart(self.charts.union, status))
        else:
            self.charts = self.charts._replace(every=K.grown_chart(self.charts.every, status))

    def classify(self, state: int, marked: Optional[np.ndarray] = None, record: bool = False,
                 count: int = 0) -> np.ndarray:
        """The class of every sorted token (valid until the next classification); afterwards
        `accepted()` and `uncertain()` list the sorted indices of those two classes.

        `marked` (sorted indices, ascending): classify only those; the others come back
        rejected and are not listed. `record`: also list what each class owes to the state's
        rule alone (`recorded`, KC.D_*, for the cross-grammar cache). `count`: the seed item's count (a zone's
        stand-in or one count) when the state is in a counted repetition.
        """
        m = len(self.vocab.sorted_ids)
        state, count = int(state), int(count)
        while (status := EB.ensure_pure(self.fsm, self._pure, self._pure_build, int(self.fsm.state_rule[state]))) \
                != K.OK:
            self.grow(status)
        outs = self._outs
        EB.clear_outputs(outs)
        out = outs.out
        marks = self._no_marks if marked is None else np.ascontiguousarray(marked, dtype=np.int32)
        track = record and count >= K.STRICT_BASE  # a counted repetition's zone stand-in
        self.loops = np.full(m if track else 1, -1, dtype=np.int32)
        self.exits = np.zeros(m if track else 1, dtype=np.int8)
        if track:
            outs = outs._replace(loops=self.loops, exits=self.exits)
        while (status := CX.init_chart_at_state(self.fsm, self.chart, state, count)) != K.OK:
            self.chart = K.grown_chart(self.chart, status)
        j = 0
        while True:
            self.work.scratch.meter[0] = 0
            args = (self.fsm, self.chart, self.charts, self.inputs.trie, self.inputs.context, self._pure,
                    self.lookahead, self.work.scratch, outs,
                    KC.ClassifyTask(state, j, marked is not None, bool(record), bool(track), marks))
            if self._kernel is None:  # every call passes these types (its own arrays, ints and bools)
                self._kernel = bound_kernel(KC.classify_tokens, *args)
            status, j, which = self._kernel(*args)
            if status == K.OK:
                return out
            self.grow(status, which)
            if j == 0 and which == KC.CHART_MAIN:  # the kernel restarts from the state's own sets
                while (st := CX.init_chart_at_state(self.fsm, self.chart, state, count)) != K.OK:
                    self.chart = K.grown_chart(self.chart, st)

    def recorded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """After a `record` classification: (acc0, ends, passes), the sorted indices with
        D_ACCEPTED, with D_ENDS_LOOKAHEAD_REJECTS or D_ENDS, and with D_ENDS."""
        o, n = self._outs, self._outs.n_list
        return o.rec_acc0[:n[KC.N_ACC0]], o.rec_ends[:n[KC.N_ENDS]], o.rec_pass[:n[KC.N_PASS]]

    @property
    def detail(self) -> np.ndarray:
        """int8[n]: the D_* code of every sorted token after a `record` classification."""
        acc0, ends, passes = self.recorded()
        out = np.zeros(len(self.vocab.sorted_ids), dtype=np.int8)
        out[acc0] = KC.D_ACCEPTED
        out[ends] = KC.D_ENDS_LOOKAHEAD_REJECTS
        out[passes] = KC.D_ENDS
        return out

    def accepted(self) -> np.ndarray:
        return self._outs.acc_idx[:self._outs.n_list[KC.N_ACCEPTED]]

    def uncertain(self) -> np.ndarray:
        return self._outs.unc_idx[:self._outs.n_list[KC.N_UNCERTAIN]]


fixed_layout(KC.ClassifyScratch, KC.ClassifyOutputs, KC.ContextCharts, TW.TrieArrays, CX.ContextArrays, PW.PureTable, EB.PureBuild,
             K.Chart, KX.PoolRecords, KX.PoolHits)
