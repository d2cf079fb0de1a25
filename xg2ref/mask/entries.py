"""XGrammar §3.1 (Figure 5), the adaptive storage of the token-mask cache entries.

An entry stores its accepted tokens in the smallest of three forms: the list of accepted ids
(KIND_ACCEPTED), the list of rejected ids (KIND_REJECTED: accepted = regular - rejected -
uncertain) or a bitset of the accepted ids (KIND_BITSET: int32 words, the bitmask layout); its
uncertain tokens are kept as indices into the byte-sorted vocabulary so that the run-time check
can reuse shared prefixes. Every entry lives in the flat arrays of `MaskCacheArrays`, held at
capacity by `EntryStore`; kernels/entry_build.py `store_entry` chooses the form and appends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..kernels import entry_build as EB
from ..kernels import entry_content as EC
from ..kernels import mask_fill as MF
from ..util import fixed_layout, per_vocabulary

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
    sizes : int64[N_SIZES]       how much of each array is filled, tallies (kernels/entry_build.py)
    content_key, content_entry   the entries by content (kernels/entry_content.py): an entry
                                 whose content is stored already is not stored again

    The kernels see the arrays at capacity (entries past sizes[SIZE_ENTRIES] are not there yet);
    `EntryStore.arrays` is the filled part.
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
    sizes: np.ndarray
    content_key: np.ndarray
    content_entry: np.ndarray


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
    shared: int = 0  # classes (or zones) built whose content an entry had already: not stored again

    @property
    def stores(self) -> int:
        """Classes and counted zones built: the entries, and those that share one."""
        return self.entries + self.shared

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {name}" for n, name in zip(self.kinds, KIND_NAMES))
        return (f"{self.entries} entries ({kinds}; {self.shared} more built with the content of one); "
                f"tokens: {self.accepted:,} accepted, "
                f"{self.rejected:,} rejected, {self.uncertain:,} uncertain; "
                f"{self.memory_bytes / 1024:.1f} KiB, built in {self.build_seconds:.3f} s")


def pack_ids(ids: np.ndarray, words: np.ndarray) -> None:
    """Set the bits of `ids` in int32 `words`."""
    bits = np.zeros(len(words) * 32, dtype=np.bool_)
    bits[ids] = True
    words |= np.packbits(bits, bitorder="little").view(np.int32)



_REGULAR: dict = {}  # per vocabulary: {words: the bitset of its regular tokens} (`regular_words`)


def regular_words(vocab, words: int) -> np.ndarray:
    """int32[words]: the bitset of the vocabulary's regular tokens (`vocab.sorted_ids`), made
    once per vocabulary and width and shared by the entries of every grammar over it (no
    kernel writes it). The memory account counts it with the vocabulary's tables."""
    held = per_vocabulary(_REGULAR, vocab, dict)
    out = held.get(words)
    if out is None:
        out = np.zeros(words, dtype=np.int32)
        pack_ids(vocab.sorted_ids, out)
        out = held.setdefault(words, out)
    return out


