"""XGrammar-2 §3.4 and Appendix D (Table 6): the Earley recognizer over per-rule byte FSMs.

An Earley item is `(state, origin)`: a global FSM state (which fixes its rule, see
`FSMArrays.state_rule`) and the byte position where that rule's match began. In the paper's
notation the item `[i, k, A -> mu . nu]` has origin i, lives in set k, and the FSM state plays
the role of the dot. Set k holds every item reachable after reading k bytes. The three
inference rules, with `A -x-> t` meaning an FSM edge of A's machine:

    PREDICT   [i, k, A -> s]   and  s -B-> t         |-  [k, k, B -> start(B)]
              (Aycock-Horspool)     and  B nullable   |-  [i, k, A -> t]
    SCAN      [i, k, A -> s]   and  s -byte-> t       |-  [i, k+1, A -> t]
    COMPLETE  [j, k, B -> f]   with f final, j < k,
              and  [i, j, A -> s]   with s -B-> t     |-  [i, k, A -> t]

Each rule is one kernel (`predict`, `scan`, `complete`, and `loop_counted` for LOOP below),
written under the inference rule it applies in Table 6's notation; `close_set` applies PREDICT,
LOOP and COMPLETE until nothing changes, and `advance_byte` is SCAN followed by `close_set`.

Completion with j == k never has to look back: such a B derives the empty string, and the
nullable half of PREDICT already advanced every item waiting on it, including items added to
set k later (the Aycock-Horspool fix for nullable rules). Left recursion is harmless
(`[k, k, A -> start(A)]` is predicted once per set), right recursion and ambiguity only add
items, and each set is deduplicated through an open-addressing hash table.

Sets are never modified once complete, so the chart is its own history: rolling back n bytes
is `n_sets -= n`. Everything here is a module-level function over flat numpy arrays
(`FSMArrays`, `Chart`), compiled with `numba.njit(cache=True)`; under NUMBA_DISABLE_JIT=1
the same functions run as plain Python.

Token budgets (rule option `max_tokens=N`, xgrammar 0.2.8's semantics). Every item carries a
deadline, the index of the last token its rule occurrence may read (NO_DEADLINE: none):

    PREDICT   B predicted while token t is read (t = -1 before the first token)
              |-  deadline(start(B)) = min(t + N_B, deadline(parent))   (just the parent's
                                                                         when B has no budget)
              where t + N_B = -1 (N_B = 0 before the first token) means no deadline, whatever
              the parent's: xgrammar 0.2.8 stores "none" as -1, and its arithmetic lands there
    SCAN, TOKEN, COMPLETE keep the deadline of the item that moves (for COMPLETE, the parent's)

An item reached twice keeps the larger deadline (two contexts: it lives while either does),
and the set is closed again when a deadline rises. When the matcher enforces budgets
(`meta[META_ENFORCE]`), an item whose deadline is below the token index `meta[META_TOKEN]`
does not SCAN or TOKEN: its derivation may read no more tokens. When and whether to enforce is
the matcher's decision (matcher.py).

Character budgets (`max_chars=C`) work the same way on code points, inside the kernel: every set
k knows how many code points its bytes hold (`set_chars[k]`), PREDICT gives
`min(set_chars[k] + C, parent's)`, and before a byte that starts a code point:

    CHAR-ENFORCE  some scannable item of set k has its char deadline <= set_chars[k], and some
                  has not or set k is a sentence  |-  those items do not SCAN this byte
                  (otherwise the budget gives way for this code point)

A stop/suffix rule with a character budget ends without its marker once the budget is spent
(grammar/spent_close.py): its alternative r_spent has `rule_char_budget` SPENT_CLOSE (no budget
of its own: its items inherit r's deadlines) and

    CLOSE     [j, k, r_spent -> f], f final, may COMPLETE only if its char deadline <= set_chars[k]
              (SPENT_CLOSE_NULLABLE: PREDICT passes over r_spent under the same test)

Counted repetitions (XGrammar-2 §3.6, xg2ref/grammar/repetition.py). A rule R with
`rule_rep_lo[R] >= 0` matches its machine's language between lo and hi times
(`rule_rep_hi`, REPEAT_UNBOUNDED for none), and its items carry a count c, the passes completed
before the current one (0 for every other item):

    LOOP      [i, k, R -> f, c], f final, c + 1 < hi      |-  [i, k, R -> start(R), c + 1]
    END       R's item [i, k, R -> f, c] may complete (COMPLETE, a sentence) only if
              f final and lo <= c + 1
    PREDICT   gives count 0; SCAN, TOKEN and the parent side of COMPLETE keep the item's count

The machine never accepts the empty string (the repetition pass only counts machines that
read at least one byte), so LOOP never closes on itself and a counted item is one item, not
hi of them. Three ranges of counts are stand-ins used while building mask-cache entries,
where the count is not known: FREE (LOOP and END always allowed), NOEXIT (LOOP always, END
never) and STRICT (neither); they add one per LOOP like any count.

Unordered members (JSON Schema's `any_order`, xg2ref/frontends/json_schema/objects.py). A rule M with
`rule_required[M] >= 0` reads members in any order, each at most once: its machine references
member rules K (`rule_member[K] = 2 * j + required`), and its items carry the set S of member
numbers seen, as an index into the chart's pool of (parent set, member) links (index 0 is the
empty set; each set adds its links after those of the set before it, so rolling back the sets
rolls back the pool). With `s -K-> t` an edge of M's machine, K a member with number j:

    PREDICT   [i, k, M -> s, S], j not in S                 |-  [k, k, K -> start(K)]
    COMPLETE  [j', k, K -> f], [i, j', M -> s, S], j not in S  |-  [i, k, M -> t, S + j]
    END       [i, k, M -> f, S] may complete only if S holds the M's required members

(PREDICT gives M's items the empty set.) Members never derive the empty string. Two stand-in
sets serve the mask-cache entries of M's states, where S is not known: ALL (FREE_BASE and up:
every guard passes, and stays ALL) and NONE (from STRICT_BASE below FREE_BASE: every guard
fails). Whatever the real S, its derivations are between NONE's and ALL's.

Leo items (J. Leo 1991, "A general context-free parsing algorithm running in linear time on
every LR(k) grammar without using lookahead"). Under right recursion COMPLETE walks a chain:
with `elements ::= value elements_rest` and `elements_rest ::= "," elements | ""`, an element
ending at k ends the `elements_rest` begun before it, which ends the `elements` before that,
one item per element read so far, at every byte of the last one. A *link* is an item
q = [i, j, A -> s] of set j whose state has exactly one reference edge s -B-> t, with t final
and without edges of any kind, 0 < i <= j, and A a rule Leo items may pass (`rule_leo`: not a
counted repetition, not unordered, and the grammar has no captures or markers, whose events
are completed items). Completing B at k through a link gives [i, k, A -> t], an item that does
nothing but complete A in set i; when set i holds exactly one item waiting for A and it is a
link q', that is all it does, so it is skipped:

    LEO       [j, k, B -> f] completes (COMPLETE's premises), q = [i, j, A -> s] a link with
              s -B-> t, and q* = TOP(q) = [i*, j*, A* -> s*] with s* -B*-> t*
              |-  [i*, k, A* -> t*]   (in place of [i, k, A -> t])
    TOP       TOP(q) = TOP(q')  when the items of set i waiting for A are one link q'
              TOP(q) = q        otherwise

Only the chain's last item enters set k; the items between would only have completed one
another. TOP(q) reads sets before j only, so it is computed once, when first needed, and kept
with the item (`Chart.item_leo`): it is rolled back with its set. Each step goes to an earlier
set (i < j) or stays in set j through a rule that ends where it begins (`t ::= root | "b"`),
going to the item that predicted it, which never cycles (`leo_top`). An item begun at 0 is
never left out (no item of set 0 is a link): `is_completed` and context expansion's CLIMB read
those. With `rule_leo` all zero (the compiler's `leo_items=False`)
COMPLETE is the plain rule, for the ablation.

Status codes: OK = 0, EMPTY = 1 (the byte is rejected: the new set would be empty),
NEED_ITEMS = 2, NEED_TABLE = 3 and NEED_SETS = 4 (the caller grows `Chart` and calls again; nothing was
committed).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# the chart's storage (chart.py), re-exported: every kernel reads these names from here
from .chart import (BEFORE_FIRST_TOKEN, DUPLICATE, EMPTY, FREE_BASE, GENERAL_STEP, LEO_UNKNOWN, MAX_CHART_ITEMS,
                    META_BUDGETS, META_CHAR_BUDGETS, META_ENFORCE, META_GEN, META_N_SETS, META_POOL, META_RAISED,
                    META_TOKEN, META_WORK, NEED_ITEMS, NEED_SETS, NEED_TABLE, NO_DEADLINE, NOEXIT_BASE, OK, STRICT_BASE,
                    Chart, add_item, grown_chart, new_chart)

# rule_char_budget of a spent-budget close (grammar/spent_close.py): CLOSE below
SPENT_CLOSE = -2
SPENT_CLOSE_NULLABLE = -3

__all__ = ["SPENT_CLOSE", "SPENT_CLOSE_NULLABLE",
           "BEFORE_FIRST_TOKEN", "DUPLICATE", "EMPTY", "FREE_BASE", "GENERAL_STEP", "LEO_UNKNOWN", "MAX_CHART_ITEMS",
           "META_BUDGETS", "META_CHAR_BUDGETS", "META_ENFORCE", "META_GEN", "META_N_SETS", "META_POOL", "META_RAISED",
           "META_TOKEN", "META_WORK", "NEED_ITEMS", "NEED_SETS", "NEED_TABLE", "NO_DEADLINE", "NOEXIT_BASE", "OK",
           "STRICT_BASE", "Chart",
           "add_item", "grown_chart", "new_chart", "expired", "item_may_end", "predict", "loop_counted", "leo_top",
           "leo_link", "complete", "close_set", "seed_chart", "init_chart", "scan", "advance_byte", "char_enforced", "is_completed"]



@njit(cache=True, _nrt=False)
def expired(chart, p):
    """Item p may not read: budgets are enforced and its deadline is below the token index."""
    return chart.meta[META_ENFORCE] != 0 and chart.item_deadline[p] < chart.meta[META_TOKEN]


@njit(cache=True, _nrt=False)
def item_may_end(fsm, chart, state, count):
    """END: an item in `state` with `count` may complete its rule (module docstring)."""
    if not fsm.is_final[state]:
        return False
    rule = fsm.state_rule[state]
    if fsm.rule_required[rule] >= 0:
        return _has_required(chart, count, fsm.rule_required[rule])
    lo = fsm.rule_rep_lo[rule]
    if lo < 0 or count >= FREE_BASE:
        return True
    if count >= STRICT_BASE:
        return False
    return count + 1 >= lo


@njit(cache=True, _nrt=False)
def _has_required(chart, members, need):
    """END of an unordered rule: the set `members` holds `need` required members."""
    if members >= FREE_BASE:
        return True
    if members >= STRICT_BASE:
        return False
    n = 0
    while members > 0:
        n += chart.pool_member[members] & 1
        members = chart.pool_parent[members]
    return n >= need


@njit(cache=True, _nrt=False)
def _member_open(chart, members, j):
    """PREDICT / COMPLETE guard: member j is not in the set `members`."""
    if members >= FREE_BASE:
        return True
    if members >= STRICT_BASE:
        return False
    while members > 0:
        if chart.pool_member[members] >> 1 == j:
            return False
        members = chart.pool_parent[members]
    return True


@njit(cache=True, _nrt=False)
def _with_member(chart, members, tagged, k):
    """The set `members` plus the member `tagged` (2 * j + required), as a pool index: a link
    made earlier while building set k is reused, so equal sets reached alike are one index.
    Returns -NEED_ITEMS when the pool is full."""
    if members >= FREE_BASE:
        return members
    for n in range(chart.set_pool[k - 1] if k > 0 else 1, chart.meta[META_POOL]):
        if chart.pool_parent[n] == members and chart.pool_member[n] == tagged:
            return n
    n = chart.meta[META_POOL]
    if n >= chart.pool_parent.shape[0]:
        return -NEED_ITEMS
    chart.pool_parent[n] = members
    chart.pool_member[n] = tagged
    chart.meta[META_POOL] = n + 1
    return n


@njit(cache=True, _nrt=False)
def _may_loop(fsm, rule, count):
    """LOOP is allowed for a counted item of `rule` with `count` in a final state."""
    if count >= NOEXIT_BASE:
        return True
    if count >= STRICT_BASE:
        return False
    return count + 1 < fsm.rule_rep_hi[rule]


@njit(cache=True, _nrt=False)
def _child_deadline(fsm, chart, rule, parent_deadline):
    """The deadline of rule `rule` predicted now under a parent with `parent_deadline`."""
    budget = fsm.rule_budget[rule]
    if budget < 0:
        return parent_deadline
    own = chart.meta[META_TOKEN] + budget
    if own < 0:  # -1 (max_tokens=0 before the first token) is xgrammar's "none": no deadline at all
        return NO_DEADLINE
    if own > NO_DEADLINE:
        own = NO_DEADLINE
    return own if own < parent_deadline else parent_deadline


@njit(cache=True, _nrt=False)
def _child_char_deadline(fsm, chart, rule, k, parent_deadline):
    """The character deadline of rule `rule` predicted in set k under a parent's."""
    budget = fsm.rule_char_budget[rule]
    if budget < 0:
        return parent_deadline
    own = np.int64(chart.set_chars[k]) + budget
    if own > NO_DEADLINE:
        own = NO_DEADLINE
    return own if own < parent_deadline else parent_deadline


