"""CFGzip's Algorithm 1 (§3.2.2, displacement computation) over the trie of block signatures, as
one Numba kernel (../shared/SEED_SYSTEMS.md §3.1; the orchestration is
xg2ref/token_classes/displacement.py, the stack grammar xg2ref/token_classes/gnf.py).

The displacement D(t) of a token is the set of pairs (α, β): reading t, the PDA of the Greibach
normal form pops the symbols α from the top of a stack it does not know, and leaves β in their
place. Tokens with one D are congruent (Theorem 2). The walk keeps a frontier of triples
(α, β, σ): α the symbols pulled from the unknown stack so far, β the stack the token built, σ
the symbol popped last when β is empty. Reading one byte of block b:

    β = X β′, X → b γ                  ⊢ (α, γ β′, X if γ β′ = ε)
    β = ε, σ = none (the first byte)   ⊢ (Y, γ, …) for X → b γ ... every Y but S′ with Y → b γ
                                         and (S′, γ, …) for S′ → b γ, a run that never pulls
    β = ε, (σ, Y) ∈ ADJ, Y → b γ       ⊢ (α Y, γ, …)      (not in the run from S′)

and at the end of a token D(t) = {(α, β)}. An empty D means the token is never valid.

Stacks are hash-consed cons cells (head symbol, tail cell; -1 is the empty stack), so a stack,
and α (kept most recent first), is one int; a pair (α, β) is one more cell, and D(t) the sorted
list of its pair cells, interned in a pool of lists: equal lists, equal ids. A frontier element
is one int64, (α + 1) << 40 | (β + 1) << 16 | (σ + 1), sorted and deduplicated per depth.

Signatures arrive sorted, with the length of the prefix each shares with the one before (`lcp`),
so the walk is the trie's depth-first order and the frontier of a shared prefix is computed once.
More: a frontier depends on nothing but the frontier before it and the block read, and most
trie nodes share their frontier with many others (every prefix of letters inside an
identifier, a string or a comment leaves the same one). So frontiers are interned as sets, and
the step is memoized on (frontier set, block), as the subset construction memoizes a DFA's
moves: each distinct step is computed once, and D of each distinct frontier once.

A frontier past `max_frontier` elements, or past the workspace, stops the walk below that trie
node: its signatures get FALLBACK (one class each, which is exact: equal signatures are
congruent, blocks.py), and are counted.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

DEAD = -1  # D(t) is empty: the token is valid nowhere
FALLBACK = -2  # the frontier passed its limit: one class for the signature
OK, CELLS_FULL, LISTS_FULL, SETS_FULL = 0, 1, 2, 3
MAX_CELLS = (1 << 23) - 2  # α + 1 fits 23 bits of the int64 key
_UNKNOWN, _OVER = -3, -2  # a frontier set's D not computed yet; a step past the limit


class Workspace(NamedTuple):
    """The kernel's tables (sizes chosen by the caller, grown on CELLS_FULL, LISTS_FULL or
    SETS_FULL).

    head, tail : int32[C]        cons cells: head symbol (or α cell of a pair), tail cell
    table : int32[2^k >= 2C]     open addressing over cells, -1 free
    count : int64[6]             cells, D lists, D list entries, frontier sets, their entries,
                                 memoized steps
    scratch : int64[M]           one step's successors before deduplication
    lists : int64[N]             the interned D(t) lists (sorted pair cells), back to back
    list_indptr : int64[K+1]
    list_table : int32[2^j >= 2K]
    sets : int64[E]              the interned frontier sets (sorted elements), back to back
    set_indptr : int64[Q+1]
    set_table : int32[2^i >= 2Q]
    set_disp : int32[Q]          the D id of each frontier set (DEAD, or -3 not yet known)
    memo_key : int64[2^h]        memoized steps: frontier set * 256 + block, -1 free
    memo_val : int32[2^h]        the next frontier set, or -2 past the limit
    """

    head: np.ndarray
    tail: np.ndarray
    table: np.ndarray
    count: np.ndarray
    scratch: np.ndarray
    lists: np.ndarray
    list_indptr: np.ndarray
    list_table: np.ndarray
    sets: np.ndarray
    set_indptr: np.ndarray
    set_table: np.ndarray
    set_disp: np.ndarray
    memo_key: np.ndarray
    memo_val: np.ndarray


def workspace(cells: int, scratch: int, list_entries: int, n_lists: int, set_entries: int,
              n_sets: int) -> Workspace:
    """Empty tables of the given capacities (hash tables at twice their entries, powers of two)."""
    pow2 = lambda n: 1 << max(4, int(2 * n - 1).bit_length())  # noqa: E731
    return Workspace(np.zeros(cells, np.int32), np.zeros(cells, np.int32), np.full(pow2(cells), -1, np.int32),
                     np.zeros(6, np.int64), np.zeros(scratch, np.int64),
                     np.zeros(list_entries, np.int64), np.zeros(n_lists + 1, np.int64),
                     np.full(pow2(n_lists), -1, np.int32),
                     np.zeros(set_entries, np.int64), np.zeros(n_sets + 1, np.int64), np.full(pow2(n_sets), -1, np.int32),
                     np.full(n_sets, _UNKNOWN, np.int32), np.full(pow2(2 * n_sets), -1, np.int64),
                     np.zeros(pow2(2 * n_sets), np.int32))


@njit(cache=True)
def cons(h, t, ws):
    """The cell (h, t), made if new; -2 when the cells are full."""
    mask = ws.table.shape[0] - 1
    k = (np.int64(h) * 0x9E3779B1 + (np.int64(t) + 1) * 0x85EBCA77) & mask
    while True:
        c = ws.table[k]
        if c < 0:
            n = ws.count[0]
            if n >= ws.head.shape[0]:
                return -2
            ws.head[n] = h
            ws.tail[n] = t
            ws.table[k] = n
            ws.count[0] = n + 1
            return n
        if ws.head[c] == h and ws.tail[c] == t:
            return c
        k = (k + 1) & mask


@njit(cache=True)
def push(g, p, rest, ws):
    """Production p's symbols pushed on stack `rest` (its first symbol on top); -2 when full."""
    s = rest
    for k in range(g.push_indptr[p + 1] - 1, g.push_indptr[p] - 1, -1):
        s = cons(g.push_syms[k], s, ws)
        if s == -2:
            return -2
    return s


