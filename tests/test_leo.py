"""Leo items (kernels/earley.py, "Leo items") and the mutual-tail-call pass (grammar/passes.py):
right recursion completed in one step per position, with every answer unchanged.

Each engine answer (masks, accept, rollback, is_completed) is compared with Leo items and
without them (`leo_items=False`, the plain COMPLETE), and with the brute-force oracle, which
shares no code with either.
"""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.compiler import compile_ir_grammar
from xg2ref.earley import EarleyParser
from xg2ref.frontends.ebnf.parser import parse_ebnf
from xg2ref.fsm.build import build_grammar_fsms
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.ir import ByteString, Choice, GrammarIR, Rule, RuleRef, Sequence
from xg2ref.grammar.passes import join_mutual_tail_calls, mutual_tail_calls, normalize
from xg2ref.grammar.printer import print_grammar
from xg2ref.oracle.brute_force import brute_force_mask
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import sentences
from xg2ref.suite import load_cases

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALPHABET = b"ab,"

# a JSON-like list whose `elements` and `elements_rest` are referenced more than once: the pass
# leaves them alone, so the mutual right recursion reaches the Earley engine
LIST = r"""
root ::= "[" elements "]" | "[]" | "<" elements_rest ">"
elements ::= value elements_rest
elements_rest ::= "" | "," elements
value ::= [0-9]+ | "[" elements "]" | "[]"
"""


@st.composite
def right_recursive_grammars(draw) -> GrammarIR:
    """Grammars whose alternatives mostly end in a reference: right and mutual recursion, with
    now and then a reference in the middle (nesting) and empty alternatives (nullable tails)."""
    n = draw(st.integers(1, 4))
    names = ["root"] + [f"r{k}" for k in range(1, n)]
    literal = st.lists(st.sampled_from(list(ALPHABET)), min_size=1, max_size=2).map(bytes).map(ByteString)
    rules = []
    for name in names:
        alternatives = []
        for _ in range(draw(st.integers(1, 3))):
            items = [draw(literal)]
            if draw(st.integers(0, 3)) == 0:
                items += [RuleRef(draw(st.sampled_from(names))), draw(literal)]
            if draw(st.integers(0, 3)) > 0:
                items.append(RuleRef(draw(st.sampled_from(names))))
            alternatives.append(Sequence(tuple(items)) if draw(st.integers(0, 5)) else ByteString(b""))
        rules.append(Rule(name, Choice(tuple(alternatives))))
    return GrammarIR(tuple(rules), "root")


def _matchers(ir, vocab, stop):
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[stop])
    grammar = Grammar.from_ir(ir)
    return (info, xgr.GrammarMatcher(compile_ir_grammar(grammar, info)),
            xgr.GrammarMatcher(compile_ir_grammar(grammar, info, leo_items=False)))


VOCAB = [b"a", b"b", b",", b"ab", b"a,", b",a", b"ba", b"b,a", b"aa", b"</s>"]


@SETTINGS
@given(right_recursive_grammars(), st.integers(0, 2**16))
def test_leo_items_change_no_mask_accept_rollback_or_completion(ir, seed):
    """Along seeded walks with rollbacks, the matchers with and without Leo items give equal
    masks, accept verdicts and completion, and the masks are the brute-force oracle's."""
    stop = len(VOCAB) - 1
    info, leo, plain = _matchers(ir, VOCAB, stop)
    oracle = Recognizer(ir)
    rng = random.Random(seed)
    accepted: list = []
    for _ in range(24):
        mask = leo.compute_bool_mask()
        assert np.array_equal(mask, plain.compute_bool_mask()), print_grammar(ir)
        prefix = b"".join(VOCAB[t] for t in accepted)
        want = brute_force_mask(oracle, prefix, VOCAB, stop_token_ids=[stop],
                                special_token_ids=info.special_token_ids, vocab_size=info.vocab_size)
        assert np.array_equal(mask, want), (print_grammar(ir), prefix)
        assert leo.is_completed() == plain.is_completed() == oracle.is_sentence(prefix), (print_grammar(ir), prefix)
        if accepted and rng.random() < 0.25:
            k = rng.randint(1, len(accepted))
            leo.rollback(k)
            plain.rollback(k)
            del accepted[-k:]
            continue
        t = rng.randrange(len(VOCAB) - 1)  # allowed or not: both must answer alike
        ok = leo.accept_token(t)
        assert ok == plain.accept_token(t) == bool(mask[t]), (print_grammar(ir), prefix, VOCAB[t])
        if ok:
            accepted.append(t)


