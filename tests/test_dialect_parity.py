"""The EBNF dialect where xg2ref follows xgrammar 0.2.8 over the standards (specs/01-ebnf.md,
"Dialect details"): the `Regex(...)` intrinsic (xg2ref/frontends/regex/intrinsic_dialect.py), `Substring()`
and lazy rules (xg2ref/grammar/lazy.py). Each table is the expected behaviour written out; the
`xgrammar`-marked tests check that it is xgrammar's, and compare verdicts and masks on random
cases.
"""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.exceptions import EBNFError
from xg2ref.frontends.ebnf.parser import parse_ebnf
from xg2ref.grammar.ir import CharClass, Choice, GrammarIR, Rule, RuleRef, Sequence
from xg2ref.grammar.lazy import committed_automaton, lower_lazy_rules
from xg2ref.grammar.passes import normalize
from xg2ref.oracle.recognizer import Recognizer
from tests.walks import greedy_walks_agree
from xg2ref.testing import _is_grammar_accept_string


def regex_rule(pattern: str, args: str = "") -> str:
    literal = pattern.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'root ::= Regex("{literal}"{args})'


def verdict(text: str, grammar_text: str) -> bool:
    return Recognizer(parse_ebnf(grammar_text)).is_sentence(text.encode("utf-8", "surrogatepass"))


# ---- Regex(...) ----------------------------------------------------------------------------------

# (pattern, extra arguments, strings matched, strings not matched)
INTRINSIC_CASES = [
    (".", "", ["\n", "a", "😀"], ["", "ab"]),
    (".", ', flags=""', ["\r", "a", "\u2028"], ["\n"]),
    (".", ', flags="u"', ["a"], ["\n"]),
    (".", ', flags="i"', ["a"], ["\n"]),
    (".", ', flags="s"', ["\n"], []),
    ("[.]|\\.", ', flags=""', ["."], ["a"]),
    (".", ", json_string=true", ["é", "a"], ['"', "\\", "\n", "\t"]),
    (".", ', json_string=true, flags="s"', ["a"], ["\n", '"']),
    ("(?i)ab", "", ["ab", "AB", "aB"], ["(?i)ab"]),
    ("(?i)[^a]", "", ["b", "B"], ["a", "A"]),
    ("(?i)[a-c]x|é|k", "", ["BX", "cx", "é", "K"], ["É", "\u212a", "dx"]),
    ("(?i)\\x41\\W", "", ["a.", "A-"], ["aa"]),
    ("ab", ', flags="i"', ["Ab"], []),
    ("(?i)a", ', flags="i"', ["A"], []),
    ("\\a\\e\\0\\v\\f\\t\\r\\n", "", ["\x07\x1b\x00\x0b\x0c\t\r\n"], []),
    ("\\012", "", ["\x0012"], ["\n"]),
    ("\\x411", "", ["A1"], ["\u0411"]),
    ("\\U0041|\\q\\A\\z\\Z\\-", "", ["U0041", "qAzZ-"], ["A"]),
    ("\\u{1F600}\\u0041", "", ["😀A"], []),
    ("\\cj\\cJ", "", ["\n\n"], []),
    ("[\\b]", "", ["\b"], ["b"]),
    ("\\s", "", [" ", "\t", "\x0b", "\r"], ["\xa0", "\u3000"]),
    ("\\w\\d", "", ["a1", "_9"], ["é1", "a٣"]),
    ("a$b", "", ["ab"], ["a"]),
    ("a^*", "", ["", "aaa"], ["b"]),
    ("(?=x)a", "", ["a"], ["xa"]),
    ("a(?!b)c", "", ["ac"], ["abc"]),
    ("a**", "", ["", "aa"], ["b"]),
    ("a{2}{3}", "", ["a" * 6], ["aa", "a" * 5]),
    ("a{ 1 , 2 }", "", ["a", "aa"], ["", "aaa"]),
    ("a???", "", ["", "a"], ["aa"]),
    ("a{2}?", "", ["aa"], ["a"]),
    ("[\\d-z]", "", ["5", "-", "z"], ["a"]),
    ("[[]|}", "", ["[", "}"], ["]"]),
    ("[\\^]", "", ["^"], ["a"]),
    ("(?P<n_1>a)(?<n_1>b)", "", ["ab"], ["a"]),
    ("(a|)", "", ["", "a"], ["b"]),
]


