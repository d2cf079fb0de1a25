"""Token-level edges: `Token(...)`, `ExcludeToken(...)` and `TokenTagDispatch(...)` read one
whole token. The engine (cached masks, every-token masks, accept_token) against the brute-force
oracle with token marks, and against xgrammar 0.2.8's verdicts."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.printer import print_grammar
from xg2ref.oracle.engines import OracleMatcher
from xg2ref.oracle.strategies import grammars, vocabularies

VOCAB = ["a", "b", "ab", "<t>", "</s>", "c", "bc", "x", "", "!", "a!", "aaa"]


def walk_masks(ebnf: str, steps: list, vocab=VOCAB, stop=(4,)):
    """Allowed token texts before each step and after the last; steps are token ids (accept_token)
    or strings (accept_string), and each verdict is recorded."""
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop))
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(ebnf))
    out = []
    for step in list(steps) + [None]:
        mask = matcher.compute_bool_mask()
        assert (mask == matcher._every_token_bool_mask()).all()
        out.append([vocab[t] for t in np.flatnonzero(mask)])
        if step is not None:
            ok = matcher.accept_token(step) if isinstance(step, int) else matcher.accept_string(step)
            out.append(ok)
    return out


CASES = [  # (grammar, steps, expected: masks and verdicts, as xgrammar 0.2.8 gives them)
    ('root ::= "a" Token(3) "b"', [0, 3, 1], [["a"], True, ["<t>"], True, ["b"], True, ["</s>"]]),
    ('root ::= "a" Token(3) "b"', ["a", "<t>"], [["a"], True, ["<t>"], False, ["<t>"]]),
    ('root ::= "a" ExcludeToken(3, 0) "b"', [0, 2],
     [["a"], True, ["b", "ab", "c", "bc", "x", "!", "a!", "aaa"], True, ["b"]]),
    ('root ::= "a" Token(1) | "ab"', [0], [["a", "ab"], True, ["b"]]),
    ('root ::= TokenTagDispatch((3, r), loop_after_dispatch=false, excludes=(7,))\nr ::= "b" "c"', [0, 3, 1],
     [["a", "b", "ab", "<t>", "</s>", "c", "bc", "!", "a!", "aaa"], True,
      ["a", "b", "ab", "<t>", "</s>", "c", "bc", "!", "a!", "aaa"], True, ["b", "bc"], True, ["c"]]),
    ('root ::= "a" Token(3)*', [0, 3, 3], [["a"], True, ["<t>", "</s>"], True, ["<t>", "</s>"], True, ["<t>", "</s>"]]),
    ('root ::= (Token(0) | "b")+', [0, 1, 2], [["a", "b"], True, ["a", "b", "</s>"], True, ["a", "b", "</s>"], False,
                                               ["a", "b", "</s>"]]),
    # stop and special tokens never match a token set
    ('root ::= "a" Token(4, 8) "b"', [0, 4], [["a"], True, [], False, []]),
    # a token read whole and the same token read as bytes, in one step
    ('root ::= Token(2) "c" | "a" [b] "!"', [2], [["a", "ab"], True, ["c", "!"]]),
]


@pytest.mark.parametrize("ebnf, steps, expected", CASES)
def test_token_edges_give_xgrammar_masks(ebnf, steps, expected):
    assert walk_masks(ebnf, steps) == expected


@pytest.fixture(scope="module")
def xgr_module():
    return pytest.importorskip("xgrammar")


def _xgrammar_walk(xgr_module, ebnf, vocab, steps, stop=(), stop_at_refusal=True):
    """xgrammar's allowed token texts before each step and after the last, and each verdict
    (steps: token ids, or strings for accept_string); the walk ends at a refused step unless
    `stop_at_refusal` is False."""
    info = xgr_module.TokenizerInfo(vocab, stop_token_ids=list(stop) or None)
    matcher = xgr_module.GrammarMatcher(xgr_module.GrammarCompiler(info).compile_grammar(ebnf))
    bitmask = xgr_module.allocate_token_bitmask(1, info.vocab_size)
    out = []
    for step in list(steps) + [None]:
        matcher.fill_next_token_bitmask(bitmask)
        rejected = set(xgr_module.testing._get_masked_tokens_from_bitmask(bitmask, info.vocab_size))
        out.append([vocab[t] for t in range(len(vocab)) if t not in rejected])
        if step is not None:
            out.append(matcher.accept_token(step) if isinstance(step, int) else matcher.accept_string(step))
            if not out[-1] and stop_at_refusal:
                break
    return out


@pytest.mark.xgrammar
@pytest.mark.parametrize("ebnf, steps, expected", CASES)
def test_the_expected_masks_are_xgrammars(xgr_module, ebnf, steps, expected):
    assert _xgrammar_walk(xgr_module, ebnf, VOCAB, steps, stop=(4,), stop_at_refusal=False) == expected


# Where xgrammar 0.2.8 loses a rule's callers (specs/05, token-level intrinsics, difference 1):
# a token read both as bytes and through a token edge, with a rule entered in the token-edge
# path. `r` inlined gives xgrammar the right masks; with `r` a rule, xgrammar allows "b", then
# allows nothing (not even the end) and refuses "bc" outright.
LOST_CALLER = 'root ::= "ab" "x" | Token(2) r "c"\nr ::= "b"'
LOST_CALLER_STEPS = [2, 1, 5]
LOST_CALLER_OURS = [["a", "ab"], True, ["b", "bc", "x"], True, ["c"], True, ["</s>"]]
LOST_CALLER_XGRAMMAR = [["a", "ab"], True, ["b", "x"], True, [], False]


def test_a_rule_entered_through_a_token_edge_returns_to_its_caller():
    """xg2ref keeps the context-free reading the brute-force oracle gives, and the inlined
    grammar's masks."""
    assert walk_masks(LOST_CALLER, LOST_CALLER_STEPS) == LOST_CALLER_OURS
    assert walk_masks('root ::= "ab" "x" | Token(2) "b" "c"', LOST_CALLER_STEPS) == LOST_CALLER_OURS
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[4])
    oracle = OracleMatcher(xgr.Grammar.from_ebnf(LOST_CALLER).ir, info)
    for t in LOST_CALLER_STEPS:
        assert oracle.accept_token(t)
    assert oracle.is_completed()


