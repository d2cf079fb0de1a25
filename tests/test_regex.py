"""Regex front end (xg2ref/frontends/regex/parser.py) against Python's `re` as the reference."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.frontends.regex.parser import RegexError, regex_to_ir
from xg2ref.oracle.recognizer import Recognizer
from tests.walks import greedy_walks_agree
from xg2ref.testing import _is_grammar_accept_string, _regex_to_ebnf

ALPHABET = "ab1\n-"


def accepts(pattern: str, text: str, **kw) -> bool:
    return Recognizer(regex_to_ir(pattern, **kw)).is_sentence(text.encode("utf-8"))


@st.composite
def patterns(draw, depth: int = 3) -> str:
    """Random patterns over a small alphabet, in the syntax Python and ECMAScript share."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["a", "b", "1", "-", ".", r"\d", r"\D", r"\w", r"\W", r"\s", "[ab]", "[^a]",
                                     "[a-b1]", r"[\d-]", r"\n", r"\x61", r"\u0062", r"\-", "(?:)"]))
    kind = draw(st.sampled_from(["seq", "alt", "rep", "group"]))
    if kind == "seq":
        return "".join(draw(patterns(depth - 1)) for _ in range(draw(st.integers(2, 3))))
    if kind == "alt":
        return "|".join(draw(patterns(depth - 1)) for _ in range(draw(st.integers(2, 3))))
    inner = "(?:" + draw(patterns(depth - 1)) + ")"
    if kind == "group":
        return draw(st.sampled_from(["(", "(?:"])) + draw(patterns(depth - 1)) + ")"
    quant = draw(st.sampled_from(["*", "+", "?", "{2}", "{1,2}", "{0,}", "{2,3}"]))
    return inner + quant + draw(st.sampled_from(["", "?"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), st.lists(st.text(ALPHABET, max_size=6), min_size=1, max_size=8))
def test_whole_string_verdicts_match_python_re(pattern, texts):
    # `\s` in Python's ASCII mode is [ \t\n\r\f\v]; on this alphabet it agrees with ECMAScript's set
    compiled = re.compile(pattern, re.ASCII)
    ir = regex_to_ir(pattern)
    oracle = Recognizer(ir)
    for text in texts:
        assert oracle.is_sentence(text.encode()) == bool(compiled.fullmatch(text)), (pattern, text)


@pytest.mark.parametrize("pattern, yes, no", [
    (r"^\d{3}-[a-z]+$", ["123-abc"], ["12-abc", "123-", "123-abC"]),
    (r"a.c", ["abc", "a\tc", "aéc"], ["a\nc", "ac"]),
    (r"[\u00e0-\u00e9]+", ["àé", "ä"], ["ê", ""]),
    (r"\u{1F600}|\x41|\cJ", ["😀", "A", "\n"], ["B"]),
    (r"(?<year>\d{4})-(?:0[1-9]|1[0-2])", ["2024-01", "1999-12"], ["2024-13", "24-01"]),
    (r"a{0}b", ["b"], ["ab"]),
    (r"x*?y+?z??", ["y", "xxyyz"], ["xz"]),
    (r"{a}|a{,2}", ["{a}", "a{,2}"], ["a", "aa"]),
    (r"[]|z", ["z"], [""]),
    (r"[^]", ["\n", "é"], ["", "ab"]),
    (r"\s", [" ", "\u3000", "\u00a0", "\ufeff"], ["a", "\u200b"]),
    (r"a|", ["a", ""], ["b"]),
    (r"a$b", [], ["a", "ab", "a$b"]),  # `$` before a character: nothing matches
    (r"a^b", [], ["ab", "b"]),
    (r"$^", [""], ["a"]),  # a `^` after a `$`: only where nothing was read
    (r"a$^", [], ["a", ""]),
    (r"(?:$$^){2}", [""], ["a"]),
    (r"(^a|b)*c", ["c", "ac", "abbc", "bc"], ["aac", "bac", "a"]),
    (r"^((\.{2}|[a-z]+)($|/))+$", ["a/b", "../x/", "ab"], ["a//", "a/.", ""]),
])
def test_examples(pattern, yes, no):
    for text in yes:
        assert accepts(pattern, text), (pattern, text)
    for text in no:
        assert not accepts(pattern, text), (pattern, text)


def test_flags_and_json_string():
    assert accepts("ab", "aB", flags="i") and accepts("[a-c]", "C", flags="i") and not accepts("ab", "aB")
    assert accepts(".", "\n", flags="s") and not accepts(".", "\n")
    assert accepts("a", "a", flags="u")
    with pytest.raises(RegexError, match="unknown flag 'x'"):
        regex_to_ir("a", flags="x")
    # json_string: no control characters, '"' or '\\' from any character match
    assert not accepts(r'[^a]', '"', json_string=True) and accepts(r'[^a]', '"')
    assert not accepts(r'.', "\\", json_string=True) and not accepts(r'.', "\t", json_string=True)
    assert accepts(r'.', "é", json_string=True)


@pytest.mark.parametrize("pattern, message", [
    (r"(a)\1", "backreferences"),
    (r"(?<n>a)\k<n>", "backreferences"),
    (r"a(?=b)", "lookahead assertions"),
    (r"a(?!b)", "negative lookahead"),
    (r"(?<=a)b", "lookbehind"),
    (r"(?<!a)b", "negative lookbehind"),
    (r"\bword\b", r"word boundaries \(\\b\)"),
    (r"\B", "word boundaries"),
    (r"\p{Script=Greek}", "Unicode property escape"),
    (r"\p{Nope}", "Unicode property escape"),
    (r"\pL", "in braces"),
    (r"(?i)abc", "inline flags"),
    (r"a++", "possessive"),
    (r"*a", "nothing to repeat"),
    (r"[b-a]", "out of order"),
    (r"[\d-z]", "class escape"),
    (r"(ab", "missing '\\)'"),
    (r"ab)", "unbalanced"),
    (r"[ab", "missing '\\]'"),
    (r"a\q", "unknown escape"),
    (r"\x4", "hex digits"),
    (r"\u{110000}", "beyond U\\+10FFFF"),
    (r"a{3,2}", "lower bound above"),
    ("ab\\", "lone backslash"),
    (r"(?<x>a)(?<x>b)", "used twice"),
    (r"(?<1x>a)", "bad group name"),
])
def test_unsupported_constructs_name_themselves(pattern, message):
    """The standard dialect (JSON Schema patterns, structural tags); `Grammar.from_regex` reads
    xgrammar's, tested below."""
    with pytest.raises(RegexError, match=message) as info:
        regex_to_ir(pattern)
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)