@pytest.mark.parametrize("pattern, args, yes, no", INTRINSIC_CASES, ids=[p + a for p, a, *_ in INTRINSIC_CASES])
def test_regex_intrinsic_verdicts(pattern, args, yes, no):
    text = regex_rule(pattern, args)
    for s in yes:
        assert verdict(s, text), (text, s)
    for s in no:
        assert not verdict(s, text), (text, s)


# (pattern, extra arguments, the start of the message)
INTRINSIC_ERRORS = [
    ("(?i:a)", "", "Unsupported group modifier '(?i'"),
    ("a(?i)b", "", "Unsupported group modifier '(?i'"),
    ("(?i)(?i)a", "", "Unsupported group modifier '(?i'"),
    ("(?s).", "", "Unsupported group modifier '(?s'"),
    ("(?-i)a", "", "Unsupported group modifier '(?-'"),
    ("(?#c)a", "", "Unsupported group modifier '(?#'"),
    ("\\bx", "", "Word boundary assertion \\b"),
    ("\\B", "", "Word boundary assertion \\B"),
    ("\\p{L}", "", "Unicode property escape"),
    ("(a)\\1", "", "Backreference \\1"),
    ("\\k<a>", "", "Backreference \\k"),
    ("\\x4", "", "\\x must be followed by two hexadecimal digits"),
    ("\\x{41}", "", "\\x must be followed by two hexadecimal digits"),
    ("\\u004", "", "\\u must be followed by four hexadecimal digits"),
    ("\\u{}", "", "\\u{...} must contain one to six"),
    ("\\u{110000}", "", "\\u{...} escape is beyond the Unicode range"),
    ("\\c1", "", "\\c must be followed by a letter"),
    ("a\\", "", "Regex ends with a trailing backslash"),
    ("[]", "", "Empty character class"),
    ("[^]", "", "Empty character class"),
    ("]", "", "Unmatched ']'"),
    ("[a", "", "Unclosed '['"),
    ("(a", "", "The parenthesis is not closed"),
    ("a)", "", "Unmatched ')'"),
    ("{2}", "", "There is nothing to repeat"),
    ("a|*", "", "There is nothing to repeat"),
    ("a{,2}", "", "Invalid repetition count: expected a number"),
    ("a{3,2}", "", "Invalid repetition count: the lower bound 3 is larger"),
    ("a{1000000000}", "", "Invalid repetition count: the count 1000000000 is too large"),
    ("[z-a]", "", "Invalid character range (lower bound exceeds upper bound)"),
    ("[a-\\d]", "", "Invalid character range endpoint"),
    ("(?<=a)b", "", "Lookbehind assertion"),
    ("(?<>a)", "", "Invalid named capturing group"),
    ("a", ', flags="m"', "regular-expression flag 'm' is not supported"),
]


@pytest.mark.parametrize("pattern, args, message", INTRINSIC_ERRORS, ids=[p + a for p, a, _ in INTRINSIC_ERRORS])
def test_regex_intrinsic_errors(pattern, args, message):
    with pytest.raises(EBNFError) as info:
        parse_ebnf(regex_rule(pattern, args))
    assert info.value.message.startswith("Regex: " + message), info.value.message
    assert (info.value.line, info.value.column) == (1, 16)


@pytest.fixture(scope="module")
def xg():
    return pytest.importorskip("xgrammar")


