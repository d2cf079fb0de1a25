"""The EBNF printer and `Grammar`: printing is exact (table), and print then parse gives back
the same IR, for every bundled grammar and for random IR drawn by `grammar_irs()` below.

`grammar_irs()` draws IR in the shape the parser produces: Sequence and Choice with two or
more children, nested freely (the parser keeps a parenthesized group as its own node, so
`Sequence(a, Sequence(b, c))` is a shape it gives back), Repeat over anything, literals and
classes over all of Unicode (surrogates and astral codepoints included), lookaheads that
are neither a Choice nor the empty string, any root name.
"""

import glob

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xg2ref.frontends.ebnf.parser import RESERVED_WORDS, parse_ebnf
from xg2ref.grammar.intrinsic import REGISTRY as INTRINSICS
from xg2ref.grammar.grammar import Grammar
from xg2ref.grammar.ir import (EPSILON, ByteString, CharClass, Choice, GrammarIR, MAX_CODEPOINT, Repeat, Rule, RuleRef,
                               Sequence)
from xg2ref.grammar.printer import ALTERNATIVE, print_expr, print_grammar

DATA = "/work/shared/data/grammars"
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def B(text: str) -> ByteString:
    return ByteString(text.encode())


a, b, c, x = B("a"), B("b"), B("c"), RuleRef("x")

PRINTED = [
    (Sequence((a, b, x)), '"a" "b" x'),
    (Choice((a, Sequence((b, c)))), '"a" | "b" "c"'),
    (Sequence((a, Sequence((b, c)))), '"a" ("b" "c")'),
    (Choice((a, Choice((b, c)))), '"a" | ("b" | "c")'),
    (Sequence((Choice((a, b)), c)), '("a" | "b") "c"'),
    (Repeat(Sequence((a, b)), 0, None), '("a" "b")*'),
    (Repeat(Choice((a, b)), 1, None), '("a" | "b")+'),
    (Repeat(Repeat(a, 1, None), 0, 1), '("a"+)?'),
    (Repeat(a, 0, 1), '"a"?'),
    (Repeat(x, 2, 2), "x{2}"),
    (Repeat(x, 0, 0), "x{0}"),
    (Repeat(x, 1, 1), "x{1}"),
    (Repeat(x, 2, None), "x{2,}"),
    (Repeat(x, 2, 5), "x{2,5}"),
    (EPSILON, '""'),
    (ByteString(b'"\\\n\r\t\x00\x7f\x1b'), '"\\"\\\\\\n\\r\\t\\u0000\\u007f\\u001b"'),
    (B("é中😀 #"), '"é中😀 #"'),
    (ByteString(b"\xed\xa0\x80"), '"\\ud800"'),
    (B("\u00a0\u2028\u0300\U000e0001"), '"\\u00a0\\u2028\\u0300\\U000e0001"'),
    (B("\x01a"), '"\\u0001a"'),
    (CharClass(((ord("a"), ord("z")), (ord("_"), ord("_")))), "[a-z_]"),
    (CharClass(((93, 93), (92, 92), (94, 94), (45, 45), (91, 91), (34, 34))), '[\\]\\\\\\^\\-["]'),
    (CharClass(((45, 97),)), "[\\--a]"),
    (CharClass((), negated=True), "[^]"),
    (CharClass(()), "[]"),
    (CharClass(((0, 31), (10, 10)), negated=True), "[^\\u0000-\\u001f\\n]"),
    (CharClass(((0x4E00, 0x9FFF), (0x10FFFF, 0x10FFFF))), "[一-鿿\\U0010ffff]"),
    (Sequence(()), '""'),
    (Choice((a,)), '"a"'),
    (Choice(()), "[]"),
    (Repeat(Sequence((Repeat(a, 0, None),)), 1, None), '("a"*)+'),
]


@pytest.mark.parametrize("expr, want", PRINTED, ids=[w for _, w in PRINTED])
def test_print_expr(expr, want):
    assert print_expr(expr) == want


def test_print_grammar_layout():
    ir = GrammarIR((Rule("root", Choice((a, x)), Sequence((b, Repeat(c, 0, None)))),
                    Rule("x", Sequence((a, b)), Choice((a, b))), Rule("y", a, EPSILON)))
    assert print_grammar(ir) == ('root ::= ("a" | x) (= "b" "c"*)\nx ::= "a" "b" (= ("a" | "b"))\n'
                                 'y ::= "a" (= "")\n')
    assert print_expr(Choice((a, b)), ALTERNATIVE) == '("a" | "b")'


def test_non_utf8_byte_string_cannot_print():
    with pytest.raises(ValueError, match="only writes UTF-8"):
        print_expr(ByteString(b"a\xff"))


