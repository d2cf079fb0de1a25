"""Rule options `capture` and `temperature` (xgrammar 0.2.8; specs/01-ebnf.md and specs/03-earley.md):
parsing and printing, `GrammarMatcher.get_captures`, `GrammarMatcher.temperature`,
`BatchGrammarMatcher.batch_fill_temperature` and the `temperatures` of `traverse_draft_tree`. Each
is checked against literal tables, against brute-force definitions over the oracle's recognizer
(`want`) and, when installed, against xgrammar 0.2.8."""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from hypothesis_budget import examples
from xg2ref.compiler import compile_ir_grammar
from xg2ref.earley import EarleyParser
from xg2ref.exceptions import BitmaskError, EBNFError, MatcherError
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.ir import ByteString, CharClass, Choice, GrammarIR, Rule, RuleRef, walk
from xg2ref.grammar.passes import map_expr, unproductive_rules
from xg2ref.oracle.recognizer import Recognizer
from xg2ref.oracle.strategies import grammars, sentences
from xg2ref.rule_options import RuleOptionTables, capture_events

VOCAB = [chr(c) for c in range(32, 127)] + ["</s>", "ab", "12", "<a>", "true", '":', "x1"]
STOP = VOCAB.index("</s>")
INFO = xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
COMPILER = xgr.GrammarCompiler(INFO, cache_enabled=False)
SETTINGS = settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
MARK = b"\xff"  # a byte no grammar of grammars() reads: never valid UTF-8


def matcher(grammar: str, **kwargs) -> xgr.GrammarMatcher:
    return xgr.GrammarMatcher(COMPILER.compile_grammar(grammar), **kwargs)


def feed(m, text: str) -> None:
    for ch in text:
        assert m.accept_token(VOCAB.index(ch)), (text, ch)


# ---- parsing and printing ---------------------------------------------------------------------

PRINTED = [  # (rule text, the rule as printed: xgrammar 0.2.8 prints these options the same way)
    ('t[capture] ::= "x"', 't[capture="t"] ::= "x"'),
    ('t[capture="a b,c"] ::= "x"', 't[capture="a b,c"] ::= "x"'),
    ('t[temperature=0.1] ::= "x"', 't[temperature=0.100000001] ::= "x"'),
    ('t[temperature=1] ::= "x"', 't[temperature=1] ::= "x"'),
    ('t[temperature=.5] ::= "x"', 't[temperature=0.5] ::= "x"'),
    ('t[temperature=+1e2] ::= "x"', 't[temperature=100] ::= "x"'),
    ('t[temperature=3.4e38] ::= "x"', 't[temperature=3.39999995e+38] ::= "x"'),
    ('t[temperature=1e-50] ::= "x"', 't[temperature=0] ::= "x"'),
    ('t[max_tokens=3, capture, temperature=0.30000001] ::= "x"',
     't[max_tokens=3, capture="t", temperature=0.300000012] ::= "x"'),
]

BAD_OPTIONS = [  # (rule text, message)
    ('t[capture=""] ::= "x"', "capture name must not be empty"),
    ('t[capture="a\\nb"] ::= "x"', "without escapes"),
    ("t[capture=x] ::= \"x\"", "capture takes a string"),
    ('t[capture, capture="y"] ::= "x"', "capture is given twice"),
    ('t[temperature] ::= "x"', "Assign should be preceded by an identifier"),  # xgrammar's words, then ours
    ('t[temperature=-1] ::= "x"', "The temperature must be a finite non-negative number"),
    ('t[temperature=3.5e38] ::= "x"', "finite non-negative number"),  # past the largest float32
    ('t[temperature=inf] ::= "x"', "(rule option temperature takes a finite number >= 0)"),
    ('t[temperature=1_0] ::= "x"', "Assign should be preceded by an identifier"),
    ('t[temperature="1"] ::= "x"', "Assign should be preceded by an identifier"),
]


@pytest.mark.parametrize("rule, printed", PRINTED)
def test_options_print_as_xgrammar_prints_them_and_parse_back(rule, printed):
    g = xgr.Grammar.from_ebnf(f"root ::= t\n{rule}")
    assert str(g).splitlines()[1] == printed
    assert xgr.Grammar.from_ebnf(str(g)) == g


def test_bare_capture_is_labelled_with_the_rule_name():
    rule = xgr.Grammar.from_ebnf('root ::= num\nnum[capture] ::= [0-9]+').ir.rule("num")
    assert rule.options == (("capture", "num"),)


@pytest.mark.parametrize("rule, message", BAD_OPTIONS)
def test_bad_options_are_errors(rule, message):
    with pytest.raises(EBNFError, match=message):
        xgr.Grammar.from_ebnf(f"root ::= t\n{rule}")


@pytest.mark.xgrammar
@pytest.mark.parametrize("rule, printed", PRINTED)
def test_xgrammar_prints_the_options_as_we_do(rule, printed):
    xgrammar = pytest.importorskip("xgrammar")
    text = str(xgrammar.Grammar.from_ebnf(f"root ::= t\n{rule}")).splitlines()[1]
    assert text.split(" ::= ")[0] == printed.split(" ::= ")[0]


@pytest.mark.xgrammar
@pytest.mark.parametrize("rule, message", BAD_OPTIONS)
def test_xgrammar_rejects_the_bad_options_too(rule, message):
    xgrammar = pytest.importorskip("xgrammar")
    with pytest.raises(RuntimeError):
        xgrammar.Grammar.from_ebnf(f"root ::= t\n{rule}")


