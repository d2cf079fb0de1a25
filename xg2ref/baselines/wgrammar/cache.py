"""WGrammar's global mask cache (WGrammar §3.3), with XGrammar's adaptive storage (XGrammar §3.1).

An operator's mask depends on its token sets alone, never on a stack or on the request: the
mask of a position with edges over sets S1..Sk is S1 ∪ .. ∪ Sk, plus the stop tokens where the
program may end. So one cache per vocabulary serves every program, request and step:

    key    (the sorted set ids of the position's edges, whether it may end)
    value  the mask, stored as the shortest of: the allowed ids (few allowed), the rejected ids
           (few rejected), or the packed bitmask

Set ids are interned by content per vocabulary (tokensets.py), so a key names its sets exactly;
the dict compares whole keys, so a hit is never a hash collision. The cache is bounded in bytes
and drops the least recently used masks first; hits, misses, evictions and bytes are counted.
`GlobalMaskCache.for_vocabulary` gives the process-wide cache of a vocabulary's `TokenSets`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from ...exceptions import XG2RefError
from ...kernels import operator_masks as K
from .tokensets import TokenSets

DEFAULT_LIMIT_BYTES = 256 << 20
ALLOW, DENY, WORDS = 0, 1, 2  # how an entry stores its mask


class GlobalMaskCache:
    """Masks by set-id key for one vocabulary (module docstring)."""

    _LOCK = threading.Lock()

    @classmethod
    def for_vocabulary(cls, sets: TokenSets) -> "GlobalMaskCache":
        """The cache of `sets`' set ids (one per interner; `TokenSets.for_vocabulary` gives the
        vocabulary's one interner, so one cache per vocabulary in the process)."""
        with cls._LOCK:
            cache = getattr(sets, "mask_cache", None)
            if cache is None:
                cache = sets.mask_cache = cls(sets)
        return cache

    def __init__(self, sets: TokenSets, limit_bytes: int = DEFAULT_LIMIT_BYTES) -> None:
        if limit_bytes < 0:
            raise XG2RefError(f"limit_bytes must be >= 0, got {limit_bytes}")
        self.sets = sets
        self.limit_bytes = limit_bytes
        self._entries: OrderedDict = OrderedDict()  # key -> (kind, array)
        self._lock = threading.Lock()
        self.hits = self.misses = self.evictions = self.bytes = 0
        self._stop_words = np.zeros(sets.n_words, dtype=np.uint32)
        for t in sets.stop_ids:
            self._stop_words[t >> 5] |= np.uint32(1 << (int(t) & 31))

    @property
    def hit_rate(self) -> float:
        asked = self.hits + self.misses
        return self.hits / asked if asked else 0.0

    def stats(self) -> dict:
        return {"entries": len(self._entries), "bytes": self.bytes, "hits": self.hits, "misses": self.misses,
                "evictions": self.evictions, "hit_rate": self.hit_rate}

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def compute(self, key: tuple, out: np.ndarray) -> int:
        """The mask of `key` into uint32 `out`, from the sets themselves (no cache); the number
        of tokens allowed."""
        set_ids, final = key
        out[:] = self._stop_words if final else 0
        for s in set_ids:
            out |= self.sets.words(s)
        return K.popcount_words(out)

    def fill(self, key: tuple, out: np.ndarray) -> int:
        """The mask of `key` into uint32 `out` (ceil(vocab_size / 32) words), from the cache, or
        computed and stored; the number of tokens allowed."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
        if entry is not None:
            return _expand(entry, out, self.sets.vocab_size)
        allowed = self.compute(key, out)
        entry = _store(out, self.sets.vocab_size, allowed)
        with self._lock:
            self.misses += 1
            if key not in self._entries:
                self._entries[key] = entry
                self.bytes += entry[1].nbytes
                while self.bytes > self.limit_bytes and self._entries:
                    _, old = self._entries.popitem(last=False)
                    self.bytes -= old[1].nbytes
                    self.evictions += 1
        return allowed


def _store(words: np.ndarray, vocab_size: int, allowed: int) -> tuple:
    """(kind, array, allowed): the shortest of the allowed ids, the rejected ids and the words."""
    if allowed <= len(words) or vocab_size - allowed <= len(words):
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:vocab_size]
        if allowed <= len(words):
            return ALLOW, np.flatnonzero(bits).astype(np.int32), allowed
        return DENY, np.flatnonzero(bits == 0).astype(np.int32), allowed
    return WORDS, words.copy(), allowed


def _expand(entry: tuple, out: np.ndarray, vocab_size: int) -> int:
    kind, array, allowed = entry
    if kind == WORDS:
        out[:] = array
    elif kind == ALLOW:
        K.write_allowed(array, out)
    else:
        K.write_rejected(array, vocab_size, out)
    return allowed
