"""Repetition state compression (xg2ref/grammar/repetition.py, XGrammar-2 §3.6): counted
repetitions parse and mask exactly like unrolled ones, with a bounded number of states."""

import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.ir import GrammarIR, Repeat, Rule, RuleRef
from xg2ref.grammar.passes import map_expr
from xg2ref.grammar.repetition import compress_repetitions
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import MAX_INPUT_BYTES, Recognizer
from xg2ref.oracle.strategies import grammars, sentences, vocabularies
from tests.hypothesis_budget import examples


def with_ranges(ir: GrammarIR, ranges: list) -> GrammarIR:
    """`ir` with its repetitions given the bounds in `ranges`, in turn; when it has none, the
    root's body repeated."""
    it = iter(ranges * 64)

    def widen(node):
        if isinstance(node, Repeat):
            lo, hi = next(it)
            return Repeat(node.body, lo, hi)
        return node

    rules = [Rule(r.name, map_expr(r.body, widen), r.lookahead, r.options) for r in ir.rules]
    if all(r.body == w.body for r, w in zip(ir.rules, rules)):
        lo, hi = ranges[0]
        rules[0] = Rule(rules[0].name, Repeat(rules[0].body, lo, hi), rules[0].lookahead, rules[0].options)
    return GrammarIR(tuple(rules), ir.root)


RANGES = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 12)).map(
    lambda p: (p[0], None if p[1] == 0 else max(p[0], p[1]) if p[1] != 1 else p[0])), min_size=1, max_size=4)


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), RANGES, vocabularies(b"abc", 10), st.integers(0, 2**16))
def test_counted_masks_match_the_oracle(ir, ranges, vocab_spec, seed):
    ir = with_ranges(ir, ranges)
    vocab, stop_ids, _ = vocab_spec
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    compiled = compile_ir_grammar(Grammar.from_ir(ir), info, repetition_threshold=1)  # count every x{m,n}, n > 1
    matcher = xgr.GrammarMatcher(compiled)
    oracle = Recognizer(ir)
    text = sentences(ir, random.Random(seed)) or b""
    for k in range(min(len(text), 14) + 1):
        if k:
            assert matcher.accept_string(text[k - 1:k])
        have = matcher.compute_bool_mask()
        if k <= 8 or k == len(text):
            want = brute_force_mask(oracle, text[:k], vocab, stop_token_ids=stop_ids,
                                    special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
            assert np.array_equal(have, want), (str(Grammar.from_ir(ir)), text[:k], vocab)
        else:
            assert np.array_equal(have, matcher._every_token_bool_mask())


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(max_rules=3), RANGES, st.lists(st.binary(min_size=0, max_size=8), max_size=6))
def test_counted_prefix_verdicts_match_the_oracle(ir, ranges, probes):
    ir = with_ranges(ir, ranges)
    info = xgr.TokenizerInfo(["a"])
    compiled = compile_ir_grammar(Grammar.from_ir(ir), info, repetition_threshold=1)
    oracle = Recognizer(ir)
    rng = random.Random(len(probes))
    texts = [p.translate(bytes.maketrans(bytes(range(256)), b"abc" * 85 + b"a")) for p in probes]
    # counts such as {9,} nested three deep make even the shortest sentence longer than the
    # oracle reads (MAX_INPUT_BYTES): such a sentence has no oracle verdict to compare with
    texts += [s for s in (sentences(ir, rng) for _ in range(3)) if s and len(s) <= MAX_INPUT_BYTES]
    for text in texts:
        m = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        ok = m.accept_string(text)
        assert ok == oracle.is_prefix(text), (str(Grammar.from_ir(ir)), text)
        if ok:
            assert m.is_terminated() == oracle.is_sentence(text), (str(Grammar.from_ir(ir)), text)


def test_compression_makes_counted_rules_and_shares_equal_ones():
    ir = Grammar.from_ebnf('root ::= [a-z]{0,500} "," [a-z]{0,500} "," [0-9]{3,200}').ir
    out = compress_repetitions(ir, 128)
    counted = [r for r in out.rules if r.option("counted")]
    assert len(counted) == 2  # [a-z]{0,500} twice is one rule; {3,200} the other
    assert compress_repetitions(ir, 1000) is ir  # nothing above the threshold