def xgrammar_verdicts(xg, text: str, strings) -> list:
    """xgrammar's verdicts, or None when it refuses the grammar (when parsing or compiling)."""
    from xgrammar.testing import _is_grammar_accept_string as theirs

    try:
        grammar = xg.Grammar.from_ebnf(text)
        xg.GrammarCompiler(xg.TokenizerInfo(["a"]), cache_enabled=False).compile_grammar(grammar)
    except RuntimeError:
        return None
    return [theirs(grammar, s) for s in strings]


def xg2ref_verdicts(text: str, strings) -> list:
    try:
        recognizer = Recognizer(parse_ebnf(text))
    except EBNFError:
        return None
    return [recognizer.is_sentence(s.encode("utf-8", "surrogatepass")) for s in strings]


@pytest.mark.xgrammar
@pytest.mark.parametrize("pattern, args, yes, no", INTRINSIC_CASES, ids=[p + a for p, a, *_ in INTRINSIC_CASES])
def test_regex_intrinsic_cases_are_xgrammars(xg, pattern, args, yes, no):
    assert xgrammar_verdicts(xg, regex_rule(pattern, args), yes + no) == [True] * len(yes) + [False] * len(no)


@pytest.mark.xgrammar
@pytest.mark.parametrize("pattern, args, message", INTRINSIC_ERRORS, ids=[p + a for p, a, _ in INTRINSIC_ERRORS])
def test_regex_intrinsic_errors_are_xgrammars(xg, pattern, args, message):
    """xgrammar parses the grammar and refuses the pattern when compiling it (a bad flag when
    parsing); xg2ref refuses it when parsing."""
    assert xgrammar_verdicts(xg, regex_rule(pattern, args), ["a"]) is None


PIECES = ["a", "b", "A", "-", ".", r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", "[ab]", "[^a]", "[a-c]", r"[\d-]", r"[\^a]",
          r"\n", r"\x41", r"\u0062", r"\u{63}", r"\-", r"\q", r"\0", r"\e", r"\cJ", r"\U0041", "(", ")", "(?:", "(?<n>",
          "|", "*", "+", "?", "*?", "{2}", "{1,2}", "{0,}", "{ 1 }", "^", "$", "(?=a)", "(?i)", "é", "}", "]", "{",
          r"[\b]", r"\012", '"']
STRINGS = ["", "a", "b", "A", "B", "ab", "aa", "ba", "-", "\n", "\t", "\x0b", "\xa0", "1", "é", "^", "q", "\x00", "\x1b",
           "c", "AA", "aB", "U0041", "}", "]", "\x0012", '"', "\b", "aaa", "abab"]
ARGS = ["", ', flags=""', ', flags="i"', ', flags="s"', ", json_string=true"]


@pytest.mark.xgrammar
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join), st.sampled_from(ARGS))
def test_regex_intrinsic_agrees_with_xgrammar_on_random_patterns(xg, pattern, args):
    text = regex_rule(pattern, args)
    assert xg2ref_verdicts(text, STRINGS) == xgrammar_verdicts(xg, text, STRINGS), text


# ---- Substring -----------------------------------------------------------------------------------

SUBSTRINGS = [
    ("Substring()", ["<>"], ["<a>", "<>>"]),
    ("Substring( )", ["<>"], ["< >"]),
    ('Substring("")', ["<>"], ["<a>"]),
    ('Substring("", "a")', ["<>", "<a>"], ["<aa>"]),
    ('Substring("ab", "c")', ["<>", "<ab>", "<abc>", "<c>"], ["<b>", "<bc>", "<ca>"]),
]


@pytest.mark.parametrize("call, yes, no", SUBSTRINGS, ids=[c for c, *_ in SUBSTRINGS])
def test_substring(call, yes, no):
    text = f'root ::= "<" {call} ">"'
    assert xg2ref_verdicts(text, yes + no) == [True] * len(yes) + [False] * len(no)


@pytest.mark.xgrammar
@pytest.mark.parametrize("call, yes, no", SUBSTRINGS, ids=[c for c, *_ in SUBSTRINGS])
def test_substring_cases_are_xgrammars(xg, call, yes, no):
    text = f'root ::= "<" {call} ">"'
    assert xgrammar_verdicts(xg, text, yes + no) == [True] * len(yes) + [False] * len(no)


