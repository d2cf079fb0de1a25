"""xgrammar's `GrammarMatcher`: token-level matching, masks, rollback and jump-forward.

The matcher feeds token bytes to the Earley parser (XGrammar-2 §3.4) and remembers how many
bytes each accepted token (or string) added, so `rollback(n)` removes the last n steps
exactly (XGrammar §3.3: the Earley sets are the history). Mask semantics
(specs/03-earley.md, "Masks"):

- a regular token is allowed iff the bytes so far followed by its bytes are a prefix of a
  sentence;
- a stop token is allowed iff the bytes so far are a sentence;
- special tokens (empty bytes, not a stop token) and padding ids are never allowed.

Masks come from the adaptive token-mask cache (XGrammar-2 §3.4, `xg2ref/mask/cache.py`): the
accepted tokens of the current scannable states, plus the uncertain ones that the full chart
accepts. `_every_token_bool_mask` keeps the direct way (every regular token through the
parser, in byte order, reusing the sets of shared prefixes) as the reference the cache is
tested against. With `override_stop_tokens`, the overriding stop tokens leave the regular set
and the tokenizer's own stop tokens join it; the latter are checked one by one.

Jump-forward (XGrammar Appendix B) follows xgrammar 0.2.8: while the input is not a sentence
and every byte edge out of the current set is the same single byte, append that byte.

Token budgets (`rule[max_tokens=N]`, xgrammar 0.2.8's semantics): each Earley item carries the
index of the last token its rule occurrence may read (kernels/earley.py). A mask is computed at
token index t = the number of steps accepted so far (tokens, strings, a stop token):

    ENFORCE   some scannable item is past its deadline (deadline < t), and some is not or the
              input is complete, and the mask of the live items alone allows a token or the
              input is complete  |-  the mask is that mask, and the next `accept_token` reads
                                     with the live items only
    RELAX     otherwise the budget gives way: the mask of every item, and the next token is
              read by every item (the rule may run on until it can end)

So enforcement follows a mask: a token accepted without a mask computed first is read by
every item, as in xgrammar; `accept_string` never enforces, `rollback` forgets the decision.
Character budgets (`max_chars`) need no such protocol: the kernel applies them at every code
point (kernels/earley.py), and a grammar that has them takes the every-token mask.

Token edges (`Token(...)`, `ExcludeToken(...)`, TokenTagDispatch) read one whole regular token
(not a stop, special or empty token). `accept_token` takes both ways at once (the bytes, and
every token edge whose set holds the token; `EarleyParser.advance_token`); `accept_string`
reads bytes only, so it never crosses a token edge. A mask ORs in the token sets of the token
edges leaving the current set; jump-forward stops at a set with token edges.

`BatchGrammarMatcher` steps a batch of matchers together (XGrammar §3.5: the masks of a batch
are made on the CPU while the GPU runs the model). Each method is the per-matcher method
applied row by row, so a batch gives exactly the results of one matcher per row:

    batch_fill_next_token_bitmask(ms, mask, idx)  =  ms[k].fill_next_token_bitmask(mask, idx[k])
    batch_accept_token(ms, tokens)                =  [ms[k].accept_token(tokens[k])]
    batch_accept_string(ms, strings)              =  [ms[k].accept_string(strings[k])]
    batch_rollback(ms, n)                         =  ms[k].rollback(n[k])
    batch_fill_temperature(ms, temps, idx)        :  temps[idx[k]] = ms[k].temperature (-1 for None)

`batch_fill_next_token_bitmask` fills the rows on up to `max_threads` threads ("auto": the
machine's cores; xgrammar's thread-safety contract: matchers of one compiled grammar may be
filled at once, one matcher by one thread at a time, so a matcher listed twice fills its rows
on one thread); the fill kernels release the GIL. The other methods run row after row in this
thread. Sizes, indices and terminated matchers are checked before any row moves; a problem
raises `BitmaskError` (a ValueError, and a RuntimeError as xgrammar's C++ raises). Where
xgrammar 0.2.8 writes the temperatures before an out-of-range index and then raises, xg2ref
raises before writing any. Both classes live here, as in xgrammar's `matcher` module.
"""

from __future__ import annotations

import warnings
from typing import Optional, Sequence, Union

import numpy as np

