"""XGrammar-2 §3.6, the run-time half of repetition compression: the entries of a counted
repetition's states (xg2ref/grammar/repetition.py is the IR half).

An item of a counted repetition carries its count, and the entry serving it depends on the
count's zone (kernels/mask_fill.py `count_zone`): FREE (no bound within a token's reach: the
state's ordinary entry), NOEXIT (the rule cannot end that soon) or the exact count (near a
bound). The FREE entry is built like any other; the others on first use (`_bound_zones`), and
for a shallow repetition (`shallow_counted_rules`) derived from the FREE entry's record without
parsing again (`_derived`).

`CountedEntries` is a part of `AdaptiveTokenMaskCache` (cache.py), which holds the state it reads.
"""

from __future__ import annotations

import numpy as np

from ..fsm.build import FSMArrays
from ..fsm.fsm import REPEAT_UNBOUNDED
from ..kernels import classify as KC
from ..kernels import mask_fill as MF


class CountedEntries:
    """The zones of a counted repetition's entries (a part of AdaptiveTokenMaskCache)."""

    def _has_zone(self, c: int, zone: int) -> bool:
        s = int(self._class_rep[c])
        if zone == MF.ZONE_NOEXIT:
            return self._noexit_entry[s] >= 0
        return ((s << 32) | int(zone)) in self._exact

    def _bound_zones(self, c: int) -> list:
        """The zones other than FREE that counts of class c's repetition fall in: NOEXIT, and
        every count within the longest token of a bound (at most 2L + 2 of them)."""
        rule = self._fsm.state_rule[self._class_rep[c]]
        lo, hi, slack = int(self._fsm.rule_rep_lo[rule]), int(self._fsm.rule_rep_hi[rule]), self._slack
        near = set(range(max(lo - 2 - slack, 0), max(lo - 1, 0)))
        if hi < REPEAT_UNBOUNDED:
            near |= set(range(max(hi - 2 - slack, 0), hi))
        zones = {int(MF.count_zone(lo, hi, k, slack)) for k in near}
        if lo - 1 - slack > 0:
            zones.add(MF.ZONE_NOEXIT)
        return sorted(z for z in zones if z != MF.ZONE_FREE)

    def _derived(self, c: int, zone: int) -> tuple[np.ndarray, np.ndarray]:
        """The entry of class c for a zone other than FREE, from the FREE entry's record (a
        shallow counted repetition, see `shallow_counted_rules`). With cap copies still allowed
        (r - 1 - count; unbounded in the NOEXIT zone, where no token can reach a bound):

            t read inside, fewest copies <= cap                        |- accepted
            t read inside otherwise, the rule may not end inside it    |- rejected
            t read inside otherwise, it may                            |- uncertain
            t not read inside, FREE rejects it                         |- rejected (FREE allows more)
            t not read inside, FREE does not reject it                 |- uncertain
        """
        loops, exits, cls = self._records[c]
        inside = loops >= 0
        if zone == MF.ZONE_NOEXIT:
            return np.flatnonzero(inside).astype(np.int32), np.zeros(0, np.int32)
        rule = self._fsm.state_rule[self._class_rep[c]]
        cap = int(self._fsm.rule_rep_hi[rule]) - 1 - int(zone)
        fits = inside & (loops <= cap)
        unc = (inside & ~fits & exits) | (~inside & (cls != KC.REJECTED))
        return np.flatnonzero(fits).astype(np.int32), np.flatnonzero(unc).astype(np.int32)


def shallow_counted_rules(fsm: FSMArrays) -> np.ndarray:
    """bool[R]: counted repetitions whose machine references only rules that reference none
    (a JSON string's characters): `CX.copies_completed` can read their copy count off the
    chart, so their entries near a bound are derived from the FREE one (`_derived`)."""
    src_rule = fsm.state_rule[np.repeat(np.arange(len(fsm.state_rule)), np.diff(fsm.ref_indptr))]
    references = np.bincount(src_rule, minlength=len(fsm.rule_start)) > 0
    out = fsm.rule_rep_lo >= 0
    out[src_rule[references[fsm.ref_rule]]] = False
    return out
