"""Regular expressions as grammar IR, read by the standards (XGrammar-2 §2.1 front ends): JSON
Schema `pattern`, structural tags and the Lark front end. xgrammar's own regex APIs read
patterns its way: `Grammar.from_regex` / `compile_regex` in to_ebnf.py, the `Regex(...)`
EBNF intrinsic in intrinsic_dialect.py (both raise `RegexError`; the intrinsic reuses the
code-point set helpers below).

A pattern is parsed by recursive descent straight into the IR of `ir.py`, so a regex is just
another rule body and goes through the same FSM construction:

    a b          Sequence              a|b        Choice (an empty side is epsilon)
    x* x+ x?     Repeat                x{m} x{m,} x{m,n}, lazy forms (x*? ...) alike
    [a-z] [^"]   CharClass             .          any codepoint but "\\n" ([^\\n]); any with `s`
    \\d \\w \\s    [0-9] [A-Za-z0-9_] and ECMAScript's whitespace set; \\D \\W \\S their complements
    \\p{L} \\P{Lu}  a Unicode general category and its complement (unicode_properties.py)
    (x) (?:x) (?<name>x) (?P<name>x)   groups (captures are not kept: same language)

Semantics follow the regex standards where they agree (Python `re`, ECMAScript): the whole
string must match (`^` at the start and `$` at the end are allowed and change nothing), `.`
excludes the line feed, lazy quantifiers match the same language. Where they disagree xg2ref
takes ECMAScript's, the standard JSON Schema names: `\\d` and `\\w` are ASCII, `[]` matches
nothing and `[^]` any codepoint. Flags: `i` (ASCII letters match either case), `s` (`.` matches
the line feed too), `u` (no effect).

Constructs that a context-free grammar cannot express, or that xg2ref does not take, raise
`RegexError` naming the construct and its offset: backreferences (`\\1`, `\\k<name>`),
lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), word boundaries (`\\b`, `\\B`), Unicode properties
other than general categories (`\\p{Script=Greek}`), inline flags (`(?i)`), possessive quantifiers, and anchors anywhere but at
the ends.

`json_string=True` (for a regex inside a JSON string) removes the control characters
U+0000-U+001F, `"` and `\\` from every character match, as xgrammar's intrinsic does.
"""

from __future__ import annotations

import re
from typing import Optional

from ...exceptions import XG2RefError
from ...grammar.ir import MAX_CODEPOINT, ByteString, CharClass, Choice, Expr, GrammarIR, Repeat, Rule, Sequence
from ...grammar.charsets import complement, fold_case, merge_ranges, subtract
from .anchors import END, START, ends_last, has_anchor_in_group, lift_anchored_groups, starts_first
from .unicode_properties import unicode_property

# ECMAScript's \s: WhiteSpace and LineTerminator code points.
SPACE_RANGES = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
                (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))
DIGIT_RANGES = ((0x30, 0x39),)
WORD_RANGES = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_CLASS_ESCAPES = {"d": DIGIT_RANGES, "w": WORD_RANGES, "s": SPACE_RANGES}
_CONTROL_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "f": 0x0C, "v": 0x0B}
_JSON_FORBIDDEN = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))
MAX_REPEAT = 100_000


class RegexError(XG2RefError):
    """A pattern that is not a regex xg2ref can turn into a grammar; `pos` is the offset."""

    def __init__(self, message: str, pattern: str = "", pos: int = -1):
        self.message, self.pattern, self.pos = message, pattern, pos
        where = f" at offset {pos}" if pos >= 0 else ""
        super().__init__(f"regex error{where}: {message} (pattern {pattern!r})" if pattern else message)


# ---- the parser -----------------------------------------------------------------------------

_START, _END = START, END  # anchors, brought into place by anchors.py and removed