def test_api():
    info = xgr.TokenizerInfo([b"12", b"3", b"-", b"a", b"</s>"], stop_token_ids=[4])
    compiled = xgr.GrammarCompiler(info).compile_regex(r"\d+-a")
    m = xgr.GrammarMatcher(compiled)
    assert m.accept_string("123-") and not m.accept_string("b") and m.accept_string("a") and m.is_completed()
    assert _regex_to_ebnf(r"a|b") == 'root ::= "a" | "b"\n'
    assert _regex_to_ebnf(r"a|b", with_rule_name=False) == '"a" | "b"\n'
    assert _is_grammar_accept_string(xgr.Grammar.from_regex(r"[0-9]{2}"), "42")
    # the printed grammar parses back to the same grammar
    g = xgr.Grammar.from_regex(r'[^"\\]*\s?(x|y){2,5}.')
    assert xgr.Grammar.from_ebnf(str(g)) == g


AGREE = [(r"a.b", ["axb", "a\rb", "a\nb"]), (r"\d+", ["12", "\u0661"]), (r"\w", ["a", "é", "_"]),
         (r"\s", [" ", "\u00a0", "\x0b", "\u3000", "\u2028", "\ufeff"]), (r"[^a]", ["\n", "b"]), (r"a|", ["", "a"]),
         (r"x{2,3}?", ["xx", "xxx", "x"]), (r"[\d-]", ["-", "5"]), (r"(?<n>a)b", ["ab"]), (r"\u{1F600}", ["😀"]),
         (r"\cJ", ["\n"]), (r"^ab$", ["ab"]), (r"[^]", ["\n", "a"]), (r"\x41", ["A"]), (r"[\b]", ["\b"]),
         (r"\/", ["/"]), (r"a{0}", [""]), (r"(ab)*", ["", "abab"]), (r"[a-]", ["-"])]