class EntryStore:
    """The entries of one cache in flat arrays held at capacity: `kernel_arrays` is what the
    kernels append to (kernels/entry_build.py `store_entry`) and read, `arrays` the filled part.
    Python only grows the arrays when a kernel answers NEED_STORE (`grow`), doubling them.

    Threads: one writer at a time (the cache's lock); readers take `kernel_arrays` once per
    fill and never lock. A grown version is a new tuple of new arrays, sizes included; the
    old version is never written again, so a reader that holds it sees a consistent store."""

    def __init__(self, n_states: int, regular_words: np.ndarray, count_slack: int):
        self.state_entry = np.full(n_states, MF.NO_ENTRY, dtype=np.int32)
        self.noexit_entry = np.full(n_states, MF.NO_ENTRY, dtype=np.int32)
        self.regular_words = regular_words
        self.count_slack = np.array([count_slack], dtype=np.int64)
        self.ex_key, self.ex_entry = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
        self.sizes = np.zeros(EB.N_SIZES, dtype=np.int64)
        self.entry_state, self.entry_kind = np.zeros(16, np.int32), np.zeros(16, np.int8)
        self.bitset_offset, self.counts = np.zeros(16, np.int64), np.zeros((16, 3), np.int64)
        self.list_indptr, self.unc_indptr = np.zeros(17, np.int64), np.zeros(17, np.int64)
        self.list_ids, self.bitset_words, self.unc_sorted = np.zeros(64, np.int32), np.zeros(0, np.int32), \
            np.zeros(64, np.int32)
        self.content_key = np.zeros(EC.table_size(16), np.int64)
        self.content_entry = np.zeros(EC.table_size(16), np.int32)
        self._publish()

    def _publish(self) -> None:
        self.kernel_arrays = MaskCacheArrays(
            self.state_entry, self.entry_state, self.entry_kind, self.list_indptr, self.list_ids, self.bitset_offset,
            self.bitset_words, self.unc_indptr, self.unc_sorted, self.regular_words, self.counts, self.noexit_entry,
            self.ex_key, self.ex_entry, self.count_slack, self.sizes, self.content_key, self.content_entry)

    def grow(self) -> None:
        """Room for what the last NEED_STORE asked (sizes[SIZE_NEED_*]), each array that lacks
        room at least doubled, its filled part copied."""
        z = self.sizes

        def grown(old, need, extra=0):
            if need + extra <= len(old):
                return old
            new = np.zeros((max(2 * (len(old) - extra), int(need)) + extra,) + old.shape[1:], dtype=old.dtype)
            new[:len(old)] = old
            return new

        n = z[EB.SIZE_NEED_ENTRIES]  # the entry arrays grow together, the indptrs one longer
        self.entry_state, self.entry_kind = grown(self.entry_state, n), grown(self.entry_kind, n)
        self.bitset_offset, self.counts = grown(self.bitset_offset, n), grown(self.counts, n)
        self.list_indptr, self.unc_indptr = grown(self.list_indptr, n, 1), grown(self.unc_indptr, n, 1)
        self.list_ids = grown(self.list_ids, z[EB.SIZE_NEED_LIST])
        self.bitset_words = grown(self.bitset_words, z[EB.SIZE_NEED_WORDS])
        self.unc_sorted = grown(self.unc_sorted, z[EB.SIZE_NEED_UNC])
        if 2 * n > len(self.content_key):
            keys, entries = np.zeros(EC.table_size(n), np.int64), np.zeros(EC.table_size(n), np.int32)
            EC.rehash(self.content_key, self.content_entry, keys, entries)
            self.content_key, self.content_entry = keys, entries
        # a new version with sizes of its own: the old arrays keep the count they were grown at,
        # so a reader still holding them never takes an entry stored after (mask_fill.py)
        self.sizes = self.sizes.copy()
        self._publish()

    def trim(self) -> None:
        """A new version whose arrays hold the filled part only (COMPACT, once every entry is
        built: doubling leaves up to half of each array empty); a later store grows it again."""
        z, n = self.sizes, self.n_entries
        self.entry_state, self.entry_kind = self.entry_state[:n].copy(), self.entry_kind[:n].copy()
        self.bitset_offset, self.counts = self.bitset_offset[:n].copy(), self.counts[:n].copy()
        self.list_indptr, self.unc_indptr = self.list_indptr[:n + 1].copy(), self.unc_indptr[:n + 1].copy()
        self.list_ids = self.list_ids[:z[EB.SIZE_LIST]].copy()
        self.bitset_words = self.bitset_words[:z[EB.SIZE_WORDS]].copy()
        self.unc_sorted = self.unc_sorted[:z[EB.SIZE_UNC]].copy()
        self.sizes = self.sizes.copy()
        self._publish()

    @property
    def capacity_bytes(self) -> int:
        """Bytes of every array at capacity (what the store holds), the vocabulary's bitset of
        regular tokens aside (`regular_words`: shared)."""
        return int(sum(a.nbytes for a in self.kernel_arrays)) - self.regular_words.nbytes

    def set_exact(self, ex_key: np.ndarray, ex_entry: np.ndarray) -> None:
        """The sorted (state << 32 | count) -> entry table of counts near a bound."""
        self.ex_key, self.ex_entry = ex_key, ex_entry
        self._publish()

    @property
    def n_entries(self) -> int:
        return int(self.sizes[EB.SIZE_ENTRIES])

    @property
    def stores(self) -> int:
        """Entries stored, and stores that pointed at an entry of the same content: one per
        class (or counted zone) built."""
        return int(self.sizes[EB.SIZE_ENTRIES] + self.sizes[EB.SIZE_SHARED])

    @property
    def arrays(self) -> MaskCacheArrays:
        """The filled part of every array (for readers outside the kernels)."""
        z, n = self.sizes, self.n_entries
        a = self.kernel_arrays
        return a._replace(entry_state=a.entry_state[:n], entry_kind=a.entry_kind[:n], list_indptr=a.list_indptr[:n + 1],
                          list_ids=a.list_ids[:z[EB.SIZE_LIST]], bitset_offset=a.bitset_offset[:n],
                          bitset_words=a.bitset_words[:z[EB.SIZE_WORDS]], unc_indptr=a.unc_indptr[:n + 1],
                          unc_sorted=a.unc_sorted[:z[EB.SIZE_UNC]], counts=a.counts[:n])

    def stats(self, build_seconds: float) -> "CacheStats":
        z = self.sizes
        return CacheStats(self.n_entries, int(z[EB.SIZE_TOKENS]), int(z[EB.SIZE_TOKENS + 1]),
                          int(z[EB.SIZE_TOKENS + 2]), tuple(int(k) for k in z[EB.SIZE_KINDS:EB.SIZE_KINDS + 3]),
                          build_seconds, self.memory_size_bytes, int(z[EB.SIZE_SHARED]))

    @property
    def memory_size_bytes(self) -> int:
        """Bytes of the filled arrays (every array of `MaskCacheArrays` but the vocabulary's
        bitset of regular tokens, which every grammar over it shares)."""
        return int(sum(a.nbytes for a in self.arrays)) - self.regular_words.nbytes


fixed_layout(MaskCacheArrays)
