"""`Grammar.from_regex` and `GrammarCompiler.compile_regex` in xgrammar 0.2.8's regex dialect
(XGrammar-2 §2.1 front ends): the pattern is rewritten, one construct at a time, as EBNF text,
which the EBNF front end (`xg2ref/frontends/ebnf/parser.py`) then parses. Because the text goes through the same
parser as xgrammar's, every construct means there what the EBNF reading of its rewrite means:

    regex                 EBNF text                        note
    a  é                  "a" "\\xe9"                       one literal per character
    .                     [\\u0000-\\U0010FFFF]               every code point, the line feed too
    [...]  [^...]         [...]  [^...]                    copied; escapes rewritten inside
    \\d \\w \\s (\\D \\W \\S)   [0-9] [a-zA-Z0-9_] [\\f\\n\\r\\t\\v\\u0020\\u00a0] (and complements)
    (x) (?:x) (?<name>x)  ( x )                            names are dropped
    x* x+ x? x{m,n}       x* x+ x? x{m,n}                  lazy forms (x*?) read the same
    a|b  a|  |a           "a" | "b"   "a" | ""   "" | "a"
    ^ $                   (nothing)                        anywhere in the pattern

Escapes: `\\n \\r \\t \\f \\v \\a \\e \\0` and `\\' \\" \\? \\\\ \\/` as in EBNF; `\\x` takes every hex digit
that follows (`\\x411` is U+0411), `\\uHHHH`, `\\u{H...}` (one to six digits), `\\UHHHHHHHH`, `\\cX`
(X a letter: its code mod 32); `\\0` takes no octal digits (`\\012` is NUL, "1", "2"). Any other
escaped character stands for itself (`\\q` is "q", `\\A` is "A"), as does a `\\u` or `\\x` without
its digits (`\\u004` is "u004"). The rewrite of an escape inside a class is spliced in as text,
so a `\\x` rewrite followed by hex digits reads on (`[\\u00e9a]` is `[\\xe9a]`, U+0E9A) and an
escaped `^` opening a class negates it (`[\\^]` is `[^]`, any code point): xgrammar reads them so.

Rejected with `RegexError` (position and message in xgrammar's words): backreferences (`\\1`,
`\\k`), `\\b` and `\\B` outside classes, `\\p{..}`, lookahead and lookbehind, inline flags and other
group modifiers (`(?i)`, `(?P<n>...)`), named groups whose name is not ASCII letters, two
quantifiers in a row (`a**`, `a{2}*`), malformed bounds (`a{,2}`, `{a}`), unbalanced parentheses
or brackets, an empty class `[]`, an escape cut off by the end of the pattern (`\\x4`), and
whatever the EBNF parser rejects in the rewrite (`[z-a]`, `a{3,2}`, a quantifier with nothing
before it).

What it leaves out: xgrammar's warnings for ignored anchors and unknown escapes.
"""

from __future__ import annotations

from ...exceptions import EBNFError
from ...grammar.ir import GrammarIR
from .parser import RegexError

_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")
_DOT = "[\\u0000-\\U0010FFFF]"
_CLASS_SETS = {"d": "0-9", "D": "\\x00-\\x2F\\x3A-\\U0010FFFF", "w": "a-zA-Z0-9_",
               "W": "\\x00-\\x2F\\x3A-\\x40\\x5B-\\x5E\\x60\\x7B-\\U0010FFFF", "s": "\\f\\n\\r\\t\\v\\u0020\\u00a0",
               "S": "\\x00-\\x08\\x0E-\\x1F\\x21-\\x9F\\xA1-\\U0010FFFF"}
_OUTSIDE_SETS = {"d": "[0-9]", "D": "[^0-9]", "w": "[a-zA-Z0-9_]", "W": "[^a-zA-Z0-9_]",
                 "s": "[\\f\\n\\r\\t\\v\\u0020\\u00a0]", "S": "[^\\f\\n\\r\\t\\v\\u0020\\u00a0]"}
