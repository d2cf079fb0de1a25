"""The Lark front end (`Grammar.from_lark`, `GrammarCompiler.compile_lark`): which grammars are
read, what they accept and their token masks, against xgrammar 0.2.8; the lazy rules'
shortest-match automaton against brute force; errors, named grammars and the compile cache."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2ref as xgr
from hypothesis_budget import examples
from xg2ref.exceptions import EBNFError
from xg2ref.grammar.grammar import ir_signature
from xg2ref.frontends.lark.converter import lark_to_ir
from xg2ref.testing import _is_grammar_accept_string

ANY = r"/(.|\n)*/"
NAMED = {"g": 'start: "a" "b"?', "loop": "start: @loop", "bad": "start: x"}

# (Lark text, accepted strings, rejected strings); the verdicts are xgrammar 0.2.8's
# (test_verdicts_are_xgrammars checks that).
CASES = [
    # rules, terminals, literals
    ('start: "a" b\nb: "b"+', ["ab", "abbb"], ["a", "b", "aab", "ab "]),
    ('start: A B\nA: "a"\nB: /b+/', ["ab", "abbb"], ["a", "ba"]),
    ('start: A\nA: B "c"\nB: "b"', ["bc"], ["b", "c"]),
    ('?start: x\n!x: "a" | "b" -> alias\n', ["a", "b"], ["ab", ""]),
    ('start: x\nx: "a"\n    | "b"\n\n    | "c"', ["a", "b", "c"], ["ab"]),
    ('start: "a\\"b" "\\\\" "\\u00e9" "\\ud83d\\ude00" "\\/"', ['a"b\\é😀/'], ["ab"]),
    ('start: "a\\u0000b"', ["a\x00b"], ["a", "ab"]),
    # regexes as xgrammar reads them: with `i`, by its Regex intrinsic's automaton builder
    # (lookaheads and anchors ignored, ASCII \s); without, as Grammar.from_regex (\s with U+00A0)
    ('start: /a(?=b)c/i', ["ac", "AC"], ["abc", "a"]),
    ('start: /a^b$c/i', ["abc", "ABC"], ["ac"]),
    ('start: /a^b$c/', ["abc"], ["ac", "ABC"]),
    ('start: /a\\sb/i', ["a b", "a\nb"], ["a\u00a0b", "ab"]),
    ('start: /a\\sb/', ["a b", "a\nb"], ["ab"]),
    ('start: "ab"i "c"', ["abc", "ABc", "aBc"], ["abC", "ab"]),
    ('start: "a".."c" "-" "0".."9"', ["a-0", "c-9"], ["d-0", "a-a"]),
    ('start: x | y\nx: "a" x | ""\ny: "b"', ["", "a", "aaa", "b"], ["ab", "ba"]),
    ('start: x-y _z\nx-y: "a"\n_z: "z"', ["az"], ["a"]),
    ('start: root true\nroot: "r"\ntrue: "t"', ["rt"], ["r"]),
    ('start:\n', [""], ["a"]),
    ('start: "a" // a comment\n# another\n  | "b"', ["a", "b"], [""]),
    ('start: "a"\r\n  | "b"\r\n', ["a", "b"], ["ab"]),
    # repetition
    ('start: "a"~3', ["aaa"], ["aa", "aaaa"]),
    ('start: "a" ~ 2..3', ["aa", "aaa"], ["a", "aaaa"]),
    ('start: "a"{2} "b"{1,2} "c"{,1} "d"{2,}', ["aabdd", "aabbcddd"], ["abdd", "aabbbdd", "aabccdd", "aabd"]),
    ('start: ["a"] ("b" | "c")* "d"+', ["d", "abcbdd"], ["a", "ad b"]),
    ('start: ("a" | "b"?)*', ["", "abba"], ["c"]),
    # regexes
    ('start: /[0-9]+(\\.[0-9]+)?/', ["1", "12.5"], ["1.", ".5", ""]),
    ('start: /a.b/', ["axb", "a b"], ["a\nb"]),
    ('start: /a.b/s', ["axb", "a\nb"], ["ab"]),
    ('start: /ab?/i', ["a", "AB", "aB"], ["b"]),
    ('start: /a.b/is', ["AXB", "a\nb"], ["ab"]),
    ('start: /[a-c]+/i /x/u', ["aBcx", "Cx"], ["dx", "aX"]),
    ('start: /\\d\\w\\s/', ["1a ", "9_\t"], ["a1 ", "11"]),
    ('start: /[^"]*/ "\\""', ['abc"', '"'], ['a"b"']),
    ('start: //\n', [""], ["/"]),
    ('start: /a\\/b/', ["a/b"], ["ab"]),
    # %ignore and %import
    ('start: "a" "b"\n%ignore " "', ["ab", "a b", "a  b  "], [" ab", "a\tb"]),
    ('start: "a" "b"\n%ignore " " | "\\t"\n%ignore "#"', ["a \t#b ", "ab#"], ["#ab"]),
    ('start: "a" "b"\n%ignore " "\n%grammar_options {"allow_initial_skip": true}', [" ab", "  a b "], ["a\nb"]),
    ('start: x y\nx: "x"\ny: A\nA: "y" "z"\n%ignore " "', ["xyz", "x yz ", "xyz  "], ["x y z", "xy z"]),
    ('start: pair ("," pair)*\npair: CNAME "=" INT\n%import common.CNAME\n%import common.INT\n%import common.WS\n'
     '%ignore WS', ["a=1", "a = 1 , b_2=30\n"], ["a=", "1=1", " a=1"]),
    ('start: N N\n%import common (NUMBER, WS_INLINE) \n%import common.SIGNED_NUMBER -> N\n%ignore WS_INLINE',
     ["1 -2.5", "+1e5 .5"], ["1", "1 2 3", "1e 2"]),
    ('start: ESCAPED_STRING\n%import common.ESCAPED_STRING', ['"a"', '"a\\"b"', '""', '"a\nb"'], ['"a', '"\\"', '"a"b"']),
    ('start: C_COMMENT\n%import common.C_COMMENT', ["/**/", "/* a * b */", "/***/"], ["/* */ */", "/*/"]),
    ('start: x*\nx: "a" | "b"\n%ignore /[ \\t]+/', ["", "a b\t a"], [" a"]),
    # %json, %regex, %lark, named grammars
    ('start: "x=" %json {"type": "integer"} ";"', ["x=1;", "x=20;"], ["x=1.5;", "x=;", "x=01;"]),
    ('start: %json {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}',
     ['{"a": true}', '{ "a" :false }'], ['{}', '{"a": 1}', '{"a": true, "b": 1}']),
    ('start: %json {"type": "string"} "!"\n%ignore " "', ['"a"!', '"a" ! '], ['"a" "b"!']),
    ('start: %regex {"substring_chunks": ["ab", "cd", "ef"]}', ["", "ab", "abcd", "cdef", "ef"], ["a", "abef", "cdab"]),
    ('start: "<" %regex {"substring_chars": "xyz"} ">"', ["<>", "<xyz>", "<y>", "<yz>"], ["<xz>", "<zy>"]),
    ('start: %lark { start: "a" "b"\n%ignore " " } "c"', ["abc", "a b c", "a bc"], ["ab c ", " abc"]),
    ('start: %lark {\nstart: x\nx: "q"\n} x\nx: "r"', ["qr"], ["qq", "rr"]),
    ('start: @g @g "!"', ["aa!", "abab!", "aab!"], ["ab!", "a!", "abb!"]),
    # rule attributes
    ('start: x\nx[max_tokens=5, max_chars=9, capture="c"]: /[a-z]+/', ["a", "abc"], ["", "A"]),
    ('start: x*\nx[capture]: "a" | "b"', ["", "abab"], ["c"]),
    # a stop rule whose character budget runs out ends without its stop string
    ('start: x "!"*\nx[stop="e", max_chars=2]: /[a-d]*/', ["ab", "ab!", "ae", "ae!"], ["", "abe", "abc", "aeb"]),
    ('start: x x\nx[temperature=0.5]: "a" "b"\n%ignore " "', ["abab", "ab ab "], ["a bab"]),
    ('start[temperature=1]: "a" "b"\n%ignore " "', ["ab", "ab  "], ["a b", " ab"]),
    # a temperature rule's body is a terminal or a subgrammar alone
    ('start: "<" x ">"\nx[temperature=0.5]: %json {"enum": ["a", 12]}', ['<"a">', "<12>"], ["<1>", "<>"]),
    ('start: x x\nx[temperature=0.5]: (%lark {\nstart: "a" y\ny: "b"\n})\n%ignore " "', ["abab", "ab ab "],
     ["a bab"]),
    ('start: x\nx[lazy, temperature=1]: "a" | "ab"', ["a", "ab"], ["b"]),
    ('start: x "c"\nx[lazy]: "a" | "ab"', ["ac"], ["abc"]),
    ('start: x "b"\nx[lazy]: "a"*', ["b"], ["ab", "aab"]),
    ('start: x "b"\nx[lazy]: "a"* "c"', ["cb", "aacb"], ["ccb", "b"]),
    ('start: x\nx[lazy]: A "e"\nA: "a"+', ["ae", "aaae"], ["aee", "e"]),
    ('start: x "!"\nx[lazy]: /[a-z]*/ "en"', ["xen!", "en!", "een!"], ["enen!", "enn!"]),
    ('start[lazy]: "a" | "ab"\n%ignore " "', ["a"], ["ab", "a "]),
    ('start[lazy]: "a" "b"\n%ignore " "\n%grammar_options {"allow_initial_skip": true}', ["ab", "  ab"], ["ab ", "a b"]),
    ('start: x "!"\nx[stop="e"]: /[a-z]*/', ["abe!", "e!"], ["ab!", "abee!", "abebe!"]),
    ('start: x\nx[suffix="ab"]: /[a-z]*/', ["ab", "xab", "aab"], ["abab", "xaby"]),
    ('start: x\nx[stop=/e+/]: /[a-d]*/', ["abe", "e"], ["abee", "ab"]),
    ('start: x\nx[stop=E, stop_capture="s"]: "a"+\nE: "e"i', ["ae", "aaE"], ["aee", "a"]),
    ('start: x\nx[stop="e"i]: "a" | "b"', ["ae", "bE"], ["abe", "a"]),
    ('start: x "c"\nx[stop="e"]: "a" "b"\n%ignore " "', ["abec", "abe c "], ["ab ec", "abc"]),
    # lazy any text: free text up to the literal, which may also be left out (xgrammar's reading)
    ('start: x "!"\nx[stop="e"]: ' + ANY, ["abe!", "ab!", "!", "e!"], ["ab", "abe", "ae!e!"]),
    ('start: x "!"\nx[lazy]: ' + ANY + ' "end"', ["abend!", "ab!", "a\nb!"], ["endend!", "ab"]),
    ('start: x "Q"\nx[lazy]: /[\\s\\S]*/ "e"\n%ignore " "', ["abeQ", "abe Q ", "a Q"], ["abe Q e"]),
    # the dispatching start rule (structural tool calls)
    ('start: tool* text\ntool: head "{" "}"\nhead[lazy]: ' + ANY + ' "<call>"\ntext: ' + ANY,
     ["", "abc", "a<call>{}b", "<call>{}<call>{}", "<call"], ["<call>", "<call>x", "a<call>{}b<call>"]),
    ('start: (t1 | t2)* TEXT\nt1: head "1"\nt2: head2 "2"\nhead[stop="<a>"]: ' + ANY
     + '\nhead2[lazy]: /(?s:.*)<b>/\nTEXT: /[\\s\\S]*/', ["x<a>1y<b>2z", "<b>2<a>1"], ["<a>2", "<b>1", "<a>"]),
    ('start: tool* text\ntool: head x\nx: "{" "}" | "[" "]"\nhead[suffix="@"]: ' + ANY + '\ntext: ' + ANY
     + '\n%ignore " "', ["a@{ } b", "@[]"], ["@{ ]", "@ {}"]),
]

# (Lark text, words of xg2ref's message); xgrammar 0.2.8 refuses each too
REJECTED = [
    ('foo: "a"', "no start rule"),
    ('START: "a"', "no start rule"),
    ('start: "a"\nstart: "b"', "duplicate"),
    ('start: A\nA: "a"\n%import common.INT -> A', "duplicate"),
    ('start: undefined', "unknown name 'undefined'"),
    ('start: A\nA: b\nb: "b"', "cannot reference rule 'b'"),
    ('start: A\nA: A "a" | "a"', "circular reference"),
    ('start: A\nA: B\nB: A', "circular reference"),
    ('start: A\nA.2: "a"', "priorities"),
    ('start.2: "a"', "priorities"),
    ('start: x{"a"}\nx{p}: p', "templates"),
    ('start: x\nx::y: "a"', "parametric"),
    ('start: /a/ & /b/', "intersection"),
    ('start: ~"a"', "complement"),
    ('start: x\nx: "a" %if y', "%if"),
    ('%declare FOO\nstart: "a"', "%declare is not supported"),
    ('%override start: "b"\nstart: "a"', "%override is not supported"),
    ('start: "a" %extend', "%extend is not supported"),
    ("start: 'a'", "unexpected character"),
    ('start: "a"; x: "b"', "unexpected character ';'"),
    ('!?start: "a"', "unexpected '!'"),
    ('start: "a" - "b"', "unexpected '-'"),
    ('start: "a\n"', "unterminated string"),
    ('start: /a', "unterminated regular expression"),
    ('start: <|end', "unterminated special token"),
    ('start: <a b>', "invalid special token"),
    ('start: @', "empty grammar reference"),
    ('start: "\\x41"', "invalid string literal"),
    ('start: "a\tb"', "invalid string literal"),
    ('start: "\\ud83d"', "invalid string literal"),
    ('start:\n  "a"', "expected rule or terminal name"),
    ('start: ("a"\n "b")', "expected ')'"),
    ('start: "a" -> x "b"', "expected end of grammar item"),
    ('start: "a" ->', "expected alias name"),
    ('start: "a"??', "expected grammar expression"),
    ('start: "a"*+', "expected grammar expression"),
    ('start: "a" 1', "expected grammar expression"),
    ('start: "a"{3,2}', "repetition end"),
    ('start: "a"~3..2', "repetition end"),
    ('start: "a"{-1}', "repetition count"),
    ('start: "a"{99999999999}', "repetition count"),
    ('start: "a"{1.5}', "repetition count"),
    ('start: ' + "(" * 201 + '"a"' + ")" * 201, "nested deeper than 200"),
    ('start: "ab".."c"', "one character"),
    ('start: "c".."a"', "must not exceed"),
    ('start: "a".."c"i', "flags are not allowed"),
    ('start: "é"i', "ASCII characters only"),
    ('start: /ab/x', "flag 'x' is not supported"),
    ('start: /ab/m', "flag 'm' is not supported"),
    ('start: /ab/l', "flag 'l' is not supported"),
    ('start: /(a)\\1/', "failed to compile regular expression"),
    ('start: /(?=a)a/', "Lookahead is not supported"),
    ('start: /(?<=a)a/i', "Lookbehind assertion is not supported"),
    ('start: /a\\b/i', "Word boundary assertion"),
    ('start: INT\n%import common.FOO', "unknown common import 'common.FOO'"),
    ('start: INT\n%import lark.INT', "unknown common import 'lark.INT'"),
    ('start: x\n%import common (INT, x)', "unknown common import 'common.x'"),
    ('start: INT\n%import .common.INT', "expected import path"),
    ('start: "a"\n%ignore x\nx: " "', "cannot reference rule 'x'"),
    ('start: "x"\n%ignore <[1]>', "special tokens cannot be used in terminals"),
    ('start: "x"\n%ignore %json {}', "%json cannot be used in terminals"),
    ('start: A\nA: %lark { start: "a" }', "nested %lark cannot be used in terminals"),
    ('start: A\nA: @g', "named grammars cannot be used in terminals"),
    ('start: "a"\n%grammar_options {"allow_initial_skip": 1}', "must be a boolean"),
    ('start: "a"\n%grammar_options {"no_forcing": true}', "'no_forcing' is not supported"),
    ('start: "a"\n%grammar_options {"foo": false}', "unknown %grammar_options option 'foo'"),
    ('start: "a"\n%grammar_options [1]', "must be an object"),
    ('start: %json { bad', "failed to parse JSON value after %json"),
    ('start: %json 5', "inline JSON schema"),
    ('start: %regex {}', "no fields set on %regex"),
    ('start: %regex {"foo": 1}', "unknown field 'foo'"),
    ('start: %regex {"substring_chunks": ["a"], "substring_chars": "b"}', "only one field"),
    ('start: %regex {"substring_words": "a b"}', "substring_words is not supported"),
    ('start: %regex {"substring_chunks": "ab"}', "array of strings"),
    ('start: %regex [1]', "must be an object"),
    ('start: %lark { foo: "a" }', "failed to compile nested Lark grammar"),
    ('start: %lark {\nstart: "a" x\n}\nx: "y"', "unknown name 'x'"),
    ('start: @nowhere', "unknown named grammar '@nowhere'"),
    ('start: @loop', "circular named grammar reference: @loop -> @loop"),
    ('start: @bad', "failed to compile named grammar '@bad'"),
    ('start: <|end|>', "requires tokenizer_info"),
    ('start: <[*]>', "requires tokenizer_info"),
    ('start: <[^*]>', "negated wildcard"),
    ('start: <[1,*]>', "cannot be mixed"),
    ('start: <[1-2-3]>', "invalid numeric special-token range"),
    ('start: <[3-1]>', "invalid numeric special-token range"),
    ('start: <[a]>', "invalid numeric special-token range"),
    ('start: <[0-2000000]>', "too large"),
    ('start: <[,]>', "empty numeric special-token range"),
    ('start: x\nx[foo]: "a"', "rule attribute 'foo' is not supported"),
    ('start: x\nx[lazy=true]: "a"', "rule attribute 'lazy' is not supported"),
    ('start: x\nX[lazy]: "a"', "only supported on rules"),
    ('start: x\nx[max_tokens=0]: "a"', "must be positive"),
    ('start: x\nx[max_tokens=1000001]: "a"', "too large"),
    ('start: x\nx[max_tokens=3, max_tokens=4]: "a"', "more than once"),
    ('start: x\nx[max_chars=2147483648]: "a"', "repetition count"),
    ('start: x\nx[capture=""]: "a"', "must not be empty"),
    ('start: x\nx[capture="f o"]: "a"', "must only contain"),
    ('start: x\nx[capture="a"i]: "a"', "case-insensitive flags are not supported on capture"),
    ('start: x\nx[stop=""]: "a"', "stop must not be empty"),
    ('start: x\nx[stop=e]: "a"', "stop terminal name must be uppercase"),
    ('start: x\nx[suffix=5]: "a"', "expected string literal, regular expression, or uppercase terminal name"),
    ('start: x\nx[stop="e", suffix="f"]: "a"', "cannot be combined"),
    ('start: x\nx[stop_capture="s"]: "a"', "stop_capture requires stop or suffix"),
    ('start: x\nx[stop="e"]: /a/i', "flag 'i' is not supported with suffix or stop"),
    ('start: x\nx[stop=E]: "a"\nE: /e/i', "flag 'i' is not supported with suffix or stop"),
    ('start: x\nx[stop="e"]: %regex {"substring_chars": "ab"}', "structured %regex"),
    ('start: x\nx[stop="e"]: y\ny: "a"', "cannot reference rule 'y'"),
    ('start: x\nx[lazy]: %json {"type": "integer"}', "%json cannot be used in terminals"),
    ('start: x\nx[lazy]: ' + ANY[:-1] + 'END/', "lazy regex suffix"),
    ('start: x "{"\nx[lazy]: ' + ANY + ' <[^1]>', "cannot be negated"),
    ('start: x\nx[temperature=-1]: "a"', "finite non-negative"),
    ('start: x\nx[temperature=1e400]: "a"', "finite non-negative"),
    ('start: x\nx[temperature="a"]: "a"', "expected number"),
    ('start: x\nx[temperature=0]: y\ny: "b"', "; temperature is only supported on terminals and subgrammars"),
    ('start: x\nx[temperature=0]: %json {"type": "integer"} "a"', "; temperature is only supported on terminals"),
    ('start: tool* text\ntool[max_tokens=5]: head "{" "}"\nhead[lazy]: ' + ANY + ' "<c>"\ntext: ' + ANY,
     "max_tokens is not supported on rules consumed by dynamic dispatch"),
    ('start[max_tokens=5]: tool* text\ntool: head "{" "}"\nhead[lazy]: ' + ANY + ' "<c>"\ntext: ' + ANY,
     "max_tokens is not supported on a dynamic dispatch start rule"),
    ('start: (t1 | t2)* text\nt1: head "1"\nt2: ' + ANY + ' <[3]> "2"\nhead[lazy]: ' + ANY + ' "<c>"\ntext: ' + ANY,
     "cannot mix string and token triggers"),
]

# Where xg2ref parts from xgrammar 0.2.8 (specs/05-front-ends.md, "Lark"). Grammars xgrammar cannot
# read or compile, with xg2ref's verdicts (text, accepted, rejected):
UNREAD_BY_XGRAMMAR = [
    ('start: x\nx[lazy]: "a" "b"?', ["a"], ["ab"]),  # xgrammar cannot flatten the bounded repetition
    ('start: x\nx[lazy]: /a/i "b"', ["ab", "Ab"], ["a"]),  # ... nor a case-insensitive regex
    ('start: %json false', [], ["", "1", "{}"]),  # xgrammar refuses the schema that validates nothing
]
# Strings whose verdict differs (text, string, xg2ref's verdict; xgrammar's is the other):
OTHER_VERDICTS = [
    # a lazy occurrence starting where another occurrence of the same lazy rule ends
    ('start: x? z\nx: "a"\nz[lazy]: "a"', "aa", True),
    ('start: x* z\nx: "a" "e"\nz[stop="e"]: "a"', "aeae", True),
]


@pytest.mark.xgrammar
@pytest.mark.parametrize("flags, takes_nbsp", [("i", False), ("", True), ("s", True)])
def test_backslash_s_is_ascii_only_behind_the_i_flag_as_in_xgrammar(xgrammar, flags, takes_nbsp):
    """With `i` xgrammar reads a Lark regex with its Regex intrinsic's builder (`\\s` ASCII), without
    it as Grammar.from_regex (`\\s` holds U+00A0); both take U+000B (strings the test vocabulary
    cannot spell, so verdicts only)."""
    text = f"start: /a\\sb/{flags}"
    for string, want in (("a\u00a0b", takes_nbsp), ("a\x0bb", True), ("a\u2003b", False)):
        assert xgr.testing._is_grammar_accept_string(xgr.Grammar.from_lark(text), string) is want, string
        assert xgrammar.testing._is_grammar_accept_string(xgrammar.Grammar.from_lark(text), string) is want, string


@pytest.mark.parametrize("text, good, bad", CASES, ids=[c[0][:50] for c in CASES])
def test_grammars_accept_what_they_should(text, good, bad):
    grammar = xgr.Grammar.from_lark(text, named_grammars=NAMED)
    for s in good:
        assert _is_grammar_accept_string(grammar, s), (str(grammar), s)
    for s in bad:
        assert not _is_grammar_accept_string(grammar, s), (str(grammar), s)


@pytest.mark.parametrize("text, words", REJECTED, ids=[c[0][:50] for c in REJECTED])
def test_refused_grammars_raise_lark_errors(text, words):
    with pytest.raises(EBNFError, match=re.escape(words)) as err:
        xgr.Grammar.from_lark(text, named_grammars=NAMED)
    assert isinstance(err.value, RuntimeError) and str(err.value).startswith("Lark error")


@pytest.mark.parametrize("text, good, bad", UNREAD_BY_XGRAMMAR, ids=[c[0][:50] for c in UNREAD_BY_XGRAMMAR])
def test_grammars_xgrammar_cannot_read(text, good, bad):
    grammar = xgr.Grammar.from_lark(text)
    assert [_is_grammar_accept_string(grammar, s) for s in good + bad] == [True] * len(good) + [False] * len(bad)


@pytest.mark.parametrize("text, string, verdict", OTHER_VERDICTS)
def test_verdicts_that_differ_from_xgrammars(text, string, verdict):
    assert _is_grammar_accept_string(xgr.Grammar.from_lark(text), string) == verdict


@pytest.fixture(scope="module")
def xgrammar():
    return pytest.importorskip("xgrammar")


@pytest.mark.xgrammar
@pytest.mark.parametrize("text, good, bad", CASES, ids=[c[0][:50] for c in CASES])
def test_verdicts_are_xgrammars(xgrammar, text, good, bad):
    grammar = xgrammar.Grammar.from_lark(text, named_grammars=NAMED)
    for s in good:
        assert xgrammar.testing._is_grammar_accept_string(grammar, s), s
    for s in bad:
        assert not xgrammar.testing._is_grammar_accept_string(grammar, s), s


@pytest.mark.xgrammar
@pytest.mark.parametrize("text", [t for t, _ in REJECTED], ids=[c[0][:50] for c in REJECTED])
def test_xgrammar_refuses_them_too(xgrammar, text):
    with pytest.raises(RuntimeError):
        xgrammar.Grammar.from_lark(text, named_grammars=NAMED)


@pytest.mark.xgrammar
@pytest.mark.parametrize("text", [t for t, *_ in UNREAD_BY_XGRAMMAR])
def test_xgrammar_cannot_read_them(xgrammar, text):
    info = xgrammar.TokenizerInfo(["a"])
    with pytest.raises(RuntimeError):
        xgrammar.GrammarCompiler(info).compile_lark(text)


@pytest.mark.xgrammar
@pytest.mark.parametrize("text, string, verdict", OTHER_VERDICTS)
def test_xgrammar_gives_the_other_verdict(xgrammar, text, string, verdict):
    assert xgrammar.testing._is_grammar_accept_string(xgrammar.Grammar.from_lark(text), string) != verdict


PIECES = ["start", ":", " ", "\n", '"a"', '"b"i', '""', "x", "X", "|", "(", ")", "[", "]", "*", "+", "?", "~ 2", "..3",
          "{1,2}", "{,2}", "->", "al", "%ignore", '" "', "%import common.INT", "%import common (WS, INT)", "\n| ",
          "[lazy]", "[max_tokens=2]", '[stop="e"]', "[capture]", "[temperature=1]", ",", "=", '"a".."c"', "<[1]>", "@g",
          '%json {"type":"integer"}', "#c", "//c", "%lark {", "}", "{", "_X", "!", "?x", "%declare", ".2", "&", "~", "1",
          "-", "start:", "x:", "X:", "INT", "\r\n", "\t", '%grammar_options {"allow_initial_skip": true}',
          '%regex {"substring_chars": "ab"}']


def reads(module, text: str) -> bool:
    try:
        module.Grammar.from_lark(text, named_grammars=NAMED)
        return True
    except RuntimeError:  # xg2ref's LarkError is one too
        return False


@pytest.mark.xgrammar
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.booleans(), st.lists(st.sampled_from(PIECES), min_size=1, max_size=14))
def test_stitched_texts_are_read_as_xgrammar_reads_them(xgrammar, prefix, pieces):
    text = ("start: " if prefix else "") + "".join(pieces)
    assert reads(xgr, text) == reads(xgrammar, text), text


# ---- token masks -------------------------------------------------------------------------------

VOCAB = ([chr(c) for c in range(32, 127)] + ["\n", "\t", "ab", "abc", " a", "<call>", "<c", "all>", "{}", "1.5",
         "en", "end", '"a', "e!", "a=", " 1", "<|end|>", "</s>", "é", "😀", "\\\"", "/*", "*/", "\x00"])
STOP, END = VOCAB.index("</s>"), VOCAB.index("<|end|>")


def tokenize(text: str) -> list:
    """Greedy longest-match tokens of `text` (no special tokens)."""
    out, i = [], 0
    while i < len(text):
        best = max((t for t, v in enumerate(VOCAB) if t not in (STOP, END) and text.startswith(v, i)),
                   key=lambda t: len(VOCAB[t]))
        out.append(best)
        i += len(VOCAB[best])
    return out


def walk_masks(module, text: str, tokens: list) -> list:
    """The allowed token ids before each token and before the stop token, and each verdict."""
    info = module.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
    matcher = module.GrammarMatcher(module.GrammarCompiler(info).compile_lark(text, named_grammars=NAMED))
    bitmask = module.allocate_token_bitmask(1, info.vocab_size)
    out = []
    for t in tokens + [STOP]:
        matcher.fill_next_token_bitmask(bitmask)
        rejected = set(module.testing._get_masked_tokens_from_bitmask(bitmask, info.vocab_size))
        out.append(sorted(set(range(len(VOCAB))) - rejected))
        out.append(matcher.accept_token(t))
    return out


T = {v: k for k, v in enumerate(VOCAB)}
TOKEN_WALKS = [  # (text, tokens) with special tokens, budgets and wildcards
    ('start: "a" <|end|> "b"', [T["a"], END, T["b"]]),
    ('start: (<[65-67]> | "x")+', [T["A"], T["x"], T["C"]]),
    ('start: "a" <[^95]> "b"\n%ignore " "', [T["a"], T["q"], T[" "], T["b"]]),
    ('start: "a" <[*]>', [T["a"], T["</s>"]]),
    ('start: x "!"\nx[lazy]: ' + ANY + ' <|end|>', [T["a"], T["ab"], END, T["!"]]),
    ('start: tool* text\ntool: ' + ANY + ' <|end|> "{" "}"\ntext: ' + ANY, [T["a"], END, T["{}"], T["b"], END, T["{"]]),
    ('start: x "!"\nx[max_tokens=2]: /[a-z]*/', [T["a"], T["b"], T["!"]]),
    ('start: x "!"\nx[max_tokens=2]: "a" | "a" "b" "c"', [T["a"], T["b"], T["c"], T["!"]]),
]


@pytest.mark.xgrammar
@pytest.mark.parametrize("text, good, bad", CASES, ids=[c[0][:50] for c in CASES])
def test_masks_along_accepted_strings_are_xgrammars(xgrammar, text, good, bad):
    for s in good:
        tokens = tokenize(s)
        have = walk_masks(xgr, text, tokens)
        assert have == walk_masks(xgrammar, text, tokens), s
        assert all(have[1::2]), s


@pytest.mark.xgrammar
@pytest.mark.parametrize("text, tokens", TOKEN_WALKS, ids=[c[0][:50] for c in TOKEN_WALKS])
def test_token_walk_masks_are_xgrammars(xgrammar, text, tokens):
    assert walk_masks(xgr, text, tokens) == walk_masks(xgrammar, text, tokens)


# ---- lazy rules: the shortest-match automaton against brute force --------------------------------

def regexes(alphabet="ab"):
    leaf = st.sampled_from(list(alphabet) + ["[ab]", "a?"])
    return st.recursive(leaf, lambda inner: st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda p: f"({p[0]}|{p[1]})"),
        inner.map(lambda r: f"({r})*"), inner.map(lambda r: f"({r})+"), inner.map(lambda r: f"({r}){{1,2}}")),
        max_leaves=5)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regexes(), st.sampled_from(["", "b", "ab"]))
def test_lazy_rule_matches_the_shortest_strings(pattern, stop):
    """have: the engine's verdicts on the lowered grammar; want: the strings of the body (then
    the stop string) no proper prefix of which it matches, by Python's `re`."""
    text = f'start: x\nx[{"stop=" + repr(stop).replace(chr(39), chr(34)) if stop else "lazy"}]: /{pattern}/'
    full = re.compile(f"(?:{pattern}){re.escape(stop)}")
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_lark(text)
    for n in range(5):
        for k in range(2 ** n):
            s = "".join("ab"[(k >> i) & 1] for i in range(n))
            want = bool(full.fullmatch(s)) and not any(full.fullmatch(s[:i]) for i in range(len(s)))
            matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
            assert (matcher.accept_string(s) and matcher.is_terminated()) == want, (text, s)


