"""The contract every intrinsic keeps (xg2ref/grammar/intrinsic.py), checked on a grammar that
uses it. `check_intrinsic` is what tests/test_intrinsic_contract.py runs over the registry, and
what a new intrinsic's author runs on theirs (docs/adding-an-intrinsic.md, examples/).

    round trip    the grammar printed and parsed again is the same IR
    reading       on strings (the oracle's random sentences, and their one-byte edits: dropped,
                  doubled, replaced), the engine's verdicts equal the brute-force oracle's:
                  prefix (accept_string of the bytes) and sentence (then is_completed).
                  This sets the FSM fragment against the construct's own oracle reading.
                  Token-level constructs match no bytes; the masks below check them.
    nullability   every rule that derives the empty string by the grammar passes
                  (`nullable_rules`, which asks `Intrinsic.nullable`) has a nullable FSM
                  (`build_grammar_fsms`, which runs `Intrinsic.fragment`), and no other rule
    masks         along seeded random walks over `vocab` (with rollbacks), the matcher's mask
                  equals the brute-force oracle's at every step, and completion agrees

A failure raises AssertionError naming the check and the input; success returns the counts.
"""

from __future__ import annotations

import random
from typing import Sequence

import numpy as np


def _edits(data: bytes, rng: random.Random) -> list:
    """`data` with one byte dropped, doubled or replaced (a few of each)."""
    out = []
    for _ in range(3):
        if data:
            i = rng.randrange(len(data))
            out += [data[:i] + data[i + 1:], data[:i + 1] + data[i:], data[:i] + bytes([rng.randrange(32, 127)])
                    + data[i + 1:]]
    return out


def check_intrinsic(ebnf: str, vocab: Sequence[bytes], stop_token_id: int, seed: int = 0, strings: int = 30,
                    walks: int = 4, steps: int = 8) -> dict:
    """Check the module docstring's contract on the EBNF grammar `ebnf` (which uses the
    intrinsic), over `vocab` with stop token `stop_token_id`. Returns the number of strings,
    rules and walk steps checked.

    Example: check_intrinsic('root ::= Substring("ab", "c")', [b"a", b"b", b"c", b"</s>"], 3)
    """
    import xg2ref as xgr

    from ..compiler import compile_ir_grammar
    from ..fsm.build import build_grammar_fsms
    from ..grammar.passes import nullable_rules
    from ..oracle.engines import OracleMatcher
    from ..oracle.recognizer import Recognizer
    from ..oracle.strategies import sentences

    grammar = xgr.Grammar.from_ebnf(ebnf)
    again = xgr.Grammar.from_ebnf(str(grammar))
    assert again.ir == grammar.ir, f"round trip: {str(grammar)!r} reads back as {str(again)!r}"

    rng = random.Random(seed)
    info = xgr.TokenizerInfo(list(vocab), stop_token_ids=[stop_token_id])
    compiled = compile_ir_grammar(grammar, info)
    oracle = Recognizer(grammar.ir)
    asked = set()
    for _ in range(strings):
        s = sentences(grammar.ir, rng)
        if s is None:
            break
        for data in [s] + _edits(s, rng):
            if data in asked or len(data) > 64:
                continue
            asked.add(data)
            matcher = xgr.GrammarMatcher(compiled)
            prefix = matcher.accept_string(data)
            assert prefix == oracle.is_prefix(data), f"reading: prefix {data!r}: engine {prefix}, oracle {not prefix}"
            if prefix:
                complete = matcher.is_completed()
                assert complete == oracle.is_sentence(data), \
                    f"reading: sentence {data!r}: engine {complete}, oracle {not complete}"

    fsms = build_grammar_fsms(grammar.ir)
    by_fsm = {name for name, nullable in zip(fsms.rule_names, fsms.nullable) if nullable}
    by_passes = set(nullable_rules(grammar.ir))
    assert by_fsm == by_passes, f"nullability: FSMs say {sorted(by_fsm)}, the grammar passes {sorted(by_passes)}"

    matcher, reference = xgr.GrammarMatcher(compiled), OracleMatcher(grammar.ir, info)
    walked = 0
    for _ in range(walks):
        matcher.reset()
        reference.reset()
        for _ in range(steps):
            want = reference.bool_mask()
            have = matcher.compute_bool_mask()
            assert np.array_equal(have, want), \
                f"masks after {reference.prefix!r}: engine only {np.flatnonzero(have & ~want).tolist()}, " \
                f"oracle only {np.flatnonzero(want & ~have).tolist()}"
            assert matcher.is_completed() == reference.is_completed(), f"completion after {reference.prefix!r}"
            walked += 1
            allowed = [int(t) for t in np.flatnonzero(want) if t != stop_token_id]
            if not allowed:
                break
            token = rng.choice(allowed)
            assert matcher.accept_token(token) and reference.accept_token(token)
            if rng.random() < 0.2:
                matcher.rollback(1)
                reference.rollback(1)
    return {"strings": len(asked), "rules": len(fsms.rule_names), "steps": walked}
