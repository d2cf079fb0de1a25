"""XGrammar-2 §3.5: JIT entries built off the token's path, beside decoding.

§3.5 hides the building of mask-cache entries behind the model's own work (prefill, forward
passes). Here one daemon thread per process, `BackgroundBuilder`, builds the entries that
JIT caches still lack while their matchers decode: right after compile from the root rule's
start, and after each accepted token from the matcher's last Earley set (`AheadState.hint`),
nearest states first (kernels/build_order.py `reach_order`). It works in the foreground's
gaps (no fill, token or compile for IDLE_GAP: the forward pass), and its build kernels release
the GIL, so on a second core a batch it started runs on beside the next fills. A fill that meets a state
whose entry is missing builds it itself, as before: it waits at most for the one entry the
builder holds the cache's lock for.

The contract between the two (specs/04-mask-cache.md, "Threads"):

    a writer (build, grow, publish)  holds the cache's lock, one at a time
    a reader (the plain fill)        never locks: it takes the store's arrays once, and uses
                                     an entry only when those arrays hold it (mask_fill.py)
    growing                          publishes new arrays; old ones are never written again
    what a build owes the pool       is taken when the pool is next read, never by the builder
    a fork                           waits for the builder to be between two steps (`gate`)

Only entries built whole by one kernel call (`EntryClasses.in_kernel`) are built here; the
others (counted zones, unordered rules) are built by the fill that needs them. A build that
crosses the grammar's byte limit (`max_grammar_bytes`) stops the builder for that cache; the
next fill that builds raises GrammarLimitError, as it would have without the builder. Masks
are the same with the builder on or off.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from contextlib import contextmanager
from typing import Optional

import numpy as np
from numba.core import config as numba_config

from ..kernels import build_order as BO
from ..util import bound_kernel, fixed_layout

# classes listed per walk of the grammar, built in one kernel call that gives way to a waiting
# fill after the class it is building
AHEAD_BATCH = 8
# The builder works in the gaps of the foreground (the model's forward pass, in a server): it
# starts a step only when no fill, accepted token or compile has run for IDLE_GAP seconds. A
# Python thread beside a busy Python thread slows it (the GIL, caches), so in a loop with no
# gap it leaves the fills to build what they meet.
IDLE_GAP = 300e-6


fixed_layout(BO.ReachArrays)


def note_activity() -> None:
    """The foreground is busy now (a fill, an accepted token, a compile): the builder waits for
    IDLE_GAP without one before its next step."""
    BUILDER.active_at = time.perf_counter()


@contextmanager
def foreground():
    """Work the builder does not run beside (a compile): it waits until IDLE_GAP after."""
    BUILDER.busy += 1
    try:
        yield
    finally:
        BUILDER.busy -= 1
        note_activity()


def background_default() -> bool:
    """Whether GrammarCompiler builds ahead unless told: yes, except with XG2REF_BACKGROUND_BUILDS=0
    and under NUMBA_DISABLE_JIT (pure-Python kernels hold the GIL: a second thread only slows
    the first)."""
    return os.environ.get("XG2REF_BACKGROUND_BUILDS", "1") != "0" and not numba_config.DISABLE_JIT


class AheadState:
    """What one cache's builder walk needs: the hint (states to walk from), whether anything is
    left, and the walk's scratch."""

    def __init__(self, fsm, n_classes: int):
        n_states = len(fsm.state_rule)
        self.root = np.array([fsm.rule_start[fsm.root_rule[0]]], dtype=np.int32)
        self.hint = self.root  # the states of a matcher's last Earley set (`after_token`)
        self.pending = True  # False once nothing reachable from the root lacks an entry
        self.reach = BO.ReachArrays(*BO.callers_of(fsm), np.zeros(n_states, dtype=np.bool_),
                                    np.zeros(max(n_classes, 1), dtype=np.bool_),
                                    np.zeros(max(n_states, 1), dtype=np.int32), np.zeros(AHEAD_BATCH, dtype=np.int32))

    def walk(self, fsm, starts: np.ndarray, state_entry: np.ndarray, classes, room: int = AHEAD_BATCH) -> list:
        """The classes without an entry nearest to `starts` (at most `room`)."""
        if room != len(self.reach.out):
            self.reach = self.reach._replace(out=np.zeros(room, dtype=np.int32))
        args = (fsm, self.reach, starts, state_entry, classes.state_class, classes.in_kernel)
        n = bound_kernel(BO.reach_order, *args)(*args)
        return self.reach.out[:n].tolist()

    def next_classes(self, fsm, state_entry: np.ndarray, classes) -> list:
        """What to build next: the classes nearest to the latest hint, else to the root; []
        when nothing reachable lacks an entry (and `pending` turns False)."""
        listed = self.walk(fsm, self.hint, state_entry, classes)
        if not listed and self.hint is not self.root:
            self.hint = self.root
            listed = self.walk(fsm, self.root, state_entry, classes)
        if not listed:
            self.pending = False
        return listed