from .batch_fill import CORES, fill_batch
from .bitmask import bitmask_row_view, pack_bool_mask, unpack_bitmask
from .compiler import CompiledGrammar
from .earley import EarleyParser
from .exceptions import BitmaskError, MatcherError
from .intrinsics.token_sets import token_set_tables
from .kernels import mask_fill as MF
from .marker_close import Closes
from .rule_options import RuleOptionTables, active_temperature, captures, float32_temperature
from .tokenizer_info import sorted_regular_tokens, stop_token_list
from .util import layout_key

STOP_STEP = -1  # history marker: a stop token (no bytes)


def pop_history(history: list, num_tokens) -> list[int]:
    """Take the last `num_tokens` steps off a matcher's history (bytes per accepted token or
    string, STOP_STEP for a stop token), the last first; a bad count raises MatcherError and
    leaves the history as it was."""
    if not isinstance(num_tokens, (int, np.integer)) or num_tokens < 0:
        raise MatcherError(f"rollback needs a non-negative number of tokens, got {num_tokens!r}")
    if num_tokens > len(history):
        raise MatcherError(f"cannot roll back {num_tokens} tokens: only {len(history)} have been accepted")
    return [history.pop() for _ in range(num_tokens)]


_WORDS_LAYOUT = layout_key(np.zeros(1, dtype=np.int32))  # what the fill kernels write into (`_row_view`)