class _Parser:
    def __init__(self, pattern: str, flags: str, json_string: bool, scoped_flags: bool = False):
        bad = sorted(set(flags) - set("isu"))
        if bad:
            raise RegexError(f"unknown flag {bad[0]!r} (flags are i, s and u)", pattern)
        self.p, self.i = pattern, 0
        self.ignore_case = "i" in flags
        self.dot_all = "s" in flags
        self.json_string = json_string
        self.scoped_flags = scoped_flags  # `(?is-u:...)` groups (llguidance's regexes: Rust's syntax)
        self.names: set[str] = set()

    def error(self, message: str, pos: Optional[int] = None) -> RegexError:
        return RegexError(message, self.p, self.i if pos is None else pos)

    def peek(self, k: int = 0) -> str:
        return self.p[self.i + k] if self.i + k < len(self.p) else ""

    # alternation := concat ("|" concat)*
    def alternation(self) -> list:
        alts = [self.concat()]
        while self.peek() == "|":
            self.i += 1
            alts.append(self.concat())
        return alts

    # concat := quantified*
    def concat(self) -> list:
        items: list = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.quantified())
        return items

    def quantified(self):
        start = self.i
        atom = self.atom()
        bounds = self.quantifier()
        if bounds is None:
            return atom
        if atom is _START or atom is _END:
            raise self.error("a quantifier on an anchor", start)
        if self.peek() == "?":  # lazy: the same language
            self.i += 1
        elif self.peek() == "+":
            raise self.error("possessive quantifiers are not supported")
        if self.peek() in ("*", "+", "?") or (self.peek() == "{" and self._brace_quantifier() is not None):
            raise self.error("a quantifier follows another quantifier (nothing to repeat)")
        lo, hi = bounds
        return ("repeat", atom, lo, hi)

    def quantifier(self) -> Optional[tuple[int, Optional[int]]]:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        if c == "{":
            parsed = self._brace_quantifier()
            if parsed is not None:
                bounds, end = parsed
                self.i = end
                return bounds
        return None

    def _brace_quantifier(self):
        """`{m}`, `{m,}`, `{m,n}` at the cursor: ((m, n), end offset), or None (a literal '{')."""
        j = self.i + 1
        close = self.p.find("}", j)
        if close < 0:
            return None
        body = self.p[j:close]
        parts = body.split(",")
        if len(parts) > 2 or not parts[0].isdigit() or (len(parts) == 2 and parts[1] and not parts[1].isdigit()):
            return None
        lo = int(parts[0])
        hi = lo if len(parts) == 1 else (int(parts[1]) if parts[1] else None)
        if hi is not None and hi < lo:
            raise self.error(f"repetition {{{body}}} has its lower bound above its upper bound")
        if max(lo, hi or 0) > MAX_REPEAT:
            raise self.error(f"repetition bound above {MAX_REPEAT}")
        return (lo, hi), close + 1

    def atom(self):
        c = self.peek()
        start = self.i
        if c == "(":
            return self.group()
        if c == "[":
            return ("class", self.char_class())
        if c in ("*", "+", "?"):
            raise self.error(f"nothing to repeat before {c!r}")
        if c == "{" and self._brace_quantifier() is not None:
            raise self.error("nothing to repeat before '{'")
        self.i += 1
        if c == ".":
            return ("class", [(0, MAX_CODEPOINT)] if self.dot_all else complement([(0x0A, 0x0A)]))
        if c == "^":
            return _START
        if c == "$":
            return _END
        if c == "\\":
            return self.escape(in_class=False, start=start)
        return ("char", ord(c))

    def group(self):
        start = self.i
        self.i += 1
        if self.peek() == "?":
            kind = self.p[self.i + 1:self.i + 3]
            if kind.startswith(":"):
                self.i += 2
            elif kind in ("<=", "<!") or kind[:1] in ("=", "!"):
                what = {"=": "lookahead", "!": "negative lookahead", "<=": "lookbehind", "<!": "negative lookbehind"}
                raise self.error(f"{what[kind if kind in what else kind[:1]]} assertions are not supported", start)
            elif kind.startswith("<") or kind.startswith("P<"):
                close = self.p.find(">", self.i)
                if close < 0:
                    raise self.error("unterminated group name", start)
                name = self.p[self.p.index("<", self.i) + 1:close]
                if not name.isidentifier():
                    raise self.error(f"bad group name {name!r}", start)
                if name in self.names:
                    raise self.error(f"group name {name!r} is used twice", start)
                self.names.add(name)
                self.i = close + 1
            elif kind.startswith("P="):
                raise self.error("backreferences are not supported", start)
            elif self.scoped_flags and re.match(r"\?[isu]*(-[isu]*)?:", self.p[self.i:]):
                return self.flag_group(start)
            else:
                raise self.error("inline flags and other (?...) groups are not supported "
                                 "(pass flags= to the Regex intrinsic instead)", start)
        alts = self.alternation()
        if self.peek() != ")":
            raise self.error("missing ')'", start)
        self.i += 1
        return ("group", alts)

    def flag_group(self, start: int):
        """`(?flags:...)` / `(?on-off:...)`: the group read with flags i and s set or cleared
        (u changes nothing: classes are over code points already)."""
        colon = self.p.index(":", self.i)
        on, _, off = self.p[self.i + 1:colon].partition("-")
        saved = self.ignore_case, self.dot_all
        self.ignore_case = ("i" in on or self.ignore_case) and "i" not in off
        self.dot_all = ("s" in on or self.dot_all) and "s" not in off
        self.i = colon + 1
        alts = self.alternation()
        if self.ignore_case and not saved[0]:  # (a char is folded when made IR, by the pattern's flag)
            alts = [[_folded(item) for item in items] for items in alts]
        self.ignore_case, self.dot_all = saved
        if self.peek() != ")":
            raise self.error("missing ')'", start)
        self.i += 1
        return ("group", alts)

    def escape(self, in_class: bool, start: int):
        c = self.peek()
        if c == "":
            raise self.error("the pattern ends with a lone backslash", start)
        self.i += 1
        if c.lower() in _CLASS_ESCAPES:
            ranges = list(_CLASS_ESCAPES[c.lower()])
            return ("class", ranges if c.islower() else complement(ranges))
        if c in _CONTROL_ESCAPES:
            return ("char", _CONTROL_ESCAPES[c])
        if c == "b":
            if in_class:
                return ("char", 0x08)
            raise self.error("word boundaries (\\b) are not supported", start)
        if c == "B":
            raise self.error("word boundaries (\\B) are not supported", start)
        if c in "pP":  # a Unicode property (unicode_properties.py)
            close = self.p.find("}", self.i) if self.peek() == "{" else -1
            if close < 0:
                raise self.error(f"\\{c} must be followed by a property in braces", start)
            name = self.p[self.i + 1:close]
            try:
                ranges = list(unicode_property(name))
            except KeyError:
                raise self.error(f"the Unicode property escape \\{c}{{{name}}} is not supported (only general "
                                 f"categories, Any, ASCII and Assigned)", start) from None
            self.i = close + 1
            return ("class", ranges if c == "p" else complement(ranges))
        if c == "k" or (c.isdigit() and c != "0"):
            raise self.error("backreferences are not supported", start)
        if c == "0":
            if self.peek().isdigit():
                raise self.error("octal escapes are not supported", start)
            return ("char", 0)
        if c == "x":
            return ("char", self._hex(2, start))
        if c == "u":
            if self.peek() == "{":
                close = self.p.find("}", self.i)
                digits = self.p[self.i + 1:close] if close > 0 else ""
                if not digits or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise self.error("bad \\u{...} escape", start)
                self.i = close + 1
                return ("char", self._codepoint(int(digits, 16), start))
            return ("char", self._hex(4, start))
        if c == "c":
            letter = self.peek()
            if not letter.isascii() or not letter.isalpha():
                raise self.error("\\c must be followed by a letter", start)
            self.i += 1
            return ("char", ord(letter) % 32)
        if c in "AZz":
            raise self.error(f"anchor escapes (\\{c}) are not supported (the whole string is matched)", start)
        if c.isascii() and c.isalnum():
            raise self.error(f"unknown escape \\{c}", start)
        return ("char", ord(c))

    def _hex(self, n: int, start: int) -> int:
        digits = self.p[self.i:self.i + n]
        if len(digits) != n or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise self.error(f"expected {n} hex digits after the escape", start)
        self.i += n
        return self._codepoint(int(digits, 16), start)

    def _codepoint(self, cp: int, start: int) -> int:
        if cp > MAX_CODEPOINT:
            raise self.error(f"code point {cp:#x} is beyond U+10FFFF", start)
        return cp

    def char_class(self) -> list[tuple[int, int]]:
        """`[...]` as merged ranges (ECMAScript: `[]` is empty, `[^]` is everything)."""
        start = self.i
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        ranges: list[tuple[int, int]] = []
        while True:
            c = self.peek()
            if c == "":
                raise self.error("missing ']'", start)
            if c == "]":
                self.i += 1
                break
            lo = self._class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi = self._class_atom()
                if lo[0] == "class" or hi[0] == "class":
                    raise self.error("a range with a class escape (\\d, \\w, \\s) as an end", start)
                if lo[1] > hi[1]:
                    raise self.error(f"range {chr(lo[1])!r}-{chr(hi[1])!r} is out of order", start)
                ranges.append((lo[1], hi[1]))
            elif lo[0] == "class":
                ranges.extend(lo[1])
            else:
                ranges.append((lo[1], lo[1]))
        ranges = merge_ranges(ranges)
        if self.ignore_case:
            ranges = fold_case(ranges)
        return complement(ranges) if negated else ranges

    def _class_atom(self):
        c = self.peek()
        start = self.i
        self.i += 1
        if c == "\\":
            return self.escape(in_class=True, start=start)
        return ("char", ord(c))


