"""XGrammar §3.5 in a real decoding loop: a logits processor for Hugging Face transformers'
`generate()`, as xgrammar's `xgrammar.contrib.hf.LogitsProcessor`.

At each step transformers calls the processor with the tokens so far and the next-token scores:

    first call                 |-  one matcher per row (one grammar for all, or one per row)
    a later call               |-  each unfinished row's matcher accepts the row's last token
    every call                 |-  the unfinished rows' masks are filled (BatchGrammarMatcher)
                                   and applied to the scores (apply_token_bitmask_inplace)

A row whose matcher has terminated keeps the last mask it was given (its stop token stays
allowed; transformers pads the row anyway), as xgrammar's processor does. A sampled token the
grammar rejects raises `TokenRejectedError`, a RuntimeError that is also the AssertionError
xgrammar's processor raises there. One processor serves
one `generate()` call (it keeps the matchers of that call), with sampling or greedy search: beam
search, several return sequences per prompt and assisted decoding reorder or fork rows, which
one matcher per row does not follow. `mask_seconds` is the host time the processor spent on
masks (accepting, filling, launching the application; on a GPU the kernel itself runs on after
the call returns): the masks' share of decode time.
"""

from __future__ import annotations

import time
from typing import Union

import torch
import transformers

from ..apply_mask import apply_token_bitmask_inplace
from ..bitmask import allocate_token_bitmask
from ..compiler import CompiledGrammar
from ..matcher import BatchGrammarMatcher, GrammarMatcher


class TokenRejectedError(RuntimeError, AssertionError):
    """The grammar rejected a token `generate()` sampled (rows reordered or forked, or scores
    changed after the processor ran)."""


class LogitsProcessor(transformers.LogitsProcessor):
    """Constrains `generate()` to a compiled grammar (module docstring)."""

    def __init__(self, compiled_grammar: Union[CompiledGrammar, list]):
        grammars = list(compiled_grammar) if isinstance(compiled_grammar, (list, tuple)) else [compiled_grammar]
        if not grammars or not all(isinstance(g, CompiledGrammar) for g in grammars):
            raise TypeError("LogitsProcessor needs a CompiledGrammar or a non-empty list of them")
        self.compiled_grammars = grammars
        self.full_vocab_size = grammars[0].tokenizer_info.vocab_size
        self.matchers: list = []
        self.batch_size = 0
        self.token_bitmask = None
        self.prefilled = False
        self.mask_seconds = 0.0
        self._batch = BatchGrammarMatcher()

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        start = time.perf_counter()
        if not self.matchers:
            self.batch_size = input_ids.shape[0]
            if len(self.compiled_grammars) not in (1, self.batch_size):
                raise ValueError(f"{len(self.compiled_grammars)} compiled grammars for a batch of {self.batch_size} "
                                 "rows: give one grammar, or one per row")
            per_row = self.compiled_grammars * (self.batch_size if len(self.compiled_grammars) == 1 else 1)
            self.matchers = [GrammarMatcher(g) for g in per_row]
            self.token_bitmask = allocate_token_bitmask(self.batch_size, self.full_vocab_size)
        if input_ids.shape[0] != self.batch_size:
            raise RuntimeError(f"input_ids has {input_ids.shape[0]} rows but this processor serves a batch of "
                               f"{self.batch_size}: use a new LogitsProcessor for each generate() call")
        live = [k for k, m in enumerate(self.matchers) if not m.is_terminated()]
        if self.prefilled:
            last = input_ids[:, -1].tolist()
            accepted = self._batch.batch_accept_token([self.matchers[k] for k in live], [last[k] for k in live])
            if not all(accepted):
                bad = [live[j] for j, ok in enumerate(accepted) if not ok]
                raise TokenRejectedError(f"the grammar rejected the token sampled for rows {bad}: rows were reordered or "
                                   "forked (beam search, num_return_sequences > 1, assisted decoding: not "
                                   "supported), or the scores changed after this processor ran")
            live = [k for k in live if not self.matchers[k].is_terminated()]
        self.prefilled = True
        if live:
            self._batch.batch_fill_next_token_bitmask([self.matchers[k] for k in live], self.token_bitmask, live)
        # every row, the finished ones with the last mask they were given
        on_device = self.token_bitmask.to(scores.device, non_blocking=True)
        covered = min(scores.shape[-1], 32 * self.token_bitmask.shape[-1])
        apply_token_bitmask_inplace(scores, on_device, vocab_size=covered)
        if scores.shape[-1] > covered:  # a padded model vocabulary: ids past the tokenizer's
            scores[:, covered:] = float("-inf")
        self.mask_seconds += time.perf_counter() - start
        return scores
