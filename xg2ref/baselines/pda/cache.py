"""XGrammar §3.1–§3.2 for the pushdown automaton: the adaptive token mask cache keyed by the state
on top of a stack, built ahead of time, with context expansion (Alg. 2).

One entry per scannable state (a state with a byte edge), built by walking the byte-sorted
vocabulary from that state alone (xg2ref/kernels/pda_cache.py `entry_walk`): accepted tokens
are accepted in every context, uncertain ones need the stack, the rest are rejected. There is no
sharing between states (XGrammar-1 had none; xg2ref's state classes are an XGrammar-2 idea).
Adaptive storage keeps the smaller of the accepted and rejected sets beside the uncertain one
(the balanced bitset form of §3.1 is left out: it changes the bytes held, not a mask).

`PDACacheStats` carries the counts of XGrammar §3.1–§3.3: entries, uncertain tokens (with and
without context expansion they are the paper's 1,134 -> 120), bytes held against one bitset per
entry, and the share of the vocabulary's characters the walks read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ...kernels import pda_cache as C
from ...kernels.trie_walk import TrieArrays, trie_subtree_end
from ...lookahead import LookaheadArrays, no_lookahead
from ...tokenizer_info import VocabArrays
from .machines import PDAArrays
from .stack import PersistentStack


@dataclass
class PDACacheStats:
    """What building the cache did (XGrammar §3.1–§3.3's counts)."""

    entries: int = 0
    accepted: int = 0
    rejected: int = 0
    uncertain: int = 0
    balanced: int = 0  # entries held as a bitset (neither list is smaller)
    stored_bytes: int = 0  # the lists and bitsets held
    bitset_bytes: int = 0  # one vocabulary bitset per entry, for comparison
    bytes_read: int = 0  # bytes the walks read
    bytes_total: int = 0  # bytes of the vocabulary, times the entries
    seconds: float = 0.0

    @property
    def read_share(self) -> float:
        return self.bytes_read / self.bytes_total if self.bytes_total else 0.0


def vocabulary_trie(vocab: VocabArrays) -> TrieArrays:
    """The regular tokens in byte order, by id (kernels/trie_walk.py)."""
    sub = trie_subtree_end(vocab.token_offsets, vocab.sorted_ids, vocab.sorted_lcp)
    return TrieArrays(vocab.token_bytes, vocab.token_offsets, vocab.sorted_ids, vocab.sorted_lcp, sub)


def context_arrays(pda: PDAArrays, lookahead: Optional[LookaheadArrays] = None) -> C.ContextArrays:
    """Alg. 2's expanded-suffix automata: rule R starts at every v of an edge u -R-> v; a
    state is final there when it is final in its rule or calls a rule. With `lookahead`, the
    rules' filters ride along (else none)."""
    num_rules, num_states = len(pda.rule_start), len(pda.state_rule)
    order = np.argsort(pda.ref_rule, kind="stable")
    counts = np.bincount(pda.ref_rule, minlength=num_rules) if len(pda.ref_rule) else np.zeros(num_rules, np.int64)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    calls = np.diff(pda.ref_indptr) > 0
    la = lookahead if lookahead is not None else no_lookahead(num_rules)
    return C.ContextArrays(indptr, np.ascontiguousarray(pda.ref_dst[order]), pda.is_final | calls,
                           np.zeros(num_states, np.int32), np.zeros(num_states, np.int32),
                           np.zeros(num_states, np.int64), np.zeros(1, np.int64), la.la_start, la.la_next, la.la_final)


def walk_options(max_stacks: int, prefix_reuse: bool, context_expansion: bool, rule: int = 0) -> np.ndarray:
    opts = np.zeros(C.WALK_OPTIONS, np.int64)
    opts[C.W_MAX_STACKS], opts[C.W_PREFIX_REUSE], opts[C.W_CONTEXT] = max_stacks, prefix_reuse, context_expansion
    opts[C.W_RULE] = rule
    return opts


class PDATokenMaskCache:
    """The entries of every scannable state (module docstring) and the fill of Alg. 1."""

    def __init__(self, pda: PDAArrays, vocab: VocabArrays, *, context_expansion: bool = True,
                 prefix_reuse: bool = True, max_stacks: int = 100_000, lookahead: Optional[LookaheadArrays] = None,
                 progress: Optional[Callable[[int, int], None]] = None):
        start = time.perf_counter()
        self.pda = pda
        self.trie = vocabulary_trie(vocab)
        self.context = context_arrays(pda, lookahead)
        self.prefix_reuse = prefix_reuse
        self.stats = PDACacheStats()
        m = len(vocab.sorted_ids)
        longest = int(np.diff(vocab.token_offsets).max(initial=0))
        self.pops = np.zeros(longest + 2, np.bool_)
        stack = PersistentStack(pda, max_stacks)
        scannable = np.flatnonzero(np.diff(pda.byte_indptr) > 0)
        num_states = len(pda.state_rule)
        kind = np.zeros(num_states, np.int8)
        lists: list = [np.zeros(0, np.int32)] * num_states
        uncertain: list = [np.zeros(0, np.int32)] * num_states
        bitsets: list = [np.zeros(0, np.uint32)] * num_states
        vocab_size = len(vocab.token_offsets) - 1
        num_words = (vocab_size + 31) // 32
        out = np.zeros(m, np.int8)
        vocab_bytes = int(np.diff(vocab.token_offsets)[vocab.sorted_ids].sum())
        s = self.stats
        for n, q in enumerate(scannable):
            opts = walk_options(max_stacks, prefix_reuse, context_expansion, int(pda.state_rule[q]))

            def walk(st, q=int(q), opts=opts):
                out[:] = C.REJECTED
                opts[C.W_BYTES_READ] = 0
                return C.entry_walk(pda, st, self.trie, self.context, q, out, self.pops, opts)

            stack.run(walk)
            acc = np.flatnonzero(out == C.ACCEPTED).astype(np.int32)
            unc = np.flatnonzero(out == C.UNCERTAIN).astype(np.int32)
            rejected = m - len(acc) - len(unc)
            if min(len(acc), rejected) > num_words:  # balanced: a bitset is smaller than either list
                kind[q], bitsets[q] = C.KIND_BITSET, _bitset(vocab.sorted_ids[acc], num_words)
            elif len(acc) <= rejected:
                kind[q], lists[q] = C.KIND_ACCEPTED, acc
            else:
                kind[q], lists[q] = C.KIND_REJECTED, np.flatnonzero(out == C.REJECTED).astype(np.int32)
            uncertain[q] = unc
            s.entries += 1
            s.accepted += len(acc)
            s.rejected += rejected
            s.uncertain += len(unc)
            s.bytes_read += int(opts[C.W_BYTES_READ])
            s.bytes_total += vocab_bytes
            if progress is not None:
                progress(n + 1, len(scannable))
        self.entries = C.EntryArrays(kind, _indptr(lists), _concat(lists), _indptr(uncertain), _concat(uncertain),
                                     _indptr(bitsets), np.concatenate(bitsets).astype(np.uint32))
        s.stored_bytes = int(sum(a.nbytes for a in self.entries))
        s.bitset_bytes = s.entries * num_words * 4
        s.balanced = int((kind == C.KIND_BITSET).sum())
        regular = np.zeros(vocab_size, np.bool_)
        regular[vocab.sorted_ids] = True
        regular_words = np.packbits(np.concatenate([regular, np.zeros(32 * num_words - vocab_size, np.bool_)]),
                                    bitorder="little").view(np.uint32)
        self.scratch = C.FillScratch(np.zeros(num_words, np.uint32), regular_words, np.zeros(vocab_size, np.int32),
                                    np.zeros(0, np.bool_))
        s.seconds = time.perf_counter() - start

    def fill(self, stack: PersistentStack, words: np.ndarray) -> None:
        """Alg. 1 into uint32 `words` (the regular tokens; the caller adds stop tokens)."""
        opts = walk_options(stack.max_stacks, self.prefix_reuse, False)
        stack.run(lambda st: C.fill_from_cache(self.pda, st, self.trie, self.entries, words, self.scratch, opts))

    @property
    def memory_size_bytes(self) -> int:
        return self.stats.stored_bytes


def walk_every_token(stack: PersistentStack, trie: TrieArrays, context: C.ContextArrays, pops: np.ndarray,
                     out: np.ndarray, prefix_reuse: bool) -> int:
    """Every regular token read from the last record (no cache: the PDA baseline's mask). out:
    int8[regular tokens], ACCEPTED or REJECTED per sorted position. Returns the bytes read."""
    opts = walk_options(stack.max_stacks, prefix_reuse, False)

    def walk(st):
        out[:] = C.REJECTED
        opts[C.W_BYTES_READ] = 0
        return C.walk_tokens(stack.pda, st, trie, context, 0, len(trie.sorted_ids), out, pops, opts)

    stack.run(walk)
    return int(opts[C.W_BYTES_READ])


def _bitset(token_ids: np.ndarray, num_words: int) -> np.ndarray:
    """uint32[num_words] with the bits of `token_ids` set."""
    bits = np.zeros(32 * num_words, np.bool_)
    bits[token_ids] = True
    return np.packbits(bits, bitorder="little").view(np.uint32)


def _indptr(lists: list) -> np.ndarray:
    return np.concatenate([[0], np.cumsum([len(a) for a in lists])]).astype(np.int64)


def _concat(lists: list) -> np.ndarray:
    return np.concatenate(lists).astype(np.int32) if lists else np.zeros(0, np.int32)
