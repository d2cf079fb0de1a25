"""XGrammar-2 §3.4 and XGrammar §3.1-§3.2: the adaptive token-mask cache.

Most of a token mask does not depend on the parse stack. For every scannable FSM state (a state
with byte edges) the vocabulary splits, from that state alone, into

- **accepted** tokens: their bytes can be read without leaving the state's rule;
- **rejected** tokens: they die inside the rule, and wherever the rule may end first, no
  parent of the rule can read what is left (context expansion, XGrammar §3.2);
- **uncertain** tokens: the rule may end inside them and a parent might go on; only these
  need the full Earley chart at run time.

The inference rules and the loops sit in `xg2ref/kernels/classify.py` (building entries)
and `xg2ref/kernels/mask_fill.py` (using them); lookahead assertions, inferred or verified,
filter tokens while entries are built (`xg2ref/lookahead.py`). This module builds
one entry per class of scannable states that read every token alike (xg2ref/mask/state_classes.py:
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
xg2ref/mask/cross_grammar.py) an entry another grammar built for the same rule machine is
reused and only the tokens its context decides are classified again.

A plain entry (no cross-grammar cache, not a counted zone or an unordered rule) is built whole
by one kernel call per batch of classes (kernels/entry_build.py: seed, classify, store,
publish), at compile time or by the fill kernel itself when it meets a state without one; the
others are classified from Python (`Classifier.classify`) and stored by the same `store_entry`.
Python grows buffers and charts when a kernel asks.

The cache is a composition, each part owning its state: `EntryStore` (entries.py: the flat
arrays), `JitSchedule` (jit.py: what is built when), `CountedZones` (counted.py: the other zones
of counted repetitions), `Classifier` (classifier.py: a build's tables, its vocabulary-sized
buffers leased per build, PARKED between its grammar's builds) and the builder thread's
`AheadState` (background.py). Once every
entry is built the cache is compacted (COMPACT, `_compact_if_complete`).
"""

from __future__ import annotations

import threading
import time
import weakref
from contextlib import contextmanager
from typing import Callable, NamedTuple, Optional

import numpy as np

from ..exceptions import GrammarLimitError
from ..fsm.build import FSMArrays
from ..kernels import earley as K
from ..kernels import cross_grammar as KX
from ..kernels import entry_build as EB
from ..kernels import handles as H
from ..kernels import mask_fill as MF
from ..lookahead import LookaheadArrays
from ..tokenizer_info import VocabArrays
from ..util import bound_kernel, fixed_layout
from . import background
from .classifier import Classifier, vocab_facts
from .counted import CountedZones
from .entries import UNBUILT, EntryStore, MaskCacheArrays, regular_words
from .jit import JitSchedule
from .scratch import FillScratches
from .state_classes import shareable_rules, state_classes

fixed_layout(MF.FillScratch)

AHEAD_YIELD = 50e-6  # seconds the background builder steps aside while a fill builds


class GrammarFacts(NamedTuple):
    """What the grammar's analyses tell the cache (xg2ref/analysis.py `AnalysedGrammar`); a
    cache left without them works without lookahead filters and learns FOLLOW as it goes."""

    lookahead: Optional[LookaheadArrays] = None  # the lookahead filters (LOOKAHEAD)
    follow: Optional[np.ndarray] = None  # bool[R, 256]: may byte b follow rule R (FOLLOW1's start)
    first_rows: Optional[np.ndarray] = None  # bool[R, 256]: FIRST (the cost model's estimates)
    classes: Optional[Callable[[int], np.ndarray]] = None  # state classes from a linked grammar's pieces


class BuildPlan(NamedTuple):
    """When entries are built (§3.5), and within what bounds."""

    jit: bool = False  # build on first visit (True) or every entry now
    eager_entries: Optional[int] = 0  # with `jit`: entries built now (None: the cost model chooses)
    share_entries: bool = True  # one entry per class of states that read every token alike
    max_bytes: int = -1  # entries past this many bytes raise GrammarLimitError (negative: no limit)
    compile_seconds: float = 0.0  # compile time spent before the cache (the cost model's budget)


