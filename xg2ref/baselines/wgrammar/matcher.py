"""`OperatorMatcher`: WGrammar's executor (WGrammar §3.2–§3.3) with xgrammar's matcher API.

The state is one position of the compiled program (operators.py) and nothing else: no stack,
no chart. So, for a token t at position s,

    accept_token(t)   t regular, t in the set of one edge (s, S, s')        |-  s := s'
                      t a stop token, s final                                |-  terminated
                      otherwise                                              |-  False, s kept
    mask at s         ∪ the sets of s's edges, ∪ the stop tokens if s is final
                      (GlobalMaskCache, keyed by those set ids, or computed when the cache is off)
    rollback(n)       the positions before the last n steps, from a history of positions

Accept scans the position's edges (a handful: the program's widest choice) and tests one bit
each: constant time in the vocabulary and in the length of the output. Operators read whole
tokens, so `accept_string` refuses by raising (as a `Token(...)` edge never matches bytes).
Special, empty and out-of-range tokens are refused as GrammarMatcher refuses them.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...bitmask import bitmask_row_view, unpack_bitmask
from ...exceptions import MatcherError
from .cache import GlobalMaskCache
from .operators import CompiledProgram, Operator, compile_program
from .tokensets import TokenSets


class OperatorMatcher:
    """A matcher over one compiled operator program (module docstring)."""

    def __init__(self, program: CompiledProgram, *, cache: Optional[GlobalMaskCache] = None,
                 use_cache: bool = True) -> None:
        self.program = program
        sets = program.sets
        self.vocab_size = sets.vocab_size
        self._cache = (cache or GlobalMaskCache.for_vocabulary(sets)) if use_cache else None
        self._compute = GlobalMaskCache(sets, 0) if self._cache is None else None
        self._is_stop = np.zeros(sets.vocab_size, dtype=np.bool_)
        self._is_stop[sets.stop_ids] = True
        es, et, eset = program.edge_start, program.edge_target, program.edge_set
        # per position: [(the set's words, the next position)]: what accept scans
        self._edges = [[(sets.words(int(eset[e])), int(et[e])) for e in range(es[s], es[s + 1])]
                       for s in range(program.num_states)]
        self._final = program.final.tolist()
        self._words = np.zeros(sets.n_words, dtype=np.uint32)
        self.reset()

    @classmethod
    def from_operators(cls, program: Operator, tokenizer_info, **options) -> "OperatorMatcher":
        """Compile `program` over the process-wide token sets of `tokenizer_info`'s vocabulary."""
        return cls(compile_program(program, TokenSets.for_vocabulary(tokenizer_info)), **options)

    def reset(self) -> None:
        self._state = self.program.start
        self._history: list = []
        self._stopped = False

    @property
    def state(self) -> int:
        """The current position (a state of the compiled program)."""
        return self._state

    def accept_token(self, token_id: int) -> bool:
        if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
            raise TypeError(f"token_id must be an integer, got {type(token_id).__name__}")
        t = int(token_id)
        if self._stopped or not 0 <= t < self.vocab_size:
            return False
        if self._is_stop[t]:
            if not self._final[self._state]:
                return False
            self._history.append(self._state)
            self._stopped = True
            return True
        word, bit = t >> 5, t & 31
        for words, target in self._edges[self._state]:
            if words[word] >> bit & 1:
                self._history.append(self._state)
                self._state = target
                return True
        return False

    def accept_string(self, input_str, *, debug_print: bool = False) -> bool:
        raise MatcherError("an operator program reads whole tokens (accept_token); accept_string cannot spell one")

    def rollback(self, num_tokens: int = 1) -> None:
        if not 0 <= num_tokens <= len(self._history):
            raise MatcherError(f"cannot roll back {num_tokens} tokens: {len(self._history)} were accepted")
        if num_tokens:
            self._state = self._history[-num_tokens]
            del self._history[-num_tokens:]
            self._stopped = False

    def is_terminated(self) -> bool:
        return self._stopped

    def is_completed(self) -> bool:
        """A stop token was accepted, or the program may stop here."""
        return self._stopped or self._final[self._state]

    def _fill_words(self) -> int:
        """The mask into `self._words`; the number of tokens allowed."""
        if self._stopped:
            raise MatcherError("the matcher has terminated after accepting a stop token; there is no "
                               "next-token mask (roll back or reset first)")
        key = self.program.keys[self._state]
        if self._cache is not None:
            return self._cache.fill(key, self._words)
        return self._compute.compute(key, self._words)

    def fill_next_token_bitmask(self, bitmask, index: int = 0, *, debug_print: bool = False) -> bool:
        """Row `index` of an int32 bitmask; True when some token is masked out."""
        allowed = self._fill_words()
        row = bitmask_row_view(bitmask, index, self.vocab_size)
        words = self._words
        row[:len(words)] = words.view(np.int32)
        row[len(words):] = 0
        return allowed < self.vocab_size

    def compute_bool_mask(self) -> np.ndarray:
        self._fill_words()
        return unpack_bitmask(self._words.view(np.int32), self.vocab_size)
