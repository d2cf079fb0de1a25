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
OK, CELLS_FULL, LISTS_FULL = 0, 1, 2
MAX_CELLS = (1 << 23) - 2  # α + 1 fits 23 bits of the int64 key


class Workspace(NamedTuple):
    """The kernel's tables (sizes chosen by the caller, grown on CELLS_FULL / LISTS_FULL).

    head, tail : int32[C]       cons cells: head symbol (or α cell of a pair), tail cell
    table : int32[2^k >= 2C]    open addressing over cells, -1 free
    count : int64[3]            cells used, lists used, list entries used
    frontier : int64[F]         the frontiers of the current trie path, depth after depth
    scratch : int64[M]          one step's successors before deduplication
    lists : int32[N]            the interned D(t) lists, back to back
    list_indptr : int64[K+1]
    list_table : int32[2^j >= 2K]
    """

    head: np.ndarray
    tail: np.ndarray
    table: np.ndarray
    count: np.ndarray
    frontier: np.ndarray
    scratch: np.ndarray
    lists: np.ndarray
    list_indptr: np.ndarray
    list_table: np.ndarray


def workspace(cells: int, frontier: int, scratch: int, list_entries: int, n_lists: int) -> Workspace:
    """Empty tables of the given capacities (hash tables at twice their entries, powers of two)."""
    pow2 = lambda n: 1 << max(4, int(2 * n - 1).bit_length())  # noqa: E731
    return Workspace(np.zeros(cells, np.int32), np.zeros(cells, np.int32), np.full(pow2(cells), -1, np.int32),
                     np.zeros(3, np.int64), np.zeros(frontier, np.int64), np.zeros(scratch, np.int64),
                     np.zeros(list_entries, np.int32), np.zeros(n_lists + 1, np.int64),
                     np.full(pow2(n_lists), -1, np.int32))


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
def reads(g, p, b):
    return (g.prod_blocks[p, b >> 6] >> np.uint64(b & 63)) & np.uint64(1) == np.uint64(1)


@njit(cache=True)
def pull(g, y, alpha, b, ws, n):
    """Every production of Y reading block b, Y pulled below `alpha` (α Y): successors written to
    ws.scratch from n; the new n, or -1 when the scratch or the cells are full."""
    a2 = -3
    for p in range(g.prod_indptr[y], g.prod_indptr[y + 1]):
        if reads(g, p, b):
            if a2 == -3:
                a2 = cons(y, alpha, ws)
                if a2 == -2:
                    return -1
            nb = push(g, p, -1, ws)
            if nb == -2 or n >= ws.scratch.shape[0]:
                return -1
            ws.scratch[n] = key_of(a2, nb, y if nb == -1 else -1)
            n += 1
    return n


@njit(cache=True)
def step(g, lo, hi, b, a_start, ws):
    """The successors of frontier[lo:hi] on block b into ws.scratch (unsorted); their count, or
    -1 when the scratch or the cells are full."""
    n = 0
    for e in range(lo, hi):
        key = ws.frontier[e]
        alpha = (key >> 40) - 1
        beta = ((key >> 16) & 0xFFFFFF) - 1
        sigma = (key & 0xFFFF) - 1
        if beta >= 0:  # β = X β′, X → b γ  ⊢  (α, γ β′)
            x = ws.head[beta]
            rest = ws.tail[beta]
            for p in range(g.prod_indptr[x], g.prod_indptr[x + 1]):
                if reads(g, p, b):
                    nb = push(g, p, rest, ws)
                    if nb == -2 or n >= ws.scratch.shape[0]:
                        return -1
                    ws.scratch[n] = key_of(alpha, nb, x if nb == -1 else -1)
                    n += 1
        elif alpha == -1:  # the first byte: the run from S′, and any Y but S′ pulled
            for p in range(g.prod_indptr[g.start], g.prod_indptr[g.start + 1]):
                if reads(g, p, b):
                    nb = push(g, p, -1, ws)
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
def intern_list(ws, lo, m):
    """The id of the list ws.scratch[lo:lo+m] (sorted pair cells) in the pool; -1 when full."""
    h = np.int64(m)
    for k in range(lo, lo + m):
        h = (h * 1000003 + ws.scratch[k]) & 0xFFFFFFFFFF
    mask = ws.list_table.shape[0] - 1
    k = h & mask
    while True:
        c = ws.list_table[k]
        if c < 0:
            n, used = ws.count[1], ws.count[2]
            if n + 1 >= ws.list_indptr.shape[0] or used + m > ws.lists.shape[0]:
                return -1
            for j in range(m):
                ws.lists[used + j] = ws.scratch[lo + j]
            ws.list_indptr[n + 1] = used + m
            ws.list_table[k] = n
            ws.count[1] = n + 1
            ws.count[2] = used + m
            return n
        a, z = ws.list_indptr[c], ws.list_indptr[c + 1]
        if z - a == m:
            same = True
            for j in range(m):
                if ws.lists[a + j] != ws.scratch[lo + j]:
                    same = False
                    break
            if same:
                return c
        k = (k + 1) & mask


@njit(cache=True)
def displacement_ids(g, sig_pool, sig_indptr, lcp, max_frontier, ws, out):
    """out[i] = the id of D(signature i) among the distinct ones, DEAD or FALLBACK (module
    docstring); returns OK, CELLS_FULL or LISTS_FULL. Signatures: sig_pool[sig_indptr[i]:
    sig_indptr[i+1]] (block ids), sorted; lcp[i]: the prefix shared with signature i-1."""
    n_sig = sig_indptr.shape[0] - 1
    max_len = 0
    for i in range(n_sig):
        max_len = max(max_len, sig_indptr[i + 1] - sig_indptr[i])
    depth_lo = np.zeros(max_len + 2, np.int64)
    depth_hi = np.zeros(max_len + 2, np.int64)
    a_start = cons(g.start, -1, ws)
    if a_start < 0:
        return CELLS_FULL
    ws.frontier[0] = 0  # (α, β, σ) = (ε, ε, none)
    depth_hi[0] = 1
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
            n = step(g, depth_lo[cur], depth_hi[cur], sig_pool[lo + cur], a_start, ws)
            if n < 0 and ws.count[0] >= ws.head.shape[0]:
                return CELLS_FULL
            base = depth_hi[cur]
            if n < 0:
                blocked = cur + 1
                break
            fresh = np.unique(ws.scratch[:n])
            if fresh.shape[0] > min(max_frontier, ws.frontier.shape[0] - base):
                blocked = cur + 1
                break
            ws.frontier[base:base + fresh.shape[0]] = fresh
            depth_lo[cur + 1] = base
            depth_hi[cur + 1] = base + fresh.shape[0]
            cur += 1
        if blocked <= length:
            out[i] = FALLBACK
            continue
        m = depth_hi[length] - depth_lo[length]
        if m == 0:
            out[i] = DEAD
            continue
        for e in range(m):  # the pairs (α, β), one cell each
            key = ws.frontier[depth_lo[length] + e]
            cell = cons((key >> 40) - 1, ((key >> 16) & 0xFFFFFF) - 1, ws)
            if cell < 0:
                return CELLS_FULL
            ws.scratch[e] = cell
        pairs = np.unique(ws.scratch[:m])
        ws.scratch[:pairs.shape[0]] = pairs
        d = intern_list(ws, 0, pairs.shape[0])
        if d < 0:
            return LISTS_FULL
        out[i] = d
    return OK
