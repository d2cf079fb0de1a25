"""The EBNF front end (XGrammar-2 §2.1): every construct of xgrammar's dialect, sections 1-4,
parses to the expected IR; every malformed text raises EBNFError (or GrammarLimitError) with
the expected message, line and column; and, when xgrammar 0.2.8 is installed, both engines
accept and reject the same texts.
"""

import glob
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xg2ref.exceptions import EBNFError, GrammarLimitError
from xg2ref.frontends.ebnf.parser import MAX_INTEGER, MAX_NESTING, parse_ebnf
from xg2ref.grammar.grammar import Grammar, ir_signature
from xg2ref.grammar.ir import EPSILON, ByteString, CharClass, Choice, GrammarIR, Repeat, Rule, RuleRef, Sequence, walk
from xg2ref.grammar.passes import normalize
from xg2ref.grammar.printer import print_grammar

DATA = "/work/shared/data/grammars"
LLAMA_GRAMMARS = sorted(glob.glob(f"{DATA}/llama_cpp/*.gbnf"))
# llama.cpp writes an empty alternative as `ws ::= | " "`, which xgrammar 0.2.8 rejects.
GBNF_EMPTY_ALTERNATIVE = {"json.gbnf": (25, 8), "json_arr.gbnf": (34, 8)}


def B(text: str) -> ByteString:
    return ByteString(text.encode())


def C(*ranges, negated=False) -> CharClass:
    return CharClass(tuple((ord(lo), ord(hi)) if isinstance(lo, str) else (lo, hi) for lo, hi in ranges), negated)


def S(*items):
    return Sequence(items)


def A(*alternatives):
    return Choice(alternatives)


a, b, c = B("a"), B("b"), B("c")

# (root rule body text, expected IR of the body); rules x and y are defined alongside.
GOOD_BODIES = [
    ('"abc"', B("abc")),
    ('""', EPSILON),
    ("( )", EPSILON),
    ("()", EPSILON),
    ('"a" "b"', S(a, b)),
    ('"a"\t"b"\n  "c"', S(a, b, c)),
    ('"a" | "b" | ""', A(a, b, EPSILON)),
    ('"a"\n | "b"', A(a, b)),
    ('"a" ("b" "c")', S(a, S(b, c))),
    ('("a" "b") "c"', S(S(a, b), c)),
    ('"a" | ("b" | "c")', A(a, A(b, c))),
    ('"a" "b" | "c" x', A(S(a, b), S(c, RuleRef("x")))),
    ('((("a")))', a),
    ('("a" | "b")', A(a, b)),
    ('("a" | "b") "c"', S(A(a, b), c)),
    ('"a"*', Repeat(a, 0, None)),
    ('"a"+', Repeat(a, 1, None)),
    ('"a"?', Repeat(a, 0, 1)),
    ('"a"{3}', Repeat(a, 3, 3)),
    ('"a"{0}', Repeat(a, 0, 0)),
    ('"a"{2,}', Repeat(a, 2, None)),
    ('"a"{2,5}', Repeat(a, 2, 5)),
    ('"a"{ 2 , 5 }', Repeat(a, 2, 5)),
    ('"a"{2,-1}', Repeat(a, 2, None)),
    ('"a"{2, -1 }', Repeat(a, 2, None)),
    ('"a"{002}', Repeat(a, 2, 2)),
    ('"a" {2}', Repeat(a, 2, 2)),
    ('"a"\n*', Repeat(a, 0, None)),
    ('"a"{1000000000000000}', Repeat(a, MAX_INTEGER, MAX_INTEGER)),
    ('("a"+)+', Repeat(Repeat(a, 1, None), 1, None)),
    ('("a" "b")*', Repeat(S(a, b), 0, None)),
    ('("a" | "b"){1,2} x?', S(Repeat(A(a, b), 1, 2), Repeat(RuleRef("x"), 0, 1))),
    ('[a-z]*', Repeat(C(("a", "z")), 0, None)),
    ('"\\\'\\"\\?\\\\\\/\\a\\b\\f\\n\\r\\t\\v\\0\\e"', ByteString(b"'\"?\\/\a\b\f\n\r\t\v\x00\x1b")),
    ('"\\x41\\x1F600\\x0000041\\x7"', ByteString("A\U0001F600A\x07".encode())),
    ('"\\u00e9\\U0001F600"', ByteString("é\U0001F600".encode())),
    ('"\\xff"', ByteString(b"\xc3\xbf")),
    ('"\\ud800"', ByteString(b"\xed\xa0\x80")),
    ('"\\U0010FFFF"', ByteString(b"\xf4\x8f\xbf\xbf")),
    ('"中文 😀"', B("中文 😀")),
    ('"\t#not a comment"', B("\t#not a comment")),
    ("[a-z]", C(("a", "z"))),
    ("[^a-z]", C(("a", "z"), negated=True)),
    ("[^]", CharClass((), True)),
    ("[]", CharClass(())),
    ("[a-]", C(("a", "a"), ("-", "-"))),
    ("[-a]", C(("-", "-"), ("a", "a"))),
    ("[\\-a]", C(("-", "-"), ("a", "a"))),
    ("[--a]", C(("-", "a"))),
    ("[\\--\\-]", C(("-", "-"))),
    ("[a-a]", C(("a", "a"))),
    ("[^^]", C(("^", "^"), negated=True)),
    ("[[]", C(("[", "["))),
    ("[a-zA-Z_]", C(("a", "z"), ("A", "Z"), ("_", "_"))),
    ("[!--]", C(("!", "-"))),
    ('[\\^\\$\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\/\\-\\\\]', C(*[(ch, ch) for ch in "^$.*+?()[]{}|/-\\"])),
    ('[\\n\\t\\x00-\\x1f"]', C(("\n", "\n"), ("\t", "\t"), (0, 0x1F), ('"', '"'))),
    ("[\\b]", C(("\b", "\b"))),
    ("[ぁ-ゟ]", C(("ぁ", "ゟ"))),
    ("[\\u4e00-\\u9fff\\U0001F600]", C((0x4E00, 0x9FFF), (0x1F600, 0x1F600))),
    ("x y", S(RuleRef("x"), RuleRef("y"))),
    ("root x | y", A(S(RuleRef("root"), RuleRef("x")), RuleRef("y"))),
    ('"a" # a comment "b"\n "c"', S(a, c)),
]