# ---- the API -----------------------------------------------------------------------------------

def test_errors_point_at_the_offending_place():
    with pytest.raises(EBNFError) as err:
        xgr.Grammar.from_lark('start: a\na: "x" B\n')
    assert (err.value.line, err.value.column) == (2, 8)
    assert str(err.value) == "Lark error at line 2, column 8: unknown name 'B'\na: \"x\" B\n       ^"
    with pytest.raises(EBNFError, match=r"failed to compile named grammar '@bad': .*unknown name 'x'"):
        xgr.Grammar.from_lark("start: @bad", named_grammars=NAMED)


def test_a_temperature_rule_that_is_no_terminal_says_what_reading_it_as_one_found():
    # xgrammar's shape: the terminal's error, at the rule's line, then what a temperature rule may be
    with pytest.raises(EBNFError) as err:
        xgr.Grammar.from_lark('start: x\nx[temperature=0.5]: "a" y\ny: "b"')
    assert (err.value.line, err.value.column) == (2, 1)
    assert str(err.value).startswith("Lark error at line 2, column 1: Lark error at line 2, column 25: terminal "
                                     "cannot reference rule 'y'\n")
    assert "^; temperature is only supported on terminals and subgrammars\n" in str(err.value)


def test_bad_arguments_raise_type_errors():
    with pytest.raises(TypeError):
        xgr.Grammar.from_lark(b'start: "a"')
    with pytest.raises(TypeError):
        xgr.Grammar.from_lark('start: "a"', named_grammars=[("g", 'start: "a"')])
    with pytest.raises(TypeError):
        xgr.Grammar.from_lark('start: "a"', named_grammars={"g": 5})
    for name in ("", "g h", "@g"):
        with pytest.raises(EBNFError, match="(?i)named grammar name"):
            xgr.Grammar.from_lark('start: "a"', named_grammars={name: 'start: "a"'})


