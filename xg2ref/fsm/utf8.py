"""XGrammar-2 §3.3: Unicode character classes as UTF-8 byte-range sequences.

The engine is byte-level, so a class of codepoints such as `[à-é]` or `[^"]` becomes a small
set of byte-range paths. A codepoint range splits into pieces that each encode as a fixed
number of bytes and whose every byte position is an independent range:

    [U+0000-U+007F]   ->  [00-7F]
    [U+0080-U+07FF]   ->  [C2-DF][80-BF]
    [U+00E0-U+00E9]   ->  [C3][A0-A9]
    [U+0800-U+FFFF]   ->  [E0][A0-BF][80-BF] | [E1-EF][80-BF][80-BF]

(the split follows the classic construction used by RE2 and regex-syntax). Surrogate
codepoints U+D800-U+DFFF are encoded with the generic three-byte pattern (ED A0-BF 80-BF),
as xgrammar's `CharToUTF8` does; a class that contains them matches those bytes.

What it leaves out: overlong encodings and codepoints above U+10FFFF are never produced.
"""

from __future__ import annotations

from ..grammar.charsets import encode_codepoint
from ..grammar.ir import MAX_CODEPOINT

# Largest codepoint encoded with 1, 2, 3 and 4 bytes.
_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF, MAX_CODEPOINT)

ByteRangeSeq = tuple[tuple[int, int], ...]


def utf8_sequences(lo: int, hi: int) -> list[ByteRangeSeq]:
    """Byte-range sequences whose union is exactly the UTF-8 encodings of codepoints lo..hi.

    Example: utf8_sequences(0xE0, 0xE9) == [((0xC3, 0xC3), (0xA0, 0xA9))]
    """
    out: list[ByteRangeSeq] = []
    stack = [(lo, hi)]
    while stack:
        a, b = stack.pop()
        if a > b:
            continue
        # Split at the boundaries between encoded lengths first.
        split = False
        for limit in _LENGTH_LIMITS[:-1]:
            if a <= limit < b:
                stack.append((limit + 1, b))
                stack.append((a, limit))
                split = True
                break
        if split:
            continue
        if b <= 0x7F:
            out.append(((a, b),))
            continue
        # Within one length: make every trailing 6-bit group either free or fixed.
        n = len(encode_codepoint(a))
        for i in range(1, n):
            mask = (1 << (6 * i)) - 1
            if a & ~mask != b & ~mask:
                if a & mask != 0:
                    stack.append(((a | mask) + 1, b))
                    stack.append((a, a | mask))
                    split = True
                    break
                if b & mask != mask:
                    stack.append((b & ~mask, b))
                    stack.append((a, (b & ~mask) - 1))
                    split = True
                    break
        if split:
            continue
        ea, eb = encode_codepoint(a), encode_codepoint(b)
        out.append(tuple(zip(ea, eb)))
    out.sort()
    return out


def class_sequences(ranges: list[tuple[int, int]]) -> list[ByteRangeSeq]:
    """UTF-8 byte-range sequences of a whole class given as merged codepoint ranges."""
    seqs: list[ByteRangeSeq] = []
    for lo, hi in ranges:
        seqs.extend(utf8_sequences(lo, hi))
    return seqs