# ---- captures: literal expectations (each checked against xgrammar 0.2.8 below) ---------------

CAPTURES = [  # (grammar, input, get_captures(), get_captures(deduplicate=False))
    ('root ::= num\nnum[capture] ::= [0-9]+', "123",
     [("num", b"123")], [("num", b"1"), ("num", b"12"), ("num", b"123")]),
    ('root ::= (num ",")* num\nnum[capture="n"] ::= [0-9]+', "1,23,4",
     [("n", b"1"), ("n", b"23"), ("n", b"4")], [("n", b"1"), ("n", b"2"), ("n", b"23"), ("n", b"4")]),
    ('root ::= a\na[capture] ::= b "x"\nb[capture] ::= [0-9]+', "12x",
     [("b", b"12"), ("a", b"12x")], [("b", b"1"), ("b", b"12"), ("a", b"12x")]),
    ('root ::= a a\na[capture] ::= "a" | "aa"', "aaa",  # every parse hypothesis counts
     [("a", b"aa"), ("a", b"aa"), ("a", b"a")], [("a", b"a"), ("a", b"aa"), ("a", b"a"), ("a", b"aa"), ("a", b"a")]),
    ('root ::= "x" a "b"\na[capture] ::= "a"*', "xaab",  # an empty completion after set 0 is an event
     [("a", b"aa")], [("a", b""), ("a", b"a"), ("a", b"aa")]),
    ('root ::= a "b"\na[capture] ::= "a"?', "b", [], []),  # ... in set 0 it is not
    ('root[capture="r"] ::= "a" root | "b"', "aab", [("r", b"b"), ("r", b"ab"), ("r", b"aab")],
     [("r", b"b"), ("r", b"ab"), ("r", b"aab")]),
    ('root ::= "(" e ")"\ne[capture] ::= e "+" e | [0-9]', "(1+2+3)",
     [("e", b"3"), ("e", b"2+3"), ("e", b"1+2+3")],
     [("e", b"1"), ("e", b"2"), ("e", b"1+2"), ("e", b"3"), ("e", b"2+3"), ("e", b"1+2+3")]),
    ('root ::= s "z"\ns[capture] ::= "q" a\na[capture] ::= "x"?', "q", [("s", b"q"), ("a", b"")],
     [("s", b"q"), ("a", b"")]),
    ('root ::= TagDispatch(("<a>", ta))\nta[capture] ::= [0-9]+ "</a>"', "x<a>12</a>y", [("ta", b"12</a>")],
     [("ta", b"12</a>")]),
    ('root ::= Regex("[a-z]+") n\nn[capture] ::= Regex("[0-9]{1,3}")', "ab12",
     [("n", b"12")], [("n", b"1"), ("n", b"12")]),
]


@pytest.mark.parametrize("grammar, text, dedup, raw", CAPTURES)
def test_captures(grammar, text, dedup, raw):
    by_token, by_string, by_bytes = matcher(grammar), matcher(grammar), matcher(grammar)
    feed(by_token, text)
    assert by_string.accept_string(text)
    assert all(by_bytes.accept_string(text[i:i + 2].encode()) for i in range(0, len(text), 2))
    for m in (by_token, by_string, by_bytes):
        assert m.get_captures() == dedup
        assert m.get_captures(deduplicate=False) == raw


def test_captures_follow_rollback_reset_and_fork():
    grammar = 'root ::= (k ":" v ";")*\nk[capture] ::= [a-z]+\nv[capture="value"] ::= [0-9]+ | "true"'
    m = matcher(grammar)
    history = [m.get_captures(deduplicate=False)]
    for token in ["ab", ":", "12", ";", "x", ":", "true", ";"]:
        assert m.accept_token(VOCAB.index(token))
        history.append(m.get_captures(deduplicate=False))
    assert m.get_captures() == [("k", b"ab"), ("value", b"12"), ("k", b"x"), ("value", b"true")]
    other = m.fork()
    for back in range(len(history) - 1, -1, -1):  # rollback gives back exactly the earlier captures
        assert m.get_captures(deduplicate=False) == history[back]
        if back:
            m.rollback(1)
    assert other.get_captures(deduplicate=False) == history[-1]  # the fork is independent
    other.reset()
    assert other.get_captures() == [] and m.get_captures() == []


def test_masks_jump_forward_and_stop_tokens_record_nothing():
    m = matcher('root ::= "<" tag ">" [a-z]* "</" tag ">"\ntag[capture] ::= "div" | "span"')
    feed(m, "<di")
    before = m.get_captures(deduplicate=False)
    m.compute_bool_mask()
    m.fill_next_token_bitmask(xgr.allocate_token_bitmask(1, len(VOCAB)))
    assert m.find_jump_forward_string() == "v>"
    assert m.get_captures(deduplicate=False) == before == []
    feed(m, "v>ab</div>")
    assert m.get_captures() == [("tag", b"div"), ("tag", b"div")]
    assert m.accept_token(STOP) and m.get_captures() == [("tag", b"div"), ("tag", b"div")]


def test_grammars_without_the_options_take_no_extra_step():
    m = matcher('root ::= [a-z]+')
    assert m._options is None and m._accepted is None  # nothing recorded, the matcher's old path
    feed(m, "abc")
    assert m.get_captures() == [] and m.temperature is None
    only_temperature = matcher('root[temperature=0.5] ::= [a-z]+')
    assert only_temperature._accepted is None and only_temperature.temperature == 0.5


