"""Checks that several test modules share: verdicts on strings, and masks compared along walks.

- `check_verdicts`: a grammar takes every good string and no bad one, under an engine's
  `_is_grammar_accept_string`.
- `random_walks_match_oracle`: along seeded random walks over the allowed tokens, the matcher's
  mask equals the brute-force oracle's at every step.
- `greedy_walks_agree`: two engines' masks agree at every step of each text, read with the
  longest allowed token that fits.
"""

from __future__ import annotations

import random

import numpy as np

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer


def check_verdicts(accepts, grammar, good, bad) -> None:
    """`accepts(grammar, s)` holds for every s in `good` and for none in `bad`."""
    for s in good:
        assert accepts(grammar, s), s
    for s in bad:
        assert not accepts(grammar, s), s


def random_walks_match_oracle(grammar, vocab: list, stop: int, walks: int, steps: int, seed) -> None:
    """`walks` seeded random walks of up to `steps` tokens from the start; at each step the mask
    of a matcher compiled over `vocab` (stop token `stop`) equals the oracle's."""
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[stop])
    oracle = Recognizer(grammar.ir)
    matcher = xgr.GrammarMatcher(compile_ir_grammar(grammar, info))
    rng = random.Random(seed)
    for _ in range(walks):
        prefix = b""
        matcher.reset()
        for _ in range(steps):
            have = matcher.compute_bool_mask()
            want = brute_force_mask(oracle, prefix, vocab, stop_token_ids=[stop],
                                    special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
            assert np.array_equal(have, want), (seed, prefix)
            allowed = [t for t in np.flatnonzero(have) if t != stop]
            if not allowed:
                break
            t = int(rng.choice(allowed))
            assert matcher.accept_token(t)
            prefix += vocab[t]


def greedy_walks_agree(ours, theirs, texts, vocab: list, whole: bool = False) -> None:
    """For each text, both compiled engines (oracle/engines.py adapters) give equal masks at
    every step, reading the longest allowed token (stop token last in `vocab`) that fits;
    `whole`: the text must be read to its end. Completion agrees at the end."""
    for text in texts:
        ours.reset()
        theirs.reset()
        data = text.encode()
        while True:
            mask = ours.bool_mask()
            assert (mask == theirs.bool_mask()).all(), (text, data)
            fits = [t for t in range(len(vocab) - 1) if mask[t] and data.startswith(vocab[t])]
            if not fits:
                break
            token = max(fits, key=lambda t: len(vocab[t]))
            assert ours.accept_token(token) and theirs.accept_token(token)
            data = data[len(vocab[token]):]
        if whole:
            assert not data, text
        assert ours.is_completed() == theirs.is_completed()
