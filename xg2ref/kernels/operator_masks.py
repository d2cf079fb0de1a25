"""The masks of WGrammar's operators (WGrammar §3.3), the CPU kernels: a mask stored as a list of
token ids (the allowed ones, or the rejected ones) written into bitmask words, and a mask made as
the union of token sets (xg2ref/baselines/wgrammar/cache.py).

    allowed list  A:   out = 0;   for t in A: bit t of out := 1
    rejected list R:   out = 1 for every id below vocab_size, 0 past it;   for t in R: bit t := 0
    union:             out = stops (or 0);   out |= words(S) for each set S

Word w holds tokens 32w..32w+31, bit j = token 32w + j (xg2ref/bitmask.py). Each returns the
number of tokens allowed (the matcher reports whether any token is masked out).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def popcount_words(words) -> int:
    """The set bits of uint32 `words`."""
    total = 0
    for w in range(words.shape[0]):
        x = np.uint64(words[w])
        while x:
            x &= x - np.uint64(1)
            total += 1
    return total


@njit(cache=True)
def write_allowed(ids, out) -> int:
    """`out` (uint32 words) := the tokens of `ids` (int32, distinct); returns len(ids)."""
    out[:] = 0
    for k in range(ids.shape[0]):
        t = ids[k]
        out[t >> 5] |= np.uint32(1) << np.uint32(t & 31)
    return ids.shape[0]


@njit(cache=True)
def write_rejected(ids, vocab_size, out) -> int:
    """`out` := every token below `vocab_size` but those of `ids` (int32, distinct); returns the
    number allowed."""
    out[:] = np.uint32(0xFFFFFFFF)
    if vocab_size & 31:
        out[out.shape[0] - 1] = np.uint32((1 << (vocab_size & 31)) - 1)
    for k in range(ids.shape[0]):
        t = ids[k]
        out[t >> 5] &= ~(np.uint32(1) << np.uint32(t & 31))
    return vocab_size - ids.shape[0]
