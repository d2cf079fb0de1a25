"""llguidance's dialect of Lark (xg2ref/frontends/lark/dialect.py, parametric.py): parametric
rules expand to exactly the language their definition gives, checked string by string against
a direct reading of the parameters; `%llguidance` options, `\\x` escapes, `substring_words`,
`stop=""` and scoped regex flags; and xgrammar's dialect still refuses each of them."""

import itertools

import pytest

import xg2ref as xgr
from xg2ref.exceptions import GrammarLimitError
from xg2ref.frontends.lark.dialect import chunk_words, lark_dialect
from xg2ref.frontends.lark.reader import LarkError

VOCAB = ["<eos>"] + [chr(c) for c in range(32, 127)] + ["\n", "\t"]
INFO = xgr.TokenizerInfo(VOCAB, stop_token_ids=[0])


def language(grammar: str, alphabet: str, longest: int, dialect: str = "llguidance") -> set:
    """The strings over `alphabet` up to `longest` characters the grammar matches whole."""
    compiled = xgr.GrammarCompiler(INFO).compile_grammar(xgr.Grammar.from_lark(grammar, dialect=dialect))
    out = set()
    for n in range(longest + 1):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            m = xgr.GrammarMatcher(compiled)
            if m.accept_string(text) and m.parser.is_completed():
                out.add(text)
    return out


def strings(alphabet: str, longest: int, keep) -> set:
    return {"".join(c) for n in range(longest + 1) for c in itertools.product(alphabet, repeat=n) if keep("".join(c))}


# ---- parametric rules: the examples of llguidance's docs/parametric.md, and their meaning -----------

PERMUTATION = """
start    :  perm::0x0
perm::_  :  ""                       %if is_ones([0:3])
         |  "a" perm::set_bit(0)     %if bit_clear(0)
         |  "b" perm::set_bit(1)     %if bit_clear(1)
         |  "c" perm::set_bit(2)     %if bit_clear(2)
"""


@pytest.mark.parametrize("grammar, alphabet, longest, keep", [
    (PERMUTATION, "abc", 5, lambda s: sorted(s) == ["a", "b", "c"]),
    # each of a, b, c at least once, in any order and number
    (PERMUTATION.replace("%if bit_clear(0)", "").replace("%if bit_clear(1)", "").replace("%if bit_clear(2)", ""),
     "abc", 5, lambda s: set(s) == {"a", "b", "c"}),
    # b* a* of fewer than 5 characters in all: one counter through two rules
    ("""start : aa::0
        aa::_ : "b" aa::incr(_) %if lt(_, 4)
              | bb::_
        bb::_ : "a" bb::incr(_) %if lt(_, 4)
              | ""
     """, "ab", 6, lambda s: len(s) <= 4 and s == "b" * s.count("b") + "a" * s.count("a")),
    # a at most 2, b at most 3, c at most 1, in any order: three counters in one parameter
    ("""start  : lst::0x0
        lst::_ : "a" lst::incr([0:2])  %if lt([0:2], 2)
               | "b" lst::incr([2:4])  %if lt([2:4], 3)
               | "c" lst::incr([4:6])  %if lt([4:6], 1)
               | ""
     """, "abc", 7, lambda s: s.count("a") <= 2 and s.count("b") <= 3 and s.count("c") <= 1),
    # one to three distinct letters of abcd, each at most once
    ("""start    :  pick::0x0
        pick::_  :  ""                       %if bit_count_ge(_, 1)
                 |  "a" pick::set_bit(0)     %if and(bit_clear(0), bit_count_lt(_, 3))
                 |  "b" pick::set_bit(1)     %if and(bit_clear(1), bit_count_lt(_, 3))
                 |  "c" pick::set_bit(2)     %if and(bit_clear(2), bit_count_lt(_, 3))
                 |  "d" pick::set_bit(3)     %if and(bit_clear(3), bit_count_lt(_, 3))
     """, "abcd", 5, lambda s: 1 <= len(s) <= 3 and len(set(s)) == len(s)),
    # decr, clear_bit, bit_or, bit_and, eq, ne, or, not: a walk on a 2-bit counter and a flag
    ("""start : w::0x2
        w::_  : "u" w::incr([0:2])
              | "d" w::decr([0:2])
              | "f" w::bit_or(0x4)      %if not(bit_set(2))
              | "g" w::clear_bit(2)     %if or(eq([0:2], 3), ne(_, 0x6))
              | "z" w::bit_and(0x4)
              | ""                      %if and(eq([0:2], 0), is_zeros([2:64]))
     """, "udfgz", 4, None),
])
def test_a_parametric_grammar_matches_the_strings_its_parameters_allow(grammar, alphabet, longest, keep):
    if keep is None:  # the walk: read the parameter directly
        def keep(s):
            p = 2
            for c in s:
                if c == "u":
                    p = p if p & 3 == 3 else p + 1
                elif c == "d":
                    p = p if p & 3 == 0 else p - 1
                elif c == "f":
                    if p & 4:
                        return False
                    p |= 4
                elif c == "g":
                    if not (p & 3 == 3 or p != 6):
                        return False
                    p &= ~4
                else:
                    p &= 4
            return p == 0
    assert language(grammar, alphabet, longest) == strings(alphabet, longest, keep)


