"""serialize_json / deserialize_json of Grammar and CompiledGrammar, Grammar.union / concat, and the
process-wide recursion depth (xg2ref/serialization.py, xg2ref/config.py)."""

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.grammar.ir import GrammarIR
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import byte_strings, grammars, sentences

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VOCAB = ["a", "b", "c", "ab", "bc", "{", "}", '"', ":", ",", " ", "1", "x", "</s>"]


@SETTINGS
@given(grammars())
def test_grammar_round_trip_is_exact(ir):
    g = xgr.Grammar.from_ir(ir)
    text = g.serialize_json()
    back = xgr.Grammar.deserialize_json(text)
    assert back.ir == ir
    assert json.loads(text)["__VERSION__"] == xgr.get_serialization_version()


@pytest.mark.parametrize("make", [
    lambda: xgr.Grammar.builtin_json_grammar(),
    lambda: xgr.Grammar.from_json_schema({"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}},
                                          "required": ["n"]}),
    lambda: xgr.Grammar.from_regex(r"[a-c]{2,5}x?"),
    lambda: xgr.Grammar.from_ebnf('root ::= TagDispatch(("<a>", r), loop_after_dispatch=true, excludes=("</s>",))\nr ::= "x" "</a>"'),
    lambda: xgr.Grammar.from_ebnf('root ::= a\na[max_tokens=3] ::= [a-c]*'),
])
def test_front_end_grammars_round_trip(make):
    g = make()
    back = xgr.Grammar.deserialize_json(g.serialize_json())
    assert back == g and str(back) == str(g)


def test_compiled_grammar_round_trip_gives_the_same_masks():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[13])
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]}
    compiled = xgr.GrammarCompiler(info).compile_json_schema(schema, any_whitespace=False)
    back = xgr.CompiledGrammar.deserialize_json(compiled.serialize_json(), info)
    assert back.grammar == compiled.grammar and back.tokenizer_info is info
    m1, m2 = xgr.GrammarMatcher(compiled), xgr.GrammarMatcher(back)
    for token in [5, 7, 0, 7, 8, 10, 7, 2, 1, 7, 6, 13]:
        assert np.array_equal(m1.compute_bool_mask(), m2.compute_bool_mask())
        assert m1.accept_token(token) and m2.accept_token(token)
    assert m1.is_terminated() and m2.is_terminated()


@pytest.mark.parametrize("bad, error", [
    ("not json", xgr.InvalidJSONError),
    ("[1, 2]", xgr.DeserializeFormatError),
    ('{"kind": "Grammar", "root": "root", "rules": []}', xgr.DeserializeVersionError),
    ('{"__VERSION__": "v16", "kind": "Grammar", "root": "root", "rules": []}', xgr.DeserializeVersionError),
    ('{"__VERSION__": "@V", "kind": "Grammar", "root": "root", "rules": []}', xgr.DeserializeFormatError),
    ('{"__VERSION__": "@V", "kind": "Grammar", "root": "r", "rules": [{"node": "Rule", "name": "root", '
     '"body": {"node": "ByteString", "value": {"hex": "61"}}, "lookahead": null, "options": []}]}',
     xgr.DeserializeFormatError),
    ('{"__VERSION__": "@V", "kind": "Grammar", "root": "root", "rules": [{"node": "Rule", "name": "root", '
     '"body": {"node": "RuleRef", "name": "nope"}, "lookahead": null, "options": []}]}', xgr.DeserializeFormatError),
    ('{"__VERSION__": "@V", "kind": "Grammar", "root": "root", "rules": [{"node": "Rule", "name": "root", '
     '"body": {"node": "os.system", "name": "x"}, "lookahead": null, "options": []}]}', xgr.DeserializeFormatError),
    ('{"__VERSION__": "@V", "kind": "Grammar", "root": "root", "rules": [{"node": "Rule", "name": "root", '
     '"body": {"node": "ByteString", "value": {"hex": "zz"}}, "lookahead": null, "options": []}]}',
     xgr.DeserializeFormatError),
    ('{"__VERSION__": "@V", "kind": "Grammar", "root": "root", "rules": [{"node": "Rule", "name": "root", '
     '"body": {"node": "ByteString", "bogus": 1}, "lookahead": null, "options": []}]}', xgr.DeserializeFormatError),
    ('{"__VERSION__": "@V", "kind": "Grammar", "root": "root", "rules": [{"node": "Rule", "name": "root", '
     '"body": {"node": "CharClass", "ranges": "xy"}, "lookahead": null, "options": []}]}', xgr.DeserializeFormatError),
])
def test_bad_grammar_json_raises_the_documented_error(bad, error):
    with pytest.raises(error):
        xgr.Grammar.deserialize_json(bad.replace("@V", xgr.get_serialization_version()))


def test_compiled_grammar_checks_the_tokenizer():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[13])
    text = xgr.GrammarCompiler(info).compile_regex("ab+").serialize_json()
    for other in (xgr.TokenizerInfo(VOCAB + ["zz"], stop_token_ids=[13]), xgr.TokenizerInfo(VOCAB, stop_token_ids=[0])):
        with pytest.raises(xgr.DeserializeFormatError, match="compiled for a tokenizer"):
            xgr.CompiledGrammar.deserialize_json(text, other)
    with pytest.raises(xgr.DeserializeFormatError):
        xgr.CompiledGrammar.deserialize_json(xgr.Grammar.from_regex("a").serialize_json(), info)
    with pytest.raises(TypeError):
        xgr.CompiledGrammar.deserialize_json(text, "not a tokenizer")