# The standard dialect (`regex_to_ir`: JSON Schema patterns, structural tags) parts from
# xgrammar's `from_regex` here: (pattern, string, xgrammar's verdict); specs/05-front-ends.md.
STANDARD_DIFFERS = [(r"a.b", "a\nb", True), (r"\s", "\u3000", False), (r"\s", "\u2028", False),
                    (r"\s", "\ufeff", False)]


@pytest.mark.xgrammar
def test_against_xgrammar():
    xg = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string as theirs

    for pattern, texts in AGREE:
        for text in texts:
            assert _is_grammar_accept_string(xgr.Grammar.from_regex(pattern), text) == theirs(
                xg.Grammar.from_regex(pattern), text), (pattern, text)
    for pattern, text, verdict in STANDARD_DIFFERS:
        assert theirs(xg.Grammar.from_regex(pattern), text) == verdict
        assert _is_grammar_accept_string(xgr.Grammar.from_regex(pattern), text) == verdict
        assert accepts(pattern, text) != verdict
    for pattern in (r"{a}", r"[]"):  # xgrammar refuses; Python and ECMAScript take them
        with pytest.raises(Exception):
            xg.Grammar.from_regex(pattern)
        with pytest.raises(RegexError):
            xgr.Grammar.from_regex(pattern)
        regex_to_ir(pattern)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(patterns(2), min_size=1, max_size=3), st.lists(st.booleans(), min_size=6, max_size=6),
       st.lists(st.text(ALPHABET, max_size=6), min_size=1, max_size=8))
def test_search_with_anchors_in_groups_matches_python_re(parts, flags, texts):
    """`^`/`$` inside a group that opens or closes an alternative (as in `^$|(^\\S+$)`), read as a
    JSON Schema `pattern` is: a search."""
    alts = []
    for i, part in enumerate(parts):
        body = ("^" if flags[2 * i] else "") + f"(?:{part})" + ("$" if flags[2 * i + 1] else "")
        alts.append(f"({body})" if i % 2 else body)
    pattern = "|".join(alts)
    from xg2ref.grammar.ir import GrammarIR, Rule
    from xg2ref.frontends.regex.parser import regex_to_expr

    recognizer = Recognizer(GrammarIR((Rule("root", regex_to_expr(pattern, search=True)),), root="root"))
    for text in texts:
        # Python's `$` also matches before a final newline; ECMAScript's (and xg2ref's) is `\Z`
        python = pattern.replace(")$", r")\Z")
        assert recognizer.is_sentence(text.encode()) == bool(re.search(python, text, re.ASCII)), (pattern, text)