# grammars where a set holds several items waiting for one rule, one of them a link: TOP must
# stop there (the other waiter moves on too), whichever of them the set lists first
SHARED_WAITERS = [
    """root ::= "(" p | "(" q
       p ::= "x" a
       q ::= "x" a "y"
       a ::= "a" b
       b ::= "b" | "b" a""",
    """root ::= "(" q | "(" p
       q ::= "x" a "y"
       p ::= "x" a
       a ::= "a" b
       b ::= "b" | "b" a""",
    """root ::= "(" l ")" | "(" l
       l ::= "a" r
       r ::= "" | "," l | "," l ";"
    """,
    """root ::= s | s "!"
       s ::= "a" t | "a" t s
       t ::= "b" s | "b" """,
]


def _verdicts_over_every_string(ir, depth: int, alphabet: bytes) -> None:
    """Depth-first over every string of `alphabet` up to `depth` bytes that the oracle calls a
    viable prefix: the parsers with and without Leo items, of the grammar normalized and as
    written, agree with it on each (viable, complete), reading byte by byte and rolling back one
    byte on the way up."""
    parsers = []
    for fsms in (build_grammar_fsms(normalize(ir)), build_grammar_fsms(normalize(ir, inline=False))):
        arrays = fsms.to_arrays()  # (the second as written: no rule inlined, no tail calls joined)
        parsers += [EarleyParser(fsms, arrays), EarleyParser(fsms, arrays._replace(rule_leo=np.zeros_like(arrays.rule_leo)))]
    oracle = Recognizer(ir)

    def visit(prefix: bytes) -> None:
        for parser in parsers:
            assert parser.is_completed() == oracle.is_sentence(prefix), (print_grammar(ir), prefix)
        if len(prefix) == depth:
            return
        for b in alphabet:
            s = prefix + bytes([b])
            viable = oracle.is_prefix(s)
            for parser in parsers:
                assert parser.advance(bytes([b])) == viable, (print_grammar(ir), s)
            if viable:
                visit(s)
                for parser in parsers:
                    parser.rollback(1)

    visit(b"")


@pytest.mark.parametrize("text", SHARED_WAITERS)
def test_leo_items_on_shared_waiters_read_every_string_as_the_oracle(text):
    ir = parse_ebnf(text)
    _verdicts_over_every_string(ir, 9, bytes(sorted({b for b in text.encode() if b in b"abxy(),;!"})))


@SETTINGS
@given(right_recursive_grammars())
def test_parser_verdicts_with_leo_items_are_the_oracles(ir):
    """Every string over the alphabet up to 7 bytes: viable prefix and completion as the oracle
    says, with and without Leo items, across rollbacks."""
    _verdicts_over_every_string(ir, 7, ALPHABET)


def _set_sizes(parser: EarleyParser) -> np.ndarray:
    c = parser.chart
    return np.diff(c.set_start[:parser.position + 2])


def test_a_right_recursive_list_keeps_a_constant_number_of_items_per_position():
    """The list of 2,000 numbers: with Leo items the last set is as small as the one after the
    first few elements; without, it holds an item per element already read."""
    ir = parse_ebnf(LIST)
    assert mutual_tail_calls(ir) == []  # the recursion reaches the engine as written
    compiled = compile_ir_grammar(Grammar.from_ir(ir), xgr.TokenizerInfo([]))
    leo = EarleyParser(compiled.fsms, compiled.arrays)
    plain = EarleyParser(compiled.fsms, compiled.arrays._replace(rule_leo=np.zeros_like(compiled.arrays.rule_leo)))
    text = ("[" + ",".join(str(n % 97) for n in range(2000)) + "]").encode()
    for parser, n in ((leo, len(text)), (plain, 600)):
        assert parser.advance(text[:n])
    early, late = _set_sizes(leo)[:60].max(), _set_sizes(leo)[-60:].max()
    assert late == early, (early, late)
    assert _set_sizes(plain)[-20:].max() > 100 > 4 * late
    assert leo.is_completed() and not leo.advance(b"]")
    leo.rollback(1)
    assert not leo.is_completed() and leo.advance(b",7]") and leo.is_completed()