# ---- from the parse tree to IR --------------------------------------------------------------


def _check_anchors(alts: list, at_start: bool, at_end: bool, parser: _Parser) -> None:
    """`^` only where nothing can come before it, `$` only where nothing can come after."""
    for items in alts:
        for k, item in enumerate(items):
            first, last = at_start and k == 0, at_end and k == len(items) - 1
            if item is _START and not first:
                raise RegexError("'^' is only supported at the start of the pattern", parser.p)
            if item is _END and not last:
                raise RegexError("'$' is only supported at the end of the pattern", parser.p)
            if isinstance(item, tuple) and item[0] == "group":
                _check_anchors(item[1], first, last, parser)
            elif isinstance(item, tuple) and item[0] == "repeat":
                _check_anchors([[item[1]]], False, False, parser)


def _folded(node):
    """A parsed node with each char made a class of its case variants (for `flag_group`)."""
    if node is _START or node is _END:
        return node
    if node[0] == "char":
        return ("class", fold_case([(node[1], node[1])]))
    if node[0] == "group":
        return ("group", [[_folded(item) for item in items] for items in node[1]])
    if node[0] == "repeat":
        return ("repeat", _folded(node[1]), *node[2:])
    return node


def _to_ir(node, parser: _Parser) -> Expr:
    if node is _START or node is _END:
        return ByteString(b"")
    kind = node[0]
    if kind == "group":
        return _alts_to_ir(node[1], parser)
    if kind == "repeat":
        return Repeat(_to_ir(node[1], parser), node[2], node[3])
    ranges = [(node[1], node[1])] if kind == "char" else node[1]
    if parser.ignore_case and kind == "char":
        ranges = fold_case(ranges)
    if parser.json_string:
        ranges = subtract(ranges, _JSON_FORBIDDEN)
    if kind == "char" and len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return ByteString(chr(ranges[0][0]).encode("utf-8", "surrogatepass"))
    return CharClass(tuple(merge_ranges(ranges)))


