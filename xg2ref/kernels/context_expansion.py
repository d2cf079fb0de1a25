"""XGrammar §3.2 (context expansion): what may follow a rule, for the tokens an entry cannot
decide inside the rule (`classify.classify_tokens`).

CONTEXT is context expansion (XGrammar §3.2, Algorithm 2): A's parents are the FSM edges
`src -A-> dst` of the grammar, so whatever follows A starts at some such `dst`.
`CONTEXT(A, rest)` reads `rest` from the items `[0, 1, B -> dst]` of every occurrence at once
(`union_context`); it is true when the chart reads all of `rest`; where B itself may end, B's
own occurrences join the set (CLIMB), and so on up the grammar. Every step over-approximates
what may follow, so a token it rejects is rejected in every context. The chart is rolled back
to the bytes a question shares with the last one (ROLLBACK), so the rests of the sorted
tokens are read as a trie, as the main chart reads the tokens themselves.

    ACCEPT-CTX  every occurrence of A reads the rest without its rule ending
                |-  t accepted in every context (`every_parent_reads`)
    FOLLOW1     byte b can never follow A (grammar analysis, or CONTEXT on b alone, memoised in
                `ContextArrays.follow1`)  |-  no rest starting with b is pursued
    FOLLOW2     no parent reads the rest's first two bytes  |-  the rest is not read further
                (`query_context`); every answer is memoised by (rule, rest) per grammar

The seeded charts these runs use (`init_chart_at_state`: set 0 empty, so that the seed's
origin has no parent) and the facts read off them (`start_rule_may_end`, `copies_completed`
for counted repetitions, XGrammar-2 §3.6) live here too.

Status codes as in `earley.py`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .earley import (DUPLICATE, EMPTY, FREE_BASE, META_GEN, META_N_SETS, META_POOL, NEED_SETS, NO_DEADLINE, OK,
                     STRICT_BASE, add_item, advance_byte, close_set, item_may_end, seed_chart)

# follow1[B, b] (ContextArrays): can byte b follow rule B?
FOLLOW_UNKNOWN = -1
FOLLOW_NEVER = 0
FOLLOW_MAY = 1


# a seeded chart (`init_chart_at_state`): set 0 empty, set SEED_SET the seed item's closure
SEED_SET = 1
SEED_SETS = SEED_SET + 1
# the union chart's state (`union_context`), in ClassifyScratch.work: the rule seeded (-1: none),
# the rest read (token_bytes[CTX_AT:+CTX_LEN]), and from CTX_CLIMBED on one flag per set
CTX_RULE = 0
CTX_AT = 1
CTX_LEN = 2
CTX_CLIMBED = 3
# a bound above any count of copies (`copies_completed`)
MANY_COPIES = 1 << 40


class ContextArrays(NamedTuple):
    """What context expansion reads (R rules).

    occ_indptr : int64[R + 1]   the occurrences `src -B-> dst` of rule B: occ_dst[occ_indptr[B]:...]
    occ_dst : int32[...]
    follow1 : int8[R, 256]      FOLLOW1 memo: FOLLOW_NEVER byte b never follows rule B, FOLLOW_MAY
                                it may, FOLLOW_UNKNOWN not known yet (filled in as a side effect,
                                kept across states)
    memo_key : int64[M]         the answers memo (`query_context`, `query_every_parent`), M a power
    memo_at : int64[M]          of two: slot k holds the question (kind, rule) = memo_key[k] (-1
    memo_len : int32[M]         empty) about the rest token_bytes[memo_at[k]:+memo_len[k]], and its
    memo_val : int64[M]         answer (bit 0) with the bytes it looked at beyond the rest's start
    """

    occ_indptr: np.ndarray
    occ_dst: np.ndarray
    follow1: np.ndarray
    memo_key: np.ndarray
    memo_at: np.ndarray
    memo_len: np.ndarray
    memo_val: np.ndarray


# ACCEPT-CTX is tried for rules with at most this many occurrences.
MAX_ACCEPT_PARENTS = 8
# the answers memo: slots (a power of two), slots probed before the home slot is overwritten,
# and the two kinds of question
MEMO_SLOTS = 4096
MEMO_PROBES = 8
ASK_CONTEXT = 0
ASK_EVERY_PARENT = 1
# a rest is first asked about through its first PREFIX_BYTES bytes (FOLLOW2): a prefix no parent
# reads settles every rest that starts with it
PREFIX_BYTES = 2


@njit(cache=True, _nrt=False)
def init_chart_at_state(fsm, chart, state, count):
    """Set 0 empty, set 1 = the closure of the single item (state, origin 0, count). Returns a
    status. `count` matters in a counted repetition only (kernels/earley.py): the entry of a
    state of one is built for a zone of counts (FREE_BASE, NOEXIT_BASE) or for one count."""
    return seed_chart(fsm, chart, SEED_SET, state, NO_DEADLINE, NO_DEADLINE, count)


@njit(cache=True, _nrt=False)
def start_rule_may_end(fsm, chart):
    """The current set holds an origin-0 item in a final state (the start item's rule may end)."""
    k = chart.meta[META_N_SETS] - 1
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        if chart.item_origin[p] == 0 and item_may_end(fsm, chart, chart.item_state[p], chart.item_count[p]):
            return True
    return False


@njit(cache=True, _nrt=False)
def copies_completed(fsm, chart, rule):
    """The fewest copies completed by a derivation that reached the current set from the seed
    item of counted repetition `rule` (set 1), when the rule's body references only rules
    that reference none: an item of the rule carries its count; an item of a referenced rule
    that began in set j has the count of the rule's items of set j that wait for it."""
    base = chart.item_count[chart.set_start[SEED_SET]]
    best = np.int64(MANY_COPIES)
    k = chart.meta[META_N_SETS] - 1
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        i = chart.item_origin[p]
        if fsm.state_rule[chart.item_state[p]] == rule and i == 0:
            best = min(best, np.int64(chart.item_count[p]) - base)
        elif i > 0:
            child = fsm.state_rule[chart.item_state[p]]
            for q in range(chart.set_start[i], chart.set_start[i + 1]):
                s2 = chart.item_state[q]
                if chart.item_origin[q] != 0 or fsm.state_rule[s2] != rule:
                    continue
                for e in range(fsm.ref_indptr[s2], fsm.ref_indptr[s2 + 1]):
                    if fsm.ref_rule[e] == child:
                        best = min(best, np.int64(chart.item_count[q]) - base)
                        break
    return best


@njit(cache=True, _nrt=False)
def _seed_union(fsm, chart, context, rule):
    """Set 0 empty, set SEED_SET = the closure of [0, 1, B -> dst] for every occurrence
    `src -rule-> dst` at once (origin 0 has no parent: such an item completing is a CLIMB).
    Returns a status code."""
    if chart.set_start.shape[0] < SEED_SETS + 1:
        return NEED_SETS
    chart.meta[META_GEN] += 1
    for q in range(SEED_SETS):
        chart.set_start[q] = 0
        chart.set_chars[q] = 0
        chart.set_pool[q] = 1
    chart.meta[META_POOL] = 1
    end = 0
    for o in range(context.occ_indptr[rule], context.occ_indptr[rule + 1]):
        # a counted parent: any count
        r = add_item(chart, 0, end, context.occ_dst[o], 0, NO_DEADLINE, NO_DEADLINE, FREE_BASE)
        if r < DUPLICATE:
            return -r
        if r >= 0:
            end = r
    status, end = close_set(fsm, chart, SEED_SET, 0, 0, end)
    if status != OK:
        return status
    chart.set_start[SEED_SETS] = end
    chart.set_pool[SEED_SET] = chart.meta[META_POOL]
    chart.meta[META_N_SETS] = SEED_SETS
    return OK


@njit(cache=True, _nrt=False)
def _reopen_set(chart, begin, end):
    """Make the dedup table hold the items begin:end of a built set again, so that items can be
    added to it. Returns a status code."""
    chart.meta[META_GEN] += 1
    for p in range(begin, end):
        r = add_item(chart, begin, p, chart.item_state[p], chart.item_origin[p], chart.item_deadline[p],
                     chart.item_char_deadline[p], chart.item_count[p])
        if r < DUPLICATE:
            return -r
    return OK


# CLIMB: a seeded item's rule C may end in set k, so whatever follows C follows there too
#
#     [0, k, C -> f]   f final (C may end)   src -C-> dst
#     ------------------------------------------------- (C's rule's occurrences, each once a set)
#                  [0, k, D -> dst]
@njit(cache=True, _nrt=False)
def _climb(fsm, chart, context, marks, k):
    """CLIMB every origin-0 item of set k (the current set) that may end, the climbed items
    included, and close the set again (its dedup table made to hold it first: `_reopen_set`).
    `marks` (int64, last slot = generation) holds the rules climbed in this set. Returns a
    status code."""
    occ_indptr = context.occ_indptr
    occ_dst = context.occ_dst
    marks[marks.shape[0] - 1] += 1
    stamp = marks[marks.shape[0] - 1]
    begin = chart.set_start[k]
    end = chart.set_start[k + 1]
    chart.meta[META_POOL] = chart.set_pool[k]
    reopened = False
    p = begin
    while p < end:
        if chart.item_origin[p] == 0 and item_may_end(fsm, chart, chart.item_state[p], chart.item_count[p]):
            c = fsm.state_rule[chart.item_state[p]]
            if marks[c] != stamp:
                marks[c] = stamp
                if not reopened:  # the dedup table holds another set now (or none, after a DFA step)
                    status = _reopen_set(chart, begin, end)
                    if status != OK:
                        return status
                    reopened = True
                added = end
                for o in range(occ_indptr[c], occ_indptr[c + 1]):
                    r = add_item(chart, begin, end, occ_dst[o], 0, NO_DEADLINE, NO_DEADLINE, FREE_BASE)
                    if r < DUPLICATE:
                        return -r
                    if r >= 0:
                        end = r
                if end > added:
                    status, end = close_set(fsm, chart, k, begin, added, end)
                    if status != OK:
                        return status
        p += 1
    chart.set_start[k + 1] = end
    chart.set_pool[k] = chart.meta[META_POOL]
    return OK


@njit(cache=True, _nrt=False)
def _forget_union(work):
    work[CTX_RULE] = -1


@njit(cache=True, _nrt=False)
def union_context(fsm, chart, context, work, marks, token_bytes, rule, start, end):
    """CONTEXT(rule, token_bytes[start:end]) on the union chart.

    Set SEED_SET holds every occurrence of `rule` at once (`_seed_union`), and before each byte
    is read the set CLIMBs (`_climb`): the expansion goes up as many levels as it needs in one
    chart (root's end is only continued through root's own occurrences: after the sentence
    nothing follows). The rest is allowed when the chart reads all of it. Earley sets are sets:
    the union chart reads a rest iff one occurrence's own chart, climbing the same way, would.

    ROLLBACK: what a set holds depends only on the rule and the bytes before it (a set climbs
    whatever the next byte is), so the chart of the last question (`work[CTX_RULE]`,
    token_bytes[work[CTX_AT]:+work[CTX_LEN]]) is rolled back to the bytes the two rests share
    and read on from there, as the main chart is across sorted tokens (trie_walk.py).
    `work[CTX_CLIMBED + q]` = 1 when the set after q bytes has climbed.

    Returns (status, allowed, far): `far` bounds the bytes looked at (token_bytes[:far]), so a
    False answer holds for every token that shares them. `context` is a ContextArrays."""
    n = end - start
    keep = 0
    if work[CTX_RULE] == rule:
        at = work[CTX_AT]
        have = work[CTX_LEN] if work[CTX_LEN] < n else n
        while keep < have and token_bytes[at + keep] == token_bytes[start + keep]:
            keep += 1
    else:
        status = _seed_union(fsm, chart, context, rule)
        if status != OK:
            _forget_union(work)
            return status, False, end
        work[CTX_RULE] = rule
        work[CTX_CLIMBED] = 0
    chart.meta[META_N_SETS] = SEED_SETS + keep
    work[CTX_AT] = start
    work[CTX_LEN] = keep
    if chart.set_start[SEED_SETS] == 0:  # the rule occurs nowhere: nothing follows it
        return OK, False, start
    for q in range(keep, n):
        if work[CTX_CLIMBED + q] == 0:
            status = _climb(fsm, chart, context, marks, SEED_SET + q)
            if status != OK:
                _forget_union(work)
                return status, False, end
            work[CTX_CLIMBED + q] = 1
        status = advance_byte(fsm, chart, token_bytes[start + q])
        if status == EMPTY:
            return OK, False, start + q + 1
        if status != OK:
            _forget_union(work)
            return status, False, end
        work[CTX_CLIMBED + q + 1] = 0
        work[CTX_LEN] = q + 1
    return OK, True, end


@njit(cache=True, _nrt=False)
def every_parent_reads(fsm, chart, context, rule, token_bytes, begin, end):
    """ACCEPT-CTX: every occurrence `src -rule-> dst` reads token_bytes[begin:end] from
    [0, 1, B -> dst] without B having to end. Returns (status, answer); False when the rule
    has no occurrence or more than MAX_ACCEPT_PARENTS."""
    occ_indptr = context.occ_indptr
    occ_dst = context.occ_dst
    n_occ = occ_indptr[rule + 1] - occ_indptr[rule]
    if n_occ == 0 or n_occ > MAX_ACCEPT_PARENTS:
        return OK, False
    for o in range(occ_indptr[rule], occ_indptr[rule + 1]):
        status = init_chart_at_state(fsm, chart, occ_dst[o], STRICT_BASE)  # a counted parent: no LOOP
        if status != OK:
            return status, False
        for q in range(begin, end):
            status = advance_byte(fsm, chart, token_bytes[q])
            if status == EMPTY:
                return OK, False
            if status != OK:
                return status, False
    return OK, True


@njit(cache=True, _nrt=False)
def _memo_slot(context, key, token_bytes, at, n):
    """The slot holding question `key` about token_bytes[at:at + n], or -(slot + 1) for the slot
    to store it in (a free one near its home, else the home slot itself: the memo forgets)."""
    h = (np.int64(key) * 0x9E37 + n) & 0xFFFFFFFF  # FNV-1a over the bytes, 32 bits (no overflow)
    for q in range(n):
        h = ((h ^ token_bytes[at + q]) * 0x01000193) & 0xFFFFFFFF
    mask = context.memo_key.shape[0] - 1
    home = (h ^ (h >> 16)) & mask
    for probe in range(MEMO_PROBES):
        k = (home + probe) & mask
        stored = context.memo_key[k]
        if stored == -1:
            return -(k + 1)
        if stored == key and context.memo_len[k] == n:
            other = context.memo_at[k]
            same = True
            for q in range(n):
                if token_bytes[other + q] != token_bytes[at + q]:
                    same = False
                    break
            if same:
                return k
    return -(home + 1)


@njit(cache=True, _nrt=False)
def _remember(context, slot, key, at, n, value):
    k = -slot - 1
    context.memo_key[k] = key
    context.memo_at[k] = at
    context.memo_len[k] = n
    context.memo_val[k] = value


@njit(cache=True, _nrt=False)
def _context_once(fsm, chart, context, work, marks, token_bytes, rule, start, end):
    """CONTEXT(rule, token_bytes[start:end]) memoised by (rule, the rest's bytes): the answer
    and the bytes looked at depend on nothing else. Returns (status, allowed, far)."""
    key = (np.int64(rule) << 1) | ASK_CONTEXT
    slot = _memo_slot(context, key, token_bytes, start, end - start)
    if slot >= 0:
        val = context.memo_val[slot]
        return OK, (val & 1) == 1, start + (val >> 1)
    status, ok, far = union_context(fsm, chart, context, work, marks, token_bytes, rule, start, end)
    if status == OK:
        _remember(context, slot, key, start, end - start, ((far - start) << 1) | (1 if ok else 0))
    return status, ok, far


@njit(cache=True, _nrt=False)
def query_context(fsm, chart, context, work, marks, token_bytes, rule, start, end):
    """CONTEXT(rule, token_bytes[start:end]), memoised, asked first about the rest's first
    PREFIX_BYTES bytes (FOLLOW2): when no parent reads those, none reads the whole rest.
    Returns (status, allowed, far) as `union_context`."""
    if end - start > PREFIX_BYTES:
        status, ok, far = _context_once(fsm, chart, context, work, marks, token_bytes, rule, start,
                                        start + PREFIX_BYTES)
        if status != OK or not ok:
            return status, ok, far
    return _context_once(fsm, chart, context, work, marks, token_bytes, rule, start, end)


@njit(cache=True, _nrt=False)
def query_every_parent(fsm, chart, context, rule, token_bytes, start, end):
    """ACCEPT-CTX (`every_parent_reads`), memoised by (rule, the rest's bytes), on a chart of
    its own (CONTEXT's union chart stays as it is, to be rolled back)."""
    key = (np.int64(rule) << 1) | ASK_EVERY_PARENT
    slot = _memo_slot(context, key, token_bytes, start, end - start)
    if slot >= 0:
        return OK, (context.memo_val[slot] & 1) == 1
    status, every = every_parent_reads(fsm, chart, context, rule, token_bytes, start, end)
    if status == OK:
        _remember(context, slot, key, start, end - start, 1 if every else 0)
    return status, every
