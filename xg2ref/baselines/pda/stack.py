"""XGrammar §3.3: the persistent execution stack, as the Python side holds it.

The kernels (xg2ref/kernels/pda.py) keep every stack of every record in one tree of frames and
the history as a stack of records; this module owns those arrays, grows them when a kernel asks
(NEED_SPACE: the kernel committed nothing, so it is simply called again), turns TOO_MANY into
`GrammarLimitError`, and reads the tree back as stacks for people (`stacks`, `Frame`):

    record k    the configurations after k bytes: (state, frame) pairs
    frame       (return state, frame below); ROOT_FRAME (-1) is the bottom of the root rule

Rolling back n bytes lowers the record count by n: the records and the frames made for them are
dropped together (`rollback`, O(1)).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ...exceptions import GrammarLimitError
from ...kernels import pda as K
from .machines import PDAArrays

DEFAULT_MAX_STACKS = 100_000


class Frame(NamedTuple):
    """One frame of a stack: the state to return to, and the frame below (None at the bottom)."""

    return_state: int
    below: "Frame | None"


def new_stack(tops: int = 256, nodes: int = 256, records: int = 64, table: int = 256) -> K.PDAStack:
    """Empty arrays of the given capacities (`table` a power of two, for configurations and for
    frames)."""
    z32, z64 = (lambda n: np.zeros(n, np.int32)), (lambda n: np.zeros(n, np.int64))
    meta = np.zeros(K.META_SIZE, np.int64)
    meta[K.M_MASK] = meta[K.M_FMASK] = table - 1
    return K.PDAStack(z32(nodes), z32(nodes), z32(tops), z32(tops), z64(records + 1), z64(records + 1),
                      np.zeros(records, np.bool_), z64(table), z32(table), z32(table), np.full(table, -1, np.int32),
                      meta)


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, a.dtype)
    out[:len(a)] = a
    return out


class PersistentStack:
    """The history of configuration sets of one parse over `arrays` (module docstring)."""

    def __init__(self, arrays: PDAArrays, max_stacks: int = DEFAULT_MAX_STACKS):
        if max_stacks < 1:
            raise ValueError(f"max_stacks must be positive, got {max_stacks}")
        self.pda = arrays
        self.max_stacks = int(max_stacks)
        self.st = new_stack()
        self.reset()

    # ---- running kernels --------------------------------------------------------------------

    def run(self, call: Callable[[K.PDAStack], int]) -> int:
        """Call `call(st)` until it does not ask for room; TOO_MANY raises GrammarLimitError."""
        while True:
            status = call(self.st)
            if status == K.NEED_SPACE:
                self._grow(int(self.st.meta[K.M_NEED]))
            elif status == K.TOO_MANY:
                raise self._too_many()
            else:
                return status

    def _too_many(self) -> GrammarLimitError:
        return GrammarLimitError(f"the pushdown automaton needs more than {self.max_stacks:,} stacks at one position "
                                 "(max_stacks): the grammar is too ambiguous for XGrammar-1's executor")

    def _grow(self, need: int) -> None:
        st = self.st
        if need == K.NEED_TOPS:
            n = 2 * len(st.tops_state)
            st = st._replace(tops_state=_grown(st.tops_state, n), tops_parent=_grown(st.tops_parent, n))
        elif need == K.NEED_NODES:
            n = 2 * len(st.node_state)
            st = st._replace(node_state=_grown(st.node_state, n), node_parent=_grown(st.node_parent, n))
        elif need == K.NEED_RECORDS:
            n = 2 * len(st.rec_pop)
            st = st._replace(hist_tops=_grown(st.hist_tops, n + 1), hist_nodes=_grown(st.hist_nodes, n + 1),
                             rec_pop=_grown(st.rec_pop, n))
        elif need == K.NEED_TABLE:
            n = 2 * len(st.cfg_epoch)
            fresh = new_stack(table=n)
            st = st._replace(cfg_epoch=fresh.cfg_epoch, cfg_a=fresh.cfg_a, cfg_b=fresh.cfg_b)
            st.meta[K.M_MASK] = n - 1
        elif need == K.NEED_FRAMES:  # rebuilt with the live frames only, at least twice their number
            end = int(st.meta[K.M_NODES])
            n = len(st.frame_slot)
            while n < 4 * (end + 1):
                n *= 2
            st = st._replace(frame_slot=np.full(n, -1, np.int32))
            st.meta[K.M_FMASK] = n - 1
            K.rebuild_frames(st, end)
        else:
            raise AssertionError(f"unknown resource {need}")
        self.st = st

    # ---- the parse --------------------------------------------------------------------------

    @property
    def records(self) -> int:
        return int(self.st.meta[K.M_RECORDS])

    def reset(self) -> None:
        """Record 0: the root rule's start, closed."""
        self.st.meta[K.M_RECORDS] = 0
        root_start = int(self.pda.rule_start[self.pda.root_rule[0]])
        self.run(lambda st: K.start(self.pda, st, root_start, K.ROOT_FRAME, True, self.max_stacks))

    def read(self, data: np.ndarray) -> bool:
        """Read the bytes (uint8 array); all or nothing (a GrammarLimitError leaves the stack as
        it was too)."""
        before, pos = self.records, 0
        while pos < len(data):
            status, n = K.read_bytes(self.pda, self.st, data, pos, len(data), self.max_stacks)
            pos += n
            if status == K.OK:
                break
            if status == K.NEED_SPACE:
                self._grow(int(self.st.meta[K.M_NEED]))
                continue
            self.st.meta[K.M_RECORDS] = before
            if status == K.DEAD:
                return False
            raise self._too_many()
        return True

    def rollback(self, num_bytes: int) -> None:
        """Drop the last `num_bytes` records and the frames made for them."""
        if not 0 <= num_bytes < self.records:
            raise ValueError(f"cannot roll back {num_bytes} bytes of {self.records - 1}")
        self.st.meta[K.M_RECORDS] -= num_bytes

    def can_end(self) -> bool:
        return bool(K.can_end(self.pda, self.st))

    @property
    def num_stacks(self) -> int:
        """Configurations in the last record."""
        k = self.records
        return int(self.st.hist_tops[k] - self.st.hist_tops[k - 1])

    @property
    def peak_stacks(self) -> int:
        """The most configurations any record has held."""
        return int(self.st.meta[K.M_PEAK])

    # ---- for people -------------------------------------------------------------------------

    def frame(self, node: int) -> "Frame | None":
        """Frame `node` and those below it (None for the bottom)."""
        out = None
        chain = []
        while node >= 0:
            chain.append(int(self.st.node_state[node]))
            node = int(self.st.node_parent[node])
        for state in reversed(chain):
            out = Frame(state, out)
        return out

    def stacks(self, record: int = -1) -> list[tuple[int, ...]]:
        """The configurations of a record (default the last) as tuples of states, top first:
        (state, return state, return state below, ...)."""
        k = self.records + record if record < 0 else record
        st = self.st
        out = []
        for i in range(int(st.hist_tops[k]), int(st.hist_tops[k + 1])):
            states, node = [int(st.tops_state[i])], int(st.tops_parent[i])
            while node >= 0:
                states.append(int(st.node_state[node]))
                node = int(st.node_parent[node])
            out.append(tuple(states))
        return out

    def tree(self) -> dict[int, tuple[int, int]]:
        """Every live frame: node -> (return state, node below), the tree all stacks share."""
        n = int(self.st.hist_nodes[self.records])
        return {i: (int(self.st.node_state[i]), int(self.st.node_parent[i])) for i in range(n)}