def _alts_to_ir(alts: list, parser: _Parser) -> Expr:
    options = []
    for items in alts:
        parts: list[Expr] = []
        for item in items:
            expr = _to_ir(item, parser)
            if isinstance(expr, ByteString) and parts and isinstance(parts[-1], ByteString):
                parts[-1] = ByteString(parts[-1].value + expr.value)  # fuse literal runs
            elif not (isinstance(expr, ByteString) and not expr.value):
                parts.append(expr)
        options.append(ByteString(b"") if not parts else parts[0] if len(parts) == 1 else Sequence(tuple(parts)))
    if not options:  # every alternative needs a `$` before its end: nothing matches
        return CharClass(())
    return options[0] if len(options) == 1 else Choice(tuple(options))


def regex_to_expr(pattern: str, *, json_string: bool = False, flags: str = "", search: bool = False,
                  scoped_flags: bool = False) -> Expr:
    """The IR expression matching exactly the strings `pattern` matches as a whole, or with
    `search`, the strings that contain a match (JSON Schema's `pattern`): a top-level
    alternative not anchored by `^` may have anything before it, one without `$` anything after.

    Example: regex_to_expr("ab|c?") == Choice((ByteString(b"ab"), Repeat(ByteString(b"c"), 0, 1)))
    """
    if not isinstance(pattern, str):
        raise RegexError(f"a regex must be a str, got {type(pattern).__name__}")
    parser = _Parser(pattern, flags, json_string, scoped_flags)
    alts = parser.alternation()
    if parser.i != len(pattern):
        raise parser.error("unbalanced ')'")
    if search:
        alts = lift_anchored_groups(alts)
    alts = starts_first(ends_last(alts))
    _check_anchors(alts, True, True, parser)
    if search:
        anything = ("repeat", ("class", [(0, MAX_CODEPOINT)]), 0, None)
        wrapped = []
        for items in alts:
            if has_anchor_in_group(items):
                raise RegexError("an anchor inside a group is not supported in a search pattern", pattern)
            start = bool(items) and items[0] is _START
            end = bool(items) and items[-1] is _END
            wrapped.append(([] if start else [anything]) + items + ([] if end else [anything]))
        alts = wrapped
    return _alts_to_ir(alts, parser)


def regex_to_ir(pattern: str, *, json_string: bool = False, flags: str = "") -> GrammarIR:
    """A one-rule grammar, `root ::= <pattern>`."""
    return GrammarIR((Rule("root", regex_to_expr(pattern, json_string=json_string, flags=flags)),), root="root")