# ---- captures against their brute-force definition --------------------------------------------


def brute_force_events(ir: GrammarIR, data: bytes, captured: set) -> set:
    """{(A, j, k)}: 1 <= k <= n, A captured, A derives data[j:k], and some derivation of the root
    reads data[:j] and then an occurrence of A (found by letting every reference to A read MARK
    instead: data[:j] + MARK is then a viable prefix); the root's own occurrence starts at 0."""
    out = set()
    for name in captured:
        def marked(node, name=name):
            return Choice((node, ByteString(MARK))) if isinstance(node, RuleRef) and node.name == name else node
        predicted = Recognizer(GrammarIR(tuple(Rule(r.name, map_expr(r.body, marked)) for r in ir.rules), ir.root))
        reads = Recognizer(GrammarIR(ir.rules, name))
        for j in range(len(data) + 1):
            if (name == ir.root and j == 0) or predicted.is_prefix(data[:j] + MARK):
                out.update((name, j, k) for k in range(max(j, 1), len(data) + 1) if reads.is_sentence(data[j:k]))
    return out


@st.composite
def captured_grammars(draw):
    """A productive grammar of grammars() without empty classes, some rules captured, and a
    prefix of one of its sentences."""
    ir = draw(grammars(max_rules=4, max_depth=3))
    empty_class = any(isinstance(n, CharClass) and not n.codepoint_ranges() for r in ir.rules for n in walk(r.body))
    if unproductive_rules(ir) or empty_class:
        return None
    captured = {r.name for r in ir.rules if draw(st.integers(0, 3))}
    ir = GrammarIR(tuple(Rule(r.name, r.body, None, (("capture", r.name),) if r.name in captured else ())
                         for r in ir.rules), ir.root)
    sentence = sentences(ir, random.Random(draw(st.integers(0, 2**16))))
    if sentence is None:
        return None
    return ir, captured, sentence[:draw(st.integers(min(len(sentence), 1), min(len(sentence), 10)))]


@SETTINGS
@given(captured_grammars())
def test_capture_events_are_the_brute_force_ones(case):
    if case is None:
        return
    ir, captured, data = case
    compiled = compile_ir_grammar(Grammar.from_ir(ir), INFO)
    parser = EarleyParser(compiled.fsms, compiled.arrays)
    assert parser.advance(data)
    rows = capture_events(RuleOptionTables(compiled.fsms, compiled.arrays), parser.chart, parser.position)
    names = compiled.fsms.rule_names
    have = [(names[rule], start, end) for rule, start, end in rows.tolist()]
    want = brute_force_events(ir, data, captured)
    assert len(have) == len(set(have)) and set(have) == want
    assert [end for _, _, end in have] == sorted(end for _, _, end in have)  # in the order of their ends
    m = xgr.GrammarMatcher(compiled)  # the public view: (label, span), longest of each occurrence
    assert m.accept_string(data)
    longest = {(a, j): k for a, j, k in sorted(want, key=lambda e: e[2])}
    assert sorted(m.get_captures()) == sorted((a, data[j:k]) for (a, j), k in longest.items())
    assert sorted(m.get_captures(deduplicate=False)) == sorted((a, data[j:k]) for a, j, k in want)


# ---- temperature --------------------------------------------------------------------------------

TEMPERATURES = [  # (grammar, input, default_temperature, temperature before each token and after the last)
    ('root ::= "a" t "b"\nt[temperature=0.5] ::= "xy"', "axyb", None, [None, 0.5, 0.5, None, None]),
    ('root ::= "a" t "b"\nt[temperature=0.5] ::= "xy"', "axyb", 1.0, [1.0, 0.5, 0.5, 1.0, 1.0]),
    ('root ::= "a" t "b" | "a" u "c"\nt[temperature=0.5] ::= "xy"\nu[temperature=0.75] ::= "xz"', "axzc", None,
     [None, 0.75, 0.75, None, None]),  # live rules disagree: the largest
    ('root ::= "a" t "b"\nt[temperature=0.5] ::= "x" u "y"\nu[temperature=0.875] ::= "z"', "axzyb", None,
     [None, 0.5, 0.875, 0.5, None, None]),  # the nearest rule with a temperature
    ('root[temperature=0.25] ::= "a" t "b"\nt ::= "x" "y"', "axyb", None, [0.25, 0.25, 0.25, 0.25, None]),
    ('root ::= "a" t | "b" u\nt[temperature=0.5] ::= w\nu[temperature=1.5] ::= w\nw ::= "(" w ")" | [0-9]+', "a(1)",
     None, [None, 0.5, 0.5, 0.5, None]),  # a shared rule inherits from the occurrence that predicted it
    ('root ::= "a" t | "a" u\nt[temperature=0.5] ::= w\nu[temperature=1.5] ::= w "!"\nw ::= "(" w ")" | [0-9]+',
     "a(1)!", None, [None, 1.5, 1.5, 1.5, 1.5, None]),  # ... from all of them
    ('root ::= t "b"?\nt[temperature=0.5] ::= "x"+', "xxb", None, [0.5, 0.5, 0.5, None]),
    ('root ::= t\nt[temperature=0] ::= "x"', "x", None, [0.0, None]),
    ('root ::= TagDispatch(("<a>", ta))\nta[temperature=0.25] ::= [0-9]+ "</a>"', "x<a>1</a>", None,
     [None, None, None, None, 0.25, 0.25, 0.25, 0.25, 0.25, None]),
    ('root ::= "a" t\nt[temperature=0.5] ::= Token(66) "c"', "abc", None, [None, 0.5, 0.5, None]),  # token edges read
]


