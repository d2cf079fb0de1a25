"""Requirement: bad input never crashes or hangs. Each case gets a clear exception (a subclass
of XG2RefError, itself a ValueError) or a documented False."""

import time

import numpy as np
import pytest

import xg2ref as xgr
from xg2ref.exceptions import EBNFError, GrammarLimitError, MatcherError, TokenizerError, XG2RefError

VOCAB = [b"a", b"b", b"ab", b"</s>", b"<pad>"]


@pytest.fixture
def matcher():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[3], vocab_size=40)
    return xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar('root ::= "a"+ "b"'))


@pytest.mark.parametrize("text, fragment", [
    ('root ::= "a', "string literal"),
    ("root ::= [a-", "line 1"),
    ("root ::= x", "x"),
    ('root ::= "a"\nroot ::= "b"', "root"),
    ('other ::= "a"', "root"),
    ("root ::= (((", "line 1"),
    ('root ::= "a"{3,1}', "3"),
    ('root ::= "\\xZZ"', "escape"),
    ("", "root"),
    ("::=", "line 1"),
])
def test_malformed_grammars_raise_ebnf_errors(text, fragment):
    with pytest.raises(EBNFError) as info:
        xgr.Grammar.from_ebnf(text)
    assert fragment.lower() in str(info.value).lower()
    assert isinstance(info.value, XG2RefError) and isinstance(info.value, ValueError)


def test_errors_point_at_line_and_column():
    with pytest.raises(EBNFError) as info:
        xgr.Grammar.from_ebnf('root ::= a\na ::= "x" | ]')
    err = info.value
    assert err.line == 2 and err.column is not None
    assert "^" in str(err)


def test_compile_rejects_wrong_types():
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]))
    with pytest.raises(TypeError):
        compiler.compile_grammar(42)
    with pytest.raises(TypeError):
        xgr.GrammarMatcher("root ::= \"a\"")


@pytest.mark.parametrize("bad", [-1, 5, 39, 40, 10**12, 3.5, "a", None])
def test_invalid_token_ids(matcher, bad):
    # ids that are not tokens are a documented False, as in xgrammar; non-integers a TypeError
    if isinstance(bad, int):
        assert matcher.accept_token(bad) is False
    else:
        with pytest.raises(TypeError):
            matcher.accept_token(bad)
    assert matcher.accept_string("a")  # the matcher is still usable


def test_rollback_past_the_start(matcher):
    assert matcher.accept_token(0)
    with pytest.raises(MatcherError, match="roll back"):
        matcher.rollback(2)
    with pytest.raises(MatcherError):
        matcher.rollback(-1)
    matcher.rollback(1)
    with pytest.raises(MatcherError):
        matcher.rollback(1)


def test_accept_after_termination(matcher):
    assert matcher.accept_string("ab") and matcher.accept_token(3)
    assert matcher.is_terminated()
    assert matcher.accept_token(0) is False
    assert matcher.accept_string("a") is False
    with pytest.raises(MatcherError, match="terminated"):
        matcher.fill_next_token_bitmask(xgr.allocate_token_bitmask(1, 40))


@pytest.mark.parametrize("make, kind", [
    (lambda: np.zeros((1, 1), np.int32), "words"),
    (lambda: np.zeros((1, 2), np.float32), "int32"),
    (lambda: np.zeros((1, 2), np.int64), "int32"),
    (lambda: np.zeros((2, 4), np.int32)[:, ::2], "contiguous"),
    (lambda: np.zeros(2, np.int32)[None, :].repeat(1, 0), None),
    (lambda: [[0, 0]], "numpy"),
])
def test_bitmask_shape_and_dtype(matcher, make, kind):
    bitmask = make()
    if kind is None:
        matcher.fill_next_token_bitmask(bitmask)  # a valid one, for contrast
        return
    with pytest.raises((ValueError, TypeError)) as info:
        matcher.fill_next_token_bitmask(bitmask)
    assert kind in str(info.value).lower()


def test_bitmask_row_out_of_range(matcher):
    with pytest.raises(ValueError, match="out of range"):
        matcher.fill_next_token_bitmask(xgr.allocate_token_bitmask(2, 40), index=2)


def test_tokenizer_info_bad_input():
    with pytest.raises((TokenizerError, TypeError)):
        xgr.TokenizerInfo([1, 2, 3])
    with pytest.raises(TokenizerError):
        xgr.TokenizerInfo([b"a"], stop_token_ids=[5])
    with pytest.raises(TokenizerError):
        xgr.TokenizerInfo([b"a", b"b"], vocab_size=1)
    with pytest.raises(TokenizerError):
        xgr.TokenizerInfo.from_quicktok("no-such-encoding")
    with pytest.raises((TokenizerError, FileNotFoundError)):
        xgr.TokenizerInfo.from_huggingface_file("/nonexistent/tokenizer.json")


def test_deep_nesting_hits_a_documented_limit():
    start = time.perf_counter()
    with pytest.raises(GrammarLimitError, match="nest"):
        xgr.Grammar.from_ebnf("root ::= " + "(" * 5000 + '"a"' + ")" * 5000)
    assert time.perf_counter() - start < 30


def test_huge_repetition_hits_a_documented_limit():
    grammar = xgr.Grammar.from_ebnf('root ::= [a-z]{0,1000000}')
    # unrolled, a million copies pass the state limit
    with pytest.raises(GrammarLimitError, match="states"):
        xgr.GrammarCompiler(xgr.TokenizerInfo([]), repetition_compression=False).compile_grammar(grammar)
    # counted (repetition compression, the default), it is one copy
    assert xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(grammar).fsms.num_states < 5
    # a body that may be empty is not counted: unrolled again
    with pytest.raises(GrammarLimitError, match="states"):
        xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar('root ::= ([a-z]?){0,1000000}')


def test_many_rules_deep_reference_chain_compiles():
    # a 3000-rule chain is big but legal: no recursion limit in the compiler
    rules = [f"r{i} ::= r{i + 1} | \"x\"" for i in range(3000)] + ['r3000 ::= "y"']
    grammar = xgr.Grammar.from_ebnf("root ::= r0\n" + "\n".join(rules))
    m = xgr.testing._get_matcher_from_grammar(grammar)
    assert m.accept_string("y") and m.is_completed()


def test_deep_input_recursion_does_not_overflow():
    m = xgr.testing._get_matcher_from_grammar('root ::= "(" root ")" | ""')
    assert m.accept_string("(" * 3000 + ")" * 3000) and m.is_completed()


def test_invalid_utf8_input_is_a_false_not_a_crash():
    m = xgr.testing._get_matcher_from_grammar('root ::= [a-z]+')
    assert m.accept_string(b"\xff\xfe") is False
    assert m.accept_string("abc")
