"""The @njit refinement rounds of the state classes (xg2ref/mask/state_classes.py, XGrammar-2
§3.6): one round hashes every state's (label, byte edges, rule edges with their targets' labels)
(`hash_round`), the next gives equal labels exactly to states with equal tuples (`exact_labels`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, _nrt=False)
def mix(h, x):
    """One step of an order-dependent 64-bit hash (splitmix64 finalizer over h * M + x)."""
    z = h * np.uint64(0x9E3779B97F4A7C15) + np.uint64(x) + np.uint64(0x632BE59BD9B4E019)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, _nrt=False)
def hash_round(fsm, prev, out, lo, hi):
    """out[s] = hash of class_d+1(s)'s tuple from the class_d labels `prev`, for lo <= s < hi."""
    for s in range(lo, hi):
        h = mix(np.uint64(0), prev[s])
        for e in range(fsm.byte_indptr[s], fsm.byte_indptr[s + 1]):
            h = mix(h, fsm.byte_lo[e] * 256 + fsm.byte_hi[e])
            h = mix(h, prev[fsm.byte_dst[e]])
        h = mix(h, 1 << 20)  # separates byte edges from rule edges
        for e in range(fsm.ref_indptr[s], fsm.ref_indptr[s + 1]):
            h = mix(h, fsm.ref_rule[e])
            h = mix(h, prev[fsm.ref_dst[e]])
        out[s] = h


@njit(cache=True, _nrt=False)
def same_tuple(fsm, prev, s, r):
    """Whether states s and r have equal class_d+1 tuples given the exact labels `prev`."""
    if prev[s] != prev[r]:
        return False
    bs, br = fsm.byte_indptr[s], fsm.byte_indptr[r]
    n = fsm.byte_indptr[s + 1] - bs
    if fsm.byte_indptr[r + 1] - br != n:
        return False
    for k in range(n):
        if (fsm.byte_lo[bs + k] != fsm.byte_lo[br + k] or fsm.byte_hi[bs + k] != fsm.byte_hi[br + k]
                or prev[fsm.byte_dst[bs + k]] != prev[fsm.byte_dst[br + k]]):
            return False
    rs, rr = fsm.ref_indptr[s], fsm.ref_indptr[r]
    n = fsm.ref_indptr[s + 1] - rs
    if fsm.ref_indptr[r + 1] - rr != n:
        return False
    for k in range(n):
        if fsm.ref_rule[rs + k] != fsm.ref_rule[rr + k] or prev[fsm.ref_dst[rs + k]] != prev[fsm.ref_dst[rr + k]]:
            return False
    return True


UNLABELLED = -1  # a state of the run not given a label yet (`exact_labels`)


@njit(cache=True, _nrt=False)
def exact_labels(fsm, prev, hashes, order, out):
    """Dense exact labels of round d+1: states sorted by hash (`order`); within a run of equal
    hashes, a state takes the label of the first state of the run with an equal tuple, or a new
    label. Returns the number of labels."""
    n = order.shape[0]
    labels = 0
    i = 0
    while i < n:
        j = i
        while j < n and hashes[order[j]] == hashes[order[i]]:
            j += 1
        # run order[i:j]: compare each with the earlier distinct members of the run
        for a in range(i, j):
            s = order[a]
            out[s] = UNLABELLED
            for b in range(i, a):
                r = order[b]
                if out[r] != UNLABELLED and same_tuple(fsm, prev, s, r):
                    out[s] = out[r]
                    break
            if out[s] == UNLABELLED:
                out[s] = labels
                labels += 1
        i = j
    return labels
