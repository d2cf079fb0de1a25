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

from numba import njit

from .earley import EMPTY, META_POOL, NEED_ITEMS, OK, add_item, close_set, expired, advance_byte


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
def token_successors(fsm, chart, member, out_state, out_origin, out_deadline, out_char_deadline, out_count):
    """Items that a whole token reaches through token edges from the current set k.

        TOKEN   [i, k, A -> s], s -<set g>-> t, the token is in set g  |-  [i, k+len, A -> t]

    `member[g]` says whether the token is in token set g. Writes the items (state, origin,
    deadlines, count) to the out arrays (as many as fit) and returns their number.
    """
    k = chart.meta[0] - 1
    n = 0
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        if expired(chart, p):
            continue
        for e in range(fsm.tok_indptr[s], fsm.tok_indptr[s + 1]):
            if member[fsm.tok_set[e]]:
                if n < out_state.shape[0]:
                    out_state[n] = fsm.tok_dst[e]
                    out_origin[n] = chart.item_origin[p]
                    out_deadline[n] = chart.item_deadline[p]
                    out_char_deadline[n] = chart.item_char_deadline[p]
                    out_count[n] = chart.item_count[p]
                n += 1
    return n


@njit(cache=True, _nrt=False)
def join_token_items(fsm, chart, k0, length, nchars, states, origins, deadlines, char_deadlines, counts, fresh):
    """Put the TOKEN items (`states`, `origins`) into set k0+length and close it again.

    `fresh`: the bytes of the token were rejected, so sets k0+1 .. k0+length-1 are made empty
    (no item starts or ends inside a token read whole) and set k0+length holds the TOKEN
    items alone. Otherwise set k0+length is the last set the bytes built; its items are put
    back into the dedup table first. Returns a status code; on OK the current set is
    k0+length.
    """
    target = k0 + length
    if chart.set_start.shape[0] < target + 2:
        return NEED_ITEMS
    chart.meta[1] += 1
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
            r = add_item(chart.tbl_key, chart.tbl_gen, chart.tbl_cnt, chart.meta[1], chart.item_state,
                          chart.item_origin, chart.item_deadline, chart.item_char_deadline, chart.item_count,
                          chart.meta, begin, end, chart.item_state[p], chart.item_origin[p], chart.item_deadline[p],
                          chart.item_char_deadline[p], chart.item_count[p])
            if r < -1:
                return -r
            if r >= 0:
                end = r
    for n in range(states.shape[0]):
        r = add_item(chart.tbl_key, chart.tbl_gen, chart.tbl_cnt, chart.meta[1], chart.item_state,
                      chart.item_origin, chart.item_deadline, chart.item_char_deadline, chart.item_count, chart.meta,
                      begin, end, states[n], origins[n], deadlines[n], char_deadlines[n], counts[n])
        if r < -1:
            return -r
        if r >= 0:
            end = r
    status, end = close_set(fsm, chart, target, begin, end)
    if status != OK:
        return status
    chart.set_start[target + 1] = end
    chart.set_pool[target] = chart.meta[META_POOL]
    chart.meta[0] = target + 1
    return OK


@njit(cache=True, _nrt=False)
def read_token(fsm, chart, n_sets0, lcp, token_bytes, begin, length):
    """Read one token from the current set (set n_sets0 - 1), reusing the sets of the `lcp`
    bytes it shares with the token read before it (the chart is its own history: rolling back
    is lowering the set count). Returns (status, fail_len): OK with fail_len 0 when the whole
    token is read, OK with fail_len = d + 1 when byte d has no way on, or a NEED_* status
    (the chart then holds n_sets0 sets again)."""
    depth = chart.meta[0] - n_sets0
    chart.meta[0] = n_sets0 + (lcp if lcp < depth else depth)
    for d in range(chart.meta[0] - n_sets0, length):
        status = advance_byte(fsm, chart, token_bytes[begin + d])
        if status == EMPTY:
            return OK, d + 1
        if status != OK:
            chart.meta[0] = n_sets0
            return status, 0
    return OK, 0


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
    n_sets0 = chart.meta[0]
    fail_len = 0
    for j in range(j_start, sorted_ids.shape[0]):
        tid = sorted_ids[j]
        lcp = sorted_lcp[j] if j > j_start else 0
        if fail_len > 0 and lcp >= fail_len:
            out[tid] = False
            continue
        begin = token_offsets[tid]
        status, fail_len = read_token(fsm, chart, n_sets0, lcp, token_bytes, begin, token_offsets[tid + 1] - begin)
        if status != OK:
            return status, j
        out[tid] = fail_len == 0
    chart.meta[0] = n_sets0
    return OK, sorted_ids.shape[0]


@njit(cache=True, _nrt=False)
def next_byte_set(fsm, chart, out):
    """out[b] = some item of the current set has a byte edge on b (256 booleans)."""
    k = chart.meta[0] - 1
    out[:] = False
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        if expired(chart, p):
            continue
        for e in range(fsm.byte_indptr[s], fsm.byte_indptr[s + 1]):
            for b in range(fsm.byte_lo[e], fsm.byte_hi[e] + 1):
                out[b] = True
