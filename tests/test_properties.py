"""Property tests: the FSM/Earley engine against the independent brute-force oracle.

`want` is the oracle's answer (a recognizer over the grammar IR, sharing no code with the
engine), `have` is the engine's.
"""

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.earley import EarleyParser
from xg2ref.frontends.ebnf.parser import parse_ebnf
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import byte_strings, grammars, mutate, sentences, vocabularies

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EMPTY_INFO = xgr.TokenizerInfo([])


def engine_parser(ir) -> EarleyParser:
    compiled = compile_ir_grammar(Grammar.from_ir(ir), EMPTY_INFO)
    return EarleyParser(compiled.fsms, compiled.arrays)


def candidate_strings(ir, data: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = [data, b""]
    for _ in range(3):
        s = sentences(ir, rng)
        if s is not None:
            out += [s, mutate(s, rng), s[: rng.randint(0, len(s))]]
    return out


@SETTINGS
@given(grammars(), byte_strings(b"abc", 6), st.integers(0, 2**16))
def test_prefix_and_sentence_verdicts_match_the_oracle(ir, data, seed):
    oracle = Recognizer(ir)
    parser = engine_parser(ir)
    for s in candidate_strings(ir, data, seed):
        parser.reset()
        have_prefix = parser.advance(s)
        assert have_prefix == oracle.is_prefix(s), (print_grammar(ir), s)
        if have_prefix:
            assert parser.is_completed() == oracle.is_sentence(s), (print_grammar(ir), s)


@SETTINGS
@given(grammars(), vocabularies(b"abc", 12), st.integers(0, 2**16))
def test_masks_match_the_brute_force_mask(ir, vocab_spec, seed):
    vocab, stop_ids, special_ids = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    compiled = compile_ir_grammar(Grammar.from_ir(ir), info)
    matcher = xgr.GrammarMatcher(compiled)
    oracle = Recognizer(ir)
    rng = random.Random(seed)
    prefix = sentences(ir, rng) or b""
    prefix = prefix[: rng.randint(0, len(prefix))]
    if not oracle.is_prefix(prefix):
        return
    assert matcher.accept_string(prefix)
    have = matcher.compute_bool_mask()
    want = brute_force_mask(oracle, prefix, vocab, stop_token_ids=stop_ids,
                            special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
    assert np.array_equal(have, want), (print_grammar(ir), prefix, vocab)


@SETTINGS
@given(grammars())
def test_print_parse_round_trip(ir):
    assert parse_ebnf(print_grammar(ir), root_rule_name=ir.root) == ir


def viable_strings(parser: EarleyParser, alphabet: bytes, depth: int) -> tuple[set, set]:
    """Every string over `alphabet` of length <= depth that the engine keeps viable, and those
    of them it calls complete, found by walking the tree of prefixes (rejected ones pruned)."""
    viable, complete = set(), set()

    def walk(prefix: bytes) -> None:
        viable.add(prefix)
        if parser.is_completed():
            complete.add(prefix)
        if len(prefix) == depth:
            return
        for b in alphabet:
            if parser.advance(bytes([b])):
                walk(prefix + bytes([b]))
                parser.rollback(1)

    if parser.advance(b""):
        walk(b"")
    return viable, complete


@settings(SETTINGS, max_examples=600)
@given(grammars(max_rules=3))
def test_every_short_string_gets_the_oracle_verdict(ir):
    """Exhaustive up to 4 bytes over a..c (plus one byte outside): the engine's viable and
    complete strings are exactly the oracle's."""
    oracle = Recognizer(ir)
    alphabet = b"abcz"
    viable, complete = viable_strings(engine_parser(ir), alphabet, 4)
    for s in viable:
        assert oracle.is_prefix(s), (print_grammar(ir), s)
        assert (s in complete) == oracle.is_sentence(s), (print_grammar(ir), s)
        # the children the engine pruned must be dead for the oracle too
        if len(s) < 4:
            for b in alphabet:
                if s + bytes([b]) not in viable:
                    assert not oracle.is_prefix(s + bytes([b])), (print_grammar(ir), s + bytes([b]))


@settings(SETTINGS, max_examples=300)
@given(grammars(), vocabularies(b"abc", 16), st.integers(0, 2**16))
def test_cached_masks_equal_every_token_masks_along_a_sentence(ir, vocab_spec, seed):
    """At every byte of a random sentence: the adaptive-cache mask == the every-token mask,
    and (where the oracle can afford it) == the brute-force mask."""
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    matcher = xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), info))
    oracle = Recognizer(ir)
    text = sentences(ir, random.Random(seed)) or b""
    for k in range(min(len(text), 12) + 1):
        if k:
            assert matcher.accept_string(text[k - 1:k])
        have = matcher.compute_bool_mask()
        assert np.array_equal(have, matcher._every_token_bool_mask()), (print_grammar(ir), text[:k], vocab)
        if k <= 6:
            want = brute_force_mask(oracle, text[:k], vocab, stop_token_ids=stop_ids,
                                    special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
            assert np.array_equal(have, want), (print_grammar(ir), text[:k], vocab)