@pytest.mark.parametrize("grammar, text, default, want", TEMPERATURES)
def test_temperature_along_the_input(grammar, text, default, want):
    m = matcher(grammar, default_temperature=default)
    have = [m.temperature]
    for ch in text:
        assert m.accept_token(VOCAB.index(ch))
        have.append(m.temperature)
    assert have == want


def test_temperature_is_a_float32_and_survives_a_stop_token():
    m = matcher('root ::= t*\nt[temperature=0.1] ::= "x"', default_temperature=0.7)
    assert m.temperature == float(np.float32(0.1))
    feed(m, "x")
    assert m.accept_token(STOP) and m.temperature == float(np.float32(0.1))  # the set is unchanged
    m.rollback(2)
    assert m.temperature == float(np.float32(0.1))
    assert matcher('root ::= "x"', default_temperature=0.7).temperature == float(np.float32(0.7))


@pytest.mark.parametrize("value, error", [(-1.0, MatcherError), (float("nan"), MatcherError),
                                          (float("inf"), MatcherError), (1e300, MatcherError),  # inf as a float32
                                          ("1", TypeError), (True, TypeError)])
def test_bad_default_temperatures(value, error):
    with pytest.raises(error):
        matcher('root ::= "x"', default_temperature=value)


def brute_force_temperature(ir: GrammarIR, data: bytes, temps: dict):
    """The largest temperature T(C) over the rules C such that some derivation of the root reads
    data and then a byte whose nearest enclosing rule with a temperature is C; None when none.
    Found by giving every rule a copy per context (the nearest such rule above it) and letting
    the leaves of context C read MARK at any of their positions: data + MARK is then a viable
    prefix. (`data` ends between code points, so the next byte starts a leaf or is inside a
    string.)"""
    contexts = [None] + sorted(temps)
    best = None
    for target in sorted(temps):
        def body(expr, ctx):
            def leaf(node):
                if isinstance(node, RuleRef):
                    return RuleRef(f"{node.name}@{node.name if node.name in temps else ctx}")
                if ctx != target:
                    return node
                if isinstance(node, ByteString) and node.value:
                    return Choice((node,) + tuple(ByteString(node.value[:i] + MARK) for i in range(len(node.value))))
                return Choice((node, ByteString(MARK))) if isinstance(node, CharClass) else node
            return map_expr(expr, leaf)
        rules = tuple(Rule(f"{r.name}@{ctx}", body(r.body, ctx)) for r in ir.rules for ctx in contexts)
        root = f"{ir.root}@{ir.root if ir.root in temps else None}"
        if Recognizer(GrammarIR(rules, root)).is_prefix(data + MARK):
            best = temps[target] if best is None else max(best, temps[target])
    return best


@SETTINGS
@given(st.data())
def test_temperature_is_the_brute_force_one(data):
    ir = data.draw(grammars(max_rules=4, max_depth=3))
    if unproductive_rules(ir):
        return
    values = [0.25, 0.5, 0.75, 1.5]
    temps = {r.name: data.draw(st.sampled_from(values)) for r in ir.rules if data.draw(st.integers(0, 2))}
    # a rule with an option is never inlined: a captured rule without a temperature keeps its own
    # items, which inherit the temperature of the occurrences that predicted them
    kept = data.draw(st.booleans())
    ir = GrammarIR(tuple(Rule(r.name, r.body, None, (("temperature", temps[r.name]),) if r.name in temps
                              else (("capture", r.name),) if kept else ()) for r in ir.rules), ir.root)
    sentence = sentences(ir, random.Random(data.draw(st.integers(0, 2**16))))
    if sentence is None:
        return
    cut = data.draw(st.integers(0, len(sentence)))
    if cut < len(sentence) and sentence[cut] & 0xC0 == 0x80:
        return
    m = xgr.GrammarMatcher(compile_ir_grammar(Grammar.from_ir(ir), INFO))
    assert m.accept_string(sentence[:cut])
    assert m.temperature == brute_force_temperature(ir, sentence[:cut], temps)


CHAR_BUDGET_TEMPERATURE = 'start: value ">"\nvalue[max_chars=2, temperature=0.7]: /[a-z]*/'


def _temperature_walk(mod) -> list:
    info = mod.TokenizerInfo(["a", "ab", "abc", ">"])
    grammar = mod.Grammar.from_lark(CHAR_BUDGET_TEMPERATURE, tokenizer_info=info)
    m = mod.GrammarMatcher(mod.GrammarCompiler(info).compile_grammar(grammar), terminate_without_stop_token=True)
    out = [m.temperature]
    for token in (1, 3):
        out += [m.accept_token(token), m.temperature]
    return out


def test_a_spent_character_budget_gives_no_temperature():
    """The rule's items are held back once its two characters are read (CHAR-ENFORCE): the
    temperature is the default again, as xgrammar reports it."""
    assert _temperature_walk(xgr) == [pytest.approx(0.7), True, None, True, None]


@pytest.mark.xgrammar
def test_the_spent_budget_temperature_is_xgrammars():
    xgrammar = pytest.importorskip("xgrammar")
    assert _temperature_walk(xgrammar) == _temperature_walk(xgr)