@pytest.mark.xgrammar
def test_xgrammar_loses_the_caller_of_a_rule_entered_through_a_token_edge(xgr_module):
    """The difference is xgrammar's, and only where the token is read both ways: its masks on
    the grammar above end in an empty one; without the byte path, or with `r` inlined, they
    are xg2ref's. If this test fails, xgrammar has changed and specs/05 should say so."""
    def walk(ebnf):
        return _xgrammar_walk(xgr_module, ebnf, VOCAB, LOST_CALLER_STEPS, stop=(4,))
    assert walk(LOST_CALLER) == LOST_CALLER_XGRAMMAR
    assert walk('root ::= "ab" "x" | Token(2) "b" "c"') == LOST_CALLER_OURS
    assert walk('root ::= Token(2) r "c"\nr ::= "b"') == [["ab"], True, ["b", "bc"], True, ["c"], True, ["</s>"]]


def test_rollback_undoes_a_token_read_whole():
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[4])
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar('root ::= ("a" Token(3))+ "b"'))
    assert m.accept_token(0) and m.accept_token(3) and m.accept_token(0)
    before = m.compute_bool_mask()
    assert m.accept_token(3)
    m.rollback(1)
    assert (m.compute_bool_mask() == before).all()
    m.rollback(2)
    assert m.accept_token(3) and m.accept_token(1) and m.accept_token(4) and m.is_terminated()


def test_token_ids_beyond_the_vocabulary_are_refused():
    info = xgr.TokenizerInfo(VOCAB)
    with pytest.raises(ValueError, match=r"Token id 12 in the grammar is out of the vocabulary range \[0, 12\)"):
        xgr.GrammarCompiler(info).compile_grammar("root ::= Token(12)")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), vocabularies(b"abc", 8), st.integers(0, 2**16))
