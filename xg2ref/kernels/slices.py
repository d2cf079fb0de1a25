"""Vocabulary slices (llguidance's slicer, used for XGrammar-2 §3.4's entries): a large class of
tokens that a state either reads whole or not, decided once for the class instead of token by
token.

A slice is a regular, prefix-closed byte language R (a DFA with every state accepting) and the
tokens of the vocabulary inside it. For a pure state s (kernels/pure_walk.py), R is *contained*
in s when every string of R is read from s through pure states; then every token of the slice
is accepted by s (the PURE-WALK rule reads all its bytes), and the entry's walk needs only the
rest of the vocabulary:

    CONTAINED  for every pair (r, q) reachable from (start of R, s) and every byte b with an
               edge r -b-> r': q is pure and q -b-> q'                  |-  R ⊆ reads(s)
    SLICE      R ⊆ reads(s), t in the slice                             |-  t accepted (and
               read inside s's rule: D_ACCEPTED)

`slice_members` finds the slice's tokens (once per vocabulary), `slice_contained` decides
CONTAINED on the product automaton (a few hundred pairs), and `merge_sorted` joins the slice's
tokens to the accepted ones the walk over the rest found.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# slice_contained gives up (no slice: the whole vocabulary is walked) beyond this many pairs
MAX_SLICE_PAIRS = 1024


@njit(cache=True, _nrt=False)
def slice_members(next_state, token_bytes, token_offsets, inside):
    """inside[k] = token k (token_bytes[token_offsets[k]:token_offsets[k + 1]]) is read by the
    slice's DFA `next_state` (int32[states, 256], -1 for no edge) from state 0 without dying."""
    for k in range(token_offsets.shape[0] - 1):
        r = 0
        ok = True
        for p in range(token_offsets[k], token_offsets[k + 1]):
            r = next_state[r, token_bytes[p]]
            if r < 0:
                ok = False
                break
        inside[k] = ok


@njit(cache=True, _nrt=False)
def slice_contained(next_state, pure, state, pairs):
    """CONTAINED (module docstring) for the slice's DFA `next_state` and FSM state `state`, by
    a search over the reachable pairs (`pairs`: int64[2 * MAX_SLICE_PAIRS] scratch). False as
    well when the pairs exceed MAX_SLICE_PAIRS."""
    n = 1
    pairs[0] = 0
    pairs[1] = state
    head = 0
    while head < n:
        r = pairs[2 * head]
        q = pairs[2 * head + 1]
        head += 1
        row = pure.pure_row[q]
        for b in range(256):
            r2 = next_state[r, b]
            if r2 < 0:
                continue
            if row < 0:
                return False
            q2 = pure.pure_next[row, pure.byte_class[b]]
            if q2 < 0:
                return False
            known = False
            for k in range(n):
                if pairs[2 * k] == r2 and pairs[2 * k + 1] == q2:
                    known = True
                    break
            if not known:
                if n == MAX_SLICE_PAIRS:
                    return False
                pairs[2 * n] = r2
                pairs[2 * n + 1] = q2
                n += 1
    return True


@njit(cache=True, _nrt=False)
def merge_step(a, i, x, out, k):
    """One step of merging ascending lists: out[k:] takes a[i:]'s items below x, then x.
    Returns the new (i, k)."""
    while i < a.shape[0] and a[i] < x:
        out[k] = a[i]
        k += 1
        i += 1
    out[k] = x
    return i, k + 1


@njit(cache=True, _nrt=False)
def merge_sorted(a, b, out):
    """out[:len(a) + len(b)] = the ascending lists a and b merged. Returns the length."""
    i = 0
    k = 0
    for x in b:
        i, k = merge_step(a, i, x, out, k)
    for q in range(i, a.shape[0]):
        out[k] = a[q]
        k += 1
    return k
