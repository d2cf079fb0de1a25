"""Per-rule byte FSMs: UTF-8 ranges, Thompson construction, determinize/minimize, arrays."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xg2ref.exceptions import GrammarLimitError
from xg2ref.fsm.build import build_grammar_fsms, rule_fsm
from xg2ref.fsm.fsm import FSM
from xg2ref.fsm.utf8 import utf8_sequences
from xg2ref.grammar.charsets import encode_codepoint
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import grammars
from xg2ref.grammar.ir import ByteString, CharClass, Choice, GrammarIR, Repeat, Rule, RuleRef, Sequence

A, B, C = ByteString(b"a"), ByteString(b"b"), ByteString(b"c")


def _matches(seqs, data: bytes) -> bool:
    return any(len(s) == len(data) and all(lo <= x <= hi for (lo, hi), x in zip(s, data)) for s in seqs)


@pytest.mark.parametrize("lo, hi, want", [
    (0x00, 0x7F, [((0x00, 0x7F),)]),
    (0xE0, 0xE9, [((0xC3, 0xC3), (0xA0, 0xA9))]),
    (0x80, 0x7FF, [((0xC2, 0xDF), (0x80, 0xBF))]),
    (0x4E00, 0x9FFF, [((0xE4, 0xE4), (0xB8, 0xBF), (0x80, 0xBF)), ((0xE5, 0xE9), (0x80, 0xBF), (0x80, 0xBF))]),
    (0x1F600, 0x1F600, [((0xF0, 0xF0), (0x9F, 0x9F), (0x98, 0x98), (0x80, 0x80))]),
])
def test_utf8_sequences_table(lo, hi, want):
    assert utf8_sequences(lo, hi) == want


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 0x10FFFF), st.integers(0, 0x10FFFF), st.integers(0, 0x10FFFF))
def test_utf8_sequences_match_exactly_the_range(a, b, probe):
    lo, hi = min(a, b), max(a, b)
    seqs = utf8_sequences(lo, hi)
    for cp in (lo, hi, probe, lo - 1, hi + 1):
        if 0 <= cp <= 0x10FFFF:
            assert _matches(seqs, encode_codepoint(cp)) == (lo <= cp <= hi)


def _strings(alphabet: bytes, max_len: int):
    for n in range(max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            yield bytes(t)


def _single_rule(body):
    return build_grammar_fsms(GrammarIR((Rule("root", body),))).fsms[0]


@pytest.mark.parametrize("body, accepted, rejected", [
    (ByteString(b"ab"), [b"ab"], [b"", b"a", b"abb"]),
    (ByteString(b""), [b""], [b"a"]),
    (Choice((A, Sequence((B, C)))), [b"a", b"bc"], [b"b", b"ac", b""]),
    (Repeat(A, 0, None), [b"", b"a", b"aaaa"], [b"b"]),
    (Repeat(A, 1, None), [b"a", b"aaa"], [b""]),
    (Repeat(A, 0, 1), [b"", b"a"], [b"aa"]),
    (Repeat(Sequence((A, B)), 2, 3), [b"abab", b"ababab"], [b"ab", b"abababab", b"aba"]),
    (Repeat(A, 0, 0), [b""], [b"a"]),
    (CharClass(((ord("a"), ord("c")),)), [b"a", b"b", b"c"], [b"d", b""]),
    (CharClass(((ord("b"), ord("b")),), negated=True), [b"a", b"c", "é".encode()], [b"b", b"", b"\xc3"]),
    (CharClass(()), [], [b"", b"a"]),
    (CharClass((), negated=True), [b"\n", "中".encode(), "😀".encode()], [b"", b"\xff"]),
    (CharClass(((0xE0, 0xE9),)), ["à".encode(), "é".encode()], ["ê".encode(), b"a"]),
])
def test_rule_fsm_language(body, accepted, rejected):
    fsm = _single_rule(body)
    assert fsm.is_deterministic()
    for s in accepted:
        assert fsm.accepts(s), s
    for s in rejected:
        assert not fsm.accepts(s), s


def test_minimize_merges_equivalent_states():
    # (a|b)(a|b) written as two choices of literals: the minimal DFA has 3 states
    body = Sequence((Choice((A, B)), Choice((A, B))))
    assert _single_rule(body).num_states == 3


def test_trim_removes_dead_states():
    # s0 -a-> s1 (final), s0 -b-> s2 (dead end): the b edge must go
    fsm = FSM(3, 0, frozenset([1]), byte_edges=((0, 97, 97, 1), (0, 98, 98, 2)))
    trimmed = fsm.trim()
    assert trimmed.num_states == 2 and len(trimmed.byte_edges) == 1


def test_unproductive_rule_edges_are_cut():
    # root ::= "a" | "b" loop ; loop ::= "x" loop   (loop's language is empty)
    ir = GrammarIR((Rule("root", Choice((A, Sequence((B, RuleRef("loop")))))),
                    Rule("loop", Sequence((ByteString(b"x"), RuleRef("loop"))))))
    g = build_grammar_fsms(ir)
    assert g.productive == (True, False)
    root = g.fsms[0]
    assert not root.rule_edges and [e[1] for e in root.byte_edges] == [97]


def test_nullable_rules():
    ir = GrammarIR((Rule("root", Sequence((RuleRef("x"), RuleRef("y")))),
                    Rule("x", Choice((ByteString(b""), A))),
                    Rule("y", Repeat(RuleRef("x"), 1, None)),
                    Rule("z", Sequence((RuleRef("x"), B)))))
    assert build_grammar_fsms(ir).nullable == (True, True, True, False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(b"ab"), st.integers(0, 5)), max_size=14),
       st.sets(st.integers(0, 5), max_size=3))
def test_determinize_and_minimize_keep_the_language(edges, finals):
    nfa = FSM(6, 0, frozenset(finals), tuple(sorted({(s, c, c, d) for s, c, d in edges})))
    dfa = nfa.determinize()
    assert dfa is not None and dfa.is_deterministic()
    small = dfa.minimize()
    assert small.num_states <= dfa.num_states
    for s in _strings(b"ab", 5):
        assert nfa.accepts(s) == dfa.accepts(s) == small.accepts(s), s


def test_to_arrays_is_consistent_csr():
    ir = GrammarIR((Rule("root", Sequence((A, RuleRef("x"), C))), Rule("x", Repeat(B, 0, None))))
    g = build_grammar_fsms(ir)
    a = g.to_arrays()
    assert a.byte_indptr[-1] == len(a.byte_lo) == sum(len(f.byte_edges) for f in g.fsms)
    assert a.ref_indptr[-1] == len(a.ref_rule) == 1
    assert np.all(np.diff(a.byte_indptr) >= 0)
    for r, f in enumerate(g.fsms):
        start = a.rule_start[r]
        assert a.state_rule[start] == r
        assert a.is_final[start] == (f.start in f.finals)
    assert a.rule_nullable.tolist() == [False, True]


def test_huge_repetition_hits_the_documented_limit():
    with pytest.raises(GrammarLimitError, match="FSM states"):
        rule_fsm(Repeat(Sequence((A, B)), 0, 300_000), {}, "big")


@pytest.mark.parametrize("body, good, bad", [
    ('[a-z] [a-z0-9_]* [ \\t\\n]*', [b"x", b"x1 ", b"ab_ \n"], [b"x a", b"x 1", b" "]),
    ('"a"* "b"*', [b"", b"aab", b"bb"], [b"ba", b"aba"]),
    ('("a" | "b")* "c"* "a"?', [b"abcca", b"c", b"ba"], [b"cb", b"aca c"]),
])
def test_consecutive_loops_stay_separate(body, good, bad):
    fsm = build_grammar_fsms(Grammar.from_ebnf(f"root ::= {body}").ir).fsms[0]
    for s in good:
        assert fsm.accepts(s), s
    for s in bad:
        assert not fsm.accepts(s), s


def _strings(alphabet: bytes, depth: int):
    for n in range(depth + 1):
        for t in itertools.product(alphabet, repeat=n):
            yield bytes(t)


@settings(max_examples=800, deadline=None)
@given(grammars(max_rules=1, max_depth=4, refs=False))
def test_regular_rule_fsms_accept_exactly_the_oracle_sentences(ir):
    """A rule without references is a regular language: its simplified FSM must accept
    exactly the oracle's sentences (every string of up to 4 bytes over a, b, c)."""
    fsms = build_grammar_fsms(ir)
    fsm = fsms.fsms[fsms.root]
    oracle = Recognizer(ir)
    for s in _strings(b"abc", 4):
        assert fsm.accepts(s) == oracle.is_sentence(s), (print_grammar(ir), s)