def test_token_set_masks_match_the_brute_force_oracle(data, vocab_spec, seed):
    vocab, stop_ids, _ = vocab_spec
    ir = data.draw(grammars(max_rules=3, token_ids=tuple(range(len(vocab)))))
    info = xgr.TokenizerInfo(vocab, stop_token_ids=list(stop_ids))
    compiled = compile_ir_grammar(Grammar.from_ir(ir), info)
    matcher = xgr.GrammarMatcher(compiled)
    oracle = OracleMatcher(ir, info)
    rng = random.Random(seed)
    for _ in range(6):
        want = oracle.bool_mask()
        assert (matcher.compute_bool_mask() == want).all(), (print_grammar(ir), vocab, oracle.prefix)
        assert (matcher._every_token_bool_mask() == want).all(), (print_grammar(ir), vocab, oracle.prefix)
        allowed = [int(t) for t in np.flatnonzero(want) if t not in stop_ids]
        if not allowed:
            break
        t = rng.choice(allowed)
        assert matcher.accept_token(t) and oracle.accept_token(t)
        assert matcher.is_completed() == oracle.is_completed()
        if rng.random() < 0.2:
            matcher.rollback(1)
            oracle.rollback(1)


# xgrammar's own test of TagDispatch -> TokenTagDispatch -> TagDispatch nesting (test_token_edge.py,
# test_e2e_mixed_tag_and_token_dispatch) meets the same merge (specs/05, token-level intrinsics,
# difference 1): `<mid>` is read both as the outer dispatch's free text and through the token
# edge, so `mid_body`, entered right after it, loses its caller `mid`. xgrammar then refuses
# `<bad>` after `x`; by the grammar's language the inner dispatch may end there (it is empty-able)
# and `mid`'s free text, whose excludes are (4,) only, reads `<bad>`: without the outer dispatch
# (root ::= "<call>" mid) xgrammar allows it too.
NESTED_VOCAB = ["<s>", "</s>", "<call>", "<mid>", "<skip>", "<end>", "<bad>", "hello", "world", "x", "y", "done"]
NESTED = """leaf ::= [a-z]+
inner ::= TagDispatch(("<end>", leaf), excludes=("<bad>"))
mid_body ::= Token(9, 10) inner
mid ::= TokenTagDispatch((3, mid_body), excludes=(4,))
root ::= TagDispatch(("<call>", mid), excludes=("<bad>"))
"""
NESTED_PATH = [7, 2, 3, 9, 8, 5, 11]


def test_nested_token_dispatch_masks_are_the_oracles():
    info = xgr.TokenizerInfo(NESTED_VOCAB)
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(NESTED))
    oracle = OracleMatcher(xgr.Grammar.from_ebnf(NESTED).ir, info)
    for t in NESTED_PATH:
        assert matcher.accept_token(t) and oracle.accept_token(t)
        mask = matcher.compute_bool_mask()
        assert (mask == oracle.bool_mask()).all()
        assert (mask == matcher._every_token_bool_mask()).all()
        if t == 9:
            assert mask[6]  # `<bad>`, read by mid's free text once the inner dispatch has ended
    assert matcher.accept_token(1) and oracle.accept_token(1) and matcher.is_terminated()


@pytest.mark.xgrammar
def test_xgrammar_refuses_what_a_merged_token_edge_makes_unreachable(xgr_module):
    """Pins the merge's effect in xgrammar 0.2.8, where the grammar's language says otherwise.
    `Token(2)*` is lowered by xgrammar into a rule of its own (`root_1 ::= "" | Token(2) root_1`):
    the second `ab` is read inside an occurrence begun after the first, a merged token, and that
    occurrence never returns, so `ab ab c`, a sentence, is refused at `c`. If this test fails,
    xgrammar has changed and specs/05 should say so."""
    walk = _xgrammar_walk(xgr_module, 'root ::= Token(2)* "c" | "ab" "x"', VOCAB, [2, 2, 5], stop=(4,))
    assert walk == [["a", "ab", "c"], True, ["ab", "c", "x"], True, ["ab"], False]
    assert walk_masks('root ::= Token(2)* "c" | "ab" "x"', [2, 2, 5]) == \
        [["a", "ab", "c"], True, ["ab", "c", "x"], True, ["ab", "c"], True, ["</s>"]]
    # the nesting above: `<bad>` refused after `x`, allowed once the outer dispatch is a sequence
    outer = _xgrammar_walk(xgr_module, NESTED, NESTED_VOCAB, [2, 3, 9])
    plain = _xgrammar_walk(xgr_module, NESTED.replace('TagDispatch(("<call>", mid), excludes=("<bad>"))',
                                                      '"<call>" mid'), NESTED_VOCAB, [2, 3, 9])
    assert "<bad>" not in outer[-1] and "<bad>" in plain[-1]
