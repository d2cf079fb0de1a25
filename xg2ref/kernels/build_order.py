"""XGrammar-2 §3.5: the order in which entries are built off the token's path.

§3.5 overlaps the building of JIT entries with decoding. What to build first is what the
matcher will need first: the classes of the states nearest to where the parse stands. This
module walks the grammar's states breadth first from a set of states (the matcher's last
Earley set, or the root rule's start) and lists the classes without an entry in the order it
meets them (`reach_order`). The walk follows

    a byte or token edge s -> t                          |-  t
    a rule edge s --A--> t                               |-  start(A), and t (after A)
    a final state of rule A, a rule edge u --A--> t      |-  t (A returns to any caller)

so it over-approximates what the parse can reach (returns go to every caller of a rule, not
only those on the stack): an order, never a decision. Masks do not depend on it.

Example: in `root ::= "[" item "]"; item ::= [a-z]+` from the start of root, the walk meets
root's start, the state after "[" (a rule edge to item), item's start and root's state after
item, then item's state after a letter, and lists their classes in that order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .mask_fill import UNBUILT


@njit(cache=True, nogil=True, _nrt=False)
def rule_callers(fsm, callers_ptr, callers_dst):
    """CSR of the rule edges by the rule they reference: callers_dst[callers_ptr[A]:
    callers_ptr[A + 1]] are the targets t of the edges u --A--> t (where A returns to).
    `callers_ptr` is int64[R + 1], `callers_dst` int32[F]."""
    n_rules = fsm.rule_start.shape[0]
    for a in range(n_rules + 1):
        callers_ptr[a] = 0
    for f in range(fsm.ref_rule.shape[0]):
        callers_ptr[fsm.ref_rule[f] + 1] += 1
    for a in range(n_rules):
        callers_ptr[a + 1] += callers_ptr[a]
    # callers_ptr[A] is the cursor of A's run while the targets are placed; it ends at the
    # run's end, the next run's start, so the pointers shift back by one afterwards
    for f in range(fsm.ref_rule.shape[0]):
        a = fsm.ref_rule[f]
        callers_dst[callers_ptr[a]] = fsm.ref_dst[f]
        callers_ptr[a] += 1
    for a in range(n_rules, 0, -1):
        callers_ptr[a] = callers_ptr[a - 1]
    callers_ptr[0] = 0


@njit(cache=True, nogil=True, _nrt=False)
def _visit(t, seen, queue, tail):
    if not seen[t]:
        seen[t] = True
        queue[tail] = t
        tail += 1
    return tail


class ReachArrays(NamedTuple):
    """What `reach_order` reads and writes besides the machines (S states, C classes, R rules).

    callers_ptr : int64[R + 1]   where each rule returns to (`rule_callers`)
    callers_dst : int32[F]
    seen : bool[S]               scratch: states met
    class_seen : bool[C]         scratch: classes listed
    queue : int32[S]             scratch: the breadth-first queue
    out : int32[K]               the classes listed, nearest first (at most K)
    """

    callers_ptr: np.ndarray
    callers_dst: np.ndarray
    seen: np.ndarray
    class_seen: np.ndarray
    queue: np.ndarray
    out: np.ndarray


@njit(cache=True, nogil=True, _nrt=False)
def reach_order(fsm, reach, starts, state_entry, state_class, in_kernel):
    """The classes (in_kernel only) of states without an entry, breadth first from `starts`;
    at most reach.out.shape[0] of them are written to reach.out. Returns how many."""
    callers_ptr = reach.callers_ptr
    callers_dst = reach.callers_dst
    seen = reach.seen
    class_seen = reach.class_seen
    queue = reach.queue
    out = reach.out
    seen[:] = False
    class_seen[:] = False
    tail = 0
    for s in starts:
        tail = _visit(s, seen, queue, tail)
    head = 0
    n = 0
    while head < tail and n < out.shape[0]:
        s = queue[head]
        head += 1
        if state_entry[s] == UNBUILT:
            c = state_class[s]
            if in_kernel[c] and not class_seen[c]:
                class_seen[c] = True
                out[n] = c
                n += 1
        for q in range(fsm.byte_indptr[s], fsm.byte_indptr[s + 1]):
            tail = _visit(fsm.byte_dst[q], seen, queue, tail)
        for q in range(fsm.tok_indptr[s], fsm.tok_indptr[s + 1]):
            tail = _visit(fsm.tok_dst[q], seen, queue, tail)
        for q in range(fsm.ref_indptr[s], fsm.ref_indptr[s + 1]):
            tail = _visit(fsm.rule_start[fsm.ref_rule[q]], seen, queue, tail)
            tail = _visit(fsm.ref_dst[q], seen, queue, tail)
        if fsm.is_final[s]:
            a = fsm.state_rule[s]
            for q in range(callers_ptr[a], callers_ptr[a + 1]):
                tail = _visit(callers_dst[q], seen, queue, tail)
    return n


def callers_of(fsm) -> tuple[np.ndarray, np.ndarray]:
    """`rule_callers` into new arrays."""
    ptr = np.zeros(len(fsm.rule_start) + 1, dtype=np.int64)
    dst = np.zeros(len(fsm.ref_rule), dtype=np.int32)
    rule_callers(fsm, ptr, dst)
    return ptr, dst