def test_deep_tree_prints_without_recursion():
    expr = a
    for _ in range(5000):
        expr = Repeat(Sequence((b, expr)), 0, 1)
    text = print_expr(expr)
    assert text.startswith('("b" ("b" ') and text.endswith(")?" * 5000)


BUNDLED = sorted(glob.glob(f"{DATA}/llama_cpp/*.gbnf")) + [f"{DATA}/xgrammar/json_builtin.ebnf"]


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.rsplit("/", 1)[-1])
def test_bundled_grammars_round_trip(path):
    text = open(path, encoding="utf-8").read().replace("ws ::= |", 'ws ::= "" |')
    ir = parse_ebnf(text)
    printed = print_grammar(ir)
    assert parse_ebnf(printed) == ir
    assert print_grammar(parse_ebnf(printed)) == printed


def test_builtin_json_grammar_round_trips():
    grammar = Grammar.builtin_json_grammar()
    assert Grammar.from_ebnf(str(grammar)) == grammar


# ---------------------------------------------------------------------------------------------
# Random IR in the parser's shape.

names = st.from_regex(r"[A-Za-z_.\-][A-Za-z0-9_.\-]{0,5}", fullmatch=True).filter(
    lambda n: n not in INTRINSICS and n not in RESERVED_WORDS)
codepoints = st.one_of(st.integers(0x20, 0x7E), st.sampled_from([ord(ch) for ch in '"\\]^-[ \n\r\t']),
                       st.integers(0, 0x7F), st.integers(0x80, 0xFFFF), st.integers(0x10000, MAX_CODEPOINT))
byte_strings = st.lists(codepoints, max_size=4).map(lambda cps: ByteString(
    "".join(map(chr, cps)).encode("utf-8", "surrogatepass")))
char_classes = st.builds(
    CharClass,
    st.lists(st.tuples(codepoints, codepoints).map(sorted).map(tuple), max_size=3).map(tuple),
    st.booleans())
bounds = st.one_of(st.sampled_from([(0, None), (1, None), (0, 1), (0, 0), (1, 1), (3, None)]),
                   st.tuples(st.integers(0, 10), st.integers(0, 10)).map(sorted).map(tuple))


def expressions(rule_names):
    leaves = st.one_of(byte_strings, char_classes, st.sampled_from(rule_names).map(RuleRef))

    def extend(children):
        several = st.lists(children, min_size=2, max_size=4).map(tuple)
        return st.one_of(several.map(Sequence), several.map(Choice),
                         st.builds(lambda body, lo_hi: Repeat(body, *lo_hi), children, bounds))

    return st.recursive(leaves, extend, max_leaves=10)


@st.composite
def grammar_irs(draw):
    rule_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    exprs = expressions(rule_names)
    lookaheads = exprs.filter(lambda e: not isinstance(e, Choice) and e != EPSILON)
    rules = tuple(Rule(name, draw(exprs), draw(st.none() | lookaheads)) for name in rule_names)
    return GrammarIR(rules, draw(st.sampled_from(rule_names)))


@SETTINGS
@given(grammar_irs())
def test_print_parse_round_trip(ir):
    printed = print_grammar(ir)
    assert parse_ebnf(printed, root_rule_name=ir.root) == ir, printed


@settings(SETTINGS, max_examples=100)
@given(grammar_irs())
def test_grammar_equality_and_hash_follow_the_ir(ir):
    grammar = Grammar.from_ir(ir)
    again = Grammar.from_ebnf(str(grammar), root_rule_name=ir.root)
    assert again == grammar and hash(again) == hash(grammar)
    assert (Grammar.from_ir(GrammarIR(ir.rules[::-1], ir.root)) == grammar) == (len(ir.rules) == 1)


@pytest.fixture(scope="module")
def xgr():
    return pytest.importorskip("xgrammar")


@pytest.mark.xgrammar
@settings(SETTINGS, max_examples=100)
@given(grammar_irs())
def test_xgrammar_accepts_printed_grammars(xgr, ir):
    xgr.Grammar.from_ebnf(print_grammar(ir), root_rule_name=ir.root)


def test_grammar_api():
    grammar = Grammar.from_ebnf('main ::= "a" | [b-c]+ x\nx ::= "x"', root_rule_name="main")
    assert grammar.root_rule_name == "main"
    assert str(grammar) == 'main ::= "a" | [b-c]+ x\nx ::= "x"\n'
    assert repr(grammar) == "Grammar(2 rules, root='main')"
    assert grammar == Grammar.from_ir(grammar.ir)
    assert grammar != Grammar.from_ebnf('main ::= "a"', root_rule_name="main")
    assert grammar != Grammar(GrammarIR(grammar.ir.rules, "x"))
    assert len({grammar, Grammar.from_ir(grammar.ir)}) == 1
    with pytest.raises(TypeError):
        Grammar("root ::= 'a'")
