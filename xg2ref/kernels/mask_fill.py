"""XGrammar Algorithm 1 (and XGrammar-2 §3.4): the token mask from the cache entries, at run time.

The mask of the current Earley set is the union of the accepted sets of its scannable
states, plus those of their uncertain tokens that the full chart accepts:

    entry of s accepts t, s in the current set               |-  t allowed
    t uncertain in the entry of some s of the set, and the
      chart reads all of t                                     |-  t allowed
    otherwise                                                  |-  t masked out

The first entry is written into the mask, the others OR-ed in (lists of ids set bits, a
bitset is OR-ed word by word, a rejected list is a full row less its ids). A token id's word is
indexed as an unsigned number (`np.uint32(t) >> 5`): with a signed index Numba adds the check
for a negative one, and setting a list's bits takes twice as long. Their uncertain
lists (sorted indices into the byte-sorted vocabulary) are merged, deduplicated and stripped
of tokens already allowed; the rest are checked in byte order, each reusing the Earley sets
of the prefix it shares with the last one checked (XGrammar §3.3's rollback), and skipping
every token under a prefix the chart rejected. Stop tokens are set when the input so far is
a sentence.

Status codes as in `earley.py`: a NEED_* status comes with the candidate to resume from.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .earley import META_N_SETS, OK, is_completed
from .token_reads import read_token
from .trie_walk import NO_FAIL, common_prefix, under_rejected_prefix

ZONE_FREE = -1
ZONE_NOEXIT = -2
# fill_mask's status when an item of the current set needs an entry not built yet (JIT, or a
# counted repetition's zone met for the first time): the caller builds it and calls again.
NEED_ENTRY = 16
SIZE_ENTRIES = 0  # slot of MaskCacheArrays.sizes: the number of entries stored (entry_build.py)
UNBUILT = -2  # state_entry / item_entry of a state whose entry is not built yet
NO_ENTRY = -1  # state_entry / item_entry of a state without byte edges (it needs no entry)
# how an entry stores its accepted tokens (MaskCacheArrays.entry_kind, XGrammar §3.1 Fig. 5)
KIND_ACCEPTED = 0  # the accepted ids
KIND_REJECTED = 1  # the rejected ids: accepted = regular - rejected - uncertain
KIND_BITSET = 2    # a bitset of the accepted ids
# gather_cached_mask's answer when some item's entry is not built yet
MISSING_ENTRIES = -1
FULL_WORD = -1  # an int32 word of the mask with all 32 bits set


class FillScratch(NamedTuple):
    """The fill kernel's caller-owned scratch (E entries, W words, C candidates).

    entry_mark : int64[E + 1]   generation marks of the entries merged; the counter goes last
    or_words : int32[W]         an entry's accepted set before it is OR-ed into the mask
    cand : int32[C]             the uncertain candidates (sorted indices); room for each once
    cand_tmp : int32[C]         merge buffer, like `cand`
    sized : int64[1]            the entries it has room for: entries 0 .. sized[0] - 1 (marks, and
                                every uncertain token of theirs in `cand`); a fill uses no other
    """

    entry_mark: np.ndarray
    or_words: np.ndarray
    cand: np.ndarray
    cand_tmp: np.ndarray
    sized: np.ndarray


@njit(cache=True, _nrt=False)
def count_zone(lo, hi, count, slack):
    """The zone of a counted repetition's count (xg2ref/grammar/repetition.py): ZONE_FREE when
    no LOOP or END within the next `slack` bytes (the longest token) can meet a bound,
    ZONE_NOEXIT when no END can happen that soon and LOOP always can, else the count itself."""
    c = np.int64(count)
    if c + 1 >= lo and c + 1 + slack < hi:
        return ZONE_FREE
    if c + 1 + slack < lo:
        return ZONE_NOEXIT
    return c


@njit(cache=True, _nrt=False)
def item_entry(fsm, cache, state, count):
    """The entry serving an item: its state's, or for a counted repetition the one of its
    count's zone (NO_ENTRY: none; UNBUILT: not built yet). `cache` is a MaskCacheArrays."""
    state_entry = cache.state_entry
    ex_key = cache.ex_key
    rule = fsm.state_rule[state]
    lo = fsm.rule_rep_lo[rule]
    if lo < 0:
        return state_entry[state]
    zone = count_zone(lo, fsm.rule_rep_hi[rule], count, cache.count_slack[0])
    if zone == ZONE_FREE:
        return state_entry[state]
    if zone == ZONE_NOEXIT:
        return cache.noexit_entry[state]
    key = (np.int64(state) << 32) | zone
    a, b = 0, ex_key.shape[0]
    while a < b:
        m = (a + b) >> 1
        if ex_key[m] < key:
            a = m + 1
        else:
            b = m
    if a < ex_key.shape[0] and ex_key[a] == key:
        return cache.ex_entry[a]
    return UNBUILT if state_entry[state] != NO_ENTRY else NO_ENTRY


