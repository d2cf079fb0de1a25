"""Entries of equal content stored once (XGrammar §3.1, Figure 5: the storage of the token-mask
cache, made smaller; XGrammar-2 §3.4: the classes of states that share an entry).

State classes (mask/state_classes.py) give one entry to states known to have the same mask
before any is built; many more states turn out to have the same one once built. A string of
1 to 1,024 characters of a pattern, say, is a machine of thousands of states, one per length
read, and every state that still has more characters left than the longest token has the same
accepted and uncertain tokens. So a new entry is first looked up by its content:

    SHARED   an entry already stored has the same accepted and the same uncertain tokens
             |-  the class's states point at that entry; nothing is stored
    NEW      otherwise  |-  the entry is stored (kernels/entry_build.py `store_entry`) and its
             key entered in the table

The table (MaskCacheArrays.content_key, content_entry) is open addressing over a power-of-two
number of slots, at most half of them used; a key is 62 bits of a hash of the content's sizes
and of up to KEY_SAMPLE of each list's indices, evenly spaced (0: an empty slot). Equal keys are
compared in full (`same_content`), so a collision costs a comparison, never a wrong mask. Only
the builder reads the table (under the cache's lock); fills never do.

Over 40 JSONSchemaBench schemas built in full on Llama-3, 7,075 entries of one schema are 626
contents; the five largest grammars keep 7% to 28% of the bytes they held.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .mask_fill import KIND_ACCEPTED, KIND_REJECTED

KEY_SAMPLE = 256  # indices of each list that go into a key
_P = 2147483647  # 2**31 - 1: both halves of a key are hashes modulo it (no int64 overflow)


@njit(cache=True, nogil=True, _nrt=False)
def _mix(h1, h2, ids):
    """Both halves of a key advanced over up to KEY_SAMPLE of `ids`, evenly spaced."""
    step = max(1, ids.shape[0] // KEY_SAMPLE)
    for q in range(0, ids.shape[0], step):
        x = np.int64(ids[q])
        h1 = (h1 * 1000003 + x + 1) % _P
        h2 = (h2 * 999983 + x + 7) % _P
    return (h1 * 1000003 + 5) % _P, h2


@njit(cache=True, nogil=True, _nrt=False)
def content_key(acc, unc):
    """The table key of an entry of accepted `acc` and uncertain `unc` (sorted indices)."""
    h1 = (np.int64(acc.shape[0]) * 1000003 + unc.shape[0] + 1) % _P
    h2 = (np.int64(unc.shape[0]) * 999983 + acc.shape[0] + 7) % _P
    h1, h2 = _mix(h1, h2, acc)
    h1, h2 = _mix(h1, h2, unc)
    return (h1 << 31 | h2) + 1


@njit(cache=True, nogil=True, _nrt=False)
def same_content(cache, e, acc, unc, sorted_ids):
    """Entry e of `cache` accepts exactly `acc` and leaves exactly `unc` uncertain."""
    n_acc = acc.shape[0]
    n_unc = unc.shape[0]
    if cache.counts[e, 0] != n_acc or cache.counts[e, 2] != n_unc:
        return False
    u0 = cache.unc_indptr[e]
    for q in range(n_unc):
        if cache.unc_sorted[u0 + q] != unc[q]:
            return False
    kind = cache.entry_kind[e]
    pos = cache.list_indptr[e]
    if kind == KIND_ACCEPTED:
        for q in range(n_acc):
            if cache.list_ids[pos + q] != sorted_ids[acc[q]]:
                return False
    elif kind == KIND_REJECTED:  # the stored complement, walked as store_entry wrote it
        a = 0
        u = 0
        w = pos
        for j in range(sorted_ids.shape[0]):
            if a < n_acc and acc[a] == j:
                a += 1
            elif u < n_unc and unc[u] == j:
                u += 1
            else:
                if cache.list_ids[w] != sorted_ids[j]:
                    return False
                w += 1
    else:  # a bitset with n_acc bits, every one of acc among them
        off = cache.bitset_offset[e]
        for q in range(n_acc):
            t = sorted_ids[acc[q]]
            if (cache.bitset_words[off + (t >> 5)] >> np.int32(t & 31)) & 1 == 0:
                return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def find_same(cache, key, acc, unc, sorted_ids):
    """SHARED: the entry stored with the content of (acc, unc), or -1."""
    keys = cache.content_key
    mask = keys.shape[0] - 1
    if mask < 0:
        return -1
    i = key & mask
    while keys[i] != 0:
        if keys[i] == key and same_content(cache, cache.content_entry[i], acc, unc, sorted_ids):
            return cache.content_entry[i]
        i = (i + 1) & mask
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def enter_key(keys, entries, key, e):
    """NEW: entry e's key into the table (which has a free slot)."""
    mask = keys.shape[0] - 1
    i = key & mask
    while keys[i] != 0:
        i = (i + 1) & mask
    keys[i] = key
    entries[i] = e


@njit(cache=True, _nrt=False)
def rehash(old_keys, old_entries, keys, entries):
    """The keys of a table into a larger one (EntryStore.grow)."""
    for i in range(old_keys.shape[0]):
        if old_keys[i] != 0:
            enter_key(keys, entries, old_keys[i], old_entries[i])


def table_size(n_entries: int) -> int:
    """Slots for n_entries keys, at most half used (a power of two, at least 32)."""
    size = 32
    while size < 2 * n_entries:
        size *= 2
    return size
