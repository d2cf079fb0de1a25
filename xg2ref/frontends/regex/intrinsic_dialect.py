"""The EBNF intrinsic `Regex("pattern", json_string=false, flags="")` in xgrammar 0.2.8's dialect
(its regex-to-automaton builder; XGrammar-2 §2.1 front ends), parsed straight into grammar IR.

The dialect is looser than the regex standards and reads some constructs its own way:

    .                    any code point, the line feed too; with a `flags` argument that has
                         no `s` (even `flags=""`), any code point but the line feed
    (?i)                 only as the very first thing in the pattern: ASCII letters match in
                         either case (classes are folded before they are negated); `flags="i"`
                         does the same; `(?i:...)`, `(?s)` and other group modifiers are errors
    ^ $                  ignored wherever they stand (`a$b` matches "ab", `a^*` is `a*`)
    (?=x) (?!x)          ignored: the empty string
    (?<n>x) (?P<n>x)     groups; the name is any run of ASCII letters, digits and `_`
    x** x+? x{2}{3}      quantifiers stack (a lazy `?` right after one is dropped)
    {                    always starts a bound, `{m}` `{m,}` `{m,n}`, blanks allowed inside
                         (`a{ 1, 2 }`); `{a}` and `a{,2}` are errors; a lone `}` is literal
    [...]                ends at the first unescaped `]`; `[]` and `[^]` are errors; `-` after
                         a class escape is literal (`[\\d-z]`); a lone `]` is an error
    \\d \\w \\s             [0-9], [0-9A-Za-z_], [\\t\\n\\v\\f\\r ] (and \\D \\W \\S, their complements)
    \\n \\r \\t \\f \\v \\a \\e \\0  code points (`\\0` takes no octal digits: `\\012` is NUL "12")
    \\xHH \\uHHHH \\u{H..}  exactly two, four, or one to six hex digits (up to U+10FFFF)
    \\cX                  X an ASCII letter: its code mod 32
    \\b                   U+0008 in a class, an error outside
    \\q, \\A, \\U, ...      any other escaped character stands for itself

Errors (`RegexError`): backreferences (`\\1`, `\\k`), `\\B`, `\\p`/`\\P`, lookbehind, other group
modifiers, unbalanced parentheses or brackets, a quantifier with nothing before it, a bound
above 999,999,999 or out of order, a range out of order or with a class escape as its upper
end, malformed `\\x`, `\\u`, `\\c`, and a trailing backslash. xgrammar reports them when the grammar
is compiled; xg2ref when it is parsed.

`json_string=true` removes U+0000-U+001F, `"` and `\\` from every character match.
What it leaves out: xgrammar 0.2.8 forgets `json_string` inside a repetition whose bound
passes 128 (`Regex(".{0,200}", json_string=true)` takes `"` there); xg2ref does not.
"""

from __future__ import annotations

from typing import Optional

from ...grammar.ir import MAX_CODEPOINT, Expr
from ...grammar.charsets import complement, fold_case, merge_ranges
from .parser import RegexError, _alts_to_ir

_WORD = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_SETS = {"d": [(0x30, 0x39)], "w": _WORD, "s": [(0x09, 0x0D), (0x20, 0x20)]}
_SINGLE = {"n": 0x0A, "t": 0x09, "r": 0x0D, "f": 0x0C, "v": 0x0B, "a": 0x07, "e": 0x1B, "0": 0x00}
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")
_MAX_BOUND_DIGITS = 9
FLAGS = "isu"