def test_batch_fill_temperature():
    grammar = 'root ::= "a" t "b"\nt[temperature=0.5] ::= "xy"'
    ms = [matcher(grammar), matcher(grammar, default_temperature=0.1), matcher(grammar)]
    feed(ms[2], "a")
    out = np.full(5, 7.0, np.float32)
    xgr.BatchGrammarMatcher.batch_fill_temperature(ms, out)
    assert out.tolist() == [-1.0, np.float32(0.1), 0.5, 7.0, 7.0]
    out[:] = 7.0
    xgr.BatchGrammarMatcher.batch_fill_temperature(ms, out, [4, 0, 2])
    assert out.tolist() == [np.float32(0.1), 7.0, 0.5, 7.0, -1.0]
    strided = np.full(10, 9.0, np.float32)
    xgr.BatchGrammarMatcher.batch_fill_temperature(ms, strided[::2])
    assert strided.tolist()[:6] == [-1.0, 9.0, np.float32(0.1), 9.0, 0.5, 9.0]
    bad_calls = [(np.zeros(5, np.float64), None, "1D float32"), (np.zeros((5, 1), np.float32), None, "1D"),
                 (np.zeros(2, np.float32), None, "out of bounds"), (out, [0, 1], "indices size"),
                 (out, [0, 1, 5], "out of bounds"), (out, [0, 1, -1], "out of bounds")]
    for bad, indices, message in bad_calls:
        before = bad.copy()
        with pytest.raises(BitmaskError, match=message):
            xgr.BatchGrammarMatcher.batch_fill_temperature(ms, bad, indices)
        assert np.array_equal(bad, before)  # nothing written


def test_draft_tree_temperatures_are_the_path_matchers():
    grammar = 'root ::= t "b"?\nt[temperature=0.5] ::= "x"+'
    tokens = [0, VOCAB.index("x"), STOP, VOCAB.index("x"), VOCAB.index("x"), VOCAB.index("b"), VOCAB.index("q")]
    nxt, sib = [1, 2, 3, -1, 5, -1, -1], [-1, -1, 4, -1, -1, 6, -1]
    m = matcher(grammar, default_temperature=2.0)
    temps = np.full(len(tokens), 9.0, np.float32)
    bitmask = np.full((len(tokens), xgr.get_bitmask_shape(1, len(VOCAB))[1]), 5, np.int32)
    assert m.traverse_draft_tree(np.array(nxt), np.array(sib), np.array(tokens), bitmask, temperatures=temps)
    # node 2 is a stop token (terminated: zero row, no temperature, node 3 below it never visited),
    # node 6 ("q") is rejected
    assert temps.tolist() == [0.5, 0.5, -1.0, -1.0, 0.5, 2.0, -1.0]
    assert (bitmask[2] == 0).all() and (bitmask[3] == 5).all() and (bitmask[6] == 0).all()


# ---- against xgrammar 0.2.8 ---------------------------------------------------------------------

DIFFERENTIAL = [row[0] for row in CAPTURES] + [row[0] for row in TEMPERATURES] + [
    'root ::= "{" (p ("," p)*)? "}"\np[capture="pair"] ::= k ":" v\nk[capture="key"] ::= "\\"" [a-z]* "\\""\n'
    'v[capture="value"] ::= [0-9]+ | "true" | "false" | root',
    'root ::= "<call>" name "(" args ")"\nname[capture="tool", temperature=0.2] ::= [a-z_]+\n'
    'args[capture, temperature=1.25] ::= (arg ("," arg)*)?\narg ::= [a-z]+ "=" [0-9]+',
    'root ::= (k ":" v ";")*\nk[capture, temperature=0.2] ::= [a-z]+\n'
    'v[capture="value", temperature=1.3] ::= [0-9]+ | "true"',
    'root ::= "[" (v ("," v)*)? "]"\nv[capture] ::= [0-9]+ | root',
    'root ::= "q" a b\na[capture] ::= "x"?\nb[capture] ::= "y"?',
    'root ::= x{0,40}\nx[capture, temperature=0.5] ::= [a-z]+ ","',
    'root ::= "a" t | "a" u\nt[temperature=0.5] ::= w\nu[temperature=1.5] ::= w "x"\nw ::= [0-9]+ "."?',
    'root ::= "a" t "z"\nt[temperature=0.5, max_tokens=1] ::= [a-y]*',
]


def walk_ops(m, rng: random.Random, steps: int) -> list:
    """A random decoding script: tokens the mask allows, strings, rollbacks, and a stop token."""
    ops = []
    for _ in range(steps):
        if m.is_terminated():
            break
        allowed = np.flatnonzero(m.compute_bool_mask())
        if not len(allowed):
            break
        token = int(rng.choice(allowed.tolist()))
        kind = rng.random()
        if kind < 0.15 and m._history:
            ops.append(("rollback", 1))
            m.rollback(1)
        elif kind < 0.3 and token != STOP:
            ops.append(("string", VOCAB[token]))
            m.accept_string(VOCAB[token])
        else:
            ops.append(("token", token))
            m.accept_token(token)
    return ops


def replay(engine, compiled, ops: list, default) -> list:
    m = engine.GrammarMatcher(compiled, default_temperature=default)
    out = [(m.get_captures(), m.get_captures(deduplicate=False), m.temperature)]
    for kind, arg in ops:
        result = {"rollback": m.rollback, "string": m.accept_string, "token": m.accept_token}[kind](arg)
        out.append((result, m.get_captures(), m.get_captures(deduplicate=False), m.temperature))
    return out


