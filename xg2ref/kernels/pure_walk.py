"""The PURE WALK shortcut of entry building (`classify.classify_tokens`) and the walk of a
rule's lookahead filter (XGrammar §3.2's lookahead assertions, xg2ref/lookahead.py).

PURE WALK. A state q is *pure* when it has no rule edges and its byte edges do not overlap (and,
in a counted repetition or an unordered rule, it is not final): an item [0, k, A -> q] is then the whole Earley set
(nothing to predict; a final q completes A at origin 0, which has no parent in the set the walk
starts from: all it says is that A may end here) and a byte moves it to at most one state. From
a pure state the parse is a table walk (`dfa_walk` over the `PureTable` of `mark_pure_states`
and `fill_pure_next`), and comp(d) (A may end after d bytes) is "the state after d bytes is
final":

    all bytes of t read through pure states                |-  t accepted
    byte d has no edge, no state on the way final          |-  t[:d+1] rejected
    byte d has no edge, some state on the way final        |-  the context decides (classify.py)

LOOKAHEAD. `filter_walk` runs the rest of a token through a rule's lookahead filter automaton.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit


class PureTable(NamedTuple):
    """The pure-state table (`mark_pure_states`, `fill_pure_next`).

    pure_row : int32[S]         row of a pure state, -1 for the others
    pure_next : int32[rows, B]  the state a byte of each class leads to from a pure state, -1
                                for none
    byte_class : int32[256]     the class of each byte (`byte_classes`), B classes
    """

    pure_row: np.ndarray
    pure_next: np.ndarray
    byte_class: np.ndarray


# BYTE CLASSES: bytes that every byte edge of the grammar either reads or not, together, lead to
# the same state from any state; the table keeps one column per class (a JSON grammar has a few
# dozen), not one per byte.
def byte_classes(byte_lo: np.ndarray, byte_hi: np.ndarray) -> np.ndarray:
    """int32[256]: the class of each byte, the classes cut at every edge's first byte and after
    its last (numbered from 0, in byte order)."""
    cuts = np.zeros(257, dtype=bool)
    cuts[0] = True
    cuts[np.asarray(byte_lo, dtype=np.int64)] = True
    cuts[np.asarray(byte_hi, dtype=np.int64) + 1] = True
    return (np.cumsum(cuts[:256]) - 1).astype(np.int32)


@njit(cache=True, _nrt=False)
def mark_pure_states(fsm, lo, hi, rows, max_rows, pure_row):
    """pure_row[q] = a row number, from `rows` on, for every *pure* state q in [lo, hi), -1 for
    the others; returns the new row count.

    q is pure when it has no rule edges and its byte edges do not overlap (module docstring): an
    item [0, k, A -> q] is then the whole Earley set but for A's completion, and a byte moves it
    to at most one state. A final state of a counted repetition or of an unordered rule is not
    pure: whether its item may end depends on the copies or members the item carries
    (`earley.item_may_end`), which the walk does not track. At most
    `max_rows` states get a row; a state without one is parsed the general way, so which states
    get rows never changes a result.
    """
    for q in range(lo, hi):
        pure_row[q] = -1
        if rows >= max_rows or fsm.ref_indptr[q] != fsm.ref_indptr[q + 1]:
            continue
        rule = fsm.state_rule[q]
        if fsm.is_final[q] and (fsm.rule_rep_lo[rule] >= 0 or fsm.rule_required[rule] >= 0):
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
def fill_pure_next(fsm, lo, hi, pure):
    """pure_next[pure_row[q], byte_class[b]] = the state byte b leads to from pure state q in
    [lo, hi), -1 for none."""
    for q in range(lo, hi):
        r = pure.pure_row[q]
        if r < 0:
            continue
        pure.pure_next[r, :] = -1
        for e in range(fsm.byte_indptr[q], fsm.byte_indptr[q + 1]):
            for c in range(pure.byte_class[fsm.byte_lo[e]], pure.byte_class[fsm.byte_hi[e]] + 1):
                pure.pure_next[r, c] = fsm.byte_dst[e]


@njit(cache=True, _nrt=False)
def dfa_walk(pure, path, start, token_bytes, begin, length):
    """Read a token through pure states only, from path[start]: the state after its first
    `start` bytes (path[0] is the state the walk begins in; the caller's sorted neighbours
    share those bytes, TRIE-SHARE). Returns (d, q): d bytes were read and q is the state
    reached (q == -1: byte d has no edge; d < length and q >= 0: q is not pure, the general
    parse must decide). Afterwards path[k] holds the state after k bytes for every k <= d."""
    pure_row, pure_next, byte_class = pure.pure_row, pure.pure_next, pure.byte_class
    q = path[start]
    for d in range(start, length):
        r = pure_row[q]
        if r < 0:
            return d, q
        nxt = pure_next[r, byte_class[token_bytes[begin + d]]]
        if nxt < 0:
            return d, nxt
        q = nxt
        path[d + 1] = q
    return length, q


@njit(cache=True, _nrt=False)
def filter_walk(la_next, la_final, row, token_bytes, lo, hi):
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