@njit(cache=True, _nrt=False)
def _closes_empty(fsm, rule):
    """Whether `rule` ends at once by CLOSE: its start state reads a spent-budget close that
    holds the empty word into a final state (predicted with its budget spent, it is nullable)."""
    s = fsm.rule_start[rule]
    for e in range(fsm.ref_indptr[s], fsm.ref_indptr[s + 1]):
        if fsm.rule_char_budget[fsm.ref_rule[e]] == SPENT_CLOSE_NULLABLE and fsm.is_final[fsm.ref_dst[e]]:
            return True
    return False


# The three rules close_set applies per item are inlined into it by Numba, not left to LLVM: a
# call that is not inlined passes the machines and the chart, some 70 arrays of several words
# each, per item, and LLVM stops inlining a rule once it grows (COMPLETE with Leo items, PREDICT
# with the spent-budget close made entry builds 3x slower).
INLINE = "always"

# The inference rules of XGrammar-2 Appendix D (Table 6, left half), one kernel each. An item
# [i, k, A -> mu . nu] is (state, origin) in set k: the FSM state s of A's machine is the dot,
# an FSM edge s -B-> t reads the symbol after it, and start(B) is the dot at the left of B's
# bodies. Each rule fires from item p of set k, adds its conclusions to the set being built
# (items begin:end, growing) and returns (status, end).