def test_substring_of_many_chunks_nests_no_expression():
    """One helper rule per chunk (intrinsics/substring.py): 2,000 chunks, which nested as one
    expression overflowed the recursion limit at 500, compile in seconds. The helpers' names
    avoid the grammar's own (`substring` here)."""
    chunks = [f"w{i} " for i in range(2000)]
    text = 'root ::= "<" Substring(' + ", ".join(f'"{c}"' for c in chunks) + ') ">" substring\nsubstring ::= "!"'
    yes = ["<>!", "<w0 >!", "<w5 w6 w7 >!", "<w1998 w1999 >!"]
    no = ["<w5 w7 >!", "<w1999 w0 >!", "<w5 >"]
    assert xg2ref_verdicts(text, yes + no) == [True] * len(yes) + [False] * len(no)
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo(["a"]))
    for string, verdict in [(s, True) for s in yes] + [(s, False) for s in no]:
        matcher = xgr.GrammarMatcher(compiler.compile_grammar(text))
        assert (matcher.accept_string(string) and matcher.is_completed()) == verdict, string
    lark = 'start: "<" %regex {"substring_chunks": [' + ", ".join(f'"{c}"' for c in chunks) + ']} ">"'
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(xgr.TokenizerInfo(["a"])).compile_grammar(
        xgr.Grammar.from_lark(lark)))
    assert matcher.accept_string("<w7 w8 >") and matcher.is_completed()


# ---- lazy rules ----------------------------------------------------------------------------------

HELPERS = 'x ::= "a" "b"\ny ::= "a" | "bc"\nw ::= [a-z]*\n'
# (root and lazy rule, strings matched, strings not matched): an occurrence ends where its
# body first matches
LAZY_CASES = [
    ('root ::= a "b"\na[lazy] ::= [a-z]*', ["b"], ["ab", "aab", "bb"]),
    ('root ::= a\na[lazy] ::= "a"+', ["a"], ["aa", ""]),
    ('root ::= a "x"\na[lazy] ::= "a" | "ab"', ["ax"], ["abx"]),
    ('root ::= a "c"\na[lazy] ::= [^c]* "c"', ["cc", "acc", "abcc"], ["acbc", "ac"]),
    ('root ::= a b\na[lazy] ::= "a" | "aa"\nb ::= "a" | "b"', ["aa", "ab"], ["aaa", "aab"]),
    ('root ::= a+\na[lazy] ::= "a"+', ["a", "aaa"], [""]),
    ('root[lazy] ::= "a"+', ["a"], ["aa"]),
    ('root[lazy] ::= "a"*', [""], ["a"]),
    ('root ::= a "!"\na[lazy] ::= Substring("ab", "c")', ["!"], ["ab!"]),
    ('root ::= a "!"\na[lazy] ::= Regex("[a-z]*c")', ["c!", "abc!"], ["cc!", "abcc!"]),
    ('root ::= a "!"\na[lazy] ::= y "c"', ["ac!", "bcc!"], ["bc!"]),
    ('root ::= a "!"\na[lazy] ::= "q" | w', ["!"], ["q!", "ab!"]),
    ('root ::= a "!"\na[max_tokens=5, lazy] ::= "a"+', ["a!"], ["aa!"]),
    ('root ::= a "!"\na[lazy] ::= b\nb ::= "x" b | ""', ["!"], ["x!"]),
]


@pytest.mark.parametrize("text, yes, no", LAZY_CASES, ids=[t for t, *_ in LAZY_CASES])
def test_lazy_rules_commit_to_the_shortest_match(text, yes, no):
    grammar = xgr.Grammar.from_ebnf(text + "\n" + HELPERS)
    assert xg2ref_verdicts(text + "\n" + HELPERS, yes + no) == [True] * len(yes) + [False] * len(no)
    for s in yes[:2] + no[:2]:
        assert _is_grammar_accept_string(grammar, s) == (s in yes), (text, s)


