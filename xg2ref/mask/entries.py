"""XGrammar §3.1 (Figure 5), the adaptive storage of the token-mask cache entries.

An entry stores its accepted tokens in the smallest of three forms: the list of accepted ids
(KIND_ACCEPTED), the list of rejected ids (KIND_REJECTED: accepted = regular - rejected -
uncertain) or a bitset of the accepted ids (KIND_BITSET: int32 words, the bitmask layout); its
uncertain tokens are kept as indices into the byte-sorted vocabulary so that the run-time check
can reuse shared prefixes. Every entry lives in the flat arrays of `MaskCacheArrays`, grown by
appending (`Column`) as entries are built (cache.py packs them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional

import numpy as np

from ..kernels import mask_fill as MF

KIND_ACCEPTED, KIND_REJECTED, KIND_BITSET = MF.KIND_ACCEPTED, MF.KIND_REJECTED, MF.KIND_BITSET
UNBUILT = MF.UNBUILT  # state_entry of a state whose entry is not built yet (JIT)
NO_ENTRY = MF.NO_ENTRY  # state_entry of a state without byte edges
KIND_NAMES = ("accepted list", "rejected list", "bitset")


class MaskCacheArrays(NamedTuple):
    """All entries in flat arrays (S states, E entries, W = ceil(vocab_size / 32) words).

    state_entry : int32[S]       entry of each state, NO_ENTRY for states without byte edges
    entry_state : int32[E]
    entry_kind : int8[E]         KIND_ACCEPTED / KIND_REJECTED / KIND_BITSET
    list_indptr : int64[E+1]     accepted or rejected token ids of entry e (per its kind)
    list_ids : int32[...]
    bitset_offset : int64[E]     first word of entry e's accepted bitset (KIND_BITSET only)
    bitset_words : int32[...]
    unc_indptr : int64[E+1]      uncertain tokens of entry e, as sorted-vocabulary indices
    unc_sorted : int32[...]
    regular_words : int32[W]     bitset of the regular tokens
    counts : int64[E, 3]         accepted / rejected / uncertain counts of each entry
    noexit_entry : int32[S]      entry of a counted repetition's state for counts in the NOEXIT
                                 zone (state_entry serves the FREE zone; kernels/mask_fill.py)
    ex_key, ex_entry             sorted (state << 32 | count) -> entry, for counts near a bound
    count_slack : int64[1]       the longest token's bytes (how near a bound is "near")
    """

    state_entry: np.ndarray
    entry_state: np.ndarray
    entry_kind: np.ndarray
    list_indptr: np.ndarray
    list_ids: np.ndarray
    bitset_offset: np.ndarray
    bitset_words: np.ndarray
    unc_indptr: np.ndarray
    unc_sorted: np.ndarray
    regular_words: np.ndarray
    counts: np.ndarray
    noexit_entry: np.ndarray
    ex_key: np.ndarray
    ex_entry: np.ndarray
    count_slack: np.ndarray


@dataclass(frozen=True)
class CacheStats:
    """What a cache holds, for reports (`xg2ref bench mask`)."""

    entries: int
    accepted: int
    rejected: int
    uncertain: int
    kinds: tuple  # number of entries stored as each KIND_*
    build_seconds: float
    memory_bytes: int

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {name}" for n, name in zip(self.kinds, KIND_NAMES))
        return (f"{self.entries} entries ({kinds}); tokens: {self.accepted:,} accepted, "
                f"{self.rejected:,} rejected, {self.uncertain:,} uncertain; "
                f"{self.memory_bytes / 1024:.1f} KiB, built in {self.build_seconds:.3f} s")


def pack_ids(ids: np.ndarray, words: np.ndarray) -> None:
    """Set the bits of `ids` in int32 `words`."""
    bits = np.zeros(len(words) * 32, dtype=np.bool_)
    bits[ids] = True
    words |= np.packbits(bits, bitorder="little").view(np.int32)



class Column:
    """A numpy array grown by appending (its capacity doubles); `view()` is the filled part, a
    C-contiguous view, so kernels bound to the type stay valid as it grows."""

    def __init__(self, dtype, width: Optional[int] = None):
        self.buf = np.zeros((16,) if width is None else (16, width), dtype=dtype)
        self.n = 0

    def extend(self, values) -> None:
        values = np.asarray(values, dtype=self.buf.dtype)
        k = len(values)
        if self.n + k > len(self.buf):
            grown = np.zeros((max(2 * len(self.buf), self.n + k),) + self.buf.shape[1:], dtype=self.buf.dtype)
            grown[:self.n] = self.buf[:self.n]
            self.buf = grown
        self.buf[self.n:self.n + k] = values
        self.n += k

    def view(self) -> np.ndarray:
        return self.buf[:self.n]


def arrays_layout(arrays: MaskCacheArrays) -> tuple:
    """What a bound kernel entry's types depend on: each array's dtype, rank and layout."""
    return tuple((a.dtype, a.ndim, a.flags.c_contiguous, a.flags.writeable) for a in arrays)
