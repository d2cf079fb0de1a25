"""`BatchGrammarMatcher.batch_fill_next_token_bitmask` on several threads (XGrammar §3.5: the
masks of a batch are made on the CPU while the GPU runs the model).

A matcher's first row is filled with the rest of the batch; its other rows after, on this
thread (one matcher is one thread's at a time). The rows split two ways:

    PLAIN    a matcher without layers (no budgets, token sets or extra tokens: `_plain`) whose
             row the kernel may write in place: the rows are CLAIMED ROWS
             (kernels/claimed_rows.py): this thread makes them ready in order (the matcher's
             bound fill, a scratch of its grammar's, the handle of the arguments) while the
             other threads fill the ready ones, a row at a time, all without the GIL; then this
             thread finishes the rows whose kernel asked for more (an entry to build, a larger
             chart: mask/cache.py `finish_fill`) and gives the scratches back
    OTHERS   the rest (and a plain row the kernel may not write: a bitmask of another layout):
             each matcher's own `fill_next_token_bitmask`, in shares taken by the threads

Every row is tried; then the first error is raised (the plain rows are finished and their
scratches given back whatever happened). Threads are at most the machine's cores: a kernel
waiting for its row spins, and more spinning threads than cores would slow the thread making
rows ready. Under NUMBA_DISABLE_JIT every row is an OTHER.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Optional

import numpy as np

from .kernels import claimed_rows as CR
from .kernels import handles as H
from .kernels import mask_fill as MF
from .mask.scratch import batch_rows
from .util import Crew, bound_kernel

FILL_SHARES = 8  # OTHERS are cut into this many shares per thread, taken as threads free up
WAIT_SECONDS = 1e-4  # a claimer whose row stays unready sleeps this long between waits
_POOLS: dict = {}  # threads -> the process's crew for batch fills of that width
_POOLS_LOCK = threading.Lock()
_KERNELS: list = []  # (publish, fill_claimed_rows) entries, bound on first use
CORES = os.cpu_count() or 1  # (read once: os.cpu_count costs tens of µs a call on some machines)


def _forget_pools() -> None:
    """In a forked child: the crews' threads stayed in the parent, so make new ones."""
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pools)