def test_lazy_lowering():
    ir = parse_ebnf('root ::= a "c"\na[lazy, max_tokens=4] ::= [^c]* "c"')
    lowered = lower_lazy_rules(ir)
    a = lowered.rule("a")
    assert a.options == (("max_tokens", 4),)
    not_c = CharClass(((0, 0x62), (0x64, 0x10FFFF)))
    body = Choice((Sequence((not_c, RuleRef("a_lazy_0"))), CharClass(((0x63, 0x63),))))  # after "c": nothing more
    assert a.body == body and lowered.rule("a_lazy_0").body == body
    assert [r.name for r in lowered.rules] == ["root", "a", "a_lazy_0"]
    assert lower_lazy_rules(lowered) is lowered  # nothing lazy is left
    # (the options printed in xgrammar's order, whatever order they were written in)
    assert str(xgr.Grammar.from_ir(ir)) == 'root ::= a "c"\na[max_tokens=4, lazy] ::= [^c]* "c"\n'
    # a fresh name never takes an existing one
    taken = parse_ebnf('root ::= a\na[lazy] ::= "x"+ "y"\na_lazy_0 ::= "z"')
    assert [r.name for r in lower_lazy_rules(taken).rules] == ["root", "a", "a_lazy_1", "a_lazy_0"]
    # min(L) of a language that holds "" is {""}; of the empty language, nothing
    one_char = GrammarIR((Rule("root", CharClass(((97, 98),))),))
    assert committed_automaton(one_char, "root") == ([[((97, 98), 1)], []], {1})
    assert lower_lazy_rules(GrammarIR((Rule("root", CharClass(()), options=(("lazy", True),)),))).rule("root").body \
        == CharClass(())
    # the compiler's normalization lowers them: nothing lazy reaches the FSM builder
    assert not any(r.option("lazy") for r in normalize(parse_ebnf('root ::= a a\na[lazy] ::= "x"+')).rules)


LAZY_ERRORS = [
    ('root ::= a\na[lazy] ::= "a" a | "b"', "lazy rule 'a' is recursive", 2, 1),
    ('root ::= a\na[lazy] ::= b\nb ::= "x" c | ""\nc ::= b "y"', "refers to 'b' recursively before its end", 2, 1),
    ('root ::= a\na[lazy] ::= b\nb[lazy] ::= "x"', "refers to the lazy rule 'b'", 2, 1),
    ('root ::= a\na[lazy] ::= TagDispatch(("<", x))\nx ::= "y"', "reaches TagDispatch", 2, 1),
    ('root ::= a\na[lazy] ::= Token(1)', "reaches Token / ExcludeToken", 2, 1),
    ('root ::= a\na[lazy=true] ::= "x"', "Rule option lazy takes no value", 2, 8),
    ('root ::= a\na[lazy=false] ::= "x"', "Rule option lazy takes no value", 2, 8),
]


@pytest.mark.parametrize("text, message, line, column", LAZY_ERRORS, ids=[t for t, *_ in LAZY_ERRORS])
def test_lazy_rule_errors(text, message, line, column):
    with pytest.raises(EBNFError) as info:
        parse_ebnf(text)
    assert message in info.value.message
    assert (info.value.line, info.value.column) == (line, column)


def test_lazy_rules_built_in_code_are_checked_when_lowered():
    ir = GrammarIR((Rule("root", RuleRef("root"), options=(("lazy", True),)),))
    with pytest.raises(EBNFError, match="is recursive"):
        lower_lazy_rules(ir)


@pytest.mark.xgrammar
@pytest.mark.parametrize("text, yes, no", LAZY_CASES, ids=[t for t, *_ in LAZY_CASES])
def test_lazy_cases_are_xgrammars(xg, text, yes, no):
    assert xgrammar_verdicts(xg, text + "\n" + HELPERS, yes + no) == [True] * len(yes) + [False] * len(no)