@njit(cache=True)
def key_of(alpha, beta, sigma):
    """The frontier element (α, β, σ) as one int64 (-1: the empty stack, or σ none)."""
    return ((np.int64(alpha) + 1) << 40) | ((np.int64(beta) + 1) << 16) | (np.int64(sigma) + 1)


@njit(cache=True)
def pull(g, y, alpha, b, ws, n):
    """Every production of Y reading block b, Y pulled below `alpha` (α Y): successors written to
    ws.scratch from n; the new n, or -1 when the scratch or the cells are full."""
    n_blocks = g.first_indptr.shape[0] - 1
    lo, hi = g.read_indptr[y * n_blocks + b], g.read_indptr[y * n_blocks + b + 1]
    if lo == hi:
        return n
    a2 = cons(y, alpha, ws)
    if a2 == -2:
        return -1
    for j in range(lo, hi):
        nb = push(g, g.read_prods[j], -1, ws)
        if nb == -2 or n >= ws.scratch.shape[0]:
            return -1
        ws.scratch[n] = key_of(a2, nb, y if nb == -1 else -1)
        n += 1
    return n


@njit(cache=True)
def step(g, f, b, a_start, ws):
    """The successors of frontier set f on block b into ws.scratch (unsorted); their count, or
    -1 when the scratch or the cells are full."""
    n = 0
    n_blocks = g.first_indptr.shape[0] - 1
    for e in range(ws.set_indptr[f], ws.set_indptr[f + 1]):
        key = ws.sets[e]
        alpha = (key >> 40) - 1
        beta = ((key >> 16) & 0xFFFFFF) - 1
        sigma = (key & 0xFFFF) - 1
        if beta >= 0:  # β = X β′, X → b γ  ⊢  (α, γ β′)
            x = ws.head[beta]
            rest = ws.tail[beta]
            for j in range(g.read_indptr[x * n_blocks + b], g.read_indptr[x * n_blocks + b + 1]):
                nb = push(g, g.read_prods[j], rest, ws)
                if nb == -2 or n >= ws.scratch.shape[0]:
                    return -1
                ws.scratch[n] = key_of(alpha, nb, x if nb == -1 else -1)
                n += 1
        elif alpha == -1:  # the first byte: the run from S′, and any Y but S′ pulled
            s0 = g.start * n_blocks + b
            for j in range(g.read_indptr[s0], g.read_indptr[s0 + 1]):
                nb = push(g, g.read_prods[j], -1, ws)
                if nb == -2 or n >= ws.scratch.shape[0]:
                    return -1
                ws.scratch[n] = key_of(a_start, nb, g.start if nb == -1 else -1)
                n += 1
            for j in range(g.first_indptr[b], g.first_indptr[b + 1]):
                n = pull(g, g.first_syms[j], -1, b, ws, n)
                if n < 0:
                    return -1
        elif alpha != a_start:  # β = ε: pull Y with (σ, Y) in ADJ (never below S′)
            for j in range(g.adj_indptr[sigma], g.adj_indptr[sigma + 1]):
                n = pull(g, g.adj_syms[j], alpha, b, ws, n)
                if n < 0:
                    return -1
    return n


@njit(cache=True)
def intern_seq(pool, indptr, table, count, k_n, k_used, src, m):
    """The id of the sequence src[:m] among those in (pool, indptr, table), added if new
    (count[k_n] sequences, count[k_used] entries used); -1 when the tables are full."""
    h = np.int64(m)
    for k in range(m):
        h = (h * 1000003 + src[k]) & 0xFFFFFFFFFF
    mask = table.shape[0] - 1
    k = h & mask
    while True:
        c = table[k]
        if c < 0:
            n, used = count[k_n], count[k_used]
            if n + 1 >= indptr.shape[0] or used + m > pool.shape[0] or 2 * (n + 1) > table.shape[0]:
                return -1
            for j in range(m):
                pool[used + j] = src[j]
            indptr[n + 1] = used + m
            table[k] = n
            count[k_n] = n + 1
            count[k_used] = used + m
            return n
        a, z = indptr[c], indptr[c + 1]
        if z - a == m:
            same = True
            for j in range(m):
                if pool[a + j] != src[j]:
                    same = False
                    break
            if same:
                return c
        k = (k + 1) & mask


