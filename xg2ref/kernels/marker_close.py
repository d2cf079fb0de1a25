"""Token budgets on rules with a stop/suffix marker (xgrammar 0.2.8's budget close; the matcher's
protocol is xg2ref/marker_close.py): the current Earley set rebuilt with an expired rule
occurrence completed without its marker.

    CLOSE   [j, k, R -> s] past its deadline, R has `max_tokens` and a marker, and the bytes
            j..k are a word of R's body  |-  set k is rebuilt: its items that are not past their
            deadline, then for each such occurrence (R, j) the items of set j waiting for R
            moved past it, as COMPLETE would move them if R had ended, and the closure

Items past their deadline do not survive the rebuild (they may read nothing more); items the
closure makes are kept whatever their deadline (the caller decides whether to enforce it).
"""

from __future__ import annotations

from numba import njit

from .earley import (DUPLICATE, LEO_UNKNOWN, META_GEN, META_POOL, NO_DEADLINE, OK, _member_open, _with_member, add_item,
                     close_set)


@njit(cache=True, _nrt=False)
def _copy_item(chart, src, dst):
    chart.item_state[dst] = chart.item_state[src]
    chart.item_origin[dst] = chart.item_origin[src]
    chart.item_deadline[dst] = chart.item_deadline[src]
    chart.item_char_deadline[dst] = chart.item_char_deadline[src]
    chart.item_count[dst] = chart.item_count[src]
    chart.item_leo[dst] = LEO_UNKNOWN


# CLOSE (module docstring), for the occurrences (rules[x], origins[x]), x < n
@njit(cache=True, _nrt=False)
def close_without_marker(fsm, chart, k, token, rules, origins, finals, n):
    """Rebuild set k (the current set) by CLOSE. `finals[x]`: a final state of rules[x] without
    edges, whose item [origins[x], k] completes the occurrence (its events, captures, are then
    those of any completion), or -1: the waiters are moved past it here. The new set is built past the set's end and
    copied over it once complete, so a NEED_* status (the caller grows the chart and calls
    again) leaves the set as it was. Returns a status code."""
    begin = chart.set_start[k]
    end0 = chart.set_start[k + 1]
    chart.meta[META_GEN] += 1
    chart.meta[META_POOL] = chart.set_pool[k]
    end = end0
    for p in range(begin, end0):
        if chart.item_deadline[p] >= token:
            r = add_item(chart, end0, end, chart.item_state[p], chart.item_origin[p], chart.item_deadline[p],
                         chart.item_char_deadline[p], chart.item_count[p])
            if r < DUPLICATE:
                return -r
            if r >= 0:
                end = r
    first = end
    for x in range(n):
        rule, j = rules[x], origins[x]
        if finals[x] >= 0:  # R ends in a final state without edges: the item ends it (COMPLETE does the rest)
            r = add_item(chart, end0, end, finals[x], j, token - 1, NO_DEADLINE, 0)
            if r < DUPLICATE:
                return -r
            if r >= 0:
                end = r
            continue
        tagged = fsm.rule_member[rule]
        for q in range(chart.set_start[j], chart.set_start[j + 1]):
            s2 = chart.item_state[q]
            for e in range(fsm.ref_indptr[s2], fsm.ref_indptr[s2 + 1]):
                if fsm.ref_rule[e] != rule:
                    continue
                c2 = chart.item_count[q]
                if tagged >= 0 and fsm.rule_required[fsm.state_rule[s2]] >= 0:
                    if not _member_open(chart, c2, tagged >> 1):
                        continue
                    c2 = _with_member(chart, c2, tagged, k)
                    if c2 < 0:
                        return -c2
                r = add_item(chart, end0, end, fsm.ref_dst[e], chart.item_origin[q], chart.item_deadline[q],
                             chart.item_char_deadline[q], c2)
                if r < DUPLICATE:
                    return -r
                if r >= 0:
                    end = r
    status, end = close_set(fsm, chart, k, end0, first, end)
    if status != OK:
        return status
    for p in range(end0, end):
        _copy_item(chart, p, begin + p - end0)
    chart.set_start[k + 1] = begin + end - end0
    chart.set_pool[k] = chart.meta[META_POOL]
    return OK