@pytest.mark.parametrize("body, want", GOOD_BODIES, ids=[t for t, _ in GOOD_BODIES])
def test_element_parses_to_ir(body, want):
    have = parse_ebnf(f'root ::= {body}\nx ::= "x"\ny ::= "y"').rule("root")
    assert have == Rule("root", want)


# (grammar text, root rule name, the whole expected GrammarIR)
GOOD_GRAMMARS = [
    ('root ::= "a"', "root", GrammarIR((Rule("root", a),))),
    (' root ::= "a"\n\n# trailing comment', "root", GrammarIR((Rule("root", a),))),
    ('# header\nroot ::= b # ref\nb ::= "b"', "root", GrammarIR((Rule("root", RuleRef("b")), Rule("b", b)))),
    ('root ::= "a"\nb\n::= "b"', "root", GrammarIR((Rule("root", a), Rule("b", b)))),
    ('root ::= "a"\nb # comment ::= x\n::= "b"', "root", GrammarIR((Rule("root", a), Rule("b", b)))),
    ('root ::= "a"\r\nb ::= "b"\r\n', "root", GrammarIR((Rule("root", a), Rule("b", b)))),
    ('root ::= "a"\rb ::= "b"', "root", GrammarIR((Rule("root", a), Rule("b", b)))),
    ('root ::= root "a" | "b"', "root", GrammarIR((Rule("root", A(S(RuleRef("root"), a), b)),))),
    ('main ::= "a"', "main", GrammarIR((Rule("main", a),), "main")),
    ('a.b-c_d ::= -\n- ::= "a"', "a.b-c_d", GrammarIR((Rule("a.b-c_d", RuleRef("-")), Rule("-", a)), "a.b-c_d")),
    ('root ::= truex\ntruex ::= "a"', "root", GrammarIR((Rule("root", RuleRef("truex")), Rule("truex", a)))),
    ('TagDispatch ::= "a"\nroot ::= "b"', "root", GrammarIR((Rule("TagDispatch", a), Rule("root", b)))),
    ('root ::= x\nx ::= "a" (= "b")', "root", GrammarIR((Rule("root", RuleRef("x")), Rule("x", a, b)))),
    ('root ::= x\nx ::= "a" (="b" "c")', "root", GrammarIR((Rule("root", RuleRef("x")), Rule("x", a, S(b, c))))),
    ('root ::= x\nx ::= "a"\n  (= ("b" "c"))', "root", GrammarIR((Rule("root", RuleRef("x")), Rule("x", a, S(b, c))))),
    ('root ::= "a" | "b" (= "c"*)', "root", GrammarIR((Rule("root", A(a, b), Repeat(c, 0, None)),))),
    ('root ::= "a" (= ("b" | "c") x)\nx ::= "x"', "root",
     GrammarIR((Rule("root", a, S(A(b, c), RuleRef("x"))), Rule("x", B("x"))))),
    ('root ::= "a" (= "" "")', "root", GrammarIR((Rule("root", a, S(EPSILON, EPSILON)),))),
    ('root ::= "a" (= x)\nx ::= "b"', "root", GrammarIR((Rule("root", a, RuleRef("x")), Rule("x", b)))),
]