class _Parser:
    """Recursive descent over the pattern; nodes are the parse-tree tuples of `parser.py`:
    ("char", cp), ("class", ranges), ("group", [[node, ...], ...]), ("repeat", node, lo, hi)."""

    def __init__(self, pattern: str, ignore_case: bool, dot_newline: bool, json_string: bool):
        self.p, self.i = pattern, 0
        self.ignore_case, self.json_string = ignore_case, json_string
        self.dot = [(0, MAX_CODEPOINT)] if dot_newline else complement([(0x0A, 0x0A)])

    def error(self, message: str, pos: Optional[int] = None) -> RegexError:
        return RegexError(message, self.p, self.i if pos is None else pos)

    def at(self, k: int = 0) -> str:
        return self.p[self.i + k] if self.i + k < len(self.p) else ""

    # alternation := sequence ("|" sequence)*
    def alternation(self) -> list:
        alts = [self.sequence()]
        while self.at() == "|":
            self.i += 1
            alts.append(self.sequence())
        return alts

    # sequence := (atom | anchor | quantifier)*     a quantifier applies to the last atom
    def sequence(self) -> list:
        items: list = []
        while self.at() not in ("", "|", ")"):
            c = self.at()
            if c in "^$":
                self.i += 1
            elif c in "*+?{":
                if not items:
                    raise self.error(f"There is nothing to repeat before '{c}'")
                lo, hi = self.bounds() if c == "{" else ({"*": (0, None), "+": (1, None), "?": (0, 1)}[c])
                self.i += c != "{"
                if self.at() == "?":  # lazy: the same language
                    self.i += 1
                items[-1] = ("repeat", items[-1], lo, hi)
            else:
                items.append(self.atom())
        return items

    def atom(self):
        c, start = self.at(), self.i
        if c == "[":
            return ("class", self.char_class())
        if c == "]":
            raise self.error("Unmatched ']'")
        if c == "(":
            return self.group()
        self.i += 1
        if c == ".":
            return ("class", self.dot)
        if c == "\\":
            return self.escape(in_class=False, start=start)
        return ("char", ord(c))

    def bounds(self) -> tuple[int, Optional[int]]:
        """`{m}`, `{m,}` or `{m,n}`, blanks allowed around the numbers."""
        start = self.i
        self.i += 1
        lo = self._number(start, "a number after '{'")
        if self._skip_blanks() == "}":
            self.i += 1
            return lo, lo
        if self.at() != ",":
            raise self.error("Invalid repetition count: expected ',' or '}' after the lower bound", start)
        self.i += 1
        if self._skip_blanks() == "}":
            self.i += 1
            return lo, None
        hi = self._number(start, "a number or '}' after ','")
        if hi < lo:
            raise self.error(f"Invalid repetition count: the lower bound {lo} is larger than the upper bound {hi}",
                             start)
        if self._skip_blanks() != "}":
            raise self.error("Invalid repetition count: expected '}' after the upper bound", start)
        self.i += 1
        return lo, hi

    def _skip_blanks(self) -> str:
        while self.at() == " ":
            self.i += 1
        return self.at()

    def _number(self, start: int, expected: str) -> int:
        self._skip_blanks()
        first = self.i
        while self.at() and self.at() in _DIGITS:
            self.i += 1
        digits = self.p[first:self.i]
        if not digits:
            raise self.error(f"Invalid repetition count: expected {expected}", start)
        if len(digits) > _MAX_BOUND_DIGITS:
            raise self.error(f"Invalid repetition count: the count {digits} is too large", start)
        return int(digits)

    def group(self):
        start = self.i
        self.i += 1
        if self.at() == "?":
            kind = self.at(1)
            if not kind:
                raise self.error("Group modifier is not finished", start)
            if kind in "=!":  # a lookahead is skipped: it matches the empty string
                self.i = self._lookahead_end(start)
                return ("group", [[]])
            if kind == "<" or (kind == "P" and self.at(2) == "<"):
                first = self.i + (2 if kind == "<" else 3)
                if self.p[first:first + 1] in ("=", "!"):
                    raise self.error("Lookbehind assertion is not supported in regex", start)
                end = first
                while end < len(self.p) and self.p[end].isascii() and (self.p[end].isalnum() or self.p[end] == "_"):
                    end += 1
                if end == first or self.p[end:end + 1] != ">":
                    raise self.error("Invalid named capturing group", start)
                self.i = end + 1
            elif kind == ":":
                self.i += 2
            else:
                raise self.error(f"Unsupported group modifier '(?{kind}'", start)
        alts = self.alternation()
        if self.at() != ")":
            raise self.error("The parenthesis is not closed", start)
        self.i += 1
        return ("group", alts)

    def _lookahead_end(self, start: int) -> int:
        """The index after the `)` closing the lookahead that opens at `start` (its content is
        skipped unread, classes and escapes only delimited)."""
        depth, j = 1, start + 3
        while j < len(self.p) and depth:
            c = self.p[j]
            if c == "\\":
                j += 2
                continue
            if c == "[":
                j = self._class_end(j)
                continue
            depth += {"(": 1, ")": -1}.get(c, 0)
            j += 1
        if depth:
            raise self.error("The parenthesis is not closed", start)
        return j

    def _class_end(self, j: int) -> int:
        """The index after the `]` closing the class that opens at `j`."""
        start, j = j, j + 1
        if self.p[j:j + 1] == "^":
            j += 1
        while j < len(self.p):
            if self.p[j] == "\\":
                j += 2
            elif self.p[j] == "]":
                return j + 1
            else:
                j += 1
        raise self.error("Unclosed '['", start)

    def char_class(self) -> list[tuple[int, int]]:
        start = self.i
        end = self._class_end(start) - 1  # the closing ']'
        self.i += 1
        negated = self.at() == "^"
        self.i += negated
        if self.i == end:
            raise self.error("Empty character class is not allowed in regex", start)
        ranges: list[tuple[int, int]] = []
        while self.i < end:
            low = self._class_unit(end)
            if low[0] == "class":  # a class escape ends no range: a '-' after it is literal
                ranges.extend(low[1])
                continue
            if self.at() == "-" and self.i + 1 < end:
                self.i += 1
                high = self._class_unit(end)
                if high[0] == "class":
                    raise self.error("Invalid character range endpoint in regex character class", start)
                if high[1] < low[1]:
                    raise self.error("Invalid character range (lower bound exceeds upper bound) in regex "
                                     "character class", start)
                ranges.append((low[1], high[1]))
            else:
                ranges.append((low[1], low[1]))
        self.i = end + 1
        if self.ignore_case:
            ranges = fold_case(ranges)
        ranges = merge_ranges(ranges)
        return complement(ranges) if negated else ranges

    def _class_unit(self, end: int):
        start = self.i
        if self.at() == "\\":
            self.i += 1
            return self.escape(in_class=True, start=start)
        self.i += 1
        return ("char", ord(self.p[start]))

    def escape(self, in_class: bool, start: int):
        """The escape whose backslash is at `start` (the cursor is just past it)."""
        c = self.at()
        if not c:
            raise self.error("Regex ends with a trailing backslash", start)
        self.i += 1
        if c in _SINGLE:
            return ("char", _SINGLE[c])
        if c == "b":
            if in_class:
                return ("char", 0x08)
            raise self.error("Word boundary assertion \\b is not supported in regex", start)
        if c == "B":
            raise self.error("Word boundary assertion \\B is not supported in regex", start)
        if c in "pP":
            raise self.error("Unicode property escape \\p / \\P is not supported in regex", start)
        if c == "k" or c in "123456789":
            raise self.error(f"Backreference \\{c} is not supported in regex", start)
        if c.lower() in _SETS:
            ranges = _SETS[c.lower()]
            if self.ignore_case:
                ranges = fold_case(ranges)
            return ("class", merge_ranges(ranges) if c.islower() else complement(ranges))
        if c == "x":
            digits = self.p[self.i:self.i + 2]
            if len(digits) != 2 or not _HEX.issuperset(digits):
                raise self.error("\\x must be followed by two hexadecimal digits in regex", start)
            self.i += 2
            return ("char", int(digits, 16))
        if c == "u":
            return ("char", self._unicode_escape(start))
        if c == "c":
            letter = self.at()
            if not (letter.isascii() and letter.isalpha()):
                raise self.error("\\c must be followed by a letter in regex", start)
            self.i += 1
            return ("char", ord(letter) & 0x1F)
        return ("char", ord(c))  # any other escaped character stands for itself

    def _unicode_escape(self, start: int) -> int:
        if self.at() == "{":
            close = self.p.find("}", self.i + 1)
            digits = self.p[self.i + 1:close] if close >= 0 else ""
            if not 1 <= len(digits) <= 6 or not _HEX.issuperset(digits):
                raise self.error("\\u{...} must contain one to six hexadecimal digits in regex", start)
            if int(digits, 16) > MAX_CODEPOINT:
                raise self.error("\\u{...} escape is beyond the Unicode range in regex", start)
            self.i = close + 1
            return int(digits, 16)
        digits = self.p[self.i:self.i + 4]
        if len(digits) != 4 or not _HEX.issuperset(digits):
            raise self.error("\\u must be followed by four hexadecimal digits in regex", start)
        self.i += 4
        return int(digits, 16)


