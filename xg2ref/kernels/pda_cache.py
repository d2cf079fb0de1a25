"""XGrammar §3.1–§3.3 over the pushdown automaton (kernels/pda.py): walking the byte-sorted
vocabulary through the persistent stack, building the adaptive token mask cache keyed by the
state on top of a stack, context expansion (Alg. 2), and a mask from the cache (Alg. 1).

WALK. Tokens in byte order from the last record; TRIE-SHARE and TRIE-SKIP as in
kernels/trie_walk.py, with the history's records in the role of the chart's sets (rolling back n
bytes is lowering the record count by n).

ENTRY of a scannable state s (XGrammar §3.1). The walk starts from the single configuration
(s, OPEN_FRAME): the frame below s's rule is unknown, and a RETURN from it is a pop that would
need the real stack (kernels/pda.py marks the record). For a token t of n bytes:

    a configuration is left after all n bytes                  |-  t accepted (in any context)
    none is left, and some record after d bytes, 1 <= d < n,
    pops and t[d:] passes CONTEXT(rule of s)                     |-  t uncertain
    otherwise                                                    |-  t rejected

With the lookahead switch (XGrammar §3.2, as xgrammar 0.1 used it), a pop at d also needs t[d:]
to agree with the rule's lookahead filter (xg2ref/lookahead.py: verified or inferred assertions).

A pop before any byte is left out: the configuration it returns to is a top of its own, with its
own entry. CONTEXT (Alg. 2, §3.2): the expanded-suffix automaton of rule R is the union, over
every edge u -R-> v of every rule, of what v reaches by bytes and ε edges, a state that is final
or calls a rule being final there. t[d:] passes when walking it either reads it all or reaches a
final state; else no context can read it and t is rejected at build time.

STORAGE (XGrammar §3.1's adaptive storage). An entry keeps the smaller of its accepted and
rejected lists, or, when even that list would take more bytes than a vocabulary bitset (the
balanced case), its accepted tokens as a bitset over token ids.

MASK (Alg. 1). For each scannable top (q, p) of the last record: entry q's accepted tokens (a
list or a bitset) join PartialAcc; an accept-heavy entry stores its rejected tokens instead and
PartialRej is their intersection; each uncertain token is read from the one configuration (q, p) with its real
stack, joining PartialAcc when it is read, and counting as rejected by q otherwise. Allowed:
PartialAcc, or, when some entry is accept-heavy, everything but PartialRej \\ PartialAcc.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .pda import DEAD, M_RECORDS, OK, OPEN_FRAME, read_byte, start
from .pure_walk import filter_walk
from .trie_walk import NO_FAIL, common_prefix, next_after_rejected, shared_with_previous, under_rejected_prefix

REJECTED, ACCEPTED, UNCERTAIN = 0, 1, 2
KIND_NONE, KIND_ACCEPTED, KIND_REJECTED, KIND_BITSET = 0, 1, 2, 3  # what an entry stores beside its uncertain tokens
# WalkOptions slots
W_MAX_STACKS, W_PREFIX_REUSE, W_CONTEXT, W_RULE, W_BYTES_READ = 0, 1, 2, 3, 4
WALK_OPTIONS = 5


class ContextArrays(NamedTuple):
    """The expanded-suffix automata of Alg. 2 over the global states (`context_arrays`).

    ctx_indptr : int32[R+1]   rule R's automaton starts in ctx_start[ctx_indptr[R]:ctx_indptr[R+1]]
    ctx_start : int32[C]      the states v after each edge u -R-> v
    ctx_stop : bool_[S]       final in the automaton: final in its rule, or calls a rule
    cur, nxt : int32[S]       scratch: the walk's state sets
    mark : int64[S], meta : int64[1]   scratch: epoch stamps (a state is in the set being built)
    la_start, la_next, la_final   the rules' lookahead filters (xg2ref/lookahead.py `LookaheadArrays`;
                              la_start[r] = -1: rule r has none, as when the switch is off)
    """

    ctx_indptr: np.ndarray
    ctx_start: np.ndarray
    ctx_stop: np.ndarray
    cur: np.ndarray
    nxt: np.ndarray
    mark: np.ndarray
    meta: np.ndarray
    la_start: np.ndarray
    la_next: np.ndarray
    la_final: np.ndarray


class EntryArrays(NamedTuple):
    """The cache: per state, what it stores (KIND_*), its stored list and its uncertain list,
    as positions in the sorted vocabulary, each list in byte order; a KIND_BITSET entry's
    accepted tokens as uint32 words over token ids (its list is empty).

    kind : int8[S]   list_indptr : int64[S+1], list_pos : int32[...]   unc_indptr : int64[S+1], unc_pos : int32[...]
    bits_indptr : int64[S+1] (in words), bits : uint32[...]
    """

    kind: np.ndarray
    list_indptr: np.ndarray
    list_pos: np.ndarray
    unc_indptr: np.ndarray
    unc_pos: np.ndarray
    bits_indptr: np.ndarray
    bits: np.ndarray


@njit(cache=True, _nrt=False)
def _ctx_add(pda, ctx, into, n, q):
    """Add state q and its ε-closure to the set `into[:n]`. Returns the new size, or -1 when a
    final state of the automaton is reached (the rest passes)."""
    epoch = ctx.meta[0]
    if ctx.mark[q] == epoch:
        return n
    ctx.mark[q] = epoch
    into[n] = q
    n += 1
    i = n - 1
    while i < n:
        s = into[i]
        if ctx.ctx_stop[s]:
            return -1
        for e in range(pda.eps_indptr[s], pda.eps_indptr[s + 1]):
            d = pda.eps_dst[e]
            if ctx.mark[d] != epoch:
                ctx.mark[d] = epoch
                into[n] = d
                n += 1
        i += 1
    return n


@njit(cache=True, _nrt=False)
def context_passes(pda, ctx, rule, data, lo, hi):
    """CONTEXT(rule, data[lo:hi]): the rest is read wholly, or reaches a final state, by rule's
    expanded-suffix automaton."""
    ctx.meta[0] += 1
    n = 0
    for e in range(ctx.ctx_indptr[rule], ctx.ctx_indptr[rule + 1]):
        n = _ctx_add(pda, ctx, ctx.cur, n, ctx.ctx_start[e])
        if n < 0:
            return True
    cur, nxt = ctx.cur, ctx.nxt
    for p in range(lo, hi):
        if n == 0:
            return False
        b = data[p]
        ctx.meta[0] += 1
        m = 0
        for i in range(n):
            q = cur[i]
            for e in range(pda.byte_indptr[q], pda.byte_indptr[q + 1]):
                if pda.byte_lo[e] <= b <= pda.byte_hi[e]:
                    m = _ctx_add(pda, ctx, nxt, m, pda.byte_dst[e])
                    if m < 0:
                        return True
        cur, nxt = nxt, cur
        n = m
    return n > 0


@njit(cache=True, _nrt=False)
def _uncertain(pda, st, ctx, pops, base, token_bytes, begin, length, upto, opts):
    """UNCERTAIN: a record after d bytes, 1 <= d <= upto, popped (st.rec_pop), the rest t[d:]
    agrees with the rule's lookahead filter (when it has one) and, with context expansion on,
    passes CONTEXT (the token is token_bytes[begin:begin+length];
    record base - 1 + d is the one after d bytes; pops[d]: some record up to d popped)."""
    if not pops[upto]:
        return False
    rule = opts[W_RULE]
    for d in range(1, upto + 1):
        if st.rec_pop[base - 1 + d]:
            if ctx.la_start[rule] >= 0:  # LOOKAHEAD: the rest must agree with the rule's assertion
                agrees, _ = filter_walk(ctx.la_next, ctx.la_final, ctx.la_start[rule], token_bytes, begin + d,
                                        begin + length)
                if not agrees:
                    continue
            if opts[W_CONTEXT] == 0 or context_passes(pda, ctx, rule, token_bytes, begin + d, begin + length):
                return True
    return False


@njit(cache=True, _nrt=False)
def _read_on(pda, st, trie, base, begin, length, lcp, pops, max_stacks):
    """TRIE-SHARE, then read: keep the records of the (at most) `lcp` bytes a token shares with
    the one read before it from record base - 1, and read its other bytes. Returns (status,
    bytes read, bytes kept); with `pops` (length > 0), pops[d] = some record up to d popped."""
    depth = st.meta[M_RECORDS] - base
    keep = lcp if lcp < depth else depth
    st.meta[M_RECORDS] = base + keep
    read = keep
    status = OK
    while read < length:
        status = read_byte(pda, st, trie.token_bytes[begin + read], max_stacks)
        if status != OK:
            break
        read += 1
        if pops.shape[0] > 0:
            pops[read] = pops[read - 1] or st.rec_pop[base - 1 + read]
    return status, read, keep


@njit(cache=True, _nrt=False)
def walk_tokens(pda, st, trie, ctx, lo, hi, out, pops, opts):
    """out[j] for sorted tokens lo <= j < hi, read from the last record: ACCEPTED, UNCERTAIN (only
    when the walk starts at an entry's (s, OPEN_FRAME), module docstring) or REJECTED (out is
    zero on entry and left so). opts: WalkOptions (max stacks, prefix reuse, context expansion,
    the entry's rule; bytes read are added to opts[W_BYTES_READ]); pops: bool_[longest token + 1].
    Returns OK, or NEED_SPACE / TOO_MANY (the caller grows and walks again). The record count is
    restored in every case."""
    base = st.meta[M_RECORDS]
    reuse = opts[W_PREFIX_REUSE] != 0
    fail_len = NO_FAIL
    pops[0] = False
    j = lo
    while j < hi:
        tid = trie.sorted_ids[j]
        begin = trie.token_offsets[tid]
        length = trie.token_offsets[tid + 1] - begin
        lcp = shared_with_previous(trie.sorted_lcp, j, lo) if reuse else 0
        if under_rejected_prefix(lcp, fail_len) and not pops[fail_len - 1]:
            j += 1  # TRIE-SKIP (no pop on the way: its whole rest is rejected too)
            continue
        status, read, keep = _read_on(pda, st, trie, base, begin, length, lcp, pops, opts[W_MAX_STACKS])
        opts[W_BYTES_READ] += read - keep
        if status == OK:
            out[j] = ACCEPTED
            fail_len = NO_FAIL
            j += 1
            continue
        if status != DEAD:
            st.meta[M_RECORDS] = base
            return status
        fail_len = read + 1
        upto = read if read < length - 1 else length - 1
        if _uncertain(pda, st, ctx, pops, base, trie.token_bytes, begin, length, upto, opts):
            out[j] = UNCERTAIN
            j += 1
        elif reuse and not pops[read]:
            j = next_after_rejected(trie.subtree_end, j, length, fail_len)
        else:
            j += 1
    st.meta[M_RECORDS] = base
    return OK


@njit(cache=True, _nrt=False)
def entry_walk(pda, st, trie, ctx, state, out, pops, opts):
    """The entry of scannable `state`: `walk_tokens` over the whole vocabulary from the single
    configuration (state, OPEN_FRAME). Returns a status; the history is as it was."""
    before = st.meta[M_RECORDS]
    status = start(pda, st, state, OPEN_FRAME, False, opts[W_MAX_STACKS])
    if status == OK:
        status = walk_tokens(pda, st, trie, ctx, 0, trie.sorted_ids.shape[0], out, pops, opts)
    st.meta[M_RECORDS] = before
    return status


class FillScratch(NamedTuple):
    """What a fill (Alg. 1) works in: PartialAcc as bits, and per token how many accept-heavy
    tops reject it (zero between fills: only listed tokens are touched, and reset).

    acc_words : uint32[ceil(vocab / 32)]   regular_words : uint32[ceil(vocab / 32)]  the regular tokens
    rej_count : int32[vocab]   no_pops : bool_[0]
    """

    acc_words: np.ndarray
    regular_words: np.ndarray
    rej_count: np.ndarray
    no_pops: np.ndarray  # bool_[0]: the uncertain reads track no pops


@njit(cache=True, _nrt=False)
def _set(words, tid):
    words[tid >> 5] |= np.uint32(1) << np.uint32(tid & 31)


@njit(cache=True, _nrt=False)
def _has(words, tid):
    return (words[tid >> 5] >> np.uint32(tid & 31)) & np.uint32(1) != 0


@njit(cache=True, _nrt=False)
def _read_uncertain(pda, st, trie, entries, q, p, scratch, opts):
    """Read entry q's uncertain tokens from the one configuration (q, p), in byte order with
    TRIE-SHARE: a token read joins PartialAcc, one not read counts as rejected by q when q is
    accept-heavy. Returns a status; the history is as it was."""
    before = st.meta[M_RECORDS]
    status = start(pda, st, q, p, False, opts[W_MAX_STACKS])
    if status != OK:
        st.meta[M_RECORDS] = before
        return status
    base = st.meta[M_RECORDS]
    reuse = opts[W_PREFIX_REUSE] != 0
    prev_begin = 0
    prev_len = 0
    for u in range(entries.unc_indptr[q], entries.unc_indptr[q + 1]):
        tid = trie.sorted_ids[entries.unc_pos[u]]
        begin = trie.token_offsets[tid]
        length = trie.token_offsets[tid + 1] - begin
        lcp = common_prefix(trie.token_bytes, prev_begin, prev_len, begin, length) if reuse else 0
        status, _, _ = _read_on(pda, st, trie, base, begin, length, lcp, scratch.no_pops, opts[W_MAX_STACKS])
        if status == OK:
            _set(scratch.acc_words, tid)
        elif status == DEAD:
            if entries.kind[q] == KIND_REJECTED:
                scratch.rej_count[tid] += 1
        else:
            st.meta[M_RECORDS] = before
            return status
        prev_begin, prev_len = begin, length
    st.meta[M_RECORDS] = before
    return OK


@njit(cache=True, _nrt=False)
def _rejected_by(entries, trie, q, scratch, heavy, words, clear):
    """Over accept-heavy entry q's rejected and uncertain tokens: with `clear`, drop from `words`
    those every accept-heavy top rejects (count == heavy) and none accepts; reset their counts."""
    for part in range(2):
        lo = entries.list_indptr[q] if part == 0 else entries.unc_indptr[q]
        hi = entries.list_indptr[q + 1] if part == 0 else entries.unc_indptr[q + 1]
        pos = entries.list_pos if part == 0 else entries.unc_pos
        for e in range(lo, hi):
            tid = trie.sorted_ids[pos[e]]
            if clear and scratch.rej_count[tid] == heavy and not _has(scratch.acc_words, tid):
                words[tid >> 5] &= ~(np.uint32(1) << np.uint32(tid & 31))
            scratch.rej_count[tid] = 0


@njit(cache=True, _nrt=False)
def fill_from_cache(pda, st, trie, entries, words, scratch, opts):
    """Alg. 1 (module docstring) into uint32 `words` (the regular tokens' bits; the caller adds
    stop tokens) over the scannable tops of the last record. Works in `scratch` and touches only
    listed tokens besides one pass over the words. Returns a status (on NEED_SPACE / TOO_MANY the
    caller grows and fills again: the counts are reset first in every case)."""
    k = st.meta[M_RECORDS]
    for w in range(scratch.acc_words.shape[0]):
        scratch.acc_words[w] = 0
    heavy = 0
    first = -1
    status = OK
    for i in range(st.hist_tops[k - 1], st.hist_tops[k]):
        q = st.tops_state[i]
        if pda.byte_indptr[q] == pda.byte_indptr[q + 1]:
            continue
        kind = entries.kind[q]
        if kind == KIND_REJECTED:
            heavy += 1
            if first < 0:
                first = q
        elif kind == KIND_BITSET:
            base = entries.bits_indptr[q]
            for w in range(entries.bits_indptr[q + 1] - base):
                scratch.acc_words[w] |= entries.bits[base + w]
        for e in range(entries.list_indptr[q], entries.list_indptr[q + 1]):
            tid = trie.sorted_ids[entries.list_pos[e]]
            if kind == KIND_ACCEPTED:
                _set(scratch.acc_words, tid)
            else:
                scratch.rej_count[tid] += 1
        if entries.unc_indptr[q] < entries.unc_indptr[q + 1]:
            status = _read_uncertain(pda, st, trie, entries, q, st.tops_parent[i], scratch, opts)
            if status != OK:
                break
    if heavy == 0 or status != OK:
        for w in range(words.shape[0]):
            words[w] = scratch.acc_words[w]
    else:
        for w in range(words.shape[0]):
            words[w] = scratch.regular_words[w]
        # the intersection of the rejected sets lies inside the first accept-heavy entry's
        _rejected_by(entries, trie, first, scratch, heavy, words, True)
    for i in range(st.hist_tops[k - 1], st.hist_tops[k]):  # every count back to zero
        q = st.tops_state[i]
        if pda.byte_indptr[q] < pda.byte_indptr[q + 1] and entries.kind[q] == KIND_REJECTED:
            _rejected_by(entries, trie, q, scratch, heavy, words, False)
    return status