@pytest.mark.parametrize("text, root, want", GOOD_GRAMMARS, ids=[t for t, _, _ in GOOD_GRAMMARS])
def test_grammar_parses_to_ir(text, root, want):
    assert parse_ebnf(text, root_rule_name=root) == want


DEEP = "root ::= " + "(" * 5000 + '"a"' + ")" * 5000
# (text, message fragment, line, column); every one is an EBNFError.
BAD = [
    ('root ::= "\\q"', "Invalid escape sequence \\q", 1, 11),
    ('root ::= "\\u12"', "Invalid escape sequence \\u", 1, 11),
    ('root ::= "ab\\U0001F60"', "\\U needs 8 hex digits", 1, 13),
    ('root ::= "\\x"', "\\x needs hex digits", 1, 11),
    ('root ::= "\\xZZ"', "Invalid escape sequence \\x", 1, 11),
    ('root ::= "\\d"', "Invalid escape sequence \\d", 1, 11),
    ('root ::= "\\^"', "Invalid escape sequence \\^", 1, 11),
    ('root ::= "\\é"', "Invalid escape sequence \\é", 1, 11),
    ('root ::= "a" "\\\n"', "Invalid escape sequence \\<end of line>", 1, 15),
    ("root ::= 'a'", "string literals use double quotes", 1, 10),
    ('root ::= "a\n"', 'Expect " in string literal', 1, 12),
    ('root ::= "abc', 'Expect " in string literal', 1, 14),
    ('root ::= "a" "', 'Expect " in string literal', 1, 15),
    ("root ::= [a\n]", "Character class should not contain newline", 1, 12),
    ("root ::= [", "Unterminated character class", 1, 11),
    ("root ::= [abc", "Unterminated character class", 1, 14),
    ("root ::= [\\d]", "Character class escape is not supported yet in EBNF", 1, 11),
    ("root ::= [a-\\w]", "Character class escape is not supported yet in EBNF", 1, 13),
    ("root ::= [\\B]", "Invalid escape sequence \\B", 1, 11),
    ("root ::= [z-a]", "lower bound is larger than upper bound", 1, 11),
    ("root ::= [a--]", "lower bound is larger than upper bound", 1, 11),
    ('root ::= "a"{3,2}', "Lower bound is larger than upper bound: 3 > 2", 1, 16),
    ('root ::= "a"{,3}', "Expect integer, but got ','", 1, 14),
    ('root ::= "a"{}', "Expect integer, but got '}'", 1, 14),
    ('root ::= "a"{2', "Expect ',' or '}', but got end of input", 1, 15),
    ('root ::= "a"{2,3,4}', "Expect '}', but got ','", 1, 17),
    ('root ::= "a"{-1}', "Expect integer", 1, 14),
    ('root ::= "a"{2,-2}', "Expect integer", 1, 16),
    ('root ::= "a"++', "only one quantifier per element", 1, 14),
    ('root ::= "a"?*', "only one quantifier per element", 1, 14),
    ('root ::= ("a"){2}{3}', "only one quantifier per element", 1, 18),
    ('root ::= *"a"', "a quantifier must follow an element", 1, 10),
    ('root ::= "a" |', "Expect element, but got end of input", 1, 15),
    ('root ::= | "a"', "Expect element, but got '|'", 1, 10),
    ('root ::= ("a" | )', "Expect element, but got ')'", 1, 17),
    ("root ::=", "Expect element, but got end of input", 1, 9),
    ('root ::=\nb ::= "b"', "Expect element, but got the definition of rule b", 2, 1),
    ('root ::= "a" 5', "but got integer 5", 1, 14),
    ('root ::= ( "a"', "Expect ')', but got end of input", 1, 15),
    ('root ::= "a" )', "no group is open", 1, 14),
    ('root ::= "a" (= "b" | "c")', "Choices in lookahead assertion are not supported yet", 1, 14),
    ('root ::= "a" (= ("b" | ""))', "Choices in lookahead assertion are not supported yet", 1, 14),
    ('root ::= "a" (= "")', "Empty string should not be in lookahead assertion", 1, 14),
    ('root ::= "a" (= ())', "Empty string should not be in lookahead assertion", 1, 14),
    ('root ::= "a" (= )', "Expect element, but got ')'", 1, 17),
    ('root ::= "a" (= "b"', "Expect ')', but got end of input", 1, 20),
    ('root ::= "a" (= "b") "c"', "a lookahead assertion (= ...) must end its rule", 1, 22),
    ('root ::= "a" (= "b") (= "c")', "must end its rule", 1, 22),
    ('root ::= ("a" (= "b"))', "but got '(='", 1, 15),
    ('root ::= "a" ( = "b")', "Unexpected character: '='", 1, 16),
    ("root ::= x", 'Rule "x" is not defined', 1, 10),
    ('root ::= "a" (= x)', 'Rule "x" is not defined', 1, 17),
    ('root ::= "a"\nroot ::= "b"', 'Rule "root" is defined multiple times', 2, 1),
    ('a ::= "a"', 'The root rule with name "root" is not found', 1, 1),
    ("", 'The root rule with name "root" is not found', 1, 1),
    ("# only a comment\n", 'The root rule with name "root" is not found', 1, 1),
    ('root ::= "a" b ::= "c"\nb ::= "b"', 'The rule name "b" should be at the beginning of the line', 1, 14),
    ('root ::= ("a" b ::= "c")', "should be at the beginning of the line", 1, 15),
    ('root ::= "a"\n"b" ::= "c"', "'::=' must follow a rule name", 2, 5),
    ('::= "a"', "'::=' must follow a rule name", 1, 1),
    ('root ::= "a" ::= "b"', "'::=' must follow a rule name", 1, 14),
    ('root = "a"', "but got identifier root", 1, 1),
    ('root ::= "a" :', "Unexpected character: ':' (the rule operator is '::=')", 1, 14),
    ('root ::= "a" ;', "Unexpected character: ';'", 1, 14),
    ('root ::= true\ntrue ::= "a"', "true is a reserved word", 1, 10),
    ('false ::= "a"\nroot ::= "b"', "false is a reserved word", 1, 1),
    ("root ::= TagDispatch", "TagDispatch is an intrinsic: call it as TagDispatch(...)", 1, 10),
    ('root ::= "a"\n  Regex', "Regex is an intrinsic: call it as Regex(...)", 2, 3),
    ('root ::= Regex("a" "b")', "Expect ')' or ','", 1, 20),
    ('root ::= Regex("a", flags="q")', "regular-expression flag 'q' is not supported", 1, 16),
    ('root ::= Regex("a", foo=1)', "Regex does not support the named argument foo", 1, 25),
    ('root ::= Regex("a", json_string=1)', "json_string must be a boolean", 1, 33),
    ('root ::= Regex(a)', "Regex pattern must be a string literal", 1, 16),
    ('root ::= Regex("a", "b")', "Regex expects exactly one string argument", 1, 10),
    ("root ::= Regex()", "Regex expects exactly one string argument", 1, 10),
    ('root ::= Substring("a", 1)', "Substring() arguments must be strings", 1, 10),
    ('root ::= Substring("a", foo=true)', "Substring() does not accept named arguments", 1, 10),
    ('root ::= "a" (= (Substring("c")))', "Substring should not be in lookahead assertion", 1, 14),
    ('root[temperature=1e999] ::= "a"', "The temperature must be a finite non-negative number", 1, 18),
    ('root[temperature=abc] ::= "a"', "Assign should be preceded by an identifier", 1, 18),
    ('root ::= "a" "b"\nx ::= "c"\ny ::= [z-a]', "lower bound is larger than upper bound", 3, 8),
]