class AdaptiveTokenMaskCache:
    """The cache of one compiled grammar: an entry per class of scannable states, and the
    run-time fill.

    With `jit` (XGrammar-2 §3.5), entries are built on the first visit of one of their states
    (when a mask is filled there), except the `eager` classes named up front; masks are the same
    either way. A state of a counted repetition (§3.6) has an entry per zone of counts
    (xg2ref/grammar/repetition.py): the FREE one is built like any other; the NOEXIT one and
    those of single counts near a bound are built on first use, JIT or not.
    """

    def __init__(self, fsm: FSMArrays, vocab: VocabArrays, vocab_size: int, facts: GrammarFacts = GrammarFacts(),
                 plan: BuildPlan = BuildPlan(), pool=None, progress: Optional[Callable[[int, int], None]] = None):
        """`pool` is the compiler's cross-grammar cache seen from this grammar (a
        cross_grammar.PoolView) or None; `progress(done, total)` is called as entries are built."""
        start = time.perf_counter()
        lookahead, follow, first_rows, classes = facts
        self.max_bytes = plan.max_bytes
        self.vocab = vocab
        self.vocab_size = vocab_size
        self._words = (vocab_size + 31) // 32
        scannable = np.flatnonzero(np.diff(fsm.byte_indptr) > 0).astype(np.int32)
        longest = vocab_facts(vocab).longest
        if plan.share_entries and len(scannable):
            # one entry per class of states that read every token alike (xg2ref/mask/state_classes.py)
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
        self._store = EntryStore(len(fsm.state_rule), regular_words(vocab, self._words), longest)
        self._state_entry = self._store.state_entry  # (fixed size: the store never replaces it)
        self.scratch = FillScratches(self._store, self._words)  # the fills' scratch, shared by the matchers
        self._state_entry[scannable] = UNBUILT
        self._fsm = fsm
        self._classifier = Classifier(fsm, vocab, lookahead, follow, shared=True)
        self._pool = pool  # a cross_grammar.PoolView, or None
        self._state_class = np.full(len(fsm.state_rule), -1, dtype=np.int64)  # class of each state
        self._state_class[scannable] = member_class
        # counted repetitions (§3.6): a seed count per class for the FREE zone, other zones apart
        self.zones = CountedZones(fsm, self._class_rep, self._members, self._store, longest, scannable)
        # which entries are built when (§3.5)
        self.schedule = JitSchedule(fsm, vocab, self._class_rep, self._state_class, self._state_entry, first_rows,
                                    follow)
        self._class_unordered = (fsm.rule_required >= 0)[fsm.state_rule[self._class_rep]]
        # most classes are built whole by kernels/entry_build.py, the fill kernel included; the
        # cross-grammar cache is looked up for them once, now (kernels/cross_grammar.py)
        shallow = self.zones.class_counted & self.zones.shallow[fsm.state_rule[self._class_rep]]
        in_kernel = ~(self._class_unordered | shallow)
        seed = np.where(self.zones.class_counted, K.FREE_BASE, 0).astype(np.int64)
        hits = pool.resolve(self._class_rep, seed, in_kernel) if pool is not None else _no_hits(n_classes)
        self._classes = EB.EntryClasses(self._class_rep, seed, in_kernel, self._members_ptr.astype(np.int64),
                                        self._members_flat, self._state_class, hits)
        self._jobs = np.zeros(max(n_classes, 1), dtype=np.int64)
        self._kernels: dict = {}  # bound entries (util.bound_kernel), by kernel
        self._owing = False  # records of kernel builds wait in the pool's `owed` list
        self._complete = False  # every class built and what only building reads let go (COMPACT)
        self._check_complete_at = n_classes  # entries stored before `_compact_if_complete` counts again
        # writers (builds, growth, publication) hold the lock; plain fills never take it
        # (mask/background.py: the contract with the background builder)
        self.lock = threading.RLock()
        self._fills_waiting: list = []  # one element per thread waiting for or holding the lock, the builder's aside
        self._ahead: Optional[background.AheadState] = None  # set by `build_in_background`
        self.ahead_ref = weakref.ref(self)
        self.build_seconds = time.perf_counter() - start  # grows with every entry built
        self._build(self.schedule.at_compile(plan.jit, plan.eager_entries, plan.compile_seconds), progress)

    @contextmanager
    def _first_in_line(self):
        """The cache's lock, for a thread that must not wait behind the builder's batch: the
        builder gives way after the entry it is building (Python's locks are not fair; its batch
        reads Q_WAITING between two classes, kernels/entry_build.py) and waits before the next."""
        waiting, q = self._fills_waiting, self._classifier.work.queue
        waiting.append(None)
        q[EB.Q_WAITING] = len(waiting)
        try:
            with self.lock:
                yield
        finally:
            waiting.pop()
            q[EB.Q_WAITING] = len(waiting)

    def _kernel(self, kernel, *args):
        """`kernel`'s entry bound to these argument types (once per cache, found per process)."""
        entry = self._kernels.get(kernel)
        if entry is None:
            entry = self._kernels[kernel] = bound_kernel(kernel, *args)
        return entry

    def _build(self, classes, progress=None) -> None:
        """Build the entries of `classes` (class numbers, or (class, zone) pairs for a counted
        repetition's other zones: ZONE_NOEXIT or a count): the plain ones in one kernel batch,
        the others one by one."""
        with self._first_in_line(), self._classifier.lease():
            self._build_locked(classes, progress)

    def _build_locked(self, classes, progress) -> None:
        start = time.perf_counter()
        classes = list(classes)
        batch = [c for c in classes if not isinstance(c, tuple) and self._classes.in_kernel[c]]
        if batch:
            self._run_batch(np.asarray(batch, dtype=np.int64))
            self._take_records()
            if progress is not None:
                progress(len(batch), len(classes))
        done = len(batch)
        others = [c for c in classes if isinstance(c, tuple) or not self._classes.in_kernel[c]]
        while others:
            job = others.pop(0)
            done += 1
            c, zone = job if isinstance(job, tuple) else (job, MF.ZONE_FREE)
            zones = self.zones
            if zone != MF.ZONE_FREE and zones.has_zone(c, zone):
                continue
            s = int(self._class_rep[c])
            if zone == MF.ZONE_FREE and self._state_entry[s] != UNBUILT:
                continue
            seed = zones.seed(c, zone)
            if self._class_unordered[c]:
                acc, unc = self._unordered_entry(s)
            elif c in zones.records and zone != MF.ZONE_FREE:
                acc, unc = zones.derived(c, zone)
            elif zone == MF.ZONE_FREE and zones.class_shallow(c):
                cls = self._classifier.classify(s, record=True, count=seed).copy()
                acc, unc = self._classifier.accepted().copy(), self._classifier.uncertain().copy()
                zones.records[c] = (self._classifier.loops, self._classifier.exits.astype(np.bool_), cls)
                others.extend((c, z) for z in zones.bound_zones(c))  # cheap now: all in this call
            elif self._pool is not None:  # through the cross-grammar cache (mask/cross_grammar.py)
                acc, unc = self._pool.build(s, self._members(c), self._classifier, seed)
            else:
                self._classifier.classify(s, count=seed)
                acc, unc = self._classifier.accepted(), self._classifier.uncertain()
            members = self._members(c) if zone == MF.ZONE_FREE else self._members(c)[:0]
            e = self._store_entry(acc, unc, members, s)
            if zone != MF.ZONE_FREE:
                zones.publish(c, zone, e)
            if progress is not None:
                progress(done, len(classes) + len(others))
        self.build_seconds += time.perf_counter() - start
        self._compact_if_complete()

    @property
    def unbuilt_entries(self) -> int:
        """Entries not built yet (JIT); 0 once every class has one."""
        return self.schedule.unbuilt

    def ensure_entries(self, states: np.ndarray, counts: Optional[np.ndarray] = None) -> int:
        """Build the entries that items in `states` (with `counts`, for counted repetitions)
        lack (JIT, and a counted repetition's other zones). Returns how many were built."""
        jobs = self.schedule.missing(states)
        if self.zones.any and counts is not None:
            jobs |= self.zones.missing(states, counts, self._state_class)
        if not jobs:
            return 0
        self._build(sorted(jobs, key=lambda j: j if isinstance(j, tuple) else (j, -3)))
        return len(jobs)

    def _run_batch(self, jobs: np.ndarray, yields: bool = False) -> None:
        """Build the FREE entries of the in-kernel classes `jobs` in `build_entries` calls,
        growing what the kernel asks for; with `yields`, stop between two classes when a fill
        waits for the cache (the background builder's batches)."""
        clf = self._classifier
        q = clf.work.queue
        self._jobs[:len(jobs)] = jobs
        q[EB.Q_NEXT], q[EB.Q_END], q[EB.Q_PHASE], q[EB.Q_YIELDS] = 0, len(jobs), EB.PHASE_SEED, int(yields)
        while True:
            args = (self._fsm, clf.chart, clf.charts, clf.inputs, clf.work, self._store.kernel_arrays,
                    self._classes, self._jobs)
            status, which = self._kernel(EB.build_entries, *args)(*args)
            if status == K.OK:
                break
            self._grow(status, which)
        self._check_bytes()

    def _take_records(self) -> None:
        """Move what kernel builds owe the cross-grammar cache into it (kernels/cross_grammar.py)."""
        with self._first_in_line():
            self._owing = False
            for records in self._classifier.owed_records():
                if self._pool is not None:
                    self._pool.take(records, self._class_rep, self._members)

    def _owe_records(self) -> None:
        """Leave what kernel builds owe the cross-grammar cache for its next read (off the
        token's path, and never from the background builder)."""
        if self._pool is not None and self._classifier.work.records.sizes[0] and not self._owing:
            self._owing = True
            self._pool.pool.owed(self._take_records)

    # ---- building ahead (mask/background.py) ----------------------------------------------

    def build_in_background(self) -> None:
        """Build the missing entries on the process's builder thread from now on, nearest to
        the matchers' positions first (XGrammar-2 §3.5)."""
        if self._ahead is None and self.unbuilt_entries:
            self._ahead = background.AheadState(self._fsm, len(self._class_rep))
            background.BUILDER.submit(self)

    @property
    def building_ahead(self) -> bool:
        """The builder thread still has entries to build for this cache."""
        return self._ahead is not None and self._ahead.pending

    def stop_building_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.pending = False

    def after_token(self, chart) -> None:
        """A matcher of this grammar accepted a token and stands at `chart`'s last set: the
        builder builds what is nearest to it next."""
        ahead = self._ahead
        if ahead is not None and ahead.pending:
            k = chart.meta[K.META_N_SETS] - 1
            ahead.hint = chart.item_state[chart.set_start[k]:chart.set_start[k + 1]].copy()
            background.note_activity()
            background.BUILDER.touch(self.ahead_ref)

    def build_ahead(self) -> None:
        """One step of the builder thread: build the entries of the classes nearest to the last
        hint, in one kernel call that gives way to a waiting fill after the entry it is building
        (so a fill waits at most for one entry)."""
        if self._fills_waiting:
            time.sleep(AHEAD_YIELD)
            return
        with self.lock:
            if time.perf_counter() - background.BUILDER.active_at < background.IDLE_GAP:
                return  # a fill held the lock until just now: the foreground is busy again
            listed = self._ahead.next_classes(self._fsm, self._state_entry, self._classes)
            if not listed:
                return
            start = time.perf_counter()
            with self._classifier.lease():
                self._run_batch(np.array(listed, dtype=np.int64), yields=True)
                self._owe_records()
            self.build_seconds += time.perf_counter() - start
            self._compact_if_complete()

    def _store_entry(self, acc: np.ndarray, unc: np.ndarray, members: np.ndarray, state: int) -> int:
        """Store an entry classified from Python (kernels/entry_build.py `store_entry`)."""
        acc, unc = np.ascontiguousarray(acc, dtype=np.int32), np.ascontiguousarray(unc, dtype=np.int32)
        while True:
            args = (self._store.kernel_arrays, acc, unc, self.vocab.sorted_ids, members, np.int64(state))
            e = self._kernel(EB.store_entry, *args)(*args)
            if e >= 0:
                break
            self._store.grow()
        self._check_bytes()
        return int(e)

    def _grow(self, status: int, which: int) -> None:
        """Room for what a build kernel asked: entry arrays, a chart or the pure-state table."""
        if status == EB.NEED_STORE:
            self._store.grow()
            self._check_bytes()
        else:
            self._classifier.grow(status, which)

    def _compact_if_complete(self) -> None:
        """COMPACT: once every class has its FREE entry, the entry arrays are cut to their filled
        part and what only building reads (the pure-state table, the pool lookups) let go; a
        counted zone built later fills the table again (called holding the lock)."""
        if self._complete or self._store.stores < self._check_complete_at:
            return
        unbuilt = self.schedule.unbuilt
        if unbuilt:  # (each class still unbuilt is stored first: no count before then)
            self._check_complete_at = self._store.stores + unbuilt
            return
        self._complete = True
        self._store.trim()
        self._classifier.drop_pure_table()
        self._classes = self._classes._replace(hits=_no_hits(len(self._class_rep)))

    def _check_bytes(self) -> None:
        if 0 <= self.max_bytes < self._store.sizes[EB.SIZE_BYTES]:
            raise GrammarLimitError(f"the grammar's mask-cache entries need more than {self.max_bytes:,} bytes "
                                    f"(what GrammarCompiler's max_grammar_bytes leaves after the FSM arrays)")

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

    @property
    def arrays(self) -> MaskCacheArrays:
        """The entries' flat arrays, the filled part (`EntryStore.arrays`)."""
        with self._first_in_line():
            return self._store.arrays

    @property
    def stats(self):
        """`CacheStats`: what the cache holds now."""
        with self._first_in_line():
            return self._store.stats(self.build_seconds)

    @property
    def classifier(self) -> Classifier:
        """The classifier that builds this cache's entries (its FOLLOW1 memo, lookahead filters)."""
        return self._classifier

    @property
    def class_representatives(self) -> np.ndarray:
        """int32[C]: the first scannable state of each class of states sharing an entry."""
        return self._class_rep

    @property
    def state_entry(self) -> np.ndarray:
        """int32[S]: the entry of each state (NO_ENTRY: no byte edges, UNBUILT: not built yet)."""
        return self._state_entry

    @property
    def memory_size_bytes(self) -> int:
        """Bytes of the entries (every array of `MaskCacheArrays`)."""
        return self._store.memory_size_bytes

    def _fill_building(self, parser, words, not_regular, stop_ids, scratch) -> tuple:
        """`fill_mask_building` until it has built what the current set needs and filled the mask
        (plain entries in the kernel, the others here); returns its (status, j, n_cand, full)
        and the scratch, fitted to the entries now built."""
        with self._first_in_line(), self._classifier.lease():
            start = time.perf_counter()
            clf = self._classifier
            while True:
                # (made anew each time: growing, from here or from Classifier.classify, replaces arrays)
                builder = EB.EntryBuilder(clf.chart, clf.charts, clf.inputs, clf.work, self._classes, self._jobs)
                args = (parser.arrays, parser.chart, self._store.kernel_arrays, self.vocab, scratch, not_regular,
                        stop_ids, words, builder)
                status, j, n_cand, full = self._kernel(EB.fill_mask_building, *args)(*args)
                if status == EB.NEED_BUILD:
                    q = clf.work.queue
                    if q[EB.Q_STATUS] == EB.NEED_SCRATCH:
                        scratch = self.scratch.fit(scratch)
                    else:
                        self._grow(int(q[EB.Q_STATUS]), int(q[EB.Q_WHICH]))
                elif status == MF.NEED_ENTRY:  # an entry the fill kernel does not build: build it here
                    c = parser.chart
                    k = int(c.meta[K.META_N_SETS]) - 1
                    items = slice(c.set_start[k], c.set_start[k + 1])
                    self.ensure_entries(c.item_state[items], c.item_count[items])
                else:
                    self._owe_records()  # taken before the pool is next read
                    self.build_seconds += time.perf_counter() - start
                    self._compact_if_complete()
                    background.note_activity()
                    return status, j, n_cand, full, scratch

    def fill(self, parser, words: np.ndarray, not_regular: np.ndarray, stop_ids: np.ndarray,
             scratch: MF.FillScratch) -> tuple[int, bool, MF.FillScratch]:
        """Write the tokens allowed now into int32 `words` (cleared first): the regular tokens
        allowed by the grammar less `not_regular`, plus `stop_ids` when the input is a sentence.
        `parser` is the matcher's EarleyParser (xg2ref/earley.py): its `arrays`, its `chart`,
        and `grow` when a check needs a larger chart.

        `scratch` is the caller's (`scratch.take()`); pass back the one returned, fitted to
        the entries built meanwhile. Callers pass
        the same arrays on every call (the kernel entry is bound to their types). Missing plain
        entries are built by the fill kernel itself (kernels/entry_build.py `fill_mask_building`),
        the others here. Returns the number of uncertain tokens checked against the full chart,
        whether every id is allowed, and the scratch.
        """
        status, j, n_cand, full = self._fill_kernel(parser, words, not_regular, stop_ids, scratch)
        return self.finish_fill(parser, words, not_regular, stop_ids, scratch, status, j, n_cand, full)

    def _fill_kernel(self, parser, words, not_regular, stop_ids, scratch) -> tuple:
        """The fill kernel's (status, j, n_cand, full) (kernels/mask_fill.py `fill_mask`)."""
        if H.ENABLED:  # (the parser holds every NamedTuple whose handle the kernel reads)
            memo = self.bind_fill(parser, words, not_regular, stop_ids, scratch)
            return memo[7](*memo[8])
        if self._ahead is not None and self._ahead.pending:
            background.note_activity()
        args = (parser.arrays, parser.chart, self._store.kernel_arrays, self.vocab, scratch, not_regular,
                stop_ids, words)
        return self._kernel(MF.fill_mask, *args)(*args)

    def fill_shared(self, parser, words: np.ndarray, not_regular: np.ndarray, stop_ids: np.ndarray) -> bool:
        """`fill` with a scratch of the grammar's taken for it and given back whatever the fill
        raises (mask/scratch.py, SHARED SCRATCH). Returns whether every id is allowed."""
        scratch = self.take_scratch(parser)
        try:
            _, full, scratch = self.fill(parser, words, not_regular, stop_ids, scratch)
        finally:
            self.scratch.give(scratch)
        return full

    def take_scratch(self, parser) -> MF.FillScratch:
        """A scratch of this grammar's for a fill of `parser`: the one its bound fill names
        where it is free (mask/scratch.py, SHARED SCRATCH)."""
        memo = parser.fill_memo
        return self.scratch.take(memo[3] if memo is not None and memo[0] is self else None)

    def bind_fill(self, parser, words, not_regular, stop_ids, scratch) -> tuple:
        """`fill`'s kernel entry and arguments (handles), kept on the parser while they stay the
        same objects (a decoding loop passes the same ones at every step; a grown chart is a new
        one): (self, chart, entries, scratch, words, not_regular, stop_ids, entry, args, row
        handle or None: kernels/handles.py `row_handle`, made by `row_handle` below)."""
        if self._ahead is not None and self._ahead.pending:
            background.note_activity()
        entries, memo = self._store.kernel_arrays, parser.fill_memo
        if memo is None or memo[0] is not self or memo[1] is not parser.chart or memo[2] is not entries \
                or memo[3] is not scratch or memo[4] is not words or memo[5] is not not_regular \
                or memo[6] is not stop_ids:
            args = parser.fill_handles(entries, self.vocab, scratch) + (not_regular, stop_ids, words)
            memo = parser.fill_memo = [self, parser.chart, entries, scratch, words, not_regular, stop_ids,
                                       self._kernel(H.fill_mask_h, *args), args, None]
        return memo

    @staticmethod
    def row_handle(memo: list) -> int:
        """The address of the row handle of a `bind_fill` memo (made once per memo), for
        kernels/handles.py `fill_row_h`; the memo keeps it and what it points to alive."""
        if memo[9] is None:
            row = H.row_handle(memo[8])
            memo[9] = (row, row.ctypes.data)
        return memo[9][1]

    def finish_fill(self, parser, words, not_regular, stop_ids, scratch, status: int, j: int, n_cand: int,
                    full) -> tuple[int, bool, MF.FillScratch]:
        """`fill` after its kernel returned (status, j, n_cand, full): the entries a NEED_ENTRY
        asks for are built, a NEED_* status grows the chart and the check goes on."""
        if status == MF.NEED_ENTRY and scratch.sized[0] < self._store.n_entries:
            # entries published since the scratch was fitted (the builder thread's, another
            # matcher's): fitted, the plain fill may find all it needs, without a lock or a lease
            scratch = self.scratch.fit(scratch)
            status, j, n_cand, full = self._fill_kernel(parser, words, not_regular, stop_ids, scratch)
        if status == MF.NEED_ENTRY:  # JIT (§3.5): the building fill (its builder costs a step nothing otherwise)
            status, j, n_cand, full, scratch = self._fill_building(parser, words, not_regular, stop_ids, scratch)
        if status != K.OK:
            v = self.vocab
            while status != K.OK:
                parser.grow(status)
                status, j = MF.check_candidates(parser.arrays, parser.chart, v.token_bytes, v.token_offsets,
                                                v.sorted_ids, scratch.cand, n_cand, j, words)
            MF.finish_mask(parser.arrays, parser.chart, not_regular, stop_ids, words)
            full = MF.all_allowed(words, self.vocab_size)
        return n_cand, bool(full), scratch


def _no_hits(n_classes: int) -> KX.PoolHits:
    """Every class built without a cross-grammar cache."""
    none = np.zeros(n_classes, dtype=np.int8)
    return KX.PoolHits(none, np.zeros(n_classes, dtype=np.int64), np.zeros(n_classes, dtype=np.int64),
                       np.zeros(0, dtype=np.int32), none,
                       np.zeros(n_classes, dtype=np.int64), np.zeros(n_classes, dtype=np.int64),
                       np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint8))