# PREDICT (Table 6, rule 1):
#
#     [i, k, A -> mu . B nu]    (B -> rho) in P
#     -----------------------------------------        FSM: s -B-> t,  [k, k, B -> start(B)]
#               [k, k, B -> . rho]
#
# and for a nullable B (Aycock-Horspool), in this order, as xgrammar queues them (the order of
# completions in a set is the order of capture events, xg2ref/rule_options.py):
#
#     [i, k, A -> mu . B nu]    B =>* epsilon
#     -----------------------------------------        FSM: [i, k, A -> t]
#         [i, k, A -> mu B . nu]
@njit(cache=True, _nrt=False, inline=INLINE)
def predict(fsm, chart, k, begin, end, p):
    """PREDICT from item p of set k (items begin:end, growing). Returns (status, end).

    An unordered rule's member j is predicted only while j is not in the item's set; the
    predicted item's deadlines are its rule's budgets under the parent's (module docstring)."""
    s = chart.item_state[p]
    i = chart.item_origin[p]
    d = chart.item_deadline[p]
    cd = chart.item_char_deadline[p]
    c = chart.item_count[p]
    guarded = fsm.rule_required[fsm.state_rule[s]] >= 0
    for e in range(fsm.ref_indptr[s], fsm.ref_indptr[s + 1]):
        b = fsm.ref_rule[e]
        if guarded and fsm.rule_member[b] >= 0 and not _member_open(chart, c, fsm.rule_member[b] >> 1):
            continue
        cdb = _child_char_deadline(fsm, chart, b, k, cd)
        if fsm.rule_nullable[b] or (fsm.rule_char_budget[b] == SPENT_CLOSE_NULLABLE and cd <= chart.set_chars[k]) \
                or (fsm.rule_char_budget[b] >= 0 and cdb <= chart.set_chars[k] and _closes_empty(fsm, b)):
            r = add_item(chart, begin, end, fsm.ref_dst[e], i, d, cd, c)
            if r < DUPLICATE:
                return -r, end
            if r >= 0:
                end = r
        r = add_item(chart, begin, end, fsm.rule_start[b], k, _child_deadline(fsm, chart, b, d), cdb, 0)
        if r < DUPLICATE:
            return -r, end
        if r >= 0:
            end = r
    return OK, end