# escapes that name one code point: the regex metacharacters, then EBNF's own
_SELF_ESCAPES = frozenset("^$.*+?\\()[]{}|/")
_NAMED_ESCAPES = {"'": 0x27, '"': 0x22, "?": 0x3F, "\\": 0x5C, "/": 0x2F, "a": 0x07, "b": 0x08, "f": 0x0C,
                  "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B, "0": 0x00, "e": 0x1B}
_PRINTED = {0x27: "\\'", 0x22: '\\"', 0x3F: "\\?", 0x5C: "\\\\", 0x07: "\\a", 0x08: "\\b", 0x0C: "\\f",
            0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v", 0x00: "\\0", 0x1B: "\\e"}


def ebnf_escape(codepoint: int) -> str:
    """One code point as EBNF literal text: a named escape, printable ASCII as itself, else
    `\\xHH`, `\\uHHHH` or `\\UHHHHHHHH` (lower-case hex digits).

    Example: ebnf_escape(0xE9) == "\\\\xe9"
    """
    if codepoint in _PRINTED:
        return _PRINTED[codepoint]
    if 0x20 <= codepoint <= 0x7E:
        return chr(codepoint)
    if codepoint <= 0xFF:
        return f"\\x{codepoint:02x}"
    return f"\\u{codepoint:04x}" if codepoint <= 0xFFFF else f"\\U{codepoint:08x}"


class _Converter:
    def __init__(self, pattern: str):
        self.p, self.i = pattern, 0
        self.out = ""
        self.depth = 0

    def error(self, message: str, pos=None) -> RegexError:
        return RegexError(message, self.p, self.i if pos is None else pos)

    def at(self, k: int = 0) -> str:
        return self.p[self.i + k] if self.i + k < len(self.p) else ""

    def segment(self, text: str) -> None:
        self.out += (" " if self.out else "") + text

    # pattern := (anchor | class | group | ")" | quantifier | "|" | escape | "." | char)*
    def convert(self) -> str:
        n, nothing = len(self.p), True
        while self.i < n:
            c = self.p[self.i]
            if c in "^$":  # an anchor is dropped wherever it stands
                self.i += 1
                continue
            nothing = False
            if c == "[":
                self.segment(self.char_class())
            elif c == "(":
                self.i += 1
                self.depth += 1
                self.segment("(")
                if self.at() == "?":
                    self.i += 1
                    self.group_modifier()
            elif c == ")":
                if self.depth == 0:
                    raise self.error("Unmatched ')'")
                if self.out.endswith("|"):  # `(a|)`: the empty side is written out
                    self.segment('""')
                self.depth -= 1
                self.segment(")")
                self.i += 1
            elif c in "*+?{":
                self.out += self.bounds() if c == "{" else c
                self.i += c != "{"
                if self.at() == "?":  # lazy: the same language
                    self.i += 1
                if self.at() and self.at() in "{*+?":
                    raise self.error("Two consecutive repetition modifiers are not allowed")
            elif c == "|":
                if not self.out or self.out[-1] in "|(":
                    self.segment('""')
                self.segment("|")
                self.i += 1
            elif c == "\\":
                self.segment(self.escape())
            elif c == ".":
                self.segment(_DOT)
                self.i += 1
            else:
                self.segment(f'"{ebnf_escape(ord(c))}"')
                self.i += 1
        if self.depth:
            raise self.error("The parenthesis is not closed")
        if self.out.endswith("|") or nothing:
            self.segment('""')
        return self.out

    def char_class(self) -> str:
        start = self.i
        self.i += 1
        if self.at() == "]":
            raise self.error("Empty character class is not allowed in regex")
        text = "["
        while self.at() not in ("]", ""):
            if self.at() == "\\":
                text += self.class_escape()
            else:
                text += self.at()
                self.i += 1
        if not self.at():
            raise self.error("Unclosed '['", start)
        self.i += 1
        return text + "]"

    def bounds(self) -> str:
        """`{m}`, `{m,}` or `{m,n}` at the cursor, copied as it is."""
        j = self.i + 1
        for after_comma in (False, True):
            first = j
            while self.p[j:j + 1] in _DIGITS:
                j += 1
            end = self.p[j:j + 1]
            if (j == first and not (after_comma and end == "}")) or end not in ("}", ",") or (after_comma and end != "}"):
                raise self.error("Invalid repetition count", j)
            if end == "}":
                break
            j += 1
        text, self.i = self.p[self.i:j + 1], j + 1
        return text

    def group_modifier(self) -> None:
        """After `(?`: `:`, or a named group `<name>`; anything else is refused."""
        c = self.at()
        if not c:
            raise self.error("Group modifier is not finished")
        if c == ":":
            self.i += 1
        elif c in "=!":
            raise self.error("Lookahead is not supported yet")
        elif c == "<" and self.at(1) in ("=", "!") and self.at(1):
            raise self.error("Lookbehind is not supported yet")
        elif c == "<":
            self.i += 1
            while self.at().isascii() and self.at().isalpha():
                self.i += 1
            if self.at() != ">":
                raise self.error("Invalid named capturing group")
            self.i += 1
        else:
            raise self.error("Group modifier flag is not supported yet")

    def escape(self) -> str:
        """An escape outside a class, as an EBNF element."""
        c = self.at(1)
        if not c:
            raise self.error("Escape sequence is not finished")
        if c in _OUTSIDE_SETS:
            self.i += 2
            return _OUTSIDE_SETS[c]
        if c in "123456789k":
            raise self.error("Backreference is not supported yet")
        if c in "pP":
            raise self.error("Unicode character class escape sequence is not supported yet")
        if c in "bB":
            raise self.error("Word boundary is not supported yet")
        return f'"{self.char_escape(in_class=False)}"'

    def class_escape(self) -> str:
        """An escape inside a class, as class text (spliced in as it is)."""
        c = self.at(1)
        if not c:
            raise self.error("Escape sequence is not finished")
        if c in _CLASS_SETS:
            self.i += 2
            return _CLASS_SETS[c]
        text = self.char_escape(in_class=True)
        return "\\" + text if text in ("]", "-") else text

    def char_escape(self, in_class: bool) -> str:
        """An escape naming one code point, as EBNF escape text."""
        left, c = len(self.p) - self.i, self.at(1)
        if left < 2 or (c == "u" and left < 5) or (c == "x" and left < 4) or (c == "c" and left < 3):
            raise self.error("Escape sequence is not finished")
        codepoint = self._named(c, in_class)
        if codepoint is not None:
            return ebnf_escape(codepoint)
        if c == "u" and self.at(2) == "{":
            j = self.i + 3
            while self.p[j:j + 1] and self.p[j] in _HEX and j - (self.i + 3) <= 6:
                j += 1
            digits = self.p[self.i + 3:j]
            if not digits or len(digits) > 6 or self.p[j:j + 1] != "}":
                raise self.error("Invalid Unicode escape sequence")
            self.i = j + 1
            return ebnf_escape(int(digits, 16))
        if c == "c":
            letter = self.at(2)
            if not (letter.isascii() and letter.isalpha()):
                raise self.error("Invalid control character escape sequence", self.i + 2)
            self.i += 3
            return ebnf_escape(ord(letter) % 32)
        self.i += 2  # any other escaped character stands for itself
        return ebnf_escape(ord(c))

    def _named(self, c: str, in_class: bool):
        """The code point of `\\c...` read as an EBNF escape (the cursor moves past it), or None."""
        if ord(c) > 128:
            return None
        if c in _SELF_ESCAPES or (in_class and c == "-"):
            self.i += 2
            return ord(c)
        if c in _NAMED_ESCAPES:
            self.i += 2
            return _NAMED_ESCAPES[c]
        if c == "x":
            j = self.i + 2
            while self.p[j:j + 1] and self.p[j] in _HEX:
                j += 1
            if j == self.i + 2:
                return None
            digits, self.i = self.p[self.i + 2:j], j
            return int(digits, 16)
        if c in "uU":
            width = 4 if c == "u" else 8
            digits = self.p[self.i + 2:self.i + 2 + width]
            if len(digits) != width or not _HEX.issuperset(digits):
                return None
            self.i += 2 + width
            return int(digits, 16)
        return None


def regex_to_ebnf(pattern: str) -> str:
    """The EBNF text (a rule body) that `pattern` is rewritten to.

    Example: regex_to_ebnf(r"a[b-c]*(d|e)?\\.") == '"a" [b-c]* ( "d" | "e" )? "."'
    """
    if not isinstance(pattern, str):
        raise RegexError(f"a regex must be a str, got {type(pattern).__name__}")
    return _Converter(pattern).convert()


def converted_regex_ir(pattern: str) -> tuple[GrammarIR, str]:
    """The grammar `root ::= <rewrite of pattern>` and its EBNF text; an EBNF error in the
    rewrite is raised as a RegexError."""
    from ..ebnf.parser import parse_ebnf

    text = f"root ::= {regex_to_ebnf(pattern)}\n"
    try:
        return parse_ebnf(text), text
    except EBNFError as err:
        raise RegexError(f"{err.message} (in the EBNF rewrite {text.strip()!r})", pattern) from None
