"""Lookahead assertions (xg2ref/lookahead.py): inferred as xgrammar's analyzer does, written ones
used only when verified, and masks that stay exact either way."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.fsm.build import build_grammar_fsms
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.ir import ByteString, Sequence
from xg2ref.grammar.passes import normalize
from xg2ref.grammar.printer import print_grammar
from xg2ref.lookahead import inferred_lookaheads, lookahead_arrays
from xg2ref.mask.cache import AdaptiveTokenMaskCache, GrammarFacts
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import grammars, sentences, vocabularies


def report_of(ebnf: str):
    ir = normalize(Grammar.from_ebnf(ebnf).ir)
    return lookahead_arrays(ir, build_grammar_fsms(ir))[1]


def test_inferred_like_xgrammars_analyzer():
    # item occurs once, not last: what follows it is "]"
    ir = normalize(Grammar.from_ebnf('root ::= "[" item "]" | "x"\nitem ::= [a-z] item | [a-z]').ir)
    assert inferred_lookaheads(ir) == {"item": Sequence((ByteString(b"]"),))}
    # twice, or last somewhere else, or inside a repetition: nothing is inferred
    for ebnf in ['root ::= "[" item "]" | "(" item ")"\nitem ::= [a-z] item | [a-z]',
                 'root ::= "[" item "]" | "(" item\nitem ::= [a-z] item | [a-z]',
                 'root ::= "[" (item ",")* "]"\nitem ::= [a-z] item | [a-z]']:
        assert inferred_lookaheads(normalize(Grammar.from_ebnf(ebnf).ir)) == {}


def test_written_assertions_are_verified_or_set_aside():
    true = 'root ::= a "c" | a "d" "e"\na ::= "a" a | "a" (= [cd])'
    assert report_of(true).verified == {"a": "[cd]"}
    wrong = 'root ::= a "c" | a "d"\na ::= "a" a | "a" (= "c")'
    assert report_of(wrong).unverified == {"a": '"c"'} and not report_of(wrong).verified
    # what follows a rule may come from its parent's parent: here "x" after b ends list
    climbing = 'root ::= "(" list ")" "x"\nlist ::= b | b "," list\nb ::= "b" b | "b" (= [,)])'
    assert report_of(climbing).verified == {"b": "[,)]"}
    # the root's own occurrences count: here an "a" follows r1 when root recurses
    assert report_of('root ::= (root r1)?\nr1 ::= "a" (= "c")').unverified == {"r1": '"c"'}
    # recursion: every v is followed by "]" (true), and then by a "w" inside the nesting (false)
    assert report_of('root ::= "[" v "]"\nv ::= "[" v "]" w | "0" w (= "]")\nw ::= "" | "w" w').verified == {
        "v": '"]"'}
    assert report_of('root ::= "[" v "]"\nv ::= "[" v w "]" | "0" (= "]")\nw ::= "" | "w" w').unverified == {
        "v": '"]"'}


def test_builtin_json_assertions():
    rep = report_of(str(Grammar.builtin_json_grammar()))
    assert set(rep.verified) == {"value_non_str", "members_and_embrace", "members_suffix", "member_suffix_suffix",
                                 "characters_and_colon", "characters_and_comma", "characters_item"}
    # `characters_and_embrace (= [ \n\r\t]* [},])` is wrong: in `[{"a":"b"}]` a "]" follows it
    assert set(rep.unverified) == {"characters_and_embrace"}


def test_wrong_builtin_assertion_keeps_the_mask_exact():
    vocab = [b"</s>", b"[", b"{", b'"a"', b":", b'"', b"b", b'"}]', b'"}', b"]", b'"} ]']
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[0])
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_builtin_json_grammar())
    assert m.accept_string(b'[{"a":"b')
    allowed = {vocab[t] for t in np.flatnonzero(m.compute_bool_mask())}
    assert {b'"}]', b'"} ]', b'"}'} <= allowed
    assert m.accept_string(b'"}]') and m.is_completed()
    xgrammar = pytest.importorskip("xgrammar")
    xinfo = xgrammar.TokenizerInfo(vocab, xgrammar.VocabType.RAW, stop_token_ids=[0])
    xm = xgrammar.GrammarMatcher(xgrammar.GrammarCompiler(xinfo).compile_builtin_json_grammar())
    assert xm.accept_string('[{"a":"b')
    bitmask = xgrammar.allocate_token_bitmask(1, len(vocab))
    xm.fill_next_token_bitmask(bitmask)
    theirs = {vocab[t] for t in range(len(vocab)) if (int(bitmask[0, 0]) >> t) & 1}
    assert b'"}]' not in theirs  # xgrammar trusts the wrong assertion (specs/04, "Lookahead assertions")


def test_filters_only_save_work():
    ebnf = str(Grammar.builtin_json_grammar())
    info = xgr.TokenizerInfo([b"</s>", b'"', b'",', b'"}', b'"]', b'"} ]', b'"}]', b" ]", b"1", b"1,", b"1]", b"a"],
                             stop_token_ids=[0])
    ir = normalize(Grammar.from_ebnf(ebnf).ir)
    fsms = build_grammar_fsms(ir)
    arrays = fsms.to_arrays()
    la, _ = lookahead_arrays(ir, fsms)
    v = info.vocab_arrays()
    with_la = AdaptiveTokenMaskCache(arrays, v, info.vocab_size, GrammarFacts(lookahead=la))
    without = AdaptiveTokenMaskCache(arrays, v, info.vocab_size)
    assert all(np.array_equal(a, b) for a, b in zip(with_la.arrays, without.arrays))


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(grammars(lookaheads=True), vocabularies(b"abc", 14), st.integers(0, 2**16))
def test_masks_with_random_assertions_match_the_brute_force_mask(ir, vocab_spec, seed):
    """Assertions, true or false, written or inferred, never change a mask."""
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    matcher = xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), info))
    oracle = Recognizer(ir)
    text = sentences(ir, random.Random(seed)) or b""
    for k in range(min(len(text), 6) + 1):
        if k:
            assert matcher.accept_string(text[k - 1:k])
        want = brute_force_mask(oracle, text[:k], vocab, stop_token_ids=stop_ids,
                                special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
        assert np.array_equal(matcher.compute_bool_mask(), want), (print_grammar(ir), text[:k], vocab)