@st.composite
def patterns_with_ends(draw, depth: int = 3) -> str:
    """Random patterns where `$` may stand anywhere: inside groups, repetitions, alternatives."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["a", "b", "1", "$", "$", "^", "^", "[ab]", "(?:)"]))
    kind = draw(st.sampled_from(["seq", "alt", "rep"]))
    if kind == "seq":
        return "".join(draw(patterns_with_ends(depth - 1)) for _ in range(draw(st.integers(2, 3))))
    if kind == "alt":
        return "(?:" + "|".join(draw(patterns_with_ends(depth - 1)) for _ in range(2)) + ")"
    quant = draw(st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{2,3}"]))
    return "(?:" + draw(patterns_with_ends(depth - 1)) + ")" + quant


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns_with_ends(), st.booleans(), st.lists(st.text("ab1", max_size=5), min_size=1, max_size=8))
def test_anchors_anywhere_match_python_re(pattern, search, texts):
    """`$` before the end (`(a($|/))+`): after it nothing is read, so the rest must match empty;
    `^` after the start (`(^a|b)*`): before it nothing was read."""
    from xg2ref.grammar.ir import GrammarIR, Rule
    from xg2ref.frontends.regex.parser import regex_to_expr

    recognizer = Recognizer(GrammarIR((Rule("root", regex_to_expr(pattern, search=search)),), root="root"))
    python = re.compile(pattern.replace("$", r"\Z"), re.ASCII)  # ECMAScript's `$` is Python's `\Z`
    for text in texts:
        want = bool(python.search(text) if search else python.fullmatch(text))
        assert recognizer.is_sentence(text.encode()) == want, (pattern, search, text)


# ---- Grammar.from_regex: xgrammar's dialect, the pattern rewritten as EBNF text ------------------

from xg2ref.frontends.regex.to_ebnf import regex_to_ebnf  # noqa: E402

# (pattern, the EBNF text xgrammar 0.2.8 rewrites it to)
CONVERTED = [
    (r"a[b-c]*(d|e)?\.", '"a" [b-c]* ( "d" | "e" )? "."'),
    (r".", r"[\u0000-\U0010FFFF]"),
    (r"a|", '"a" | ""'),
    (r"(|a)", '( "" | "a" )'),
    (r"^$", '""'),
    (r"a$b^c", '"a" "b" "c"'),
    (r"\d\s\W", r"[0-9] [\f\n\r\t\v\u0020\u00a0] [^a-zA-Z0-9_]"),
    (r"[\w-]", r"[a-zA-Z0-9_-]"),
    (r"[\]\-\d]", r"[\]\-0-9]"),
    (r"[\u00e9a]", r"[\xe9a]"),
    (r"[\^]", r"[^]"),
    (r"\x411", r'"\u0411"'),
    (r"\U00000041", '"A"'),
    (r"\u004", '"u" "0" "0" "4"'),
    (r"\012", r'"\0" "1" "2"'),
    (r"\a\e\v\f\cJ", r'"\a" "\e" "\v" "\f" "\n"'),
    (r"\q\A", '"q" "A"'),
    (r"(?<name>a)(?:b)", '( "a" ) ( "b" )'),
    (r"x*?y{2,}?z{1}", '"x"* "y"{2,} "z"{1}'),
    ("é😀\"'", r'"\xe9" "\U0001f600" "\"" "\'"'),
]


@pytest.mark.parametrize("pattern, text", CONVERTED, ids=[p for p, _ in CONVERTED])
def test_from_regex_rewrites_the_pattern_as_xgrammar_does(pattern, text):
    assert regex_to_ebnf(pattern) == text
    assert xgr.Grammar.from_regex(pattern) == xgr.Grammar.from_ebnf(f"root ::= {text}")


# (pattern, strings it matches, strings it does not): xgrammar 0.2.8's verdicts
FROM_REGEX_CASES = [
    (r"a.b", ["a\nb", "axb", "a😀b"], ["ab", "a\n\nb"]),
    (r"\s", [" ", "\t", "\x0b", "\xa0"], ["\u3000", "\u2028", "\ufeff", "a"]),
    (r"\S", ["a", "\u3000"], ["\xa0", " "]),
    (r"\a\e\0\v\f", ["\x07\x1b\x00\x0b\x0c"], [""]),
    (r"\012", ["\x0012"], ["\n"]),
    (r"\x411|\x{3}", ["\u0411", "xxx"], ["A1", "\x03"]),
    (r"\u{1F600}\U0001F600", ["😀😀"], []),
    (r"\q\A\z\u004", ["qAzu004"], []),
    (r"[\u00e9a]", ["\u0e9a"], ["é", "a"]),
    (r"[\^]", ["^", "x", "\n"], [""]),
    (r"[\d-z]", ["5", "-", "z"], ["a"]),
    (r"a$b|^c", ["ab", "c"], ["a", "b"]),
    (r"(?<n>a)(?<n>b)", ["ab"], ["a"]),
    (r"[^]", ["\n", "a"], [""]),
]


@pytest.mark.parametrize("pattern, yes, no", FROM_REGEX_CASES, ids=[p for p, *_ in FROM_REGEX_CASES])
def test_from_regex_verdicts(pattern, yes, no):
    grammar = xgr.Grammar.from_regex(pattern)
    for text in yes:
        assert _is_grammar_accept_string(grammar, text), (pattern, text)
    for text in no:
        assert not _is_grammar_accept_string(grammar, text), (pattern, text)


FROM_REGEX_ERRORS = [
    (r"(?i)abc", "Group modifier flag is not supported"),
    (r"a(?s).", "Group modifier flag is not supported"),
    (r"(?P<n>a)", "Group modifier flag is not supported"),
    (r"(?<n1>a)", "Invalid named capturing group"),
    (r"a(?=b)", "Lookahead is not supported"),
    (r"(?<!a)b", "Lookbehind is not supported"),
    (r"(a)\1", "Backreference"),
    (r"\k<n>", "Backreference"),
    (r"\p{L}", "Unicode character class escape"),
    (r"\bword", "Word boundary"),
    (r"a**", "Two consecutive repetition modifiers"),
    (r"a{2}*", "Two consecutive repetition modifiers"),
    (r"a???", "Two consecutive repetition modifiers"),
    (r"a{,2}", "Invalid repetition count"),
    (r"{a}", "Invalid repetition count"),
    (r"a{1,2", "Invalid repetition count"),
    (r"[]", "Empty character class"),
    (r"[ab", "Unclosed '\\['"),
    (r"(ab", "parenthesis is not closed"),
    (r"ab)", "Unmatched '\\)'"),
    (r"\x4", "Escape sequence is not finished"),
    ("ab\\", "Escape sequence is not finished"),
    (r"\u{}xy", "Invalid Unicode escape sequence"),
    (r"\c1x", "Invalid control character"),
    (r"[z-a]", "lower bound is larger than upper bound"),
    (r"a{3,2}", "Lower bound is larger than upper bound"),
    (r"*a", "Expect element"),
]


@pytest.mark.parametrize("pattern, message", FROM_REGEX_ERRORS, ids=[p for p, _ in FROM_REGEX_ERRORS])
def test_from_regex_refuses_what_xgrammar_refuses(pattern, message):
    with pytest.raises(RegexError, match=message) as info:
        xgr.Grammar.from_regex(pattern)
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)


def test_from_regex_signature_is_xgrammars(capsys):
    import inspect

    params = inspect.signature(xgr.Grammar.from_regex).parameters
    assert list(params) == ["regex_string", "print_converted_ebnf"]
    assert params["regex_string"].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert params["print_converted_ebnf"].kind == inspect.Parameter.KEYWORD_ONLY
    assert params["print_converted_ebnf"].default is False
    assert xgr.Grammar.from_regex(regex_string="a+") == xgr.Grammar.from_regex("a+")
    xgr.Grammar.from_regex("a|b", print_converted_ebnf=True)
    assert capsys.readouterr().out == 'Converted EBNF: root ::= "a" | "b"\n'
    assert list(inspect.signature(xgr.GrammarCompiler.compile_regex).parameters) == ["self", "regex"]


@pytest.mark.xgrammar
def test_from_regex_signature_matches_xgrammar():
    import inspect

    xg = pytest.importorskip("xgrammar")

    def shape(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert shape(xgr.Grammar.from_regex) == shape(xg.Grammar.from_regex)
    assert shape(xgr.GrammarCompiler.compile_regex) == shape(xg.GrammarCompiler.compile_regex)


REWRITE_PIECES = ["a", "b", "A", "-", ".", r"\d", r"\D", r"\w", r"\W", r"\s", r"\S", "[ab]", "[^a]", "[a-c]", r"[\d-]",
                  r"[\^a]", r"\n", r"\x41", r"\x4a", r"\u0062", r"\u{63}", r"\-", r"\q", r"\0", r"\e", r"\cJ", r"\U00000041",
                  "(", ")", "(?:", "(?<n>", "|", "*", "+", "?", "*?", "{2}", "{1,2}", "{0,}", "^", "$", "(?i)", "é", "}",
                  "]", "{", r"\b", r"[\b]", r"\x4", r"[\u00e9a]", "(?P<n>", r"\.", "[.]", "\\"]
REWRITE_TEXTS = ["", "a", "b", "A", "ab", "aa", "-", "\n", "\t", "\xa0", "1", "é", "^", "x", "\x00", "\x1b", "J",
                 "U00000041", "}", "{", "]", "\u0e9a", "ba"]


@pytest.mark.xgrammar
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(REWRITE_PIECES), min_size=1, max_size=6).map("".join))
def test_from_regex_agrees_with_xgrammar_on_random_patterns(pattern):
    """Same EBNF rewrite, same refusals, same verdicts."""
    xg = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string as theirs
    from xgrammar.testing import _regex_to_ebnf as their_rewrite

    try:
        want = their_rewrite(pattern, with_rule_name=False)
    except Exception:
        with pytest.raises(RegexError):
            regex_to_ebnf(pattern)
        return
    assert regex_to_ebnf(pattern) == want
    try:
        grammar = xg.Grammar.from_regex(pattern)
    except Exception:
        with pytest.raises(RegexError):
            xgr.Grammar.from_regex(pattern)
        return
    ours = xgr.Grammar.from_regex(pattern)
    for text in REWRITE_TEXTS:
        assert _is_grammar_accept_string(ours, text) == theirs(grammar, text), (pattern, text)


@pytest.mark.xgrammar
@pytest.mark.parametrize("pattern, yes, no", FROM_REGEX_CASES, ids=[p for p, *_ in FROM_REGEX_CASES])
def test_from_regex_cases_are_xgrammars_verdicts(pattern, yes, no):
    xg = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string as theirs

    grammar = xg.Grammar.from_regex(pattern)
    assert all(theirs(grammar, t) for t in yes) and not any(theirs(grammar, t) for t in no)


@pytest.mark.xgrammar
@pytest.mark.parametrize("pattern, message", FROM_REGEX_ERRORS, ids=[p for p, _ in FROM_REGEX_ERRORS])
def test_from_regex_errors_are_xgrammars(pattern, message):
    xg = pytest.importorskip("xgrammar")
    with pytest.raises(RuntimeError):
        xg.Grammar.from_regex(pattern)


MASK_VOCAB = [b"a", b"b", b"c", b"ab", b"bc", b"abc", b"\n", b"A", b"-", b"1", b"12", b"x\n", b'"', b"\\", b"\xc3\xa9",
              b"</s>"]
MASK_WALKS = [(r"a.b", ["a\nb", "abb", "a\\b"]), (r"[\d-]+\s?", ["12-1\n", "-1"]), (r"(a|bc)*\.?", ["abcabc", "bca"]),
              (r"(\u00e9|a)+|x\n", ["x\n", "aéa"]), (r"[\u00e9a]|\x411", [""])]


@pytest.mark.xgrammar
@pytest.mark.parametrize("pattern, texts", MASK_WALKS, ids=[p for p, _ in MASK_WALKS])
def test_from_regex_masks_match_xgrammar(pattern, texts):
    pytest.importorskip("xgrammar")
    from xg2ref.oracle.engines import XG2RefEngine, XGrammarEngine

    info = xgr.TokenizerInfo(MASK_VOCAB, stop_token_ids=[len(MASK_VOCAB) - 1])
    ours = XG2RefEngine(info).compile_front_end("regex", pattern)
    theirs = XGrammarEngine.from_tokenizer_info(info).compile_front_end("regex", pattern)
    greedy_walks_agree(ours, theirs, texts, MASK_VOCAB, whole=True)


def test_unicode_general_categories():
    """`\\p{...}` / `\\P{...}` (ECMA-262 with the u flag, as JSON Schema reads patterns): a
    general category, its long name, a group of categories, or its complement."""
    import unicodedata

    from xg2ref.frontends.regex.unicode_properties import unicode_property

    samples = "aAz\u00c4\u00e9\u03c0\u0416\u4e2d1\u0663 _-.,!$+\u2028\u00a0\u0301\U0001f600"
    for name, test in [("L", lambda ch: unicodedata.category(ch).startswith("L")),
                       ("Letter", lambda ch: unicodedata.category(ch).startswith("L")),
                       ("Lu", lambda ch: unicodedata.category(ch) == "Lu"),
                       ("gc=Nd", lambda ch: unicodedata.category(ch) == "Nd"),
                       ("Punctuation", lambda ch: unicodedata.category(ch).startswith("P")),
                       ("ASCII", lambda ch: ord(ch) < 128)]:
        ranges = unicode_property(name)
        for ch in samples:
            assert any(lo <= ord(ch) <= hi for lo, hi in ranges) == test(ch), (name, ch)
        assert accepts(rf"\p{{{name}}}+", samples) == all(test(ch) for ch in samples)
        for ch in samples:
            assert accepts(rf"\P{{{name}}}", ch) == (not test(ch)), (name, ch)
            assert accepts(rf"[\p{{{name}}}0]", ch) == (test(ch) or ch == "0"), (name, ch)
