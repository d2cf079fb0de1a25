"""XGrammar §3.3 (the byte-sorted vocabulary and rollback) over the Earley chart of
`earley.py`: reading bytes and whole tokens, and checking a run of tokens in byte order.

- `read_token` reads one token from the current set, first rolling the chart back to the sets
  of the prefix it shares with the token read before it (the chart is its own history, so
  rolling back n bytes is lowering the set count by n).
- `fill_token_mask` checks a vocabulary in byte order: a token reuses the sets of the prefix it
  shares with its predecessor, and every token under a rejected prefix is rejected unread.
- Token edges (`Token(...)`, `ExcludeToken(...)`): `token_successors` finds the TOKEN items
  of the current set, `join_token_items` puts them into the set the token's bytes end in.

Status codes are those of `earley.py`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .trie_walk import NO_FAIL, reuse_sets, shared_with_previous, under_rejected_prefix

from .earley import (DUPLICATE, EMPTY, META_CHAR_BUDGETS, META_GEN, META_N_SETS, META_POOL, NEED_SETS, OK, add_item,
                     advance_byte, char_enforced, close_set, expired)


@njit(cache=True, _nrt=False)
def advance_bytes(fsm, chart, data):
    """Advance over every byte of `data`. Returns (status, bytes consumed).

    On EMPTY or NEED_* the bytes consumed so far stay committed; the caller decides
    whether to roll them back.
    """
    for n in range(data.shape[0]):
        status = advance_byte(fsm, chart, data[n])
        if status != OK:
            return status, n
    return OK, data.shape[0]


@njit(cache=True, _nrt=False)
def advance_span(fsm, chart, data, begin, end):
    """`advance_bytes` over data[begin:end] (a token inside the vocabulary's bytes, no slice
    made). Returns (status, bytes consumed); EMPTY at once when the current set is empty (only an
    empty language gets there)."""
    k = chart.meta[META_N_SETS] - 1
    if chart.set_start[k + 1] == chart.set_start[k]:
        return EMPTY, 0
    for n in range(begin, end):
        status = advance_byte(fsm, chart, data[n])
        if status != OK:
            return status, n - begin
    return OK, end - begin


class TokenItems(NamedTuple):
    """Items reached through token edges (`token_successors`), one per index.

    state, origin, deadline, char_deadline, count : int32[n]   as in the chart (`Chart`)
    """

    state: np.ndarray
    origin: np.ndarray
    deadline: np.ndarray
    char_deadline: np.ndarray
    count: np.ndarray


def new_token_items(n: int) -> TokenItems:
    """Room for n TOKEN items."""
    return TokenItems(*(np.zeros(n, np.int32) for _ in range(5)))


# TOKEN, and how a whole token meets a character budget (xgrammar 0.2.8's reading: a token
# edge reads while the budget is not spent, whatever the token's length, and its code points
# then count like those of bytes; `Token(...)` in a rule of `max_chars=0` reads nothing):
#
#     [i, k, A -> s], s -<set g>-> t, the token is in set g  |-  [i, k+len, A -> t]
#     CHAR-ENFORCE holds at set k (kernels/earley.py) and the item's char deadline
#     <= set_chars[k]                                         |-  the item reads no token
@njit(cache=True, _nrt=False)
def token_successors(fsm, chart, member, out):
    """Items that a whole token reaches through token edges from the current set k (TOKEN,
    above). `member[g]` says whether the token is in token set g. Writes the items (state,
    origin, deadlines, count) to `out` (a TokenItems, as many as fit) and returns their number.
    """
    k = chart.meta[META_N_SETS] - 1
    char_enforce = chart.meta[META_CHAR_BUDGETS] != 0 and char_enforced(fsm, chart, k)
    n = 0
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        if expired(chart, p) or (char_enforce and chart.item_char_deadline[p] <= chart.set_chars[k]):
            continue
        for e in range(fsm.tok_indptr[s], fsm.tok_indptr[s + 1]):
            if member[fsm.tok_set[e]]:
                if n < out.state.shape[0]:
                    out.state[n] = fsm.tok_dst[e]
                    out.origin[n] = chart.item_origin[p]
                    out.deadline[n] = chart.item_deadline[p]
                    out.char_deadline[n] = chart.item_char_deadline[p]
                    out.count[n] = chart.item_count[p]
                n += 1
    return n


@njit(cache=True, _nrt=False)
def join_token_items(fsm, chart, k0, length, nchars, items, n_items, fresh):
    """Put the TOKEN items (items[:n_items], a TokenItems) into set k0+length and close it again.

    `fresh`: the bytes of the token were rejected, so sets k0+1 .. k0+length-1 are made empty
    (no item starts or ends inside a token read whole) and set k0+length holds the TOKEN
    items alone. Otherwise set k0+length is the last set the bytes built; its items are put
    back into the dedup table first. Returns a status code; on OK the current set is
    k0+length.
    """
    target = k0 + length
    if chart.set_start.shape[0] < target + 2:
        return NEED_SETS
    chart.meta[META_GEN] += 1
    if fresh:
        for q in range(k0 + 1, target + 1):
            chart.set_start[q] = chart.set_start[k0 + 1]
            chart.set_chars[q] = chart.set_chars[k0]
            chart.set_pool[q] = chart.set_pool[k0]
        chart.set_chars[target] = chart.set_chars[k0] + nchars
    chart.meta[META_POOL] = chart.set_pool[target]  # links of the sets before, and of set target's items
    begin = chart.set_start[target]
    end = begin
    if not fresh:
        for p in range(begin, chart.set_start[target + 1]):
            r = add_item(chart, begin, end, chart.item_state[p], chart.item_origin[p], chart.item_deadline[p],
                          chart.item_char_deadline[p], chart.item_count[p])
            if r < DUPLICATE:
                return -r
            if r >= 0:
                end = r
    for n in range(n_items):
        r = add_item(chart, begin, end, items.state[n], items.origin[n], items.deadline[n], items.char_deadline[n],
                     items.count[n])
        if r < DUPLICATE:
            return -r
        if r >= 0:
            end = r
    status, end = close_set(fsm, chart, target, begin, begin, end)
    if status != OK:
        return status
    chart.set_start[target + 1] = end
    chart.set_pool[target] = chart.meta[META_POOL]
    chart.meta[META_N_SETS] = target + 1
    return OK


@njit(cache=True, _nrt=False)
def read_token(fsm, chart, n_sets0, lcp, token_bytes, begin, length):
    """Read one token from the current set (set n_sets0 - 1), reusing the sets of the `lcp`
    bytes it shares with the token read before it (the chart is its own history: rolling back
    is lowering the set count). Returns (status, fail_len): OK with fail_len 0 when the whole
    token is read, OK with fail_len = d + 1 when byte d has no way on, or a NEED_* status
    (the chart then holds n_sets0 sets again)."""
    for d in range(reuse_sets(chart, n_sets0, lcp), length):
        status = advance_byte(fsm, chart, token_bytes[begin + d])
        if status == EMPTY:
            return OK, d + 1
        if status != OK:
            chart.meta[META_N_SETS] = n_sets0
            return status, NO_FAIL
    return OK, NO_FAIL


@njit(cache=True, _nrt=False)
def fill_token_mask(fsm, chart, token_bytes, token_offsets, sorted_ids, sorted_lcp, j_start, out):
    """Check tokens sorted_ids[j_start:] against the current set; write out[id] = allowed.

    Tokens are visited in byte order. Two savings follow from that order:
    - a token sharing `sorted_lcp[j]` bytes with its predecessor reuses the sets already
      built for those bytes (pop back to the common prefix instead of starting over);
    - when a prefix of length L was rejected, every following token that shares those L
      bytes is rejected without parsing (a skipped trie subtree).

    Returns (status, j): status OK when all tokens are done, otherwise a NEED_* code and the
    token to resume from after the caller has grown the chart. The chart is restored to its
    set count on entry in every case.
    """
    n_sets0 = chart.meta[META_N_SETS]
    fail_len = NO_FAIL
    for j in range(j_start, sorted_ids.shape[0]):
        tid = sorted_ids[j]
        lcp = shared_with_previous(sorted_lcp, j, j_start)
        if under_rejected_prefix(lcp, fail_len):  # one by one: a subset of the vocabulary has no subtree_end
            out[tid] = False
            continue
        begin = token_offsets[tid]
        status, fail_len = read_token(fsm, chart, n_sets0, lcp, token_bytes, begin, token_offsets[tid + 1] - begin)
        if status != OK:
            return status, j
        out[tid] = fail_len == NO_FAIL
    chart.meta[META_N_SETS] = n_sets0
    return OK, sorted_ids.shape[0]


@njit(cache=True, _nrt=False)
def next_byte_set(fsm, chart, out):
    """out[b] = some item of the current set has a byte edge on b (256 booleans)."""
    k = chart.meta[META_N_SETS] - 1
    out[:] = False
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        if expired(chart, p):
            continue
        for e in range(fsm.byte_indptr[s], fsm.byte_indptr[s + 1]):
            for b in range(fsm.byte_lo[e], fsm.byte_hi[e] + 1):
                out[b] = True
