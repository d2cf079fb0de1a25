"""Class masks expanded to token masks (CFGzip §3.1's gather), the CPU kernel.

An engine that runs over one representative per token class fills a bitmask over classes; the
token bitmask is its gather through `class_of`:

    token t allowed  iff  bit class_of[t] of the class bitmask is set  (class_of[t] < n_classes)

A token whose class is at or past `n_classes` (the class of tokens never allowed, which the
inner engine never sees) is always 0. Word w of the token bitmask holds tokens 32w..32w+31, bit
j = token 32w + j, as xgrammar's bitmasks do (xg2ref/bitmask.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def expand_class_bitmask(class_words, class_of, n_classes, out_words):
    """Fill `out_words` (uint32[ceil(V / 32)], an int32 row viewed as uint32) from `class_words`
    (uint32, a bitmask over classes) through `class_of` (int32[V]); returns the number of tokens
    allowed."""
    n_tokens = class_of.shape[0]
    allowed = 0
    for w in range(out_words.shape[0]):
        word = np.uint32(0)
        for j in range(32):
            t = 32 * w + j
            if t >= n_tokens:
                break
            c = class_of[t]
            if c < n_classes and (class_words[c >> 5] >> np.uint32(c & 31)) & np.uint32(1):
                word |= np.uint32(1) << np.uint32(j)
                allowed += 1
        out_words[w] = word
    return allowed
