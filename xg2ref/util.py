"""Small helpers: deep recursion for the front end and the FSM builder, bound Numba kernel entries,
Tarjan's strongly connected components, the memory cap of worker processes."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import weakref
from typing import Optional

# Expression trees may nest up to the parser's limit (1000 groups); recursive walks over
# them need more Python frames than the default limit allows.
RECURSION_HEADROOM = 20_000


@contextlib.contextmanager
def deep_recursion(limit: int = RECURSION_HEADROOM):
    """Temporarily raise Python's recursion limit for walks over deeply nested trees."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def bound_kernel(kernel, *example_args):
    """The compiled entry point of Numba kernel `kernel` for the types of `example_args`.

    Numba's dispatcher infers the type of every argument on every call; for a NamedTuple of
    arrays that costs about 0.3 µs a field, several µs per call for the mask kernels, whose
    whole run may take 10 µs. A caller that always passes arguments of the same types (its own
    arrays) binds the entry once and calls it directly. Under NUMBA_DISABLE_JIT=1 (no
    dispatcher) the plain function is returned. The entry point does not check types: callers
    must pass exactly the types of `example_args`.

    Entries are compiled once per process and found again by `layout_key`, the few facts
    Numba's type of each argument depends on; a NamedTuple class registered with
    `fixed_layout` is keyed by its class alone (its arrays' types are fixed where it is built),
    so finding the entry of a new grammar costs microseconds. With `VERIFY_LAYOUTS` (the test
    suite sets it) every lookup also checks that claim against the arguments' full layout.
    """
    if not hasattr(kernel, "overloads"):
        return kernel
    key = (id(kernel), tuple(layout_key(a) for a in example_args))
    entry = _ENTRIES.get(key)
    if entry is None or entry[0] is not kernel:
        from numba import typeof

        signature = tuple(typeof(a) for a in example_args)
        kernel.compile(signature)
        entry = _ENTRIES[key] = (kernel, kernel.overloads[signature].entry_point, _full_layout(example_args))
    elif VERIFY_LAYOUTS and entry[2] != _full_layout(example_args):
        diff = [k for k, (a, b) in enumerate(zip(entry[2], _full_layout(example_args))) if a != b]
        raise AssertionError(f"{kernel.__name__}: arguments {diff} of a fixed-layout class with another layout: "
                             f"{[entry[2][k] for k in diff]} against {[_full_layout(example_args)[k] for k in diff]}")
    return entry[1]


_ENTRIES: dict = {}  # (id(kernel), layout keys) -> (kernel, its compiled entry point, full layout)
_FIXED: set = set()  # NamedTuple classes whose arrays' types are fixed by construction
VERIFY_LAYOUTS = False


def fixed_layout(*classes) -> None:
    """Declare NamedTuple classes whose every instance holds arrays of the same dtypes, ranks and
    layouts (C-contiguous, writable): `bound_kernel` keys them by class."""
    _FIXED.update(classes)


def layout_key(value):
    """What Numba's type of `value` depends on, cheaply: an array's dtype, rank, layout,
    writability and alignment; a tuple's class and its items' keys (a `fixed_layout` class: its
    class alone); otherwise the class (Python and NumPy scalars type by class alone)."""
    import numpy as np

    if isinstance(value, np.ndarray):
        f = value.flags
        layout = "C" if f.c_contiguous else "F" if f.f_contiguous else "A"  # as Numba types it
        return (value.dtype.str, value.ndim, layout, f.writeable, f.aligned)
    if isinstance(value, tuple):
        if type(value) in _FIXED:
            return type(value)
        return (type(value), tuple(layout_key(v) for v in value))
    return type(value)


def _full_layout(values):
    """`layout_key` without the `fixed_layout` shortcut."""
    import numpy as np

    out = []
    for v in values:
        if isinstance(v, tuple) and not isinstance(v, np.ndarray):
            out.append((type(v), _full_layout(v)))
        else:
            out.append(layout_key(v))
    return tuple(out)