# ---- union and concat -----------------------------------------------------------------------

@SETTINGS
@given(grammars(), grammars(), st.integers(0, 2**16), byte_strings(b"abc", 5))
def test_union_and_concat_match_their_languages(a, b, seed, data):
    union = xgr.Grammar.union(xgr.Grammar.from_ir(a), xgr.Grammar.from_ir(b)).ir
    concat = xgr.Grammar.concat(xgr.Grammar.from_ir(a), xgr.Grammar.from_ir(b)).ir
    ra, rb, ru, rc = Recognizer(a), Recognizer(b), Recognizer(union), Recognizer(concat)
    rng = random.Random(seed)
    samples = [data, b""] + [s for s in (sentences(a, rng), sentences(b, rng)) if s is not None]
    for s in samples:
        assert ru.is_sentence(s) == (ra.is_sentence(s) or rb.is_sentence(s))
        assert rc.is_sentence(s) == any(ra.is_sentence(s[:k]) and rb.is_sentence(s[k:]) for k in range(len(s) + 1))


def test_union_renames_apart_as_xgrammar_does():
    a = xgr.Grammar.from_ebnf('root ::= "a" b\nb ::= "b"')
    b = xgr.Grammar.from_ebnf('root ::= "c" b\nb ::= "d"')
    assert [r.name for r in xgr.Grammar.union(a, b).ir.rules] == ["root", "root_1", "b", "root_2", "b_1"]
    assert str(xgr.Grammar.concat(a, b)).splitlines()[0] == "root ::= root_1 root_2"
    assert str(xgr.Grammar.union()).strip() == 'root ::= ""'
    with pytest.raises(TypeError):
        xgr.Grammar.union(a, "root ::= \"x\"")


@pytest.mark.xgrammar
def test_union_and_concat_agree_with_xgrammar():
    xgrammar = pytest.importorskip("xgrammar")
    texts = ['root ::= "a" b\nb ::= "b"*', 'root ::= "c" b\nb ::= "d" | ""', 'root ::= [a-d]+']
    strings = ["", "a", "ab", "abb", "c", "cd", "abc", "abcd", "ddd", "abbcdd", "cdab", "abab"]
    for combine in ("union", "concat"):
        ours = getattr(xgr.Grammar, combine)(*(xgr.Grammar.from_ebnf(t) for t in texts))
        theirs = getattr(xgrammar.Grammar, combine)(*(xgrammar.Grammar.from_ebnf(t) for t in texts))
        for s in strings:
            assert (xgr.testing._is_grammar_accept_string(ours, s)
                    == xgrammar.testing._is_grammar_accept_string(theirs, s)), (combine, s)


# ---- recursion depth ----------------------------------------------------------------------

def _nested_arrays(depth: int) -> str:
    text = '{"type": "string"}'
    for _ in range(depth):
        text = '{"type": "array", "items": %s}' % text
    return text


def test_recursion_depth_setting_and_context(monkeypatch):
    monkeypatch.delenv("XGRAMMAR_MAX_RECURSION_DEPTH", raising=False)
    before = xgr.get_max_recursion_depth()
    assert before == 10_000
    with xgr.max_recursion_depth(5):
        assert xgr.get_max_recursion_depth() == 5
        with pytest.raises(xgr.InvalidJSONError, match="maximum recursion depth 5"):
            xgr.Grammar.from_json_schema(_nested_arrays(5))
        xgr.Grammar.from_json_schema(_nested_arrays(3))
        with pytest.raises(xgr.InvalidStructuralTagError, match="recursion depth"):
            xgr.Grammar.from_structural_tag({"type": "structural_tag", "format": {"type": "sequence", "elements": [
                {"type": "sequence", "elements": [{"type": "sequence", "elements": [
                    {"type": "const_string", "value": "x"}]}]}]}})
    assert xgr.get_max_recursion_depth() == before
    monkeypatch.setenv("XGRAMMAR_MAX_RECURSION_DEPTH", "123")
    assert xgr.get_max_recursion_depth() == 123
    monkeypatch.setenv("XGRAMMAR_MAX_RECURSION_DEPTH", "not a number")
    assert xgr.get_max_recursion_depth() == 10_000
    with pytest.raises(ValueError):
        xgr.set_max_recursion_depth(0)


def test_deep_schemas_convert_in_linear_time_or_fail_cleanly():
    """Each array level once wrote its item twice, so 20 levels took half a minute (2^20 nodes);
    far past Python's own recursion limit, a clear error instead of a RecursionError."""
    g = xgr.Grammar.from_json_schema(_nested_arrays(150))
    assert len(str(g)) < 40_000
    info = xgr.TokenizerInfo(["[", "]", '"', "a"])
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(g))
    assert matcher.accept_string("[" * 150 + '"a"' + "]" * 150) and matcher.is_completed()
    with pytest.raises(xgr.GrammarLimitError):
        xgr.Grammar.from_json_schema(_nested_arrays(900))
    with pytest.raises(xgr.InvalidJSONError):
        xgr.Grammar.from_json_schema(_nested_arrays(5000))


def test_grammar_ir_type():
    assert isinstance(xgr.Grammar.deserialize_json(xgr.Grammar.from_regex("a").serialize_json()).ir, GrammarIR)