@pytest.mark.xgrammar
@pytest.mark.parametrize("text", [t for t, *_ in LAZY_ERRORS])
def test_lazy_errors_are_xgrammars(xg, text):
    assert xgrammar_verdicts(xg, text, ["x"]) is None


@pytest.mark.xgrammar
def test_lazy_bodies_xgrammar_cannot_flatten_are_lowered_here(xg):
    """xgrammar 0.2.8 refuses lazy bodies its normalization does not flatten into strings and
    classes; xg2ref lowers any regular body (specs/01-ebnf.md, differences)."""
    for body, yes, no in [('"ab"*', ["!"], ["ab!"]), ('"a"{2,3}', ["aa!"], ["aaa!"]), ('"a" ("b" | "cd")', ["ab!"], []),
                          ('"a" b\nb ::= [xy] b | "z"', ["axz!", "az!"], ["azz!", "a!"])]:
        text = f'root ::= a "!"\na[lazy] ::= {body}'
        assert xgrammar_verdicts(xg, text, ["!"]) is None
        assert xg2ref_verdicts(text, yes + no) == [True] * len(yes) + [False] * len(no)


def lazy_bodies():
    def pattern(depth):
        leaf = st.sampled_from(["a", "b", "c", "[ab]", "[^a]", ".", "[bc]"])
        if depth == 0:
            return leaf
        sub = pattern(depth - 1)
        return st.one_of(leaf, st.tuples(sub, sub).map("".join), st.tuples(sub, sub).map(lambda p: f"({p[0]}|{p[1]})"),
                         st.tuples(sub, st.sampled_from(["*", "+", "?", "{2}", "{0,2}"])).map(lambda p: f"({p[0]}){p[1]}"))
    return pattern(3)


LAZY_STRINGS = ["".join(t) for n in range(5) for t in itertools.product("abc", repeat=n)]


@pytest.mark.xgrammar
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lazy_bodies(), st.sampled_from(['"b"', "[a-c]*", '""', "x", '"c"?']))
def test_lazy_rules_agree_with_xgrammar_on_random_bodies(xg, body, tail):
    text = f'root ::= a {tail}\na[lazy] ::= Regex("{body}")\nx ::= "a" | "ab"'
    assert xg2ref_verdicts(text, LAZY_STRINGS) == xgrammar_verdicts(xg, text, LAZY_STRINGS), text


MASK_VOCAB = [b"a", b"b", b"c", b"ab", b"bc", b"abc", b"ca", b"cc", b"\n", b"A", b'"', b"</s>"]
MASK_WALKS = [
    ('root ::= a "c" [a-c]*\na[lazy] ::= [^c]* "c"', ["abccab", "cccc", "acbc"]),
    ('root ::= (a ",")* "."\na[lazy] ::= [a-c]+', ["a,b,."]),
    ('root ::= a "b"\na[lazy] ::= "a" | "ab" | "abc"', ["ab", "abcb"]),
    ('root ::= Regex("(?i)a.c", flags="") Regex("b.", json_string=true)', ["AbcbA", "a\nc"]),
    ('root ::= Regex("a.c") Substring("ab", "c") "\\n"', ["a\ncabc\n", "abcc\n"]),
]


@pytest.mark.xgrammar
@pytest.mark.parametrize("text, walks", MASK_WALKS, ids=[t for t, _ in MASK_WALKS])
def test_masks_match_xgrammar(xg, text, walks):
    """Masks along each string (the longest allowed token that fits, step by step)."""
    from xg2ref.oracle.engines import XG2RefEngine, XGrammarEngine

    info = xgr.TokenizerInfo(MASK_VOCAB, stop_token_ids=[len(MASK_VOCAB) - 1])
    ours, theirs = XG2RefEngine(info).compile(text), XGrammarEngine.from_tokenizer_info(info).compile(text)
    greedy_walks_agree(ours, theirs, walks, MASK_VOCAB)