def test_named_grammar_objects_and_special_tokens():
    sub = xgr.Grammar.from_ebnf('root ::= "a" r\nr ::= "b"')
    grammar = xgr.Grammar.from_lark('start: @sub "c" @sub\n%ignore " "', named_grammars={"sub": sub})
    assert [_is_grammar_accept_string(grammar, s) for s in ("abcab", "ab c ab ", "a bcab")] == [True, True, False]
    info = xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP])
    assert "Token(%d)" % END in str(xgr.Grammar.from_lark('start: "a" <|end|>', tokenizer_info=info))
    with pytest.raises(EBNFError, match="unknown special token <|nope|>"):
        xgr.Grammar.from_lark("start: <|nope|>", tokenizer_info=info)


@pytest.mark.parametrize("text, good, bad", CASES[::4], ids=[c[0][:50] for c in CASES[::4]])
def test_printed_grammars_parse_back(text, good, bad):
    grammar = xgr.Grammar.from_lark(text, named_grammars=NAMED)
    assert ir_signature(xgr.Grammar.from_ebnf(str(grammar)).ir) == ir_signature(grammar.ir)


def test_compile_lark_is_cached_by_text_and_named_grammars():
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo(VOCAB, stop_token_ids=[STOP]))
    first = compiler.compile_lark("start: @g", named_grammars={"g": 'start: "a"'})
    assert compiler.compile_lark("start: @g", named_grammars={"g": 'start: "a"'}) is first
    other = compiler.compile_lark("start: @g", named_grammars={"g": 'start: "b"'})
    assert other is not first and "b" in str(other.grammar)
    sub = xgr.Grammar.from_ebnf('root ::= "c"')
    assert compiler.compile_lark("start: @g", named_grammars={"g": sub}) is compiler.compile_lark(
        "start: @g", named_grammars={"g": xgr.Grammar.from_ebnf('root ::= "c"')})
    uncached = xgr.GrammarCompiler(compiler.tokenizer_info, cache_enabled=False)
    assert str(uncached.compile_lark('start: "a"').grammar) == 'root ::= "a"\n'


