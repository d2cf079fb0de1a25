"""XGrammar-2 §3.4 (Appendix D, Table 6) and XGrammar §3.1-§3.3: classifying every token for a
state (ACCEPT / REJECT / UNCERTAIN), which builds a token-mask cache entry.

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
ACCEPT-CTX (every occurrence of A reads the rest: accepted, see `every_parent_reads`) and
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

Context expansion (CONTEXT, ACCEPT-CTX, FOLLOW1) is `context_expansion.py`, the PURE WALK
and the lookahead filter walk `pure_walk.py`, the byte-order walk of the vocabulary
(TRIE-SHARE, TRIE-SKIP) `trie_walk.py`; using the entries at run time is `mask_fill.py`.

Status codes as in `earley.py`; a NEED_* status comes with `which` (CHART_MAIN, CHART_CONTEXT
or CHART_EVERY) and the index to resume from.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .context_expansion import (FOLLOW_MAY, FOLLOW_NEVER, FOLLOW_UNKNOWN, SEED_SETS, copies_completed,
                                query_context, query_every_parent, start_rule_may_end, union_context)
from .earley import EMPTY, META_N_SETS, META_WORK, OK, advance_byte
from .pure_walk import dfa_walk, filter_walk
from .trie_walk import (NO_FAIL, common_prefix, next_after_rejected, reuse_sets, shared_with_previous,
                        under_rejected_prefix)

REJECTED = 0
ACCEPTED = 1
UNCERTAIN = 2

# What a token's class owes to the rule's own machine and lookahead (`record`):
D_REJECTED = 0  # dies inside A, which cannot end before: rejected in every context
D_ACCEPTED = 1  # read inside A: accepted in every context
D_ENDS_LOOKAHEAD_REJECTS = 2  # A may end inside t; no rest agrees with A's lookahead
D_ENDS = 3  # A may end inside t and the lookahead (if any) agrees: the context decides


class ClassifyScratch(NamedTuple):
    """Caller-owned scratch of `classify_tokens` (L = the longest token).

    comp : int8[L + 2]          comp[d] = 1: the start item's rule may end after d bytes
    work : int64[L + 5]         the union chart's state (context_expansion.CTX_*)
    seen : int64[R + 1]         the rules climbed in a set (`_climb`), last slot = generation
    loop : bool[256]            SELF-LOOP bytes of the state
    path : int32[L + 2]         the pure walk's states (TRIE-SHARE)
    meter : int64[2]            the work done since the caller last zeroed meter[0], and the
                                budget meter[1] (<= 0: none) past which the call gives way (PAUSED)
    """

    comp: np.ndarray
    work: np.ndarray
    seen: np.ndarray
    loop: np.ndarray
    path: np.ndarray
    meter: np.ndarray


class ContextCharts(NamedTuple):
    """The charts of context expansion: `union`, CONTEXT's union chart (rolled back across
    questions, `union_context`), and `every`, ACCEPT-CTX's runs (`every_parent_reads`)."""

    union: tuple
    every: tuple


class ClassifyOutputs(NamedTuple):
    """What `classify_tokens` writes (n sorted tokens).

    out : int8[n]               REJECTED / ACCEPTED / UNCERTAIN
    acc_idx, unc_idx : int32[n]  the accepted and the uncertain sorted indices, in order,
                                acc_idx[:n_list[N_ACCEPTED]] and unc_idx[:n_list[N_UNCERTAIN]]
    n_list : int64[N_LISTS]     the lengths of the five lists
    rec_acc0 : int32[n or 1]    `record`: the tokens with D_ACCEPTED, in order
    rec_ends : int32[n or 1]    `record`: the tokens with D_ENDS_LOOKAHEAD_REJECTS or D_ENDS
    rec_pass : int32[n or 1]    `record`: the tokens with D_ENDS
    loops : int32[n or 1]       fewest copies completed (`track`)
    exits : int8[n or 1]        the counted rule may also end inside the token (`track`)
    """

    out: np.ndarray
    acc_idx: np.ndarray
    unc_idx: np.ndarray
    n_list: np.ndarray
    rec_acc0: np.ndarray
    rec_ends: np.ndarray
    rec_pass: np.ndarray
    loops: np.ndarray
    exits: np.ndarray


