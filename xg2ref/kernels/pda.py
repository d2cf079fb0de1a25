"""XGrammar App. A and §3.3: the pushdown automaton's moves and its persistent execution stack, as
Numba kernels over flat arrays (the machines are `PDAArrays`, xg2ref/baselines/pda/machines.py).

A configuration (q, p) is a state q and a stack of return states: p is a *frame*, a node of one
tree shared by every stack (node_state[p] is the state to return to, node_parent[p] the frame
below; -1 is the bottom of the root rule). The parser state after k bytes is a set of
configurations, *record* k of the history. The moves, as App. A writes them:

    CHAR     (q, p)  reads b   |-  (q', p)                        q -b-> q'
    EPS      (q, p)            |-  (q', p)                        q -ε-> q'
    CALL     (q, p)            |-  (start_S, n), n = (q', p)      q -S-> q'   (push the return state)
    RETURN   (q, p), p >= 0    |-  (node_state[p], node_parent[p])  q final    (pop)
    END      (q, -1), q final  |-  the input so far is a sentence

A record is the CHAR moves of one byte from the record before, closed under EPS, CALL and RETURN
(`close_record`). Configurations are kept once per (state, frame) (a hash table with an epoch: a
new record starts with an empty table without clearing it), and a frame (return state, parent)
exists once (`make_frame`), so configurations with equal stacks are equal.

PERSISTENT STACK (§3.3). Frames are never changed once made, so stacks share their common
bottoms, and the frames made while building record k come after those of the records before
(`hist_nodes[k]`; a later record may use an earlier record's frame, never the reverse). The history is a stack of records, so the frames are allocated as a stack:
rolling back to record k drops the records after it and the frames they made by lowering two
counters, in O(1) (`RollbackOne` of the paper without reference counts).

A kernel that runs out of room returns NEED_SPACE with the exhausted resource in
meta[M_NEED]; the caller grows the arrays (xg2ref/baselines/pda/stack.py) and calls again: an
unfinished record is never committed, so nothing is half-done. More than `max_stacks`
configurations in one record return TOO_MANY (the caller raises GrammarLimitError).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

# statuses
OK, DEAD, NEED_SPACE, TOO_MANY = 0, 1, 2, 3
# meta slots
M_RECORDS, M_EPOCH, M_MASK, M_TOPS, M_NODES, M_NEED, M_PEAK, M_POP, M_FMASK, M_FUSED = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
META_SIZE = 10
# what ran out (meta[M_NEED])
NEED_TOPS, NEED_NODES, NEED_RECORDS, NEED_TABLE, NEED_FRAMES = 1, 2, 3, 4, 5
ROOT_FRAME = -1  # the bottom of the root rule: RETURN ends the input
OPEN_FRAME = -2  # the frame below an entry's state while a cache entry is built: RETURN is a pop into unknown context


class PDAStack(NamedTuple):
    """The persistent stack and its history (capacities grow, xg2ref/baselines/pda/stack.py).

    node_state, node_parent : int32[N]       frames
    tops_state, tops_parent : int32[T]       the configurations of every record, record after record
    hist_tops, hist_nodes : int64[H + 1]     record k holds tops [hist_tops[k], hist_tops[k+1]) and made
                                             frames [hist_nodes[k], hist_nodes[k+1])
    rec_pop : bool_[H]                       record k has a configuration that pops OPEN_FRAME
    cfg_epoch : int64[M], cfg_a, cfg_b : int32[M]   the configurations of the record being built
    frame_slot : int32[F]                    frames by content (`make_frame`), -1 empty
    meta : int64[META_SIZE]                  records, epoch, M - 1, tops end, frames end, need,
                                             peak record size, pops seen, F - 1, frame slots used
    """

    node_state: np.ndarray
    node_parent: np.ndarray
    tops_state: np.ndarray
    tops_parent: np.ndarray
    hist_tops: np.ndarray
    hist_nodes: np.ndarray
    rec_pop: np.ndarray
    cfg_epoch: np.ndarray
    cfg_a: np.ndarray
    cfg_b: np.ndarray
    frame_slot: np.ndarray
    meta: np.ndarray


@njit(cache=True, _nrt=False)
def _slot(a, b, mask):
    return ((np.int64(a) * 1000003) ^ ((np.int64(b) + 3) * 8191)) & mask


@njit(cache=True, _nrt=False)
def _need(st, what):
    st.meta[M_NEED] = what
    return NEED_SPACE


@njit(cache=True, _nrt=False)
def add_top(st, begin, state, parent, max_stacks):
    """Add configuration (state, parent) to the record being built (it starts at tops index
    `begin`) unless it is there. Returns OK, or NEED_SPACE / TOO_MANY."""
    mask = st.meta[M_MASK]
    epoch = st.meta[M_EPOCH]
    h = _slot(state, parent, mask)
    while st.cfg_epoch[h] == epoch:
        if st.cfg_a[h] == state and st.cfg_b[h] == parent:
            return OK
        h = (h + 1) & mask
    n = st.meta[M_TOPS]
    if n - begin >= max_stacks:
        return TOO_MANY
    if n >= st.tops_state.shape[0]:
        return _need(st, NEED_TOPS)
    if 2 * (n - begin + 1) > mask + 1:
        return _need(st, NEED_TABLE)
    st.cfg_epoch[h] = epoch
    st.cfg_a[h] = state
    st.cfg_b[h] = parent
    st.tops_state[n] = state
    st.tops_parent[n] = parent
    st.meta[M_TOPS] = n + 1
    return OK


@njit(cache=True, _nrt=False)
def rebuild_frames(st, end):
    """Refill an empty (all -1) frame table with the live frames 0 .. end-1."""
    mask = st.meta[M_FMASK]
    for node in range(end):
        h = _slot(st.node_state[node], st.node_parent[node], mask)
        while st.frame_slot[h] >= 0:
            h = (h + 1) & mask
        st.frame_slot[h] = node
    st.meta[M_FUSED] = end


@njit(cache=True, _nrt=False)
def _find_frame(st, ret, parent, end):
    """The live frame (ret, parent) below `end`, or -1 - (the empty slot where it would go)."""
    mask = st.meta[M_FMASK]
    h = _slot(ret, parent, mask)
    while st.frame_slot[h] >= 0:
        node = st.frame_slot[h]
        if node < end and st.node_state[node] == ret and st.node_parent[node] == parent:
            return node
        h = (h + 1) & mask
    return -1 - h


@njit(cache=True, _nrt=False)
def make_frame(st, ret, parent):
    """The frame (ret, parent): the live one with that content if there is one, else a new one.
    Frames are unique by content (a parent is unique, so is its child), so two stacks with the
    same states share their frames and a configuration set dedups by content. Returns its node,
    or -1 when there is no room (meta[M_NEED] says which).

    The table maps content to nodes and is never cleared entry by entry: an entry is live when
    its node is below the frames' end and holds that content. Rollbacks leave dead entries;
    when live and dead fill half the table, it is rebuilt from the live frames alone (in place
    while they fill at most a quarter of it, else the caller grows it, NEED_FRAMES)."""
    end = st.meta[M_NODES]
    found = _find_frame(st, ret, parent, end)
    if found >= 0:
        return found
    if end >= st.node_state.shape[0]:
        _need(st, NEED_NODES)
        return -1
    if 2 * (st.meta[M_FUSED] + 1) > st.meta[M_FMASK] + 1:
        if 4 * (end + 1) > st.meta[M_FMASK] + 1:
            _need(st, NEED_FRAMES)
            return -1
        st.frame_slot[:] = -1
        rebuild_frames(st, end)
        found = _find_frame(st, ret, parent, end)
    st.frame_slot[-1 - found] = end
    st.meta[M_FUSED] += 1
    st.node_state[end] = ret
    st.node_parent[end] = parent
    st.meta[M_NODES] = end + 1
    return end


@njit(cache=True, _nrt=False)
def close_record(pda, st, begin, max_stacks):
    """Close the configurations from tops index `begin` on under EPS, CALL and RETURN (module
    docstring); the record's own tops are the work list. A RETURN from OPEN_FRAME is not made:
    it sets meta[M_POP] (the entry builder's pop into unknown context)."""
    i = begin
    while i < st.meta[M_TOPS]:
        q = st.tops_state[i]
        p = st.tops_parent[i]
        for e in range(pda.eps_indptr[q], pda.eps_indptr[q + 1]):
            status = add_top(st, begin, pda.eps_dst[e], p, max_stacks)
            if status != OK:
                return status
        for e in range(pda.ref_indptr[q], pda.ref_indptr[q + 1]):
            # CALL: push the return state, enter the rule at its start
            frame = make_frame(st, pda.ref_dst[e], p)
            if frame < 0:
                return NEED_SPACE
            status = add_top(st, begin, pda.rule_start[pda.ref_rule[e]], frame, max_stacks)
            if status != OK:
                return status
        if pda.is_final[q]:
            if p >= 0:  # RETURN to the frame's state, under the frame below it
                status = add_top(st, begin, st.node_state[p], st.node_parent[p], max_stacks)
                if status != OK:
                    return status
            elif p == OPEN_FRAME:
                st.meta[M_POP] = 1
        i += 1
    return OK


@njit(cache=True, _nrt=False)
def _open_record(st):
    """Start building record k = meta[M_RECORDS] (after the last committed one). Returns the
    tops index it starts at, or -1 when the history is full."""
    k = st.meta[M_RECORDS]
    if k + 1 >= st.hist_tops.shape[0]:
        _need(st, NEED_RECORDS)
        return -1
    st.meta[M_EPOCH] += 1
    st.meta[M_POP] = 0
    st.meta[M_TOPS] = st.hist_tops[k]
    st.meta[M_NODES] = st.hist_nodes[k]
    return st.hist_tops[k]


@njit(cache=True, _nrt=False)
def _commit_record(st, begin):
    k = st.meta[M_RECORDS]
    st.hist_tops[k + 1] = st.meta[M_TOPS]
    st.hist_nodes[k + 1] = st.meta[M_NODES]
    st.rec_pop[k] = st.meta[M_POP] != 0
    st.meta[M_RECORDS] = k + 1
    size = st.meta[M_TOPS] - begin
    if size > st.meta[M_PEAK]:
        st.meta[M_PEAK] = size
    return OK


@njit(cache=True, _nrt=False)
def start(pda, st, state, parent, closed, max_stacks):
    """Make record 0... or the next record: the single configuration (state, parent), closed
    when `closed` (a parser's start: (root start, ROOT_FRAME)) or left as it is (a copy of one
    top of a closed record, read on alone: a cache entry's or an uncertain token's check)."""
    begin = _open_record(st)
    if begin < 0:
        return NEED_SPACE
    status = add_top(st, begin, state, parent, max_stacks)
    if status == OK and closed:
        status = close_record(pda, st, begin, max_stacks)
    if status != OK:
        return status
    return _commit_record(st, begin)


@njit(cache=True, _nrt=False)
def read_byte(pda, st, b, max_stacks):
    """CHAR: the configurations of the last record that read byte b, closed, as a new record.
    DEAD (nothing committed) when none reads it."""
    k = st.meta[M_RECORDS]
    lo = st.hist_tops[k - 1]
    hi = st.hist_tops[k]
    begin = _open_record(st)
    if begin < 0:
        return NEED_SPACE
    for i in range(lo, hi):
        q = st.tops_state[i]
        for e in range(pda.byte_indptr[q], pda.byte_indptr[q + 1]):
            if pda.byte_lo[e] <= b <= pda.byte_hi[e]:
                status = add_top(st, begin, pda.byte_dst[e], st.tops_parent[i], max_stacks)
                if status != OK:
                    return status
    if st.meta[M_TOPS] == begin:
        return DEAD
    status = close_record(pda, st, begin, max_stacks)
    if status != OK:
        return status
    return _commit_record(st, begin)


@njit(cache=True, _nrt=False)
def read_bytes(pda, st, data, lo, hi, max_stacks):
    """Read data[lo:hi] one byte at a time. Returns (status, bytes read): on DEAD the records of
    the bytes read stay (the caller rolls back)."""
    for d in range(lo, hi):
        status = read_byte(pda, st, data[d], max_stacks)
        if status != OK:
            return status, d - lo
    return OK, hi - lo


@njit(cache=True, _nrt=False)
def can_end(pda, st):
    """END: some configuration of the last record is final at the bottom of the root rule."""
    k = st.meta[M_RECORDS]
    for i in range(st.hist_tops[k - 1], st.hist_tops[k]):
        if st.tops_parent[i] == ROOT_FRAME and pda.is_final[st.tops_state[i]]:
            return True
    return False