def _crew(threads: int) -> Crew:
    """The crew batch fills of `threads` threads run on: the caller and threads - 1 helpers
    (made once per width; daemons that live as long as the process)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = Crew(threads - 1, "xg2ref-batch-fill")
        return pool


def fill_batch(firsts: list, bitmask, threads: int, debug_print: bool = False) -> None:
    """Row `row` of `bitmask` gets the mask of `m`, for each (m, row) of `firsts` (distinct
    matchers), on up to `threads` threads (module docstring)."""
    memory = (bitmask.data_ptr(), bitmask.shape) if hasattr(bitmask, "data_ptr") else None
    plain = [(m, row) for m, row in firsts if m._plain] if H.ENABLED else []
    others = [(m, row) for m, row in firsts if not m._plain] if plain else list(firsts)
    errors: list = []
    if plain:
        batch = _Claimed(plain, bitmask, memory)
        width = max(1, min(threads, len(plain), CORES))
        try:
            if width > 1:
                _crew(width).run(batch.work, [True] + [False] * (width - 1))
            else:
                batch.work(True)
        finally:
            others += batch.finish(errors)
    if others:
        errors += _fill_others(others, bitmask, threads, debug_print)
    if errors:
        raise errors[0]


def _fill_others(pairs: list, bitmask, threads: int, debug_print: bool) -> list:
    """OTHERS: each matcher's own fill, in shares over up to `threads` threads. Returns the
    errors raised (every row is tried)."""
    parts = max(1, min(len(pairs), FILL_SHARES * threads))
    cuts = [len(pairs) * k // parts for k in range(parts + 1)]
    shares = [pairs[cuts[k]:cuts[k + 1]] for k in range(parts)]
    errors: list = []

    def fill(share: list) -> None:
        for m, row in share:
            try:
                m.fill_next_token_bitmask(bitmask, row, debug_print=debug_print)
            except Exception as err:
                errors.append(err)

    if threads <= 1 or len(shares) <= 1:
        for share in shares:
            fill(share)
    else:
        _crew(min(threads, len(shares))).run(fill, shares)
    return errors


class _Claimed:
    """PLAIN rows as CLAIMED ROWS: `work(True)` makes them ready then claims, `work(False)`
    claims only; `finish` after every thread is done."""

    def __init__(self, pairs: list, bitmask, memory: Optional[tuple]):
        n = len(pairs)
        self.pairs, self.bitmask, self.memory = pairs, bitmask, memory
        self.rows = np.zeros(n, dtype=np.int64)  # the row handles' addresses (0: skipped)
        self.out = np.zeros((n, 4), dtype=np.int64)
        self.out[:, 0] = CR.NOT_FILLED
        self.ctl = np.zeros(CR.CTL, dtype=np.int64)
        # per row made ready: (job, view, memo), job = (cache, parser, words, not_regular, stop_ids,
        # scratch), the memo kept while the kernels read the row's handle
        self.made: list = [None] * n
        self.errors: list = []
        self.skipped: list = []  # the pairs whose row the kernel may not write (OTHERS)
        if not _KERNELS:
            _KERNELS.extend((bound_kernel(CR.publish, self.rows, self.ctl, 0, 0),
                             bound_kernel(CR.fill_claimed_rows, self.rows, self.out, self.ctl, -1, True)))
        batch_rows([m._mask_cache for m, _ in pairs])

    def work(self, prepares: bool) -> None:
        if prepares:
            self._prepare()
        held, claim = -1, _KERNELS[1]
        while True:
            held = claim(self.rows, self.out, self.ctl, held, prepares)
            if held == CR.DONE:
                return
            time.sleep(WAIT_SECONDS)

    def _prepare(self) -> None:
        publish, ready = _KERNELS[0], 0
        try:
            for r, (m, row) in enumerate(self.pairs):
                address, job = 0, None
                try:
                    view = m._row_view(self.bitmask, row, self.memory)
                    if view[1] is None:
                        self.skipped.append((m, row))
                    else:
                        cache, parser = m._mask_cache, m._parser
                        job = (cache, parser, view[1], m._not_regular, m._stop_array, cache.take_scratch(parser))
                        memo = cache.bind_fill(*job[1:])
                        address = cache.row_handle(memo)
                        self.made[r] = (job, view, memo)
                except Exception as err:  # (raised once the batch is done; the row is not filled)
                    self.errors.append(err)
                    if job is not None:
                        job[0].scratch.give(job[5])
                    self.made[r], address = None, 0
                publish(self.rows, self.ctl, r, address)
                ready = r + 1
        finally:
            if ready < len(self.pairs):
                CR.close(self.ctl)

    def finish(self, errors: list) -> list:
        """After every thread is done: the rows whose kernel asked for more finished here
        (`finish_fill`), scratches given back, words past the vocabulary's cleared. Appends
        the errors raised to `errors`; returns the plain pairs the kernel did not fill (their
        row of another layout): OTHERS."""
        errors += self.errors
        status = self.out[:, 0]
        scratches = [None if made is None else made[0][5] for made in self.made]
        for r in np.flatnonzero((status != MF.OK) & (status != CR.NOT_FILLED)).tolist():
            cache, parser, words, not_regular, stop_ids, scratch = self.made[r][0]
            try:
                _, j, n_cand, full = self.out[r].tolist()
                scratches[r] = cache.finish_fill(parser, words, not_regular, stop_ids, scratch, int(status[r]), j,
                                                 n_cand, full)[2]
            except Exception as err:
                errors.append(err)
        for r, made in enumerate(self.made):
            if made is None:
                continue
            (cache, *_), view, _ = made
            cache.scratch.give(scratches[r])
            if view[2]:
                view[0][self.pairs[r][0]._n_words:] = 0
        return self.skipped
