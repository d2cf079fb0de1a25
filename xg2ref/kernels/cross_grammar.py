"""XGrammar-2 §3.3 (Figure 4) inside the entry kernel: building an entry through the
cross-grammar cache without leaving Numba (the pool itself, its keys and its eviction, stay in
xg2ref/mask/cross_grammar.py).

Before a grammar's entries are built, each class's lookup in the pool is resolved once
(`PoolHits`): MISS, or a hit carrying what the pool knows, acc0 (the tokens read inside the
rule) and the candidates left for this grammar's context (pass[L] on a PERFECT hit, the tokens
the rule may end inside on a PARTIAL one). Then, per class, in `build_entries`:

    MISS      classify every token, recording what each owes to the rule alone
              |-  entry as classified; record (acc0, ends, pass[L]) for the pool
    PARTIAL   classify the candidates only, recording  |-  entry = acc0 ∪ accepted(candidates);
              record pass[L] for the pool
    PERFECT   classify the candidates only             |-  entry = acc0 ∪ accepted(candidates)

The classifier jumps from one candidate to the next (`classify_tokens`, `only_marked`), so a hit
costs its candidates, not a pass over the vocabulary. Records are appended to `PoolRecords`, a
grammar's outbox, which Python moves into the pool later (off the token's path: at the next
compile or when the pool is read).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .classify import N_ACCEPTED, N_ENDS, N_PASS, N_UNCERTAIN
from .slices import merge_sorted, merge_step

# EntryClasses' pool mode of a class
POOL_NONE = 0       # not through the pool (no pool, or its rule has no hash)
POOL_MISS = 1
POOL_PARTIAL = 2
POOL_PERFECT = 3
POOL_COLLISION = 4  # a miss after a hash match the structural check refused
POOL_UNHASHED = 5   # built alone: its rule has no hash (only reported)
# how a hit's acc0 is held (mask/cross_grammar.py IndexSet)
ACC0_LIST = 0  # sorted indices
ACC0_BITS = 1  # np.packbits of a mask over the sorted vocabulary (big bit order)
NEED_RECORD = 21  # the outbox needs room: records.sizes[R_NEED_*] say how much

# PoolRecords.event columns, and its `sizes` slots
EV_CLASS = 0
EV_MODE = 1
EV_ACC0 = 2     # acc0: data[event[EV_ACC0]:event[EV_ENDS]]
EV_ENDS = 3     # ends: data[event[EV_ENDS]:event[EV_PASS]]
EV_PASS = 4     # pass[L]: data[event[EV_PASS]:event[EV_END]]
EV_END = 5
EV_ACCEPTED = 6  # sizes of the entry built (for reports)
EV_UNCERTAIN = 7
EV_COLUMNS = 8
R_EVENTS = 0
R_DATA = 1
R_NEED_EVENTS = 2
R_NEED_DATA = 3


class PoolHits(NamedTuple):
    """Each class's resolved pool lookup (C classes).

    mode : int8[C]             POOL_*
    marked_start, marked_end : int64[C]  a hit's candidates: marked[marked_start[c]:marked_end[c]]
                               (classes that hit one entry under one lookahead share a span)
    marked : int32[...]        (sorted indices, ascending)
    acc0_kind : int8[C]        ACC0_LIST / ACC0_BITS
    acc0_start, acc0_end : int64[C]  a hit's acc0: acc0_list or acc0_bits (its kind's) over
                               [acc0_start[c], acc0_end[c]) (one span per entry)
    acc0_list : int32[...]
    acc0_bits : uint8[...]
    """

    mode: np.ndarray
    marked_start: np.ndarray
    marked_end: np.ndarray
    marked: np.ndarray
    acc0_kind: np.ndarray
    acc0_start: np.ndarray
    acc0_end: np.ndarray
    acc0_list: np.ndarray
    acc0_bits: np.ndarray


class PoolRecords(NamedTuple):
    """The outbox of one grammar: an event per entry built through the pool, and the lists a
    MISS or PARTIAL recorded.

    event : int64[cap, EV_COLUMNS]
    data : int32[...]
    sizes : int64[4]            R_EVENTS, R_DATA used; R_NEED_* asked by NEED_RECORD
    """

    event: np.ndarray
    data: np.ndarray
    sizes: np.ndarray


@njit(cache=True, _nrt=False)
def records_lists(mode):
    """Whether a class built in `mode` lists what its tokens owe to the rule alone (`record`)."""
    return mode == POOL_MISS or mode == POOL_COLLISION or mode == POOL_PARTIAL


@njit(cache=True, _nrt=False)
def _copy(src, dst, at):
    for q in range(src.shape[0]):
        dst[at + q] = src[q]
    return at + src.shape[0]


@njit(cache=True, _nrt=False)
def record_build(records, c, mode, outs, acc0):
    """Append the event of class c's entry, built in `mode`, with what the classification
    recorded (a MISS: `acc0`, ends, pass[L]; a PARTIAL: pass[L]). Returns False (nothing written,
    records.sizes[R_NEED_*] set) when the outbox lacks room."""
    n = outs.n_list
    miss = mode == POOL_MISS or mode == POOL_COLLISION
    n_acc0 = acc0.shape[0] if miss else 0
    n_ends = n[N_ENDS] if miss else 0
    n_pass = n[N_PASS] if miss or mode == POOL_PARTIAL else 0
    z = records.sizes
    need = z[R_DATA] + n_acc0 + n_ends + n_pass
    if z[R_EVENTS] + 1 > records.event.shape[0] or need > records.data.shape[0]:
        z[R_NEED_EVENTS] = z[R_EVENTS] + 1
        z[R_NEED_DATA] = need
        return False
    ev = records.event[z[R_EVENTS]]
    at = z[R_DATA]
    ev[EV_CLASS] = c
    ev[EV_MODE] = mode
    ev[EV_ACC0] = at
    at = _copy(acc0[:n_acc0], records.data, at)
    ev[EV_ENDS] = at
    at = _copy(outs.rec_ends[:n_ends], records.data, at)
    ev[EV_PASS] = at
    at = _copy(outs.rec_pass[:n_pass], records.data, at)
    ev[EV_END] = at
    ev[EV_ACCEPTED] = n[N_ACCEPTED]
    ev[EV_UNCERTAIN] = n[N_UNCERTAIN]
    z[R_DATA] = at
    z[R_EVENTS] += 1
    return True


@njit(cache=True, _nrt=False)
def merge_acc0(hits, c, accepted, merged):
    """merged[:k] = acc0 of class c's hit ∪ `accepted` (both ascending sorted indices, disjoint:
    acc0 is read inside the rule, the candidates are tokens it may end inside). Returns k."""
    lo, hi = hits.acc0_start[c], hits.acc0_end[c]
    if hits.acc0_kind[c] == ACC0_LIST:
        return merge_sorted(accepted, hits.acc0_list[lo:hi], merged)
    a = 0
    k = 0
    for q in range(lo, hi):
        byte = hits.acc0_bits[q]
        if byte == 0:
            continue
        for bit in range(8):
            if byte & (128 >> bit):
                a, k = merge_step(accepted, a, 8 * (q - lo) + bit, merged, k)
    for q in range(a, accepted.shape[0]):
        merged[k] = accepted[q]
        k += 1
    return k
