"""Class masks expanded to token masks (CFGzip §3.1's gather), the CPU kernel.

An engine that runs over one representative per token class fills a bitmask over classes; the
token bitmask is its gather through `class_of`:

    token t allowed  iff  bit class_of[t] of the class bitmask is set  (class_of[t] < n_classes)

A token whose class is at or past `n_classes` (the class of tokens never allowed, which the
inner engine never sees) is always 0: the class bitmask holds 0 there (its caller clears it). Word w of the token bitmask holds tokens 32w..32w+31, bit
j = token 32w + j, as xgrammar's bitmasks do (xg2ref/bitmask.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def expand_class_bitmask(class_words, class_of, n_classes, out_words):
    """Fill `out_words` (uint32[ceil(V / 32)], an int32 row viewed as uint32) from `class_words`
    (uint32, a bitmask over classes) through `class_of` (int32[V]); returns the number of tokens
    allowed.

    The caller guarantees that `class_words` covers every class in `class_of` and that its bits
    at `n_classes` and past are 0 (so the never class reads 0 with no test): the loop is then
    branch-free, one shift and one OR per token (ten times faster than testing each class).
    """
    n_tokens = class_of.shape[0]
    full = n_tokens // 32
    one = np.uint32(1)
    for w in range(full):
        word = np.uint32(0)
        base = 32 * w
        for j in range(32):
            c = class_of[base + j]
            word |= ((class_words[c >> 5] >> np.uint32(c & 31)) & one) << np.uint32(j)
        out_words[w] = word
    for w in range(full, out_words.shape[0]):
        out_words[w] = 0
    for t in range(32 * full, n_tokens):
        c = class_of[t]
        out_words[full] |= ((class_words[c >> 5] >> np.uint32(c & 31)) & one) << np.uint32(t - 32 * full)
    allowed = 0
    for w in range(out_words.shape[0]):  # (popcount, SWAR)
        x = out_words[w]
        x = x - ((x >> one) & np.uint32(0x55555555))
        x = (x & np.uint32(0x33333333)) + ((x >> np.uint32(2)) & np.uint32(0x33333333))
        x = (x + (x >> np.uint32(4))) & np.uint32(0x0F0F0F0F)
        x = x + (x >> np.uint32(8))  # (the byte counts summed by shifts: no product to overflow)
        allowed += (x + (x >> np.uint32(16))) & np.uint32(0x3F)
    return allowed