class GrammarMatcher:
    """Matches one token sequence against a compiled grammar (xgrammar's API)."""

    def __init__(self, compiled_grammar: CompiledGrammar, *, override_stop_tokens: Union[None, int, Sequence[int]] = None,
                 terminate_without_stop_token: bool = False, max_rollback_tokens: int = -1,
                 default_temperature: Optional[float] = None):
        if not isinstance(compiled_grammar, CompiledGrammar):
            raise TypeError(f"GrammarMatcher needs a CompiledGrammar, got {type(compiled_grammar).__name__}")
        self.compiled_grammar = compiled_grammar
        info = compiled_grammar.tokenizer_info
        self._vocab_size = info.vocab_size
        stops = stop_token_list(info, override_stop_tokens, self._vocab_size)
        self._stop_token_ids = stops
        self._vocab = info.vocab_arrays()
        if override_stop_tokens is None:  # (the vocabulary's own, shared by its matchers: read only)
            self._is_stop = self._vocab.is_stop
        else:
            self._is_stop = np.zeros(self._vocab_size, dtype=np.bool_)
            self._is_stop[stops] = True
        self._stop_set = frozenset(stops)
        self._terminate_without_stop_token = terminate_without_stop_token
        self._default_temperature = float32_temperature(default_temperature)
        if max_rollback_tokens != -1:  # as in xgrammar 0.2.8: accepted, ignored, reported as -1
            warnings.warn("max_rollback_tokens is deprecated and has no effect: rollback is always unlimited (-1)",
                          DeprecationWarning, stacklevel=2)
        self._max_rollback_tokens = -1
        self._offsets = info.token_offsets_list()  # (shared by the tokenizer's matchers)
        if override_stop_tokens is None:
            self._regular, self._regular_lcp = self._vocab.sorted_ids, self._vocab.sorted_lcp
        else:
            self._regular, self._regular_lcp = sorted_regular_tokens(self._vocab, self._is_stop)
        # the mask's int32 words: the fill kernels write a bitmask row in place, so a matcher makes
        # its own words only when it must (a row another layout, compute_bool_mask): _own_words
        self._n_words = (self._vocab_size + 31) // 32
        self._words: Optional[np.ndarray] = None
        # regular tokens that the cache does not know about / must not allow (overridden stops; none
        # when the stops are the vocabulary's own: then no pass over the vocabulary per matcher)
        if override_stop_tokens is None:
            self._extra_regular = self._not_regular = np.zeros(0, dtype=np.int64)
        else:
            base_stop = self._vocab.is_stop
            lengths = np.diff(self._vocab.token_offsets)
            self._extra_regular = np.flatnonzero(base_stop & ~self._is_stop & (lengths > 0))
            self._not_regular = np.flatnonzero(self._is_stop & ~base_stop)
        self._stop_array = np.array(stops, dtype=np.int64)
        self._token_member, self._token_words = token_set_tables(
            compiled_grammar.fsms.token_sets, self._vocab, self._is_stop, self._vocab_size)
        self._parser = EarleyParser(compiled_grammar.fsms, compiled_grammar.arrays)
        self._mask_cache = compiled_grammar.mask_cache  # (its fills' scratch is the grammar's: mask/scratch.py)
        # rule options `capture` / `temperature` (xg2ref/rule_options.py): None for grammars without
        # them; with captures, the accepted bytes (the spans are cut out of them)
        fsms = compiled_grammar.fsms
        self._options = (RuleOptionTables(fsms, compiled_grammar.arrays)
                         if fsms.captures or fsms.temperatures or fsms.markers else None)
        self._accepted: Optional[bytearray] = bytearray() if fsms.captures or fsms.markers else None
        self._budgets = len(compiled_grammar.fsms.max_tokens) > 0
        # character budgets act inside tokens: such grammars take the every-token mask
        self._char_budgets = len(compiled_grammar.fsms.max_chars) > 0
        self._enforce_pending = False  # the last mask enforced token budgets (see ENFORCE above)
        self._closes = Closes.for_grammar(fsms)  # budgets on rules with markers (xg2ref/marker_close.py)
        self._history: list[int] = []
        self._stop_accepted = False
        self._row_key: Optional[tuple] = None  # the bitmask and index of _row, with what may change (_row_view)
        self._row: Optional[np.ndarray] = None
        # a grammar without token sets, budgets or captures, and the vocabulary's own stops: a
        # token is its bytes read by the parser, a mask the cache's fill (the fast paths below)
        self._plain = not (len(self._token_member) or self._budgets or self._char_budgets or self._options
                           or self._accepted is not None or len(self._extra_regular) or len(self._token_words))

    # ---- state --------------------------------------------------------------------------

    @property
    def stop_token_ids(self) -> list[int]:
        return list(self._stop_token_ids)

    @property
    def max_rollback_tokens(self) -> int:
        """Always -1 (unlimited), whatever the constructor was given, as xgrammar 0.2.8 reports it."""
        return self._max_rollback_tokens

    @property
    def temperature(self) -> Optional[float]:
        """The sampling temperature for the next token: the largest `temperature` option of the rules
        active at the current set's scannable items, else `default_temperature` (None when unset);
        a float32 value (xg2ref/rule_options.py)."""
        if self._options is None or self._options.rule_temperature is None:
            return self._default_temperature
        found = active_temperature(self._options, self._parser.arrays, self._parser.chart, self._parser.position)
        return self._default_temperature if found is None else found

    def get_captures(self, *, deduplicate: bool = True) -> list[tuple[str, bytes]]:
        """(label, bytes) for each completion of a `capture` rule on the accept path, in the order
        of completion; with `deduplicate`, only the last (longest) of each occurrence
        (xg2ref/rule_options.py). Rollback, reset and fork carry them exactly."""
        if self._accepted is None:
            return []
        return captures(self._options, self._parser.chart, self._parser.position, self._accepted, deduplicate)

    def is_completed(self) -> bool:
        """The input so far is a sentence (or the stop token was accepted)."""
        return self._stop_accepted or self._parser.is_completed()

    def is_terminated(self) -> bool:
        """A stop token was accepted (or, with terminate_without_stop_token, the input is complete)."""
        if self._terminate_without_stop_token:
            return self._parser.is_completed()
        return self._stop_accepted

    def reset(self) -> None:
        self._parser.reset()
        self._history.clear()
        self._stop_accepted = False
        self._enforce_pending = False
        if self._accepted is not None:
            self._accepted.clear()
        if self._closes is not None:
            self._closes = Closes(self._closes.rules, self._closes.owners)

    def fork(self) -> "GrammarMatcher":
        """An independent matcher in the same state."""
        other = object.__new__(GrammarMatcher)
        other.__dict__.update(self.__dict__)
        other._parser = self._parser.copy()
        other._history = list(self._history)
        other._closes = None if self._closes is None else self._closes.copy()
        other._accepted = None if self._accepted is None else bytearray(self._accepted)
        other._words, other._row_key, other._row = None, None, None  # (buffers of its own)
        return other

    # ---- accepting ----------------------------------------------------------------------

    def accept_token(self, token_id: int, *, debug_print: bool = False) -> bool:
        """Accept one token. False (state unchanged) when the grammar rejects it, when it is
        out of range, a special token, or the matcher has already accepted a stop token.
        A token id that is not an integer raises TypeError."""
        if type(token_id) is not int:  # (a plain int, the common case, is checked in one step)
            if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
                raise TypeError(f"token_id must be an integer, got {type(token_id).__name__}")
            token_id = int(token_id)
        if self._stop_accepted or not 0 <= token_id < self._vocab_size:
            return False
        if self._closes is not None and self._closes.pending is not None:
            return self._closes.accept_closed(self, token_id)
        if self._plain and token_id not in self._stop_set:  # the common case, in few steps
            offsets = self._offsets
            begin, end = offsets[token_id], offsets[token_id + 1]
            if begin == end or not self._parser.read_span(self._vocab.token_bytes, begin, end):
                return False  # a special token, or one the grammar rejects
            self._history.append(end - begin)
            self._enforce_pending = False
            self._mask_cache.after_token(self._parser.chart)
            return True
        if self._is_stop[token_id]:
            if self._terminate_without_stop_token or not self._parser.is_completed():
                return False
            self._stop_accepted = True
            self._history.append(STOP_STEP)
            self._enforce_pending = False
            return True
        data = self._token_bytes(token_id)
        if not data:
            return False  # special token
        if self._budgets:
            self._parser.set_token_index(len(self._history), self._enforce_pending)
        try:
            if len(self._token_member):
                if not self._parser.advance_token(data, self._token_member[:, token_id]):
                    return False
            elif not self._parser.advance(data):
                return False
        finally:
            if self._budgets:
                self._parser.set_token_index(len(self._history), False)
        self._history.append(len(data))
        self._enforce_pending = False
        if self._accepted is not None:
            self._accepted += data
        self._mask_cache.after_token(self._parser.chart)  # (the background builder's hint)
        return True

    def accept_string(self, input_str: Union[str, bytes], *, debug_print: bool = False) -> bool:
        """Accept a whole string (one rollback step); all or nothing."""
        if self._stop_accepted:
            return False
        data = input_str.encode("utf-8") if isinstance(input_str, str) else bytes(input_str)
        if self._budgets:
            self._parser.set_token_index(len(self._history), False)
            if self._closes is not None:
                self._closes.pending = None
        if not self._parser.advance(data):
            return False
        self._history.append(len(data))
        if self._accepted is not None:
            self._accepted += data
        return True

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last `num_tokens` accepted tokens or strings, termination included."""
        for step in pop_history(self._history, num_tokens):
            if step == STOP_STEP:
                self._stop_accepted = False
            else:
                self._parser.rollback(step)
                if self._accepted is not None:
                    del self._accepted[len(self._accepted) - step:]
        self._enforce_pending = False
        if self._closes is not None:
            self._closes.rollback_to(self._parser, len(self._history))

    # ---- masks --------------------------------------------------------------------------

    def _check_terminated(self) -> None:
        if self._stop_accepted:
            raise MatcherError("the matcher has terminated after accepting a stop token; "
                               "there is no next-token mask (roll back or reset first)")

    def _budget_mask(self) -> Optional[np.ndarray]:
        """With token budgets: decide ENFORCE or RELAX for the mask at this token index (module
        docstring); under ENFORCE the mask of the live items (a bool array), else None."""
        self._enforce_pending = False
        if not self._budgets:
            return None
        parser = self._parser
        parser.set_token_index(len(self._history), False)
        if self._closes is not None and (forced := self._closes.forced_mask(self)) is not None:
            return forced
        expired, alive = parser.budget_state()
        completed = parser.is_completed()
        if not (expired and (alive or completed)):
            return None
        parser.set_token_index(len(self._history), True)
        try:
            mask = self._every_token_mask()
        finally:
            parser.set_token_index(len(self._history), False)
        if not (mask.any() or completed):
            return None
        self._enforce_pending = True
        return mask

    def _fill_words(self, words: Optional[np.ndarray] = None) -> bool:
        """The allowed tokens now, into `words` (default `self._words`; exactly
        ceil(vocab_size / 32) int32 of its layout: the fill kernel is bound to it). Returns whether
        every id is allowed."""
        if words is None:
            words = self._own_words()
        if self._plain:
            return self._mask_cache.fill_shared(self._parser, words, self._not_regular, self._stop_array)
        enforced = self._budget_mask()
        if enforced is None and self._char_budgets:
            enforced = self._every_token_mask()
        if enforced is not None:
            pack_bool_mask(enforced, words)
            return bool(MF.all_allowed(words, self._vocab_size))
        full = self._mask_cache.fill_shared(self._parser, words, self._not_regular, self._stop_array)
        if len(self._extra_regular):
            bits = words.view(np.uint32)
            for t in self._extra_regular:
                data = self._token_bytes(int(t))
                if self._parser.advance(data):
                    self._parser.rollback(len(data))
                    bits[t >> 5] |= np.uint32(1 << (t & 31))
            full = bool(MF.all_allowed(words, self._vocab_size))
        if len(self._token_words):
            sets = self._parser.token_sets_here()
            if len(sets):
                words |= np.bitwise_or.reduce(self._token_words[sets], axis=0)
                full = bool(MF.all_allowed(words, self._vocab_size))
        return full

    def _row_view(self, bitmask, index: int, memory: Optional[tuple] = None) -> tuple:
        """`bitmask_row_view`, its first ceil(vocab_size / 32) words when the fill kernel may
        write them in place (an int32 row of `_WORDS_LAYOUT`; else None), and whether the row has
        words past those (cleared after a fill). Remembered for the last
        bitmask while it keeps its memory, shape and type (a decoding loop passes the same one at
        every step): a tensor's memory is its data pointer; a numpy array held here keeps its
        buffer (numpy refuses to resize an array others refer to), so its shape, strides, dtype
        and writeable flag are what can change. `memory`: a tensor's (data pointer, shape), when
        the caller has read them already (a batch reads them once for every row)."""
        last = self._row_key
        if last is not None and last[0] is bitmask and last[1] == index and len(last) == 4:
            ptr, shape = memory if memory is not None else (bitmask.data_ptr(), bitmask.shape)
            if last[2] == ptr and last[3] == shape:
                return self._row  # (the same tensor, its memory and shape unchanged: the common case, first)
        torch_like = hasattr(bitmask, "data_ptr")
        if torch_like:
            key = (bitmask, index, bitmask.data_ptr(), bitmask.shape)
        elif isinstance(bitmask, np.ndarray):
            key = (bitmask, index, bitmask.shape, bitmask.strides, bitmask.dtype, bitmask.flags.writeable)
        else:
            key = None
        if key is not None and last is not None and last[0] is bitmask and last[1:] == key[1:]:
            return self._row
        row = bitmask_row_view(bitmask, index, self._vocab_size)
        head = row[:self._n_words]
        direct = head if len(head) == self._n_words and layout_key(head) == _WORDS_LAYOUT else None
        view = (row, direct, len(row) > self._n_words)  # (the words past the vocabulary's are cleared)
        self._row_key, self._row = key, (view if key is not None else None)
        return view

    def compute_bool_mask(self) -> np.ndarray:
        """bool[vocab_size]: the allowed tokens now (a fresh array)."""
        self._check_terminated()
        self._fill_words()
        return unpack_bitmask(self._own_words(), self._vocab_size)

    def _own_words(self) -> np.ndarray:
        """int32[ceil(vocab_size / 32)] of this matcher's own, made on first use."""
        if self._words is None:
            self._words = np.zeros(self._n_words, dtype=np.int32)
        return self._words

    @property
    def parser(self) -> EarleyParser:
        """The Earley parser holding the chart of the input so far (for the teaching views)."""
        return self._parser

    def every_token_bool_mask(self) -> np.ndarray:
        """`compute_bool_mask` without the cache: every regular token through the parser."""
        return self._every_token_bool_mask()

    def _every_token_bool_mask(self) -> np.ndarray:
        """The same mask without the cache: every regular token through the parser."""
        self._check_terminated()
        enforced = self._budget_mask()
        return enforced if enforced is not None else self._every_token_mask()

    def _every_token_mask(self) -> np.ndarray:
        mask = np.zeros(self._vocab_size, dtype=np.bool_)
        v = self._vocab
        self._parser.fill_mask(v.token_bytes, v.token_offsets, self._regular, self._regular_lcp, mask)
        if self._parser.is_completed():
            mask[self._stop_token_ids] = True
        for g in self._parser.token_sets_here():
            mask |= self._token_member[g]
        return mask

    def fill_next_token_bitmask(self, bitmask, index: int = 0, *, debug_print: bool = False) -> bool:
        """Write the allowed tokens into row `index` of an int32 bitmask (bit 1 = allowed).

        Returns True when some token is masked out (the bitmask must be applied).
        """
        row, direct, tail = self._row_view(bitmask, index)
        self._check_terminated()
        if direct is not None:  # the kernel writes the row itself: no copy
            if self._plain:  # (the common case, without a layer)
                full = self._mask_cache.fill_shared(self._parser, direct, self._not_regular, self._stop_array)
            else:
                full = self._fill_words(direct)
        else:
            full = self._fill_words()
            row[:self._n_words] = self._words
        if tail:
            row[self._n_words:] = 0
        return not full

    def traverse_draft_tree(self, retrieve_next_token, retrieve_next_sibling, draft_tokens, token_bitmask,
                            time_threshold: float = -1.0, temperatures=None) -> bool:
        """Masks for every node of a speculative-decoding draft tree, as xgrammar 0.2.8 fills them
        (xg2ref/draft_tree.py says how). Returns False when `time_threshold` seconds (> 0) ran out
        before the tree was done."""
        from .draft_tree import traverse_draft_tree

        return traverse_draft_tree(self, self._vocab_size, retrieve_next_token, retrieve_next_sibling, draft_tokens,
                                   token_bitmask, time_threshold, temperatures)

    def find_jump_forward_string(self) -> str:
        """The longest string forced by the grammar from here (xgrammar's rule, see above)."""
        if self._stop_accepted:
            raise MatcherError("the matcher has terminated after accepting a stop token; "
                               "there is no jump-forward string")
        out = bytearray()
        parser = self._parser
        if self._budgets:
            parser.set_token_index(len(self._history), self._enforce_pending)
        try:
            while not parser.is_completed():
                single = parser.single_forced_byte()
                if single is None:
                    break
                parser.advance(bytes([single]))
                out.append(single)
            parser.rollback(len(out))
        finally:
            if self._budgets:
                parser.set_token_index(len(self._history), False)
        return out.decode("utf-8", errors="surrogateescape")

    # ---- helpers ------------------------------------------------------------------------

    def _token_bytes(self, token_id: int) -> bytes:
        v = self._vocab
        return v.token_bytes[v.token_offsets[token_id]: v.token_offsets[token_id + 1]].tobytes()