class ClassifyTask(NamedTuple):
    """One `classify_tokens` call: the FSM state, the sorted token to start from, the modes
    (`only_marked`, `record`, `track`: see `classify_tokens`) and, with `only_marked`, the
    sorted indices to classify (int32, ascending)."""

    state: int
    j_start: int
    only_marked: bool
    record: bool
    track: bool
    marked: np.ndarray


# n_list slots
N_ACCEPTED = 0
N_UNCERTAIN = 1
N_ACC0 = 2
N_ENDS = 3
N_PASS = 4
N_LISTS = 5
# `which` chart a NEED_* status of `classify_tokens` is about
CHART_MAIN = 0
CHART_CONTEXT = 1
CHART_EVERY = 2
# a bound above any token's length
FAR = 1 << 30
# The work meter (ClassifyScratch.meter): a token costs one unit, a byte read by Earley steps
# STEP_UNITS, a question to the context CONTEXT_UNITS, an item closed in any of the charts
# ITEM_UNITS (chart.meta[META_WORK]; about 10 ns a unit on a 2024 CPU core). Past the budget
# the call returns PAUSED with the token to resume from: a long build gives the caller a turn
# every WORK_BUDGET units (some 50 ms), so a time limit or Ctrl-C is honoured between two
# calls of a kernel (Python runs signal handlers only between bytecodes).
PAUSED = 22
STEP_UNITS = 32
CONTEXT_UNITS = 128
ITEM_UNITS = 4
WORK_BUDGET = 1 << 22


@njit(cache=True, _nrt=False)
def take_work(chart):
    """The items `chart` closed since the last call (its META_WORK count, then zeroed)."""
    n = chart.meta[META_WORK]
    chart.meta[META_WORK] = 0
    return n


@njit(cache=True, _nrt=False)
def _record(outs, j, d):
    """`record`: note that sorted token j owes D_* code d to A's machine and lookahead."""
    n_list = outs.n_list
    if d == D_ACCEPTED:
        outs.rec_acc0[n_list[N_ACC0]] = j
        n_list[N_ACC0] += 1
    elif d >= D_ENDS_LOOKAHEAD_REJECTS:
        outs.rec_ends[n_list[N_ENDS]] = j
        n_list[N_ENDS] += 1
        if d == D_ENDS:
            outs.rec_pass[n_list[N_PASS]] = j
            n_list[N_PASS] += 1


@njit(cache=True, _nrt=False)
def _forget_from(listed, n_list, slot, j_start):
    """A resumed call lists again what it classifies again: drop the tokens >= j_start."""
    while n_list[slot] > 0 and listed[n_list[slot] - 1] >= j_start:
        n_list[slot] -= 1


@njit(cache=True, _nrt=False)
def _reject(outs, sorted_ids, subtree_end, j, length, fail_len, only_marked, record, fail_detail):
    """Mark sorted token j rejected; when token j is itself the rejected prefix (its length
    is fail_len), the whole trie subtree under it too (`only_marked`: the marked ones among
    them are met one by one), recording `fail_detail` for them when it is not D_REJECTED (the
    rule may end inside the prefix: their class is the context's). Returns the next token.
    The subtree's tokens are not written: `out` holds REJECTED (0) where nothing was written
    (`classify_tokens`), and a loop over them would cost one write per token of the vocabulary
    for a state that rejects most first bytes."""
    outs.out[sorted_ids[j]] = REJECTED
    if only_marked:
        return j + 1
    nxt = next_after_rejected(subtree_end, j, length, fail_len)
    if record and fail_detail != D_REJECTED:
        for q in range(j + 1, nxt):
            _record(outs, sorted_ids[q], fail_detail)
    return nxt