def test_root_rule_and_rule_names():
    ir = lark_to_ir('start: root x\nroot: "r"\nx[max_tokens=3]: "x"')
    assert ir.root == "root" and ir.rule("x").option("max_tokens") == 3
    assert ir.rule("root").body.items[0].name != "root"  # the user's `root` was renamed


def _lark_cases_with_strings() -> list:
    """(source, strings) of this module's tables whose entries list strings to try."""
    out = []
    for value in list(globals().values()):
        if isinstance(value, list):
            for item in value:
                if (isinstance(item, tuple) and len(item) >= 2 and isinstance(item[0], str) and ":" in item[0]
                        and all(isinstance(x, list) for x in item[1:])):
                    out.append((item[0], [s for x in item[1:] for s in x if isinstance(s, str)]))
    return list({src: (src, strings) for src, strings in out}.values())


@pytest.mark.xgrammar
def test_xgrammars_printed_form_of_every_lark_grammar_here_reads_the_same():
    """`str(xgrammar.Grammar.from_lark(src))` read by xg2ref: the language and the captures of
    `xg2ref.Grammar.from_lark(src)`, on every grammar of this module's tables that both take,
    with its strings (xgrammar's rule options for captures and markers included)."""
    xg = pytest.importorskip("xgrammar")
    from xg2ref.testing import _is_grammar_accept_string

    def captures(grammar, text):
        compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_grammar(grammar)
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return matcher.get_captures() if matcher.accept_string(text) else None

    compared = 0
    for src, strings in _lark_cases_with_strings():
        try:
            original = xg.Grammar.from_lark(src)
            printed = str(original)
            reread = xg.Grammar.from_ebnf(printed)
            ours = xgr.Grammar.from_lark(src)
        except Exception:
            continue
        try:
            if any(xg.testing._is_grammar_accept_string(original, s) != xg.testing._is_grammar_accept_string(reread, s)
                   for s in strings):
                continue  # xgrammar's print loses its own language (a NUL cuts a literal short)
        except RuntimeError:
            continue  # xgrammar cannot compile what it printed
        theirs = xgr.Grammar.from_ebnf(printed)
        for s in strings:
            assert _is_grammar_accept_string(theirs, s) == _is_grammar_accept_string(ours, s), (src, s)
            assert captures(theirs, s) == captures(ours, s), (src, s)
        compared += 1
    assert compared >= 60, compared