def intrinsic_regex_to_expr(pattern: str, *, json_string: bool = False, flags: Optional[str] = None) -> Expr:
    """The IR of `Regex(pattern, json_string=..., flags=...)`; `flags=None` when the argument is
    not given (then `.` takes the line feed too).

    Example: intrinsic_regex_to_expr("x$y", flags="i")
             == Sequence((CharClass(((88, 88), (120, 120))), CharClass(((89, 89), (121, 121)))))
    """
    if not isinstance(pattern, str):
        raise RegexError(f"a regex must be a str, got {type(pattern).__name__}")
    ignore_case = dot_newline = False
    if flags is None:
        dot_newline = True
    else:
        bad = [f for f in flags if f not in FLAGS]
        if bad:
            raise RegexError(f"regular-expression flag {bad[0]!r} is not supported (flags are i, s and u)", pattern)
        ignore_case, dot_newline = "i" in flags, "s" in flags
    if pattern.startswith("(?i)"):
        ignore_case, pattern_start = True, 4
    else:
        pattern_start = 0
    parser = _Parser(pattern, ignore_case, dot_newline, json_string)
    parser.i = pattern_start
    alts = parser.alternation()
    if parser.i != len(pattern):
        raise parser.error("Unmatched ')'")
    return _alts_to_ir(alts, parser)