# Accepted by xgrammar 0.2.8, rejected here on purpose (see the module docstring of xg2ref/frontends/ebnf/parser.py).
TOKENS_AND_OPTIONS = [
    ("root ::= Token()", "Token takes one or more token ids", 1, 10),
    ('root ::= Token(1, "a")', "must be non-negative integers", 1, 19),
    ("root ::= ExcludeToken(1, x=2)", "ExcludeToken takes no named arguments", 1, 10),
    ('root ::= TokenTagDispatch((1, x), excludes=(2, 1))\nx ::= "a"', "both a trigger and an exclude", 1, 48),
    ('root ::= TokenTagDispatch(("a", x))\nx ::= "a"', "a pair (token_id, rule_name)", 1, 28),
    ('root ::= TokenTagDispatch((1, y))\nx ::= "a"', 'Rule "y" is not defined', 1, 31),
    ('root[max_tokens=x] ::= "a"', "max_tokens takes an integer", 1, 17),
    ('root ::= x\nx[lazy, lazy] ::= "a"', "lazy is given twice", 2, 9),
    ('root[foo=1] ::= "a"', "Unknown rule option foo", 1, 6),
    ('root[temperature=-1] ::= "a"', "The temperature must be a finite non-negative number", 1, 18),
]


GOOD_TOKENS_AND_OPTIONS = [
    "root ::= Token(1, 2, 1) ExcludeToken(3)",
    'root[max_tokens=3, lazy] ::= "a"',
    'root ::= x\nx[capture="c", temperature=0.7, max_chars=0] ::= "a"',
    'root ::= TokenTagDispatch((1, x), (2, x), loop_after_dispatch=false, excludes=(3,))\nx ::= "a"',
]