def assert_replays_agree(grammar_in, seed: int) -> None:
    """A random decoding script (seeded) replays to the same captures and temperatures in both
    engines; `grammar_in(engine)` is what each engine's compiler takes."""
    xgrammar = pytest.importorskip("xgrammar")
    theirs = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo(VOCAB, stop_token_ids=[STOP]), cache_enabled=False)
    rng = random.Random(seed)
    default = rng.choice([None, 0.7])
    ours = COMPILER.compile_grammar(grammar_in(xgr))
    ops = walk_ops(xgr.GrammarMatcher(ours), rng, 24)
    assert replay(xgr, ours, ops, default) == \
        replay(xgrammar, theirs.compile_grammar(grammar_in(xgrammar)), ops, default)


@pytest.mark.xgrammar
@pytest.mark.parametrize("grammar", DIFFERENTIAL)
@pytest.mark.parametrize("seed", range(3))
def test_captures_and_temperatures_agree_with_xgrammar(grammar, seed):
    assert_replays_agree(lambda engine: grammar, seed)


# Lark temperature rules whose body is a subgrammar (%json, %lark): xgrammar takes them as rules
LARK_TEMPERATURES = [
    'start: "<" x ">"\nx[temperature=0.5]: %json {"type": "array", "items": {"type": "string"}}',
    'start: "<" x ">" x\nx[temperature=0.25]: %lark {\nstart: "a" y\ny[temperature=1.5]: "b"+\n}',
    'start: x " " x\nx[temperature=0.5]: (%json {"type": "boolean"})\n%ignore " "',
]


@pytest.mark.xgrammar
@pytest.mark.parametrize("grammar", LARK_TEMPERATURES)
@pytest.mark.parametrize("seed", range(3))
def test_subgrammar_temperatures_agree_with_xgrammar(grammar, seed):
    assert_replays_agree(lambda engine: engine.Grammar.from_lark(grammar), seed)


@pytest.mark.xgrammar
def test_batch_and_draft_tree_temperatures_agree_with_xgrammar():
    xgrammar = pytest.importorskip("xgrammar")
    torch = pytest.importorskip("torch")
    grammar = 'root ::= t "b"?\nt[temperature=0.5] ::= "x"+'
    theirs = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo(VOCAB, stop_token_ids=[STOP]), cache_enabled=False)
    tokens = [0, VOCAB.index("x"), STOP, VOCAB.index("x"), VOCAB.index("x"), VOCAB.index("b"), VOCAB.index("q")]
    tree = [torch.tensor(a) for a in ([1, 2, 3, -1, 5, -1, -1], [-1, -1, 4, -1, -1, 6, -1], tokens)]
    for flag in (False, True):
        got = []
        for engine, compiled in ((xgr, COMPILER.compile_grammar(grammar)), (xgrammar, theirs.compile_grammar(grammar))):
            m = engine.GrammarMatcher(compiled, default_temperature=2.0, terminate_without_stop_token=flag)
            temps = torch.full((len(tokens),), 9.0)
            m.traverse_draft_tree(*tree, torch.zeros((len(tokens), 4), dtype=torch.int32), temperatures=temps)
            batch = torch.full((3,), 9.0)
            engine.BatchGrammarMatcher.batch_fill_temperature([m, m], batch, [2, 0])
            got.append((temps.tolist(), batch.tolist()))
        assert got[0] == got[1]


@pytest.mark.xgrammar
def test_deliberate_differences_from_xgrammar():
    """specs/03-earley.md, "Captures": (1) xgrammar repeats a raw event once per internal parse
    state that completes the same occurrence at the same byte, xg2ref reports it once; (2)
    xgrammar 0.2.8 records nothing for a captured rule whose body is a plain string repeated
    directly as `r{m,n}`, xg2ref records every occurrence."""
    xgrammar = pytest.importorskip("xgrammar")
    theirs = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo(VOCAB, stop_token_ids=[STOP]), cache_enabled=False)
    for grammar, text, ours_raw, xgrammars_raw in [
        ('root ::= a\na[capture] ::= "x" | "x"', "x", [("a", b"x")], [("a", b"x")] * 2),
        ('root ::= r{2}\nr[capture] ::= "c"', "cc", [("r", b"c")] * 2, []),
    ]:
        ours, other = matcher(grammar), xgrammar.GrammarMatcher(theirs.compile_grammar(grammar))
        assert ours.accept_string(text) and other.accept_string(text)
        assert ours.get_captures(deduplicate=False) == ours_raw
        assert other.get_captures(deduplicate=False) == xgrammars_raw


# ---- stop/suffix markers (xg2ref/rule_options.py "Markers") ------------------------------------