# ---- llguidance's `&` and `~` in terminals (regular-language set operations) -----------------------

SET_OPERATIONS = [  # (grammar, strings it takes, strings it refuses)
    ('start: A\nA: /[a-z]+/ & /.*x.*/', ["abx", "x", "xa"], ["ab", "", "X"]),
    ('start: A\nA: ~/b/', ["", "a", "bb", "ba"], ["b"]),
    ('start: A "!"\nA: B & C\nB: /[ab]+/\nC: /a*b/', ["ab!", "aab!", "b!"], ["ba!", "a!", "!"]),
    # `&` binds tighter than `|`, a sequence is one side: ("x" "y" & /xy|z/) | "z"
    ('start: A | "q"\nA: "x" "y" & /xy|z/ | "z"', ["xy", "z", "q"], ["x", "y", "xyz"]),
    # llguidance's own example: lines with no empty line between them
    ('start: L\nL: /[a-z \\n]*/ & ~/(.|\\n)*\\n\\n(.|\\n)*/', ["ab\ncd", "", "\n", "a\nb\nc"], ["ab\n\ncd", "\n\n"]),
]


@pytest.mark.parametrize("grammar, takes, refuses", SET_OPERATIONS, ids=[c[0][:40] for c in SET_OPERATIONS])
def test_terminal_intersection_and_complement(grammar, takes, refuses):
    g = xgr.Grammar.from_lark(grammar, dialect="llguidance")
    assert [s for s in takes + refuses if _is_grammar_accept_string(g, s)] == takes