@pytest.mark.parametrize("ebnf", ['root ::= ("a"{0,2}){0,2}', 'root ::= ("a"{0,3} "b"?){2,4} "c"'])
def test_a_repetition_of_a_counted_repetition_that_may_be_empty(ebnf):
    """The inner repetition, counted first, may be empty: the outer one's body is then nullable
    and is not counted (a counted body that reads nothing would loop without end, growing the
    chart until memory runs out)."""
    ir = Grammar.from_ebnf(ebnf).ir
    out = compress_repetitions(ir, 1)
    inner = [r for r in out.rules if r.option("counted") and r.body.min == 0]
    assert inner and not any(r.option("counted") and r.body.body == RuleRef(inner[0].name) for r in out.rules)
    info = xgr.TokenizerInfo([b"a", b"b", b"c", b"aa", b"ab", b"</s>"], stop_token_ids=[5])
    oracle = Recognizer(ir)
    for text in (b"", b"a", b"aa", b"aaa", b"ab", b"abab"):
        matcher = xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), info, jit=True, repetition_threshold=1))
        if matcher.accept_string(text):
            want = brute_force_mask(oracle, text, info.decoded_vocab, stop_token_ids=[5], vocab_size=info.vocab_size)
            assert np.array_equal(matcher.compute_bool_mask(), want), (ebnf, text)
        else:
            assert not oracle.is_prefix(text)


@pytest.mark.parametrize("lo,hi", [(0, 1000), (999, 1000)])
def test_bounded_states_for_any_range(lo, hi):
    vocab = ["a", "aa", "aaa", '"', 'a"', "</s>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[5])
    compiled = xgr.GrammarCompiler(info).compile_grammar(f'root ::= "\\"" "a"{{{lo},{hi}}} "\\""')
    assert compiled.fsms.num_states < 10 and compiled.fsms.repeats
    _walk_the_bounds(compiled, lo, hi)


@pytest.mark.jit_only
@pytest.mark.parametrize("lo,hi", [(0, 100000), (99999, 100000)])
def test_bounded_states_for_ranges_of_a_hundred_thousand(lo, hi):
    vocab = ["a", "aa", "aaa", '"', 'a"', "</s>"]
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[5])
    compiled = xgr.GrammarCompiler(info).compile_grammar(f'root ::= "\\"" "a"{{{lo},{hi}}} "\\""')
    assert compiled.fsms.num_states < 10
    _walk_the_bounds(compiled, lo, hi)


def _walk_the_bounds(compiled, lo, hi):
    """Masks at the counts around both bounds: a token of n letters fits while count + n <= hi,
    a closing quote once count >= lo."""
    vocab = ["a", "aa", "aaa", '"', 'a"', "</s>"]
    for count in sorted({0, 1, 2, max(lo - 2, 0), max(lo - 1, 0), lo, hi - 3, hi - 2, hi - 1, hi} - {-1}):
        if count < 0 or count > hi:
            continue
        m = xgr.GrammarMatcher(compiled)
        assert m.accept_string('"' + "a" * count)
        mask = m.compute_bool_mask()
        want = [count + n <= hi for n in (1, 2, 3)] + [count >= lo, count + 1 <= hi and count + 1 >= lo, False]
        assert mask.tolist() == want, (lo, hi, count)
        assert (mask == m._every_token_bool_mask()).all()


def test_json_schema_bounds_are_counted():
    info = xgr.TokenizerInfo(["a", "ab", '"', "[", "]", ",", "1", "</s>", '"]', "a\""], stop_token_ids=[7])
    compiler = xgr.GrammarCompiler(info)
    for schema in ({"type": "string", "minLength": 150, "maxLength": 3000},
                   {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 500},
                   {"type": "string", "pattern": "^a{200,400}$"}):
        compiled = compiler.compile_json_schema(schema, any_whitespace=False)
        assert compiled.fsms.repeats, schema
        assert compiled.fsms.num_states < 200
    m = xgr.GrammarMatcher(compiler.compile_json_schema({"type": "string", "minLength": 150, "maxLength": 3000}))
    assert m.accept_string('"' + "ab" * 74)
    assert not m.compute_bool_mask()[2]  # 148 letters: no closing quote yet
    assert m.accept_string("ab")
    assert m.compute_bool_mask()[2]


def test_compression_can_be_switched_off():
    info = xgr.TokenizerInfo(["a", "</s>"], stop_token_ids=[1])
    on = xgr.GrammarCompiler(info).compile_grammar('root ::= "a"{0,300}')
    off = xgr.GrammarCompiler(info, repetition_compression=False).compile_grammar('root ::= "a"{0,300}')
    assert on.fsms.repeats and not off.fsms.repeats
    assert on.fsms.num_states < 5 < 300 < off.fsms.num_states
    with pytest.raises(ValueError, match="repetition_threshold"):
        xgr.GrammarCompiler(info, repetition_threshold=0)
    text = json.dumps("a" * 299)[1:-1]
    for compiled in (on, off):
        m = xgr.GrammarMatcher(compiled)
        assert m.accept_string(text) and not m.accept_string("aa")