# ---- BatchGrammarMatcher ----------------------------------------------------------------------

def _check_matchers(matchers) -> list:
    matchers = list(matchers)
    for k, m in enumerate(matchers):
        if not isinstance(m, GrammarMatcher):
            raise TypeError(f"matchers[{k}] is a {type(m).__name__}, not a GrammarMatcher")
    return matchers


def _same_size(matchers: list, values: list, name: str) -> None:
    if len(matchers) != len(values):
        raise BitmaskError(f"The size of matchers ({len(matchers)}) and {name} ({len(values)}) should be the same.")


class BatchGrammarMatcher:
    """Fill, accept and roll back many matchers in one call (module docstring)."""

    def __init__(self, max_threads: Union[int, str] = "auto") -> None:
        if max_threads != "auto" and (isinstance(max_threads, bool) or not isinstance(max_threads, int)
                                      or max_threads < 1):
            raise BitmaskError(f'max_threads must be a positive integer or "auto", got {max_threads!r}')
        self.max_threads = max_threads

    def batch_fill_next_token_bitmask(self, matchers: list, bitmask, indices: Optional[list] = None,
                                      debug_print: bool = False) -> None:
        """Row indices[k] (k by default) of `bitmask` gets the mask of matchers[k]."""
        matchers = _check_matchers(matchers)
        shape = tuple(bitmask.shape)
        if len(shape) != 2:
            raise BitmaskError(f"bitmask must be 2-D (batch, words), got shape {shape}")
        if indices is None:
            if len(matchers) > shape[0]:
                raise BitmaskError(f"{len(matchers)} matchers but the bitmask has {shape[0]} "
                                   f"row{'s' if shape[0] != 1 else ''}")
            rows = list(range(len(matchers)))
        else:
            rows = list(indices)
            _same_size(matchers, rows, "indices")
            if len(set(rows)) != len(rows):
                raise BitmaskError("indices must be unique")
            for k, row in enumerate(rows):
                if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not 0 <= row < shape[0]:
                    raise BitmaskError(f"indices[{k}] = {row!r} is out of range for a bitmask with {shape[0]} rows")
        for k, m in enumerate(matchers):
            if m._stop_accepted or m._terminate_without_stop_token and m.is_terminated():
                raise BitmaskError(f"matchers[{k}] has terminated: it has no next-token mask (leave it out of the "
                                   "batch, or roll it back)")
        # a matcher's first row with the rest of the batch (batch_fill.py), its other rows after
        # (a matcher listed twice is one thread's at a time)
        if len(set(map(id, matchers))) == len(matchers):
            firsts, later = list(zip(matchers, rows)), []
        else:
            by_id: dict = {}
            for m, row in zip(matchers, rows):
                by_id.setdefault(id(m), (m, []))[1].append(row)
            firsts = [(m, rows_of_m[0]) for m, rows_of_m in by_id.values()]
            later = [(m, row) for m, rows_of_m in by_id.values() for row in rows_of_m[1:]]
        fill_batch(firsts, bitmask, CORES if self.max_threads == "auto" else self.max_threads, debug_print)
        for m, row in later:
            m.fill_next_token_bitmask(bitmask, row, debug_print=debug_print)

    @staticmethod
    def batch_fill_temperature(matchers: list, temperatures, indices: Optional[list] = None) -> None:
        """Entry indices[k] (k by default) of `temperatures`, a 1-D float32 CPU tensor or numpy
        array, gets matchers[k].temperature, or -1 where it is None (xgrammar's rule; repeated
        indices are allowed, the last matcher wins)."""
        matchers = _check_matchers(matchers)
        device = getattr(temperatures, "device", None)
        values = temperatures
        if not isinstance(temperatures, np.ndarray) and hasattr(temperatures, "detach"):
            values = temperatures.detach().numpy() if str(device).startswith("cpu") else None
        if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype != np.float32:
            if values is None:
                raise BitmaskError(f"The temperatures tensor must be on CPU, got device {device}")
            raise BitmaskError("The temperatures tensor must be a 1D float32 tensor, got "
                               f"{getattr(temperatures, 'dtype', type(temperatures).__name__)} with shape "
                               f"{tuple(getattr(temperatures, 'shape', ()))}")
        if indices is None:
            rows = list(range(len(matchers)))
        else:
            rows = list(indices)
            if len(rows) != len(matchers):
                raise BitmaskError(f"The indices size ({len(rows)}) must match the number of matchers "
                                   f"({len(matchers)})")
        for k, row in enumerate(rows):
            if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not 0 <= row < len(values):
                raise BitmaskError(f"The index {row!r} (matcher {k}) is out of bounds for the temperatures tensor "
                                   f"of size {len(values)}")
        for m, row in zip(matchers, rows):
            t = m.temperature
            values[row] = -1.0 if t is None else t

    @staticmethod
    def batch_accept_token(matchers: list, tokens: list, debug_print: bool = False) -> list[bool]:
        """Whether each matcher accepted its token (a rejected token leaves its matcher as it was)."""
        matchers, tokens = _check_matchers(matchers), list(tokens)
        _same_size(matchers, tokens, "token_ids")
        return [m.accept_token(t, debug_print=debug_print) for m, t in zip(matchers, tokens)]

    @staticmethod
    def batch_accept_string(matchers: list, strings: list, debug_print: bool = False) -> list[bool]:
        """Whether each matcher accepted its string."""
        matchers, strings = _check_matchers(matchers), list(strings)
        _same_size(matchers, strings, "strings")
        return [m.accept_string(s, debug_print=debug_print) for m, s in zip(matchers, strings)]

    @staticmethod
    def batch_rollback(matchers: list, num_tokens: Union[list, int] = 1) -> None:
        """Roll each matcher back by its number of tokens (one number: the same for all)."""
        matchers = _check_matchers(matchers)
        one = isinstance(num_tokens, (int, np.integer)) and not isinstance(num_tokens, bool)
        counts = [int(num_tokens)] * len(matchers) if one else list(num_tokens)
        _same_size(matchers, counts, "num_tokens")
        for k, (m, n) in enumerate(zip(matchers, counts)):
            steps = len(m._history)
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n <= steps:
                raise BitmaskError(f"num_tokens[{k}] = {n!r}: matcher {k} can roll back 0 to {steps} tokens")
        for m, n in zip(matchers, counts):
            m.rollback(int(n))


def __getattr__(name: str):
    """The names xgrammar 0.2.8's `xgrammar.matcher` module also holds (the bitmask helpers),
    resolved on first use."""
    if name in ("allocate_token_bitmask", "get_bitmask_shape", "reset_token_bitmask"):
        from . import bitmask

        return getattr(bitmask, name)
    if name == "apply_token_bitmask_inplace":
        from .apply_mask import apply_token_bitmask_inplace

        return apply_token_bitmask_inplace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