@njit(cache=True, _nrt=False)
def _merge_runs(cand, mid, end, tmp):
    """Merge the sorted runs cand[:mid] and cand[mid:end] in place (through `tmp`)."""
    a, b, n = 0, mid, 0
    while a < mid or b < end:
        if b == end or (a < mid and cand[a] <= cand[b]):
            tmp[n] = cand[a]
            a += 1
        else:
            tmp[n] = cand[b]
            b += 1
        n += 1
    for q in range(end):
        cand[q] = tmp[q]


@njit(cache=True, _nrt=False)
def gather_cached_mask(fsm, chart, cache, sorted_ids, scratch, words):
    """Algorithm 1, first half: OR the accepted sets of the entries serving the current set's
    items into `words` and collect their uncertain tokens (sorted indices) into `scratch.cand`.

    `cache` is a MaskCacheArrays, `scratch` a FillScratch (caller-owned): entry_mark[:E] holds
    generation marks and the generation counter lives in entry_mark[E]. Each entry is merged
    once, however many items it serves (states of one class, a counted repetition's items with
    counts in one zone): `cand` needs room for every uncertain id once. An item of a counted
    repetition takes the entry of its count's zone (`item_entry`). Returns the number of
    candidates, deduplicated and sorted, with those already accepted removed; MISSING_ENTRIES
    when some item's entry is not built yet (nothing is written then: the caller builds the entries and
    calls again).
    """
    state_entry = cache.state_entry
    entry_kind = cache.entry_kind
    list_indptr = cache.list_indptr
    list_ids = cache.list_ids
    unc_indptr = cache.unc_indptr
    unc_sorted = cache.unc_sorted
    entry_mark = scratch.entry_mark
    cand = scratch.cand
    # entries another thread publishes while this runs (the background builder): an entry is
    # used only when these arrays and this scratch hold it; the count is written after the
    # entry's arrays and before its number is published (entry_build.store_entry)
    n_valid = min(cache.sizes[SIZE_ENTRIES], scratch.sized[0])
    k = chart.meta[META_N_SETS] - 1
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        e = state_entry[s]
        if e == UNBUILT or e >= n_valid:
            return MISSING_ENTRIES
        if fsm.rule_rep_lo[fsm.state_rule[s]] >= 0 and e >= 0:
            e = item_entry(fsm, cache, s, chart.item_count[p])
            if e == UNBUILT or e >= n_valid:
                return MISSING_ENTRIES
    last = entry_mark.shape[0] - 1
    gen = entry_mark[last] + 1
    entry_mark[last] = gen
    n_cand = 0
    n_entries = 0
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        if fsm.rule_rep_lo[fsm.state_rule[s]] >= 0:  # items of one state may differ in count
            e = item_entry(fsm, cache, s, chart.item_count[p])
        else:
            e = state_entry[s]
        if e < 0 or entry_mark[e] == gen:
            continue
        entry_mark[e] = gen
        kind = entry_kind[e]
        # the first entry writes `words`; the others are OR-ed in: an accepted list or a bitset
        # straight into it, a rejected list through `scratch` (its complement needs a row of its own)
        first = n_entries == 0
        n_entries += 1
        if kind == KIND_BITSET:
            off = cache.bitset_offset[e]
            if first:
                for w in range(words.shape[0]):
                    words[w] = cache.bitset_words[off + w]
            else:
                for w in range(words.shape[0]):
                    words[w] |= cache.bitset_words[off + w]
        elif kind == KIND_ACCEPTED:
            if first:
                for w in range(words.shape[0]):
                    words[w] = 0
            for q in range(list_indptr[e], list_indptr[e + 1]):
                t = list_ids[q]
                words[np.uint32(t) >> 5] |= np.int32(1) << np.int32(t & 31)
        else:  # KIND_REJECTED: accepted = regular - rejected - uncertain
            acc = words if first else scratch.or_words
            for w in range(acc.shape[0]):
                acc[w] = cache.regular_words[w]
            for q in range(list_indptr[e], list_indptr[e + 1]):
                t = list_ids[q]
                acc[np.uint32(t) >> 5] &= ~(np.int32(1) << np.int32(t & 31))
            for q in range(unc_indptr[e], unc_indptr[e + 1]):
                t = sorted_ids[unc_sorted[q]]
                acc[np.uint32(t) >> 5] &= ~(np.int32(1) << np.int32(t & 31))
            if not first:
                for w in range(words.shape[0]):
                    words[w] |= acc[w]
        mid = n_cand
        for q in range(unc_indptr[e], unc_indptr[e + 1]):
            cand[n_cand] = unc_sorted[q]
            n_cand += 1
        if mid > 0 and n_cand > mid:
            _merge_runs(cand, mid, n_cand, scratch.cand_tmp)
    if n_entries == 0:
        for w in range(words.shape[0]):
            words[w] = 0
    out = 0
    prev = -1
    for q in range(n_cand):
        c = cand[q]
        if c == prev:
            continue
        prev = c
        t = sorted_ids[c]
        if (words[np.uint32(t) >> 5] >> np.int32(t & 31)) & 1:
            continue
        cand[out] = c
        out += 1
    return out