@njit(cache=True, _nrt=False)
def _self_loop_bytes(fsm, state, loop):
    """SELF-LOOP: loop[b] when state has an edge s -b-> s (a token made of such bytes is
    accepted: the item stays in s)."""
    loop[:] = False
    for e in range(fsm.byte_indptr[state], fsm.byte_indptr[state + 1]):
        if fsm.byte_dst[e] == state:
            for b in range(fsm.byte_lo[e], fsm.byte_hi[e] + 1):
                loop[b] = True


@njit(cache=True, _nrt=False)
def _accept(outs, tid, record):
    """Token tid is accepted: written, listed, and (`record`) owed to A's machine alone."""
    outs.out[tid] = ACCEPTED
    if record:
        _record(outs, tid, D_ACCEPTED)
    outs.acc_idx[outs.n_list[N_ACCEPTED]] = tid
    outs.n_list[N_ACCEPTED] += 1


@njit(cache=True, _nrt=False)
def _may_exit(follow1, rule, comp, token_bytes, begin, length, where_comp):
    """`track`'s exits: 1 when A may end before a byte of the token that may follow A (at every
    byte, or with `where_comp` only where comp[d] says A may end)."""
    for d in range(length):
        if (not where_comp or comp[d] == 1) and follow1[rule, token_bytes[begin + d]] != FOLLOW_NEVER:
            return 1
    return 0


@njit(cache=True, _nrt=False)
def _decide_by_context(fsm, charts, context, la, scratch, token_bytes, rule, begin, length, reached):
    """The class of token t = token_bytes[begin:begin + length] that A's machine alone does not
    decide: it leaves A's machine after `reached` bytes, and A may end at the places d <=
    reached with scratch.comp[d] == 1; `charts` is a ContextCharts. Returns (status, which
    chart, class, fail_len, agrees): `fail_len`
    bytes of t decide a rejection (every token sharing them is rejected too), `agrees` is False
    when A's lookahead already rejected every rest.

        no rest t[d:] agrees with FILTER(A's lookahead)              |-  REJECTED  (LOOKAHEAD)
        no byte t[d] may follow A at all                              |-  REJECTED  (FOLLOW1)
        no parent reads a rest t[d:] (CONTEXT, each (A, t[d:]) once)  |-  REJECTED
        some parent reads one, and every parent reads it (ACCEPT-CTX) |-  ACCEPTED
        some parent reads one                                         |-  UNCERTAIN
    """
    ctx_chart = charts.union
    comp = scratch.comp
    work = scratch.work
    seen = scratch.seen
    follow1 = context.follow1
    la_start = la.la_start
    la_next = la.la_next
    la_final = la.la_final
    fail_len = reached + 1
    cls = REJECTED
    agrees = True
    if la_start[rule] >= 0:
        # LOOKAHEAD: A's assertion L holds (inferred or verified), so when no rest t[d:]
        # after a place where A may end agrees with FILTER(L)  |-  t rejected
        agrees = False
        for d in range(reached + 1):
            if comp[d] == 1 and d < length:
                agrees, stop = filter_walk(la_next, la_final, la_start[rule], token_bytes, begin + d,
                                            begin + length)
                if agrees:
                    break
                fail_len = stop - begin if stop - begin > fail_len else fail_len
    for d in range(reached + 1):
        if not agrees:
            break
        if comp[d] == 1 and d < length:
            b = token_bytes[begin + d]
            if follow1[rule, b] == FOLLOW_UNKNOWN:  # FOLLOW1: can byte b follow the rule at all?
                status, ok, _ = union_context(fsm, ctx_chart, context, work, seen, token_bytes, rule,
                                              begin + d, begin + d + 1)
                if status != OK:
                    return status, CHART_CONTEXT, cls, fail_len, agrees
                follow1[rule, b] = FOLLOW_MAY if ok else FOLLOW_NEVER
    # CONTEXT over every place d where A may end: allowed when some parent reads t[d:]; each
    # (A, t[d:]) is asked once per grammar (`query_context`: memoised, FOLLOW2 first)
    asked = False
    ok = False
    far = begin
    for d in range(reached + 1):
        if agrees and comp[d] == 1 and d < length and follow1[rule, token_bytes[begin + d]] == FOLLOW_MAY:
            asked = True
            status, ok, far_d = query_context(fsm, ctx_chart, context, work, seen, token_bytes, rule,
                                              begin + d, begin + length)
            if status != OK:
                return status, CHART_CONTEXT, cls, fail_len, agrees
            if ok:
                break
            far = far_d if far_d > far else far
    if asked:
        if ok:
            cls = UNCERTAIN
            if rule != fsm.root_rule[0]:
                for d in range(reached + 1):
                    if comp[d] == 1 and d < length:
                        status, every = query_every_parent(fsm, charts.every, context, rule,
                                                           token_bytes, begin + d, begin + length)
                        if status != OK:
                            return status, CHART_EVERY, cls, fail_len, agrees
                        if every:
                            cls = ACCEPTED
                            break
        elif far - begin > fail_len:
            fail_len = far - begin  # every token sharing the bytes looked at is rejected too
    return OK, CHART_MAIN, cls, fail_len, agrees