# LOOP (XGrammar-2 §3.6, counted repetitions; module docstring):
#
#     [i, k, R -> rho ., c]    R counted,  c + 1 < hi
#     -----------------------------------------------        FSM: f final
#         [i, k, R -> . rho, c + 1]
@njit(cache=True, _nrt=False, inline=INLINE)
def loop_counted(fsm, chart, k, begin, end, p):
    """LOOP from item p of set k, when it applies. Returns (status, end)."""
    s = chart.item_state[p]
    rule = fsm.state_rule[s]
    c = chart.item_count[p]
    if not fsm.is_final[s] or fsm.rule_rep_lo[rule] < 0 or not _may_loop(fsm, rule, c):
        return OK, end
    r = add_item(chart, begin, end, fsm.rule_start[rule], chart.item_origin[p], chart.item_deadline[p],
                 chart.item_char_deadline[p], c + 1)
    if r < DUPLICATE:
        return -r, end
    if r >= 0:
        end = r
    return OK, end


@njit(cache=True, _nrt=False)
def leo_link(fsm, chart, q, j):
    """Whether item q of set j is a link (module docstring, "Leo items")."""
    s = chart.item_state[q]
    e = fsm.ref_indptr[s]
    i = chart.item_origin[q]
    if fsm.ref_indptr[s + 1] != e + 1 or i == 0 or i > j or fsm.rule_leo[fsm.state_rule[s]] == 0:
        return False
    t = fsm.ref_dst[e]
    return (fsm.is_final[t] and fsm.ref_indptr[t] == fsm.ref_indptr[t + 1]
            and fsm.byte_indptr[t] == fsm.byte_indptr[t + 1] and fsm.tok_indptr[t] == fsm.tok_indptr[t + 1])