BEYOND_XG2REF = [
    ('root ::= "\\x110000"', "beyond U+10FFFF", 1, 11),
    ('root ::= [\\UFFFFFFFF]', "beyond U+10FFFF", 1, 11),
    ('root ::= "a"\x00garbage', "Unexpected NUL character", 1, 13),
    ('root ::= Regex("(a")', "Regex: The parenthesis is not closed", 1, 16),
    ('root ::= Regex(json_string=true, "a")', "positional argument follows a named one", 1, 34),
    ('root ::= Regex("a", flags="s", flags="s")', "argument flags is given twice", 1, 32),
]


@pytest.mark.parametrize("text, message, line, column", BAD + TOKENS_AND_OPTIONS + BEYOND_XG2REF,
                         ids=[t for t, *_ in BAD + TOKENS_AND_OPTIONS + BEYOND_XG2REF])
def test_bad_text_raises_ebnf_error_at_its_position(text, message, line, column):
    with pytest.raises(EBNFError) as info:
        parse_ebnf(text)
    err = info.value
    assert message in err.message
    assert (err.line, err.column) == (line, column), str(err)
    assert str(err).startswith(f"EBNF ") and f"at line {line}, column {column}: " in str(err)
    assert isinstance(err, ValueError) and isinstance(err, RuntimeError)


LIMITS = [
    (DEEP, f"Nest layer exceeded the maximum limit of {MAX_NESTING}"),
    ("root ::= " + "(" * (MAX_NESTING + 1) + '"a"' + ")" * (MAX_NESTING + 1), "Nest layer exceeded"),
    ("root ::= " + '("a" ' * 3000 + ")" * 3000, "Nest layer exceeded"),
    ('root ::= "a"{10000000000000000}', "Integer is too large: 10000000000000000"),
    ('root ::= "a"{1,99999999999999999999}', "Integer is too large"),
]


@pytest.mark.parametrize("text, message", LIMITS, ids=[t[:40] for t, _ in LIMITS])
def test_limits_raise_grammar_limit_error(text, message):
    with pytest.raises(GrammarLimitError, match="EBNF limit exceeded at line 1, column") as info:
        parse_ebnf(text)
    assert message in str(info.value)