# (Lark source, accepted text, get_captures() as xgrammar 0.2.8 gives it)
MARKER_CASES = [
    ('start[capture="outer"]: r "z"\nr[capture="inner", suffix="!"]: /[a-z]*/', "xy!z",
     [("inner", b"xy"), ("outer", b"xy!z")]),
    ('start[capture="outer"]: r "z"\nr[capture="inner", stop="!"]: /[a-z]*/', "xy!z",
     [("inner", b"xy"), ("outer", b"xyz")]),
    ('start[capture="outer"]: r "z"\nr[capture="inner", suffix=/!!+/, stop_capture="marker"]: /[a-z]*/', "xy!!z",
     [("marker", b"!!"), ("inner", b"xy"), ("outer", b"xy!!z")]),
    ('start[capture="outer"]: r "z"\nr[capture="inner", stop=/!!+/, stop_capture="marker"]: /[a-z]*/', "xy!!z",
     [("marker", b"!!"), ("inner", b"xy"), ("outer", b"xyz")]),
    # the split leaves the body its required "b" (not the marker's whole "ba")
    ('start[capture="outer"]: r "Z"\nr[capture="inner", stop=/b?a/, stop_capture="marker"]: "b"', "baZ",
     [("marker", b"a"), ("inner", b"b"), ("outer", b"bZ")]),
    ('start[capture="outer"]: r "z"\nr[capture="inner", stop="💥"]: /[a-z]*/', "xy💥z",
     [("inner", b"xy"), ("outer", b"xyz")]),
    # a stop marker belongs to the captures above its own occurrence only
    ('start: a | c\na[capture="a"]: b "q"\nb[stop="!"]: "x"\nc[capture="c"]: "x!"', "x!", [("c", b"x!")]),
    # every marker inside an enclosing capture is hidden; a stop rule needs no capture of its own
    ('start[capture="outer"]: r r "z"\nr[stop="!"]: /[a-z]*/', "a!b!z", [("outer", b"abz")]),
    # any-text bodies (TagDispatch) end at the marker, or without it
    ('start[capture="outer"]: r "z"\nr[capture="inner", suffix=">"]: TEXT\nTEXT: /(\\n|.)*/', "ab>z",
     [("inner", b"ab"), ("outer", b"ab>z")]),
    ('start[capture="outer"]: r "z"\nr[capture="inner", stop=">", stop_capture="m"]: TEXT\nTEXT: /(\\n|.)*/', "ab>z",
     [("m", b">"), ("inner", b"ab"), ("outer", b"abz")]),
    # the stop/suffix head of a dispatching start: its trigger is the marker
    ('start[capture="outer"]: tool* tail\ntail: TEXT\nhead[stop="<t>", stop_capture="marker"]: TEXT\n'
     'tool: head "x"\nTEXT: /(\\n|.)*/', "a<t>xb<t>xc",
     [("marker", b"<t>"), ("marker", b"<t>"), ("outer", b"axbxc")]),
    ('start[capture="outer"]: tool* tail\ntail: TEXT\nhead[suffix="<t>", stop_capture="marker"]: TEXT\n'
     'tool: head "x"\nTEXT: /(\\n|.)*/', "a<t>xb<t>xc",
     [("marker", b"<t>"), ("marker", b"<t>"), ("outer", b"a<t>xb<t>xc")]),
    # text that ends without its marker hides nothing
    ('start[capture="outer"]: r\nr[capture="inner", stop=">", stop_capture="m"]: TEXT\nTEXT: /(\\n|.)*/', "abc",
     [("inner", b"abc"), ("outer", b"abc")]),
]


def _marker_captures(module, grammar, text: str) -> list:
    compiled = module.GrammarCompiler(module.TokenizerInfo([]), cache_enabled=False).compile_grammar(grammar)
    matcher = module.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_string(text)
    return matcher.get_captures()


@pytest.mark.parametrize("source, text, expected", MARKER_CASES, ids=[str(k) for k in range(len(MARKER_CASES))])
def test_markers_split_label_and_hide_captured_spans(source, text, expected):
    grammar = xgr.Grammar.from_lark(source)
    assert _marker_captures(xgr, grammar, text) == expected
    # the printed grammar (xgrammar's option names, ids for the helper rules) reads back the same
    assert _marker_captures(xgr, xgr.Grammar.from_ebnf(str(grammar)), text) == expected


@pytest.mark.xgrammar
@pytest.mark.parametrize("source, text, expected", MARKER_CASES, ids=[str(k) for k in range(len(MARKER_CASES))])
def test_marker_captures_are_xgrammars_and_its_printed_form_reads_the_same(source, text, expected):
    xg = pytest.importorskip("xgrammar")
    theirs = xg.Grammar.from_lark(source)
    assert _marker_captures(xg, theirs, text) == expected
    assert _marker_captures(xgr, xgr.Grammar.from_ebnf(str(theirs)), text) == expected


def test_marker_captures_follow_rollback_and_fork():
    source = 'start[capture="outer"]: r r "z"\nr[capture="inner", stop="!", stop_capture="m"]: /[a-z]*/'
    vocab = ["a", "!", "b", "z"]
    info = xgr.TokenizerInfo(vocab)
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(xgr.Grammar.from_lark(source)),
                                 terminate_without_stop_token=True)
    for t in (0, 1, 2):
        assert matcher.accept_token(t)
    fork = matcher.fork()
    assert matcher.accept_token(1) and matcher.accept_token(3)
    assert matcher.get_captures() == [("m", b"!"), ("inner", b"a"), ("m", b"!"), ("inner", b"b"), ("outer", b"abz")]
    matcher.rollback(2)
    assert matcher.get_captures() == [("m", b"!"), ("inner", b"a")]
    assert fork.accept_token(0) and fork.accept_token(1) and fork.accept_token(3)
    assert fork.get_captures() == [("m", b"!"), ("inner", b"a"), ("m", b"!"), ("inner", b"ba"), ("outer", b"abaz")]