@njit(cache=True, _nrt=False)
def _next_link(fsm, chart, q):
    """TOP's step from link q = [i, j, A -> s]: the items of set i waiting for A, when they are
    one link q' (returned), else -1."""
    i = chart.item_origin[q]
    rule = fsm.state_rule[chart.item_state[q]]
    found = -1
    for x in range(chart.set_start[i], chart.set_start[i + 1]):
        s2 = chart.item_state[x]
        for e in range(fsm.ref_indptr[s2], fsm.ref_indptr[s2 + 1]):
            if fsm.ref_rule[e] == rule:
                if found >= 0:
                    return -1
                found = x
    if found < 0 or not leo_link(fsm, chart, found, i):
        return -1
    return found


# TOP (module docstring, "Leo items"), memoised in item_leo along the chain it walks:
#
#     TOP(q) = TOP(q')  when the items of set i waiting for A are one link q'
#     TOP(q) = q        otherwise
@njit(cache=True, _nrt=False)
def leo_top(fsm, chart, q):
    """TOP(q) for a link q: the item whose completion ends the chain that q's completion
    starts. Walks to the first item whose TOP is known, then writes it along the walk.

    A step that stays in one set goes from an item to the one item that predicted its rule
    there; such steps cannot cycle, since the first rule predicted in a set i > 0 has a
    predictor begun before i, which waits for it too. The count of steps that stay is a
    safety net all the same: past the number of rules, TOP(q) = q (the chain not shortened,
    always exact)."""
    x = q
    stay = 0
    while True:
        if chart.item_leo[x] != LEO_UNKNOWN:
            top = chart.item_leo[x]
            break
        following = _next_link(fsm, chart, x)
        if following < 0:
            top = x
            break
        if chart.item_origin[following] == chart.item_origin[x]:
            stay += 1
            if stay > fsm.rule_leo.shape[0]:
                chart.item_leo[q] = q
                return q
        else:
            stay = 0
        x = following
    x = q
    while chart.item_leo[x] == LEO_UNKNOWN:
        chart.item_leo[x] = top
        if x == top:
            break
        x = _next_link(fsm, chart, x)
    return top


