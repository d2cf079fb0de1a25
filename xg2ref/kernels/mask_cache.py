"""XGrammar-2 §3.4 (Appendix D, Table 6) and XGrammar §3.1-§3.3: building the token-mask cache entries.

Building an entry. For one scannable FSM state s of rule A, every regular token is run
through an Earley parse that starts from the single item `[0, 1, A -> s]` (set 0 is left
empty, so that A's origin has no parent). With `comp(d)` meaning "after d bytes the set holds
an item of A with origin 0 in a final state" (A may end there):

    ACCEPT     all bytes of t are read inside A               |-  t accepted (any context)
    LOOKAHEAD  A's assertion L holds and FILTER(L) rejects
               every rest t[d:] with comp(d)                  |-  t rejected (lookahead.py)
    UNCERTAIN  t dies at byte r, comp(d) for some d <= r,
               and CONTEXT(A, t[d:])                          |-  t uncertain
    REJECT     otherwise                                      |-  t rejected (any context)

Shortcuts that decide the same classes faster: SELF-LOOP (every byte of t loops on s: accepted),
ACCEPT-CTX (every occurrence of A reads the rest: accepted, see `_every_parent_reads`) and
PURE WALK (from a pure state the parse is a table walk, see `mark_pure_states`).

CONTEXT is context expansion (XGrammar §3.2): A's parents are the FSM edges `src -A-> dst`
of the grammar, so whatever follows A starts at some such `dst`. `CONTEXT(A, rest)` runs
`rest` from the single item `[0, 1, B -> dst]` for every occurrence; it is true when one of
them reads all of `rest`; where B itself may end, B's own occurrences are tried on what is
left, and so on up the grammar. Every step over-approximates what may follow, so a token
it rejects is rejected in every context.

Tokens are visited in byte order with the longest-common-prefix array: a token reuses the
Earley sets of the prefix it shares with its predecessor (XGrammar §3.3's rollback), and when
a prefix is rejected outright, every token under it in the trie is rejected without parsing
(`subtree_end` jumps over a whole subtree when the rejected prefix is itself a token).

Using the entries at run time is `mask_fill.py`.

Status codes as in `earley.py`; a NEED_* status comes with `which` (0: the main chart,
1: the context chart) and the index to resume from.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .earley import EMPTY, FREE_BASE, NO_DEADLINE, OK, STRICT_BASE, advance_byte, item_may_end, seed_chart

REJECTED = 0
ACCEPTED = 1
UNCERTAIN = 2
TODO = -1  # a token still to classify (`only_marked`)

# What a token's class owes to the rule's own machine and lookahead (`record`):
D_REJECTED = 0  # dies inside A, which cannot end before: rejected in every context
D_ACCEPTED = 1  # read inside A: accepted in every context
D_ENDS_LOOKAHEAD_REJECTS = 2  # A may end inside t; no rest agrees with A's lookahead
D_ENDS = 3  # A may end inside t and the lookahead (if any) agrees: the context decides


@njit(cache=True, _nrt=False)
def split_detail(detail, accepted, ends, passes):
    """One pass over `detail` (D_* per sorted token, a pool MISS's record): the sorted indices
    with D_ACCEPTED into `accepted`, with D_ENDS_LOOKAHEAD_REJECTS or D_ENDS into `ends`, with
    D_ENDS into `passes` (each as long as `detail`). Returns the three lengths."""
    na = 0
    ne = 0
    npass = 0
    for j in range(detail.shape[0]):
        d = detail[j]
        if d == D_ACCEPTED:
            accepted[na] = j
            na += 1
        elif d >= D_ENDS_LOOKAHEAD_REJECTS:
            ends[ne] = j
            ne += 1
            if d == D_ENDS:
                passes[npass] = j
                npass += 1
    return na, ne, npass


# Context expansion gives up (the token stays uncertain) after this many occurrence runs.
MAX_CONTEXT_RUNS = 4096
# ACCEPT-CTX is tried for rules with at most this many occurrences.
MAX_ACCEPT_PARENTS = 8


@njit(cache=True, _nrt=False)
def init_chart_at_state(fsm, chart, state, count):
    """Set 0 empty, set 1 = the closure of the single item (state, origin 0, count). Returns a
    status. `count` matters in a counted repetition only (kernels/earley.py): the entry of a
    state of one is built for a zone of counts (FREE_BASE, NOEXIT_BASE) or for one count."""
    return seed_chart(fsm, chart, 1, state, NO_DEADLINE, NO_DEADLINE, count)


@njit(cache=True, _nrt=False)
def start_rule_may_end(fsm, chart):
    """The current set holds an origin-0 item in a final state (the start item's rule may end)."""
    k = chart.meta[0] - 1
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
    base = chart.item_count[chart.set_start[1]]
    best = np.int64(1) << 40
    k = chart.meta[0] - 1
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
def _context_allows(fsm, chart, occ_indptr, occ_dst, follow1, work, seen, token_bytes, begin, end):
    """CONTEXT for the (rule, start) pairs already in `work` (work[0] = count, then pairs).

    Breadth-first over pairs (B, q) "B has just ended at byte q": for every occurrence
    `src -B-> dst`, read token_bytes[q:end] from [0, 1, C -> dst]. Reading all of it means
    the token may continue: True. Wherever C may end first, (C, q') joins the work list, so the
    expansion climbs as many levels as it needs (root's end is only continued through root's
    own occurrences: after the sentence nothing follows). Gives up, answering True, after
    MAX_CONTEXT_RUNS runs. `seen` (int64, last slot = generation) dedups pairs.
    `follow1[B, b]` is 0 when byte b can never follow B (a pair starting with such a byte is
    not pursued), 1 when it may, -1 when not known yet (pursued).
    Returns (status, allowed, far): `far` bounds the bytes looked at (token_bytes[:far]), so
    a False answer holds for every token that shares them.
    """
    width = end - begin + 1
    runs = 0
    far = begin
    head = 0
    while head < work[0]:
        rule = work[1 + 2 * head]
        q0 = work[2 + 2 * head]
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
                if q < end and follow1[parent, token_bytes[q]] != 0 and start_rule_may_end(fsm, chart):
                    key = parent * width + (q - begin)
                    if seen[key] != seen[seen.shape[0] - 1]:
                        seen[key] = seen[seen.shape[0] - 1]
                        if 2 * work[0] + 2 >= work.shape[0]:
                            return OK, True, end
                        work[1 + 2 * work[0]] = parent
                        work[2 + 2 * work[0]] = q
                        work[0] += 1
            if alive:
                return OK, True, end
    return OK, False, far


@njit(cache=True, _nrt=False)
def _every_parent_reads(fsm, chart, occ_indptr, occ_dst, rule, token_bytes, begin, end):
    """ACCEPT-CTX: every occurrence `src -rule-> dst` reads token_bytes[begin:end] from
    [0, 1, B -> dst] without B having to end. Returns (status, answer); False when the rule
    has no occurrence or more than MAX_ACCEPT_PARENTS."""
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
def mark_pure_states(fsm, lo, hi, rows, max_rows, pure_row):
    """pure_row[q] = a row number, from `rows` on, for every *pure* state q in [lo, hi), -1 for
    the others; returns the new row count.

    q is pure when it has no rule edges, is not final and its byte edges do not overlap: an
    item [0, k, A -> q] is then the whole Earley set (nothing to predict, nothing to complete)
    and a byte moves it to at most one state. At most `max_rows` states get a row; a state
    without one is parsed the general way, so which states get rows never changes a result.
    """
    for q in range(lo, hi):
        pure_row[q] = -1
        if rows >= max_rows or fsm.is_final[q] or fsm.ref_indptr[q] != fsm.ref_indptr[q + 1]:
            continue
        disjoint = True
        for e in range(fsm.byte_indptr[q], fsm.byte_indptr[q + 1]):
            for f in range(e + 1, fsm.byte_indptr[q + 1]):
                if fsm.byte_lo[e] <= fsm.byte_hi[f] and fsm.byte_lo[f] <= fsm.byte_hi[e]:
                    disjoint = False
        if disjoint:
            pure_row[q] = rows
            rows += 1
    return rows


@njit(cache=True, _nrt=False)
def fill_pure_next(fsm, lo, hi, pure_row, pure_next):
    """pure_next[pure_row[q], b] = the state byte b leads to from pure state q in [lo, hi), -1
    for none."""
    for q in range(lo, hi):
        r = pure_row[q]
        if r < 0:
            continue
        pure_next[r, :] = -1
        for e in range(fsm.byte_indptr[q], fsm.byte_indptr[q + 1]):
            for b in range(fsm.byte_lo[e], fsm.byte_hi[e] + 1):
                pure_next[r, b] = fsm.byte_dst[e]


@njit(cache=True, _nrt=False)
def _dfa_walk(pure_row, pure_next, path, start, token_bytes, begin, length):
    """Read a token through pure states only, from path[start]: the state after its first
    `start` bytes (path[0] is the state the walk begins in; the caller's sorted neighbours
    share those bytes, TRIE-SHARE). Returns (d, q): d bytes were read and q is the state
    reached (q == -1: byte d has no edge; d < length and q >= 0: q is not pure, the general
    parse must decide). Afterwards path[k] holds the state after k bytes for every k <= d."""
    q = path[start]
    for d in range(start, length):
        r = pure_row[q]
        if r < 0:
            return d, q
        nxt = pure_next[r, token_bytes[begin + d]]
        if nxt < 0:
            return d, nxt
        q = nxt
        path[d + 1] = q
    return length, q


@njit(cache=True, _nrt=False)
def _filter_walk(la_next, la_final, row, token_bytes, lo, hi):
    """Run token_bytes[lo:hi] through a lookahead filter from `row`. Returns (agrees, stop):
    the filter accepted a prefix or read everything (True), or died; either way the answer
    depends on token_bytes[:stop] only."""
    if la_final[row]:
        return True, lo
    for p in range(lo, hi):
        row = la_next[row, token_bytes[p]]
        if row < 0:
            return False, p + 1
        if la_final[row]:
            return True, p + 1
    return True, hi


@njit(cache=True, _nrt=False)
def _reject(out, subtree_end, j, length, fail_len, only_marked, detail, fail_detail):
    """Mark sorted token j rejected; when token j is itself the rejected prefix (its length
    is fail_len), the whole trie subtree under it too (`only_marked`: the marked ones among
    them are met one by one), recording `fail_detail` for them when it is not D_REJECTED (the
    rule may end inside the prefix: their class is the context's). Returns the next token.
    The subtree's tokens are not written: `out` holds REJECTED (0) where nothing was written
    (`classify_tokens`), and a loop over them would cost one write per token of the vocabulary
    for a state that rejects most first bytes."""
    out[j] = REJECTED
    if length == fail_len and subtree_end[j] > j + 1 and not only_marked:
        if fail_detail != D_REJECTED:
            for q in range(j + 1, subtree_end[j]):
                detail[q] = fail_detail
        return subtree_end[j]
    return j + 1


@njit(cache=True, _nrt=False)
def classify_tokens(fsm, chart, ctx_chart, state, occ_indptr, occ_dst, token_bytes, token_offsets,
                    sorted_ids, sorted_lcp, subtree_end, j_start, comp, work, seen, follow1, loop,
                    pure_row, pure_next, la_start, la_next, la_final, out, acc_idx, unc_idx, n_list,
                    only_marked, record, detail, track, loops, exits, path):
    """out[j] = REJECTED / ACCEPTED / UNCERTAIN for sorted token j, for the FSM state `state`.
    `out` must hold REJECTED (0) on the first call (TODO marks aside, with `only_marked`): the
    tokens of a rejected trie subtree keep it unwritten (`_reject`).

    `comp` (int8, longer than the longest token), `work` (int64), `seen` (int64, at least
    rules x (longest token + 1) + 1) and `loop` (bool[256]) are scratch; `follow1`
    (int8[rules, 256], -1 = unknown) is filled in as a side effect and kept across states;
    `pure_row`, `pure_next` are the pure-state table (`mark_pure_states`, `fill_pure_next`),
    `la_*` the lookahead filters (xg2ref/lookahead.py, `LookaheadArrays`), `path` (int32, longer
    than the longest token) scratch for the pure walk's states.
    The accepted and the uncertain sorted indices are also listed, in order, in
    acc_idx[:n_list[0]] and unc_idx[:n_list[1]] (the rejected are the rest).
    `chart` must hold the sets of `init_chart_at_state(state)` on the first call (j_start == 0).

    For the cross-grammar cache (xg2ref/cross_grammar_cache.py): with `only_marked`, only the
    tokens with out[j] == TODO are classified (the others keep their class); with `record`,
    detail[j] receives the part of the class that depends on A's machine and lookahead alone
    (D_* codes; `detail` must be zero where it is not written) and no trie subtree is skipped
    on a decision that depended on more.

    For a counted repetition's state (xg2ref/grammar/repetition.py) with `track` (and
    `loops`, `exits` as long as the vocabulary): loops[j] = the fewest copies a token read inside
    the rule completes (-1 for the others), exits[j] = 1 when the rule may also end inside it
    before a byte that may follow the rule (see `copies_completed`).
    Returns (status, j, which).
    """
    # a resumed call lists again what it classifies again
    while n_list[0] > 0 and acc_idx[n_list[0] - 1] >= j_start:
        n_list[0] -= 1
    while n_list[1] > 0 and unc_idx[n_list[1] - 1] >= j_start:
        n_list[1] -= 1
    rule = fsm.state_rule[state]
    n0 = 2
    n = sorted_ids.shape[0]
    if j_start == 0:
        chart.meta[0] = n0
    comp[0] = 1 if start_rule_may_end(fsm, chart) else 0
    track = track and fsm.rule_rep_lo[rule] >= 0
    # SELF-LOOP: every byte of t has an edge s -b-> s  |-  t accepted (the item stays in s)
    loop[:] = False
    for e in range(fsm.byte_indptr[state], fsm.byte_indptr[state + 1]):
        if fsm.byte_dst[e] == state:
            for b in range(fsm.byte_lo[e], fsm.byte_hi[e] + 1):
                loop[b] = True
    fail_len = 0
    fail_class = REJECTED
    fail_detail = D_REJECTED  # what the tokens under the rejected prefix owe (`record`)
    path[0] = state
    path_valid = 0  # path[:path_valid + 1] holds the states of the last token walked
    j = j_start
    run_lcp = 1 << 30  # common prefix with the last token parsed, across tokens not classified
    while j < n:
        if only_marked and out[j] != TODO:
            run_lcp = sorted_lcp[j] if sorted_lcp[j] < run_lcp else run_lcp
            j += 1
            continue
        tid = sorted_ids[j]
        lcp = sorted_lcp[j] if j > j_start else 0
        lcp = run_lcp if run_lcp < lcp else lcp
        run_lcp = 1 << 30
        begin = token_offsets[tid]
        length = token_offsets[tid + 1] - begin
        if fail_len > 0 and lcp >= fail_len and fail_class == REJECTED:
            # the whole trie subtree under the rejected prefix: jump when the prefix is a token
            if fail_detail != D_REJECTED:
                detail[j] = fail_detail
            j = _reject(out, subtree_end, j, length, fail_len, only_marked, detail, fail_detail)
            continue
        if pure_row[state] >= 0:
            # PURE WALK: from a pure state the Earley sets are single items, so the parse is a
            # DFA walk. All bytes read |- accepted; a missing edge at byte d |- t[:d+1] rejected
            # (no state on the way was final: A cannot have ended, nothing else can follow)
            # TRIE-SHARE: the bytes this token shares with the last one walked are not read again
            start = lcp if lcp < path_valid else path_valid
            walked, q = _dfa_walk(pure_row, pure_next, path, start, token_bytes, begin, length)
            path_valid = walked
            if walked < length and q < 0:
                depth = chart.meta[0] - n0
                chart.meta[0] = n0 + (lcp if lcp < depth else depth)
                fail_len = walked + 1
                fail_class = REJECTED
                fail_detail = D_REJECTED
                j = _reject(out, subtree_end, j, length, fail_len, only_marked, detail, fail_detail)
                continue
            inside = walked == length
        else:
            inside = True
            for d in range(length):
                if not loop[token_bytes[begin + d]]:
                    inside = False
                    break
        if inside:
            out[j] = ACCEPTED
            if record:
                detail[j] = D_ACCEPTED
            if track:  # a walk that stays in pure states or loops on s completes no copy
                loops[j] = 0
                exits[j] = 0
                if pure_row[state] < 0 and comp[0] == 1:
                    for d in range(length):
                        if follow1[rule, token_bytes[begin + d]] != 0:
                            exits[j] = 1
                            break
            acc_idx[n_list[0]] = j
            n_list[0] += 1
            fail_len = 0
            depth = chart.meta[0] - n0  # keep only the sets this token shares with the last parsed one
            chart.meta[0] = n0 + (lcp if lcp < depth else depth)
            j += 1
            continue
        depth = chart.meta[0] - n0
        common = lcp if lcp < depth else depth
        if fail_len > 0 and lcp >= fail_len:
            common = fail_len - 1 if fail_len - 1 < common else common
        chart.meta[0] = n0 + common
        reached = length
        for d in range(common, length):
            status = advance_byte(fsm, chart, token_bytes[begin + d])
            if status == EMPTY:
                reached = d
                break
            if status != OK:
                chart.meta[0] = n0
                return status, j, 0
            comp[d + 1] = 1 if start_rule_may_end(fsm, chart) else 0
        if reached == length:
            out[j] = ACCEPTED
            if record:
                detail[j] = D_ACCEPTED
            if track:
                loops[j] = copies_completed(fsm, chart, rule)
                exits[j] = 0
                for d in range(length):
                    if comp[d] == 1 and follow1[rule, token_bytes[begin + d]] != 0:
                        exits[j] = 1
                        break
            acc_idx[n_list[0]] = j
            n_list[0] += 1
            fail_len = 0
            j += 1
            continue
        fail_len = reached + 1
        cls = REJECTED
        agrees = True
        if la_start[rule] >= 0:
            # LOOKAHEAD: A's assertion L holds (inferred or verified), so when no rest t[d:]
            # after a place where A may end agrees with FILTER(L)  |-  t rejected
            agrees = False
            for d in range(reached + 1):
                if comp[d] == 1 and d < length:
                    agrees, stop = _filter_walk(la_next, la_final, la_start[rule], token_bytes, begin + d,
                                                begin + length)
                    if agrees:
                        break
                    fail_len = stop - begin if stop - begin > fail_len else fail_len
        for d in range(reached + 1):
            if not agrees:
                break
            if comp[d] == 1 and d < length:
                b = token_bytes[begin + d]
                if follow1[rule, b] < 0:  # FOLLOW1: can byte b follow the rule at all?
                    work[0] = 1
                    work[1] = rule
                    work[2] = begin + d
                    seen[seen.shape[0] - 1] += 1
                    status, ok, _ = _context_allows(fsm, ctx_chart, occ_indptr, occ_dst, follow1, work, seen,
                                                    token_bytes, begin, begin + d + 1)
                    if status != OK:
                        chart.meta[0] = n0
                        return status, j, 1
                    follow1[rule, b] = 1 if ok else 0
        work[0] = 0
        seen[seen.shape[0] - 1] += 1
        for d in range(reached + 1):
            if agrees and comp[d] == 1 and d < length and follow1[rule, token_bytes[begin + d]] == 1:
                work[1 + 2 * work[0]] = rule
                work[2 + 2 * work[0]] = begin + d
                work[0] += 1
        if work[0] > 0:
            status, ok, far = _context_allows(fsm, ctx_chart, occ_indptr, occ_dst, follow1, work, seen,
                                              token_bytes, begin, begin + length)
            if status != OK:
                chart.meta[0] = n0
                return status, j, 1
            if ok:
                cls = UNCERTAIN
                if rule != fsm.root_rule[0]:
                    for d in range(reached + 1):
                        if comp[d] == 1 and d < length:
                            status, every = _every_parent_reads(fsm, ctx_chart, occ_indptr, occ_dst, rule,
                                                                token_bytes, begin + d, begin + length)
                            if status != OK:
                                chart.meta[0] = n0
                                return status, j, 1
                            if every:
                                cls = ACCEPTED
                                break
            elif far - begin > fail_len:
                fail_len = far - begin  # every token sharing the bytes looked at is rejected too
        fail_class = cls  # only a rejected prefix lets the tokens under it be skipped
        fail_detail = D_REJECTED
        if record:
            for d in range(reached + 1):
                if comp[d] == 1 and d < length:
                    # A may end inside t: what follows decides, so the class is not A's alone; the
                    # same holds for every token under the rejected prefix (A ends at the same d)
                    detail[j] = D_ENDS if agrees else D_ENDS_LOOKAHEAD_REJECTS
                    fail_detail = D_ENDS
                    break
        out[j] = cls
        if cls == ACCEPTED:
            acc_idx[n_list[0]] = j
            n_list[0] += 1
        elif cls == UNCERTAIN:
            unc_idx[n_list[1]] = j
            n_list[1] += 1
        j = _reject(out, subtree_end, j, length, fail_len, only_marked, detail, fail_detail) if cls == REJECTED \
            else j + 1
    chart.meta[0] = n0
    return OK, n, 0


@njit(cache=True, _nrt=False)
def pack_sorted(indices, sorted_ids, words):
    """Set in int32 `words` the bit of the token id at each sorted index of `indices`."""
    for j in indices:
        t = sorted_ids[j]
        words[t >> 5] |= np.int32(1) << np.int32(t & 31)


@njit(cache=True)  # allocates its result: needs Numba's reference counting
def trie_subtree_end(token_offsets, sorted_ids, sorted_lcp):
    """end[j] = first sorted index after j whose token does not start with token j's bytes.

    In byte order the tokens that extend token j follow it contiguously, and token i (of L
    bytes) is a prefix of the next token exactly when L <= the next LCP. A stack holds the
    chain of tokens that are prefixes of the current one, shortest at the bottom.
    """
    n = sorted_ids.shape[0]
    end = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    top = 0
    for j in range(n):
        while top > 0:
            tid = sorted_ids[stack[top - 1]]
            if token_offsets[tid + 1] - token_offsets[tid] <= sorted_lcp[j]:
                break
            end[stack[top - 1]] = j
            top -= 1
        stack[top] = j
        top += 1
    for q in range(top):
        end[stack[q]] = n
    return end
