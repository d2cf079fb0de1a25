"""xg2ref.testing's grammar helpers, against their definitions and against xgrammar 0.2.8."""

import pytest

import xg2ref as xgr
from xg2ref.testing import (_get_allow_empty_rule_ids, _get_matcher_from_grammar,
                            _get_matcher_from_grammar_and_tokenizer_info, _is_grammar_accept_string,
                            is_grammar_accept_string)

CASES = [
    ('root ::= "a"+ "b"', ["ab", "aaab", "", "a", "b", "abb"]),
    ('root ::= [0-9]{2,3} ("." [0-9]+)?', ["12", "123", "1234", "12.5", "12.", "1"]),
    ('root ::= "é" | "中文" [^a]', ["é", "中文b", "中文a", "中"]),
]


@pytest.mark.parametrize("grammar, strings", CASES)
def test_acceptance_follows_the_matcher(grammar, strings):
    for s in strings:
        m = _get_matcher_from_grammar(grammar)
        whole = m.accept_string(s) and m.is_completed()
        assert is_grammar_accept_string(grammar, s) == whole
        m = _get_matcher_from_grammar(grammar)
        assert _is_grammar_accept_string(grammar, s, require_termination=False) == m.accept_string(s)


def test_string_matcher_terminates_without_a_stop_token():
    m = _get_matcher_from_grammar('root ::= "ab"')
    assert m.accept_string("ab") and m.is_terminated()
    m = _get_matcher_from_grammar_and_tokenizer_info('root ::= "ab"', xgr.TokenizerInfo([b"a", b"b", b"</s>"], stop_token_ids=[2]))
    assert m.accept_token(0) and m.accept_token(1) and not m.is_terminated()
    assert m.accept_token(2) and m.is_terminated()


def test_bad_grammar_raises():
    with pytest.raises(xgr.EBNFError):
        is_grammar_accept_string("root ::= undefined_rule", "x")


def test_nullable_rule_ids():
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar('root ::= "x"*')
    assert _get_allow_empty_rule_ids(compiled) == [compiled.fsms.root]
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar('root ::= "x"+')
    assert _get_allow_empty_rule_ids(compiled) == []


@pytest.mark.xgrammar
@pytest.mark.parametrize("grammar, strings", CASES)
def test_acceptance_equals_xgrammar(grammar, strings):
    xtesting = pytest.importorskip("xgrammar.testing")
    for s in strings:
        for req in (True, False):
            assert (_is_grammar_accept_string(grammar, s, require_termination=req)
                    == xtesting._is_grammar_accept_string(grammar, s, require_termination=req)), (s, req)
