"""XGrammar §3.2 (context expansion): what may follow a rule, for the tokens an entry cannot
decide inside the rule (`classify.classify_tokens`).

CONTEXT is context expansion (XGrammar §3.2, Algorithm 2): A's parents are the FSM edges
`src -A-> dst` of the grammar, so whatever follows A starts at some such `dst`.
`CONTEXT(A, rest)` runs `rest` from the single item `[0, 1, B -> dst]` for every occurrence
(`context_allows`); it is true when one of them reads all of `rest`; where B itself may end,
B's own occurrences are tried on what is left, and so on up the grammar. Every step
over-approximates what may follow, so a token it rejects is rejected in every context.

    ACCEPT-CTX  every occurrence of A reads the rest without its rule ending
                |-  t accepted in every context (`every_parent_reads`)
    FOLLOW1     byte b can never follow A (grammar analysis, or CONTEXT on b alone, memoised in
                `ContextArrays.follow1`)  |-  no rest starting with b is pursued

The seeded charts these runs use (`init_chart_at_state`: set 0 empty, so that the seed's
origin has no parent) and the facts read off them (`start_rule_may_end`, `copies_completed`
for counted repetitions, XGrammar-2 §3.6) live here too.

Status codes as in `earley.py`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .earley import (EMPTY, FREE_BASE, META_N_SETS, NO_DEADLINE, OK, STRICT_BASE, advance_byte, item_may_end,
                     seed_chart)

# follow1[B, b] (ContextArrays): can byte b follow rule B?
FOLLOW_UNKNOWN = -1
FOLLOW_NEVER = 0
FOLLOW_MAY = 1


# a seeded chart (`init_chart_at_state`): set 0 empty, set SEED_SET the seed item's closure
SEED_SET = 1
SEED_SETS = SEED_SET + 1
# context expansion's work list: work[WORK_N] pairs (rule, start) from work[WORK_PAIRS] on
WORK_N = 0
WORK_PAIRS = 1
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


# Context expansion gives up (the token stays uncertain) after this many occurrence runs.
MAX_CONTEXT_RUNS = 4096
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
def context_allows(fsm, chart, context, work, seen, token_bytes, begin, end):
    """CONTEXT for the (rule, start) pairs already in `work` (work[WORK_N] pairs from
    work[WORK_PAIRS] on).

    Breadth-first over pairs (B, q) "B has just ended at byte q": for every occurrence
    `src -B-> dst`, read token_bytes[q:end] from [0, 1, C -> dst]. Reading all of it means
    the token may continue: True. Wherever C may end first, (C, q') joins the work list, so the
    expansion climbs as many levels as it needs (root's end is only continued through root's
    own occurrences: after the sentence nothing follows). Gives up, answering True, after
    MAX_CONTEXT_RUNS runs. `seen` (int64, last slot = generation) dedups pairs.
    `follow1[B, b]` is FOLLOW_NEVER when byte b can never follow B (a pair starting with such a
    byte is not pursued), FOLLOW_MAY when it may, FOLLOW_UNKNOWN when not known yet (pursued).
    Returns (status, allowed, far): `far` bounds the bytes looked at (token_bytes[:far]), so
    a False answer holds for every token that shares them. `context` is a ContextArrays.
    """
    occ_indptr = context.occ_indptr
    occ_dst = context.occ_dst
    follow1 = context.follow1
    width = end - begin + 1
    runs = 0
    far = begin
    head = 0
    while head < work[WORK_N]:
        rule = work[WORK_PAIRS + 2 * head]
        q0 = work[WORK_PAIRS + 1 + 2 * head]
        head += 1
        for o in range(occ_indptr[rule], occ_indptr[rule + 1]):
            runs += 1
            if runs > MAX_CONTEXT_RUNS:
                return OK, True, end
            dst = occ_dst[o]
            parent = fsm.state_rule[dst]
            status = init_chart_at_state(fsm, chart, dst, FREE_BASE)  # a counted parent: any count
            if status != OK:
                return status, False, end
            alive = True
            for q in range(q0, end + 1):
                if q > q0:
                    status = advance_byte(fsm, chart, token_bytes[q - 1])
                    if status == EMPTY:
                        far = q if q > far else far
                        alive = False
                        break
                    if status != OK:
                        return status, False, end
                if q < end:
                    far = q + 1 if q + 1 > far else far
                if q < end and follow1[parent, token_bytes[q]] != FOLLOW_NEVER and start_rule_may_end(fsm, chart):
                    key = parent * width + (q - begin)
                    if seen[key] != seen[seen.shape[0] - 1]:
                        seen[key] = seen[seen.shape[0] - 1]
                        if WORK_PAIRS + 2 * work[WORK_N] + 1 >= work.shape[0]:
                            return OK, True, end
                        work[WORK_PAIRS + 2 * work[WORK_N]] = parent
                        work[WORK_PAIRS + 1 + 2 * work[WORK_N]] = q
                        work[WORK_N] += 1
            if alive:
                return OK, True, end
    return OK, False, far


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
def _context_once(fsm, chart, context, work, seen, token_bytes, rule, start, end):
    """CONTEXT(rule, token_bytes[start:end]) memoised by (rule, the rest's bytes): the answer
    and the bytes looked at depend on nothing else. Returns (status, allowed, far)."""
    key = (np.int64(rule) << 1) | ASK_CONTEXT
    slot = _memo_slot(context, key, token_bytes, start, end - start)
    if slot >= 0:
        val = context.memo_val[slot]
        return OK, (val & 1) == 1, start + (val >> 1)
    work[WORK_N] = 1
    work[WORK_PAIRS] = rule
    work[WORK_PAIRS + 1] = start
    seen[seen.shape[0] - 1] += 1
    status, ok, far = context_allows(fsm, chart, context, work, seen, token_bytes, start, end)
    if status == OK:
        _remember(context, slot, key, start, end - start, ((far - start) << 1) | (1 if ok else 0))
    return status, ok, far


@njit(cache=True, _nrt=False)
def query_context(fsm, chart, context, work, seen, token_bytes, rule, start, end):
    """CONTEXT(rule, token_bytes[start:end]), memoised, asked first about the rest's first
    PREFIX_BYTES bytes (FOLLOW2): when no parent reads those, none reads the whole rest.
    Returns (status, allowed, far) as `context_allows`."""
    if end - start > PREFIX_BYTES:
        status, ok, far = _context_once(fsm, chart, context, work, seen, token_bytes, rule, start,
                                        start + PREFIX_BYTES)
        if status != OK or not ok:
            return status, ok, far
    return _context_once(fsm, chart, context, work, seen, token_bytes, rule, start, end)


@njit(cache=True, _nrt=False)
def query_every_parent(fsm, chart, context, rule, token_bytes, start, end):
    """ACCEPT-CTX (`every_parent_reads`), memoised by (rule, the rest's bytes)."""
    key = (np.int64(rule) << 1) | ASK_EVERY_PARENT
    slot = _memo_slot(context, key, token_bytes, start, end - start)
    if slot >= 0:
        return OK, (context.memo_val[slot] & 1) == 1
    status, every = every_parent_reads(fsm, chart, context, rule, token_bytes, start, end)
    if status == OK:
        _remember(context, slot, key, start, end - start, 1 if every else 0)
    return status, every
