"""XGrammar-2 §3.6, the run-time half of repetition compression: the entries of a counted
repetition's states (xg2ref/grammar/repetition.py is the IR half).

An item of a counted repetition carries its count, and the entry serving it depends on the
count's zone (kernels/mask_fill.py `count_zone`): FREE (no bound within a token's reach: the
state's ordinary entry), NOEXIT (the rule cannot end that soon) or the exact count (near a
bound). The FREE entry is built like any other; the others on first use (`bound_zones`), and
for a shallow repetition (`shallow_counted_rules`) derived from the FREE entry's record without
parsing again (`derived`).

`CountedZones` owns what this takes: which classes are counted, the FREE entries' records,
and the tables of the other zones' entries (NOEXIT per state, exact counts by key), which it
publishes in the entry store for the fill kernel.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..fsm.build import FSMArrays
from ..fsm.fsm import REPEAT_UNBOUNDED
from ..kernels import classify as KC
from ..kernels import earley as K
from ..kernels import mask_fill as MF
from .entries import UNBUILT, EntryStore


class CountedZones:
    """The zones of the counted repetitions' entries of one cache (XGrammar-2 §3.6).

    fsm, slack       the grammar's machines and the longest token's bytes (how near is near)
    class_rep        the first state of each class; `members(c)` its states
    store            the EntryStore whose noexit_entry and exact tables this fills
    """

    def __init__(self, fsm: FSMArrays, class_rep: np.ndarray, members: Callable[[int], np.ndarray],
                 store: EntryStore, slack: int, scannable: np.ndarray):
        self.fsm, self.slack = fsm, slack
        self._class_rep, self._members, self._store = class_rep, members, store
        counted_rule = fsm.rule_rep_lo >= 0
        self.any = bool(counted_rule.any())
        self.class_counted = counted_rule[fsm.state_rule[class_rep]]  # bool[C]
        self.shallow = shallow_counted_rules(fsm)  # bool[R]
        store.noexit_entry[scannable[counted_rule[fsm.state_rule[scannable]]]] = UNBUILT
        self._exact: dict = {}  # state << 32 | count -> entry
        self.records: dict = {}  # class -> (loops, exits, FREE classes): entries near a bound derived

    def class_shallow(self, c: int) -> bool:
        """Class c's FREE entry records what the other zones derive from."""
        return bool(self.class_counted[c] and self.shallow[self.fsm.state_rule[self._class_rep[c]]])

    def seed(self, c: int, zone: int) -> int:
        """The count of the item an entry of class c in `zone` is classified from."""
        if not self.class_counted[c]:
            return 0
        return K.FREE_BASE if zone == MF.ZONE_FREE else K.NOEXIT_BASE if zone == MF.ZONE_NOEXIT else int(zone)

    def has_zone(self, c: int, zone: int) -> bool:
        s = int(self._class_rep[c])
        if zone == MF.ZONE_NOEXIT:
            return self._store.noexit_entry[s] >= 0
        return ((s << 32) | int(zone)) in self._exact

    def bound_zones(self, c: int) -> list:
        """The zones other than FREE that counts of class c's repetition fall in: NOEXIT, and
        every count within the longest token of a bound (at most 2L + 2 of them)."""
        rule = self.fsm.state_rule[self._class_rep[c]]
        lo, hi, slack = int(self.fsm.rule_rep_lo[rule]), int(self.fsm.rule_rep_hi[rule]), self.slack
        near = set(range(max(lo - 2 - slack, 0), max(lo - 1, 0)))
        if hi < REPEAT_UNBOUNDED:
            near |= set(range(max(hi - 2 - slack, 0), hi))
        zones = {int(MF.count_zone(lo, hi, k, slack)) for k in near}
        if lo - 1 - slack > 0:
            zones.add(MF.ZONE_NOEXIT)
        return sorted(z for z in zones if z != MF.ZONE_FREE)

    def missing(self, states: np.ndarray, counts: np.ndarray, state_class: np.ndarray) -> set:
        """The (class, zone) jobs that items of `states` with `counts` need and lack, with the
        FREE class first wherever the zones derive from its record."""
        jobs: set = set()
        fsm, state_entry = self.fsm, self._store.state_entry
        for s, k in zip(states.tolist(), counts.tolist()):
            rule = fsm.state_rule[s]
            if fsm.rule_rep_lo[rule] < 0 or state_entry[s] == MF.NO_ENTRY:
                continue
            zone = int(MF.count_zone(fsm.rule_rep_lo[rule], fsm.rule_rep_hi[rule], k, self.slack))
            c = int(state_class[s])
            if zone != MF.ZONE_FREE and not self.has_zone(c, zone):
                jobs.add((c, zone))
                if self.shallow[rule] and c not in self.records:
                    jobs.add(c)  # its FREE entry first: the others derive from its record
        return jobs

    def publish(self, c: int, zone: int, e: int) -> None:
        """Entry e serves class c's items in `zone` (NOEXIT or an exact count)."""
        if zone == MF.ZONE_NOEXIT:
            self._store.noexit_entry[self._members(c)] = e
            return
        for m in self._members(c).tolist():
            self._exact[(m << 32) | int(zone)] = e
        order = sorted(self._exact)
        self._store.set_exact(np.array(order, dtype=np.int64), np.array([self._exact[k] for k in order], dtype=np.int32))

    def derived(self, c: int, zone: int) -> tuple[np.ndarray, np.ndarray]:
        """The entry of class c for a zone other than FREE, from the FREE entry's record (a
        shallow counted repetition, see `shallow_counted_rules`). With cap copies still allowed
        (r - 1 - count; unbounded in the NOEXIT zone, where no token can reach a bound):

            t read inside, fewest copies <= cap                        |- accepted
            t read inside otherwise, the rule may not end inside it    |- rejected
            t read inside otherwise, it may                            |- uncertain
            t not read inside, FREE rejects it                         |- rejected (FREE allows more)
            t not read inside, FREE does not reject it                 |- uncertain
        """
        loops, exits, cls = self.records[c]
        inside = loops >= 0
        if zone == MF.ZONE_NOEXIT:
            return np.flatnonzero(inside).astype(np.int32), np.zeros(0, np.int32)
        rule = self.fsm.state_rule[self._class_rep[c]]
        cap = int(self.fsm.rule_rep_hi[rule]) - 1 - int(zone)
        fits = inside & (loops <= cap)
        unc = (inside & ~fits & exits) | (~inside & (cls != KC.REJECTED))
        return np.flatnonzero(fits).astype(np.int32), np.flatnonzero(unc).astype(np.int32)


def shallow_counted_rules(fsm: FSMArrays) -> np.ndarray:
    """bool[R]: counted repetitions whose machine references only rules that reference none
    (a JSON string's characters): `CX.copies_completed` can read their copy count off the
    chart, so their entries near a bound are derived from the FREE one (`derived`)."""
    src_rule = fsm.state_rule[np.repeat(np.arange(len(fsm.state_rule)), np.diff(fsm.ref_indptr))]
    references = np.bincount(src_rule, minlength=len(fsm.rule_start)) > 0
    out = fsm.rule_rep_lo >= 0
    out[src_rule[references[fsm.ref_rule]]] = False
    return out
