"""`format: regex` as a context-free grammar over the pattern's characters, for strings.py: JSON
Schema 2020-12 Validation section 7.3.8 (a regular expression of ECMA-262's dialect), read as
ECMA-262's `Pattern` grammar (section 22.2.1) without Annex B, so balanced groups and classes are
a grammar's work, not an automaton's.

    Pattern      ::= Disjunction                     Disjunction ::= Alternative ("|" Alternative)*
    Alternative  ::= Term*                           Term ::= Assertion | Atom Quantifier?
    Assertion    ::= ^ | $ | \\b | \\B | (?= D ) | (?! D ) | (?<= D ) | (?<! D )
    Quantifier   ::= (* | + | ? | {n} | {n,} | {n,m}) ??
    Atom         ::= PatternCharacter | . | \\ AtomEscape | [ ^? ClassContents ] | ( GroupName? D )
                   | (?: D ) | (?flags-flags: D )     (ES2025's modifiers, i, m and s)
    AtomEscape   ::= [1-9][0-9]* | k<GroupName> | [dDsSwW] | [pP]{Name(=Value)?} | [fnrtv] | c[A-Za-z]
                   | 0 | xHH | uHHHH | u{H+} | IdentityEscape
    ClassContents ::= (ClassAtom | ClassAtom - ClassAtom)*     ClassAtom ::= any but \\ ] | \\ ClassEscape

A `PatternCharacter` is any code point but the syntax characters `^$\\.*+?()[]{}|`; an identity
escape is a syntax character or `/` (the `u` flag's) or a code point outside ID_Continue (the
reading without it), and `\\p{...}` (the `u` flag's) is taken beside them: a pattern is taken when
each escape is valid under one of the two readings. Group names are an identifier start (an
ASCII letter, `$`, `_`, or any non-ASCII code point) then identifier parts (digits too).

What the grammar lets in (specs/05, formats.LIMITS): a backreference to a group that does not
exist (`\\2` with one group, `\\k<x>` without a group x), two groups of one name, a range out of
order (`[z-a]`), a quantifier whose bounds are out of order (`{3,1}`), `\\0` before a digit, an
unknown property name, a class escape as a range's end, a flag twice in a modifier, a mix of
escapes that only one reading each allows, and non-ASCII code points that are not identifier
characters in group names, or are and follow a backslash (Unicode's identifier tables left out).
"""

from __future__ import annotations

from ...grammar.ir import Choice, Expr, Repeat
from .lexical import encoded_char, seq

SYNTAX = "^$\\.*+?()[]{}|"
_SURROGATES = (0xD800, 0xDFFF)


def _ranges_of(chars: str) -> list:
    return [(ord(c), ord(c)) for c in sorted(set(chars))]


def _all_but(excluded: list) -> list:
    """Every code point outside `excluded` and the surrogates (which a JSON string cannot hold
    alone), as ranges."""
    from ...grammar.charsets import subtract

    return subtract([(0, 0x10FFFF)], sorted(excluded + [_SURROGATES]))


# Identifier code points of a group name: the ASCII ones as ECMAScript has them (letters, `$`,
# `_`; then digits too) and every non-ASCII one in both (Unicode's ID_Start and ID_Continue would
# be classes of a thousand ranges in every pattern's grammar: the wider class is taken,
# formats.LIMITS).
IDENTIFIER_START = _ranges_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz$_") + [(0x80, 0x10FFFF)]
IDENTIFIER_PART = IDENTIFIER_START + [(0x30, 0x39)]


