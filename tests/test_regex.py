"""Regex front end (xg2ref/grammar/regex.py) against Python's `re` as the reference."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from xg2ref.grammar.regex import RegexError, regex_to_ir
from xg2ref.oracle.recognizer import Recognizer
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
    (r"\p{L}", "Unicode property escapes"),
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
    with pytest.raises(RegexError, match=message) as info:
        xgr.Grammar.from_regex(pattern)
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


AGREE = [(r"a.b", ["axb", "a\rb"]), (r"\d+", ["12", "\u0661"]), (r"\w", ["a", "é", "_"]), (r"\s", [" ", "\u00a0", "\x0b"]),
         (r"[^a]", ["\n", "b"]), (r"a|", ["", "a"]), (r"x{2,3}?", ["xx", "xxx", "x"]), (r"[\d-]", ["-", "5"]),
         (r"(?<n>a)b", ["ab"]), (r"\u{1F600}", ["😀"]), (r"\cJ", ["\n"]), (r"^ab$", ["ab"]), (r"[^]", ["\n", "a"]),
         (r"\x41", ["A"]), (r"[\b]", ["\b"]), (r"\/", ["/"]), (r"a{0}", [""]), (r"(ab)*", ["", "abab"]), (r"[a-]", ["-"])]
# (pattern, string, xgrammar's verdict): specs/05-front-ends.md, "Regex", differences
DIFFER = [(r"a.b", "a\nb", True), (r"\s", "\u3000", False), (r"\s", "\u2028", False), (r"\s", "\ufeff", False)]


@pytest.mark.xgrammar
def test_against_xgrammar():
    xg = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string as theirs

    for pattern, texts in AGREE:
        for text in texts:
            assert _is_grammar_accept_string(xgr.Grammar.from_regex(pattern), text) == theirs(
                xg.Grammar.from_regex(pattern), text), (pattern, text)
    for pattern, text, verdict in DIFFER:
        assert theirs(xg.Grammar.from_regex(pattern), text) == verdict
        assert _is_grammar_accept_string(xgr.Grammar.from_regex(pattern), text) != verdict
    for pattern in (r"{a}", r"[]"):  # xgrammar refuses; Python and ECMAScript take them
        with pytest.raises(Exception):
            xg.Grammar.from_regex(pattern)
        xgr.Grammar.from_regex(pattern)


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
    from xg2ref.grammar.regex import regex_to_expr

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
    from xg2ref.grammar.regex import regex_to_expr

    recognizer = Recognizer(GrammarIR((Rule("root", regex_to_expr(pattern, search=search)),), root="root"))
    python = re.compile(pattern.replace("$", r"\Z"), re.ASCII)  # ECMAScript's `$` is Python's `\Z`
    for text in texts:
        want = bool(python.search(text) if search else python.fullmatch(text))
        assert recognizer.is_sentence(text.encode()) == want, (pattern, search, text)