class BackgroundBuilder:
    """The process's builder thread: it builds ahead for the cache hinted last, else for the
    newest cache with work left (caches are held weakly: a dropped grammar is dropped here)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._caches: list = []  # weak references, oldest first
        self._latest: Optional[weakref.ref] = None
        self._thread: Optional[threading.Thread] = None
        self._stopping = False
        self.idle = True
        self.gate = threading.Lock()  # held by the thread while it builds
        self.active_at = 0.0  # time.perf_counter() of the foreground's last fill, token or compile
        self.busy = 0  # compiles running (`foreground`)

    def submit(self, cache) -> None:
        """Build ahead for `cache` (right after its compile)."""
        if cache is None:
            return
        ref = cache.ahead_ref
        with self._lock:
            self._caches.append(ref)
            self._latest = ref
            if self._thread is None or not self._thread.is_alive():
                self._stopping = False
                self._thread = threading.Thread(target=self._run, name="xg2ref-entry-builder", daemon=True)
                self._thread.start()
        self._wake.set()

    def touch(self, ref: weakref.ref) -> None:
        """`ref`'s cache has a new hint: build for it first (after each accepted token, so this
        costs attribute reads unless the thread sleeps)."""
        self._latest = ref
        if self.idle:
            if self._thread is None:  # (a forked child's builder starts on the first hint)
                self.submit(ref())
            self._wake.set()

    def _pick(self):
        latest = self._latest() if self._latest is not None else None
        if latest is not None and latest.building_ahead:
            return latest
        with self._lock:
            while self._caches:
                cache = self._caches[-1]()
                if cache is not None and cache.building_ahead:
                    return cache
                self._caches.pop()
        return None

    def _run(self) -> None:
        while not self._stopping:
            quiet = time.perf_counter() - self.active_at
            if quiet < IDLE_GAP or self.busy:  # the foreground is busy: wait for a gap
                time.sleep(max(IDLE_GAP - quiet, IDLE_GAP / 4))
                continue
            self._wake.clear()
            with self.gate:  # (held for one step: a fork waits for it, see `_before_fork`)
                cache = self._pick()
                if cache is not None:
                    try:
                        cache.build_ahead()
                    except Exception:  # (GrammarLimitError) the next fill that builds raises it for itself
                        cache.stop_building_ahead()
                    del cache
                    continue
            self.idle = True  # announced before looking again: a hint after this wakes it
            if self._pick() is None:
                self._wake.wait()
            self.idle = False

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (at exit): it finishes the entry it is building."""
        self._stopping = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(timeout)

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Wait until no cache has work left (tests, benchmarks); False on timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.idle and self._pick() is None:
                return True
            time.sleep(0.001)
        return False


BUILDER = BackgroundBuilder()
atexit.register(BUILDER.stop)


def _before_fork() -> None:
    """A fork waits until the builder is between two steps: it then holds no cache's lock and
    no lock of Numba's, which the child, without this thread, could never take again."""
    BUILDER.gate.acquire()


def _after_fork_in_parent() -> None:
    BUILDER.gate.release()


def _after_fork_in_child() -> None:  # no builder thread here: the child starts its own on demand
    global BUILDER
    BUILDER = BackgroundBuilder()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)
