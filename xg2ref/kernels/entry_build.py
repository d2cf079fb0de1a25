"""XGrammar §3.1 (Figure 5) and XGrammar-2 §3.5: whole mask-cache entries built in one kernel call.

An entry is built in four steps, all here, for a batch of classes of states at a time
(`build_entries`), so that the Python around a build is one call, not one per step:

    SEED      the chart holds `init_chart_at_state(s)` for the class's first state s
    CLASSIFY  `classify_tokens` splits the vocabulary: accepted, uncertain, rejected
    STORE     the smallest form of XGrammar §3.1 is appended to the flat arrays (`store_entry`)
    PUBLISH   every state of the class points at the new entry (written last: a reader that
              sees the number finds the arrays complete)

The storage rule (Figure 5): with a accepted, r rejected and W words of bitset,

    a <= r and a <= W   |-  the list of accepted ids        (KIND_ACCEPTED)
    r < a and r <= W    |-  the list of rejected ids        (KIND_REJECTED)
    otherwise           |-  a bitset of the accepted ids    (KIND_BITSET)

and the uncertain tokens are kept as sorted-vocabulary indices. Lists hold token ids in the
order of the byte-sorted vocabulary (the order the classifier meets them: no sort), and a
rejected list is the complement of the accepted and uncertain lists, taken in one merge pass.

The arrays are held at capacity (`MaskCacheArrays`, filled up to `sizes`): when a batch needs
more room, more chart or more pure-state rows, the kernel stops with NEED_STORE, a chart
NEED_* or NEED_PURE, the caller grows what was asked for, and the batch resumes where it
stopped (`queue`). Python only grows buffers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .classify import CHART_MAIN, N_ACC0, N_ACCEPTED, N_UNCERTAIN, ClassifyTask, ContextCharts, classify_tokens
from .context_expansion import init_chart_at_state
from .cross_grammar import (NEED_RECORD, POOL_NONE, POOL_PARTIAL, POOL_PERFECT, PoolHits, PoolRecords, merge_acc0,
                            record_build, records_lists)
from .earley import META_N_SETS, OK
from .entry_content import content_key, enter_key, find_same
from .mask_fill import (KIND_ACCEPTED, KIND_BITSET, KIND_REJECTED, MISSING_ENTRIES, NEED_ENTRY, SIZE_ENTRIES,
                        UNBUILT, check_and_finish, gather_cached_mask, item_entry)
from .pure_walk import fill_pure_next, mark_pure_states
from .slices import merge_sorted, slice_contained

# statuses beside earley.py's (OK, NEED_ITEMS, NEED_TABLE) and mask_fill.NEED_ENTRY
NEED_STORE = 17  # the flat arrays need more room: sizes[SIZE_NEED_*] say how much
NEED_PURE = 18   # the pure-state table needs pure.rows[PURE_ROWS] rows
NEED_BUILD = 19  # fill_mask_building: a batch stopped, queue[Q_STATUS] says why
NEED_SCRATCH = 20  # fill_mask_building: the fill's scratch is too small for the entries now built

# slots of MaskCacheArrays.sizes: what is filled, tallies, and what a NEED_STORE asks for
# (SIZE_ENTRIES, slot 0, is mask_fill.py's: the fill reads it)
SIZE_LIST = 1
SIZE_WORDS = 2
SIZE_UNC = 3
SIZE_BYTES = 4       # what the entries cost, for max_grammar_bytes (arrays + 64 per entry)
SIZE_TOKENS = 5      # accepted, rejected, uncertain tokens over all entries (3 slots)
SIZE_KINDS = 8       # entries of each KIND_* (3 slots)
SIZE_NEED_ENTRIES = 11
SIZE_NEED_LIST = 12
SIZE_NEED_WORDS = 13
SIZE_NEED_UNC = 14
SIZE_SHARED = 15     # stores that found their content stored already (kernels/entry_content.py)
N_SIZES = 16
ENTRY_OVERHEAD = 64  # bytes an entry costs beyond its arrays (SIZE_BYTES)

# slots of EntryWork.queue: the batch in progress
Q_NEXT = 0    # the job being built
Q_END = 1     # jobs[Q_NEXT:Q_END] remain
Q_PHASE = 2   # PHASE_SEED / PHASE_CLASSIFY / PHASE_STORE of the job being built
Q_TOKEN = 3   # the sorted token classify_tokens resumes from
Q_STATUS = 4  # the status a stopped batch returned (the fill kernel hands it on)
Q_WHICH = 5   # and the chart it is about (classify.CHART_MAIN / CHART_CONTEXT)
Q_SLICE = 6   # 1: the job's state contains the vocabulary slice, only the rest is walked
Q_YIELDS = 7  # 1: the batch gives way to waiting fills between classes (the background builder's)
Q_WAITING = 8  # fills waiting for the cache's lock (written by them without it: mask/cache.py)
N_QUEUE = 9
PHASE_SEED = 0
PHASE_CLASSIFY = 1
PHASE_RECORD = 2
PHASE_STORE = 3

# PureBuild.done per rule, and its `rows` slots
PURE_NONE = 0
PURE_MARKED = 1
PURE_FILLED = 2
PURE_ROWS = 0      # rows of the table in use
PURE_MAX = 1       # at most this many states get a row
PURE_ALL = 2       # 1: states are not grouped by rule, every rule's range is all states


class EntryClasses(NamedTuple):
    """The classes of states sharing an entry (C classes, S states).

    class_rep : int32[C]       the first state of each class (the one classified)
    class_seed : int64[C]      the seed item's count for the class's FREE-zone entry
    in_kernel : bool[C]        built by `build_entries` (not an unordered rule, not a counted
                               repetition whose other zones derive from a record)
    members_ptr : int64[C + 1]  the states of class c: members_flat[members_ptr[c]:...]
    members_flat : int32[...]
    state_class : int64[S]     the class of each scannable state, -1 for the others
    hits : PoolHits            each class's resolved lookup in the cross-grammar cache
                               (kernels/cross_grammar.py; POOL_NONE everywhere without one)
    """

    class_rep: np.ndarray
    class_seed: np.ndarray
    in_kernel: np.ndarray
    members_ptr: np.ndarray
    members_flat: np.ndarray
    state_class: np.ndarray
    hits: PoolHits


class PureBuild(NamedTuple):
    """Which rules have their rows in the pure-state table (filled one rule at a time, before a
    state of the rule is classified: a pure walk never leaves its rule).

    rule_lo, rule_hi : int64[R]  the states of each rule (all states when they are not grouped)
    done : int8[R]               PURE_NONE / PURE_MARKED / PURE_FILLED
    rows : int64[3]              PURE_ROWS, PURE_MAX, PURE_ALL
    """

    rule_lo: np.ndarray
    rule_hi: np.ndarray
    done: np.ndarray
    rows: np.ndarray


class EntryInputs(NamedTuple):
    """What classifying reads: trie (TrieArrays over sorted positions), context
    (ContextArrays), pure (PureTable), la (LookaheadArrays), sorted_ids (the ids the
    stored lists hold), slice (mask/slices.py VocabSlice: its dfa, ids and the rest's trie)."""

    trie: tuple
    context: tuple
    pure: tuple
    la: tuple
    sorted_ids: np.ndarray
    slice: tuple


class EntryWork(NamedTuple):
    """The builder's own arrays: scratch (ClassifyScratch), outs (ClassifyOutputs), pure
    (PureBuild), queue (int64[N_QUEUE], the batch in progress), merged (int32[n]: accepted
    tokens joined from two lists: a pool hit's acc0, a slice), records (PoolRecords: what the
    pool is owed), pairs (int64[2 * MAX_SLICE_PAIRS]: `slice_contained`'s scratch)."""

    scratch: tuple
    outs: tuple
    pure: PureBuild
    queue: np.ndarray
    merged: np.ndarray
    records: PoolRecords
    pairs: np.ndarray


@njit(cache=True, _nrt=False)
def ensure_pure(fsm, pure, build, rule):
    """Rows of the pure-state table for the states of `rule`. Returns OK, or NEED_PURE when
    the table needs build.rows[PURE_ROWS] rows (grow it and call again)."""
    done = build.done
    if done[rule] == PURE_FILLED:
        return OK
    lo, hi = build.rule_lo[rule], build.rule_hi[rule]
    if done[rule] == PURE_NONE:
        build.rows[PURE_ROWS] = mark_pure_states(fsm, lo, hi, build.rows[PURE_ROWS], build.rows[PURE_MAX],
                                                 pure.pure_row)
        done[rule] = PURE_MARKED
    if build.rows[PURE_ROWS] > pure.pure_next.shape[0]:
        return NEED_PURE
    fill_pure_next(fsm, lo, hi, pure)
    if build.rows[PURE_ALL] == 1:
        done[:] = PURE_FILLED
    done[rule] = PURE_FILLED
    return OK


@njit(cache=True, nogil=True, _nrt=False)
def store_entry(cache, acc, unc, sorted_ids, members, state):
    """STORE and PUBLISH: append the entry of accepted `acc` and uncertain `unc` (sorted
    indices, ascending) to `cache` (a MaskCacheArrays at capacity) in the smallest form, built
    for `state`, and point `members` at it. Returns the entry's number, or -NEED_STORE (nothing written:
    cache.sizes[SIZE_NEED_*] hold the sizes needed). An entry of the same content stored
    already is pointed at instead (kernels/entry_content.py, SHARED)."""
    sizes = cache.sizes
    key = content_key(acc, unc)
    same = find_same(cache, key, acc, unc, sorted_ids)
    if same >= 0:
        sizes[SIZE_SHARED] += 1
        for s in members:
            cache.state_entry[s] = same
        return same
    n_sorted = sorted_ids.shape[0]
    n_acc = acc.shape[0]
    n_unc = unc.shape[0]
    n_rej = n_sorted - n_acc - n_unc
    words = cache.regular_words.shape[0]
    kind = KIND_ACCEPTED
    listed = n_acc
    if n_rej < listed:
        kind = KIND_REJECTED
        listed = n_rej
    if words < listed:
        kind = KIND_BITSET
        listed = 0
    e = sizes[SIZE_ENTRIES]
    n_words = words if kind == KIND_BITSET else 0
    need_entries = e + 1 > cache.entry_kind.shape[0] or 2 * (e + 1) > cache.content_key.shape[0]
    need_list = sizes[SIZE_LIST] + listed > cache.list_ids.shape[0]
    need_words = sizes[SIZE_WORDS] + n_words > cache.bitset_words.shape[0]
    need_unc = sizes[SIZE_UNC] + n_unc > cache.unc_sorted.shape[0]
    if need_entries or need_list or need_words or need_unc:
        sizes[SIZE_NEED_ENTRIES] = e + 1
        sizes[SIZE_NEED_LIST] = sizes[SIZE_LIST] + listed
        sizes[SIZE_NEED_WORDS] = sizes[SIZE_WORDS] + n_words
        sizes[SIZE_NEED_UNC] = sizes[SIZE_UNC] + n_unc
        return -NEED_STORE
    pos = sizes[SIZE_LIST]
    if kind == KIND_ACCEPTED:
        for q in range(n_acc):
            cache.list_ids[pos + q] = sorted_ids[acc[q]]
    elif kind == KIND_REJECTED:
        # the complement of two ascending lists, in one merge pass
        a = 0
        u = 0
        w = pos
        for j in range(n_sorted):
            if a < n_acc and acc[a] == j:
                a += 1
            elif u < n_unc and unc[u] == j:
                u += 1
            else:
                cache.list_ids[w] = sorted_ids[j]
                w += 1
    cache.bitset_offset[e] = -1
    if kind == KIND_BITSET:
        off = sizes[SIZE_WORDS]
        cache.bitset_offset[e] = off
        for w in range(words):
            cache.bitset_words[off + w] = 0
        for q in range(n_acc):
            t = sorted_ids[acc[q]]
            cache.bitset_words[off + (t >> 5)] |= np.int32(1) << np.int32(t & 31)
        sizes[SIZE_WORDS] = off + words
    u0 = sizes[SIZE_UNC]
    for q in range(n_unc):
        cache.unc_sorted[u0 + q] = unc[q]
    sizes[SIZE_LIST] = pos + listed
    sizes[SIZE_UNC] = u0 + n_unc
    cache.list_indptr[e + 1] = pos + listed
    cache.unc_indptr[e + 1] = u0 + n_unc
    cache.entry_state[e] = state
    cache.entry_kind[e] = kind
    cache.counts[e, 0] = n_acc
    cache.counts[e, 1] = n_rej
    cache.counts[e, 2] = n_unc
    sizes[SIZE_TOKENS] += n_acc
    sizes[SIZE_TOKENS + 1] += n_rej
    sizes[SIZE_TOKENS + 2] += n_unc
    sizes[SIZE_KINDS + kind] += 1
    sizes[SIZE_BYTES] += 4 * (listed + n_unc + n_words) + ENTRY_OVERHEAD
    enter_key(cache.content_key, cache.content_entry, key, e)
    sizes[SIZE_ENTRIES] = e + 1
    for s in members:  # PUBLISH, after the arrays
        cache.state_entry[s] = e
    return e


@njit(cache=True, _nrt=False)
def clear_outputs(outs):
    """Put `outs.out` back to REJECTED (0) where the last classification wrote another class,
    and empty the lists: the next classification starts from a clean `out` without a pass over
    the vocabulary."""
    n_list = outs.n_list
    for q in range(n_list[N_ACCEPTED]):
        outs.out[outs.acc_idx[q]] = 0
    for q in range(n_list[N_UNCERTAIN]):
        outs.out[outs.unc_idx[q]] = 0
    n_list[:] = 0


@njit(cache=True, nogil=True, _nrt=False)
def build_entries(fsm, chart, charts, inputs, work, cache, classes, jobs):
    """SEED, CLASSIFY, STORE and PUBLISH the FREE-zone entry of every class of
    jobs[queue[Q_NEXT]:queue[Q_END]] that is still UNBUILT, resuming a stopped batch where it
    stopped. `inputs` an EntryInputs, `work` an EntryWork, `cache` a MaskCacheArrays,
    `classes` an EntryClasses.

    A class with a resolved lookup in the cross-grammar cache (classes.hits) is built as
    kernels/cross_grammar.py says: a hit classifies its candidates only and adds acc0, a miss
    or a partial hit records what the pool is owed (PHASE_RECORD).

    Returns (status, which): OK when the batch is done; a chart's NEED_* (`which` says which
    chart), NEED_PURE, NEED_RECORD or NEED_STORE when the caller must grow something and call
    again; classify.PAUSED when the call's work budget is spent (call again: it goes on).

    A batch with queue[Q_YIELDS] set gives way between two classes when a fill waits for the
    cache (queue[Q_WAITING] > 0): it drops the classes left (Q_END = Q_NEXT) and returns OK.
    """
    hits = classes.hits
    q = work.queue
    outs = work.outs
    work.scratch.meter[0] = 0  # a fresh budget per call (classify.WORK_BUDGET)
    while q[Q_NEXT] < q[Q_END]:
        c = jobs[q[Q_NEXT]]
        state = np.int64(classes.class_rep[c])
        mode = hits.mode[c]
        hit = mode == POOL_PARTIAL or mode == POOL_PERFECT
        if q[Q_PHASE] == PHASE_SEED:
            if cache.state_entry[state] != UNBUILT:  # built already (a class named twice)
                q[Q_NEXT] += 1
                continue
            status = ensure_pure(fsm, inputs.pure, work.pure, fsm.state_rule[state])
            if status != OK:
                return status, CHART_MAIN
            status = init_chart_at_state(fsm, chart, state, classes.class_seed[c])
            if status != OK:
                return status, CHART_MAIN
            clear_outputs(outs)
            # SLICE (kernels/slices.py): a state that reads the whole slice walks only the rest
            q[Q_SLICE] = 1 if not hit and slice_contained(inputs.slice.dfa, inputs.pure, state,
                                                          work.pairs) else 0
            q[Q_TOKEN] = 0
            q[Q_PHASE] = PHASE_CLASSIFY
        if q[Q_PHASE] == PHASE_CLASSIFY:
            marked = hits.marked[hits.marked_start[c]:hits.marked_end[c]] if hit else hits.marked[:0]
            task = ClassifyTask(state, q[Q_TOKEN], hit, records_lists(mode), False, marked)
            trie = inputs.slice.rest if q[Q_SLICE] == 1 else inputs.trie
            status, j, which = classify_tokens(fsm, chart, charts, trie, inputs.context, inputs.pure,
                                               inputs.la, work.scratch, outs, task)
            if status != OK:
                q[Q_TOKEN] = j
                if j == 0 and which == CHART_MAIN:  # it restarts from the state's own sets
                    q[Q_PHASE] = PHASE_SEED
                return status, which
            q[Q_PHASE] = PHASE_STORE if mode == POOL_NONE else PHASE_RECORD
        if q[Q_PHASE] == PHASE_RECORD:
            acc0 = outs.rec_acc0[:outs.n_list[N_ACC0]]
            if q[Q_SLICE] == 1:  # the slice's tokens are read inside the rule too
                acc0 = work.merged[:merge_sorted(inputs.slice.ids, acc0, work.merged)]
            if not record_build(work.records, c, mode, outs, acc0):
                return NEED_RECORD, CHART_MAIN
            q[Q_PHASE] = PHASE_STORE
        accepted = outs.acc_idx[:outs.n_list[N_ACCEPTED]]
        if hit:  # acc0 (read inside the rule, from the pool) and what this grammar's context accepted
            accepted = work.merged[:merge_acc0(hits, c, accepted, work.merged)]
        elif q[Q_SLICE] == 1:
            accepted = work.merged[:merge_sorted(inputs.slice.ids, accepted, work.merged)]
        members = classes.members_flat[classes.members_ptr[c]:classes.members_ptr[c + 1]]
        e = store_entry(cache, accepted, outs.unc_idx[:outs.n_list[N_UNCERTAIN]], inputs.sorted_ids, members, state)
        if e < 0:
            return -e, CHART_MAIN
        clear_outputs(outs)
        q[Q_PHASE] = PHASE_SEED
        q[Q_NEXT] += 1
        if q[Q_YIELDS] == 1 and q[Q_WAITING] > 0:
            q[Q_END] = q[Q_NEXT]
    return OK, CHART_MAIN


class EntryBuilder(NamedTuple):
    """What the fill kernel needs to build a missing entry itself: the builder's chart and
    context charts (classify.ContextCharts),
    `inputs` (EntryInputs), `work` (EntryWork), `classes` (EntryClasses) and `jobs`
    (int64[C], the batch)."""

    chart: tuple
    charts: ContextCharts
    inputs: EntryInputs
    work: EntryWork
    classes: EntryClasses
    jobs: np.ndarray


@njit(cache=True, _nrt=False)
def queue_missing(fsm, chart, cache, classes, jobs, queue):
    """Queue, as a new batch, the classes of the current set's items whose FREE entry is not
    built. Returns False (nothing queued) when some item needs an entry `build_entries` does
    not make: a class not `in_kernel`, or a counted repetition's other zone."""
    k = chart.meta[META_N_SETS] - 1
    n = 0
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        e = cache.state_entry[s]
        if e == UNBUILT:
            c = classes.state_class[s]
            if not classes.in_kernel[c]:
                return False
            known = False
            for i in range(n):
                known = known or jobs[i] == c
            if not known:
                jobs[n] = c
                n += 1
        elif e >= 0 and fsm.rule_rep_lo[fsm.state_rule[s]] >= 0 and item_entry(fsm, cache, s,
                                                                                   chart.item_count[p]) == UNBUILT:
            return False
    queue[Q_NEXT] = 0
    queue[Q_END] = n
    queue[Q_PHASE] = PHASE_SEED
    queue[Q_YIELDS] = 0
    return True


@njit(cache=True, nogil=True, _nrt=False)
def fill_mask_building(fsm, chart, cache, vocab, scratch, not_regular, stop_ids, words, builder):
    """`mask_fill.fill_mask` that builds the entries it misses itself (JIT, XGrammar-2 §3.5):

        an item's entry is UNBUILT, its class in_kernel      |-  build_entries, then fill
        an item needs another kind of entry                  |-  NEED_ENTRY (the caller builds)

    Returns (status, j, n_cand, full) as `fill_mask`; NEED_BUILD when the batch stopped for
    room or gave way (classify.PAUSED) (builder.work.queue[Q_STATUS], [Q_WHICH]: what to grow; NEED_SCRATCH: the fill's own
    scratch) - the caller grows it and calls again, and the batch goes on where it stopped.
    """
    q = builder.work.queue
    while True:
        if q[Q_NEXT] < q[Q_END]:
            status, which = build_entries(fsm, builder.chart, builder.charts, builder.inputs, builder.work, cache,
                                          builder.classes, builder.jobs)
            if status != OK:
                q[Q_STATUS] = status
                q[Q_WHICH] = which
                return NEED_BUILD, 0, 0, False
        if scratch.sized[0] < cache.sizes[SIZE_ENTRIES]:
            q[Q_STATUS] = NEED_SCRATCH
            return NEED_BUILD, 0, 0, False
        n_cand = gather_cached_mask(fsm, chart, cache, vocab.sorted_ids, scratch, words)
        if n_cand != MISSING_ENTRIES:
            return check_and_finish(fsm, chart, vocab, scratch, not_regular, stop_ids, words, n_cand)
        if not queue_missing(fsm, chart, cache, builder.classes, builder.jobs, q):
            return NEED_ENTRY, 0, 0, False