def test_text_size_limit(monkeypatch):
    import xg2ref.frontends.ebnf.parser as ebnf

    monkeypatch.setattr(ebnf, "MAX_GRAMMAR_CHARS", 20)
    monkeypatch.setattr(ebnf, "MAX_RULES", 2)
    with pytest.raises(GrammarLimitError, match="Grammar text too large: 21 characters"):
        parse_ebnf('root ::= "aaaaaaaaaa"')
    with pytest.raises(GrammarLimitError, match="Too many rules"):
        parse_ebnf("root::=a\na::=b\nb::=a")


def test_nesting_at_the_limit_parses_without_recursion():
    text = "root ::= " + '("a" "c" | ' * MAX_NESTING + '"b"' + ")" * MAX_NESTING
    ir = parse_ebnf(text)
    assert sum(1 for _ in walk(ir.rules[0].body)) == 4 * MAX_NESTING + 1
    assert ir_signature(ir) == ir_signature(parse_ebnf(text))


def test_error_excerpt_points_at_the_column():
    with pytest.raises(EBNFError) as info:
        parse_ebnf('root ::= "a"\nb ::= "b" [z-a]\n')
    assert info.value.excerpt == 'b ::= "b" [z-a]\n           ^'
    assert str(info.value).splitlines()[0] == (
        "EBNF parser error at line 2, column 12: Invalid character class: lower bound is larger than upper bound")


def test_lexer_errors_say_lexer():
    with pytest.raises(EBNFError, match="^EBNF lexer error at line 1, column 11: Invalid escape"):
        parse_ebnf('root ::= "\\q"')


@pytest.mark.parametrize("path", LLAMA_GRAMMARS, ids=os.path.basename)
def test_llama_cpp_grammars_parse(path):
    text = open(path, encoding="utf-8").read()
    name = os.path.basename(path)
    if name in GBNF_EMPTY_ALTERNATIVE:
        with pytest.raises(EBNFError, match="Expect element, but got '\\|'") as info:
            parse_ebnf(text)
        assert (info.value.line, info.value.column) == GBNF_EMPTY_ALTERNATIVE[name]
        text = text.replace("ws ::= |", 'ws ::= "" |')
    ir = parse_ebnf(text)
    assert ir.root == "root" and len(ir.rules) >= 2


def test_builtin_json_grammar():
    grammar = Grammar.builtin_json_grammar()
    assert grammar is Grammar.builtin_json_grammar()
    assert grammar.root_rule_name == "root"
    assert grammar.ir.rule_names()[:3] == ["root", "value_non_str", "members_and_embrace"]
    blank = C(*[(ch, ch) for ch in " \n\r\t"])
    assert grammar.ir.rule("characters_item").lookahead == S(Repeat(blank, 0, None), C((",", ","), ("]", "]")))
    assert sum(r.lookahead is not None for r in grammar.ir.rules) == 8


def test_c_grammar_parses_fast():
    text = open(f"{DATA}/llama_cpp/c.gbnf", encoding="utf-8").read()
    start = time.perf_counter()
    ir = parse_ebnf(text)
    assert time.perf_counter() - start < 0.5
    assert len(ir.rules) == 21


def test_type_errors():
    with pytest.raises(TypeError):
        parse_ebnf(b'root ::= "a"')


# Texts stitched from dialect fragments: both engines must accept and reject the same ones,
# and no exception other than EBNFError / GrammarLimitError may leave parse_ebnf.
FRAGMENTS = ['root', ' ::= ', '\n', ' ', 'x', '"a"', '""', '[a-c]', '[^]', '(', ')', '|', '*', '+', '?', '{2}',
             '{1,3}', '{2,}', '(=', '#c\n', '\\', '"\\n"', '[\\-]', ',', 'x ::= ', '-']
texts = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(texts)
def test_only_ebnf_errors_escape(text):
    try:
        parse_ebnf(text)
    except (EBNFError, GrammarLimitError):
        pass


@pytest.fixture(scope="module")
def xgr():
    return pytest.importorskip("xgrammar")


def xgrammar_accepts(xgr, text: str) -> bool:
    try:
        xgr.Grammar.from_ebnf(text)
        return True
    except Exception:  # RuntimeError, or UnicodeDecodeError when the message cuts a UTF-8 character
        return False