def test_a_loop_never_returns_to_the_entry_of_its_fragment():
    fsm = build_grammar_fsms(Grammar.from_ebnf('root ::= ("a"* "aa")?').ir).fsms[0]
    assert [fsm.accepts(b"a" * n) for n in range(5)] == [True, False, True, True, True]


def _moore(dfa: FSM) -> FSM:
    """Moore's refinement, the reference for `minimize`: split by (block, each byte's target
    block, each rule's target block) until nothing splits."""
    block = [int(s in dfa.finals) for s in range(dfa.num_states)]
    while True:
        sig = [(block[s], tuple((b, block[d]) for t, lo, hi, d in dfa.byte_edges if t == s for b in range(lo, hi + 1)),
                tuple(sorted((r, block[d]) for t, r, d in dfa.rule_edges if t == s))) for s in range(dfa.num_states)]
        ids = {x: k for k, x in enumerate(dict.fromkeys(sig))}
        stable, block = len(ids) == len(set(block)), [ids[x] for x in sig]
        if stable:
            break
    byte_edges = tuple(sorted({(block[s], b, b, block[d]) for s, lo, hi, d in dfa.byte_edges for b in range(lo, hi + 1)}))
    rule_edges = tuple(sorted({(block[s], r, block[d]) for s, r, d in dfa.rule_edges}))
    return FSM(len(set(block)), block[dfa.start], frozenset(block[s] for s in dfa.finals), byte_edges, rule_edges).trim()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.sampled_from([(97, 97), (98, 99), (97, 99), (100, 120)]),
                          st.integers(0, 7)), max_size=20),
       st.lists(st.tuples(st.integers(0, 7), st.integers(0, 2), st.integers(0, 7)), max_size=5),
       st.sets(st.integers(0, 7), max_size=4))
def test_minimize_is_moores_minimal_machine(edges, rules, finals):
    nfa = FSM(8, 0, frozenset(finals), tuple(sorted({(s, lo, hi, d) for s, (lo, hi), d in edges})),
              tuple(sorted(set(rules))))
    dfa = nfa.determinize()
    small, reference = dfa.minimize(), _moore(dfa)
    assert small.num_states == reference.num_states and small.finals == reference.finals
    assert small.rule_edges == reference.rule_edges
    expand = lambda f: {(s, b, d) for s, lo, hi, d in f.byte_edges for b in range(lo, hi + 1)}  # noqa: E731
    assert expand(small) == expand(reference)
