"""XGrammar-2 §3.4 and XGrammar §3.1-§3.2: the adaptive token-mask cache.

Most of a token mask does not depend on the parse stack. For every scannable FSM state (a state
with byte edges) the vocabulary splits, from that state alone, into

- **accepted** tokens: their bytes can be read without leaving the state's rule;
- **rejected** tokens: they die inside the rule, and wherever the rule may end first, no
  parent of the rule can read what is left (context expansion, XGrammar §3.2);
- **uncertain** tokens: the rule may end inside them and a parent might go on; only these
  need the full Earley chart at run time.

The inference rules and the loops sit in `xg2ref/kernels/classify.py` (building entries)
and `xg2ref/kernels/mask_fill.py` (using them); lookahead assertions, inferred or verified,
filter tokens while entries are built (`xg2ref/lookahead.py`). This module builds
one entry per class of scannable states that read every token alike (xg2ref/mask/state_classes.py:
the states of a long repetition share one), eagerly, and stores it in the smallest of three forms
(XGrammar §3.1, Figure 5): the list of accepted ids, the list of rejected ids, or a bitset of
the accepted ids (int32 words, the bitmask layout). Uncertain tokens are kept as indices into
the byte-sorted vocabulary so that the run-time check can reuse shared prefixes.

At run time (`AdaptiveTokenMaskCache.fill`, XGrammar Algorithm 1) the accepted sets of the
current set's scannable states are OR-ed into the bitmask, and their uncertain tokens not
already accepted are run through the full chart.

Example: for `root ::= "[" item ("," item)* "]"; item ::= [a-z]+` and the state of `item` after
one letter, `"ab"` is accepted, `"1"` rejected, and `"a,"` uncertain (item may end after `a`,
and `,` can follow it); `"a)"` is rejected: no parent of item reads `)`.

Entries are built eagerly, or with JIT (§3.5) on the first visit of a state, the K classes of
highest estimated cost first (`estimated_costs`); with a cross-grammar cache (§3.3,
xg2ref/mask/cross_grammar.py) an entry another grammar built for the same rule machine is
reused and only the tokens its context decides are classified again.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np

from ..earley import EarleyParser
from ..exceptions import GrammarLimitError
from ..fsm.build import FSMArrays
from ..kernels import classify as KC
from ..kernels import earley as K
from ..kernels import mask_fill as MF
from ..lookahead import LookaheadArrays
from ..tokenizer_info import VocabArrays
from ..util import bound_kernel
from .classifier import Classifier, vocab_facts
from .counted import CountedEntries, shallow_counted_rules
from .entries import (KIND_ACCEPTED, KIND_BITSET, UNBUILT, CacheStats, Column, MaskCacheArrays, arrays_layout,
                      pack_ids)
from .jit import AUTO_EAGER_SHARE, JitEntries
from .state_classes import shareable_rules, state_classes


class AdaptiveTokenMaskCache(JitEntries, CountedEntries):
    """The cache of one compiled grammar: an entry per class of scannable states, and the
    run-time fill.

    With `jit` (XGrammar-2 §3.5), entries are built on the first visit of one of their states
    (when a mask is filled there), except the `eager` classes named up front; masks are the same
    either way. A state of a counted repetition (§3.6) has an entry per zone of counts
    (xg2ref/grammar/repetition.py): the FREE one is built like any other; the NOEXIT one and
    those of single counts near a bound are built on first use, JIT or not.
    """

    def __init__(self, fsm: FSMArrays, vocab: VocabArrays, vocab_size: int,
                 progress: Optional[Callable[[int, int], None]] = None, lookahead: Optional[LookaheadArrays] = None,
                 follow: Optional[np.ndarray] = None, share_entries: bool = True, jit: bool = False,
                 pool=None, eager_entries: Optional[int] = 0, first_rows: Optional[np.ndarray] = None,
                 classes: Optional[Callable[[int], np.ndarray]] = None, max_bytes: int = -1,
                 compile_seconds: float = 0.0):
        start = time.perf_counter()
        self.max_bytes = max_bytes  # entries past this many bytes raise GrammarLimitError (negative: no limit)
        self._entry_bytes = 0
        self.vocab = vocab
        self.vocab_size = vocab_size
        self._words = (vocab_size + 31) // 32
        scannable = np.flatnonzero(np.diff(fsm.byte_indptr) > 0).astype(np.int32)
        longest = vocab_facts(vocab).longest
        if share_entries and len(scannable):
            # one entry per class of states that read every token alike (xg2ref/mask/state_classes.py)
            # (`classes(steps)`: the same partition from a caller that holds it in pieces, linking.py)
            labels = (classes(longest + 1) if classes is not None
                      else state_classes(fsm, longest + 1, shareable_rules(fsm)))[scannable]
            _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
            rank = np.empty(len(first), dtype=np.int64)
            rank[np.argsort(first)] = np.arange(len(first))  # classes numbered in state order
            member_class = rank[inverse.reshape(-1)]
        else:
            member_class = np.arange(len(scannable))
        n_classes = int(member_class.max(initial=-1)) + 1
        self._class_rep = np.zeros(n_classes, dtype=np.int32)
        self._class_rep[member_class[::-1]] = scannable[::-1]  # the first state of each class
        order = np.argsort(member_class, kind="stable")
        self._members_flat = scannable[order]  # the states of class c: _members(c), CSR over this
        self._members_ptr = np.concatenate([[0], np.cumsum(np.bincount(member_class, minlength=n_classes))])
        self._state_entry = np.full(len(fsm.state_rule), MF.NO_ENTRY, dtype=np.int32)
        self._state_entry[scannable] = UNBUILT
        # counted repetitions (§3.6): a seed count per class for the FREE zone, other zones apart
        self._fsm, self._slack = fsm, longest
        counted_rule = fsm.rule_rep_lo >= 0
        self._counted = bool(counted_rule.any())
        self._class_counted = counted_rule[fsm.state_rule[self._class_rep]]
        self._class_unordered = (fsm.rule_required >= 0)[fsm.state_rule[self._class_rep]]
        self._noexit_entry = np.full(len(fsm.state_rule), MF.NO_ENTRY, dtype=np.int32)
        self._noexit_entry[scannable[counted_rule[fsm.state_rule[scannable]]]] = UNBUILT
        self._exact: dict = {}  # state << 32 | count -> entry
        self._shallow = shallow_counted_rules(fsm)
        self._records: dict = {}  # class -> (loops, exits, FREE classes): entries near a bound derived
        self._classifier = Classifier(fsm, vocab, lookahead, follow)
        self._pool = pool  # a cross_grammar.PoolView, or None
        self._first = first_rows  # FIRST(r) as bool[R, 256], for cost estimates (lookahead.first_bytes)
        self._regular_words = np.zeros(self._words, dtype=np.int32)
        pack_ids(vocab.sorted_ids, self._regular_words)
        self._buffer = np.zeros(len(vocab.sorted_ids), dtype=np.int32)
        self._parts: dict[str, list] = {"state": [], "kind": [], "list": [], "bitset": [], "unc": [], "count": []}
        self._packed = 0  # entries already in the flat arrays (`_pack` appends the others)
        self._tallies = [0, 0, 0, 0, 0, 0]  # accepted, rejected, uncertain; entries of each kind
        self._columns = {"state": Column(np.int32), "kind": Column(np.int8), "list_indptr": Column(np.int64),
                         "list_ids": Column(np.int32), "bitset_offset": Column(np.int64),
                         "bitset_words": Column(np.int32), "unc_indptr": Column(np.int64),
                         "unc_sorted": Column(np.int32), "counts": Column(np.int64, 3)}
        self._columns["list_indptr"].extend([0])
        self._columns["unc_indptr"].extend([0])
        self._exact_packed = (-1, None)
        self._cand = np.zeros(1, dtype=np.int32)  # the fill kernel's candidates (room for every uncertain id)
        self._cand_tmp = np.zeros_like(self._cand)
        self._unbuilt = n_classes
        self._entry_mark = np.zeros(1, dtype=np.int64)  # the fill kernel's marks, one per entry + a counter
        self._scratch = np.zeros(self._words, dtype=np.int32)
        self._fill = None  # the fill kernel's entry, bound on first use
        self._state_class = np.full(len(fsm.state_rule), -1, dtype=np.int64)  # class of each state
        self._state_class[scannable] = member_class
        self.build_seconds = time.perf_counter() - start  # grows with every entry built
        if not jit:
            self._build(range(n_classes), progress)
        elif eager_entries is None:  # K chosen by the cost model
            self._build(self.auto_eager(fsm, follow, AUTO_EAGER_SHARE * compile_seconds), progress)
        else:  # the K entries estimated to cost most are built now, the others when first met
            self._build(self.costliest(eager_entries, fsm, follow) if eager_entries > 0 else [], progress)

    def _build(self, classes, progress=None) -> None:
        """Build the entries of `classes` (class numbers, or (class, zone) pairs for a counted
        repetition's other zones: ZONE_NOEXIT or a count) and repack the flat arrays."""
        start = time.perf_counter()
        parts, vocab, words = self._parts, self.vocab, self._words
        classes = list(classes)
        n_sorted = len(vocab.sorted_ids)
        done = 0
        while done < len(classes):
            job = classes[done]
            done += 1
            c, zone = job if isinstance(job, tuple) else (job, MF.ZONE_FREE)
            if zone != MF.ZONE_FREE and self._has_zone(c, zone):
                continue
            s = int(self._class_rep[c])
            seed = 0 if not self._class_counted[c] else (
                K.FREE_BASE if zone == MF.ZONE_FREE else K.NOEXIT_BASE if zone == MF.ZONE_NOEXIT else int(zone))
            if self._class_unordered[c]:
                acc, unc = self._unordered_entry(s)
            elif c in self._records and zone != MF.ZONE_FREE:
                acc, unc = self._derived(c, zone)
            elif self._class_counted[c] and zone == MF.ZONE_FREE and self._shallow[self._fsm.state_rule[s]]:
                cls = self._classifier.classify(s, record=True, count=seed)
                acc, unc = self._classifier.accepted().copy(), self._classifier.uncertain().copy()
                self._records[c] = (self._classifier.loops, self._classifier.exits.astype(np.bool_), cls)
                classes.extend((c, z) for z in self._bound_zones(c))  # cheap now: all in this repack
            elif self._pool is not None:  # through the cross-grammar cache (mask/cross_grammar.py)
                acc, unc = self._pool.build(s, self._members(c), self._classifier, seed)
            else:
                self._classifier.classify(s, count=seed)
                acc, unc = self._classifier.accepted(), self._classifier.uncertain()
            n_acc, n_unc = len(acc), len(unc)
            parts["count"].append((n_acc, n_sorted - n_acc - n_unc, n_unc))
            # the smallest form: a list of 4-byte ids, or a bitset of `words` 4-byte words
            kind = int(np.argmin([n_acc, n_sorted - n_acc - n_unc, words]))
            parts["kind"].append(kind)
            if kind == KIND_BITSET:
                bits = np.zeros(words, dtype=np.int32)
                KC.pack_sorted(acc, vocab.sorted_ids, bits)
                parts["bitset"].append(bits)
                parts["list"].append(self._buffer[:0].copy())
            elif kind == KIND_ACCEPTED:
                parts["list"].append(np.sort(vocab.sorted_ids[acc]))
            else:
                rejected = np.ones(n_sorted, dtype=np.bool_)
                rejected[acc] = False
                rejected[unc] = False
                parts["list"].append(np.sort(vocab.sorted_ids[rejected]))
            parts["unc"].append(unc.copy())
            parts["state"].append(s)
            self._entry_bytes += parts["list"][-1].nbytes + 4 * n_unc + (4 * words if kind == KIND_BITSET else 0) + 64
            if 0 <= self.max_bytes < self._entry_bytes:
                raise GrammarLimitError(f"the grammar's mask-cache entries need more than {self.max_bytes:,} bytes "
                                        f"(what GrammarCompiler's max_grammar_bytes leaves after the FSM arrays)")
            e = self._packed + len(parts["kind"]) - 1
            members = self._members(c)
            if zone == MF.ZONE_FREE:
                self._state_entry[members] = e
                self._unbuilt -= 1
            elif zone == MF.ZONE_NOEXIT:
                self._noexit_entry[members] = e
            else:
                for m in members.tolist():
                    self._exact[(m << 32) | int(zone)] = e
            if progress is not None:
                progress(done, len(classes))
        self.build_seconds += time.perf_counter() - start
        self._pack()

    def _unordered_entry(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """The entry of state s of an unordered rule (kernels/earley.py), whose items differ in
        the set of members seen: built with the stand-in sets NONE (every guard fails) and ALL
        (every guard passes). A token NONE accepts is accepted whatever the set, one ALL rejects
        is rejected whatever the set; the rest are uncertain (checked on the real chart)."""
        self._classifier.classify(s, count=K.STRICT_BASE)
        sure = self._classifier.accepted().copy()
        self._classifier.classify(s, count=K.FREE_BASE)
        maybe = np.union1d(self._classifier.accepted(), self._classifier.uncertain())
        return sure, np.setdiff1d(maybe, sure, assume_unique=True).astype(sure.dtype)

    def _members(self, c: int) -> np.ndarray:
        """The scannable states of class c."""
        return self._members_flat[self._members_ptr[c]:self._members_ptr[c + 1]]

    def _pack(self) -> None:
        """Append the entries built since the last call to the flat arrays (amortized: a JIT
        build costs its own entry, not a copy of every entry before it)."""
        parts, cols = self._parts, self._columns
        tallies = self._tallies
        for k, kind in enumerate(parts["kind"]):
            for i, c in enumerate(parts["count"][k]):
                tallies[i] += c
            tallies[3 + kind] += 1
            cols["state"].extend([parts["state"][k]])
            cols["kind"].extend([kind])
            cols["list_ids"].extend(parts["list"][k])
            cols["list_indptr"].extend([cols["list_ids"].n])
            cols["bitset_offset"].extend([cols["bitset_words"].n if kind == KIND_BITSET else -1])
            if kind == KIND_BITSET:
                cols["bitset_words"].extend(parts["bitset"].pop(0))
            cols["unc_sorted"].extend(parts["unc"][k])
            cols["unc_indptr"].extend([cols["unc_sorted"].n])
            cols["counts"].extend([parts["count"][k]])
        self._packed += len(parts["kind"])
        for key in parts:
            parts[key].clear()
        if self._exact_packed[0] != len(self._exact):
            order = sorted(self._exact)
            self._exact_packed = (len(self._exact), (np.array(order, dtype=np.int64),
                                                     np.array([self._exact[k] for k in order], dtype=np.int32)))
        ex_key, ex_entry = self._exact_packed[1]
        self.arrays = MaskCacheArrays(
            state_entry=self._state_entry, entry_state=cols["state"].view(), entry_kind=cols["kind"].view(),
            list_indptr=cols["list_indptr"].view(), list_ids=cols["list_ids"].view(),
            bitset_offset=cols["bitset_offset"].view(), bitset_words=cols["bitset_words"].view(),
            unc_indptr=cols["unc_indptr"].view(), unc_sorted=cols["unc_sorted"].view(),
            regular_words=self._regular_words, counts=cols["counts"].view(), noexit_entry=self._noexit_entry,
            ex_key=ex_key, ex_entry=ex_entry, count_slack=np.array([self._slack], dtype=np.int64),
        )
        n = self._packed
        self.stats = CacheStats(n, *tallies[:3], tuple(tallies[3:]), self.build_seconds, self.memory_size_bytes)
        if len(self._entry_mark) < n + 1:  # room for the new entries' marks; the counter goes last
            marks = np.zeros(max(n + 1, 2 * len(self._entry_mark)), dtype=np.int64)
            marks[-1] = self._entry_mark[-1]
            self._entry_mark = marks
        if len(self._cand) < max(len(self.arrays.unc_sorted), 1):
            self._cand = np.zeros(max(len(self.arrays.unc_sorted), 2 * len(self._cand)), dtype=np.int32)
            self._cand_tmp = np.zeros_like(self._cand)
        self._fill_scratch = MF.FillScratch(self._entry_mark, self._scratch, self._cand, self._cand_tmp)

    @property
    def classifier(self) -> Classifier:
        """The classifier that builds this cache's entries (its FOLLOW1 memo, lookahead filters)."""
        return self._classifier

    @property
    def class_representatives(self) -> np.ndarray:
        """int32[C]: the first scannable state of each class of states sharing an entry."""
        return self._class_rep

    @property
    def state_entry(self) -> np.ndarray:
        """int32[S]: the entry of each state (NO_ENTRY: no byte edges, UNBUILT: not built yet)."""
        return self._state_entry

    @property
    def memory_size_bytes(self) -> int:
        """Bytes of the entries (every array of `MaskCacheArrays`)."""
        return int(sum(a.nbytes for a in self.arrays))

    def _fill_args(self, parser: EarleyParser, not_regular, stop_ids, words) -> tuple:
        return (parser.arrays, parser.chart, self.arrays, self.vocab, self._fill_scratch, not_regular, stop_ids, words)

    def fill(self, parser: EarleyParser, words: np.ndarray, not_regular: np.ndarray,
             stop_ids: np.ndarray) -> tuple[int, bool]:
        """Write the tokens allowed now into int32 `words` (cleared first): the regular tokens
        allowed by the grammar less `not_regular`, plus `stop_ids` when the input is a sentence.

        Callers pass the same arrays on every call (the kernel entry is bound to their types).
        Returns the number of uncertain tokens checked against the full chart, and whether
        every id is allowed.
        """
        args = self._fill_args(parser, not_regular, stop_ids, words)
        if self._fill is None:
            self._fill = bound_kernel(MF.fill_mask, *args)
            self._fill_layout = arrays_layout(self.arrays)
        status, j, n_cand, full = self._fill(*args)
        if status == MF.NEED_ENTRY:  # JIT (§3.5): build what this set needs, then fill
            c = parser.chart
            k = int(c.meta[K.META_N_SETS]) - 1
            items = slice(c.set_start[k], c.set_start[k + 1])
            self.ensure_entries(c.item_state[items], c.item_count[items])
            args = self._fill_args(parser, not_regular, stop_ids, words)
            if arrays_layout(self.arrays) != self._fill_layout:  # the bound entry takes these types only
                self._fill = bound_kernel(MF.fill_mask, *args)
                self._fill_layout = arrays_layout(self.arrays)
            status, j, n_cand, full = self._fill(*args)
        if status != K.OK:
            v = self.vocab
            while status != K.OK:
                parser._grow(status)
                status, j = MF.check_candidates(parser.arrays, parser.chart, v.token_bytes, v.token_offsets,
                                                v.sorted_ids, self._cand, n_cand, j, words)
            MF.finish_mask(parser.arrays, parser.chart, not_regular, stop_ids, words)
            full = MF.all_allowed(words, self.vocab_size)
        return n_cand, bool(full)