# COMPLETE (Table 6, rule 3), with LEO (module docstring) for a waiter that is a link:
#
#     [i, j, A -> mu . B nu]    [j, k, B -> rho .]
#     -----------------------------------------------        FSM: s' -B-> t, f final, j < k
#           [i, k, A -> mu B . nu]
#
# (j == k never has to look back: the nullable half of PREDICT did it.) Into an unordered
# rule's item [i, j, M -> s', S] when B is its member j: only if j is not in S, and the item
# moves on with S + j.
@njit(cache=True, _nrt=False, inline=INLINE)
def complete(fsm, chart, k, begin, end, p):
    """COMPLETE with item p of set k as the finished [j, k, B -> rho .]. Returns (status, end)."""
    s = chart.item_state[p]
    j = chart.item_origin[p]
    if not fsm.is_final[s] or j >= k or not item_may_end(fsm, chart, s, chart.item_count[p]):
        return OK, end
    rule = fsm.state_rule[s]
    if fsm.rule_char_budget[rule] <= SPENT_CLOSE and chart.item_char_deadline[p] > chart.set_chars[k]:
        return OK, end  # CLOSE: a spent-budget close ends only when the budget is spent
    tagged = fsm.rule_member[rule]
    for q in range(chart.set_start[j], chart.set_start[j + 1]):
        s2 = chart.item_state[q]
        for e in range(fsm.ref_indptr[s2], fsm.ref_indptr[s2 + 1]):
            if fsm.ref_rule[e] == rule:
                c2 = chart.item_count[q]
                if tagged >= 0 and fsm.rule_required[fsm.state_rule[s2]] >= 0:
                    if not _member_open(chart, c2, tagged >> 1):
                        continue
                    c2 = _with_member(chart, c2, tagged, k)
                    if c2 < 0:
                        return -c2, end
                t, src = fsm.ref_dst[e], q
                if leo_link(fsm, chart, q, j):  # LEO (c2 is the count of q, a rule neither counted nor unordered)
                    src = leo_top(fsm, chart, q)
                    t = fsm.ref_dst[fsm.ref_indptr[chart.item_state[src]]]
                    c2 = chart.item_count[src]
                r = add_item(chart, begin, end, t, chart.item_origin[src], chart.item_deadline[src],
                             chart.item_char_deadline[src], c2)
                if r < DUPLICATE:
                    return -r, end
                if r >= 0:
                    end = r
    return OK, end


@njit(cache=True, _nrt=False)
def close_set(fsm, chart, k, begin, first, end):
    """The closure of set k (items begin:end, growing): PREDICT, LOOP and COMPLETE from every
    item from `first` on, the new ones included, until nothing changes. Items begin:first are
    closed already (`first` > begin: items were added to a built set; an added item completing
    a rule advances items of an earlier set, or of set k, where the nullable half of PREDICT
    advanced them already). Returns (status, end). With token budgets, a deadline that rises
    during a pass sends the closure round again from `begin` (deadlines only rise: this ends).
    """
    p = first
    while True:
        chart.meta[META_RAISED] = 0
        while p < end:
            status, end = predict(fsm, chart, k, begin, end, p)
            if status != OK:
                return status, end
            status, end = loop_counted(fsm, chart, k, begin, end, p)
            if status != OK:
                return status, end
            status, end = complete(fsm, chart, k, begin, end, p)
            if status != OK:
                return status, end
            p += 1
        if chart.meta[META_RAISED] == 0:
            chart.meta[META_WORK] += end - first  # the items closed (the work meter's count)
            return OK, end
        p = begin