def test_set_operations_belong_to_terminals():
    with pytest.raises(EBNFError, match="intersection '&' can only be used in terminals"):
        xgr.Grammar.from_lark('start: x\nx: "a" & "a"', dialect="llguidance")
    with pytest.raises(EBNFError, match="complement '~' can only be used in terminals"):
        xgr.Grammar.from_lark('start: ~"a"', dialect="llguidance")
    with pytest.raises(EBNFError, match="intersection '&' is not supported"):  # (xgrammar's dialect: neither)
        xgr.Grammar.from_lark('start: A\nA: "a" & "a"')
    with pytest.raises(EBNFError, match="complement '~' is not supported"):
        xgr.Grammar.from_lark('start: A\nA: ~"a"')


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regexes(), regexes())
def test_intersection_and_complement_are_the_sets_python_re_gives(a, b):
    """`A & B` takes what both take and `~A` what A does not, on every string over {a, b} of up
    to 5 characters (Python's `re` judges A and B)."""
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
    both = compiler.compile_lark(f"start: T\nT: /{a}/ & /{b}/", dialect="llguidance")
    neither = compiler.compile_lark(f"start: T\nT: ~/{a}/", dialect="llguidance")
    ra, rb = re.compile(a), re.compile(b)
    for n in range(6):
        for k in range(2 ** n):
            s = "".join("ab"[(k >> i) & 1] for i in range(n))
            for compiled, want in ((both, bool(ra.fullmatch(s) and rb.fullmatch(s))), (neither, not ra.fullmatch(s))):
                matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
                assert (matcher.accept_string(s) and matcher.is_terminated()) == want, (a, b, s)


def test_max_chars_dropped_by_dynamic_dispatch_is_said():
    """A character budget on a dispatching start rule, or on a rule the dispatch consumes, has no
    effect (as in xgrammar, which drops it too): a warning in xgrammar's words names each rule."""
    source = ('start[max_chars=5]: tool* tail\ntail: TEXT\ntool_head[lazy]: TEXT "<tool>"\n'
              'tool[max_chars=3]: tool_head /[0-9]+/ "</tool>"\nTEXT: /(\\n|.)*/')
    with pytest.warns(UserWarning) as caught:
        grammar = xgr.Grammar.from_lark(source)
    said = " ".join(str(w.message) for w in caught)
    assert "Ignoring max_chars on dynamic dispatch start rule 'start'." in said
    assert "Ignoring max_chars on rule 'tool' because it is consumed by dynamic dispatch." in said
    assert "max_chars=" not in str(grammar)