class _Rules:
    """The grammar's rules, named `regex_format_*`, made through the converter (`rule`)."""

    def __init__(self, rule):
        self.rule = rule

    def ref(self, name: str, make) -> Expr:
        return self.rule(("regex format", name), f"regex_format_{name}", make)

    def lit(self, text: str) -> Expr:
        return seq(*(encoded_char([(ord(c), ord(c))]) for c in text))

    def cls(self, ranges) -> Expr:
        return encoded_char(ranges)

    def pattern(self) -> Expr:
        return self.disjunction()

    def disjunction(self) -> Expr:
        return self.ref("disjunction", lambda: seq(self.alternative(),
                                                   Repeat(seq(self.lit("|"), self.alternative()), 0, None)))

    def alternative(self) -> Expr:
        return self.ref("alternative", lambda: Repeat(self.term(), 0, None))

    def term(self) -> Expr:
        def make():
            def group(opening: str) -> Expr:
                return seq(self.lit(opening), self.disjunction(), self.lit(")"))

            assertions = [self.lit("^"), self.lit("$"), self.lit("\\b"), self.lit("\\B")]
            assertions += [group(o) for o in ("(?=", "(?!", "(?<=", "(?<!")]
            return Choice(tuple(assertions) + (seq(self.atom(), Repeat(self.quantifier(), 0, 1)),))
        return self.ref("term", make)

    def quantifier(self) -> Expr:
        def make():
            digits = Repeat(self.cls(_ranges_of("0123456789")), 1, None)
            braces = seq(self.lit("{"), digits, Repeat(seq(self.lit(","), Repeat(digits, 0, 1)), 0, 1), self.lit("}"))
            return seq(Choice((self.cls(_ranges_of("*+?")), braces)), Repeat(self.lit("?"), 0, 1))
        return self.ref("quantifier", make)

    def atom(self) -> Expr:
        def make():
            body = self.disjunction()
            flags = Repeat(self.cls(_ranges_of("ims")), 1, 3)
            modifiers = seq(self.lit("(?"), Choice((seq(flags, Repeat(seq(self.lit("-"), flags), 0, 1)),
                                                    seq(self.lit("-"), flags))), self.lit(":"))
            return Choice((
                self.cls(_all_but(_ranges_of(SYNTAX))),
                self.lit("."),
                seq(self.lit("\\"), self.atom_escape()),
                self.character_class(),
                seq(self.lit("("), Repeat(seq(self.lit("?<"), self.group_name(), self.lit(">")), 0, 1), body,
                    self.lit(")")),
                seq(self.lit("(?:"), body, self.lit(")")),
                seq(modifiers, body, self.lit(")")),
            ))
        return self.ref("atom", make)

    def group_name(self) -> Expr:
        return self.ref("group_name",
                        lambda: seq(self.cls(IDENTIFIER_START), Repeat(self.cls(IDENTIFIER_PART), 0, None)))

    def atom_escape(self) -> Expr:
        def make():
            decimal = seq(self.cls(_ranges_of("123456789")), Repeat(self.cls(_ranges_of("0123456789")), 0, None))
            named = seq(self.lit("k<"), self.group_name(), self.lit(">"))
            return Choice((decimal, named, self.class_escape_common()))
        return self.ref("atom_escape", make)

    def class_escape_common(self) -> Expr:
        """The escapes both an atom and a class take: class escapes, character escapes and
        identity escapes."""
        def make():
            hexdigit = self.cls(_ranges_of("0123456789abcdefABCDEF"))
            name = Repeat(self.cls(_ranges_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789")), 1,
                          None)
            from ...grammar.charsets import merge_ranges

            # the u flag's syntax characters and `/`; without it, code points outside ID_Continue:
            # ASCII punctuation and space, and (wider) any non-ASCII code point
            ascii_identity = [c for c in map(chr, range(0x20, 0x7F)) if not (c.isalnum() or c in "$_")]
            identity = merge_ranges(_ranges_of(SYNTAX + "/" + "".join(ascii_identity)) + _all_but([(0, 0x7F)]))
            return Choice((
                self.cls(_ranges_of("dDsSwW")),
                seq(self.cls(_ranges_of("pP")), self.lit("{"), name, Repeat(seq(self.lit("="), name), 0, 1),
                    self.lit("}")),
                self.cls(_ranges_of("fnrtv0")),
                seq(self.lit("c"), self.cls(_ranges_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))),
                seq(self.lit("x"), hexdigit, hexdigit),
                seq(self.lit("u"), hexdigit, hexdigit, hexdigit, hexdigit),
                seq(self.lit("u{"), Repeat(hexdigit, 1, None), self.lit("}")),
                self.cls(identity),
            ))
        return self.ref("escape", make)

    def character_class(self) -> Expr:
        def make():
            atom = Choice((self.cls(_all_but(_ranges_of("\\]"))),
                           seq(self.lit("\\"), Choice((self.cls(_ranges_of("b-")), self.class_escape_common())))))
            atom = self.ref("class_atom", lambda: atom)
            item = seq(atom, Repeat(seq(self.lit("-"), atom), 0, 1))
            return seq(self.lit("["), Repeat(self.lit("^"), 0, 1), Repeat(item, 0, None), self.lit("]"))
        return self.ref("class", make)


def regex_format_expr(rule) -> Expr:
    """What the quotes of a string in `format: regex` hold, as rules made by `rule(key, name,
    make)` (the converter's): ECMA-262's Pattern, each character JSON-encoded."""
    return _Rules(rule).pattern()
