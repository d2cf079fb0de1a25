"""The Python side of entry building: `Classifier` runs the classify kernel
(xg2ref/kernels/classify.py: ACCEPT / REJECT / UNCERTAIN, XGrammar-2 §3.4) for one state after
another, growing its two Earley charts on demand, and holds what the kernel reads: the
vocabulary trie (`vocab_facts`), the rules' occurrences for context expansion (XGrammar §3.2,
`rule_occurrences`), the FOLLOW1 memo and the pure-state table.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple, Optional

import numpy as np

from ..earley import grown_chart
from ..fsm.build import FSMArrays
from ..kernels import classify as KC
from ..kernels import context_expansion as CX
from ..kernels import earley as K
from ..kernels import pure_walk as PW
from ..kernels import trie_walk as TW
from ..lookahead import LookaheadArrays, no_lookahead
from ..tokenizer_info import VocabArrays
from ..util import bound_kernel

# States given a row of the pure-state DFA table while building entries (1 KiB each).
MAX_PURE_ROWS = 16384

def rule_occurrences(fsm: FSMArrays) -> tuple[np.ndarray, np.ndarray]:
    """(occ_indptr, occ_dst): for each rule, the targets of the FSM edges that reference it."""
    n_rules = len(fsm.rule_start)
    rules = fsm.ref_rule.astype(np.int64)
    order = np.argsort(rules, kind="stable")
    occ_dst = fsm.ref_dst[order].astype(np.int32)
    occ_indptr = np.zeros(n_rules + 1, dtype=np.int64)
    np.cumsum(np.bincount(rules, minlength=n_rules), out=occ_indptr[1:])
    return occ_indptr, occ_dst


_TRIES: dict = {}  # id(sorted_offsets) -> (weak reference to it, VocabFacts)


class VocabFacts(NamedTuple):
    """What every mask cache over one vocabulary reads, computed once per vocabulary."""

    identity: np.ndarray  # 0..m-1 (the sorted tokens' own positions)
    subtree_end: np.ndarray  # end of each sorted token's trie subtree (TW.trie_subtree_end)
    longest: int  # bytes of the longest token
    heads: np.ndarray  # float64[256]: the regular tokens whose first byte is b (cost estimates)


def vocab_facts(vocab: VocabArrays) -> VocabFacts:
    """The `VocabFacts` of a vocabulary, computed once (its arrays are read-only)."""
    key = id(vocab.sorted_offsets)
    held = _TRIES.get(key)
    if held is None or held[0]() is not vocab.sorted_offsets:
        identity = np.arange(len(vocab.sorted_ids), dtype=np.int32)
        first = vocab.sorted_bytes[vocab.sorted_offsets[:-1][np.diff(vocab.sorted_offsets) > 0]]
        facts = VocabFacts(identity, TW.trie_subtree_end(vocab.sorted_offsets, identity, vocab.sorted_lcp),
                           int(np.diff(vocab.token_offsets).max(initial=0)),
                           np.bincount(first, minlength=256).astype(np.float64))
        held = (weakref.ref(vocab.sorted_offsets), facts)
        for k in [k for k, v in _TRIES.items() if v[0]() is None]:
            del _TRIES[k]
        _TRIES[key] = held
    return held[1]


class Classifier:
    """Runs `classify_tokens` for one state after another, growing the two charts on demand."""

    def __init__(self, fsm: FSMArrays, vocab: VocabArrays, lookahead: Optional[LookaheadArrays] = None,
                 follow: Optional[np.ndarray] = None):
        self.fsm, self.vocab = fsm, vocab
        self.lookahead = lookahead if lookahead is not None else no_lookahead(len(fsm.rule_start))
        self.occ_indptr, self.occ_dst = rule_occurrences(fsm)
        # the kernel walks the vocabulary in sorted order: give it the bytes in that order, with
        # sorted position k as the token's "id", so memory is read front to back
        facts = vocab_facts(vocab)
        self.identity, self.subtree_end, longest = facts.identity, facts.subtree_end, facts.longest
        self.comp = np.zeros(longest + 2, dtype=np.int8)
        self.path = np.zeros(longest + 2, dtype=np.int32)  # the pure walk's states (TRIE-SHARE)
        self.work = np.zeros(2 * CX.MAX_CONTEXT_RUNS + 2 * (longest + 2) + 4, dtype=np.int64)
        self.seen = np.zeros(len(fsm.rule_start) * (longest + 1) + 1, dtype=np.int64)
        # FOLLOW1: -1 = ask context expansion, 0 = the byte never follows the rule (grammar analysis)
        self.follow1 = np.full((len(fsm.rule_start), 256), CX.FOLLOW_UNKNOWN, dtype=np.int8)
        if follow is not None:
            self.follow1[~follow] = CX.FOLLOW_NEVER
        self.loop = np.zeros(256, dtype=np.bool_)
        # the pure-state table, filled one rule at a time before a state of it is classified (a
        # pure walk never leaves the rule of the state it starts from)
        self.pure_row = np.full(len(fsm.state_rule), -1, dtype=np.int32)
        self.pure_next = np.zeros((0, 256), dtype=np.int32)
        self._pure_rows = 0
        self._pure_done = np.zeros(len(fsm.rule_start), dtype=np.bool_)
        ordered = bool(np.all(fsm.state_rule[1:] >= fsm.state_rule[:-1]))
        rules = np.arange(len(fsm.rule_start))
        self._rule_lo = np.searchsorted(fsm.state_rule, rules, "left") if ordered else None
        self._rule_hi = np.searchsorted(fsm.state_rule, rules, "right") if ordered else None
        self.chart = K.new_chart()
        self.ctx_chart = K.new_chart()
        m = len(vocab.sorted_ids)
        self.acc_idx = np.zeros(m, dtype=np.int32)
        self.unc_idx = np.zeros(m, dtype=np.int32)
        self.n_list = np.zeros(2, dtype=np.int64)
        self._kernel = None  # classify_tokens' entry for these argument types (util.bound_kernel)

    def classify(self, state: int, marked: Optional[np.ndarray] = None, record: bool = False,
                 count: int = 0) -> np.ndarray:
        """The class of every sorted token; afterwards `accepted()` and `uncertain()` list the
        sorted indices of those two classes.

        `marked` (sorted indices): classify only those; the others come back rejected and are
        not listed. `record`: also fill `detail` with what each class owes to the state's rule
        alone (KC.D_*, for the cross-grammar cache). `count`: the seed item's count (a zone's
        stand-in or one count) when the state is in a counted repetition.
        """
        v = self.vocab
        self._ensure_pure(int(self.fsm.state_rule[state]))
        out = np.zeros(len(v.sorted_ids), dtype=np.int8)
        if marked is not None:
            out[marked] = KC.TODO
        self.detail = np.zeros(len(v.sorted_ids) if record else 1, dtype=np.int8)
        track = record and count >= K.STRICT_BASE  # a counted repetition's zone stand-in
        self.loops = np.full(len(v.sorted_ids) if track else 1, -1, dtype=np.int32)
        self.exits = np.zeros(len(v.sorted_ids) if track else 1, dtype=np.int8)
        self.n_list[:] = 0
        state, count, only_marked, record, track = int(state), int(count), marked is not None, bool(record), bool(track)
        while (status := CX.init_chart_at_state(self.fsm, self.chart, state, count)) != K.OK:
            self.chart = grown_chart(self.chart, status)
        j = 0
        trie = TW.TrieArrays(v.sorted_bytes, v.sorted_offsets, self.identity, v.sorted_lcp, self.subtree_end)
        context = CX.ContextArrays(self.occ_indptr, self.occ_dst, self.follow1)
        pure = PW.PureTable(self.pure_row, self.pure_next)
        scratch = KC.ClassifyScratch(self.comp, self.work, self.seen, self.loop, self.path)
        outs = KC.ClassifyOutputs(out, self.acc_idx, self.unc_idx, self.n_list, self.detail, self.loops, self.exits)
        while True:
            args = (self.fsm, self.chart, self.ctx_chart, trie, context, pure, self.lookahead, scratch, outs,
                    KC.ClassifyTask(state, j, only_marked, record, track))
            if self._kernel is None:  # every call passes these types (its own arrays, ints and bools)
                self._kernel = bound_kernel(KC.classify_tokens, *args)
            status, j, which = self._kernel(*args)
            if status == K.OK:
                return out
            if which == KC.CHART_MAIN:
                self.chart = grown_chart(self.chart, status)
            else:
                self.ctx_chart = grown_chart(self.ctx_chart, status)
            if j == 0:  # the kernel restarts from the state's own sets
                while (st := CX.init_chart_at_state(self.fsm, self.chart, state, count)) != K.OK:
                    self.chart = grown_chart(self.chart, st)


    def _ensure_pure(self, rule: int) -> None:
        """Rows of the pure-state table for the states of `rule` (all states at once when the
        states are not grouped by rule)."""
        if self._pure_done[rule]:
            return
        lo, hi = (int(self._rule_lo[rule]), int(self._rule_hi[rule])) if self._rule_lo is not None \
            else (0, len(self.pure_row))
        if self._rule_lo is None:
            self._pure_done[:] = True
        self._pure_done[rule] = True
        rows = PW.mark_pure_states(self.fsm, lo, hi, self._pure_rows, MAX_PURE_ROWS, self.pure_row)
        if rows > len(self.pure_next):
            grown = np.zeros((max(rows, 2 * len(self.pure_next)), 256), dtype=np.int32)
            grown[:self._pure_rows] = self.pure_next[:self._pure_rows]
            self.pure_next = grown
        PW.fill_pure_next(self.fsm, lo, hi, self.pure_row, self.pure_next)
        self._pure_rows = rows

    def accepted(self) -> np.ndarray:
        return self.acc_idx[:self.n_list[KC.N_ACCEPTED]]

    def uncertain(self) -> np.ndarray:
        return self.unc_idx[:self.n_list[KC.N_UNCERTAIN]]