def read_json_lines(path):
    """The JSON values of a results file, one per line, in order; a line that does not parse (cut
    short when a run was stopped) is skipped, and a missing file reads as empty."""
    import json
    import os

    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def strongly_connected(n: int, succ: list) -> list:
    """Tarjan's strongly connected components, iteratively; each SCC is listed after every SCC
    it reaches (callee first)."""
    index, low, on_stack = [-1] * n, [0] * n, [False] * n
    stack, out, counter = [], [], 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, i = work[-1]
            if i < len(succ[v]):
                work[-1] = (v, i + 1)
                w = succ[v][i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


class Crew:
    """`helpers` daemon threads that, with the caller, run the shares of one job (XGrammar §3.5:
    the masks of a batch filled on several cores). `run(work, shares)` calls `work(share)` for
    every share, each taken by whichever thread is free next (the caller included, so no thread
    waits idle for the others to start), and returns when all have run; then it raises the error
    of the first share that failed, if any. One job at a time per crew (others wait their turn).
    A share taken, and a share finished, is an `itertools.count` step, atomic under the GIL.

    The caller waits for the shares, not for the helpers: a helper still waking when the caller
    has run every share finds none left (waking a sleeping thread costs tens of µs, a large
    part of a batch's fill)."""

    def __init__(self, helpers: int, name: str = "xg2ref-crew"):
        self._lock = threading.Lock()
        self._go = [threading.Semaphore(0) for _ in range(helpers)]
        self._job: Optional[_CrewJob] = None
        for k in range(helpers):
            threading.Thread(target=self._serve, args=(k,), name=f"{name}-{k}", daemon=True).start()

    def _serve(self, k: int) -> None:
        while True:
            self._go[k].acquire()
            job = self._job  # (the job of this wake-up, a later one, or none: every share taken)
            if job is not None:
                job.take()

    def run(self, work, shares: list) -> None:
        with self._lock:
            job = self._job = _CrewJob(work, shares)
            for go in self._go:
                go.release()
            try:
                job.take()
            finally:
                job.done.acquire()  # (every share has run)
                self._job = None
            if job.errors:
                raise min(job.errors, key=lambda e: e[0])[1]


class _CrewJob:
    """One `Crew.run`: its shares, who takes the next, how many have finished; `done` is
    released by the thread that finishes the last."""

    def __init__(self, work, shares: list):
        self.work, self.shares, self.errors = work, shares, []
        self.turn, self.finished = itertools.count(), itertools.count(1)
        self.done = threading.Lock()
        self.done.acquire()
        if not shares:
            self.done.release()

    def take(self) -> None:
        n = len(self.shares)
        for i in iter(self.turn.__next__, None):
            if i >= n:
                return
            try:
                self.work(self.shares[i])
            except BaseException as err:  # (raised by `run`, after every share has run)
                self.errors.append((i, err))
            finally:
                if next(self.finished) == n:
                    self.done.release()


# ---- worker processes' memory (xg2ref/tools/bench/workers.py, xg2ref/tools/cluster.py) ----------

MEMORY_SHARE = 0.6  # of the machine's physical memory, for all the workers together


def memory_cap(n_procs: int) -> Optional[int]:
    """Bytes of address space each of `n_procs` workers may hold (None where unknown)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    return int(MEMORY_SHARE * total / max(n_procs, 1))


_PER_VOCABULARY_LOCK = threading.RLock()


def vocabulary_entry(table: dict, vocab):
    """What `table` (a per-vocabulary table of `per_vocabulary`) holds for `vocab`, or None."""
    held = table.get(id(vocab.sorted_offsets))
    return held[1] if held is not None and held[0]() is vocab.sorted_offsets else None


def per_vocabulary(table: dict, vocab, make):
    """What `make()` builds for one vocabulary (a `VocabArrays`, read-only), made once and kept in
    `table` while the vocabulary lives: keyed by its sorted offsets, held weakly, the entries of
    vocabularies gone dropped when a new one comes. Every table of the kind (the classifier's
    facts, the JSON-string slice, the free build buffers) is read through here."""
    value = vocabulary_entry(table, vocab)
    if value is None:
        with _PER_VOCABULARY_LOCK:
            value = vocabulary_entry(table, vocab)
            if value is None:
                for k in [k for k, v in table.items() if v[0]() is None]:
                    del table[k]
                value = make()
                table[id(vocab.sorted_offsets)] = (weakref.ref(vocab.sorted_offsets), value)
    return value