def test_printed_marker_options_are_checked():
    for text, words in [
        ('root ::= r\nr[capture_hidden_stop_bytes=1, capture_hidden_suffix_bytes=1] ::= "a!"', "not both"),
        ('root ::= r\nr[capture_hidden_stop_bytes=1, capture_hidden_body_rule_id=0] ::= "a!"', "go together"),
        ('root ::= r\nr[stop_capture="m"] ::= "a!"', "need capture_hidden"),
        ('root ::= r\nr[capture_hidden_stop_bytes=1, capture_hidden_body_rule_id=0, capture_hidden_marker_rule_id=7]'
         ' ::= "a!"', "the grammar has 2 rules"),
    ]:
        with pytest.raises(xgr.EBNFError, match=words):
            xgr.Grammar.from_ebnf(text)


MARKER_BODIES = ['/[a-z]*/', '/[ab]+/', '"x"', 'TEXT']
MARKERS = ['"!"', '"!!"', '/!!+/', '/b?a/', 'END']
MARKER_SHAPES = ['r "z"', 'r r "z"', 'r+ "z"', 'r ("," r)* "z"']
MARKER_VOCAB = list("abxyz!?,") + ["a!", "!!", "b!", "!z", "ab"]


@st.composite
def marker_grammars(draw):
    """A Lark grammar with one stop/suffix rule (captured or not, with stop_capture or not) under
    a captured start, and a sentence of it (a walk of the oracle's sampler)."""
    body, marker = draw(st.sampled_from(MARKER_BODIES)), draw(st.sampled_from(MARKERS))
    attrs = [f'{draw(st.sampled_from(["stop", "suffix"]))}={marker}']
    if draw(st.booleans()):
        attrs.insert(0, 'capture="inner"')
    if draw(st.booleans()):
        attrs.append('stop_capture="m"')
    source = (f'start[capture="outer"]: {draw(st.sampled_from(MARKER_SHAPES))}\nr[{", ".join(attrs)}]: {body}\n'
              'TEXT: /[a-z!?,]*/\nEND: "!" | "?!"\n')
    sentence = sentences(xgr.Grammar.from_lark(source).ir, random.Random(draw(st.integers(0, 2**16))))
    return source, sentence


@pytest.mark.xgrammar
@SETTINGS
@given(marker_grammars(), st.integers(0, 2**16))
def test_marker_captures_equal_xgrammars_along_token_walks_with_rollbacks(case, seed):
    """Hypothesis-generated Lark grammars with markers: after every token of a sentence, and
    after rolling back, xg2ref's captures (from the Lark source, and from xgrammar's printed
    form) are xgrammar's."""
    xg = pytest.importorskip("xgrammar")
    source, sentence = case
    if sentence is None:
        return
    ids = greedy_ids(sentence)
    if ids is None:
        return
    theirs = xg.GrammarMatcher(xg.GrammarCompiler(xg.TokenizerInfo(MARKER_VOCAB), cache_enabled=False)
                               .compile_grammar(xg.Grammar.from_lark(source)), terminate_without_stop_token=True)
    info = xgr.TokenizerInfo(MARKER_VOCAB)
    ours = [xgr.GrammarMatcher(xgr.GrammarCompiler(info).compile_grammar(g), terminate_without_stop_token=True)
            for g in (xgr.Grammar.from_lark(source), xgr.Grammar.from_ebnf(str(xg.Grammar.from_lark(source))))]
    rng = random.Random(seed)
    for t in ids:  # (the sampler does not know committed-shortest matching: a walk may end early)
        taken = theirs.accept_token(t)
        assert all(m.accept_token(t) == taken for m in ours), (source, sentence)
        if not taken:
            break
        want = theirs.get_captures()
        assert all(m.get_captures() == want for m in ours), (source, sentence)
        if rng.random() < 0.3:
            for m in [theirs] + ours:
                m.rollback(1)
            want = theirs.get_captures()
            assert all(m.get_captures() == want for m in ours), (source, sentence, "after a rollback")
            assert theirs.accept_token(t) and all(m.accept_token(t) for m in ours)


def greedy_ids(data: bytes):
    """`data` as MARKER_VOCAB ids, longest match first (None: not spellable)."""
    out, i = [], 0
    while i < len(data):
        best = max((k for k, tok in enumerate(MARKER_VOCAB) if data.startswith(tok.encode(), i)),
                   key=lambda k: len(MARKER_VOCAB[k]), default=None)
        if best is None:
            return None
        out.append(best)
        i += len(MARKER_VOCAB[best])
    return out


def test_markers_survive_serialization():
    source = 'start[capture="outer"]: r "z"\nr[capture="inner", stop=/!!+/, stop_capture="m"]: /[a-z]*/'
    info = xgr.TokenizerInfo(list("abxyz!"))
    grammar = xgr.Grammar.from_lark(source)
    compiled = xgr.GrammarCompiler(info).compile_grammar(grammar)
    for again in (xgr.CompiledGrammar.deserialize_json(compiled.serialize_json(), info),
                  xgr.GrammarCompiler(info).compile_grammar(xgr.Grammar.deserialize_json(grammar.serialize_json()))):
        m = xgr.GrammarMatcher(again, terminate_without_stop_token=True)
        assert m.accept_string("xy!!z")
        assert m.get_captures() == [("m", b"!!"), ("inner", b"xy"), ("outer", b"xyz")]
