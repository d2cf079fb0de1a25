"""The lexical layer of JSON Schema conversion: numbers in a range, string characters, JSON
encoding of a regex's characters, and literal values (XGrammar-2 §2.1 front ends; xgrammar's
`NumberGenerator` / `IntegerRangeRegex`).

Everything here builds grammar IR. Every string it accepts is valid JSON for the constraint, and
every value satisfying the constraint is accepted in its *canonical form*:

- integers as `-?(0|[1-9][0-9]*)`, never with a fraction or an exponent; `-0` is taken (it is 0);
- numbers with a bound as `-?(0|[1-9][0-9]*)(\\.[0-9]+)?` (no exponent); unbounded numbers may
  carry an exponent;
- string characters raw, except those JSON requires escaped (`"`, `\\`, U+0000-U+001F), written
  as a short escape (`\\n`) or `\\u00XX` in either case; `/` may also be `\\/`. An unconstrained
  string also takes `\\uXXXX` for any code point outside U+D800-U+DFFF, so one unit is always one
  code point and `minLength`/`maxLength` count exactly.

Ranges of integers (digit strings without leading zeros, by number of digits, then by first
digit) and of fractions (digit by digit against the bound's digits) are the classic
constructions; see `integer_range` and `_fraction`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Optional

from ...grammar.ir import EPSILON, ByteString, CharClass, Choice, Expr, Repeat, Sequence

DIGIT = CharClass(((0x30, 0x39),))
NONZERO = CharClass(((0x31, 0x39),))
HEX = CharClass(((0x30, 0x39), (0x41, 0x46), (0x61, 0x66)))
NOTHING = CharClass(())
# JSON's escapes: what follows the backslash, for each code point that has a short form
SHORT_ESCAPES = {0x22: b'"', 0x5C: b"\\", 0x2F: b"/", 0x08: b"b", 0x0C: b"f", 0x0A: b"n", 0x0D: b"r", 0x09: b"t"}
RAW_FORBIDDEN = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))


def seq(*parts: Expr) -> Expr:
    items = []
    for p in parts:
        if isinstance(p, Sequence):
            items.extend(p.items)
        elif p != EPSILON:
            items.append(p)
    merged: list[Expr] = []
    for p in items:
        if merged and isinstance(p, ByteString) and isinstance(merged[-1], ByteString):
            merged[-1] = ByteString(merged[-1].value + p.value)
        else:
            merged.append(p)
    return EPSILON if not merged else merged[0] if len(merged) == 1 else Sequence(tuple(merged))


def choice(*parts: Expr) -> Expr:
    """The union; NOTHING when there are no parts."""
    alts = [p for p in parts if p != NOTHING]
    unique = list(dict.fromkeys(alts))
    return NOTHING if not unique else unique[0] if len(unique) == 1 else Choice(tuple(unique))


def digits(lo: str, hi: str) -> Expr:
    return CharClass(((ord(lo), ord(hi)),)) if lo != hi else ByteString(lo.encode())


# ---- integers ---------------------------------------------------------------------------------


def _same_length(lo: str, hi: str) -> Expr:
    """Digit strings s with len(s) == len(lo) == len(hi) and lo <= s <= hi."""
    if not lo:
        return EPSILON
    if lo == hi:
        return ByteString(lo.encode())
    a, b, n = lo[0], hi[0], len(lo) - 1
    if a == b:
        return seq(ByteString(a.encode()), _same_length(lo[1:], hi[1:]))
    parts = []
    first, last = a, b
    if lo[1:] != "0" * n:
        parts.append(seq(ByteString(a.encode()), _same_length(lo[1:], "9" * n)))
        first = chr(ord(a) + 1)
    tail = None
    if hi[1:] != "9" * n:
        tail = seq(ByteString(b.encode()), _same_length("0" * n, hi[1:]))
        last = chr(ord(b) - 1)
    if first <= last:
        parts.append(seq(digits(first, last), Repeat(DIGIT, n, n) if n else EPSILON))
    if tail is not None:
        parts.append(tail)
    return choice(*parts)


def natural_range(lo: int, hi: Optional[int]) -> Expr:
    """Decimal strings without leading zeros of the integers lo..hi (hi None: unbounded), lo >= 0.

    Example: natural_range(5, 120) matches "5".."9", "10".."99", "100".."120"
    """
    if hi is not None and hi < lo:
        return NOTHING
    parts = []
    top = len(str(hi)) if hi is not None else len(str(lo))
    for length in range(len(str(lo)), top + 1):
        a = max(lo, 10 ** (length - 1) if length > 1 else 0)
        b = 10 ** length - 1 if hi is None else min(hi, 10 ** length - 1)
        if a <= b:
            parts.append(_same_length(str(a), str(b)))
    if hi is None:
        parts.append(seq(NONZERO, Repeat(DIGIT, top, None)))
    return choice(*parts)


def integer_range(lo: Optional[int], hi: Optional[int]) -> Expr:
    """JSON integers in lo..hi (None: unbounded on that side)."""
    if lo is not None and hi is not None and lo > hi:
        return NOTHING
    parts = []
    if lo is None or lo < 0:  # negative values: "-" and the magnitude
        parts.append(seq(ByteString(b"-"), natural_range(1 if hi is None or hi >= 0 else -hi,
                                                         None if lo is None else -lo)))
    if hi is None or hi >= 0:
        parts.append(natural_range(0 if lo is None or lo < 0 else lo, hi))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        parts.append(ByteString(b"-0"))
    return choice(*parts)


# ---- numbers with fractions --------------------------------------------------------------------


def _fraction(lo: Optional[str], lo_strict: bool, hi: Optional[str], hi_strict: bool, memo: dict) -> tuple:
    """Fraction digit strings s, read as 0.s, with 0.lo <= 0.s <= 0.hi (< where strict).

    `lo`/`hi` are the bounds' remaining digits, None once s is past that bound. Reading a digit
    d against the bound's first digit b (0 when the digits ran out): d beyond b frees s from
    the bound, d == b keeps the rest of it, d short of b fails. Returns (the empty s
    qualifies, an Expr for the qualifying non-empty s).
    """
    if lo is not None and not lo_strict and not lo.strip("0"):
        lo = None  # 0.s >= 0 always holds
    key = (lo, lo_strict, hi, hi_strict)
    if key in memo:
        return memo[key]
    lo_zero = lo is not None and not lo.strip("0")  # only "0.s > 0" is left of the lower bound
    if hi is not None and not hi.strip("0"):  # 0.s <= 0: s is all zeros (nothing when strict)
        result = (False, NOTHING) if hi_strict or lo_zero or lo else (True, Repeat(ByteString(b"0"), 1, None))
    elif lo_zero and hi is None:  # 0.s > 0: some digit is not 0
        result = (False, seq(Repeat(DIGIT, 0, None), NONZERO, Repeat(DIGIT, 0, None)))
    elif lo is None and hi is None:
        result = (True, Repeat(DIGIT, 1, None))
    else:
        empty_ok = lo is None and (hi is None or not hi_strict or bool(hi.strip("0")))
        parts = []
        for d in range(10):
            b_lo = int(lo[0]) if lo else 0
            b_hi = int(hi[0]) if hi else 9
            if (lo is not None and d < b_lo) or (hi is not None and d > b_hi):
                continue
            nlo = None if lo is None or d > b_lo else lo[1:]
            nhi = None if hi is None or d < b_hi else hi[1:]
            e_ok, rest = _fraction(nlo, lo_strict, nhi, hi_strict, memo)
            tail = choice(EPSILON if e_ok else NOTHING, rest)
            if tail != NOTHING:
                parts.append((d, tail))
        grouped: list[Expr] = []
        k = 0
        while k < len(parts):  # neighbouring digits with the same continuation share a class
            j = k
            while j + 1 < len(parts) and parts[j + 1][1] == parts[k][1] and parts[j + 1][0] == parts[j][0] + 1:
                j += 1
            grouped.append(seq(digits(str(parts[k][0]), str(parts[j][0])), parts[k][1]))
            k = j + 1
        result = (empty_ok, choice(*grouped))
    memo[key] = result
    return result


def _split(value: Decimal) -> tuple[int, str]:
    """A non-negative decimal as (integer part, fraction digits without trailing zeros)."""
    text = format(value, "f")
    whole, _, frac = text.partition(".")
    return int(whole), frac.rstrip("0")


def _fraction_part(lo: Optional[str], lo_strict: bool, hi: Optional[str], hi_strict: bool) -> Expr:
    empty_ok, rest = _fraction(lo, lo_strict, hi, hi_strict, {})
    return choice(EPSILON if empty_ok else NOTHING, seq(ByteString(b"."), rest) if rest != NOTHING else NOTHING)


def _nonnegative(lo: Optional[Decimal], lo_strict: bool, hi: Optional[Decimal], hi_strict: bool) -> Expr:
    """Numbers m >= 0 in the range, as integer part and optional fraction (no sign)."""
    li, lf = _split(lo) if lo is not None else (0, "")
    lo_strict = lo_strict if lo is not None else False
    if hi is None:
        if lo is None:
            return seq(natural_range(0, None), _fraction_part(None, False, None, False))
        return choice(seq(natural_range(li, li), _fraction_part(lf, lo_strict, None, False)),
                      seq(natural_range(li + 1, None), _fraction_part(None, False, None, False)))
    hi_i, hf = _split(hi)
    if li == hi_i:
        return seq(natural_range(li, li), _fraction_part(lf, lo_strict, hf, hi_strict))
    return choice(seq(natural_range(li, li), _fraction_part(lf, lo_strict, None, False)),
                  seq(natural_range(li + 1, hi_i - 1), _fraction_part(None, False, None, False)),
                  seq(natural_range(hi_i, hi_i), _fraction_part(None, False, hf, hi_strict)))


def number_range(lo: Optional[Decimal], lo_strict: bool, hi: Optional[Decimal], hi_strict: bool) -> Expr:
    """JSON numbers v with lo <(=) v <(=) hi, without exponent; unbounded: any JSON number."""
    if lo is None and hi is None:
        exponent = Repeat(seq(CharClass(((0x45, 0x45), (0x65, 0x65))),
                              Repeat(CharClass(((0x2B, 0x2B), (0x2D, 0x2D))), 0, 1), Repeat(DIGIT, 1, None)), 0, 1)
        return seq(Repeat(ByteString(b"-"), 0, 1), natural_range(0, None),
                   _fraction_part(None, False, None, False), exponent)
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_strict or hi_strict))):
        return NOTHING
    parts = []
    if lo is None or lo < 0 or (lo == 0 and not lo_strict):  # "-" m with -m in range
        m_lo, m_lo_strict = (Decimal(0), False) if hi is None or hi > 0 else (-hi, hi_strict)
        m_hi, m_hi_strict = (None, False) if lo is None else (-lo, lo_strict)
        parts.append(seq(ByteString(b"-"), _nonnegative(m_lo, m_lo_strict, m_hi, m_hi_strict)))
    if hi is None or hi > 0 or (hi == 0 and not hi_strict):
        v_lo, v_lo_strict = (Decimal(0), False) if lo is None or lo < 0 else (lo, lo_strict)
        parts.append(_nonnegative(v_lo, v_lo_strict, hi, hi_strict))
    return choice(*parts)


# ---- string characters -----------------------------------------------------------------------


def encoded_char(ranges) -> Expr:
    """One code point of `ranges` as it may appear inside a JSON string literal: raw when JSON
    allows it raw, else escaped (short form or \\u00XX); `/` also as `\\/`."""
    from ...grammar.charsets import intersect, subtract

    raw = subtract(ranges, RAW_FORBIDDEN)
    escaped = [cp for lo, hi in intersect(ranges, RAW_FORBIDDEN + ((0x2F, 0x2F),)) for cp in range(lo, hi + 1)]
    # the escapes as one small trie: "\\" then a short letter, or "u00", the high hex digit and
    # the low ones (either case) -- the same strings as one alternative per code point, in a
    # handful of FSM states instead of dozens (a `\S` class repeated a hundred times stays small)
    letters = sorted(SHORT_ESCAPES[cp][0] for cp in escaped if cp in SHORT_ESCAPES)
    by_high: dict[int, list[int]] = {}
    for cp in escaped:
        if cp != 0x2F:
            by_high.setdefault(cp >> 4, []).append(cp & 15)
    after = [CharClass(tuple((b, b) for b in letters))] if letters else []
    if by_high:
        after.append(seq(ByteString(b"u00"), choice(*(seq(_hex_digit(h), _hex_digits(lows))
                                                        for h, lows in sorted(by_high.items())))))
    parts = [CharClass(tuple(raw))] if raw else []
    if after:
        parts.append(seq(ByteString(b"\\"), choice(*after)))
    return choice(*parts)


def _hex_digit(value: int) -> Expr:
    return _hex_digits([value])


def _hex_digits(values) -> Expr:
    """One hex digit whose value is in `values`, letters in either case."""
    codes = set()
    for v in values:
        text = f"{v:x}"
        codes.update({ord(text), ord(text.upper())})
    from ...grammar.charsets import merge_ranges

    return CharClass(tuple(merge_ranges([(c, c) for c in codes])))


def any_string_char() -> Expr:
    """Any one code point in a JSON string: raw, a short escape, or \\uXXXX outside the surrogates."""
    not_surrogate = choice(seq(CharClass(((0x30, 0x39), (0x41, 0x43), (0x45, 0x46), (0x61, 0x63), (0x65, 0x66))),
                               Repeat(HEX, 3, 3)),
                           seq(CharClass(((0x44, 0x44), (0x64, 0x64))), CharClass(((0x30, 0x37),)), Repeat(HEX, 2, 2)))
    return choice(CharClass(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF))),
                  seq(ByteString(b"\\"), choice(CharClass(tuple((c, c) for c in sorted(b'"\\/bfnrt'))),
                                                seq(ByteString(b"u"), not_surrogate))))


def json_encode_regex(expr: Expr) -> Expr:
    """The IR of a regex over decoded characters, rewritten to match their JSON encodings."""
    if isinstance(expr, CharClass):
        return encoded_char(expr.codepoint_ranges())
    if isinstance(expr, ByteString):
        text = expr.value.decode("utf-8", "surrogatepass")
        return seq(*(encoded_char([(ord(c), ord(c))]) for c in text))
    if isinstance(expr, Sequence):
        return seq(*(json_encode_regex(e) for e in expr.items))
    if isinstance(expr, Choice):
        return Choice(tuple(json_encode_regex(e) for e in expr.alternatives))
    if isinstance(expr, Repeat):
        return Repeat(json_encode_regex(expr.body), expr.min, expr.max)
    raise TypeError(f"not a regex expression: {expr!r}")


def json_string_literal(text: str) -> bytes:
    """The canonical JSON encoding of a string (raw UTF-8, required escapes only), quotes included."""
    out = []
    for c in text:
        cp = ord(c)
        if cp in SHORT_ESCAPES and cp != 0x2F:
            out.append("\\" + SHORT_ESCAPES[cp].decode())
        elif cp < 0x20:
            out.append(f"\\u{cp:04x}")
        else:
            out.append(c)
    return ('"' + "".join(out) + '"').encode("utf-8", "surrogatepass")