def test_the_json_grammar_loses_its_mutual_right_recursion():
    """CATCH takes `elements` into `elements_rest`, which then calls itself last and loops."""
    from xg2ref.grammar.lazy import lower_lazy_rules
    from xg2ref.grammar.passes import flatten, fuse_byte_strings, inline_small_rules

    ir = Grammar.builtin_json_grammar().ir
    assert mutual_tail_calls(inline_small_rules(fuse_byte_strings(flatten(lower_lazy_rules(ir))))) == [
        ("elements_rest", "elements")]
    names = [r.name for r in normalize(ir).rules]
    assert "elements" not in names and "elements_rest" in names
    loops = next(f for name, f in zip(*_machines(ir)) if name == "elements_rest")
    assert not any(r == names.index("elements_rest") for _, r, _ in loops.rule_edges)  # a loop, not a call


def _machines(ir):
    from xg2ref.analysis import analyse

    fsms = analyse(ir).analysed().fsms
    return fsms.rule_names, fsms.fsms


@SETTINGS
@given(right_recursive_grammars(), st.integers(0, 2**16))
def test_joining_mutual_tail_calls_keeps_the_language(ir, seed):
    """The oracle reads the grammar before and after the pass alike, on sentences, their
    prefixes and mutations."""
    joined = join_mutual_tail_calls(ir)
    before, after = Recognizer(ir), Recognizer(joined)
    rng = random.Random(seed)
    for _ in range(4):
        s = sentences(ir, rng, max_bytes=48)
        if s is None:
            return
        for t in (s, s[:rng.randint(0, len(s))], s + b",", s[1:]):
            assert before.is_prefix(t) == after.is_prefix(t), (print_grammar(ir), print_grammar(joined), t)
            assert before.is_sentence(t) == after.is_sentence(t), (print_grammar(ir), print_grammar(joined), t)


def _suite_vocab(case) -> list:
    """Every 1- to 3-byte piece of the case's samples, and the stop token last."""
    pieces = {s.encode()[i:i + n] for s in case.samples for n in (1, 2, 3) for i in range(len(s.encode()))}
    return sorted(p for p in pieces if p) + [b"</s>"]


@pytest.mark.parametrize("case", [c for c in load_cases() if c.kind == "ebnf"], ids=lambda c: c.name)
def test_the_bundled_suite_reads_alike_with_and_without_leo_items(case):
    """Every EBNF case of the bundled suite: along each sample, read greedily (the longest piece
    allowed), the masks with and without Leo items are equal at every step."""
    vocab = _suite_vocab(case)
    info = xgr.TokenizerInfo(vocab, stop_token_ids=[len(vocab) - 1])
    grammar = Grammar.from_ebnf(case.text, root_rule_name=case.root)
    leo = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(grammar))
    plain = xgr.GrammarMatcher(xgr.GrammarCompiler(info, leo_items=False).compile_grammar(grammar))
    by_length = sorted(range(len(vocab) - 1), key=lambda t: -len(vocab[t]))
    for sample in case.samples:
        data, at = sample.encode(), 0
        leo.reset()
        plain.reset()
        while True:
            mask = leo.compute_bool_mask()
            assert np.array_equal(mask, plain.compute_bool_mask()), (case.name, data[:at])
            if at == len(data):
                break
            t = next((t for t in by_length if mask[t] and data.startswith(vocab[t], at)), None)
            if t is None:
                break
            assert leo.accept_token(t) and plain.accept_token(t)
            at += len(vocab[t])
        assert leo.is_terminated() == plain.is_terminated()


def test_the_chart_keeps_at_most_twice_the_room_it_uses():
    """Items and sets grow apart (kernels/chart.py `grown_chart`): after a 20,000-byte list each
    holds at most twice what the parse uses (and the first allocation)."""
    compiled = compile_ir_grammar(Grammar.from_ir(parse_ebnf(LIST)), xgr.TokenizerInfo([]))
    parser = EarleyParser(compiled.fsms, compiled.arrays)
    text = ("[" + ",".join(str(n % 997) for n in range(5000)) + "]").encode()
    assert parser.advance(text) and parser.is_completed()
    c = parser.chart
    sets, items = parser.position + 1, int(c.set_start[parser.position + 1])
    assert len(c.set_start) <= max(2 * (sets + 2), 1025)
    assert len(c.item_state) <= max(2 * items, 4096)