@njit(cache=True, _nrt=False)
def seed_chart(fsm, chart, k, state, deadline, char_deadline, count):
    """Sets 0..k-1 empty, set k = the closure of the single item (state, origin 0, count) with
    `deadline` and `char_deadline`; set k becomes the current set. Returns a status code."""
    if chart.set_start.shape[0] < k + 2:
        return NEED_SETS
    chart.meta[META_GEN] += 1
    for q in range(k + 1):
        chart.set_start[q] = 0
        chart.set_chars[q] = 0
        chart.set_pool[q] = 1
    chart.meta[META_POOL] = 1
    r = add_item(chart, 0, 0, state, 0,
                  deadline, char_deadline, count)
    if r < 0:
        return -r
    status, end = close_set(fsm, chart, k, 0, 0, r)
    if status != OK:
        return status
    chart.set_start[k + 1] = end
    chart.set_pool[k] = chart.meta[META_POOL]
    chart.meta[META_N_SETS] = k + 1
    return OK


@njit(cache=True, _nrt=False)
def init_chart(fsm, chart):
    """Set 0: the root rule's start item, closed, before any token (token index -1). Returns a
    status code."""
    chart.meta[META_TOKEN] = BEFORE_FIRST_TOKEN
    chart.meta[META_ENFORCE] = 0
    chart.meta[META_BUDGETS] = 0
    chart.meta[META_CHAR_BUDGETS] = 0
    for r in range(fsm.rule_budget.shape[0]):
        if fsm.rule_budget[r] >= 0:
            chart.meta[META_BUDGETS] = 1
        if fsm.rule_char_budget[r] >= 0:
            chart.meta[META_CHAR_BUDGETS] = 1
    root = fsm.root_rule[0]
    chart.set_chars[0] = 0
    return seed_chart(fsm, chart, 0, fsm.rule_start[root], _child_deadline(fsm, chart, root, NO_DEADLINE),
                      _child_char_deadline(fsm, chart, root, 0, NO_DEADLINE), 0)


@njit(cache=True, _nrt=False)
def _dfa_step(fsm, chart, k, byte):
    """SCAN and the closure in the common case, without the general machinery: set k is the single
    item [i, k, A -> s] and s has no rule edges. Then SCAN gives at most one item per matching
    edge; when exactly one edge s -byte-> t matches, t has no rule edges (nothing to PREDICT)
    and t is not final or set i is empty (nothing to COMPLETE), set k+1 = {[i, k+1, A -> t]}.

    Commits and returns OK, returns EMPTY when no edge matches, GENERAL_STEP when the general step is
    needed (nothing committed). Inside a string or a number this is every byte.
    """
    p = chart.set_start[k]
    s = chart.item_state[p]
    if fsm.ref_indptr[s] != fsm.ref_indptr[s + 1] or expired(chart, p) or chart.meta[META_CHAR_BUDGETS] != 0:
        return GENERAL_STEP
    t = -1
    for e in range(fsm.byte_indptr[s], fsm.byte_indptr[s + 1]):
        if fsm.byte_lo[e] <= byte and byte <= fsm.byte_hi[e]:
            if t >= 0:
                return GENERAL_STEP
            t = fsm.byte_dst[e]
    if t < 0:
        return EMPTY
    i = chart.item_origin[p]
    if fsm.ref_indptr[t] != fsm.ref_indptr[t + 1]:
        return GENERAL_STEP
    if fsm.is_final[t] and (chart.set_start[i] != chart.set_start[i + 1] or fsm.rule_rep_lo[fsm.state_rule[t]] >= 0):
        return GENERAL_STEP
    begin = chart.set_start[k + 1]
    chart.item_state[begin] = t
    chart.item_origin[begin] = i
    chart.item_deadline[begin] = chart.item_deadline[p]
    chart.item_char_deadline[begin] = chart.item_char_deadline[p]
    chart.item_count[begin] = chart.item_count[p]
    chart.item_leo[begin] = LEO_UNKNOWN
    chart.set_chars[k + 1] = chart.set_chars[k] + ((byte & 0xC0) != 0x80)
    chart.set_pool[k + 1] = chart.set_pool[k]
    chart.set_start[k + 2] = begin + 1
    chart.meta[META_N_SETS] = k + 2
    return OK