@njit(cache=True)
def memo_slot(ws, f, b):
    """The slot of step (f, b) in the memo: its own, or the free one it would take."""
    key = np.int64(f) * 256 + b
    mask = ws.memo_key.shape[0] - 1
    k = (key * 0x9E3779B1) & mask
    while ws.memo_key[k] != -1 and ws.memo_key[k] != key:
        k = (k + 1) & mask
    return k


@njit(cache=True)
def next_set(g, f, b, max_frontier, a_start, ws):
    """The frontier set after f reads block b (memoized), _OVER past the limit; or -(10 + status)
    when a table is full."""
    k = memo_slot(ws, f, b)
    if ws.memo_key[k] != -1:
        return ws.memo_val[k]
    n = step(g, f, b, a_start, ws)
    if n < 0:
        if ws.count[0] >= ws.head.shape[0]:
            return -(10 + CELLS_FULL)
        nxt = _OVER
    else:
        fresh = np.unique(ws.scratch[:n])
        if fresh.shape[0] > max_frontier:
            nxt = _OVER
        else:
            nxt = intern_seq(ws.sets, ws.set_indptr, ws.set_table, ws.count, 3, 4, fresh, fresh.shape[0])
            if nxt < 0:
                return -(10 + SETS_FULL)
    if 2 * (ws.count[5] + 1) > ws.memo_key.shape[0]:
        return -(10 + SETS_FULL)
    ws.memo_key[k] = np.int64(f) * 256 + b
    ws.memo_val[k] = nxt
    ws.count[5] += 1
    return nxt


@njit(cache=True)
def set_displacement(f, ws):
    """The D id of frontier set f (memoized): DEAD when empty; -4 when a table is full."""
    if ws.set_disp[f] != _UNKNOWN:
        return ws.set_disp[f]
    lo, m = ws.set_indptr[f], ws.set_indptr[f + 1] - ws.set_indptr[f]
    if m == 0:
        ws.set_disp[f] = DEAD
        return DEAD
    for e in range(m):  # the pairs (α, β), one cell each
        key = ws.sets[lo + e]
        cell = cons((key >> 40) - 1, ((key >> 16) & 0xFFFFFF) - 1, ws)
        if cell < 0:
            return -4
        ws.scratch[e] = cell
    pairs = np.unique(ws.scratch[:m])
    d = intern_seq(ws.lists, ws.list_indptr, ws.list_table, ws.count, 1, 2, pairs, pairs.shape[0])
    if d < 0:
        return -4
    ws.set_disp[f] = d
    return d


@njit(cache=True)
def displacement_ids(g, sig_pool, sig_indptr, lcp, max_frontier, ws, out):
    """out[i] = the id of D(signature i) among the distinct ones, DEAD or FALLBACK (module
    docstring); returns OK, CELLS_FULL, LISTS_FULL or SETS_FULL. Signatures: sig_pool[
    sig_indptr[i]:sig_indptr[i+1]] (block ids), sorted; lcp[i]: the prefix shared with
    signature i-1."""
    n_sig = sig_indptr.shape[0] - 1
    max_len = 0
    for i in range(n_sig):
        max_len = max(max_len, sig_indptr[i + 1] - sig_indptr[i])
    fid = np.zeros(max_len + 2, np.int64)  # the frontier set at each depth of the current path
    a_start = cons(g.start, -1, ws)
    if a_start < 0:
        return CELLS_FULL
    ws.scratch[0] = 0  # (α, β, σ) = (ε, ε, none)
    root = intern_seq(ws.sets, ws.set_indptr, ws.set_table, ws.count, 3, 4, ws.scratch, 1)
    if root < 0:
        return SETS_FULL
    fid[0] = root
    big = max_len + 1
    cur, blocked = 0, big
    for i in range(n_sig):
        lo, length = sig_indptr[i], sig_indptr[i + 1] - sig_indptr[i]
        common = lcp[i]
        cur = min(cur, common)
        if blocked <= common:
            out[i] = FALLBACK
            continue
        blocked = big
        while cur < length:
            nxt = next_set(g, fid[cur], np.int64(sig_pool[lo + cur]), max_frontier, a_start, ws)
            if nxt <= -10:
                return -(nxt + 10)
            if nxt == _OVER:
                blocked = cur + 1
                break
            fid[cur + 1] = nxt
            cur += 1
        if blocked <= length:
            out[i] = FALLBACK
            continue
        d = set_displacement(fid[length], ws)
        if d == -4:
            return CELLS_FULL if ws.count[0] >= ws.head.shape[0] else LISTS_FULL
        out[i] = d
    return OK