def test_parametric_rules_past_the_instance_bound_raise_a_limit_error_naming_the_rule():
    with pytest.raises(GrammarLimitError, match="'count'"):
        xgr.Grammar.from_lark('start: count::0\ncount::_ : "a" count::incr(_) | ""', dialect="llguidance")


@pytest.mark.parametrize("grammar, message", [
    ('start: p::0\np::_ : "a"', "doesn't use its parameter"),
    ('start: p\np::_ : "a" p::incr(_) | ""', r"referenced as p::<parameter>"),
    ('start: q::0\nq: "a"', "'q' is not parametric"),
    ('start: "a" x::incr(_)\nx::_ : "b" %if bit_set(0) | ""', "requires parameters"),
    ('start: "a" %if true', "not parametric"),
    ('start::_ : "a" start::incr(_)', "start rule cannot be parametric"),
    ('start: p::0\np::_[stop="x"] : "a" p::incr(_) | ""', "stop is not supported on parametric rules"),
    ('start: p::0\np::_ : "a" p::incr([3:2])', "must be > start bit index"),
    ('start: p::0\np::_ : "a" p::set_bit(64) | ""', "must be <= 63"),
    ('start: p::0\np::_ : "a" p::frob(1) | ""', "unexpected parameter expression 'frob'"),
    ('start: B\nB: "b" %if true', "not supported in terminals"),
])
def test_malformed_parametric_rules_are_refused_with_the_reason(grammar, message):
    with pytest.raises(LarkError, match=message):
        xgr.Grammar.from_lark(grammar, dialect="llguidance")


# ---- the other llguidance extensions ------------------------------------------------------------

def test_hex_escapes_are_code_points_and_an_escaped_backslash_is_not_one():
    assert language(r'start: "\x41\x42"', "AB", 3) == {"AB"}
    assert language(r'start: "\\x41"', "\\x41A", 4) == {"\\x41"}
    with pytest.raises(LarkError, match="two hex digits"):
        xgr.Grammar.from_lark(r'start: "\xZZ"', dialect="llguidance")


def test_the_directive_picks_the_dialect_and_its_options_change_the_language():
    assert lark_dialect('// a comment\n%llguidance {}\nstart: "a"') == "llguidance"
    assert lark_dialect('start: "a"\n%llguidance {}') == "xgrammar"
    assert language('%llguidance {}\nstart: "\\x41"', "A", 2, dialect=None) == {"A"}
    once = '%llguidance { "ignore_once": true }\n%ignore /[ ]{1,2}/\nstart: "A" "!"'

    def spaced(most):  # "A", spaces, "!", spaces: the skip follows each terminal
        return lambda s: s[:1] == "A" and "!" in s and s[1:].strip(" ") == "!" and \
            max(len(s[1:s.index("!")]), len(s) - s.index("!") - 1) <= most

    assert language(once, "A !", 5, dialect=None) == strings("A !", 5, spaced(2))
    assert language(once.replace('"ignore_once": true', '"no_forcing": true'), "A !", 5, dialect=None) == \
        strings("A !", 5, spaced(5))
    with pytest.raises(LarkError, match="allow_invalid_utf8"):
        xgr.Grammar.from_lark('%llguidance {"allow_invalid_utf8": true}\nstart: "a"')


def test_substring_words_are_runs_of_whole_chunks():
    assert chunk_words("foo bar. baz") == ["foo", " ", "bar", ".", " ", "baz"]
    got = language('start: %regex { "substring_words": "ab cd." }', "abcd .", 6)
    want = {"", "ab", " ", "cd", ".", "ab ", " cd", "cd.", "ab cd", " cd.", "ab cd."}
    assert got == want


def test_an_end_of_output_stop_is_the_rule_itself_where_nothing_follows_it():
    assert language('start: foo\nfoo[capture, stop=""]: /[ab]*/', "ab", 3) == strings("ab", 3, lambda s: True)
    with pytest.raises(LarkError, match="nothing can follow"):
        xgr.Grammar.from_lark('start: foo "x"\nfoo[stop=""]: /[ab]*/', dialect="llguidance")


def test_scoped_regex_flags_follow_rusts_syntax():
    assert language(r'start: /a(?s:.)b/', "a\nb", 3) == {"aab", "abb", "a\nb"}
    assert language(r'start: /(?i:ab)c/', "aAbBc", 3) == {"abc", "Abc", "aBc", "ABc"}
    assert language(r'start: /a.b/', "a\nb", 3) == {"aab", "abb"}


@pytest.mark.parametrize("grammar, message", [
    ('start: p::0\np::_ : "a" p::incr(_) | ""', "parametric grammar is not supported"),
    (r'start: "\x41"', "invalid string literal"),
    ('start: %regex { "substring_words": "a b" }', "substring_words is not supported yet"),
    ('start: foo\nfoo[stop=""]: /a*/', "stop must not be empty"),
    ('start: /(?s:.)/', "not supported"),
    ('start: "a"\n%llguidance {}', "directive %llguidance is not supported"),
])
def test_xgrammars_dialect_refuses_what_only_llguidance_reads(grammar, message):
    with pytest.raises(LarkError, match=message):
        xgr.Grammar.from_lark(grammar, dialect="xgrammar")
    if "%llguidance" not in grammar:
        with pytest.raises(LarkError, match=message):
            xgr.Grammar.from_lark(grammar)  # (the default reading of a text without the directive)