# SCAN (Table 6, rule 2):
#
#     [i, k, A -> mu . a nu]    x_k = a
#     ---------------------------------        FSM: s -a-> t (a byte range holding x_k)
#       [i, k+1, A -> mu a . nu]
@njit(cache=True, _nrt=False)
def scan(fsm, chart, k, byte, char_enforce):
    """SCAN every item of set k over `byte` into set k+1 (from chart.set_start[k + 1] on). Items
    past their deadline do not SCAN, nor, with `char_enforce` (CHAR-ENFORCE), those past their
    character deadline. Returns (status, end): EMPTY when no item moves."""
    begin = chart.set_start[k + 1]
    end = begin
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        if expired(chart, p) or (char_enforce and chart.item_char_deadline[p] <= chart.set_chars[k]):
            continue
        for e in range(fsm.byte_indptr[s], fsm.byte_indptr[s + 1]):
            if fsm.byte_lo[e] <= byte and byte <= fsm.byte_hi[e]:
                r = add_item(chart, begin, end, fsm.byte_dst[e], chart.item_origin[p], chart.item_deadline[p],
                             chart.item_char_deadline[p], chart.item_count[p])
                if r < DUPLICATE:
                    return -r, end
                if r >= 0:
                    end = r
    if end == begin:
        return EMPTY, end
    return OK, end


@njit(cache=True, _nrt=False)
def advance_byte(fsm, chart, byte):
    """Build set k+1 from the current set k and one byte (SCAN, then the closure); commit it
    unless it is empty.

    Returns OK, EMPTY (byte rejected, chart unchanged) or a NEED_* code (chart unchanged).
    """
    k = chart.meta[META_N_SETS] - 1
    if chart.set_start.shape[0] < k + 3:
        return NEED_SETS
    begin = chart.set_start[k + 1]
    if chart.set_start[k + 1] - chart.set_start[k] == 1 and begin < chart.item_state.shape[0]:
        status = _dfa_step(fsm, chart, k, byte)
        if status != GENERAL_STEP:
            return status
    chart.meta[META_GEN] += 1
    chart.meta[META_POOL] = chart.set_pool[k]
    chart.set_chars[k + 1] = chart.set_chars[k] + ((byte & 0xC0) != 0x80)
    char_enforce = chart.meta[META_CHAR_BUDGETS] != 0 and (byte & 0xC0) != 0x80 and char_enforced(fsm, chart, k)
    status, end = scan(fsm, chart, k, byte, char_enforce)
    if status != OK:
        return status
    status, end = close_set(fsm, chart, k + 1, begin, begin, end)
    if status != OK:
        return status
    chart.set_start[k + 2] = end
    chart.set_pool[k + 1] = chart.meta[META_POOL]
    chart.meta[META_N_SETS] = k + 2
    return OK


@njit(cache=True, _nrt=False)
def char_enforced(fsm, chart, k):
    """CHAR-ENFORCE (module docstring) before a code point read from set k (or a whole token
    read through token edges: kernels/token_reads.py's TOKEN)."""
    expired = False
    alive = False
    c = chart.set_chars[k]
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        if fsm.byte_indptr[s] == fsm.byte_indptr[s + 1] and fsm.tok_indptr[s] == fsm.tok_indptr[s + 1]:
            continue  # not scannable
        if chart.item_char_deadline[p] <= c:
            expired = True
        else:
            alive = True
    if not expired:
        return False
    return alive or _set_is_sentence(fsm, chart, k)


@njit(cache=True, _nrt=False)
def _set_is_sentence(fsm, chart, k):
    root = fsm.root_rule[0]
    for p in range(chart.set_start[k], chart.set_start[k + 1]):
        s = chart.item_state[p]
        if chart.item_origin[p] == 0 and fsm.state_rule[s] == root and item_may_end(fsm, chart, s,
                                                                                     chart.item_count[p]):
            return True
    return False


@njit(cache=True, _nrt=False)
def is_completed(fsm, chart):
    """Whether the bytes read so far form a sentence: [0, k, root -> f] with f final."""
    return _set_is_sentence(fsm, chart, chart.meta[META_N_SETS] - 1)
