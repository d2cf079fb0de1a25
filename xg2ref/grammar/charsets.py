"""Code-point sets as sorted inclusive ranges, and one code point's UTF-8 bytes: the algebra every
front end, the regular-language constructions (regular.py, lazy.py) and the byte-FSM builder
(xg2ref/fsm/utf8.py, XGrammar-2 §3.3) share.

A set is a list of (lo, hi) pairs, lo <= hi, within U+0000..U+10FFFF. `merge_ranges` is the
normal form (sorted, overlapping or touching pairs merged); every other function returns it:

    merge_ranges([(5, 9), (0, 3), (4, 4)])  == [(0, 9)]
    complement([(0, 9)])                    == [(10, 0x10FFFF)]
    intersect([(0, 9)], [(5, 20)])          == [(5, 9)]
    subtract([(0, 9)], [(5, 20)])           == [(0, 4)]
    fold_case([(0x61, 0x62)])               == [(0x41, 0x42), (0x61, 0x62)]    (ASCII letters only)
    encode_codepoint(0xE9)                  == b"\\xc3\\xa9"
"""

from __future__ import annotations

from .ir import MAX_CODEPOINT


def merge_ranges(ranges) -> list[tuple[int, int]]:
    """Sorted, merged, inclusive ranges."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def complement(ranges) -> list[tuple[int, int]]:
    """Every code point not in `ranges`."""
    out, nxt = [], 0
    for lo, hi in merge_ranges(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODEPOINT:
        out.append((nxt, MAX_CODEPOINT))
    return out


def subtract(ranges, removed) -> list[tuple[int, int]]:
    """`ranges` less `removed`."""
    return intersect(ranges, complement(removed))


def intersect(a, b) -> list[tuple[int, int]]:
    """Code points in both `a` and `b`."""
    out = []
    for lo, hi in merge_ranges(a):
        for lo2, hi2 in merge_ranges(b):
            if max(lo, lo2) <= min(hi, hi2):
                out.append((max(lo, lo2), min(hi, hi2)))
    return merge_ranges(out)


def fold_case(ranges) -> list[tuple[int, int]]:
    """Add the other case of every ASCII letter in `ranges`."""
    extra = []
    for lo, hi in ranges:
        for a, z, shift in ((0x41, 0x5A, 32), (0x61, 0x7A, -32)):
            if max(lo, a) <= min(hi, z):
                extra.append((max(lo, a) + shift, min(hi, z) + shift))
    return merge_ranges(list(ranges) + extra)


def encode_codepoint(cp: int) -> bytes:
    """UTF-8 bytes of `cp`, surrogates included (no validity check beyond the range).

    Example: encode_codepoint(0xE9) == b"\\xc3\\xa9"
    """
    if cp < 0 or cp > MAX_CODEPOINT:
        raise ValueError(f"codepoint {cp:#x} is outside U+0000..U+10FFFF")
    if cp <= 0x7F:
        return bytes([cp])
    if cp <= 0x7FF:
        return bytes([0xC0 | cp >> 6, 0x80 | cp & 0x3F])
    if cp <= 0xFFFF:
        return bytes([0xE0 | cp >> 12, 0x80 | cp >> 6 & 0x3F, 0x80 | cp & 0x3F])
    return bytes([0xF0 | cp >> 18, 0x80 | cp >> 12 & 0x3F, 0x80 | cp >> 6 & 0x3F, 0x80 | cp & 0x3F])