@njit(cache=True, _nrt=False)
def classify_tokens(fsm, chart, charts, trie, context, pure, la, scratch, outs, task):
    """outs.out[t] = REJECTED / ACCEPTED / UNCERTAIN for each token t = trie.sorted_ids[j] of the
    trie, for the FSM state `task.state` (the whole sorted vocabulary, t = j; or a slice's rest,
    kernels/slices.py, whose t are sorted positions: every list below holds t). `out` must hold REJECTED (0) on the first call: the tokens of a rejected
    trie subtree keep it unwritten (`_reject`).

    `trie` is a TrieArrays, `context` a ContextArrays (its `follow1` is filled in as a side
    effect and kept across states), `pure` the PureTable, `la` the lookahead filters
    (xg2ref/lookahead.py, `LookaheadArrays`), `scratch` a ClassifyScratch, `outs` a
    ClassifyOutputs, `task` a ClassifyTask.
    The accepted and the uncertain sorted indices are also listed, in order, in
    acc_idx[:n_list[N_ACCEPTED]] and unc_idx[:n_list[N_UNCERTAIN]] (the rejected are the rest).
    `chart` must hold the sets of `init_chart_at_state(state)` on the first call (j_start == 0).

    For the cross-grammar cache (xg2ref/mask/cross_grammar.py): with `only_marked`, only the
    tokens of `task.marked` are classified (the walk jumps from one to the next; the others
    stay rejected and unlisted); with `record`, the part of each token's class that depends
    on A's machine and lookahead alone (its D_* code) is listed in rec_acc0, rec_ends and
    rec_pass (`_record`), and no trie subtree is skipped on a decision that depended on more.

    For a counted repetition's state (xg2ref/grammar/repetition.py) with `track` (and
    `loops`, `exits` as long as the vocabulary): loops[j] = the fewest copies a token read inside
    the rule completes (-1 for the others), exits[tid] = 1 when the rule may also end inside it
    before a byte that may follow the rule (see `copies_completed`).
    Returns (status, j, which); PAUSED (with j > task.j_start) when scratch.meter's budget
    is spent: call again from j.

    The steps, for each token t in byte order (the rules sit above the code performing them):

        SKIP       t under the last rejected prefix                  |-  rejected, with its subtree
        PURE WALK  s pure: the DFA walk reads t whole / dies at d    |-  accepted / t[:d+1] rejected
                   (or, past a final state, the context decides: CONTEXT)
        SELF-LOOP  every byte of t loops on s (`_self_loop_bytes`)   |-  accepted
        PARSE      the chart from s reads t whole                    |-  accepted
        CONTEXT    A may end inside t: FOLLOW1, CONTEXT, ACCEPT-CTX  |-  `_decide_by_context`
    """
    state = task.state
    j_start = task.j_start
    only_marked = task.only_marked
    record = task.record
    token_bytes = trie.token_bytes
    token_offsets = trie.token_offsets
    sorted_ids = trie.sorted_ids
    sorted_lcp = trie.sorted_lcp
    subtree_end = trie.subtree_end
    follow1 = context.follow1
    pure_row = pure.pure_row
    comp = scratch.comp
    loop = scratch.loop
    path = scratch.path
    out = outs.out
    acc_idx = outs.acc_idx
    unc_idx = outs.unc_idx
    n_list = outs.n_list
    marked = task.marked
    loops = outs.loops
    exits = outs.exits
    rule = fsm.state_rule[state]
    n0 = SEED_SETS
    n = sorted_ids.shape[0]
    # the lists hold the trie's ids (`sorted_ids[j]`, ascending with j): from j_start's on they go
    first = sorted_ids[j_start] if j_start < n else FAR
    _forget_from(acc_idx, n_list, N_ACCEPTED, first)
    _forget_from(unc_idx, n_list, N_UNCERTAIN, first)
    if record:
        _forget_from(outs.rec_acc0, n_list, N_ACC0, first)
        _forget_from(outs.rec_ends, n_list, N_ENDS, first)
        _forget_from(outs.rec_pass, n_list, N_PASS, first)
    if j_start == 0:
        chart.meta[META_N_SETS] = n0
    comp[0] = 1 if start_rule_may_end(fsm, chart) else 0
    track = task.track and fsm.rule_rep_lo[rule] >= 0
    _self_loop_bytes(fsm, state, loop)
    fail_len = NO_FAIL
    fail_class = REJECTED
    fail_detail = D_REJECTED  # what the tokens under the rejected prefix owe (`record`)
    path[0] = state
    path_valid = 0  # path[:path_valid + 1] holds the states of the last token walked
    meter = scratch.meter
    j = j_start
    m = 0  # with `only_marked`: marked[m] is the next token to classify
    prev_begin = -1  # the last token classified in this call (-1: none yet)
    prev_len = 0
    while j < n:
        meter[0] += 1 + ITEM_UNITS * (take_work(chart) + take_work(charts.union) + take_work(charts.every))
        if meter[1] > 0 and meter[0] >= meter[1] and j > j_start:
            chart.meta[META_N_SETS] = n0  # the budget is spent: resume from token j
            return PAUSED, j, CHART_MAIN
        jumped = False
        if only_marked:
            while m < marked.shape[0] and marked[m] < j:
                m += 1
            if m == marked.shape[0]:
                break
            jumped = marked[m] != j
            j = marked[m]
        tid = sorted_ids[j]
        begin = token_offsets[tid]
        length = token_offsets[tid + 1] - begin
        lcp = shared_with_previous(sorted_lcp, j, j_start)
        if jumped:  # the lcp table holds neighbours only: compare with the last token classified
            lcp = common_prefix(token_bytes, begin, length, prev_begin, prev_len) if prev_begin >= 0 else 0
        prev_begin = begin
        prev_len = length
        if fail_class == REJECTED and under_rejected_prefix(lcp, fail_len):
            # the whole trie subtree under the rejected prefix: jump when the prefix is a token
            if record and fail_detail != D_REJECTED:
                _record(outs, tid, fail_detail)
            j = _reject(outs, sorted_ids, subtree_end, j, length, fail_len, only_marked, record, fail_detail)
            continue
        reached = -1  # where the token leaves A's machine, once known (-1: the parse below finds it)
        if pure_row[state] >= 0:
            # PURE WALK: from a pure state the Earley sets are single items, so the parse is a
            # DFA walk, and comp(d) is "the state after d bytes is final". All bytes read |-
            # accepted; a missing edge at byte d and no state on the way final |- t[:d+1]
            # rejected (A cannot have ended, nothing else can follow); a missing edge after a
            # final state on the way |- the context decides, as after the parse below
            # TRIE-SHARE: the bytes this token shares with the last one walked are not read again
            start = lcp if lcp < path_valid else path_valid
            walked, q = dfa_walk(pure, path, start, token_bytes, begin, length)
            path_valid = walked
            if walked < length and q < 0:
                reuse_sets(chart, n0, lcp)
                ended = False
                for d in range(walked + 1):
                    comp[d] = 1 if fsm.is_final[path[d]] else 0
                    ended = ended or comp[d] == 1
                if not ended:
                    fail_len = walked + 1
                    fail_class = REJECTED
                    fail_detail = D_REJECTED
                    j = _reject(outs, sorted_ids, subtree_end, j, length, fail_len, only_marked, record, fail_detail)
                    continue
                reached = walked
            inside = walked == length
        else:
            inside = True
            for d in range(length):
                if not loop[token_bytes[begin + d]]:
                    inside = False
                    break
        if inside:
            _accept(outs, tid, record)
            if track:  # a walk that stays in pure states or loops on s completes no copy
                loops[tid] = 0
                exits[tid] = 0
                if pure_row[state] < 0 and comp[0] == 1:
                    exits[tid] = _may_exit(follow1, rule, comp, token_bytes, begin, length, False)
            fail_len = NO_FAIL
            reuse_sets(chart, n0, lcp)  # keep only the sets this token shares with the last parsed one
            j += 1
            continue
        if reached < 0:
            if under_rejected_prefix(lcp, fail_len):  # never past the byte the last token died at
                lcp = fail_len - 1 if fail_len - 1 < lcp else lcp
            common = reuse_sets(chart, n0, lcp)
            reached = length
            meter[0] += STEP_UNITS * (length - common)
            for d in range(common, length):
                status = advance_byte(fsm, chart, token_bytes[begin + d])
                if status == EMPTY:
                    reached = d
                    break
                if status != OK:
                    chart.meta[META_N_SETS] = n0
                    return status, j, CHART_MAIN
                comp[d + 1] = 1 if start_rule_may_end(fsm, chart) else 0
        if reached == length:
            _accept(outs, tid, record)
            if track:
                loops[tid] = copies_completed(fsm, chart, rule)
                exits[tid] = _may_exit(follow1, rule, comp, token_bytes, begin, length, True)
            fail_len = NO_FAIL
            j += 1
            continue
        # A may end inside t (at the places d with comp[d] == 1): what follows A decides
        meter[0] += CONTEXT_UNITS
        status, which, cls, fail_len, agrees = _decide_by_context(fsm, charts, context, la, scratch, token_bytes,
                                                                   rule, begin, length, reached)
        if status != OK:
            chart.meta[META_N_SETS] = n0
            return status, j, which
        fail_class = cls  # only a rejected prefix lets the tokens under it be skipped
        fail_detail = D_REJECTED
        if record:
            for d in range(reached + 1):
                if comp[d] == 1 and d < length:
                    # A may end inside t: what follows decides, so the class is not A's alone; the
                    # same holds for every token under the rejected prefix (A ends at the same d)
                    _record(outs, tid, D_ENDS if agrees else D_ENDS_LOOKAHEAD_REJECTS)
                    fail_detail = D_ENDS
                    break
        out[tid] = cls
        if cls == ACCEPTED:
            acc_idx[n_list[N_ACCEPTED]] = tid
            n_list[N_ACCEPTED] += 1
        elif cls == UNCERTAIN:
            unc_idx[n_list[N_UNCERTAIN]] = tid
            n_list[N_UNCERTAIN] += 1
        j = _reject(outs, sorted_ids, subtree_end, j, length, fail_len, only_marked, record, fail_detail) if cls == REJECTED \
            else j + 1
    chart.meta[META_N_SETS] = n0
    return OK, n, CHART_MAIN
