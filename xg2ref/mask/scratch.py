"""The fill's scratch (XGrammar §3.1 Algorithm 1's working space: entry marks, an entry's accepted
words before they are OR-ed in, the uncertain candidates), shared by the matchers of a grammar.

SHARED SCRATCH. A fill needs the scratch only while it runs, and a scratch holds nothing from
one fill to the next that the next needs (the entry marks carry a generation counter, the
candidates are written before they are read). So a matcher holds none: it takes one from its
grammar's free list for a fill and gives it back (`FillScratches`). A matcher asks for the
scratch its last fill used (its parser's bound fill names it), and gets it while no other fill
holds it, so the kernel entry bound to it stays bound: one thread's decoding loop, many threads
each walking matchers of their own, and the rows of a batch filled by shares on several threads
all find their scratch again; otherwise the last one given back (last in, first out). A live
matcher then costs its chart and history, not vocabulary-sized buffers (a scratch holds
ceil(V / 32) words).

A batch (`BatchGrammarMatcher`, xg2ref/batch_fill.py) gives each row a scratch of its own for
the batch: its rows are filled on several threads at once, and a row the kernel stops is
resumed from its scratch afterwards; each grammar's free list keeps room for as many scratches
as the batch has rows of it (`batch_rows`).
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

import numpy as np

from ..kernels import entry_build as EB
from ..kernels import mask_fill as MF

KEEP_SCRATCH = 16  # scratches a grammar keeps at least room for in its free list


class FillScratches:
    """The free list of one grammar's fill scratches, sized for the entries of `store` (an
    EntryStore) over `words` int32 words of mask."""

    def __init__(self, store, words: int):
        self._store, self._words = store, words
        self._free: dict = {}  # id -> scratch, in the order given back
        self._keep = KEEP_SCRATCH

    def __len__(self) -> int:
        return len(self._free)

    def take(self, prefer: Optional[MF.FillScratch] = None) -> MF.FillScratch:
        """`prefer` (the scratch the caller's last fill used) when it is free, else the scratch
        given back last, else a new one (dict.pop and dict.popitem: atomic, no lock)."""
        if prefer is not None:
            scratch = self._free.pop(id(prefer), None)
            if scratch is not None:
                return scratch
        try:
            return self._free.popitem()[1]
        except KeyError:
            return self.new()

    def give(self, scratch: MF.FillScratch) -> None:
        """Back to the free list after a fill; it keeps as many as ran at once, at most the
        larger of KEEP_SCRATCH and the largest batch of this grammar's rows (`batch_rows`)."""
        if len(self._free) < self._keep:
            self._free[id(scratch)] = scratch

    def batch_rows(self, n: int) -> None:
        """A batch fills n rows of this grammar at once, each with a scratch of its own."""
        self._keep = max(self._keep, n)

    def held(self) -> list:
        """The scratches in the free list now (for the memory account)."""
        return list(self._free.values())

    def new(self) -> MF.FillScratch:
        """A scratch sized for the entries built so far."""
        empty = MF.FillScratch(np.zeros(1, dtype=np.int64), np.zeros(self._words, dtype=np.int32),
                               np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int64))
        return self.fit(empty)

    def fit(self, s: MF.FillScratch) -> MF.FillScratch:
        """Scratch `s`, or a larger copy, sized for the entries built so far: a mark per entry
        (the generation counter last), room for every uncertain id once. A fill uses only the
        entries its scratch was sized for (`FillScratch.sized`); others send it to the building
        path, which fits the scratch first."""
        n, unc = self._store.n_entries, int(self._store.sizes[EB.SIZE_UNC])
        if s.sized[0] >= n:
            return s
        marks, cand, tmp = s.entry_mark, s.cand, s.cand_tmp
        if len(marks) < n + 1:
            marks = np.zeros(max(n + 1, 2 * len(marks)), dtype=np.int64)
            marks[-1] = s.entry_mark[-1]
        if len(cand) < unc:
            cand = np.zeros(max(unc, 2 * len(cand)), dtype=np.int32)
            tmp = np.zeros_like(cand)
        if marks is s.entry_mark and cand is s.cand:
            s.sized[0] = n  # room for them all already
            return s
        return MF.FillScratch(marks, s.or_words, cand, tmp, np.array([n], dtype=np.int64))


def batch_rows(caches: list) -> None:
    """A batch fills a row of each of `caches` (one per row, a grammar's as often as it has rows)
    at once: each grammar's free list keeps room for as many scratches."""
    which = dict(zip(map(id, caches), caches))
    for key, n in Counter(map(id, caches)).items():
        which[key].scratch.batch_rows(n)