@njit(cache=True, nogil=True, _nrt=False)
def check_candidates(fsm, chart, token_bytes, token_offsets, sorted_ids, cand, n_cand, j_start, words):
    """Algorithm 1, second half: run each candidate (sorted indices, ascending) through the full
    chart, reusing the sets of the prefix shared with the previous candidate; set the bit of
    each allowed token. Returns (status, j) as `fill_token_mask` does."""
    n_sets0 = chart.meta[META_N_SETS]
    fail_len = NO_FAIL
    prev_begin = 0
    prev_len = 0
    for j in range(j_start, n_cand):
        tid = sorted_ids[cand[j]]
        begin = token_offsets[tid]
        length = token_offsets[tid + 1] - begin
        lcp = common_prefix(token_bytes, begin, length, prev_begin, prev_len) if j > j_start else 0
        prev_begin = begin
        prev_len = length
        if under_rejected_prefix(lcp, fail_len):
            continue
        status, fail_len = read_token(fsm, chart, n_sets0, lcp, token_bytes, begin, length)
        if status != OK:
            return status, j
        if fail_len == NO_FAIL:
            words[np.uint32(tid) >> 5] |= np.int32(1) << np.int32(tid & 31)
    chart.meta[META_N_SETS] = n_sets0
    return OK, n_cand


@njit(cache=True, nogil=True, _nrt=False)
def finish_mask(fsm, chart, not_regular, stop_ids, words):
    """Clear the bits of `not_regular` (ids the cache treats as regular that must not be
    allowed: overriding stop tokens), then set those of `stop_ids` when the input so far is a
    sentence."""
    for t in not_regular:
        words[np.uint32(t) >> 5] &= ~(np.int32(1) << np.int32(t & 31))
    if is_completed(fsm, chart):
        for t in stop_ids:
            words[np.uint32(t) >> 5] |= np.int32(1) << np.int32(t & 31)


@njit(cache=True, nogil=True, _nrt=False)
def all_allowed(words, vocab_size):
    """Every id below vocab_size has its bit set (nothing is masked out)."""
    full = vocab_size >> 5
    for w in range(full):
        if words[w] != FULL_WORD:
            return False
    rest = vocab_size & 31
    if rest:
        need = (np.int64(1) << rest) - 1
        return (np.int64(words[full]) & need) == need
    return True


@njit(cache=True, nogil=True, _nrt=False)
def fill_mask(fsm, chart, cache, vocab, scratch, not_regular, stop_ids, words):
    """Algorithm 1 in one call: `gather_cached_mask`, then `check_and_finish`.

    `cache` is a MaskCacheArrays, `vocab` a VocabArrays, `scratch` a FillScratch. Returns
    (status, j, n_cand, full): `full` is `all_allowed` of the result (status OK only). On a
    NEED_* status the caller grows the chart, goes on with `check_candidates` from candidate j
    and then calls `finish_mask`; on NEED_ENTRY it builds the missing entries and calls again.
    """
    n_cand = gather_cached_mask(fsm, chart, cache, vocab.sorted_ids, scratch, words)
    if n_cand == MISSING_ENTRIES:
        return NEED_ENTRY, 0, 0, False
    return check_and_finish(fsm, chart, vocab, scratch, not_regular, stop_ids, words, n_cand)


@njit(cache=True, _nrt=False)
def check_and_finish(fsm, chart, vocab, scratch, not_regular, stop_ids, words, n_cand):
    """Algorithm 1 after the gather: `check_candidates` over the n_cand candidates of
    `scratch.cand`, then `finish_mask`. Returns (status, j, n_cand, full) as `fill_mask`."""
    status, j = check_candidates(fsm, chart, vocab.token_bytes, vocab.token_offsets, vocab.sorted_ids,
                                 scratch.cand, n_cand, 0, words)
    full = False
    if status == OK:
        finish_mask(fsm, chart, not_regular, stop_ids, words)
        full = all_allowed(words, vocab.is_stop.shape[0])
    return status, j, n_cand, full