def xg2ref_accepts(text: str) -> bool:
    try:
        parse_ebnf(text)
        return True
    except (EBNFError, GrammarLimitError):
        return False


AGREEMENT = ([f'root ::= {t}\nx ::= "x"\ny ::= "y"' for t, _ in GOOD_BODIES]
             + [t for t, r, _ in GOOD_GRAMMARS if r == "root"] + [t for t, *_ in BAD] + [t for t, _ in LIMITS]
             + [t for t, *_ in TOKENS_AND_OPTIONS] + GOOD_TOKENS_AND_OPTIONS + ["root ::= TokenTagDispatch()"])


@pytest.mark.xgrammar
@pytest.mark.parametrize("text", AGREEMENT, ids=[t[:40] for t in AGREEMENT])
def test_accept_reject_agrees_with_xgrammar(xgr, text):
    assert xg2ref_accepts(text) == xgrammar_accepts(xgr, text)


# the intrinsics' and the rule options' errors in xgrammar's words (specs/01, "Errors and limits")
WORDED = [(t, m) for t, m, *_ in BAD + TOKENS_AND_OPTIONS
          if m.startswith(("Regex expects", "Regex pattern", "Regex does", "regular-expression flag",
                           "json_string must", "Substring", "The temperature", "Assign should"))]


@pytest.mark.xgrammar
@pytest.mark.parametrize("text, words", WORDED, ids=[t for t, _ in WORDED])
def test_intrinsic_and_option_errors_are_in_xgrammars_words(xgr, text, words):
    with pytest.raises(RuntimeError) as theirs:
        xgr.Grammar.from_ebnf(text)
    assert words in str(theirs.value)
    with pytest.raises(EBNFError) as ours:
        parse_ebnf(text)
    assert words in ours.value.message


@pytest.mark.xgrammar
@pytest.mark.parametrize("text", [t for t, *_ in BEYOND_XG2REF if "\x00" not in t])
def test_deliberate_differences_from_xgrammar(xgr, text):
    assert xgrammar_accepts(xgr, text) and not xg2ref_accepts(text)


@pytest.mark.xgrammar
@FUZZ
@given(texts)
def test_accept_reject_agrees_with_xgrammar_on_stitched_texts(xgr, text):
    assert xg2ref_accepts(text) == xgrammar_accepts(xgr, text), text


@pytest.mark.parametrize("text", GOOD_TOKENS_AND_OPTIONS)
def test_tokens_and_options_print_back_to_the_same_grammar(text):
    ir = parse_ebnf(text)
    assert ir_signature(parse_ebnf(print_grammar(ir))) == ir_signature(ir)


def test_rule_options_are_kept_on_the_rule():
    ir = parse_ebnf('root ::= x\nx[max_tokens=8, max_chars=20, capture="c", lazy, temperature=0.5] ::= "a"')
    x = ir.rule("x")
    assert x.options == (("max_tokens", 8), ("max_chars", 20), ("capture", "c"), ("lazy", True), ("temperature", 0.5))
    assert x.option("max_chars") == 20 and ir.rule("root").option("lazy") is None
    # a rule with options is never inlined away
    assert "x" in [r.name for r in normalize(ir).rules]


def test_macro_helpers_are_named_in_constant_checks_per_call(monkeypatch):
    """Each `Substring(...)` call defines helper rules named from one base; a grammar's calls
    share the suffix counters, so call k does not try the k names before it again (3,000 calls:
    0.75 s, where trying them took 3.5 s and a union of the names per call more)."""
    from xg2ref.grammar import intrinsic

    asked = []
    real = intrinsic.Names.__contains__
    monkeypatch.setattr(intrinsic.Names, "__contains__", lambda self, name: asked.append(name) or real(self, name))
    n = 300
    body = " | ".join(f'Substring("ab{i} cd")' for i in range(n))
    ir = parse_ebnf(f"root ::= {body}\n" + "\n".join(f'substring_{i} ::= "x{i}"' for i in range(0, 20, 2)))
    helpers = [r.name for r in ir.rules if r.name.startswith("substring")]
    assert len(helpers) == len(set(helpers)) > n
    assert len(asked) < 4 * len(helpers)  # (trying every earlier name: about n * n / 2)
