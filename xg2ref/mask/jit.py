"""XGrammar-2 §3.5, JIT entries: which entries of the mask cache are built when.

With JIT, an entry is built on the first visit of one of its states (when a mask is filled
there and the fill kernel answers NEED_ENTRY: the cache's `ensure_entries` asks `missing`), except the K classes of
highest estimated cost (`estimated_costs`, `costliest`), built at compile time; with no K
named, the cost model picks them (`auto_eager`). `UNBUILT` marks the states whose entry is not
built yet. Masks are the same either way.

`JitSchedule` owns what the schedule reads (the classes, the states' entries, FIRST and FOLLOW
for the estimates); the cache asks it what to build and when. Building beside decoding, after
compile, is mask/background.py's.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..fsm.build import FSMArrays
from ..kernels import pure_walk as PW
from .classifier import vocab_facts
from .entries import UNBUILT

# The cost model of JIT (XGrammar-2 §3.5) when the caller names no K. §3.5 builds the K costliest
# entries while the model prefills; with no prefill to hide behind, the budget is a share of the
# grammar's own compile time: the costliest classes are built now, at most AUTO_EAGER_MAX, while
# their predicted build time (estimated cost times SECONDS_PER_COST, the slow end of what entries
# take on the Llama-3 vocabulary: 0.02-0.4 us per unit) fits in AUTO_EAGER_SHARE of that time.
# The others wait for their first visit. So compile time and first mask grow by at most half.
# Only entries whose estimate is at least MIN_EAGER_COST of the regular tokens are worth building
# early (a cheaper one costs a step little); a budget too small for one is not even estimated.
AUTO_EAGER_SHARE = 0.5
AUTO_EAGER_MAX = 2
SECONDS_PER_COST = 4e-7
MIN_EAGER_COST = 0.2
# A token the state may end its rule before is asked about its context (XGrammar §3.2), which
# reads the rest of the token in a second chart: it weighs CONTEXT_WEIGHT walked tokens.
CONTEXT_WEIGHT = 2.0


class JitSchedule:
    """Which entries of one cache are built when (XGrammar-2 §3.5): estimated costs, the
    classes built at compile time, and the classes a set of states still lacks.

    fsm, vocab      the grammar's machines and the vocabulary (its first bytes, for the costs)
    class_rep       the first state of each class, state_class the class of each state
    state_entry     the entry of each state (the store's array: UNBUILT until built)
    first, follow   FIRST(r) and FOLLOW(r) as bool[R, 256] (None: unknown)
    """

    def __init__(self, fsm: FSMArrays, vocab, class_rep: np.ndarray, state_class: np.ndarray,
                 state_entry: np.ndarray, first: Optional[np.ndarray], follow: Optional[np.ndarray]):
        self.fsm, self.vocab = fsm, vocab
        self.class_rep, self.state_class, self.state_entry = class_rep, state_class, state_entry
        self.first, self.follow = first, follow

    def at_compile(self, jit: bool, eager_entries: Optional[int], compile_seconds: float) -> list:
        """The classes built with the cache: all without JIT, else the cost model's choice
        (`eager_entries` None) or the K costliest."""
        if not jit:
            return list(range(len(self.class_rep)))
        if eager_entries is None:
            return self.auto_eager(AUTO_EAGER_SHARE * compile_seconds)
        return self.costliest(eager_entries) if eager_entries > 0 else []

    def estimated_costs(self, follow: Optional[np.ndarray] = None) -> np.ndarray:
        """The estimated cost of each class's entry (XGrammar-2 §3.5): the regular tokens whose
        first byte its state may read (its byte edges and FIRST of its rule edges), a quarter
        for a pure state (a table walk); plus, when the state is final, CONTEXT_WEIGHT for each
        token whose first byte may follow its rule (`follow`, else the schedule's): the context
        term."""
        fsm = self.fsm
        follow = self.follow if follow is None else follow
        per_byte = vocab_facts(self.vocab).heads
        first = self.first if self.first is not None else np.zeros((len(fsm.rule_start), 256), dtype=np.bool_)
        pure = np.full(len(fsm.state_rule), -1, dtype=np.int32)
        PW.mark_pure_states(fsm, 0, len(pure), 0, len(pure), pure)
        reps = self.class_rep.astype(np.int64)
        n = len(reps)
        # byte edges: +1 at lo, -1 after hi, per class row; a running sum > 0 marks the bytes read
        starts, ends = fsm.byte_indptr[reps], fsm.byte_indptr[reps + 1]
        count = (ends - starts).astype(np.int64)
        edges = np.repeat(starts - np.concatenate([[0], np.cumsum(count)[:-1]]), count) + np.arange(count.sum())
        rows = np.repeat(np.arange(n), count)
        marks = np.zeros((n, 257), dtype=np.int64)
        np.add.at(marks, (rows, fsm.byte_lo[edges].astype(np.int64)), 1)
        np.add.at(marks, (rows, fsm.byte_hi[edges].astype(np.int64) + 1), -1)
        readable = np.cumsum(marks, axis=1)[:, :256] > 0
        # rule edges: FIRST of the referenced rule
        starts, ends = fsm.ref_indptr[reps], fsm.ref_indptr[reps + 1]
        count = (ends - starts).astype(np.int64)
        edges = np.repeat(starts - np.concatenate([[0], np.cumsum(count)[:-1]]), count) + np.arange(count.sum())
        np.logical_or.at(readable, np.repeat(np.arange(n), count), first[fsm.ref_rule[edges]])
        costs = readable.astype(np.float64) @ per_byte
        costs[pure[reps] >= 0] *= 0.25
        if follow is not None:  # the context term: a final state's rule may end before the token
            final = np.flatnonzero(fsm.is_final[reps])
            costs[final] += CONTEXT_WEIGHT * (follow[fsm.state_rule[reps[final]]].astype(np.float64) @ per_byte)
        return costs

    def costliest(self, k: int) -> list:
        """The k classes of highest estimated cost, most expensive first."""
        return np.argsort(-self.estimated_costs(), kind="stable")[:k].tolist()

    def auto_eager(self, budget: float) -> list:
        """The classes the cost model builds at compile time: costliest first, at most
        AUTO_EAGER_MAX, each estimated at MIN_EAGER_COST of the vocabulary or more, while their
        predicted build time fits in `budget` seconds."""
        floor = MIN_EAGER_COST * len(self.vocab.sorted_ids)
        if not len(self.class_rep) or budget < floor * SECONDS_PER_COST:
            return []
        costs = self.estimated_costs()
        chosen = []
        for c in np.argsort(-costs, kind="stable")[:AUTO_EAGER_MAX].tolist():
            predicted = costs[c] * SECONDS_PER_COST
            if costs[c] >= floor and predicted <= budget:
                chosen.append(int(c))
                budget -= predicted
        return chosen

    @property
    def unbuilt(self) -> int:
        """Classes whose entry is not built yet (JIT); 0 once every class has one."""
        return int(np.count_nonzero(self.state_entry[self.class_rep] == UNBUILT))

    def missing(self, states: np.ndarray) -> set:
        """The classes of `states` whose (FREE-zone) entry is not built."""
        return set(self.state_class[states[self.state_entry[states] == UNBUILT]].tolist())
